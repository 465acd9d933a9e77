"""Component data (docs/rules.md §1) and rule options: the standard board as printed, boards loaded from a path, and
malformed boards and options refused with an error that names the field."""

from __future__ import annotations

import copy
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from boards import STANDARD, small_board

from revolution_env.engine import (
    BoardError,
    Game,
    Rules,
    RulesError,
    load_components,
    make_layout,
    random_game,
    state_dict,
)


def write_board(tmp_path: Path, data: object, name: str = "board.json") -> Path:
    path = tmp_path / name
    path.write_text(data if isinstance(data, str) else json.dumps(data), encoding="utf-8")
    return path


# --- the standard board, as printed (docs/rules.md §1) ---------------------------------------------------------------


def test_standard_areas() -> None:
    comp = load_components("standard")
    assert comp.name == "standard"
    assert [(a.name, a.spaces, a.support) for a in comp.areas] == [
        ("Fortress", 8, 50),
        ("Town Hall", 7, 45),
        ("Harbor", 6, 40),
        ("Cathedral", 7, 35),
        ("Plantation", 6, 30),
        ("Market", 5, 25),
        ("Tavern", 4, 20),
    ]
    assert comp.spaces.sum() == 43


def test_standard_characters_in_resolution_order() -> None:
    comp = load_components()
    area = {i: a.name for i, a in enumerate(comp.areas)} | {-1: None}
    # name, support, (force, blackmail, gold) won, area, legal (force, blackmail, gold)
    assert [(c.name, c.support, c.tokens, area[c.area], c.legal) for c in comp.characters] == [
        ("General", 1, (1, 0, 0), "Fortress", (False, True, True)),
        ("Captain", 1, (1, 0, 0), "Harbor", (False, True, True)),
        ("Innkeeper", 3, (0, 1, 0), "Tavern", (True, False, True)),
        ("Magistrate", 1, (0, 1, 0), "Town Hall", (True, False, True)),
        ("Priest", 6, (0, 0, 0), "Cathedral", (True, True, True)),
        ("Aristocrat", 5, (0, 0, 3), "Plantation", (True, True, True)),
        ("Merchant", 3, (0, 0, 5), "Market", (True, True, True)),
        ("Printer", 10, (0, 0, 0), None, (True, True, True)),
        ("Rogue", 0, (0, 2, 0), None, (False, False, True)),
        ("Spy", 0, (0, 0, 0), None, (True, False, True)),
        ("Apothecary", 0, (0, 0, 0), None, (False, True, True)),
        ("Mercenary", 3, (1, 0, 0), None, (False, False, True)),
    ]
    assert [c.special for c in comp.characters if c.special] == ["spy", "apothecary"]


def test_standard_tokens_and_cubes() -> None:
    comp = load_components()
    assert comp.token_totals == (12, 12, 32)
    assert comp.token_start == (1, 1, 3)
    assert comp.token_points == (5, 3, 1)
    assert comp.cubes_per_seat == 25
    assert comp.max_characters_per_bid == 6
    assert comp.patronage_minimum == 5


def test_first_edition_card_space_and_deck() -> None:
    """D14: the Card space (Gold only) replaces the Mercenary; D15: the 22-card deck."""
    comp = load_components()
    card = comp.bid_card(first_edition=True)
    assert [c.name for c in card[:11]] == [c.name for c in comp.characters[:11]]
    assert card[11].name == "Card" and card[11].special == "card" and card[11].legal == (False, False, True)
    assert comp.card_max_gold == 3
    counts: dict[str, int] = {}
    for c in comp.deck:
        counts[c.name] = counts.get(c.name, 0) + 1
    assert counts == {
        "1 support": 3,
        "3 support": 3,
        "5 support": 3,
        "1 Force": 3,
        "1 Blackmail": 3,
        "4 Gold": 3,
        "Remove 1 Influence": 4,
    }
    assert sum(c.remove for c in comp.deck) == 4
    by_name = {c.name: c for c in comp.deck}
    assert by_name["5 support"].support == 5 and by_name["4 Gold"].tokens == (0, 0, 4)
    assert by_name["1 Force"].tokens == (1, 0, 0) and by_name["1 Blackmail"].tokens == (0, 1, 0)


