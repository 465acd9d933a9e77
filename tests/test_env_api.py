"""The environment keeps PettingZoo's contract (docs/environment.md §1).

PettingZoo's own test suite (api_test, parallel_api_test, seed_test, render_test) passes for every number of
players and with each option on; the Parallel API is deterministic over whole games for a given seed; the
environment is registered as ``revolution_v2``; a bad option is refused with a ValueError that names it.
"""

from __future__ import annotations

import functools
import warnings

import numpy as np
import pettingzoo
import pytest
from gymnasium.utils.env_checker import data_equivalence
from pettingzoo.test import api_test, parallel_api_test, render_test, seed_test

import revolution_env
from revolution_env.engine.game import Decision

NEEDS_REGISTRY = pytest.mark.skipif(not hasattr(pettingzoo, "register"), reason="PettingZoo < 1.27 has no registry")

OPTIONS = [
    {"players": 2},
    {"players": 3},
    {"players": 4},
    {"players": 3, "bid_refunds": True},
    {"players": 4, "bid_refunds": True},
    {"players": 2, "area_control_bonus": True},
    {"players": 3, "area_control_bonus": True},
    {"players": 2, "first_edition": True},
    {"players": 3, "first_edition": True},
    {"players": 4, "first_edition": True, "area_control_bonus": True},
    {"players": 2, "max_rounds": 3},
    {"players": 4, "max_rounds": 3},
    {"players": 2, "reward": "margin"},
    {"players": 3, "reward": "margin"},
]


def _name(options: dict) -> str:
    return "-".join(f"{k}={v}" for k, v in options.items())


@pytest.fixture(autouse=True)
def _quiet():
    # PettingZoo warns that Dict / MultiDiscrete spaces are unusual; that is the documented interface.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        yield


@pytest.mark.parametrize("options", OPTIONS, ids=_name)
def test_pettingzoo_api_test_passes(options):
    api_test(revolution_env.env(**options), num_cycles=100)


@pytest.mark.parametrize("options", OPTIONS, ids=_name)
def test_pettingzoo_parallel_api_test_passes(options):
    parallel_api_test(revolution_env.parallel_env(**options), num_cycles=200)


@pytest.mark.parametrize("options", OPTIONS, ids=_name)
def test_pettingzoo_seed_test_passes(options):
    seed_test(functools.partial(revolution_env.env, **options), num_cycles=100)


@pytest.mark.parametrize("options", [{"players": 2}, {"players": 3, "first_edition": True}, {"players": 4}], ids=_name)
def test_pettingzoo_render_test_passes(options, capsys):
    # render_test calls the factory with render_mode=... for every mode in metadata["render_modes"].
    render_test(functools.partial(revolution_env.env, **options))
    assert "Round" in capsys.readouterr().out  # "human" prints the board


def test_raw_env_passes_the_api_test_too():
    api_test(revolution_env.raw_env(players=3), num_cycles=100)


# --- determinism of the Parallel API over whole games ---------------------------------------------------------


def _play_parallel(options: dict, seed: int) -> tuple[list, dict]:
    """A whole game of mask-sampled actions; returns every step's output and the final state."""
    env = revolution_env.parallel_env(**options)
    observations, infos = env.reset(seed=seed)
    trace: list = [(observations, infos)]
    while env.agents:
        actions = {a: env.action_space(a).sample(observations[a]["action_mask"]) for a in env.agents}
        step = env.step(actions)
        trace.append((actions, *step))
        observations = step[0]
    return trace, env.state_dict()


@pytest.mark.parametrize("options", OPTIONS, ids=_name)
def test_parallel_games_with_the_same_seed_are_identical(options):
    for seed in (0, 7):
        trace1, state1 = _play_parallel(options, seed)
        trace2, state2 = _play_parallel(options, seed)
        assert len(trace1) == len(trace2)
        for i, (step1, step2) in enumerate(zip(trace1, trace2)):
            assert data_equivalence(step1, step2, exact=True), f"step {i} differs"
        assert state1 == state2
        _, rewards, terminations, truncations, _ = trace1[-1][1:]
        assert all(terminations.values()) or all(truncations.values())


