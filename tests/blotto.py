"""A value that makes a round a Colonel Blotto game over the characters, for the tests of the search and of the
one-round gap."""

from __future__ import annotations

import numpy as np


def characters_won(layout) -> callable:
    """A value that makes a round a Blotto game over the characters: at the next bid decision, the observer's
    characters won last round minus the most any other seat won, over the number of characters (from the
    observation's ``winners``, relative seats)."""
    f = layout.features["winners"]
    S, C = layout.seats, layout.n_characters

    def value(observations: np.ndarray) -> np.ndarray:
        won = observations[:, f.start : f.stop].reshape(len(observations), -1, S + 2)[:, :C, 2:].sum(1)
        return (won[:, 0] - won[:, 1:].max(1)) / C

    return value