def test_new_game_setup() -> None:
    """R1.setup: each seat holds 1 Force, 1 Blackmail, 3 Gold and 25 cubes; the bank holds the rest."""
    for players, seats in ((2, 3), (3, 3), (4, 4)):
        state = state_dict(Game.new(Rules(players=players), seed=0))
        assert state["tokens"] == [{"force": 1, "blackmail": 1, "gold": 3}] * seats
        assert state["bank"] == {"force": 12 - seats, "blackmail": 12 - seats, "gold": 32 - 3 * seats}
        assert state["supply"] == [25] * seats
        assert state["support"] == [0] * seats


# --- loading boards from a path -----------------------------------------------------------------------------------


def test_load_from_path_equals_by_name(tmp_path: Path) -> None:
    path = write_board(tmp_path, STANDARD, "copy.json")
    assert load_components(path) == load_components("standard")
    assert load_components(str(path)) == load_components("standard")


def test_custom_board_plays_a_game(tmp_path: Path) -> None:
    path = write_board(tmp_path, small_board(), "small.json")
    game = random_game(Rules(players=3, board=str(path)), seed=5)
    state = state_dict(game)
    assert list(state["board"]) == ["Hill", "Vale"]
    assert state["game_over"] and state["final"] is not None
    assert [sum(v) for v in state["board"].values()] == [3, 2]  # the game ends with the board full (D6)
    assert state["rules"]["board"] == str(path)


def test_board_without_first_edition_section(tmp_path: Path) -> None:
    path = write_board(tmp_path, small_board(), "small.json")
    with pytest.raises(BoardError, match="no first_edition section"):
        make_layout(Rules(players=3, first_edition=True, board=str(path)))


def test_board_with_too_few_tokens_for_the_seats(tmp_path: Path) -> None:
    data = copy.deepcopy(STANDARD)
    data["tokens"]["force"]["total"] = 3
    path = write_board(tmp_path, data)
    make_layout(Rules(players=3, board=str(path)))  # 3 seats x 1 Force: just enough
    with pytest.raises(RulesError, match="too few tokens for 4 seats"):
        make_layout(Rules(players=4, board=str(path)))


# --- malformed boards: a BoardError naming the field ---------------------------------------------------------------


def _del(path: list, key: object):
    def edit(d: dict) -> None:
        for k in path:
            d = d[k]
        del d[key]

    return edit


def _set(path: list, key: object, value: object):
    def edit(d: dict) -> None:
        for k in path:
            d = d[k]
        d[key] = value

    return edit


MALFORMED = {
    "missing top-level field": (_del([], "cubes_per_seat"), "cubes_per_seat: missing"),
    "missing area field": (_del(["areas", 2], "spaces"), "areas[2].spaces: missing"),
    "missing token type": (_del(["tokens"], "gold"), "tokens.gold: missing"),
    "missing character name": (_del(["characters", 4], "name"), "characters[4].name: missing"),
    "wrong type: spaces": (_set(["areas", 0], "spaces", "8"), "areas[0].spaces: expected an integer, got '8'"),
    "wrong type: boolean count": (_set(["tokens", "force"], "total", True), "tokens.force.total: expected an integer"),
    "wrong type: characters": (_set([], "characters", {}), "characters: expected list"),
    "wrong type: name": (_set(["areas", 1], "name", 7), "areas[1].name: expected str, got 7"),
    "unknown token type in immune": (
        _set(["characters", 3], "immune", ["iron"]),
        "characters[3].immune[0]: unknown token type 'iron'",
    ),
    "immune to everything": (
        _set(["characters", 0], "immune", ["force", "blackmail", "gold"]),
        "characters[0].immune: a character must accept at least one token type",
    ),
    "unknown token type won": (
        _set(["characters", 6], "tokens", {"silver": 5}),
        "characters[6].tokens.silver: unknown token type 'silver'",
    ),
    "unknown area": (_set(["characters", 0], "area", "Castle"), "characters[0].area: unknown area 'Castle'"),
    "unknown special": (_set(["characters", 9], "special", "thief"), "characters[9].special: unknown special 'thief'"),
    "duplicate area": (_set(["areas", 1], "name", "Fortress"), "areas[1].name: duplicate area 'Fortress'"),
    "duplicate character": (_set(["characters", 1], "name", "General"), "characters[1].name: duplicate character"),
    "reserved name": (_set(["characters", 7], "name", "Scheming"), "characters[7].name: 'Scheming' is reserved"),
    "two spies": (_set(["characters", 10], "special", "spy"), "more than one character with special 'spy'"),
    "negative spaces": (_set(["areas", 6], "spaces", -1), "areas[6].spaces: must be at least 1, got -1"),
    "no spaces": (_set(["areas", 6], "spaces", 0), "areas[6].spaces: must be at least 1, got 0"),
    "negative support": (_set(["areas", 3], "support", -35), "areas[3].support: must be at least 0, got -35"),
    "negative token total": (_set(["tokens", "gold"], "total", -3), "tokens.gold.total: must be at least 0, got -3"),
    "negative count won": (
        _set(["characters", 6], "tokens", {"gold": -5}),
        "characters[6].tokens.gold: expected a non-negative integer, got -5",
    ),
    "no cubes": (_set([], "cubes_per_seat", 0), "cubes_per_seat: must be at least 1, got 0"),
    "no areas": (_set([], "areas", []), "areas: at least one area is needed"),
    "unknown top-level field": (_set([], "colour", "red"), "colour: unknown field"),
    "unknown area field": (_set(["areas", 0], "colour", "red"), "areas[0].colour: unknown field"),
    "unknown character field": (_set(["characters", 2], "cost", 1), "characters[2].cost: unknown field"),
    "unknown token type in the pool": (
        _set(["tokens"], "silver", {"total": 1, "start": 0, "points": 1}),
        "tokens.silver: unknown field",
    ),
    "first edition replaces an unknown character": (
        _set(["first_edition"], "replaces", "Pirate"),
        "first_edition.replaces: unknown character 'Pirate'",
    ),
    "Card space not Gold only": (
        _set(["first_edition", "card_space"], "immune", ["force"]),
        "first_edition.card_space.immune: the Card space takes Gold only",
    ),
    "card count zero": (
        _set(["first_edition", "deck", 0], "count", 0),
        "first_edition.deck[0].count: must be at least 1, got 0",
    ),
    "card remove not 0 or 1": (
        _set(["first_edition", "deck", 6], "remove", 2),
        "first_edition.deck[6].remove: expected 0 or 1, got 2",
    ),
    "empty deck": (_set(["first_edition"], "deck", []), "first_edition.deck: the deck needs at least one card"),
}


