"""Golden games: complete seeded random games stored with their final state (tests/golden/, written by
scripts/make_golden.py from the engine itself). Replaying each stored scenario must give exactly the stored state,
so any change in the engine's behaviour shows up here; if the change is intended, regenerate the files and review
the diff."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from revolution_env.engine import run_scenario, state_dict

GOLDEN = sorted((Path(__file__).parent / "golden").glob("*.json"))


def test_golden_games_exist() -> None:
    names = {p.stem for p in GOLDEN}
    assert {"standard_3p", "both_options_4p", "puppet_2p", "first_edition_3p", "first_edition_2p"} <= names


@pytest.mark.parametrize("path", GOLDEN, ids=[p.stem for p in GOLDEN])
def test_golden_game_replays_exactly(path: Path) -> None:
    data = json.loads(path.read_text(encoding="utf-8"))
    expect = data["expect"]
    assert expect["final"] is not None, "a golden game is played to its end"
    state = state_dict(run_scenario(data["scenario"]))
    diffs = [k for k in sorted(set(state) | set(expect)) if state.get(k) != expect.get(k)]
    assert not diffs, f"{path.name}: the replay differs in {diffs} (if intended: scripts/make_golden.py)"
    assert state == expect
