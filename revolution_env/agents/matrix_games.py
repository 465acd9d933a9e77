"""Equilibria of small normal-form games: what a round's bids become once every seat's candidates are fixed.

A game of ``n`` seats is a payoff tensor ``U`` of shape ``(K_1, ..., K_n, n)``: ``U[a_1, ..., a_n, i]`` is seat
``i``'s payoff when each seat ``j`` plays its action ``a_j``. A profile is one mixed strategy per seat.

- :func:`regret_matching` runs regret matching+ for every seat at once (RM+: regrets clipped at zero after every
  update; linear averaging: iteration ``t``'s strategy counts ``t`` times in the average, as in CFR+), a loop
  compiled with Numba where it is installed (``common.jit``; the same code as plain Python without it). Updates are
  *alternating* by default: each seat answers the strategies the seats before it have just updated. In two-player
  zero-sum games alternating RM+ with linear averaging converges far faster than simultaneous updates (Tammelin et
  al., "Solving Heads-up Limit Texas Hold'em", IJCAI 2015; Burch et al., "Revisiting CFR+ and Alternating
  Updates", JAIR 2019), and the tests hold it to a stated gap on Colonel Blotto games; ``alternating=False`` gives
  the simultaneous form (SearchBot's), for comparison. With more than two seats no regret dynamics is known to
  reach a Nash equilibrium in general (the averages approach a coarse correlated equilibrium): the solution
  reports its own gap (:func:`nash_conv`), so that a caller sees how far from an equilibrium it is.
- :func:`zero_sum_lp` solves a two-player zero-sum matrix game exactly by linear programming (the simplex method,
  compiled as regret matching is).
- :func:`solve` picks between them. **Two seats** solve the zero-sum game of the payoff difference
  ``D = (U[..., 0] - U[..., 1]) / 2``. Where ``U`` is constant-sum (``U0 + U1 = c``), ``D = U0 - c / 2``: the same
  equilibria as ``U`` itself. Revolution!'s two-player game is not constant-sum with win/loss rewards: the puppet
  can win and both players lose (docs/rules.md §6, D13), and a shared win pays both; nor is a critic's estimate of
  each seat's value. ``D`` is the game of beating the other player, whose equilibrium is a minimax strategy (it
  cannot be exploited in ``D``), which a general-sum equilibrium of ``U`` would not give. **More seats** play
  ``U`` as it is, by regret matching.

:func:`nash_conv` is a profile's gap: the sum over seats of what a seat gains by its best pure reply to the
others' strategies (0 exactly at a Nash equilibrium); for two-player zero-sum games it is the exploitability
(the best reply's value against each side, added up).
"""

from __future__ import annotations

import numbers
from dataclasses import dataclass

import numpy as np

ITERATIONS = 1000  # the default number of regret matching iterations


@dataclass(frozen=True)
class Solution:
    """A profile and what it is worth: ``strategies[i]`` (K_i,) sums to 1; ``values`` (n,) each seat's expected
    payoff in the game solved; ``gaps`` (n,) what each seat's best pure reply gains over its strategy there;
    ``nash_conv`` their sum; ``method`` ``"lp"`` or ``"rm"``; ``zero_sum`` whether the game solved was the
    two-player difference game ``D`` (the module's documentation) rather than ``U``."""

    strategies: tuple[np.ndarray, ...]
    values: np.ndarray
    gaps: np.ndarray
    method: str
    zero_sum: bool

    @property
    def nash_conv(self) -> float:
        return float(self.gaps.sum())


def check_payoffs(payoffs: object) -> np.ndarray:
    """``payoffs`` as a float64 array of shape (K_1, ..., K_n, n) with every K_i at least 1 and finite entries, or
    ``ValueError`` saying what is wrong."""
    U = np.asarray(payoffs, dtype=np.float64)
    if U.ndim < 2 or U.shape[-1] != U.ndim - 1:
        raise ValueError(f"payoffs: expected shape (K_1, ..., K_n, n) with n seats, got {U.shape}")
    if 0 in U.shape:
        raise ValueError(f"payoffs: every seat needs at least one action, got shape {U.shape}")
    if not np.isfinite(U).all():
        raise ValueError("payoffs: expected finite numbers")
    return U


def against(U: np.ndarray, strategies: tuple[np.ndarray, ...] | list[np.ndarray], seat: int) -> np.ndarray:
    """(K_seat,) seat ``seat``'s expected payoff of each of its actions when every other seat plays its strategy."""
    out = U[..., seat]
    for j in reversed(range(U.ndim - 1)):  # from the last axis, so that the axes before keep their numbers
        if j != seat:
            out = np.tensordot(out, strategies[j], axes=([j], [0]))
    return out


def profile_values(U: np.ndarray, strategies: tuple[np.ndarray, ...] | list[np.ndarray]) -> np.ndarray:
    """(n,) each seat's expected payoff under the profile."""
    return np.array([against(U, strategies, i) @ strategies[i] for i in range(U.ndim - 1)])