@pytest.mark.parametrize("case", list(MALFORMED))
def test_malformed_board_names_the_field(tmp_path: Path, case: str) -> None:
    edit, message = MALFORMED[case]
    data = copy.deepcopy(STANDARD)
    edit(data)
    path = write_board(tmp_path, data)
    with pytest.raises(BoardError) as err:
        load_components(path)
    text = str(err.value)
    assert message in text
    assert str(path) in text  # the file is named too
    assert "\n" not in text


def test_board_bad_json(tmp_path: Path) -> None:
    path = write_board(tmp_path, '{"name": "broken", "areas": [}')
    with pytest.raises(BoardError, match=r"is not valid JSON.*line 1"):
        load_components(path)


def test_board_not_an_object(tmp_path: Path) -> None:
    path = write_board(tmp_path, [STANDARD])
    with pytest.raises(BoardError, match="expected a JSON object at the top level"):
        load_components(path)


def test_unknown_board_name() -> None:
    with pytest.raises(BoardError, match=r"unknown board 'nowhere' \(known boards: .*standard"):
        load_components("nowhere")


def test_missing_board_file(tmp_path: Path) -> None:
    with pytest.raises(BoardError, match="cannot read board file"):
        load_components(tmp_path / "missing.json")


def test_rules_with_a_bad_board_fail_when_the_game_is_made(tmp_path: Path) -> None:
    data = copy.deepcopy(STANDARD)
    data["areas"][0]["spaces"] = "eight"
    path = write_board(tmp_path, data)
    with pytest.raises(BoardError, match=r"areas\[0\]\.spaces"):
        Game.new(Rules(board=str(path)))


# --- rule options ----------------------------------------------------------------------------------------------


def test_rule_defaults() -> None:
    assert Rules().to_dict() == {
        "players": 3,
        "bid_refunds": False,
        "area_control_bonus": False,
        "first_edition": False,
        "max_rounds": 100,
        "board": "standard",
    }
    assert Rules(players=2).bid_refunds is True  # docs/rules.md §6
    assert Rules(first_edition=True).bid_refunds is True  # D14
    assert Rules(players=2).area_control_bonus is False
    for rules in (Rules(), Rules(players=2, area_control_bonus=True), Rules(players=4, bid_refunds=True)):
        assert Rules.from_dict(rules.to_dict()) == rules


