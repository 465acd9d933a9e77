"""``common.jit.borrowed``: compiled code reads and writes through a borrowed view exactly as through the array,
and the arrays' references are as they were after any number of calls (a view that dropped a reference it never
took would free the caller's array)."""

from __future__ import annotations

import sys

import numpy as np
import pytest

from revolution_env.common.jit import COMPILED, borrowed, jit


@jit
def _add_row(a, row, amounts):  # not inlined: a call that passes arrays, as the kernels' calls do
    for j in range(a.shape[1]):
        a[row, j] += amounts[j]
    return a[row].sum()


@jit
def _through(a, amounts, borrow):
    if borrow:
        a, amounts = borrowed(a), borrowed(amounts)
    total = 0
    for row in range(a.shape[0]):
        total += _add_row(a, row, amounts)
        view = a[row]  # a view of a borrowed array is borrowed too
        view[0] += 1
    return total


@jit
def _tuple_through(st, borrow):
    if borrow:
        st = borrowed(st)
    a, n, b = st[0], st[1], st[2]
    for i in range(n):
        a[i] += b[i]
    return a.sum() + n


@pytest.mark.parametrize("borrow", [False, True])
def test_compiled_code_reads_and_writes_through_a_borrowed_view_as_through_the_array(borrow):
    a = np.arange(12, dtype=np.int64).reshape(4, 3)
    amounts = np.array([1, 2, 3], dtype=np.int64)
    before = sys.getrefcount(a), sys.getrefcount(amounts)
    totals = [_through(a, amounts, borrow) for _ in range(1000)]
    expected = np.arange(12, dtype=np.int64).reshape(4, 3) + 1000 * amounts
    expected[:, 0] += 1000
    assert np.array_equal(a, expected)
    assert totals[0] == (np.arange(12).reshape(4, 3) + amounts).sum()
    assert (sys.getrefcount(a), sys.getrefcount(amounts)) == before


def test_a_tuple_lends_its_arrays_and_keeps_its_other_members():
    a, b = np.zeros(5, dtype=np.int64), np.arange(5, dtype=np.int64)
    before = sys.getrefcount(a), sys.getrefcount(b)
    for k in range(1, 1001):
        assert _tuple_through((a, 3, b), True) == 3 * k + 3  # a[:3] += 0, 1, 2 each call; then the int member
    assert np.array_equal(a, 1000 * np.array([0, 1, 2, 0, 0]))
    c = np.zeros(5, dtype=np.int64)
    assert _tuple_through((c, 3, b), False) == 6  # the same function without borrowing
    assert (sys.getrefcount(a), sys.getrefcount(b)) == before


@pytest.mark.skipif(not COMPILED, reason="Numba types the argument only where it compiles")
def test_only_arrays_and_tuples_are_borrowed():
    @jit
    def scalar(x):
        return borrowed(x)

    with pytest.raises(Exception, match="borrowed"):
        scalar(3)
