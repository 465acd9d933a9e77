"""Regenerate the golden games in tests/golden/ (used by tests/test_golden.py).

Each golden file is one complete, seeded random game (revolution_env.engine.random_game) of one variant, stored as
``{"scenario": <export_game output>, "expect": <final canonical state>}``. The expectations are GENERATED FROM THE
ENGINE, not derived by hand: they do not show that the engine follows the rules (the hand-written scenarios in
tests/scenarios/ do that), only that its behaviour has not changed. When a change in behaviour is intended (a rule
fixed, a decision of docs/rules.md changed), rerun this script and review the diff of tests/golden/ before committing:

    .venv/bin/python scripts/make_golden.py
"""

from __future__ import annotations

import json
from pathlib import Path

from revolution_env.engine import Rules, export_game, random_game, state_dict

GOLDEN_DIR = Path(__file__).resolve().parent.parent / "tests" / "golden"

# name: (rules, seed). Each seed was checked to give a game with Spy and Apothecary decisions (and Guy passes,
# Remove cards where the variant has them); the summary printed below shows what each game holds.
GAMES: dict[str, tuple[Rules, int]] = {
    "standard_3p": (Rules(players=3), 1),
    "both_options_4p": (Rules(players=4, bid_refunds=True, area_control_bonus=True), 2),
    "puppet_2p": (Rules(players=2), 3),
    "first_edition_3p": (Rules(players=3, first_edition=True), 4),
    "first_edition_2p": (Rules(players=2, first_edition=True), 5),
    "truncated_3p": (Rules(players=3, max_rounds=6), 6),
}


def dumps(data: dict) -> str:
    """JSON with one round per line, so that a change in behaviour shows as a readable diff."""
    scenario = data["scenario"]
    head = ",\n".join(f"    {json.dumps(k)}: {json.dumps(v)}" for k, v in scenario.items() if k != "rounds")
    rounds = ",\n".join(f"      {json.dumps(r)}" for r in scenario["rounds"])
    expect = ",\n".join(f"    {json.dumps(k)}: {json.dumps(v)}" for k, v in data["expect"].items())
    return (
        '{\n  "scenario": {\n' + head + ',\n    "rounds": [\n' + rounds + "\n    ]\n  },\n"
        '  "expect": {\n' + expect + "\n  }\n}\n"
    )


def summary(scenario: dict, state: dict) -> str:
    rounds = scenario["rounds"]
    count = {k: sum(k in r for r in rounds) for k in ("spy", "apothecary")}
    guy = [g for r in rounds for g in r.get("guy", [])]
    removes = sum(len(r.get("remove", [])) for r in rounds)
    end = "truncated" if state["truncated"] else "ended"
    return (
        f"{len(rounds)} rounds ({end}), spy {count['spy']}, apothecary {count['apothecary']}, "
        f"guy {len(guy)} ({guy.count('pass')} passes), remove {removes}, winners {state['final']['winners']}"
    )


def main() -> None:
    GOLDEN_DIR.mkdir(parents=True, exist_ok=True)
    for name, (rules, seed) in GAMES.items():
        game = random_game(rules, seed)
        data = {"scenario": export_game(game), "expect": state_dict(game)}
        path = GOLDEN_DIR / f"{name}.json"
        path.write_text(dumps(data), encoding="utf-8")
        assert json.loads(path.read_text(encoding="utf-8")) == data
        print(f"{path.name}: {summary(data['scenario'], data['expect'])}")


if __name__ == "__main__":
    main()
