"""Observations hold only what the player may know (docs/environment.md §4).

A player sees nothing of the bids placed before theirs in the same round (the AEC API asks players one after
another, but the bids are secret until all are in), nothing of the order of the first edition's deck, and
everything public: the observation decodes back to the engine's public state, in seats relative to the observer.
"""

from __future__ import annotations

import collections
import itertools

import numpy as np
import pytest
from gymnasium.utils.env_checker import data_equivalence

import revolution_env
from revolution_env import describe_action, observation_layout
from revolution_env.engine.game import Decision

TOKENS = ("force", "blackmail", "gold")


def _name(options: dict) -> str:
    return "-".join(f"{k}={v}" for k, v in options.items())


def order(game, me: int) -> list[int]:
    """Relative seat -> absolute seat: the observer first, then the next seats, the puppet always last."""
    players = game.rules.players
    seats = [(me + r) % players for r in range(players)]
    return seats + [players] if players == 2 else seats


def relative(game, me: int, seat: int) -> int:
    return order(game, me).index(seat)


def play_same(envs) -> None:
    """One step: the same random legal action in every (identical) environment."""
    agent = envs[0].agent_selection
    action = envs[0].action_space(agent).sample(envs[0].observe(agent)["action_mask"])
    for env in envs:
        assert env.agent_selection == agent
        env.step(action)


def to_bidding(envs, rounds: int) -> bool:
    """Play the same actions in every environment until the start of round ``1 + rounds`` (False if over)."""
    first = envs[0]
    while not first.game.over and not (first.game.round > rounds and first.game.phase == "bidding"):
        play_same(envs)
    return not first.game.over


# --- secret bids ------------------------------------------------------------------------------------------------

VARIANTS = [
    {"players": 2},
    {"players": 3},
    {"players": 4},
    {"players": 4, "first_edition": True},
    {"players": 2, "first_edition": True},
]


@pytest.mark.parametrize("options", VARIANTS, ids=_name)
def test_a_bid_stays_hidden_from_everyone_until_all_have_bid(options):
    revealed = 0
    for seed in range(6):
        rng = np.random.default_rng(seed)
        a, b = revolution_env.raw_env(**options), revolution_env.raw_env(**options)
        a.reset(seed=seed)
        b.reset(seed=seed)
        if not to_bidding([a, b], int(rng.integers(0, 6))):
            continue
        players = a.possible_agents
        secret = int(rng.integers(len(players) - 1))  # this bidder bids differently in the two games
        for i, agent in enumerate(players):
            assert a.agent_selection == b.agent_selection == agent  # the AEC order of bids
            mask = a.observe(agent)["action_mask"]
            action_a = a.action_space(agent).sample(mask)
            action_b = action_a
            while i == secret and describe_action(b, agent, action_b) == describe_action(a, agent, action_a):
                action_b = b.action_space(agent).sample(mask)
            a.step(action_a)
            b.step(action_b)
            if i < len(players) - 1:  # the round is not resolved yet: nobody else can tell the bids apart
                for other in players:
                    if other != players[secret]:
                        assert data_equivalence(a.observe(other), b.observe(other), exact=True), (
                            f"{other} after {agent}"
                        )
                        assert a.infos[other] == b.infos[other]
        # Once all have bid, the bids are revealed: the test would see a leak.
        if any(not np.array_equal(a.observe(p)["observation"], b.observe(p)["observation"]) for p in players):
            revealed += 1
    assert revealed >= 4, "the differing bids should show once revealed"


# --- the deck's order ------------------------------------------------------------------------------------------


def deck_names(game) -> list[str]:
    return [game.layout.components.deck[i].name for i in game._draw_pile]


@pytest.mark.parametrize("players", [2, 3, 4])
def test_no_observation_shows_the_order_of_the_deck(players):
    options = {"players": players, "first_edition": True}
    told = 0
    for seed in range(6):
        rng = np.random.default_rng(seed)
        a, b = revolution_env.raw_env(**options), revolution_env.raw_env(**options)
        a.reset(seed=seed)
        b.reset(seed=seed)
        if not to_bidding([a, b], int(rng.integers(0, 4))):
            continue
        pile = list(a.game._draw_pile)
        a.game._draw_pile = [int(i) for i in rng.permutation(pile)]
        b.game._draw_pile = [int(i) for i in rng.permutation(pile)]
        while deck_names(b.game)[0] == deck_names(a.game)[0]:  # different first cards: a draw would tell
            b.game._draw_pile = [int(i) for i in rng.permutation(pile)]
        assert collections.Counter(deck_names(a.game)) == collections.Counter(deck_names(b.game))
        size = len(pile)
        while len(a.game._draw_pile) == size and not a.game.over:  # until the first card is drawn
            for agent in a.possible_agents:
                assert data_equivalence(a.observe(agent), b.observe(agent), exact=True), agent
            play_same([a, b])
        if any(not np.array_equal(a.observe(p)["observation"], b.observe(p)["observation"]) for p in a.agents):
            told += 1  # the drawn card is public once drawn
    assert told >= 3