def seat_gaps(U: np.ndarray, strategies: tuple[np.ndarray, ...] | list[np.ndarray]) -> np.ndarray:
    """(n,) what each seat's best pure reply to the others gains over its own strategy (never below 0)."""
    gaps = []
    for i in range(U.ndim - 1):
        u = against(U, strategies, i)
        gaps.append(max(float(u.max() - u @ strategies[i]), 0.0))
    return np.array(gaps)


def nash_conv(U: np.ndarray, strategies: tuple[np.ndarray, ...] | list[np.ndarray]) -> float:
    """The sum over seats of :func:`seat_gaps`: 0 at a Nash equilibrium."""
    return float(seat_gaps(U, strategies).sum())


def _check_iterations(iterations: object) -> int:
    if isinstance(iterations, bool) or not isinstance(iterations, numbers.Integral) or iterations < 1:
        raise ValueError(f"iterations: expected a positive integer, got {iterations!r}")
    return int(iterations)


_COMPILED: dict = {}  # the compiled loops, each once it is needed


def _compiled(function):
    """``function`` compiled (``common.jit``), on first use: importing Numba where agent specs are read would load
    it before the command line has checked its thread settings (``common.workers.check_thread_settings``)."""
    if function.__name__ not in _COMPILED:
        from revolution_env.common.jit import jit

        _COMPILED[function.__name__] = jit(function)
    return _COMPILED[function.__name__]


def _rm_loop(payoffs: np.ndarray, actions: np.ndarray, offsets: np.ndarray, iterations: int,
             alternating: bool) -> np.ndarray:  # fmt: skip
    """RM+ with linear averaging over a game given as ``payoffs`` (J, n), one row per joint action, whose seats'
    actions are ``actions`` (J, n); seat ``i``'s strategy is entries ``offsets[i]:offsets[i + 1]`` of the flat
    arrays. Returns the unnormalised average strategies, flat. A loop over the joint actions: in NumPy, a
    matrix-vector product per seat and iteration costs more in calls than in arithmetic for games this small."""
    J, n = payoffs.shape
    total = offsets[n]
    current = np.empty(total)
    for i in range(n):
        current[offsets[i] : offsets[i + 1]] = 1.0 / (offsets[i + 1] - offsets[i])
    fixed = current.copy()
    regrets = np.zeros(total)
    average = np.zeros(total)
    u = np.zeros(total)
    for t in range(1, iterations + 1):
        if not alternating:
            fixed[:] = current  # every seat answers the same profile
        for i in range(n):
            lo, hi = offsets[i], offsets[i + 1]
            u[lo:hi] = 0.0
            for j in range(J):
                p = 1.0
                for s in range(n):
                    if s != i:
                        p *= (current if alternating else fixed)[offsets[s] + actions[j, s]]
                u[lo + actions[j, i]] += payoffs[j, i] * p
            mine = 0.0
            for a in range(lo, hi):
                mine += u[a] * current[a]
            positive = 0.0
            for a in range(lo, hi):
                regrets[a] = max(regrets[a] + u[a] - mine, 0.0)
                positive += regrets[a]
                average[a] += t * current[a]
            for a in range(lo, hi):
                current[a] = regrets[a] / positive if positive > 0 else 1.0 / (hi - lo)
    return average


def regret_matching(payoffs: object, iterations: int = ITERATIONS, alternating: bool = True) -> Solution:
    """Every seat's average strategy after ``iterations`` of RM+ with linear averaging (the module's
    documentation), all seats learning at once in the game ``payoffs`` (K_1, ..., K_n, n) as given."""
    U = check_payoffs(payoffs)
    iterations = _check_iterations(iterations)
    n = U.ndim - 1
    shape = U.shape[:-1]
    actions = np.indices(shape).reshape(n, -1).T.copy()  # (J, n) in the row-major order of U's joint actions
    offsets = np.concatenate([[0], np.cumsum(shape)]).astype(np.int64)
    average = _compiled(_rm_loop)(
        np.ascontiguousarray(U.reshape(-1, n)), actions, offsets, iterations, bool(alternating)
    )
    strategies = tuple(average[offsets[i] : offsets[i + 1]] / average[offsets[i] : offsets[i + 1]].sum()
                       for i in range(n))  # fmt: skip
    return Solution(strategies, profile_values(U, strategies), seat_gaps(U, strategies), "rm", False)


PIVOT_TOLERANCE = 1e-10  # entries and reduced costs within this of 0 count as 0 in the simplex's choices


