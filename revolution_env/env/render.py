"""Rendering: ``ansi`` (text), ``human`` (text printed), ``rgb_array`` (a picture of the board)."""

from __future__ import annotations

from typing import Any

import numpy as np

from revolution_env.env.text import render as render_text


def render_frame(core: Any, mode: str) -> Any:
    game = core.game
    if game is None:
        raise RuntimeError("render: call reset() first")
    if mode == "ansi":
        return render_text(game)
    if mode == "human":
        print(render_text(game) + "\n")
        return None
    return render_rgb(game)


def render_rgb(game: Any) -> np.ndarray:
    """The town board with cubes per seat, the support track and the round's bids, as an (H, W, 3) uint8 array."""
    from revolution_env.env.picture import draw

    return draw(game)
