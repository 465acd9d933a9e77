"""The equilibrium solver of the round's search (revolution_env/agents/matrix_games.py), on games whose answer is
known: rock-paper-scissors, a biased RPS, matching pennies, a dominant strategy, small Colonel Blotto games solved
by linear programming, and three-seat games with a known equilibrium."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from revolution_env.agents.matrix_games import (
    against,
    nash_conv,
    regret_matching,
    seat_gaps,
    solve,
    zero_sum_lp,
)

# What regret matching must reach, in the iterations stated (measured with margin: the Blotto games need at most
# a fifth of these gaps at these counts).
RM_ITERATIONS = 1000
SMALL_GAME_GAP = 0.01  # NashConv of RM's averages in the 2- and 3-action games below
BLOTTO_ITERATIONS = 1000
BLOTTO_GAP = 0.005  # NashConv (the zero-sum game's exploitability) of RM's averages in Blotto
BLOTTO_VALUE_GAP = 0.003  # |RM's value - the LP's value| in Blotto
STRATEGY_TOLERANCE = 0.02  # how close to a known unique equilibrium RM's average must come

RPS = np.array([[0.0, -1.0, 1.0], [1.0, 0.0, -1.0], [-1.0, 1.0, 0.0]])
# rock beats scissors for 2: the unique equilibrium solves A x = 0, x = (1/4, 1/2, 1/4), value 0
BIASED_RPS = np.array([[0.0, -1.0, 2.0], [1.0, 0.0, -1.0], [-2.0, 1.0, 0.0]])
BIASED_RPS_EQUILIBRIUM = np.array([0.25, 0.5, 0.25])
PENNIES = np.array([[1.0, -1.0], [-1.0, 1.0]])


def zero_sum(matrix: np.ndarray) -> np.ndarray:
    """The two-seat payoff tensor (K1, K2, 2) of the zero-sum game whose row player receives ``matrix``."""
    return np.stack([matrix, -matrix], axis=-1)


def allocations(soldiers: int, fields: int = 3) -> np.ndarray:
    """Every way to put ``soldiers`` on ``fields`` battlefields."""
    return np.array([a for a in itertools.product(range(soldiers + 1), repeat=fields) if sum(a) == soldiers])


def blotto(a: int, b: int, fields: int = 3) -> np.ndarray:
    """Colonel Blotto: the row player's battlefields won minus lost (a tie on a field counts for nobody)."""
    rows, cols = allocations(a, fields), allocations(b, fields)
    return np.sign(rows[:, None, :] - cols[None, :, :]).sum(-1).astype(np.float64)


@pytest.mark.parametrize("alternating", [True, False])
def test_rock_paper_scissors_is_uniform_with_value_zero(alternating):
    rm = regret_matching(zero_sum(RPS), RM_ITERATIONS, alternating)
    for x in rm.strategies:
        np.testing.assert_allclose(x, [1 / 3] * 3, atol=STRATEGY_TOLERANCE)
    np.testing.assert_allclose(rm.values, [0.0, 0.0], atol=SMALL_GAME_GAP)
    assert rm.nash_conv <= SMALL_GAME_GAP
    x, y, v = zero_sum_lp(RPS)
    np.testing.assert_allclose([x, y], [[1 / 3] * 3] * 2, atol=1e-9)
    assert abs(v) < 1e-9


def test_biased_rps_reaches_its_known_mixed_equilibrium():
    rm = regret_matching(zero_sum(BIASED_RPS), RM_ITERATIONS)
    for x in rm.strategies:
        np.testing.assert_allclose(x, BIASED_RPS_EQUILIBRIUM, atol=STRATEGY_TOLERANCE)
    assert rm.nash_conv <= SMALL_GAME_GAP
    x, y, v = zero_sum_lp(BIASED_RPS)
    np.testing.assert_allclose(x, BIASED_RPS_EQUILIBRIUM, atol=1e-9)
    np.testing.assert_allclose(y, BIASED_RPS_EQUILIBRIUM, atol=1e-9)
    assert abs(v) < 1e-9
    uniform = (np.full(3, 1 / 3),) * 2
    assert nash_conv(zero_sum(BIASED_RPS), uniform) > 0.1  # the gap tells the uniform profile from the answer


