"""The masked MultiDiscrete action space and the conversions between mask forms (docs/environment.md §3)."""

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


def equal_width_runs(nvec: Sequence[int]) -> list[tuple[int, int, int, int]]:
    """``MultiDiscrete(nvec)``'s flat vectors (logits, masks) as runs of consecutive dimensions of one width, each
    ``(flat start, first dimension, dimensions, width)``: a run is a ``(..., dimensions, width)`` reshape of a slice,
    no copy and no padding. Revolution!'s action is two runs: the choice, then every token (``[C] + [T] * K``)."""
    nvec = [int(n) for n in nvec]
    runs, start, d = [], 0, 0
    while d < len(nvec):
        end = d
        while end < len(nvec) and nvec[end] == nvec[d]:
            end += 1
        runs.append((start, d, end - d, nvec[d]))
        start += (end - d) * nvec[d]
        d = end
    return runs


def flat_mask(masks: Sequence[np.ndarray]) -> np.ndarray:
    """The inverse of :func:`split_mask`."""
    return np.concatenate([np.asarray(m, dtype=np.int8) for m in masks])


class MaskedMultiDiscrete(MultiDiscrete):
    """A ``MultiDiscrete`` whose ``sample`` also takes the flat mask (the form MaskablePPO and PettingZoo's test
    suite use). It samples every dimension uniformly among its allowed values, vectorised; a dimension whose
    mask is all zero gives 0, as Gymnasium does."""

    def __init__(self, nvec: Sequence[int], seed: int | np.random.Generator | None = None) -> None:
        super().__init__(np.asarray(nvec, dtype=np.int64), seed=seed)
        self._n0 = int(self.nvec[0])
        self._size = int(self.nvec.sum())
        self._rows, self._cols = len(self.nvec) - 1, int(self.nvec[1]) if len(self.nvec) > 1 else 0
        self._regular = len(self.nvec) > 1 and bool(np.all(self.nvec[1:] == self.nvec[1]))

    def sample(self, mask: Any = None, probability: Any = None) -> np.ndarray:
        if probability is not None:  # Gymnasium >= 1.1 only
            return super().sample(mask=mask, probability=probability)
        if mask is None or isinstance(mask, tuple):
            return super().sample(mask=mask)
        mask = np.asarray(mask)
        n = self._size
        if mask.ndim != 1 or mask.shape[0] != n:
            raise ValueError(f"mask: expected a flat array of length {n} (or a tuple of masks), got shape {mask.shape}")
        if not self._regular:
            return super().sample(mask=split_mask(mask, self.nvec))
        # Uniform noise in [0, 1) plus the mask: the largest entry of a dimension is a uniformly chosen allowed
        # value (>= 1), all dimensions at once. A dimension with nothing allowed gives 0, as in Gymnasium.
        score = self.np_random.random(n)
        score += mask
        rest = score[self._n0 :].reshape(self._rows, self._cols)
        out = np.empty(len(self.nvec), dtype=self.dtype)
        out[1:] = rest.argmax(1)
        out[0] = score[: self._n0].argmax()
        if score[: self._n0].max() < 1:
            out[0] = 0
        empty = rest.max(1) < 1
        if empty.any():
            out[1:][empty] = 0
        return out
