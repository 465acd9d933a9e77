"""A game rebuilt from one player's observation at a bid decision (revolution_env/env/reconstruct.py) is the real
game up to what the observation hides: given the same bids and choices, both play on to the same states."""

from __future__ import annotations

import collections
import copy
import itertools

import numpy as np
import pytest

from revolution_env.engine.components import GOLD
from revolution_env.engine.game import BID, GUY, Decision, Game, Rules
from revolution_env.engine.random_play import random_bids, random_choice
from revolution_env.engine.scenario import state_dict
from revolution_env.env import observation_layout
from revolution_env.env.encoding import NONE
from revolution_env.env.reconstruct import game_from_observation

VARIANTS = [
    dict(players=p, first_edition=f, area_control_bonus=bonus)
    for p, f, bonus in itertools.product((2, 3, 4), (False, True), (False, True))
] + [dict(players=3, bid_refunds=True), dict(players=4, bid_refunds=True, area_control_bonus=True)]
GAMES = 3  # random games per variant; every bid decision of each is rebuilt from every player's observation
MAX_ROUNDS = 30  # rounds of a game looked at (random games run long)


def _name(options: dict) -> str:
    return "-".join(f"{k}={v}" for k, v in options.items())


def kind_of(game: Game, seat: int) -> Decision:
    d = game.decision
    if d is None:
        return NONE
    if d.kind == BID:
        return BID
    return d.kind if d.seat == seat else NONE


def observations(game: Game, layout) -> list[np.ndarray]:
    return [layout.build(game, s, kind_of(game, s)) for s in range(game.layout.players)]


def assert_same(real: Game, rebuilt: Game, layout, where: str) -> None:
    assert state_dict(rebuilt) == state_dict(real), where  # the whole state, the draw pile included
    assert rebuilt.decision == real.decision, where
    assert rebuilt.revealed_round == real.revealed_round, where  # which round the bids shown belong to (rendering)
    for s, (a, b) in enumerate(zip(observations(real, layout), observations(rebuilt, layout))):
        np.testing.assert_array_equal(b, a, err_msg=f"{where}, seat {s}'s observation")


def bid_decisions(options: dict, seed: int):
    """The game at every bid decision of a random game, up to MAX_ROUNDS."""
    game = Game.new(Rules(**options), seed)
    rng = np.random.default_rng([seed, 7])
    while game.decision is not None and game.round <= MAX_ROUNDS:
        if game.decision.kind == BID:
            yield game
            game.submit_bids(random_bids(game, rng))
        else:
            game.choose(random_choice(game, rng))


def play_round_on_both(real: Game, rebuilt: Game, layout, rng: np.random.Generator, where: str) -> None:
    """The same random bids and choices on both games until the next bid decision, compared at every step. The
    real game's D9 coin (two players) is handed to the rebuilt one as the round's priority."""
    bids = random_bids(real, rng)
    real.submit_bids(bids)
    priority = real.history[-1].get("priority") if real.layout.puppet >= 0 else None
    rebuilt.submit_bids(bids, priority=priority)
    assert_same(real, rebuilt, layout, f"{where}, after the bids")
    while real.decision is not None and real.decision.kind != BID:
        choice = random_choice(real, rng)
        real.choose(choice)
        rebuilt.choose(choice)
        assert_same(real, rebuilt, layout, f"{where}, after {choice}")


@pytest.mark.parametrize("options", VARIANTS, ids=_name)
def test_a_game_rebuilt_from_any_players_observation_plays_on_as_the_real_one(options):
    layout = observation_layout(**options)
    checked = 0
    for seed in range(GAMES):
        for game in bid_decisions(options, seed):
            for seat in range(game.layout.players):
                where = f"seed {seed}, round {game.round}, seat {seat}"
                obs = layout.build(game, seat, BID)
                rebuilt = game_from_observation(obs, layout, seat=seat, rng=np.random.default_rng(seat))
                if game.layout.card_space >= 0:  # the deck is hidden: fix it to the real one's to compare states
                    names = [c.name for c in game.layout.components.deck]
                    assert sorted(names[i] for i in rebuilt._draw_pile) == sorted(names[i] for i in game._draw_pile)
                    rebuilt._draw_pile = list(game._draw_pile)
                    rebuilt._deck_rng = copy.deepcopy(game._deck_rng)
                assert_same(game, rebuilt, layout, where)
                real = game.copy()
                play_round_on_both(real, rebuilt, layout, np.random.default_rng([seed, game.round, seat]), where)
                checked += 1
    assert checked >= 30 * GAMES


def relative(choice, kind, perm_inverse):
    """A choice of the real game in the seats of a game rebuilt with the observer at seat 0."""
    if choice is None:
        return None
    if kind == GUY:
        character, answered, mode = choice
        return (character, int(perm_inverse[answered]), mode)
    area, seat = choice
    return (area, int(perm_inverse[seat]))


