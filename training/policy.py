"""The SB3 side of a policy checkpoint: the actor of SB3's ``MlpPolicy`` as a plain dict (``policy_from_sb3``).

Playing a checkpoint (``PolicyAgent``, ``load_policy_agent``) lives in ``revolution_env.agents.checkpoint``, so that
loading a bot needs no training package; they are re-exported here for the training code.
"""

from __future__ import annotations

from typing import Any

import torch

from revolution_env.agents.checkpoint import MaskedChooser, PolicyAgent, PolicyNet, load_policy_agent

__all__ = [
    "MaskedChooser",
    "PolicyAgent",
    "PolicyNet",
    "actor_layers",
    "evaluate_rows",
    "load_policy_agent",
    "policy_from_sb3",
]


def actor_layers(sb3_policy: Any) -> list[torch.nn.Linear]:
    """The linear layers of an SB3 ``MlpPolicy``'s actor, input first: its hidden layers, then ``action_net``
    (``layers.<i>`` of a checkpoint's ``state_dict``)."""
    linears = [m for m in sb3_policy.mlp_extractor.policy_net if isinstance(m, torch.nn.Linear)]
    return [*linears, sb3_policy.action_net]


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
    """The actor of an SB3 ``MaskableActorCriticPolicy`` (``MlpPolicy``) as a plain dict for a checkpoint."""
    linears = actor_layers(sb3_policy)
    state = {}
    for i, layer in enumerate(linears):
        state[f"layers.{i}.weight"] = layer.weight.detach().cpu().clone()
        state[f"layers.{i}.bias"] = layer.bias.detach().cpu().clone()
    space = sb3_policy.action_space
    policy = {
        "hidden": [layer.out_features for layer in linears[:-1]],
        "activation": activation,
        "obs_size": int(linears[0].in_features),
        "nvec": [int(n) for n in space.nvec] if hasattr(space, "nvec") else [int(space.n)],
        "state_dict": state,
    }
    if not hasattr(space, "nvec"):  # a Discrete action: the token mode
        policy["action_mode"] = "tokens"
    return policy
