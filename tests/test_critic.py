"""A policy checkpoint carries its critic: ``PolicyAgent.value`` is the value network's output, in a batch as one by
one, in every action mode and head; a checkpoint written without one says so in one line."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch
from revolution_training.checkpoint import make_checkpoint, read_checkpoint, save_checkpoint
from revolution_training.distributions import AutoregressiveBidPolicy, MaskableMultiDiscretePolicy
from revolution_training.policy import policy_from_sb3
from revolution_training.vec_env import SB3VecEnv

import revolution_env
from revolution_env.agents.checkpoint import load_policy_agent
from revolution_env.env.core import Core, EnvConfig

pytest.importorskip("sb3_contrib")
from sb3_contrib import MaskablePPO  # noqa: E402

CHECKPOINTS = Path(__file__).resolve().parent.parent / "checkpoints"


def model(players: int, kind: str) -> tuple[MaskablePPO, SB3VecEnv]:
    mode = "tokens" if kind == "tokens" else "bid"
    venv = SB3VecEnv(revolution_env.vector_env(6, players=players, opponents="random", action_mode=mode))
    kwargs: dict = {"net_arch": [24, 12]}
    policy = {"tokens": "MlpPolicy", "factorised": MaskableMultiDiscretePolicy}.get(kind, AutoregressiveBidPolicy)
    if kind == "autoregressive":
        kwargs["token_blocks"] = list(Core(EnvConfig.from_options({"players": players})).codec.n_tokens)
    ppo = MaskablePPO(policy, venv, policy_kwargs=kwargs, seed=players, n_steps=32)
    with torch.no_grad():  # a critic far from SB3's start near zero
        for parameter in ppo.policy.value_net.parameters():
            parameter.mul_(50)
    return ppo, venv


@pytest.mark.parametrize("kind", ["factorised", "autoregressive", "tokens"])
def test_the_checkpoints_critic_is_the_value_network(tmp_path, kind):
    players = 3 if kind != "autoregressive" else 2
    ppo, venv = model(players, kind)
    path = tmp_path / "policy.pt"
    save_checkpoint(make_checkpoint(policy_from_sb3(ppo.policy, "tanh"), {"players": players}), path)
    assert read_checkpoint(path)["policy"]["critic"]["hidden"] == [24, 12]
    agent = load_policy_agent(str(path), players=players)
    bid_view = revolution_env.vector_env(6, players=players, opponents="random")
    raw, _ = bid_view.reset(seed=2)
    for _ in range(5):
        x = raw / bid_view.obs_layout.scale
        if kind == "tokens":  # the token mode's observation: the bid mode's, then the bid under construction (none)
            x = np.concatenate([x, np.zeros((len(x), bid_view.codec.T * 3))], 1)
        with torch.no_grad():
            expected = ppo.policy.predict_values(torch.as_tensor(x, dtype=torch.float32)).flatten().numpy()
        values = agent.value(raw)
        assert values.shape == (len(raw),) and np.abs(expected).max() > 1.0
        np.testing.assert_allclose(values, expected, rtol=1e-4, atol=1e-4)
        assert agent.value(raw[3]) == pytest.approx(values[3], abs=1e-9)  # one observation: one number
        raw, *_ = bid_view.step(np.stack([bid_view.single_action_space.sample(m) for m in bid_view.action_masks()]))
    with pytest.raises(ValueError, match="value: expected observations of"):
        agent.value(raw[:, :-1])
    venv.close()
    bid_view.close()


def test_a_checkpoint_without_a_critic_says_so_in_one_line():
    path = CHECKPOINTS / "three_players.pt"
    assert "critic" not in read_checkpoint(path)["policy"]  # exported before checkpoints kept their critic
    agent = revolution_env.load_agent(str(path), players=3)
    obs = np.zeros((2, agent.layout.size), dtype=np.float32)
    with pytest.raises(ValueError, match="three_players.pt: this checkpoint carries no critic") as error:
        agent.value(obs)
    assert "\n" not in str(error.value)
