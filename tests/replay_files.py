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
