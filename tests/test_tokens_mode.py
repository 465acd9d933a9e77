"""The token action mode (docs/environment.md §5 "Token mode", ``action_mode``; revolution_env/env/tokens.py).

- PettingZoo's four tests pass in the token mode on 2, 3 and 4 players;
- every token walk the mask allows ends in a bid the bid mode allows, and is that bid's canonical sequence (so a
  bid has exactly one sequence); every bid the bid mode allows is reachable by its sequence (property tests);
- a game played in the token mode, bid for bid the same as in the bid mode, ends in the same state;
- the bid under construction is seen by its owner only; a Parallel player whose bid is complete waits;
- ``gym_env(action_mode="tokens")`` passes Gymnasium's and SB3's checkers and plays heuristic opponents;
- bad input: an unknown mode, a float action, an action out of turn.
"""

from __future__ import annotations

import functools
import warnings

import gymnasium
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pettingzoo.test import api_test, parallel_api_test, parallel_seed_test, seed_test

import revolution_env
from revolution_env import Decision, IllegalActionError
from revolution_env.engine.game import OVER

PLAYERS = [2, 3, 4]


@pytest.fixture(autouse=True)
def _quiet():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # Dict spaces, illegal moves by design
        yield


@pytest.mark.parametrize("players", PLAYERS)
def test_the_four_pettingzoo_tests_pass_in_the_token_mode(players):
    api_test(revolution_env.env(players=players, action_mode="tokens"), num_cycles=300)
    parallel_api_test(revolution_env.parallel_env(players=players, action_mode="tokens"), num_cycles=300)
    seed_test(functools.partial(revolution_env.env, players=players, action_mode="tokens"), num_cycles=200)
    parallel_seed_test(functools.partial(revolution_env.parallel_env, players=players, action_mode="tokens"))


def test_spaces_of_the_token_mode():
    env = revolution_env.env(players=2, action_mode="tokens")
    env.reset(seed=0)
    core = env.unwrapped.core
    n = max(core.codec.C, 3 * core.codec.T)
    assert env.action_space("player_0") == gymnasium.spaces.Discrete(n)
    obs = env.observe("player_0")
    assert obs["action_mask"].shape == (n,) and obs["action_mask"].dtype == np.int8
    assert env.observation_space("player_0").contains(obs)
    bid_mode = revolution_env.env(players=2)
    extra = core.obs_layout.features["bid_building"]
    assert extra.start == bid_mode.unwrapped.core.obs_layout.size  # the bid mode's vector is a prefix


def _random_token_game(players: int, seed: int, steps: int = 10_000):
    """Play the token mode with masked random actions; check each completed bid on the way."""
    env = revolution_env.env(players=players, action_mode="tokens", illegal="raise")
    env.reset(seed=seed)
    core = env.unwrapped.core
    rng = np.random.default_rng(seed)
    walks: dict[int, list[int]] = {}
    for _ in range(steps):
        if core.game.phase == OVER:
            break
        agent = env.agent_selection
        seat = core.seat_of[agent]
        mask = env.observe(agent)["action_mask"]
        action = int(rng.choice(np.flatnonzero(mask)))
        kind = core.kind(seat)
        held = core.game.tokens[seat].copy()
        env.step(action)
        if kind != Decision.BID:
            continue
        walk = walks.setdefault(seat, [])
        walk.append(action)
        if len(walk) == max(int(held.sum()), 1):  # the bid is complete: _pending holds it until the next round
            walks.pop(seat)
            yield core, walk, core._pending[seat].copy(), held


@pytest.mark.parametrize("players", PLAYERS)
def test_every_walk_builds_a_legal_bid_and_is_its_canonical_sequence(players):
    seen = 0
    for core, walk, counts, held in _random_token_game(players, seed=players):
        assert core.tokens.sequence(counts) == walk
        assert (counts.sum(0) == held).all()  # every token held is placed
        legal = core.codec.layout.legal  # (T, 3): each placed token on a target that accepts its type
        assert not (counts > 0)[~legal].any()
        seen += 1
    assert seen > 3 * players


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 2**31 - 1), players=st.sampled_from(PLAYERS), draws=st.integers(1, 6))
def test_every_bid_the_bid_mode_allows_is_reachable_by_its_sequence(seed, players, draws):
    """Random legal bids (drawn from the bid mode's mask) placed token by token: every token is unmasked, and
    the completed bid is the one drawn."""
    rng = np.random.default_rng(seed)
    bid_env = revolution_env.env(players=players, illegal="raise")
    tok_env = revolution_env.env(players=players, action_mode="tokens", illegal="raise")
    bid_env.reset(seed=seed)
    tok_env.reset(seed=seed)
    agent = bid_env.agent_selection
    space = bid_env.action_space(agent)
    space.seed(int(rng.integers(2**31)))
    core = tok_env.unwrapped.core
    seat = core.seat_of[agent]
    for _ in range(draws):
        bid = space.sample(bid_env.observe(agent)["action_mask"])
        counts = core.codec.bid_counts(bid, core.game.tokens[seat])
        sequence = core.tokens.sequence(counts)
        for i, a in enumerate(sequence):
            assert tok_env.observe(agent)["action_mask"][a], (sequence, a)
            complete = core._place(seat, a)  # the token, without handing the bid in
            core._masks = [None] * players
            assert complete == (i == len(sequence) - 1)
        assert (core._building[seat] == counts).all()
        core._building[seat], core._last[seat] = 0, -1  # undo, for the next draw
        core._masks = [None] * players