def test_parallel_games_with_different_seeds_differ():
    _, state1 = _play_parallel({"players": 3}, 1)
    _, state2 = _play_parallel({"players": 3}, 2)
    assert state1 != state2


def test_reset_without_a_seed_starts_a_fresh_game_that_can_still_be_replayed():
    env = revolution_env.raw_env(players=3)
    env.reset()
    seeds = {env.unwrapped.game.seed}
    env.reset()
    seeds.add(env.unwrapped.game.seed)
    assert len(seeds) == 2


# --- registration ---------------------------------------------------------------------------------------------


@NEEDS_REGISTRY
def test_pettingzoo_make_builds_the_aec_environment():
    env = pettingzoo.make("aec", "revolution_v2", players=3)
    env.reset(seed=0)
    assert env.possible_agents == ["player_0", "player_1", "player_2"]
    assert isinstance(env.unwrapped, revolution_env.raw_env)
    assert env.unwrapped.metadata["name"] == "revolution_v2"
    observation, *_ = env.last()
    env.step(env.action_space(env.agent_selection).sample(observation["action_mask"]))


@NEEDS_REGISTRY
def test_pettingzoo_make_builds_the_parallel_environment():
    env = pettingzoo.make("parallel", "revolution_v2", players=2, first_edition=True)
    observations, infos = env.reset(seed=0)
    assert env.possible_agents == ["player_0", "player_1"]  # the puppet is not an agent
    assert isinstance(env.unwrapped, revolution_env.parallel_env)
    assert {info["decision"] for info in infos.values()} == {Decision.BID}
    actions = {a: env.action_space(a).sample(observations[a]["action_mask"]) for a in env.agents}
    env.step(actions)


# --- options --------------------------------------------------------------------------------------------------

BAD_OPTIONS = [
    ({"players": 5}, "players"),
    ({"players": "3"}, "players"),
    ({"reward": "x"}, "reward"),
    ({"render_mode": "x"}, "render_mode"),
    ({"max_rounds": 0}, "max_rounds"),
    ({"max_rounds": 2.5}, "max_rounds"),
    ({"players": 2, "bid_refunds": False}, "bid_refunds"),
    ({"first_edition": True, "bid_refunds": False}, "bid_refunds"),
    ({"area_control_bonus": "yes"}, "area_control_bonus"),
    ({"board": "nope"}, "board"),
    ({"colour": "red"}, "colour"),
]
FACTORIES = [revolution_env.env, revolution_env.raw_env, revolution_env.parallel_env, revolution_env.observation_layout]


@pytest.mark.parametrize("factory", FACTORIES, ids=lambda f: f.__name__)
@pytest.mark.parametrize(("options", "name"), BAD_OPTIONS, ids=[repr(o) for o, _ in BAD_OPTIONS])
def test_a_bad_option_raises_a_value_error_naming_it(factory, options, name):
    with pytest.raises(ValueError, match=rf"^{name}\b"):
        factory(**options)


def test_options_have_their_documented_defaults():
    env = revolution_env.raw_env()
    rules = env.core.layout.rules
    assert (env.possible_agents, rules.bid_refunds, rules.area_control_bonus, rules.first_edition) == (
        ["player_0", "player_1", "player_2"],
        False,
        False,
        False,
    )
    assert rules.max_rounds == 100 and env.config.reward == "win_loss" and env.render_mode is None
    assert revolution_env.raw_env(players=2).core.layout.rules.bid_refunds  # the puppet variant refunds
    assert revolution_env.raw_env(first_edition=True).core.layout.rules.bid_refunds  # D14


@pytest.mark.parametrize("players", [2, 3, 4])
def test_spaces_have_the_documented_shape(players):
    env = revolution_env.raw_env(players=players)
    seats = 3 if players == 2 else players
    choices = 1 + max(7 * seats, 48 if players == 2 else 0)
    targets = 13 if players == 2 else 12
    for agent in env.possible_agents:
        space = env.action_space(agent)
        assert np.array_equal(space.nvec, [choices] + [targets] * 56)
        obs_space = env.observation_space(agent)
        assert obs_space["action_mask"].shape == (choices + 56 * targets,)
        assert obs_space["observation"].dtype == np.float32
