"""Property tests: random legal games of every variant keep the game's invariants after every decision.

The engine is driven by uniformly random legal decisions (revolution_env.engine.random_play) from seeds that
hypothesis chooses. After every decision: tokens and cubes are conserved, no area overflows, no count is negative,
support never falls, and the game ends or is truncated at max_rounds. A game replays to the same state from the
same seeds and from its exported scenario. At the engine level the options offered are exactly the ones accepted.
"""

from __future__ import annotations

import itertools
import json

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from replay_files import another_seed

from revolution_env.engine import (
    BID,
    GUY,
    Game,
    IllegalAction,
    Rules,
    export_game,
    random_bids,
    random_choice,
    run_scenario,
    state_dict,
)

CUBES = 25
TOTALS = np.array([12, 12, 32])


def _variants() -> list[Rules]:
    out = []
    for players, refunds, bonus, first in itertools.product((2, 3, 4), (False, True), (False, True), (False, True)):
        if not refunds and (players == 2 or first):
            continue  # the puppet variant and the first edition always refund (docs/rules.md §6, D14)
        out.append(Rules(players=players, bid_refunds=refunds, area_control_bonus=bonus, first_edition=first))
    return out


VARIANTS = _variants()
SEEDS = st.integers(0, 2**32 - 1)
MAX_ROUNDS = st.one_of(st.just(100), st.integers(1, 6))


@st.composite
def rules(draw: st.DrawFn) -> Rules:
    base = draw(st.sampled_from(VARIANTS))
    return Rules(**{**base.to_dict(), "max_rounds": draw(MAX_ROUNDS)})


def check_invariants(game: Game) -> None:
    L = game.layout
    for name, array in (("tokens", game.tokens), ("bank", game.bank), ("bids", game.bids), ("cubes", game.cubes),
                        ("supply", game.supply), ("support", game.support)):  # fmt: skip
        assert (array >= 0).all(), f"negative {name}: {array}"
    on_bid_board = game.bids.sum((0, 1))
    assert np.array_equal(game.bank + game.tokens.sum(0) + on_bid_board, L.totals), "tokens not conserved"
    assert np.array_equal(L.totals, TOTALS)
    assert np.array_equal(game.supply + game.cubes.sum(0), np.full(L.seats, CUBES)), "cubes not conserved"
    assert (game.cubes.sum(1) <= L.spaces).all(), "an area holds more cubes than spaces"
    assert 1 <= game.round <= game.rules.max_rounds
    if game.over:
        assert game.decision is None
        if game.truncated:
            assert game.round == game.rules.max_rounds and not game.board_full()  # D8
        else:
            assert game.board_full()  # D6
        final = game.final
        points = game.tokens @ L.token_points
        assert final["token_points"] == points.tolist()
        assert final["support"] == (game.support + points + np.array(final["area_points"])).tolist()
        assert all(0 <= w < L.players for w in final["winners"])
    else:
        assert game.decision is not None


def play(rules: Rules, seed: int, choice_seed: int, check: bool = True) -> Game:
    """A complete random game, checking the invariants after every decision."""
    game = Game.new(rules, seed)
    rng = np.random.default_rng(choice_seed)
    support = game.support.copy()
    decisions = 0
    while game.decision is not None:
        if game.decision.kind == BID:
            game.submit_bids(random_bids(game, rng))
        else:
            game.choose(random_choice(game, rng))
        decisions += 1
        assert decisions < 5000, "the game does not end"
        if check:
            check_invariants(game)
            assert (game.support >= support).all(), "support fell"
            support = game.support.copy()
    return game


@settings(max_examples=300, deadline=None)
@given(rules=rules(), seed=SEEDS, choice_seed=SEEDS)
def test_random_games_keep_the_invariants(rules: Rules, seed: int, choice_seed: int) -> None:
    game = play(rules, seed, choice_seed)
    assert game.over
    if rules.max_rounds == 100:
        assert game.game_over, "a random game fills the board long before round 100"


@settings(max_examples=40, deadline=None)
@given(rules=rules(), seed=SEEDS, choice_seed=SEEDS)
def test_same_seeds_same_game(rules: Rules, seed: int, choice_seed: int) -> None:
    first = play(rules, seed, choice_seed, check=False)
    second = play(rules, seed, choice_seed, check=False)
    assert state_dict(first) == state_dict(second)
    assert json.dumps(export_game(first)) == json.dumps(export_game(second))


@settings(max_examples=100, deadline=None)
@given(rules=rules(), seed=SEEDS, choice_seed=SEEDS)
def test_exported_game_replays_to_the_same_state(rules: Rules, seed: int, choice_seed: int) -> None:
    game = play(rules, seed, choice_seed, check=False)
    assert state_dict(run_scenario(another_seed(export_game(game)))) == state_dict(game)


