"""A picture of the game (placeholder: replaced by the full drawing)."""

from __future__ import annotations

import numpy as np


def draw(game) -> np.ndarray:
    return np.zeros((480, 640, 3), dtype=np.uint8)
