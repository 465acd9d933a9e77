"""The SB3 side of a policy checkpoint: the actor of SB3's ``MlpPolicy`` (its bid head, and its critic) as a plain
dict (``policy_from_sb3``), and back into a policy (``load_actor``).

Playing a checkpoint (``PolicyAgent``, ``load_policy_agent``) lives in ``revolution_env.agents.checkpoint``, so that
loading a bot needs no training package; they are re-exported here for the training code.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import torch
from revolution_training.distributions import AutoregressiveBidHead

from revolution_env.agents.checkpoint import MaskedChooser, PolicyAgent, PolicyNet, load_policy_agent

__all__ = [
    "MaskedChooser",
    "PolicyAgent",
    "PolicyNet",
    "actor_layers",
    "evaluate_rows",
    "load_actor",
    "load_critic",
    "load_policy_agent",
    "policy_from_sb3",
]


def actor_layers(sb3_policy: Any) -> list[torch.nn.Linear]:
    """The linear layers of an SB3 ``MlpPolicy``'s actor, input first: its hidden layers, then ``action_net`` (the
    autoregressive head's linear layer) (``layers.<i>`` of a checkpoint's ``state_dict``)."""
    return _linears(sb3_policy.mlp_extractor.policy_net, sb3_policy.action_net)


def _linears(policy_net: torch.nn.Module, action_net: torch.nn.Module) -> list[torch.nn.Linear]:
    linears = [m for m in policy_net if isinstance(m, torch.nn.Linear)]
    return [*linears, action_net.linear if isinstance(action_net, AutoregressiveBidHead) else action_net]


def critic_layers(sb3_policy: Any) -> list[torch.nn.Linear]:
    """The linear layers of an SB3 ``MlpPolicy``'s critic, input first: its hidden layers, then ``value_net``."""
    linears = [m for m in sb3_policy.mlp_extractor.value_net if isinstance(m, torch.nn.Linear)]
    return [*linears, sb3_policy.value_net]


def _state(linears: list[torch.nn.Linear]) -> dict[str, torch.Tensor]:
    state = {}
    for i, layer in enumerate(linears):
        state[f"layers.{i}.weight"] = layer.weight.detach().cpu().clone()
        state[f"layers.{i}.bias"] = layer.bias.detach().cpu().clone()
    return state


def critic_and_actor_latent(
    sb3_policy: Any, observations: torch.Tensor, rows: Any = None
) -> tuple[torch.Tensor, torch.Tensor]:
    """An SB3 ``MlpPolicy``'s forward pass up to the action head: the critic's values ``(batch,)`` on every row,
    and the actor's latent on ``rows`` only (a boolean ``(batch,)`` tensor; None: every row). Stateless, unlike the
    policy's action distribution, which holds its last inputs."""
    features = sb3_policy.extract_features(observations)
    pi, vf = (features, features) if sb3_policy.share_features_extractor else features
    values = sb3_policy.value_net(sb3_policy.mlp_extractor.forward_critic(vf)).flatten()
    if rows is not None:
        pi = pi[rows]
    return values, sb3_policy.mlp_extractor.forward_actor(pi)


def evaluate_rows(
    sb3_policy: Any, observations: torch.Tensor, actions: torch.Tensor, masks: torch.Tensor, rows: Any = None
) -> tuple[torch.Tensor, Any, torch.Tensor]:
    """sb3-contrib's ``evaluate_actions`` in parts: the critic's values ``(batch,)`` on every row, and the actor's
    masked distribution and the log-probabilities of ``actions`` on ``rows`` only (a boolean ``(batch,)`` tensor;
    None: every row). The same operations as ``evaluate_actions`` (its values and gradients bit for bit over every
    row), without its entropy, which MMD's update computes apart, and with the actor skipped where that update
    knows it adds nothing (``revolution_training.mmd``)."""
    values, latent = critic_and_actor_latent(sb3_policy, observations, rows)
    if rows is not None:
        actions, masks = actions[rows], masks[rows]
    distribution = sb3_policy._get_action_dist_from_latent(latent)
    distribution.apply_masking(masks)
    return values, distribution, distribution.log_prob(actions)


