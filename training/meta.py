"""Meta-strategies over a population: which member to play, drawn once per game, from the population's payoff table.

The meta-game of a population of K agents is symmetric: every seat draws its agent from the same distribution
``x`` over the members, and a member's payoff at a table is its win share there (``GameResult.win_share``, ties
shared, seats rotated). ``table[i][m]`` is member ``i``'s mean win share at the table of ``i`` and the multiset ``m``
of ``players - 1`` opponents (a sorted tuple of member indices), so that ``u_i(x)``, member ``i``'s expected payoff
when the other seats draw from ``x``, is the sum over ``m`` of ``P(m | x) table[i][m]`` with ``P`` multinomial.

- **Two players**: the meta-game is zero-sum once written as ``A[i, j] = table[i][(j,)] - table[j][(i,)]`` (the
  puppet can win in the two-player variant, so win shares need not add to 1): :func:`zero_sum_nash` solves the
  linear program ``max v : x^T A >= v, x in the simplex`` (scipy's HiGHS), an exact Nash equilibrium of the
  meta-game (PSRO's meta-solver for two-player zero-sum games, Lanctot et al. 2017).
- **Three and four players**: no linear program finds a Nash equilibrium; :func:`replicator` runs the discrete
  replicator dynamics of the symmetric game (each member's share grows with its payoff against the population)
  from the uniform strategy and stops at an approximate symmetric Nash equilibrium: no member does more than
  ``tol`` better than ``x`` itself against ``x``. It need not get there (the dynamics can cycle): then it raises
  :class:`MetaSolverError` with the gap it reached, never a strategy that silently is not one.

:func:`regret` is that gap for any ``x``: the meta-game's exploitability of ``x`` (how much the best member gains
over ``x``'s own payoff), 0 at a symmetric Nash equilibrium.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from math import factorial

import numpy as np

Table = Sequence[Mapping[tuple[int, ...], float]]


class MetaSolverError(ValueError):
    """The meta-solver found no equilibrium within its budget (the message says how close it got)."""


def opponent_sets(k: int, players: int) -> list[tuple[int, ...]]:
    """Every multiset of ``players - 1`` opponents drawn from ``k`` members, as sorted tuples."""
    return list(itertools.combinations_with_replacement(range(k), players - 1))


def _multinomial(m: tuple[int, ...], x: np.ndarray) -> float:
    counts = np.bincount(m, minlength=len(x))
    coefficient = factorial(len(m)) / np.prod([factorial(c) for c in counts])
    return float(coefficient * np.prod(x**counts))


def payoffs(table: Table, x: np.ndarray) -> np.ndarray:
    """``u_i(x)`` for every member: its expected win share when every other seat draws from ``x``."""
    k = len(table)
    sets = list(table[0])
    p = np.array([_multinomial(m, x) for m in sets])
    return np.array([sum(p[j] * table[i][m] for j, m in enumerate(sets)) for i in range(k)])


def regret(table: Table, x: np.ndarray) -> float:
    """The meta-game's exploitability of ``x``: the best member's payoff against ``x`` minus ``x``'s own."""
    u = payoffs(table, x)
    return float(u.max() - x @ u)


def zero_sum_nash(table: Table) -> np.ndarray:
    """A Nash equilibrium of a two-player population's meta-game (the module documentation), by linear
    programming."""
    from scipy.optimize import linprog

    k = len(table)
    a = np.array([[table[i][(j,)] - table[j][(i,)] for j in range(k)] for i in range(k)])
    # variables (x_1..x_k, v); maximise v  <=>  minimise -v;  v - x^T A[:, j] <= 0 for every column j
    cost = np.zeros(k + 1)
    cost[-1] = -1.0
    upper = np.hstack([-a.T, np.ones((k, 1))])
    result = linprog(cost, A_ub=upper, b_ub=np.zeros(k), A_eq=[[1.0] * k + [0.0]], b_eq=[1.0],
                     bounds=[(0, None)] * k + [(None, None)], method="highs")  # fmt: skip
    if not result.success:  # pragma: no cover - a feasible, bounded LP: HiGHS solves it
        raise MetaSolverError(f"meta-solver: the linear program failed ({result.message})")
    x = np.clip(result.x[:k], 0.0, None)
    return x / x.sum()


def replicator(table: Table, tol: float = 0.01, iterations: int = 100_000, step: float = 1.0) -> np.ndarray:
    """An approximate symmetric Nash equilibrium of the meta-game by discrete replicator dynamics (the module
    documentation); :class:`MetaSolverError` if the regret is still above ``tol`` after ``iterations`` steps."""
    k = len(table)
    x = np.full(k, 1.0 / k)
    best = (np.inf, x)
    for _ in range(iterations):
        u = payoffs(table, x)
        gap = float(u.max() - x @ u)
        if gap < best[0]:
            best = (gap, x.copy())
        if gap <= tol:
            return x
        fitness = 1.0 + step * (u - x @ u)  # > 0: win shares lie in [0, 1]
        x = x * fitness
        x = np.clip(x / x.sum(), 1e-12, None)
        x /= x.sum()
    raise MetaSolverError(
        f"meta-solver: replicator dynamics reached a regret of {best[0]:.4f} in {iterations:,} steps, above the "
        f"tolerance {tol} (raise meta_tolerance, or play more payoff games: a noisy table can have no such point)"
    )


def solve(table: Table, players: int, tol: float = 0.01, iterations: int = 100_000) -> np.ndarray:
    """The meta-strategy of a population: the zero-sum Nash with two players, replicator dynamics with more."""
    return zero_sum_nash(table) if players == 2 else replicator(table, tol, iterations)
