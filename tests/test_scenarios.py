"""Every scenario file under tests/scenarios is played and compared with its full expected state.

A scenario file is the JSON of docs/scenarios.md plus:
- ``description``: what rule it shows, in a sentence;
- ``covers``: the rule ids below that it tests (every id must be covered by at least one scenario);
- ``expect``: the full canonical state after the last round, or ``expect_error``: a piece of the one-line error.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from revolution_env.engine import ScenarioError, run_scenario, state_dict

HERE = Path(__file__).parent
SCENARIOS = sorted((HERE / "scenarios").rglob("*.json"))

# Every rule of docs/rules.md §1–§7 and every numbered decision, by id. A scenario "covers" the ids it tests.
RULE_IDS = [f"D{i}" for i in range(1, 19)] + [
    "R1.setup",  # starting tokens, bank, cubes
    "R2.patronage",
    "R3.strength",  # (Force, Blackmail, Gold) compared lexicographically
    "R3.illegal-tokens",
    "R3.six-characters",
    "R4.tie-nobody",
    "R4.no-bid-nobody",
    "R4.tokens-spent",
    "R4.bid-refunds",
    "R4.benefits",  # support, tokens, influence, at once and in order
    "R4.full-area",  # no cube in a full area, the other benefits still come
    "R4.spy",
    "R4.apothecary",
    "R5.end",
    "R5.token-points",
    "R5.area-points",
    "R5.area-control-bonus",
    "R5.winner",
    "R6.scheming-space",
    "R6.scheming-gold-to-bank",
    "R6.guy-bids",
    "R6.guy-unplaced-to-bank",
    "R6.guy-spy-apothecary",
    "R6.guy-refunds",
    "R6.guy-patronage",
    "R6.guy-scoring",
    "R7.card-space",
    "R7.remove",
    "R7.reopen",
    "EX.A",  # the rulebook's Cathedral example
    "EX.B",  # the rulebook's tie example
    "E.bad-input",  # error scenarios
]


def load(path: Path) -> dict:
    with open(path, encoding="utf-8") as fh:
        return json.load(fh)


@pytest.mark.parametrize("path", SCENARIOS, ids=[str(p.relative_to(HERE / "scenarios")) for p in SCENARIOS])
def test_scenario(path: Path) -> None:
    data = load(path)
    assert data.get("description"), "every scenario says what it shows"
    assert data.get("covers"), "every scenario names the rules it covers"
    if "expect_error" in data:
        with pytest.raises(ScenarioError) as err:
            run_scenario(data)
        message = str(err.value)
        assert data["expect_error"] in message
        assert "\n" not in message
    else:
        assert "expect" in data, "a scenario states its full expected state"
        assert state_dict(run_scenario(data)) == data["expect"]


def test_every_rule_has_a_scenario() -> None:
    covered: set[str] = set()
    for path in SCENARIOS:
        covers = load(path).get("covers", [])
        unknown = set(covers) - set(RULE_IDS)
        assert not unknown, f"{path.name}: unknown rule ids {sorted(unknown)}"
        covered.update(covers)
    missing = [r for r in RULE_IDS if r not in covered]
    assert not missing, f"rules without a scenario: {missing}"


def test_cli_prints_state_and_exits_0(tmp_path: Path) -> None:
    path = next(p for p in SCENARIOS if "expect" in load(p))
    out = subprocess.run(
        [sys.executable, "-m", "revolution_env", "scenario", str(path)], capture_output=True, text=True
    )
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout) == load(path)["expect"]


def test_cli_bad_scenario_exits_2_with_one_line(tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"rounds": [{"bids": [{"Printer": {"gold": 9}}, {}, {}]}]}))
    out = subprocess.run([sys.executable, "-m", "revolution_env", "scenario", str(bad)], capture_output=True, text=True)
    assert out.returncode == 2
    assert out.stdout == ""
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1
    assert "round 1" in lines[0] and "seat 0" in lines[0] and "bids" in lines[0]