# --- the decoder gives back the public state -------------------------------------------------------------------


def check_view(env, agent: str, options: dict) -> None:
    raw = env.unwrapped
    game = raw.game
    me = raw.possible_agents.index(agent)
    seats = order(game, me)
    view = observation_layout(**options).decode(raw.observe(agent)["observation"])
    assert (view.round, view.phase, view.decision) == (game.round, game.phase, raw.infos[agent]["decision"])
    assert view.rounds_left == game.rules.max_rounds - game.round
    assert np.array_equal(view.tokens, game.tokens[seats])
    assert np.array_equal(view.support, game.support[seats])
    assert np.array_equal(view.supply, game.supply[seats])
    assert np.array_equal(view.bank, game.bank)
    assert np.array_equal(view.cubes, game.cubes[:, seats])
    assert np.array_equal(view.free, game.layout.spaces - game.cubes.sum(1))
    if game.revealed_round:
        assert np.array_equal(view.bids, game.revealed[seats])  # bids as placed, the puppet's included
        winners = [w if w < 0 else relative(game, me, int(w)) for w in game.winners]
        assert view.winners.tolist() == winners
        assert view.bids_current == (game.revealed_round == game.round and game.phase != "bidding")
    else:
        assert not view.bids.any() and (view.winners == -2).all()
    if view.decision not in (Decision.NONE, Decision.BID):
        assert view.can_decline == game.can_decline()
    if view.decision == Decision.APOTHECARY_SECOND:
        area, seat = game._apothecary_first
        assert view.apothecary_first == (area, relative(game, me, seat))
    else:
        assert view.apothecary_first is None
    if game.rules.players == 2:
        assert view.puppet == 2
        assert np.array_equal(view.scheming_gold, game.scheming_gold[seats])
        last = game.guy_last_placer
        assert view.guy_last_placer == (-1 if last < 0 else relative(game, me, last))
    if game.rules.first_edition:
        names = view_card_names(options)
        left = collections.Counter(deck_names(game))
        assert view.deck_left.tolist() == [left[n] for n in names]
        drawn = np.zeros_like(view.cards_drawn)
        for seat, index in game.cards_drawn:
            drawn[relative(game, me, seat), names.index(game.layout.components.deck[index].name)] += 1
        assert np.array_equal(view.cards_drawn, drawn)
    if game.over:
        assert view.final_support.tolist() == [game.final["support"][s] for s in seats]
    else:
        assert view.final_support is None


def view_card_names(options: dict) -> list[str]:
    return list(observation_layout(**options).card_names)


DECODER_VARIANTS = [
    dict(players=p, first_edition=f, area_control_bonus=bonus)
    for p, f, bonus in itertools.product((2, 3, 4), (False, True), (False, True))
]


@pytest.mark.parametrize("options", DECODER_VARIANTS, ids=_name)
def test_the_observation_decodes_to_the_public_state_in_relative_seats(options):
    for seed in range(3):
        env = revolution_env.raw_env(**options)
        env.reset(seed=seed)
        for agent in env.agent_iter():
            observation, _, termination, truncation, _ = env.last()
            for other in env.agents:
                check_view(env, other, options)
            env.step(None if termination or truncation else env.action_space(agent).sample(observation["action_mask"]))


def test_the_observation_of_a_truncated_game_shows_the_final_support():
    options = {"players": 3, "max_rounds": 2}
    env = revolution_env.raw_env(**options)
    env.reset(seed=1)
    while not env.game.over:
        agent = env.agent_selection
        env.step(env.action_space(agent).sample(env.observe(agent)["action_mask"]))
    for agent in env.agents:
        check_view(env, agent, options)
        assert observation_layout(**options).decode(env.observe(agent)["observation"]).phase == "over"
