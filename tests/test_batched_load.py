"""One scalar game's state loaded into rows of the batched engine (``BatchedGame.load``): the rows' canonical states,
observations and masks are the scalar game's, and the rows play on as copies of it do, decision for decision to the
end (the first edition's reshuffles included), over real states of seeded games of every variant and over games
rebuilt from observations (``env.reconstruct``), as a search loads them."""

from __future__ import annotations

import numpy as np
import pytest
from test_batched import card_bids, engine_value

from revolution_env.engine.batched import BatchedGame, clean_bids_batch, priority_by_rule_batch
from revolution_env.engine.game import BID, Game, Rules, make_layout
from revolution_env.engine.random_play import random_bids, random_choice
from revolution_env.engine.scenario import state_dict
from revolution_env.env.batched import BatchedView
from revolution_env.env.encoding import Codec
from revolution_env.env.observation import ObservationLayout
from revolution_env.env.reconstruct import game_from_observation

VARIANTS = {
    "2 players": Rules(players=2),
    "3 players": Rules(players=3),
    "4 players": Rules(players=4),
    "bid refunds": Rules(players=3, bid_refunds=True),
    "area control bonus": Rules(players=4, area_control_bonus=True),
    "2 players, area control bonus": Rules(players=2, area_control_bonus=True),
    "first edition, 2 players": Rules(players=2, first_edition=True),
    "first edition, 3 players": Rules(players=3, first_edition=True),
    "first edition, 4 players, area control bonus": Rules(players=4, first_edition=True, area_control_bonus=True),
}
ROWS = np.array([1, 4])  # the rows loaded, among others that must stay as they were


def bids_for(game: Game, rng: np.random.Generator) -> np.ndarray:
    """Random bids; in the first edition, as much Gold on the Card space as draws cards, so that the deck runs out."""
    return card_bids(game, rng) if game.layout.card_space >= 0 else random_bids(game, rng)


def bid_decisions(rules: Rules, seed: int, every: int = 1):
    """The scalar game at its bid decisions (every ``every``-th round) while it is played on by random decisions."""
    game = Game(make_layout(rules), seed)
    rng = np.random.default_rng(seed)
    while game.decision is not None:
        if game.decision.kind == BID:
            if (game.round - 1) % every == 0:
                yield game
            game.submit_bids(bids_for(game, rng))
        else:
            game.choose(random_choice(game, rng))


def check_views(batch: BatchedGame, rows: np.ndarray, game: Game, view: BatchedView, layout: ObservationLayout):
    codec = layout.codec
    P = game.layout.players
    games, seats = np.repeat(rows, P), np.tile(np.arange(P), len(rows))
    kinds = view.kinds(batch, games, seats)
    obs, masks = view.observe_and_mask(batch, games, seats, kinds)
    for j, s in enumerate(seats.tolist()):
        assert kinds[j] == BID
        np.testing.assert_array_equal(obs[j], layout.build(game, s, BID), err_msg=f"seat {s}")
        np.testing.assert_array_equal(masks[j], codec.mask(game, s, BID), err_msg=f"seat {s}")


def play_on(batch: BatchedGame, row: int, game: Game, rng: np.random.Generator) -> int:
    """Row ``row`` and the scalar game played on to the end by the same random decisions (the row's D9 coin given to
    the scalar game as its priority), the canonical states compared after every decision; the decisions counted."""
    decisions = 0
    while game.decision is not None:
        if game.decision.kind == BID:
            bids = bids_for(game, rng)
            batch.submit_bids([row], bids[None])
            priority = int(batch.history.priority[row, game.round - 1]) if game.layout.puppet >= 0 else None
            game.submit_bids(bids, priority=priority)
        else:
            choice = random_choice(game, rng)
            batch.choose([row], [engine_value(game, choice)])
            game.choose(choice)
        decisions += 1
        assert batch.state_dict(row) == state_dict(game), f"row {row}, round {game.round}"
    return decisions


