"""Golden games: complete seeded random games stored with their final state (tests/golden/, written by
scripts/make_golden.py from the engine itself). Replaying each stored scenario must give exactly the stored state,
so any change in the engine's behaviour shows up here; if the change is intended, regenerate the files and review
the diff."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from revolution_env.engine import run_scenario, state_dict
from revolution_env.engine.game import Rules, make_layout
from revolution_env.engine.scenario import DRAWS

GOLDEN = sorted((Path(__file__).parent / "golden").glob("*.json"))


def test_golden_games_exist() -> None:
    names = {p.stem for p in GOLDEN}
    assert {"standard_3p", "both_options_4p", "puppet_2p", "first_edition_3p", "first_edition_2p"} <= names


@pytest.mark.parametrize("draws", DRAWS)
@pytest.mark.parametrize("path", GOLDEN, ids=[p.stem for p in GOLDEN])
def test_golden_game_replays_exactly(path: Path, draws: str) -> None:
    """From its record (the deck and reshuffles it holds, whatever the seed) and from its seed alone (the record's
    draws dropped: the engine's generator must draw them again, the same)."""
    data = json.loads(path.read_text(encoding="utf-8"))
    expect = data["expect"]
    assert expect["final"] is not None, "a golden game is played to its end"
    scenario = data["scenario"]
    if draws == "record":
        scenario = {**scenario, "seed": scenario["seed"] + 1}
    else:
        scenario = {**scenario, "start": {}, "rounds": [without(r, "reshuffles") for r in scenario["rounds"]]}
    state = state_dict(run_scenario(scenario, draws=draws))
    diffs = [k for k in sorted(set(state) | set(expect)) if state.get(k) != expect.get(k)]
    assert not diffs, f"{path.name}: the replay differs in {diffs} (if intended: scripts/make_golden.py)"
    assert state == expect


def test_golden_first_edition_games_record_their_draws() -> None:
    """A first-edition game's record holds its deck as dealt and at least one of them a reshuffle (D15), so that
    the test above replays a reshuffle from the record."""
    scenarios = [json.loads(p.read_text(encoding="utf-8"))["scenario"] for p in GOLDEN if "first_edition" in p.stem]
    decks = [make_layout(Rules.from_dict(s["rules"])).components.deck for s in scenarios]
    assert scenarios and all(len(s["start"]["deck"]) == len(deck) for s, deck in zip(scenarios, decks))
    assert any("reshuffles" in r for s in scenarios for r in s["rounds"])


def without(entry: dict, key: str) -> dict:
    return {k: v for k, v in entry.items() if k != key}
