"""Replay files for the tests of `revolution serve`: a small evaluation as `revolution eval` writes it."""

from __future__ import annotations

import json
from pathlib import Path

from revolution_env.evaluation import evaluate_lineup
from revolution_env.evaluation.report import write_all


def write_evaluation(folder: Path, games: int) -> list[dict]:
    """A small `revolution eval` output (results.json, games.jsonl, ...) in ``folder``; game 1's line loses its
    recorded scenario, as in files written before evaluations recorded them, so that the viewer plays it again."""
    write_all(evaluate_lineup(["value", "area", "random"], games, seed=4, workers=1, progress=False), folder)
    lines = [json.loads(line) for line in (folder / "games.jsonl").read_text().splitlines()]
    if len(lines) > 1:
        del lines[1]["scenario"]
    (folder / "games.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))
    return lines


def another_seed(scenario: dict) -> dict:
    """A saved game as a file holds it (through JSON), its seed changed: it must replay from what it records (the
    deck, each reshuffle, the two-player priority), never from its seed's generator (docs/scenarios.md §3)."""
    data = json.loads(json.dumps(scenario))
    data["seed"] = data.get("seed", 0) + 1
    return data
