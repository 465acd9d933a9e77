"""A faster masked MultiDiscrete distribution for MaskablePPO's ``MlpPolicy``.

sb3-contrib's ``MaskableMultiCategoricalDistribution`` builds one torch ``Categorical`` per action dimension, and
Revolution!'s action has 57 (the choice, then one per token): most of the training time went there. This
distribution is the same mathematics — independent categoricals per dimension, masked logits set to -1e8,
log-probabilities summed, masked values adding nothing to the entropy — computed on one padded
``(batch, dimensions, width)`` tensor. :class:`MaskableMultiDiscretePolicy` is ``MlpPolicy`` with it.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch as th
from sb3_contrib.common.maskable.distributions import MaskableDistribution
from sb3_contrib.common.maskable.policies import MaskableActorCriticPolicy
from torch import nn

HUGE_NEG = -1e8


class PaddedMaskableMultiCategorical(MaskableDistribution):
    """Independent masked categoricals over the dimensions of ``MultiDiscrete(nvec)``, batched as one tensor."""

    def __init__(self, action_dims: list[int]) -> None:
        super().__init__()
        nvec = np.asarray(action_dims, dtype=np.int64)
        self.action_dims = [int(n) for n in nvec]
        width = int(nvec.max())
        offsets = np.concatenate([[0], np.cumsum(nvec)[:-1]])
        col = np.arange(width)
        valid = col[None, :] < nvec[:, None]
        self._index = th.as_tensor(np.where(valid, offsets[:, None] + col[None, :], 0))  # (D, W) into the logits
        self._valid = th.as_tensor(valid)  # (D, W): real values, not padding
        self._total = int(nvec.sum())
        self.legal: th.Tensor | None = None
        self.raw: th.Tensor | None = None
        self._log_p: th.Tensor | None = None

    def proba_distribution_net(self, latent_dim: int) -> nn.Module:
        return nn.Linear(latent_dim, self._total)

    def proba_distribution(self, action_logits: th.Tensor) -> PaddedMaskableMultiCategorical:
        logits = action_logits.view(-1, self._total)
        index, valid = self._index.to(logits.device), self._valid.to(logits.device)
        self.raw = logits[:, index]  # (B, D, W)
        self._set(valid.expand_as(self.raw))
        return self

    def apply_masking(self, masks: Any) -> None:
        assert self.raw is not None, "Must set distribution parameters"
        valid = self._valid.to(self.raw.device).expand_as(self.raw)
        if masks is None:
            self._set(valid)
            return
        m = th.as_tensor(masks, dtype=th.bool, device=self.raw.device).view(-1, self._total)
        self._set(valid & m[:, self._index.to(self.raw.device)])

    def _set(self, legal: th.Tensor) -> None:
        self.legal, self._log_p = legal, None

    @property
    def log_p(self) -> th.Tensor:
        """Masked log-probabilities, (batch, dimensions, width); computed once per masking."""
        if self._log_p is None:
            huge_neg = th.tensor(HUGE_NEG, dtype=self.raw.dtype, device=self.raw.device)
            logits = th.where(self.legal, self.raw, huge_neg)
            self._log_p = logits - th.logsumexp(logits, dim=-1, keepdim=True)
        return self._log_p

    def log_prob(self, actions: th.Tensor) -> th.Tensor:
        actions = actions.view(-1, len(self.action_dims)).long()
        return self.log_p.gather(-1, actions.unsqueeze(-1)).squeeze(-1).sum(dim=1)

    def entropy(self) -> th.Tensor:
        p_log_p = th.where(self.legal, self.log_p.exp() * self.log_p, th.zeros_like(self.log_p))
        return -p_log_p.sum(dim=(1, 2))

    def sample(self) -> th.Tensor:
        u = th.rand_like(self.log_p).clamp_(min=th.finfo(self.log_p.dtype).tiny)
        return th.argmax(self.log_p - th.log(-th.log(u)), dim=-1)  # Gumbel-max: one draw per dimension

    def mode(self) -> th.Tensor:
        return th.argmax(self.log_p, dim=-1)

    def actions_from_params(self, action_logits: th.Tensor, deterministic: bool = False) -> th.Tensor:
        self.proba_distribution(action_logits)
        return self.get_actions(deterministic=deterministic)

    def log_prob_from_params(self, action_logits: th.Tensor) -> tuple[th.Tensor, th.Tensor]:
        actions = self.actions_from_params(action_logits)
        return actions, self.log_prob(actions)


class MaskableMultiDiscretePolicy(MaskableActorCriticPolicy):
    """MaskablePPO's ``MlpPolicy`` with :class:`PaddedMaskableMultiCategorical` as its action distribution (the
    networks, their initialisation and the checkpoints are the same)."""

    def _build(self, lr_schedule: Any) -> None:
        self.action_dist = PaddedMaskableMultiCategorical(list(self.action_space.nvec))
        super()._build(lr_schedule)
