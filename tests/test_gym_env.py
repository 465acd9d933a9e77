"""`revolution_env.gym_env` / `gymnasium.make("revolution_env:Revolution-v2")` (docs/environment.md §5 "Single agent"):
Gymnasium's and SB3's checkers pass, opponents come as specs, agents, a list or a league, the learner's seat is
drawn or fixed, masks are in ``action_masks()`` and ``info``, illegal actions terminate or raise, bad input is
refused at construction."""

from __future__ import annotations

import warnings
from collections import Counter

import gymnasium
import numpy as np
import pytest

import revolution_env
from revolution_env import Decision, IllegalActionError, gym_env
from revolution_env.agents.base import RandomAgent


@pytest.fixture(autouse=True)
def _quiet():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        yield


@pytest.mark.parametrize(
    "options",
    [
        {"players": 2},
        {"players": 3},
        {"players": 4},
        {"players": 3, "first_edition": True},
        {"players": 3, "mask_in_obs": True},
    ],
)
def test_gymnasiums_and_sb3s_checkers_pass(options):
    from gymnasium.utils.env_checker import check_env

    check_env(gym_env(opponents="random", **options), skip_render_check=True)
    if not options.get("mask_in_obs"):
        from stable_baselines3.common.env_checker import check_env as sb3_check_env

        sb3_check_env(gym_env(opponents="random", **options), warn=False)


def play(env, seed: int) -> tuple[float, dict, int]:
    obs, info = env.reset(seed=seed)
    env.action_space.seed(seed)
    total, steps = 0.0, 0
    while True:
        assert env.observation_space.contains(obs)
        mask = env.unwrapped.action_masks()
        assert np.array_equal(mask, info["action_mask"]) and mask.dtype == bool
        assert info["decision"] != Decision.NONE
        obs, reward, terminated, truncated, info = env.step(env.action_space.sample(mask.astype(np.int8)))
        total += reward
        steps += 1
        if terminated or truncated:
            return total, info, steps


def test_gymnasium_make_plays_whole_games_against_the_named_opponents():
    env = gymnasium.make("revolution_env:Revolution-v2", players=3, opponents=["value", "random"])
    seats = Counter()
    for seed in range(4):
        reward, info, steps = play(env, seed)
        assert reward in (-1.0, 1.0) and steps > 5
        assert sorted(info["opponents"]) == ["random", "value"]
        assert info["won"] == (reward == 1.0)
        seats[info["seat"]] += 1
    assert len(seats) > 1  # the seat is drawn each episode


def test_the_default_opponent_is_value_and_the_seat_can_be_fixed():
    env = gym_env(players=4, seat=2)
    for seed in range(2):
        _, info, _ = play(env, seed)
        assert info["seat"] == 2 and info["opponents"] == ["value"] * 3


def test_the_same_seed_gives_the_same_episode():
    def run():
        env = gym_env(players=3, opponents="random")
        return play(env, 7)

    assert run()[0] == run()[0] and run()[1]["support"] == run()[1]["support"]


def test_agents_and_a_league_object_as_opponents():
    rand = RandomAgent(players=2)
    _, info, _ = play(gym_env(players=2, opponents=[rand]), 0)
    assert info["opponents"] == ["random"]

    class League:
        def __init__(self):
            self.calls = []

        def sample(self, rng, slot):
            self.calls.append(slot)
            return ("lg", rand)

    league = League()
    env = gym_env(players=2, opponents=league)
    play(env, 1)
    play(env, 2)
    assert league.calls == [0, 0]


def test_mask_in_obs_puts_the_mask_in_the_observation():
    env = gym_env(players=3, opponents="random", mask_in_obs=True)
    obs, info = env.reset(seed=0)
    assert set(obs) == {"observation", "action_mask"}
    assert np.array_equal(obs["action_mask"].astype(bool), info["action_mask"])


def test_an_illegal_action_terminates_with_minus_one_or_raises():
    env = gym_env(players=3, opponents="random")
    env.reset(seed=0)
    bad = np.zeros(len(env.action_space.nvec), dtype=np.int64)
    bad[0] = 1  # the choice dimension is masked during a bid
    _, reward, terminated, truncated, info = env.step(bad)
    assert (reward, terminated, truncated, info["illegal_action"]) == (-1.0, True, False, 1)
    with pytest.raises(RuntimeError, match="call reset"):
        env.step(bad)
    strict = gym_env(players=3, opponents="random", illegal="raise")
    strict.reset(seed=0)
    with pytest.raises(IllegalActionError, match="decision bid"):
        strict.step(bad)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"opponents": "nosuch"}, "opponents: unknown agent spec 'nosuch'"),
        ({"opponents": ["value"]}, "opponents: expected 2 opponent"),
        ({"opponents": 3}, "opponents: expected an agent spec"),
        ({"action_mode": "chips"}, "action_mode: expected one of bid"),
        ({"seat": 3}, "seat: expected None or a seat from 0 to 2"),
        ({"mask_in_obs": "yes"}, "mask_in_obs: expected true or false"),
        ({"illegal": "ignore"}, "illegal: expected one of terminate, raise"),
        ({"reward": "points"}, "reward: expected one of"),
        ({"colour": "red"}, "colour: unknown option"),
    ],
)
def test_bad_input_is_refused_at_construction(kwargs, message):
    with pytest.raises(ValueError, match=message):
        gym_env(players=3, **kwargs)


def test_it_is_exported_and_documented():
    assert revolution_env.gym_env is gym_env
    assert "Revolution-v2" in gymnasium.registry
