"""The observation spaces declare real bounds (docs/environment.md §5 "Single agent"): every observation of random
games of every variant lies inside them, so ``space.contains`` proves something."""

from __future__ import annotations

import numpy as np
import pytest

import revolution_env

VARIANTS = [
    {"players": 2},
    {"players": 3},
    {"players": 4},
    {"players": 3, "first_edition": True},
    {"players": 2, "first_edition": True, "area_control_bonus": True},
    {"players": 4, "bid_refunds": True, "area_control_bonus": True},
    {"players": 3, "max_rounds": 4},
]


@pytest.mark.parametrize("options", VARIANTS, ids=lambda o: "-".join(f"{k}={v}" for k, v in o.items()))
def test_every_observation_lies_inside_the_declared_box(options):
    env = revolution_env.parallel_env(**options)
    space = env.observation_space("player_0")
    box = space["observation"]
    assert np.isfinite(box.low).all() and np.isfinite(box.high).all()
    assert (box.low <= box.high).all()
    for seed in range(3):
        observations, _ = env.reset(seed=seed)
        while True:
            for agent, obs in observations.items():
                assert space.contains(obs), (agent, np.flatnonzero(~((obs["observation"] >= box.low)
                                                                     & (obs["observation"] <= box.high))))  # fmt: skip
            if not env.agents:
                break
            actions = {a: env.action_space(a).sample(observations[a]["action_mask"]) for a in env.agents}
            observations, *_ = env.step(actions)


def test_the_box_is_tight_enough_to_mean_something():
    box = revolution_env.parallel_env(players=3).observation_space("player_0")["observation"]
    layout = revolution_env.observation_layout(players=3)
    tokens = layout.features["tokens"]
    assert box.high[tokens.start : tokens.stop].tolist() == [12, 12, 32] * 3  # the game's token totals
    assert box.high[layout.features["cubes"].start] == 8  # the Fortress has 8 spaces
    assert (box.low == 0).all()