@pytest.mark.parametrize("players", PLAYERS)
def test_a_game_in_the_token_mode_ends_where_the_bid_mode_does(players):
    seed = 10 + players
    bid_env = revolution_env.env(players=players, illegal="raise")
    bid_env.reset(seed=seed)
    rng = np.random.default_rng(seed)
    actions = []
    for agent in bid_env.agent_iter():
        obs, _, term, trunc, info = bid_env.last()
        if term or trunc:
            bid_env.step(None)
            continue
        core = bid_env.unwrapped.core
        space = bid_env.action_space(agent)
        space.seed(int(rng.integers(2**31)))
        action = space.sample(obs["action_mask"])
        actions.append((agent, action, core.game.tokens[core.seat_of[agent]].copy()))
        bid_env.step(action)
    tok_env = revolution_env.env(players=players, action_mode="tokens", illegal="raise")
    tok_env.reset(seed=seed)
    core = tok_env.unwrapped.core
    for agent, action, _ in actions:
        assert tok_env.agent_selection == agent
        for a in core.token_actions(core.seat_of[agent], action):
            assert tok_env.agent_selection == agent  # a player places its whole bid before the next one bids
            tok_env.step(a)
    assert core.game.phase == OVER
    assert tok_env.unwrapped.state_dict() == bid_env.unwrapped.state_dict()


def test_the_bid_under_construction_is_seen_by_its_owner_only():
    env = revolution_env.env(players=3, action_mode="tokens", illegal="raise")
    env.reset(seed=1)
    core = env.unwrapped.core
    building = core.obs_layout.features["bid_building"]
    agent = env.agent_selection
    others = [a for a in env.agents if a != agent]
    before = {a: env.observe(a)["observation"].copy() for a in others}
    action = int(np.flatnonzero(env.observe(agent)["action_mask"])[0])
    env.step(action)
    mine = env.observe(agent)["observation"][building.start : building.stop].reshape(building.shape)
    t, c = divmod(action, core.codec.T)
    assert mine.sum() == 1 and mine[c, t] == 1
    for a in others:
        assert np.array_equal(env.observe(a)["observation"], before[a])


def test_parallel_players_with_a_complete_bid_wait_with_the_no_op():
    env = revolution_env.parallel_env(players=3, action_mode="tokens", illegal="raise")
    obs, infos = env.reset(seed=3)
    rng = np.random.default_rng(3)
    waited = False
    for _ in range(2000):
        actions = {}
        for agent in env.agents:
            mask = obs[agent]["action_mask"]
            if infos[agent]["decision"] == Decision.NONE:
                assert mask.tolist() == [1] + [0] * (len(mask) - 1)  # one legal no-op
            actions[agent] = int(rng.choice(np.flatnonzero(mask)))
        if any(infos[a]["decision"] == Decision.NONE for a in env.agents) and any(
            infos[a]["decision"] == Decision.BID for a in env.agents
        ):
            waited = True
        obs, _, terms, truncs, infos = env.step(actions)
        if not env.agents:
            break
    assert waited


def test_gym_env_in_the_token_mode_passes_the_checkers_and_plays_heuristics():
    from gymnasium.utils.env_checker import check_env

    check_env(revolution_env.gym_env(opponents="random", action_mode="tokens"), skip_render_check=True)
    try:
        from stable_baselines3.common.env_checker import check_env as sb3_check_env
    except ImportError:  # the oldest-versions run of CI has no SB3
        sb3_check_env = None
    if sb3_check_env is not None:
        sb3_check_env(revolution_env.gym_env(opponents="random", action_mode="tokens"), warn=False)
    env = gymnasium.make("revolution_env:Revolution-v2", players=3, opponents=["value", "area"], action_mode="tokens")
    obs, info = env.reset(seed=0)
    rng = np.random.default_rng(0)
    for _ in range(5000):
        obs, reward, terminated, truncated, info = env.step(int(rng.choice(np.flatnonzero(info["action_mask"]))))
        assert env.observation_space.contains(obs)
        if terminated or truncated:
            break
    assert terminated and info["opponents"] == ["value", "area"]


def test_bad_input_in_the_token_mode():
    makers = (revolution_env.env, revolution_env.parallel_env, revolution_env.gym_env,
              lambda **kw: revolution_env.vector_env(2, **kw))  # fmt: skip
    for make in makers:
        with pytest.raises(ValueError, match="action_mode: expected one of bid, tokens, got 'token'"):
            make(action_mode="token")
    env = revolution_env.env(players=3, action_mode="tokens", illegal="raise")
    env.reset(seed=0)
    agent = env.agent_selection
    with pytest.raises(IllegalActionError, match="dtype float64"):
        env.step(1.5)
    mask = env.observe(agent)["action_mask"]
    with pytest.raises(IllegalActionError, match="not next in the canonical order|not allowed"):
        env.step(int(np.flatnonzero(mask == 0)[-1]))
    with pytest.raises(IllegalActionError, match="not allowed"):
        env.step(10_000)
    terminating = revolution_env.env(players=3, action_mode="tokens")
    terminating.reset(seed=0)
    agent = terminating.agent_selection
    terminating.step(int(np.flatnonzero(terminating.observe(agent)["action_mask"] == 0)[-1]))
    assert terminating.rewards[agent] == -1 and terminating.infos[agent]["illegal_action"] == 1


@pytest.mark.parametrize("players", [2, 3, 4])
def test_the_random_agent_plays_whole_games_token_by_token(players):
    from revolution_env.agents.base import RandomAgent
    from revolution_env.arena.runner import play_game

    options = {"players": players, "action_mode": "tokens", "illegal": "raise"}
    first = play_game([RandomAgent(**options) for _ in range(players)], options, seed=5, record=True)
    again = play_game([RandomAgent(**options) for _ in range(players)], options, seed=5, record=True)
    assert first.players == players and first.to_dict() == again.to_dict()  # to the end, legally, reproducibly