@pytest.mark.parametrize("variant", list(VARIANTS))
def test_a_loaded_state_is_the_scalar_games_and_plays_on_as_its_copies_do(variant: str) -> None:
    rules = VARIANTS[variant]
    L = make_layout(rules)
    codec = Codec(L)
    layout = ObservationLayout(codec)
    view = BatchedView(codec, layout)
    batch = BatchedGame(L, 6, seeds=np.arange(6), rng=np.random.default_rng(0))
    others = np.setdiff1d(np.arange(6), ROWS)
    untouched = {r: batch.state_dict(r) for r in others.tolist()}
    states = played = 0
    for seed in range(3):
        for game in bid_decisions(rules, seed):
            batch.load(ROWS, game)
            for r in ROWS.tolist():
                assert batch.state_dict(r) == state_dict(game), f"seed {seed}, round {game.round}"
            check_views(batch, ROWS, game, view, layout)
            states += 1
            if game.round % 4 == 1:  # from some, the rest of the game on both
                played += play_on(batch, int(ROWS[0]), game.copy(), np.random.default_rng([seed, game.round]))
    assert states >= 15 and played >= 20
    assert {r: batch.state_dict(r) for r in others.tolist()} == untouched


@pytest.mark.parametrize("variant", ["2 players", "3 players", "first edition, 2 players", "first edition, 3 players"])
def test_the_coin_of_the_scalar_game_as_priority_makes_the_rows_play_as_its_copies(variant: str) -> None:
    """Every row loaded from a game, given ``Game.next_coin`` as the priority where D9 comes to the coin, plays the
    round as a copy of the game does (each copy flips that coin), whatever the batch's own generator. Where the two
    players hold the same tokens (the first round), they bid alike, and the coin decides."""
    rules = VARIANTS[variant]
    L = make_layout(rules)
    batch = BatchedGame(L, 3, rng=np.random.default_rng(5))
    rng = np.random.default_rng(1)
    rounds = coins = 0
    for game in bid_decisions(rules, 4, every=2):
        bids = bids_for(game, rng)
        if L.puppet >= 0 and (game.tokens[0] == game.tokens[1]).all():
            bids[1] = bids[0]  # the same bids: D9 comes to the coin
        copy = game.copy()
        copy.submit_bids(bids)
        rows = np.arange(3)
        batch.load(rows, game)
        priority = None
        if L.puppet >= 0:
            coin = game.next_coin()
            ruled = copy.history[-1]["priority"]
            priority = np.full(3, coin)
            by_rule = priority_by_rule_batch(clean_bids_batch(bids[None], L)[0], L)[0]
            if by_rule >= 0:
                priority[:] = -1
            else:
                coins += 1
                assert ruled == coin
        batch.submit_bids(rows, np.repeat(bids[None], 3, 0), priority=priority)
        while copy.decision is not None and copy.decision.kind != BID:
            choice = random_choice(copy, rng)
            batch.choose(rows, np.full(3, engine_value(copy, choice)))
            copy.choose(choice)
        for r in rows.tolist():
            assert batch.state_dict(r) == state_dict(copy)
        rounds += 1
    assert rounds >= 3
    if L.puppet >= 0:
        assert coins >= 1


@pytest.mark.parametrize("variant", ["2 players", "4 players", "first edition, 3 players", "bid refunds"])
def test_a_game_rebuilt_from_an_observation_loads_with_the_observations_it_gives(variant: str) -> None:
    """As a search loads it: the game rebuilt from one seat's observation (``game_from_observation``), loaded, gives
    every seat the observation and the mask the rebuilt game gives, the observer's own among them."""
    rules = VARIANTS[variant]
    L = make_layout(rules)
    codec = Codec(L)
    layout = ObservationLayout(codec)
    view = BatchedView(codec, layout)
    batch = BatchedGame(L, 4)
    rng = np.random.default_rng(3)
    for seed in range(2):
        for game in bid_decisions(rules, seed):
            seat = game.round % L.players
            rebuilt = game_from_observation(layout.build(game, seat, BID), layout, 0, rng)
            batch.load(ROWS[:1], rebuilt)
            assert batch.state_dict(int(ROWS[0])) == state_dict(rebuilt)
            check_views(batch, ROWS[:1], rebuilt, view, layout)
            games = np.array([ROWS[0]])
            np.testing.assert_array_equal(view.observe(batch, games, games * 0, np.array([BID])),
                                          layout.build(game, seat, BID)[None])  # fmt: skip


def test_loading_refuses_a_game_it_cannot_hold() -> None:
    L = make_layout(Rules(players=3))
    batch = BatchedGame(L, 2)
    game = Game(L, 0)
    rng = np.random.default_rng(0)
    while game.decision.kind == BID:
        game.submit_bids(random_bids(game, rng))
    with pytest.raises(ValueError, match="not at a bid decision"):
        batch.load([0], game)
    with pytest.raises(ValueError, match="another variant"):
        batch.load([0], Game.new(Rules(players=4), 0))
    with pytest.raises(ValueError, match="indices from 0 to 1"):
        batch.load([2], Game(L, 0))
