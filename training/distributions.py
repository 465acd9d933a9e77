"""A faster masked MultiDiscrete distribution for MaskablePPO's ``MlpPolicy``.

sb3-contrib's ``MaskableMultiCategoricalDistribution`` builds one torch ``Categorical`` per action dimension, and
Revolution!'s action has 57 (the choice, then one per token): most of the training time went there. This
distribution is the same mathematics — independent categoricals per dimension, masked logits set to -1e8,
log-probabilities summed, masked values adding nothing to the entropy — computed on one ``(batch, dimensions,
width)`` view per run of dimensions of one width (the choice; the tokens), with one fused ``log_softmax``
each. :class:`MaskableMultiDiscretePolicy` is ``MlpPolicy`` with it.
"""

from __future__ import annotations

from typing import Any

import torch as th
from sb3_contrib.common.maskable.distributions import MaskableDistribution
from sb3_contrib.common.maskable.policies import MaskableActorCriticPolicy
from torch import nn

from revolution_env.interop.torch import MaskedRuns


class GroupedMaskableMultiCategorical(MaskableDistribution):
    """Independent masked categoricals over the dimensions of ``MultiDiscrete(nvec)``, computed per run of
    dimensions of one width (``revolution_env.interop.torch.MaskedRuns``: views of the flat logits, one fused
    masked ``log_softmax`` per run)."""

    def __init__(self, action_dims: list[int]) -> None:
        super().__init__()
        self.action_dims = [int(n) for n in action_dims]
        self.runs = MaskedRuns(self.action_dims)
        self._total = self.runs.total
        self.raw: th.Tensor | None = None
        self.legal: list[th.Tensor] | None = None
        self._log_p: list[th.Tensor] | None = None

    def proba_distribution_net(self, latent_dim: int) -> nn.Module:
        return nn.Linear(latent_dim, self._total)

    def proba_distribution(self, action_logits: th.Tensor) -> GroupedMaskableMultiCategorical:
        self.raw = action_logits.view(-1, self._total)
        self.legal, self._log_p = None, None
        return self

    def apply_masking(self, masks: Any) -> None:
        assert self.raw is not None, "Must set distribution parameters"
        if masks is None:
            self.legal = None
        else:
            m = th.as_tensor(masks, device=self.raw.device).view(-1, self._total)
            self.legal = self.runs.legal(m)
        self._log_p = None

    @property
    def log_p(self) -> list[th.Tensor]:
        """Masked log-probabilities, one (batch, dimensions, width) tensor per run; computed once per masking."""
        if self._log_p is None:
            self._log_p = self.runs.log_softmax(self.raw, self.legal)
        return self._log_p

    def log_prob(self, actions: th.Tensor) -> th.Tensor:
        return self.runs.log_prob(self.log_p, actions.view(-1, len(self.action_dims)))

    def entropy(self) -> th.Tensor:
        return self.runs.entropy(self.log_p, self.legal)

    def sample(self) -> th.Tensor:
        return self.runs.sample(self.log_p)

    def mode(self) -> th.Tensor:
        return self.runs.mode(self.log_p)

    def actions_from_params(self, action_logits: th.Tensor, deterministic: bool = False) -> th.Tensor:
        self.proba_distribution(action_logits)
        return self.get_actions(deterministic=deterministic)

    def log_prob_from_params(self, action_logits: th.Tensor) -> tuple[th.Tensor, th.Tensor]:
        actions = self.actions_from_params(action_logits)
        return actions, self.log_prob(actions)


class MaskableMultiDiscretePolicy(MaskableActorCriticPolicy):
    """MaskablePPO's ``MlpPolicy`` with :class:`GroupedMaskableMultiCategorical` as its action distribution (the
    networks, their initialisation and the checkpoints are the same)."""

    def _build(self, lr_schedule: Any) -> None:
        self.action_dist = GroupedMaskableMultiCategorical(list(self.action_space.nvec))
        super()._build(lr_schedule)
