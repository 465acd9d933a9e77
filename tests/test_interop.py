"""Other RL libraries, used as their own docs describe (docs/interop.md). Marked ``interop``; each library is
skipped when it is not installed (``pip install -e '.[interop]'``)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import revolution_env

pytestmark = pytest.mark.interop


@pytest.fixture(autouse=True)
def _quiet():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        yield


@pytest.mark.parametrize("players", [2, 3, 4])
@pytest.mark.parametrize("parallel", [True, False], ids=["parallel", "aec"])
def test_torchrl_pettingzoo_wrapper_with_masks_passes_check_env_specs_and_rolls_out(players, parallel):
    """TorchRL's PettingZooWrapper(use_mask=True): in v1 it died on the string decision in infos."""
    pytest.importorskip("torchrl")
    from torchrl.envs.libs.pettingzoo import PettingZooWrapper
    from torchrl.envs.utils import check_env_specs

    make = revolution_env.parallel_env if parallel else revolution_env.env
    env = PettingZooWrapper(make(players=players), use_mask=True, seed=0)
    check_env_specs(env, seed=0)
    rollout = env.rollout(3000, break_when_any_done=True)  # TorchRL's random actions, drawn within the masks
    last = rollout["next"][-1]
    assert last["done"].item()  # a whole game was played ...
    keys = list(last.keys(True, True))
    illegal = [last[k].sum().item() for k in keys if k[-1] == "illegal_action"]
    rewards = [last[k].flatten().tolist() for k in keys if k[-1] == "reward"]
    assert illegal and sum(illegal) == 0  # ... to its end, not cut short by an illegal action
    assert 1.0 in [r for group in rewards for r in group]  # someone won


def _tianshou_game(env, rng) -> tuple[int, list[float]]:
    obs, _ = env.reset(seed=int(rng.integers(2**31)))
    steps = 0
    while True:
        assert len(obs["mask"]) == env.action_space.n  # Tianshou gives the mask as a list of bools
        obs, rewards, terminated, truncated, _ = env.step(int(rng.choice(np.flatnonzero(obs["mask"]))))
        steps += 1
        if terminated or truncated:
            return steps, list(rewards)


@pytest.mark.parametrize("players", [2, 3, 4])
def test_tianshou_pettingzoo_env_plays_whole_games_in_the_token_mode(players):
    """Tianshou's PettingZooEnv takes a Discrete action and a Discrete mask: the token mode is its path."""
    pytest.importorskip("tianshou")
    from tianshou.env import PettingZooEnv

    env = PettingZooEnv(revolution_env.env(players=players, action_mode="tokens"))
    rng = np.random.default_rng(players)
    for _ in range(2):
        steps, rewards = _tianshou_game(env, rng)
        assert steps > 20 and max(rewards) == 1.0  # a whole game, someone won (no illegal action's -1 and 0s)
        assert sorted(rewards)[0] == -1.0 and 0.0 not in rewards