def policy_from_sb3(sb3_policy: Any, activation: str) -> dict[str, Any]:
    """The actor of an SB3 ``MaskableActorCriticPolicy`` (``MlpPolicy``) as a plain dict for a checkpoint, with its
    autoregressive bid head (``bid_head``) if it has one, and its critic (``critic``)."""
    linears = actor_layers(sb3_policy)
    space = sb3_policy.action_space
    policy = {
        "hidden": [layer.out_features for layer in linears[:-1]],
        "activation": activation,
        "obs_size": int(linears[0].in_features),
        "nvec": [int(n) for n in space.nvec] if hasattr(space, "nvec") else [int(space.n)],
        "state_dict": _state(linears),
    }
    if not hasattr(space, "nvec"):  # a Discrete action: the token mode
        policy["action_mode"] = "tokens"
    head = sb3_policy.action_net
    if isinstance(head, AutoregressiveBidHead):
        policy["bid_head"] = {
            "kind": "autoregressive",
            "blocks": list(head.blocks),
            **{name: getattr(head, name).detach().cpu().clone() for name in HEAD_PARAMETERS},
        }
    critic = critic_layers(sb3_policy)
    policy["critic"] = {
        "hidden": [layer.out_features for layer in critic[:-1]],
        "activation": activation,
        "state_dict": _state(critic),
    }
    return policy


HEAD_PARAMETERS = ("embed", "position", "out")  # the autoregressive head's, beside its linear layer


def load_actor(policy: Mapping[str, Any], policy_net: torch.nn.Module, action_net: torch.nn.Module, where: str) -> None:
    """Copy a checkpoint's actor (``policy``, a checkpoint's ``policy`` entry) into ``policy_net`` and ``action_net``
    (an SB3 ``MlpPolicy``'s, or a magnet's copy of them). A factorised policy goes into an autoregressive head as
    that head's factorised part, its ``out`` zero: the head then plays the policy exactly, and learns from there
    to condition on the tokens placed. Anything that does not fit raises ``ValueError`` naming ``where``."""
    state = policy["state_dict"]
    layers = _linears(policy_net, action_net)
    names = [f"layers.{i}" for i in range(len(policy["hidden"]) + 1)]
    mine = [tuple(layer.weight.shape) for layer in layers]
    theirs = [tuple(state[f"{n}.weight"].shape) for n in names]
    autoregressive = isinstance(action_net, AutoregressiveBidHead)
    if policy.get("bid_head") and not autoregressive:
        raise ValueError(f"{where}: an autoregressive bid head; this run's policy has the factorised head")
    fits = len(mine) == len(theirs) and mine[:-1] == theirs[:-1]
    factorised_part = autoregressive and theirs[-1] == (action_net.total, mine[-1][1])  # into the head's logits
    fits = fits and (mine[-1] == theirs[-1] or factorised_part)
    if fits and policy.get("bid_head"):
        fits = all(tuple(policy["bid_head"][n].shape) == tuple(getattr(action_net, n).shape) for n in HEAD_PARAMETERS)
    if not fits:
        raise ValueError(f"{where}: its network {theirs} does not fit this run's {mine}")
    with torch.no_grad():
        for name, layer in zip(names, layers):
            rows = len(state[f"{name}.weight"])
            layer.weight[:rows].copy_(state[f"{name}.weight"])
            layer.bias[:rows].copy_(state[f"{name}.bias"])
        if autoregressive and policy.get("bid_head"):
            for name in HEAD_PARAMETERS:
                getattr(action_net, name).copy_(policy["bid_head"][name])
        elif autoregressive:
            action_net.out.zero_()


def load_critic(policy: Mapping[str, Any], sb3_policy: Any, where: str) -> None:
    """Copy a checkpoint's critic (``policy["critic"]``, :func:`policy_from_sb3`'s form) into an SB3 ``MlpPolicy``'s
    value network; a checkpoint without one, or one that does not fit, raises ``ValueError`` naming ``where``."""
    critic = policy.get("critic")
    if critic is None:
        raise ValueError(f"{where}: the checkpoint carries no critic")
    state = critic["state_dict"]
    layers = critic_layers(sb3_policy)
    names = [f"layers.{i}" for i in range(len(critic["hidden"]) + 1)]
    mine = [tuple(layer.weight.shape) for layer in layers]
    theirs = [tuple(state[f"{n}.weight"].shape) for n in names]
    if mine != theirs:
        raise ValueError(f"{where}: its critic {theirs} does not fit this run's {mine}")
    with torch.no_grad():
        for name, layer in zip(names, layers):
            layer.weight.copy_(state[f"{name}.weight"])
            layer.bias.copy_(state[f"{name}.bias"])
