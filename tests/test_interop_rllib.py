"""RLlib (new API stack), used as its PettingZoo docs describe, with the package's masked PPO module
(``revolution_env.interop.rllib``). Marked ``interop``; skipped without RLlib (``pip install -e '.[dev,rllib]'``;
RLlib pins its own Gymnasium, so CI runs this file in a venv of its own, ``.ci/run``)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import revolution_env

pytestmark = pytest.mark.interop
pytest.importorskip("ray.rllib", reason="RLlib is not installed: pip install -e '.[rllib]'")
pytest.importorskip("torch", reason="torch is not installed: pip install -e '.[rllib]'")

import ray  # noqa: E402
import torch  # noqa: E402
from ray.rllib.algorithms.ppo import PPOConfig  # noqa: E402
from ray.rllib.core.rl_module.multi_rl_module import MultiRLModuleSpec  # noqa: E402
from ray.rllib.core.rl_module.rl_module import RLModuleSpec  # noqa: E402
from ray.rllib.env.wrappers.pettingzoo_env import ParallelPettingZooEnv, PettingZooEnv  # noqa: E402
from ray.tune.registry import register_env  # noqa: E402

from revolution_env.agents.base import RandomAgent  # noqa: E402
from revolution_env.arena.runner import play_game  # noqa: E402
from revolution_env.interop.rllib import MaskedPPOTorchRLModule, RLModuleAgent  # noqa: E402

# the two ways RLlib's docs bring a PettingZoo env in
register_env("revolution_parallel", lambda config: ParallelPettingZooEnv(revolution_env.parallel_env(**config)))
register_env("revolution_aec", lambda config: PettingZooEnv(revolution_env.env(**config)))


@pytest.fixture(scope="module", autouse=True)
def _ray():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, ignore_reinit_error=True)
        yield
        ray.shutdown()


def ppo(env: str, env_config: dict, check_env: bool = True) -> PPOConfig:
    """Self-play with shared parameters: every seat maps to one policy, RLlib's parameter-sharing example."""
    return (
        PPOConfig()
        .environment(env, env_config=env_config, disable_env_checking=not check_env)
        .env_runners(num_env_runners=0)
        .training(train_batch_size_per_learner=256, minibatch_size=64, num_epochs=1)
        .multi_agent(policies={"shared"}, policy_mapping_fn=lambda agent_id, *args, **kwargs: "shared")
        .rl_module(
            rl_module_spec=MultiRLModuleSpec(
                rl_module_specs={"shared": RLModuleSpec(module_class=MaskedPPOTorchRLModule)}
            )
        )
        .debugging(seed=0)
    )


@pytest.mark.parametrize("env", ["revolution_parallel", "revolution_aec"])
def test_rllib_builds_ppo_on_the_default_env_through_its_own_env_check(env):
    """RLlib checks a multi-agent env by stepping unmasked random actions: with the default ``illegal="terminate"``
    the game ends (v1 raised there)."""
    algo = ppo(env, {"players": 3}).build_algo()
    try:
        result = algo.train()
        assert result["env_runners"]["num_env_steps_sampled_lifetime"] >= 256
    finally:
        algo.stop()


@pytest.mark.parametrize(
    ("env", "players", "mode"),
    [("revolution_parallel", 3, "bid"), ("revolution_parallel", 2, "tokens"), ("revolution_aec", 4, "bid")],
)
def test_rllib_ppo_trains_within_the_masks_and_its_module_plays_as_an_agent(env, players, mode):
    """With ``illegal="raise"`` one action outside the mask would stop the run: PPO explores and learns within the
    masks; the trained module then plays whole games in the package's own game loop, greedily, legally."""
    options = {"players": players, "action_mode": mode}
    algo = ppo(env, {**options, "illegal": "raise"}, check_env=False).build_algo()
    try:
        module = algo.get_module("shared")
        before = [p.detach().clone() for p in module.parameters()]
        for _ in range(2):
            result = algo.train()
        assert result["env_runners"]["num_env_steps_sampled_lifetime"] >= 512
        loss = result["learners"]["shared"]["policy_loss"]
        assert np.isfinite(float(loss))
        after = algo.get_module("shared")
        assert any(not torch.equal(b, a) for b, a in zip(before, after.parameters(), strict=True))  # it learned

        bot = RLModuleAgent(after, **options)
        seats = [bot] + [RandomAgent(**options) for _ in range(players - 1)]
        for seed in range(2):
            result = play_game(seats, {**options, "illegal": "raise"}, seed=seed)
            assert result.players == players  # a whole game, no illegal action (it would have raised)
    finally:
        algo.stop()


def test_the_module_refuses_an_observation_space_without_the_mask():
    import gymnasium as gym

    space = revolution_env.parallel_env(players=3).observation_space("player_0")["observation"]
    with pytest.raises(ValueError, match="'observation' and 'action_mask'"):
        MaskedPPOTorchRLModule(observation_space=space, action_space=gym.spaces.Discrete(3), model_config={})