def _game_simplex(B: np.ndarray) -> tuple[np.ndarray, np.ndarray, int]:
    """The simplex method on the column player's program of the game ``B`` (k, m), every entry at least 1: maximise
    ``sum(w)`` subject to ``B w <= 1``, ``w >= 0``, from the basis of its slacks (feasible, since ``1 >= 0``), with
    Bland's rule (the entering column the first that improves, ties in the ratio test to the lowest basic index),
    which cannot cycle on the degenerate programs that games with repeated payoffs give. Returns ``(u, w, pivots)``:
    ``u`` (k,) the slacks' reduced costs at the optimum, the row player's program's solution by LP duality (``min
    sum(u)`` subject to ``B^T u >= 1``, ``u >= 0``), ``w`` (m,); ``pivots`` -1 where the pivot limit was reached."""
    k, m = B.shape
    n = m + k
    T = np.zeros((k + 1, n + 1))
    basis = np.empty(k, dtype=np.int64)
    for i in range(k):
        for j in range(m):
            T[i, j] = B[i, j]
        T[i, m + i] = 1.0
        T[i, n] = 1.0
        basis[i] = m + i
    for j in range(m):
        T[k, j] = -1.0
    limit = 50 * (n + 1)
    pivots = 0
    while True:
        enter = -1
        for j in range(n):
            if T[k, j] < -PIVOT_TOLERANCE:
                enter = j
                break
        if enter < 0:
            break
        if pivots == limit:
            pivots = -1
            break
        leave = -1
        best = 0.0
        for i in range(k):
            a = T[i, enter]
            if a > PIVOT_TOLERANCE:
                ratio = T[i, n] / a
                if (
                    leave < 0
                    or ratio < best - PIVOT_TOLERANCE
                    or (ratio <= best + PIVOT_TOLERANCE and basis[i] < basis[leave])
                ):
                    leave, best = i, ratio
        # every column of B is positive, so some row bounds the entering column: leave >= 0
        a = T[leave, enter]
        for j in range(n + 1):
            T[leave, j] /= a
        for i in range(k + 1):
            f = T[i, enter]
            if i != leave and f != 0.0:
                for j in range(n + 1):
                    T[i, j] -= f * T[leave, j]
        basis[leave] = enter
        pivots += 1
    u = np.empty(k)
    for i in range(k):
        u[i] = max(T[k, m + i], 0.0)
    w = np.zeros(m)
    for i in range(k):
        if basis[i] < m:
            w[basis[i]] = max(T[i, n], 0.0)
    return u, w, pivots


def zero_sum_lp(matrix: object) -> tuple[np.ndarray, np.ndarray, float]:
    """An exact equilibrium ``(x, y, v)`` of the two-player zero-sum game whose row player receives ``matrix``
    (K_1, K_2) and the column player its negation: ``x`` maximises the row player's guaranteed payoff ``v``, ``y``
    minimises it. The classic reduction of a matrix game to one linear program: the matrix shifted so that every
    entry is at least 1 (its value then positive, its equilibria the same), the column player's program solved by
    the simplex method (:func:`_game_simplex`, compiled where Numba is installed), whose final reduced costs give
    the row player's strategy; ``v`` the value, shifted back. For the small games of a round's search one compiled
    simplex is far cheaper than a general solver's call (docs/experiments.md, "A round's equilibrium by search")."""
    A = np.asarray(matrix, dtype=np.float64)
    if A.ndim != 2 or 0 in A.shape or not np.isfinite(A).all():
        raise ValueError(f"matrix: expected a finite (K_1, K_2) array with K_1, K_2 >= 1, got shape {A.shape}")
    shift = 1.0 - float(A.min())
    u, w, pivots = _compiled(_game_simplex)(np.ascontiguousarray(A + shift))
    if pivots < 0 or u.sum() <= 0 or w.sum() <= 0:  # pragma: no cover - Bland's rule ends; the program is bounded
        raise ArithmeticError(f"zero_sum_lp: the simplex method did not reach an optimum on a {A.shape} game")
    return u / u.sum(), w / w.sum(), float(1.0 / w.sum() - shift)


METHODS = ("auto", "lp", "rm")


def solve(payoffs: object, iterations: int = ITERATIONS, method: str = "auto", alternating: bool = True) -> Solution:
    """An equilibrium of the game ``payoffs`` (K_1, ..., K_n, n) as the module's documentation says: with two seats
    the difference game ``D``, by linear programming (``"lp"``, and ``"auto"``) or by regret matching (``"rm"``);
    with more seats ``U`` by regret matching. ``values`` are always each seat's expected payoff in ``U``; ``gaps``
    those of the game solved (``D`` with two seats)."""
    U = check_payoffs(payoffs)
    if method not in METHODS:
        raise ValueError(f"method: expected one of {', '.join(METHODS)}, got {method!r}")
    n = U.ndim - 1
    if n != 2:
        if method == "lp":
            raise ValueError(f"method 'lp': a linear program solves two-seat games only, this one has {n} seats")
        return regret_matching(U, iterations, alternating)
    half = 0.5 * (U[..., 0] - U[..., 1])
    D = np.stack([half, -half], axis=-1)
    if method in ("lp", "auto"):
        x, y, _ = zero_sum_lp(half)
        strategies, how = (x, y), "lp"
    else:
        strategies, how = regret_matching(D, iterations, alternating).strategies, "rm"
    return Solution(strategies, profile_values(U, strategies), seat_gaps(D, strategies), how, True)