def test_matching_pennies_and_a_dominant_strategy():
    rm = regret_matching(zero_sum(PENNIES), RM_ITERATIONS)
    for x in rm.strategies:
        np.testing.assert_allclose(x, [0.5, 0.5], atol=STRATEGY_TOLERANCE)
    # a prisoner's dilemma (general-sum): defecting (action 1) dominates for both, the only equilibrium
    dilemma = np.array([[[3.0, 3.0], [0.0, 5.0]], [[5.0, 0.0], [1.0, 1.0]]])
    rm = regret_matching(dilemma, RM_ITERATIONS)
    for x in rm.strategies:
        assert x[1] > 1 - STRATEGY_TOLERANCE
    np.testing.assert_allclose(rm.values, [1.0, 1.0], atol=0.05)
    assert rm.nash_conv <= SMALL_GAME_GAP


@pytest.mark.parametrize("a, b", [(4, 4), (5, 5), (6, 6), (4, 5), (5, 6), (6, 4)])
def test_regret_matching_comes_within_the_stated_gap_of_colonel_blottos_lp_value(a, b):
    matrix = blotto(a, b)
    x, y, v = zero_sum_lp(matrix)
    # the LP's own answer is an equilibrium: neither side gains by a pure reply
    assert (matrix.T @ x).min() >= v - 1e-7 and (matrix @ y).max() <= v + 1e-7
    rm = regret_matching(zero_sum(matrix), BLOTTO_ITERATIONS)
    assert rm.nash_conv <= BLOTTO_GAP, (a, b, rm.nash_conv)
    assert abs(rm.values[0] - v) <= BLOTTO_VALUE_GAP, (a, b, rm.values[0], v)
    if a == b:
        assert abs(v) < 1e-7  # a symmetric game is worth nothing to either side


def test_alternating_updates_converge_faster_than_simultaneous_ones_on_blotto():
    """Why the solver alternates (the module's documentation): at the same number of iterations, its gap is the
    smaller on every uneven Blotto game here."""
    for a, b in [(6, 6), (4, 5), (5, 6)]:
        U = zero_sum(blotto(a, b))
        alternating = regret_matching(U, BLOTTO_ITERATIONS, alternating=True).nash_conv
        simultaneous = regret_matching(U, BLOTTO_ITERATIONS, alternating=False).nash_conv
        assert alternating < simultaneous, (a, b, alternating, simultaneous)


def pairwise(matrix: np.ndarray, seats: int = 3) -> np.ndarray:
    """A zero-sum polymatrix game: every pair of seats plays ``matrix`` (antisymmetric), each seat's payoff the sum
    over its pairs. Where every seat plays the two-seat game's equilibrium, nobody gains by a deviation; no-regret
    dynamics reach an equilibrium in such games (Cai and Daskalakis, SODA 2011)."""
    k = len(matrix)
    U = np.zeros((k,) * seats + (seats,))
    for joint in itertools.product(range(k), repeat=seats):
        for i, j in itertools.permutations(range(seats), 2):
            U[joint + (i,)] += matrix[joint[i], joint[j]]
    return U


def test_three_seats_playing_biased_rps_pairwise_reach_its_equilibrium():
    U = pairwise(BIASED_RPS)
    rm = regret_matching(U, RM_ITERATIONS)
    for x in rm.strategies:
        np.testing.assert_allclose(x, BIASED_RPS_EQUILIBRIUM, atol=STRATEGY_TOLERANCE)
    assert rm.nash_conv <= SMALL_GAME_GAP
    np.testing.assert_allclose(rm.values, 0.0, atol=SMALL_GAME_GAP)
    assert nash_conv(U, (BIASED_RPS_EQUILIBRIUM,) * 3) < 1e-12


def test_a_three_seat_matching_game_has_its_uniform_equilibrium_and_rm_keeps_it():
    """Jordan's matching game: seat 0 wants to match seat 1, seat 1 to match seat 2, seat 2 to mismatch seat 0;
    the uniform profile is its only equilibrium. Regret matching from the uniform profile stays there."""
    U = np.zeros((2, 2, 2, 3))
    for a, b, c in itertools.product(range(2), repeat=3):
        U[a, b, c] = [1 if a == b else -1, 1 if b == c else -1, 1 if c != a else -1]
    assert nash_conv(U, (np.full(2, 0.5),) * 3) == 0.0
    assert nash_conv(U, (np.array([0.9, 0.1]), np.full(2, 0.5), np.full(2, 0.5))) > 0.5
    rm = regret_matching(U, RM_ITERATIONS)
    assert rm.nash_conv <= SMALL_GAME_GAP


