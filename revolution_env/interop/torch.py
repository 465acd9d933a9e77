"""Masked action distributions in plain PyTorch, for people who write their own PPO (CleanRL style).

```python
from revolution_env.interop.torch import MaskedMultiCategorical
dist = MaskedMultiCategorical(logits, masks, nvec)      # logits and masks: (batch, sum(nvec)), as the env gives them
action = dist.sample()                                  # (batch, len(nvec)): every dimension within its mask
dist.log_prob(action), dist.entropy()                   # (batch,): summed over the dimensions
```

The mask is the environment's flat mask (``action_masks()``, ``observation["action_mask"]``): dimension ``d`` takes
``nvec[d]`` entries of it. A masked value gets probability 0 (its logit is replaced by a large negative number, not
``-inf``, so that entropies and gradients stay finite). ``MaskedCategorical`` is the one-dimension case (a
``Discrete`` action). Only torch is needed (``pip install -e '.[torch]'``), no stable-baselines3.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch.distributions import Categorical, Distribution

MASKED = -1e8


class MaskedCategorical(Categorical):
    """A categorical distribution over ``n`` values of which the mask allows some: logits and mask ``(batch, n)``."""

    def __init__(self, logits: torch.Tensor, mask: torch.Tensor) -> None:
        mask = torch.as_tensor(mask, dtype=torch.bool, device=logits.device)
        if not bool(mask.any(-1).all()):
            raise ValueError("mask: every row must allow at least one value")
        super().__init__(logits=torch.where(mask, logits, torch.full_like(logits, MASKED)))


class MaskedMultiCategorical(Distribution):
    """Independent masked categoricals, one per dimension of a ``MultiDiscrete(nvec)`` action: a
    ``torch.distributions.Distribution`` with event shape ``(len(nvec),)``, so that TorchRL's ``ProbabilisticActor``
    takes it as its ``distribution_class`` (``distribution_kwargs={"nvec": nvec}``, in-keys ``logits`` and
    ``masks``)."""

    arg_constraints: dict = {}
    has_rsample = False

    def __init__(self, logits: torch.Tensor, masks: torch.Tensor, nvec: Sequence[int]) -> None:
        nvec = torch.as_tensor(list(nvec), dtype=torch.long, device=logits.device)
        total = int(nvec.sum())
        if logits.shape[-1] != total or masks.shape[-1] != total:
            raise ValueError(f"logits and masks: expected a last dimension of sum(nvec) = {total}, got "
                             f"{logits.shape[-1]} and {masks.shape[-1]}")  # fmt: skip
        width = int(nvec.max())
        offsets = torch.cumsum(nvec, 0) - nvec
        col = torch.arange(width, device=logits.device)
        valid = col[None, :] < nvec[:, None]  # (D, width)
        index = torch.where(valid, offsets[:, None] + col[None, :], torch.zeros_like(col)[None, :])
        masks = torch.as_tensor(masks, dtype=torch.bool, device=logits.device)
        allowed = valid & masks[..., index]  # (batch, D, width)
        if not bool(allowed.any(-1).all()):
            raise ValueError("masks: every dimension must allow at least one value")
        self.nvec = nvec
        self.dist = Categorical(
            logits=torch.where(allowed, logits[..., index], torch.full_like(logits[..., index], MASKED))
        )
        super().__init__(logits.shape[:-1], torch.Size([len(nvec)]), validate_args=False)

    def sample(self, sample_shape: torch.Size = torch.Size()) -> torch.Tensor:  # noqa: B008 (torch's signature)
        with torch.no_grad():
            return self.dist.sample(sample_shape)

    @property
    def mode(self) -> torch.Tensor:
        return self.dist.probs.argmax(-1)

    @property
    def deterministic_sample(self) -> torch.Tensor:  # what TorchRL plays in its deterministic mode
        return self.mode

    def log_prob(self, actions: torch.Tensor) -> torch.Tensor:
        return self.dist.log_prob(actions).sum(-1)

    def entropy(self) -> torch.Tensor:
        return self.dist.entropy().sum(-1)
