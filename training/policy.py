"""A trained policy as an agent: ``load_policy_agent(path, **env_options)``.

The policy is the actor of SB3's ``MlpPolicy``: hidden layers with ``tanh`` (or ``relu``), then one logit per
value of every action dimension (``sum(nvec)`` logits). Its input is the observation vector divided by the
layout's ``scale``, as in training. Acting masks the logits with the action mask, then takes each dimension's
most likely legal value (``deterministic=True``, the default) or samples one. The forward pass runs in numpy: one
observation at a time is faster there than in torch, and the opponents of self-play need nothing else.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import torch

from revolution_env.agents.base import Agent

from .checkpoint import check_compatible, read_checkpoint

ACTIVATIONS = {"tanh": np.tanh, "relu": lambda x: np.maximum(x, 0.0)}


class PolicyNet:
    """The actor's weights as numpy arrays; ``logits(x)`` for one or a batch of scaled observations."""

    def __init__(self, policy: Mapping[str, Any]) -> None:
        state = policy["state_dict"]
        n_layers = len(policy["hidden"]) + 1
        self.weights = [_numpy(state[f"layers.{i}.weight"]).T.copy() for i in range(n_layers)]
        self.biases = [_numpy(state[f"layers.{i}.bias"]) for i in range(n_layers)]
        self.activation = ACTIVATIONS[policy["activation"]]
        self.obs_size = int(policy["obs_size"])
        self.nvec = np.asarray(policy["nvec"], dtype=np.int64)
        if self.weights[0].shape[0] != self.obs_size or self.weights[-1].shape[1] != int(self.nvec.sum()):
            raise ValueError("the policy's weights do not fit its obs_size and nvec")

    def logits(self, x: np.ndarray) -> np.ndarray:
        h = np.asarray(x, dtype=np.float32)
        for w, b in zip(self.weights[:-1], self.biases[:-1]):
            h = self.activation(h @ w + b)
        return h @ self.weights[-1] + self.biases[-1]


def _numpy(t: Any) -> np.ndarray:
    return t.detach().cpu().numpy().astype(np.float32) if isinstance(t, torch.Tensor) else np.asarray(t, np.float32)


def actor_layers(sb3_policy: Any) -> list[torch.nn.Linear]:
    """The linear layers of an SB3 ``MlpPolicy``'s actor, input first: its hidden layers, then ``action_net``
    (``layers.<i>`` of a checkpoint's ``state_dict``)."""
    linears = [m for m in sb3_policy.mlp_extractor.policy_net if isinstance(m, torch.nn.Linear)]
    return [*linears, sb3_policy.action_net]


def policy_from_sb3(sb3_policy: Any, activation: str) -> dict[str, Any]:
    """The actor of an SB3 ``MaskableActorCriticPolicy`` (``MlpPolicy``) as a plain dict for a checkpoint."""
    linears = actor_layers(sb3_policy)
    state = {}
    for i, layer in enumerate(linears):
        state[f"layers.{i}.weight"] = layer.weight.detach().cpu().clone()
        state[f"layers.{i}.bias"] = layer.bias.detach().cpu().clone()
    return {
        "hidden": [layer.out_features for layer in linears[:-1]],
        "activation": activation,
        "obs_size": int(linears[0].in_features),
        "nvec": [int(n) for n in sb3_policy.action_space.nvec],
        "state_dict": state,
    }


class MaskedChooser:
    """Per-dimension masked argmax or sampling over flat logits, for any ``nvec`` (vectorised over dimensions)."""

    def __init__(self, nvec: np.ndarray) -> None:
        nvec = np.asarray(nvec, dtype=np.int64)
        width = int(nvec.max())
        offsets = np.concatenate([[0], np.cumsum(nvec)[:-1]])
        col = np.arange(width)
        self.valid = col[None, :] < nvec[:, None]  # (D, width): which padded cells are real values
        self.index = np.where(self.valid, offsets[:, None] + col[None, :], 0)

    def choose(self, logits: np.ndarray, mask: np.ndarray, rng: np.random.Generator | None) -> np.ndarray:
        """One value per dimension: the most likely legal one (``rng`` None) or one sampled from the masked
        softmax (Gumbel-max)."""
        legal = self.valid & (np.asarray(mask)[self.index] != 0)
        scores = np.where(legal, logits[self.index], -np.inf)
        if rng is not None:
            scores = scores + rng.gumbel(size=scores.shape)
        action = np.argmax(scores, axis=1)
        action[~legal.any(axis=1)] = 0  # cannot happen with the env's masks; keep the action well formed anyway
        return action.astype(np.int64)


class PolicyAgent(Agent):
    """A trained policy playing by its mask: deterministic (argmax) or sampling (seeded by ``reset``)."""

    name = "policy"

    def __init__(self, policy: Mapping[str, Any], deterministic: bool = True, **env_options: Any) -> None:
        super().__init__(**{k: v for k, v in env_options.items() if k != "reward"})
        self.net = PolicyNet(policy)
        if self.net.obs_size != self.layout.size or list(self.net.nvec) != list(self.codec.nvec):
            raise ValueError(
                f"the policy reads {self.net.obs_size} features and writes nvec of length {len(self.net.nvec)}; "
                f"this environment has {self.layout.size} and {len(self.codec.nvec)}"
            )
        self.scale = self.layout.scale
        self.deterministic = deterministic
        self.chooser = MaskedChooser(self.net.nvec)

    def act(self, observation: dict[str, np.ndarray], info: dict[str, Any]) -> np.ndarray:
        logits = self.net.logits(observation["observation"] / self.scale)
        return self.chooser.choose(logits, observation["action_mask"], None if self.deterministic else self.rng)


def load_policy_agent(path: str, deterministic: bool = True, **env_options: Any) -> PolicyAgent:
    """The policy checkpoint at ``path`` as an agent for ``env_options``.

    Raises ``ValueError`` if the file is not a policy checkpoint, or if it was trained for another environment
    (the message names the options that differ)."""
    checkpoint = read_checkpoint(path)
    check_compatible(checkpoint, env_options, str(path))
    try:
        agent = PolicyAgent(checkpoint["policy"], deterministic=deterministic, **env_options)
    except (KeyError, TypeError) as exc:
        raise ValueError(f"{path} is not a Revolution! policy checkpoint: bad policy entry ({exc})") from None
    agent.name = str(path)
    agent.step = int(checkpoint["step"])
    return agent