BAD_RULES = {
    "players 5": ({"players": 5}, "players: expected 2, 3 or 4, got 5"),
    "players 1": ({"players": 1}, "players: expected 2, 3 or 4, got 1"),
    "players as a string": ({"players": "3"}, "players: expected 2, 3 or 4, got '3'"),
    "players as a boolean": ({"players": True}, "players: expected 2, 3 or 4, got True"),
    "max_rounds 0": ({"max_rounds": 0}, "max_rounds: expected a positive integer, got 0"),
    "max_rounds fractional": ({"max_rounds": 2.5}, "max_rounds: expected a positive integer, got 2.5"),
    "max_rounds past float32": ({"max_rounds": 10**40}, "max_rounds: expected at most 16,777,216 (2**24"),
    "bid_refunds as a string": ({"bid_refunds": "yes"}, "bid_refunds: expected true or false, got 'yes'"),
    "area_control_bonus as 1": ({"area_control_bonus": 1}, "area_control_bonus: expected true or false, got 1"),
    "first_edition as None": ({"first_edition": None}, "first_edition: expected true or false, got None"),
    "empty board": ({"board": ""}, "board: expected a board name or a path"),
    "two players without refunds": (
        {"players": 2, "bid_refunds": False},
        "bid_refunds: the two-player variant always plays with Bid Refunds",
    ),
    "first edition without refunds": (
        {"first_edition": True, "bid_refunds": False},
        "bid_refunds: the first edition (D14) always plays with Bid Refunds",
    ),
}


@pytest.mark.parametrize("case", list(BAD_RULES))
def test_bad_rule_option_names_the_option(case: str) -> None:
    options, message = BAD_RULES[case]
    with pytest.raises(RulesError) as err:
        Rules(**options)
    assert message in str(err.value)
    with pytest.raises(RulesError) as err:
        Rules.from_dict(options)
    assert message in str(err.value)


def test_unknown_rule_option() -> None:
    with pytest.raises(RulesError, match=r"^refunds: unknown rule option \(known: "):
        Rules.from_dict({"refunds": True})
    with pytest.raises(RulesError, match="rules: expected an object"):
        Rules.from_dict([("players", 3)])  # type: ignore[arg-type]


@pytest.mark.parametrize("seed", [-1, 1.5, "7", True])
def test_bad_seed(seed: object) -> None:
    with pytest.raises(RulesError, match="seed: expected a non-negative integer"):
        Game.new(Rules(), seed)  # type: ignore[arg-type]


def test_seed_none_draws_one_that_replays() -> None:
    game = Game.new(Rules(), None)
    assert isinstance(game.seed, int) and game.seed >= 0
    assert np.array_equal(Game.new(Rules(), game.seed).tokens, game.tokens)


# --- the command line: exit 2 and one line on stderr ---------------------------------------------------------------


def run_cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "revolution_env", *args], capture_output=True, text=True)


def one_error_line(out: subprocess.CompletedProcess) -> str:
    assert out.returncode == 2, out.stderr
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1, out.stderr
    assert lines[0].startswith("error: ")
    return lines[0]


def test_cli_bad_board_file(tmp_path: Path) -> None:
    data = copy.deepcopy(STANDARD)
    data["characters"][3]["immune"] = ["iron"]
    path = write_board(tmp_path, data)
    line = one_error_line(run_cli("random", "--quiet", "--board", str(path)))
    assert "characters[3].immune[0]: unknown token type 'iron'" in line


def test_cli_unknown_board_name() -> None:
    line = one_error_line(run_cli("random", "--quiet", "--board", "nowhere"))
    assert "unknown board 'nowhere'" in line


def test_cli_bad_rule_option() -> None:
    line = one_error_line(run_cli("random", "--quiet", "--players", "5"))
    assert "players: expected 2, 3 or 4, got 5" in line


def test_cli_scenario_with_bad_rules(tmp_path: Path) -> None:
    path = tmp_path / "scenario.json"
    path.write_text(json.dumps({"rules": {"players": 3, "board": "nowhere"}, "rounds": []}), encoding="utf-8")
    line = one_error_line(run_cli("scenario", str(path)))
    assert "rules: unknown board 'nowhere'" in line


def test_cli_scenario_bad_json(tmp_path: Path) -> None:
    path = tmp_path / "scenario.json"
    path.write_text('{"rules": {"players": 3},', encoding="utf-8")
    line = one_error_line(run_cli("scenario", str(path)))
    assert "is not valid JSON" in line
