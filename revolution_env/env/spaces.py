"""The masked MultiDiscrete action space and the conversions between mask forms (ENVIRONMENT.md)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from gymnasium.spaces import MultiDiscrete


def split_mask(mask: np.ndarray, nvec: Sequence[int]) -> tuple[np.ndarray, ...]:
    """The flat mask (length ``sum(nvec)``) as the tuple of per-dimension masks that Gymnasium's
    ``MultiDiscrete.sample(mask=...)`` takes."""
    mask = np.asarray(mask, dtype=np.int8)
    if mask.ndim != 1 or mask.shape[0] != int(np.sum(nvec)):
        raise ValueError(f"mask: expected a flat array of length {int(np.sum(nvec))}, got shape {mask.shape}")
    return tuple(np.split(mask, np.cumsum(nvec)[:-1]))


def flat_mask(masks: Sequence[np.ndarray]) -> np.ndarray:
    """The inverse of :func:`split_mask`."""
    return np.concatenate([np.asarray(m, dtype=np.int8) for m in masks])


class MaskedMultiDiscrete(MultiDiscrete):
    """A ``MultiDiscrete`` whose ``sample`` also takes the flat mask (the form MaskablePPO and PettingZoo's test
    suite use). It samples every dimension uniformly among its allowed values, vectorised; a dimension whose
    mask is all zero gives 0, as Gymnasium does."""

    def __init__(self, nvec: Sequence[int], seed: int | np.random.Generator | None = None) -> None:
        super().__init__(np.asarray(nvec, dtype=np.int64), seed=seed)
        self._uniform = bool(np.all(self.nvec == self.nvec[-1]))  # every dimension but the first is of one size
        self._n0 = int(self.nvec[0])

    def sample(self, mask: Any = None, probability: Any = None) -> np.ndarray:
        if mask is None or probability is not None or isinstance(mask, tuple):
            return super().sample(mask=mask, probability=probability)
        mask = np.asarray(mask)
        n = int(self.nvec.sum())
        if mask.ndim != 1 or mask.shape[0] != n:
            raise ValueError(f"mask: expected a flat array of length {n} (or a tuple of masks), got shape {mask.shape}")
        if not np.all(self.nvec[1:] == self.nvec[1]):
            return super().sample(mask=split_mask(mask, self.nvec))
        rng = self.np_random
        rest = mask[self._n0 :].reshape(len(self.nvec) - 1, int(self.nvec[1])) > 0
        out = np.empty(len(self.nvec), dtype=self.dtype)
        out[0] = _pick(mask[: self._n0] > 0, rng)
        # argmax of uniform noise over the allowed entries: uniform among them, all dimensions at once
        noise = rng.random(rest.shape)
        noise[~rest] = -1.0
        out[1:] = noise.argmax(1)
        return out


def _pick(allowed: np.ndarray, rng: np.random.Generator) -> int:
    idx = np.flatnonzero(allowed)
    return 0 if len(idx) == 0 else int(idx[rng.integers(len(idx))])