@settings(max_examples=40, deadline=None)
@given(rules=rules(), seed=SEEDS, choice_seed=SEEDS, stop=st.integers(1, 20))
def test_export_mid_game_replays(rules: Rules, seed: int, choice_seed: int, stop: int) -> None:
    """Exported at the start of a later round's bidding, the game replays to that position."""
    game = Game.new(rules, seed)
    rng = np.random.default_rng(choice_seed)
    while game.decision is not None and not (game.decision.kind == BID and game.round == stop):
        if game.decision.kind == BID:
            game.submit_bids(random_bids(game, rng))
        else:
            game.choose(random_choice(game, rng))
    replay = run_scenario(json.loads(json.dumps(export_game(game))))
    assert state_dict(replay) == state_dict(game)
    # The replay goes on exactly like the original (the seeded coin and deck included).
    for g in (game, replay):
        play_on = np.random.default_rng(choice_seed + 1)
        while g.decision is not None:
            if g.decision.kind == BID:
                g.submit_bids(random_bids(g, play_on))
            else:
                g.choose(random_choice(g, play_on))
    assert state_dict(replay) == state_dict(game)


# --- the options offered are exactly the options accepted ---------------------------------------------------------


def options(game: Game) -> np.ndarray:
    return game.guy_targets() if game.decision.kind == GUY else game.cube_targets()


def check_options_exact(game: Game, rng: np.random.Generator, samples: int = 4) -> None:
    """Some offered options (and declining, if offered) are accepted; some not offered raise IllegalAction
    and leave the game unchanged."""
    offered = options(game)
    assert offered.any(), "a decision is asked only when an option exists (settled case 5)"
    yes = np.argwhere(offered)
    no = np.argwhere(~offered)
    for k in rng.permutation(len(yes))[:samples]:
        g = game.copy()
        g.choose(tuple(int(x) for x in yes[k]))
        check_invariants(g)
    before = state_dict(game)
    for k in rng.permutation(len(no))[:samples]:
        try:
            game.choose(tuple(int(x) for x in no[k]))
        except IllegalAction:
            pass
        else:
            raise AssertionError(f"{game.decision.kind}: an option not offered was accepted: {tuple(no[k])}")
        assert state_dict(game) == before
    if game.can_decline():
        g = game.copy()
        g.choose(None)
        check_invariants(g)
    else:
        try:
            game.choose(None)
        except IllegalAction:
            pass
        else:
            raise AssertionError(f"{game.decision.kind}: declining was accepted where it is not offered")
        assert state_dict(game) == before
    for bad in ((-1, 0), (99, 0), (0, 99)) if game.decision.kind != GUY else ((-1, 0, 0), (0, 2, 0), (0, 0, 2)):
        try:
            game.choose(bad)
        except IllegalAction:
            pass
        else:
            raise AssertionError(f"out-of-range choice accepted: {bad}")
    assert state_dict(game) == before


def check_bids_exact(game: Game, rng: np.random.Generator) -> None:
    """Random legal bids are accepted (checked on a copy); bids that leave a token unplaced, place one too many or
    are negative are refused (D3) and leave the game unchanged."""
    L = game.layout
    before = state_dict(game)
    bids = random_bids(game, rng)
    g = game.copy()
    g.submit_bids(bids)
    check_invariants(g)
    seat, token = int(rng.integers(L.players)), int(rng.integers(3))
    target = int(rng.choice(L.legal_targets[token]))
    for delta in (1, -1):
        bad = bids.copy()
        bad[seat, target, token] += delta
        try:
            game.submit_bids(bad)
        except IllegalAction as exc:
            assert "D3" in str(exc) or "negative" in str(exc)
        else:
            raise AssertionError(f"bids with {delta:+d} {token} for seat {seat} were accepted")
        assert state_dict(game) == before
    try:
        game.choose(None)
    except IllegalAction:
        pass
    else:
        raise AssertionError("choose() accepted during bidding")


@settings(max_examples=40, deadline=None)
@given(rules=st.sampled_from(VARIANTS), seed=SEEDS, choice_seed=SEEDS)
def test_offered_options_are_exactly_the_accepted_ones(rules: Rules, seed: int, choice_seed: int) -> None:
    game = Game.new(rules, seed)
    rng = np.random.default_rng(choice_seed)
    while game.decision is not None:
        if game.decision.kind == BID:
            check_bids_exact(game, rng)
            game.submit_bids(random_bids(game, rng))
        else:
            check_options_exact(game, rng)
            game.choose(random_choice(game, rng))
    try:
        game.submit_bids(np.zeros((game.layout.players, game.layout.n_targets, 3), dtype=np.int64))
    except IllegalAction:
        pass
    else:
        raise AssertionError("bids accepted after the end of the game")