def test_a_three_seat_game_with_dominant_strategies_finds_them():
    """Seat i's payoff: 1 for its action 1, 0 for action 0, plus noise from the others that does not change which
    action is best: the pure profile (1, 1, 1)."""
    rng = np.random.default_rng(0)
    U = rng.uniform(0.0, 0.5, (2, 3, 2, 3))
    U[1, :, :, 0] += 1.0
    U[:, 1, :, 1] += 1.0
    U[:, :, 1, 2] += 1.0
    rm = regret_matching(U, RM_ITERATIONS)
    assert [int(x.argmax()) for x in rm.strategies] == [1, 1, 1]
    assert all(x.max() > 1 - STRATEGY_TOLERANCE for x in rm.strategies)
    assert rm.nash_conv <= SMALL_GAME_GAP


def test_against_and_the_gaps_agree_with_brute_force():
    rng = np.random.default_rng(1)
    U = rng.normal(size=(2, 3, 4, 3))
    x = [rng.dirichlet(np.ones(k)) for k in U.shape[:-1]]
    joint = np.einsum("a,b,c->abc", *x)
    for seat in range(3):
        brute = np.array(
            [sum(joint[j] / x[seat][j[seat]] * U[j + (seat,)] for j in np.ndindex(*U.shape[:-1]) if j[seat] == a)
             for a in range(U.shape[seat])]
        )  # fmt: skip
        np.testing.assert_allclose(against(U, x, seat), brute)
    gaps = seat_gaps(U, x)
    assert gaps.shape == (3,) and (gaps >= 0).all() and nash_conv(U, x) == pytest.approx(gaps.sum())


def test_solve_plays_the_difference_game_with_two_seats_by_lp_or_rm():
    """With two seats the game solved is D = (U0 - U1) / 2: in a constant-sum game the same equilibrium as U; in a
    general-sum one (both can lose, as to the puppet) the minimax strategy of D, which LP and RM agree on."""
    rng = np.random.default_rng(2)
    constant = zero_sum(blotto(4, 5)) + 1.0  # U0 + U1 = 2 everywhere
    lp, rm = solve(constant, method="lp"), solve(constant, BLOTTO_ITERATIONS, method="rm")
    assert lp.method == "lp" and rm.method == "rm" and lp.zero_sum and rm.zero_sum
    np.testing.assert_allclose(lp.values, rm.values, atol=BLOTTO_VALUE_GAP)
    assert lp.values.sum() == pytest.approx(2.0)
    assert lp.nash_conv < 1e-7 and rm.nash_conv <= BLOTTO_GAP
    general = rng.normal(size=(5, 6, 2))
    lp, rm = solve(general, method="lp"), solve(general, RM_ITERATIONS, method="rm")
    half = 0.5 * (general[..., 0] - general[..., 1])
    _, _, v = zero_sum_lp(half)
    assert lp.strategies[0] @ half @ lp.strategies[1] == pytest.approx(v)
    x, y = lp.strategies
    np.testing.assert_allclose(lp.values, [x @ general[..., 0] @ y, x @ general[..., 1] @ y])  # U's, not D's
    assert rm.nash_conv <= SMALL_GAME_GAP
    assert rm.strategies[0] @ half @ rm.strategies[1] == pytest.approx(v, abs=SMALL_GAME_GAP)
    assert solve(constant).method == "lp"


def highs(matrix: np.ndarray) -> float:
    """The value of the zero-sum game ``matrix`` by scipy's HiGHS (a reference independent of the simplex here):
    maximise v subject to v - x^T A[:, j] <= 0 for every column, x a distribution."""
    linprog = pytest.importorskip("scipy.optimize").linprog
    k, m = matrix.shape
    bounds = [(0, None)] * k + [(None, None)]
    result = linprog(np.r_[np.zeros(k), -1.0], A_ub=np.hstack([-matrix.T, np.ones((m, 1))]), b_ub=np.zeros(m),
                     A_eq=[[1.0] * k + [0.0]], b_eq=[1.0], bounds=bounds, method="highs")  # fmt: skip
    assert result.success
    return float(result.x[-1])