@pytest.mark.parametrize("players", [2, 3, 4])
def test_a_game_rebuilt_with_the_observer_at_seat_0_plays_on_as_the_real_one_seen_from_the_observer(players):
    """What an agent can do, which does not know its seat: the rebuilt game puts it at seat 0. Seen from the
    observer, both games play on alike but in a round where Patronage could not top everyone up (D17's order
    from seat 0, the only rule outside the first edition that depends on the absolute seat)."""
    options = {"players": players}
    layout = observation_layout(**options)
    codec = layout.codec
    same = short = 0
    for seed in range(GAMES):
        for game in bid_decisions(options, seed):
            for seat in range(1, players):
                perm, inverse = codec.perm[seat], codec.inv[seat]
                obs = layout.build(game, seat, BID)
                rebuilt = game_from_observation(obs, layout, seat=0, rng=np.random.default_rng(seat))
                np.testing.assert_array_equal(layout.build(rebuilt, 0, BID), obs)
                real = game.copy()
                r = np.random.default_rng([seed, game.round, seat])
                bids = random_bids(real, r)
                real.submit_bids(bids)
                priority = real.history[-1].get("priority") if players == 2 else None
                rebuilt.submit_bids(bids[perm[:players]], priority=None if priority is None else int(inverse[priority]))
                while real.decision is not None and real.decision.kind != BID:
                    kind = real.decision.kind
                    assert rebuilt.decision.kind == kind and rebuilt.decision.seat == inverse[real.decision.seat]
                    choice = random_choice(real, r)
                    real.choose(choice)
                    rebuilt.choose(relative(choice, kind, inverse))
                    np.testing.assert_array_equal(
                        layout.build(rebuilt, 0, kind_of(rebuilt, 0)), layout.build(real, seat, kind_of(real, seat))
                    )
                mine, theirs = (
                    layout.build(rebuilt, 0, kind_of(rebuilt, 0)),
                    layout.build(real, seat, kind_of(real, seat)),
                )
                starved = real.bank[GOLD] == 0 and (real.tokens.sum(1) < real.layout.components.patronage_minimum).any()
                if starved and not real.over:
                    short += 1
                    continue
                np.testing.assert_array_equal(mine, theirs, err_msg=f"seed {seed}, round {game.round}, seat {seat}")
                same += 1
    assert same >= 10 * GAMES * (players - 1)


def test_the_rebuilt_draw_pile_is_a_uniform_shuffle_of_the_cards_left():
    options = {"players": 3, "first_edition": True}
    layout = observation_layout(**options)
    game = next(g for g in bid_decisions(options, 1) if 4 <= len(g._draw_pile) < 20)
    names = [c.name for c in game.layout.components.deck]
    left = collections.Counter(names[i] for i in game._draw_pile)
    obs = layout.build(game, 0, BID)
    tops = collections.Counter()
    orders = set()
    draws = 3000
    for i in range(draws):
        rebuilt = game_from_observation(obs, layout, rng=np.random.default_rng(i))
        assert collections.Counter(names[j] for j in rebuilt._draw_pile) == left
        tops[names[rebuilt._draw_pile[0]]] += 1
        orders.add(tuple(names[j] for j in rebuilt._draw_pile))
    total = sum(left.values())
    for name, n in left.items():  # each type on top as often as its share of the pile (4 standard deviations)
        p = n / total
        assert abs(tops[name] / draws - p) <= 4 * np.sqrt(p * (1 - p) / draws), (name, tops[name], p)
    assert len(orders) > draws // 2
    # the same generator gives the same game, a different one another seed
    a = game_from_observation(obs, layout, rng=np.random.default_rng(5))
    b = game_from_observation(obs, layout, rng=np.random.default_rng(5))
    assert a.seed == b.seed and a._draw_pile == b._draw_pile


def test_an_observation_that_is_not_at_a_bid_decision_is_refused_in_one_line():
    options = {"players": 2}
    layout = observation_layout(**options)
    game = Game.new(Rules(**options), 3)
    with pytest.raises(ValueError, match="seat: expected"):
        game_from_observation(layout.build(game, 0, BID), layout, seat=2)
    with pytest.raises(ValueError, match="at a bid decision, this one is at none"):
        game_from_observation(layout.build(game, 0, NONE), layout)
    bad = layout.build(game, 0, BID)
    bad[layout.features["bank"].start] += 1
    with pytest.raises(ValueError, match="do not add up"):
        game_from_observation(bad, layout)
    with pytest.raises(ValueError, match="expected a vector of length"):
        game_from_observation(bad[:-1], layout)
