"""``common.jit.borrowed``: compiled code reads and writes through a borrowed view exactly as through the array,
and the arrays' references are as they were after any number of calls (a view that dropped a reference it never
took would free the caller's array). ``common.jit.in_parts``: compiled loops over rows side by side in threads, with
the same results as one call. ``common.jit.jit``'s cache: safe between processes that fill it at once."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import threading

import numpy as np
import pytest

import revolution_env
from revolution_env.common.jit import COMPILED, PARALLEL_ROWS, borrowed, in_parts, jit
from revolution_env.common.workers import thread_pool


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


def test_in_parts_splits_the_rows_over_the_threads_and_only_where_it_pays(monkeypatch) -> None:
    """One part per thread (the first in the caller's thread), consecutive and covering every row; one call where
    the parts would be under ``PARALLEL_ROWS``, where ``REVOLUTION_THREADS`` is 1, inside the pool's own threads
    (which would wait on the pool they occupy) and without Numba."""

    def parts(n: int) -> list[tuple[int, int, bool]]:
        return in_parts(n, lambda lo, hi: (lo, hi, threading.current_thread() is threading.main_thread()))

    monkeypatch.setenv("REVOLUTION_THREADS", "3")
    n = 3 * PARALLEL_ROWS + 5
    if COMPILED:
        assert parts(n) == [(0, n // 3, True), (n // 3, 2 * n // 3, False), (2 * n // 3, n, False)]
        assert parts(2 * PARALLEL_ROWS) == [(0, PARALLEL_ROWS, True), (PARALLEL_ROWS, 2 * PARALLEL_ROWS, False)]
    assert parts(2 * PARALLEL_ROWS - 1) == [(0, 2 * PARALLEL_ROWS - 1, True)]
    assert thread_pool().submit(lambda: in_parts(n, lambda lo, hi: (lo, hi))).result() == [(0, n)]
    monkeypatch.setenv("REVOLUTION_THREADS", "1")
    assert parts(n) == [(0, n, True)]


def test_in_parts_raises_a_part_s_error_after_every_part_has_finished(monkeypatch) -> None:
    monkeypatch.setenv("REVOLUTION_THREADS", "2")
    if not COMPILED:
        pytest.skip("without Numba in_parts makes one call")
    finished = []

    def part(lo: int, hi: int) -> None:
        if lo == 0:
            raise ValueError("first part")
        threading.Event().wait(0.2)
        finished.append(lo)

    with pytest.raises(ValueError, match="first part"):
        in_parts(2 * PARALLEL_ROWS, part)
    assert finished == [PARALLEL_ROWS]


@pytest.mark.parametrize("opponents", ["random", ["area", "random"]])
def test_the_vector_env_steps_the_same_games_in_parts_as_in_one_call(monkeypatch, opponents) -> None:
    """The batched engine's steps, observations and masks split over two threads (``in_parts``) give the games of
    one thread, step for step."""
    from revolution_env.common import jit as J
    from revolution_env.engine import batched as B

    monkeypatch.setattr(J, "PARALLEL_ROWS", 300)  # parts of 300 rows: the same code, fewer games to step
    monkeypatch.setattr(B, "GAME_ROWS", 100)  # the engine's steps too, with fewer games waiting for each kind
    runs = []
    for threads in ("2", "1"):
        monkeypatch.setenv("REVOLUTION_THREADS", threads)
        env = revolution_env.vector_env(603, players=3, opponents=opponents, keep_finished=0)
        obs, _ = env.reset(seed=7)
        rng = np.random.default_rng(0)
        trace = [obs]
        for _ in range(15):
            masks = env.action_masks()
            offsets = np.concatenate([[0], np.cumsum(env.codec.nvec)])
            actions = np.stack(
                [(rng.random((env.num_envs, b - a)) + masks[:, a:b]).argmax(1) for a, b in zip(offsets, offsets[1:])],
                axis=1,
            )
            obs, rewards, terminated, truncated, _ = env.step(actions)
            trace += [obs, rewards, terminated, truncated, env.action_masks().copy()]
        runs.append(trace)
        env.close()
    for a, b in zip(*runs):
        np.testing.assert_array_equal(a, b)


def test_a_forked_child_starts_threads_of_its_own() -> None:
    """A process forked after the pool started holds none of its threads: it gets a pool of its own, not one whose
    tasks would wait for ever."""
    import os

    assert thread_pool().submit(lambda: 1).result() == 1
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        try:
            ok = thread_pool().submit(lambda: 7).result(timeout=20) == 7
        except BaseException:
            ok = False
        os._exit(0 if ok else 1)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0


# One side of a race between two processes that save two signatures of one function to an empty Numba cache, forced
# by waits inside Numba's cache file: both read the index before either writes it, B writes the index last and A its
# data file last. Unlocked (numba/numba#4807), both pick the data file 1, and the index left names A's machine code
# (int64 arrays) for B's signature (float64 arrays).
_RACER = """
import os, sys, time
from numba.core import caching

role, folder, which = sys.argv[1:4]
save_index, save_data = caching.IndexDataCacheFile._save_index, caching.IndexDataCacheFile._save_data


def _save_index(self, overloads):
    open(os.path.join(folder, role), "w").close()
    deadline = time.time() + 8.0  # under the lock the other side cannot get here until this one is done
    while not os.path.exists(os.path.join(folder, "B" if role == "A" else "A")) and time.time() < deadline:
        time.sleep(0.01)
    time.sleep(0.3 if role == "B" else 0.0)
    save_index(self, overloads)


def _save_data(self, name, data):
    time.sleep(0.6 if role == "A" else 0.0)
    save_data(self, name, data)


caching.IndexDataCacheFile._save_index, caching.IndexDataCacheFile._save_data = _save_index, _save_data
sys.path.insert(0, folder)
import numpy as np
import racemod

f = getattr(racemod, which)
print(f(np.arange(1, 6) if role == "A" else np.linspace(0.5, 2.5, 5)))
"""

_RACEMOD = """
import numba
from revolution_env.common.jit import jit


@jit
def ours(x):
    return x.sum() * 2


@numba.njit(cache=True)
def plain(x):
    return x.sum() * 2
"""


@pytest.mark.skipif(not COMPILED or sys.platform == "win32", reason="Numba's cache, locked with flock")
def test_two_processes_filling_the_cache_at_once_leave_each_signature_its_own_code(tmp_path) -> None:
    """Two processes save two signatures of a ``jit`` function to an empty cache at once, in the order that corrupts
    Numba's own cache (checked here on a plain ``numba.njit(cache=True)`` twin, so that the race is known to happen):
    a third process loads both from the cache and gets each its own code."""
    (tmp_path / "racer.py").write_text(textwrap.dedent(_RACER))
    (tmp_path / "racemod.py").write_text(textwrap.dedent(_RACEMOD))

    def race_then_load(which: str) -> list[float]:
        folder = tmp_path / which
        folder.mkdir()
        (folder / "racemod.py").write_text((tmp_path / "racemod.py").read_text())
        racers = [subprocess.Popen([sys.executable, str(tmp_path / "racer.py"), role, str(folder), which])
                  for role in "AB"]  # fmt: skip
        assert [racer.wait(timeout=120) for racer in racers] == [0, 0]
        load = (
            f"import sys; sys.path.insert(0, {str(folder)!r}); import numpy as np, racemod; "
            f"f = racemod.{which}; print(float(f(np.arange(1, 6))), float(f(np.linspace(0.5, 2.5, 5))))"
        )
        out = subprocess.run([sys.executable, "-c", load], capture_output=True, text=True, timeout=120)
        return [float(x) for x in out.stdout.split()] if out.returncode == 0 else [out.returncode]

    plain = race_then_load("plain")
    assert plain != [30.0, 15.0], (
        "Numba's own cache survived the race: numba/numba#4807 fixed? jit.py's cache lock may go"
    )
    assert race_then_load("ours") == [30.0, 15.0]
