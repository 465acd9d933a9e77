"""One action-mode object per ``action_mode`` (``revolution_env/env/modes.py``), composed by the scalar ``Core`` and by
the vector env: the same spaces, the same mask of nothing to decide, and its scalar and batched forms agree."""

from __future__ import annotations

import numpy as np
import pytest

import revolution_env
from revolution_env.env.modes import ACTION_MODES, BidMode, TokenMode, action_mode


def test_the_factory_knows_the_two_modes_and_refuses_others():
    assert ACTION_MODES == ("bid", "tokens")
    codec = revolution_env.raw_env(players=3).core.codec
    assert type(action_mode("bid", codec, 3)) is BidMode and type(action_mode("tokens", codec, 3)) is TokenMode
    with pytest.raises(ValueError, match="action_mode: expected one of bid, tokens, got 'chips'"):
        action_mode("chips", codec, 3)


@pytest.mark.parametrize("mode", ACTION_MODES)
def test_the_scalar_env_and_the_vector_env_compose_the_same_mode(mode):
    core = revolution_env.raw_env(players=3, action_mode=mode).core
    venv = revolution_env.vector_env(2, players=3, opponents="random", action_mode=mode, mask_in_obs=True)
    assert type(core.mode) is type(venv.mode) and core.mode.name == mode
    assert core.action_space() == venv.single_action_space
    assert core.observation_space() == venv.single_observation_space
    gym = revolution_env.gym_env(players=3, opponents="random", action_mode=mode, mask_in_obs=True)
    assert gym.observation_space == venv.single_observation_space and gym.action_space == core.action_space()


@pytest.mark.parametrize("mode", ACTION_MODES)
def test_a_finished_game_has_the_mask_of_nothing_to_decide(mode):
    """The vector env's last observation of a game and a Parallel seat that waits have the same mask."""
    venv = revolution_env.vector_env(2, players=3, opponents="random", action_mode=mode, mask_in_obs=True)
    venv.reset(seed=0)
    rng = np.random.default_rng(0)
    for _ in range(3000):
        masks = venv.action_masks()
        if mode == "tokens":
            actions = np.array([rng.choice(np.flatnonzero(m)) for m in masks])
        else:
            actions = np.stack([venv.single_action_space.sample(m.astype(np.int8)) for m in masks])
        _, _, terminated, truncated, info = venv.step(actions)
        if (terminated | truncated).any():
            break
    i = int(np.flatnonzero(terminated | truncated)[0])
    final = info["final_obs"][i]["action_mask"]
    core = revolution_env.raw_env(players=3, action_mode=mode).core
    core.reset(0)
    idle = core.mode.mask(core.game, 0, revolution_env.Decision.NONE)
    np.testing.assert_array_equal(final, idle)
    assert final.dtype == np.int8 and final.sum() == (1 if mode == "tokens" else len(core.codec.nvec))


def test_the_token_modes_scalar_and_batched_placing_agree():
    """A bid placed token by token through ``place`` (one row) and ``place_many`` (all rows at once) leaves the
    same bids under construction, complete at the same token."""
    codec = revolution_env.raw_env(players=3).core.codec
    one, many = TokenMode(codec, 4), TokenMode(codec, 4)
    rng = np.random.default_rng(1)
    held = rng.integers(0, 4, size=(4, 3))
    held[0] = 0  # a player holding nothing places nothing and is done at once
    sequences = []
    for row in range(4):  # a random legal bid of each row's tokens, as its canonical sequence
        counts = np.zeros((codec.T, 3), dtype=np.int64)
        for t in range(3):
            targets = np.flatnonzero(codec.layout.legal[:, t])
            np.add.at(counts[:, t], rng.choice(targets, size=held[row, t]), 1)
        sequences.append(one.tokens.sequence(counts))
    rows = np.arange(4)
    for step in range(max(map(len, sequences))):
        going = np.array([step < len(s) for s in sequences])
        actions = np.array([s[min(step, len(s) - 1)] for s in sequences])
        complete = many.place_many(rows[going], actions[going], held[going])
        for j, row in enumerate(rows[going].tolist()):
            assert one.place(row, int(actions[row]), held[row]) == complete[j] == (step == len(sequences[row]) - 1)
    np.testing.assert_array_equal(one.building, many.building)
    np.testing.assert_array_equal(one.building.sum(1), held)
