"""Boards made from the standard one for the tests and for the recorded games (``scripts/make_golden_bots.py``):
the data of a board file (docs/rules.md §1), to write where a test or a game reads it."""

from __future__ import annotations

import copy
import json

from revolution_env.engine.components import BOARDS_DIR

STANDARD = json.loads((BOARDS_DIR / "standard.json").read_text(encoding="utf-8"))


def small_board() -> dict:
    """Two areas of 3 and 2 spaces instead of the standard board's, no first edition."""
    data = copy.deepcopy(STANDARD)
    data["name"] = "small"
    data["areas"] = [{"name": "Hill", "spaces": 3, "support": 10}, {"name": "Vale", "spaces": 2, "support": 5}]
    for c in data["characters"]:
        if c["area"] is not None:
            c["area"] = "Hill" if c["name"] in ("General", "Captain", "Magistrate", "Priest") else "Vale"
    del data["first_edition"]
    return data


def small_deck() -> dict:
    """The standard board with a first edition deck of three cards, one of them Remove 1 Influence: the deck runs
    out several times a round, and Remove decisions come often."""
    data = copy.deepcopy(STANDARD)
    data["first_edition"]["deck"] = [
        {"name": "3 support", "count": 1, "support": 3},
        {"name": "1 Force", "count": 1, "tokens": {"force": 1}},
        {"name": "Remove 1 Influence", "count": 1, "remove": 1},
    ]
    return data