def test_the_simplex_gives_an_exact_equilibrium_and_the_value_of_an_independent_lp_solver():
    """``zero_sum_lp`` (a compiled simplex) on random games, games of few distinct payoffs (degenerate programs,
    where a careless pivoting rule cycles), one-row and one-column games, and Blotto: both strategies are an
    equilibrium (neither side gains by a pure reply) and the value is HiGHS's."""
    rng = np.random.default_rng(0)
    games = [rng.normal(size=(k, m)) for k, m in [(1, 1), (1, 5), (5, 1), (3, 7), (8, 8), (12, 9)]]
    games += [rng.integers(-1, 2, size=(k, m)).astype(np.float64) for k, m in [(4, 4), (6, 6), (9, 7)] * 10]
    games += [np.zeros((3, 3)), np.ones((2, 4)), blotto(4, 5), blotto(6, 6)]
    for matrix in games:
        x, y, v = zero_sum_lp(matrix)
        assert x.min() >= 0 and y.min() >= 0 and x.sum() == pytest.approx(1) and y.sum() == pytest.approx(1)
        assert (matrix.T @ x).min() >= v - 1e-9 and (matrix @ y).max() <= v + 1e-9, matrix
        assert v == pytest.approx(highs(matrix), abs=1e-9)


def test_solve_needs_no_scipy(monkeypatch):
    """The two-seat game is solved exactly without scipy (the simplex is the project's own)."""
    import sys

    monkeypatch.setitem(sys.modules, "scipy", None)
    monkeypatch.setitem(sys.modules, "scipy.optimize", None)
    s = solve(zero_sum(BIASED_RPS))
    assert s.method == "lp" and s.nash_conv < 1e-9
    np.testing.assert_allclose(s.strategies[0], BIASED_RPS_EQUILIBRIUM, atol=1e-9)


def test_bad_games_and_settings_are_refused_in_one_line():
    for bad, match in [
        (np.zeros((2, 2)), "expected shape"),
        (np.zeros((2, 2, 3)), "expected shape"),
        (np.zeros((0, 2, 2)), "at least one action"),
        (np.full((2, 2, 2), np.nan), "finite"),
    ]:
        with pytest.raises(ValueError, match=match):
            regret_matching(bad)
    for iterations in (0, 1.5, True, "10"):
        with pytest.raises(ValueError, match="iterations"):
            regret_matching(zero_sum(RPS), iterations)
    with pytest.raises(ValueError, match="method"):
        solve(zero_sum(RPS), method="cfr")
    with pytest.raises(ValueError, match="two-seat games only"):
        solve(np.zeros((2, 2, 2, 3)), method="lp")
    with pytest.raises(ValueError, match="matrix"):
        zero_sum_lp(np.zeros(3))


def test_regret_matching_is_the_same_compiled_and_as_plain_python():
    """The loops are compiled with Numba where it is installed (the same code runs as plain Python without it):
    regret matching, and the simplex of ``zero_sum_lp``."""
    from plain_python import run_without_numba

    simplex = [x.tolist() for x in zero_sum_lp(blotto(4, 5))[:2]]
    expected = {
        (name, alternating): [x.tolist() for x in regret_matching(U, 50, alternating).strategies]
        for name, U in (("pairwise", pairwise(BIASED_RPS)), ("blotto", zero_sum(blotto(4, 5))))
        for alternating in (True, False)
    }
    run_without_numba(
        "import numpy as np\n"
        "from revolution_env.common.jit import COMPILED\n"
        "from revolution_env.agents.matrix_games import regret_matching, zero_sum_lp\n"
        "from test_matrix_games import BIASED_RPS, blotto, pairwise, zero_sum\n"
        "assert not COMPILED\n"
        "games = {'pairwise': pairwise(BIASED_RPS), 'blotto': zero_sum(blotto(4, 5))}\n"
        f"for (name, alternating), want in {expected!r}.items():\n"
        "    x = regret_matching(games[name], 50, alternating).strategies\n"
        "    assert all(np.allclose(a, b, rtol=0, atol=1e-12) for a, b in zip(x, want)), (name, x, want)\n"
        "got = zero_sum_lp(blotto(4, 5))[:2]\n"
        f"assert all(np.allclose(a, b, rtol=0, atol=1e-12) for a, b in zip(got, {simplex!r}))\n"
    )
