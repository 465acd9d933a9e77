"""`revolution play`: a person plays a whole game by typing, against bots.

A scripted person answers every prompt from what the terminal shows: a bid built from the holdings the prompt
names, and a numbered option from the list shown. What the person typed must be what the engine played (the
bids, and the cube or Guy bid behind each number); bad input is refused with a one-line reason and the game goes
on; ``quit`` and the end of input stop the game cleanly; the bots' pending bids are never shown.
"""

from __future__ import annotations

import argparse
import io
import re
import subprocess
import sys

import numpy as np
import pytest

import revolution_env
from revolution_env.engine.game import Decision
from revolution_env.frontends.terminal import Session, add_parser, check_bid, normalize_bid, parse_human_bid, play_game

OPTION = re.compile(r"^  (\d+)\) (.*)$", re.M)
HOLD = re.compile(r"you hold ([^;]*);")
HEADERS = {
    "Spy (": Decision.SPY,
    "Apothecary (": Decision.APOTHECARY_FIRST,
    "Apothecary: swap": Decision.APOTHECARY_SECOND,
    "You drew 'Remove": Decision.REMOVE,
    "Scheming: you place": Decision.GUY,
}


class Person:
    """Answers prompts like a simple person: all Force on ``force``, Blackmail on ``blackmail``, Gold on the
    targets of ``gold`` in turn (one per round), and the last numbered option of every list (never declining).
    ``script`` lines are typed first, whatever the prompt; ``stop_after`` ends the input (EOF)."""

    def __init__(self, out: io.StringIO, force="priest", blackmail="printer", gold=("printer",), script=()):
        self.out = out
        self.force, self.blackmail, self.gold = force, blackmail, gold
        self.script = list(script)
        self.typed: list[str] = []
        self.bids: list[tuple[int, str]] = []  # (round, text)
        self.picks: list[tuple[int, str, str]] = []  # (round, decision, option text)
        self.round = 0
        self._seen = 0

    def __call__(self, prompt: str) -> str:
        shown = self.out.getvalue()[self._seen :]
        self._seen = len(self.out.getvalue())
        for r in re.findall(r"^Round (\d+) ", shown, re.M):
            self.round = int(r)
        answer = self.script.pop(0) if self.script else self.answer(prompt, shown)
        self.typed.append(answer)
        self.out.write(prompt + answer + "\n")
        self._seen = len(self.out.getvalue())
        return answer

    def answer(self, prompt: str, shown: str) -> str:
        if prompt.startswith("Your bid"):
            held = {token: int(n) for n, token in re.findall(r"(\d+) (\w+)", HOLD.search(prompt).group(1))}
            target = {"force": self.force, "blackmail": self.blackmail}
            target["gold"] = self.gold[self.round % len(self.gold)]
            text = ", ".join(f"{n} {token} {target[token]}" for token, n in held.items())
            self.bids.append((self.round, text))
            return text
        if prompt.startswith("Your choice"):
            options = [(n, text) for n, text in OPTION.findall(shown) if n != "0"]
            kind = next(k for h, k in HEADERS.items() if h in shown)
            number, text = options[-1]
            self.picks.append((self.round, kind, text))
            return number
        return "y"


def play(options: dict, seat: int = 0, seed: int = 0, **person) -> tuple:
    out = io.StringIO()
    person = Person(out, **person)
    result = play_game(options, seat=seat, seed=seed, read=person, out=out)
    return result, person, out.getvalue()


def cube_text(game, choice) -> str:
    area, seat = choice
    owner = "Guy" if seat == game.layout.puppet else f"P{seat}"
    return f"{owner}'s cube in {game.layout.components.areas[area].name}"


def check_bids_played(result, person, seat: int) -> None:
    """Every bid the person typed is the bid the engine recorded for their seat that round."""
    game = result.game
    codec = revolution_env.raw_env(**game.rules.to_dict()).core.codec
    assert len(person.bids) == len(game.history)
    for (_, text), record in zip(person.bids, game.history):
        assert np.array_equal(codec.parse_bid(normalize_bid(text, codec.layout.target_names)), record["bids"][seat])


# --- whole games --------------------------------------------------------------------------------------------


def test_a_three_player_game_is_played_out_by_typing():
    result, person, text = play({"players": 3}, seat=1, seed=3, gold=("spy", "apothecary"), blackmail="apothecary")
    assert result.ended == "over" and result.final is not None
    check_bids_played(result, person, seat=1)
    assert "Final support (track + tokens + areas):" in text and "Winner:" in text
    assert text.rstrip().endswith(("You win!", "You share the win!", "You lose."))
    assert text.count("=== Round ") == result.game.round  # what happened, after every round


def test_the_number_typed_is_the_cube_the_spy_and_the_apothecary_take():
    result, person, _ = play({"players": 3}, seat=1, seed=3, gold=("spy", "apothecary"), blackmail="apothecary")
    history = result.game.history
    kinds = {kind for _, kind, _ in person.picks}
    assert {Decision.SPY, Decision.APOTHECARY_FIRST, Decision.APOTHECARY_SECOND} <= kinds
    for round_, kind, text in person.picks:
        record = history[round_ - 1]
        if kind == Decision.SPY:
            assert text == cube_text(result.game, record["spy"])
        else:
            assert text == cube_text(result.game, record["apothecary"][kind == Decision.APOTHECARY_SECOND])


def test_a_two_player_game_where_the_person_also_places_guys_bids():
    result, person, text = play({"players": 2, "max_rounds": 15}, seat=0, seed=2)
    game = result.game
    assert result.ended in ("over", "truncated") and result.final is not None
    check_bids_played(result, person, seat=0)
    guy_picks = [(r, t) for r, kind, t in person.picks if kind == Decision.GUY]
    assert guy_picks, "the person never placed a bid for Guy"
    words = ("tie", "beat")
    for round_, picked in guy_picks:
        placed = [c for c in game.history[round_ - 1]["guy"] if c is not None]
        described = {f"{words[m]} P{a}'s bid on {game.layout.target_names[c]}" for c, a, m in placed}
        assert picked.split(" (Guy places")[0] in described
    assert "Scheming: P1 has Guy" in text  # the bot's Guy bids are told too


def test_a_first_edition_game_where_the_person_draws_remove_cards():
    result, person, _ = play({"players": 3, "first_edition": True}, seat=0, seed=1, gold=("card",))
    assert result.final is not None
    removes = [(r, t) for r, kind, t in person.picks if kind == Decision.REMOVE]
    assert removes
    for round_, text in removes:
        assert text in [cube_text(result.game, c) for c in result.game.history[round_ - 1]["remove"]]


def test_the_bots_pending_bids_are_never_shown():
    """The person bids last (seat 2): the board before the bid shows only the previous round's bids."""
    out = io.StringIO()
    shown_rounds = []

    def person(prompt: str) -> str:
        text = out.getvalue()
        if prompt.startswith("Your bid"):
            now = int(re.findall(r"^Round (\d+) \(bidding", text, re.M)[-1])
            last = re.findall(r"^Bids of round (\d+):", text[text.rindex(f"Round {now} (bidding") :], re.M)
            shown_rounds.append((now, last))
            held = {token: int(n) for n, token in re.findall(r"(\d+) (\w+)", HOLD.search(prompt).group(1))}
            return ", ".join(f"{n} {token} priest" for token, n in held.items())
        return "1"

    play_game({"players": 3, "max_rounds": 5}, seat=2, seed=0, read=person, out=out)
    assert len(shown_rounds) == 5
    assert all(last == ([str(now - 1)] if now > 1 else []) for now, last in shown_rounds)


# --- bad input ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("typed", "message"),
    [
        ("5 gold printer, 1 force priest, 1 blackmail priest", "you hold 3 gold but placed 5"),
        ("1 force general, 1 blackmail priest, 3 gold priest", "the General is immune to Force"),
        ("1 force priest, 1 blackmail priest, 3 gold scheming", "unknown target 'scheming'"),
        ("1 force priest, 1 blackmail priest, 3 gold prnter", "unknown target 'prnter' (did you mean Printer?)"),
        ("1 force priest, 1 blackmail priest, 3 gold pr", "target 'pr' could be Priest or Printer"),
        ("give them everything", "cannot read 'give them everything'"),
        ("1 force priest", "you hold 1 blackmail but placed 0"),
        ("", "type your bid"),
    ],
)
def test_a_bad_bid_is_refused_with_its_reason_and_asked_again(typed, message):
    result, person, text = play({"players": 3, "max_rounds": 2}, script=[typed])
    line = next(ln for ln in text.splitlines() if message in ln)
    assert line.startswith(("not a legal bid: ", "type your bid"))
    assert result.ended == "truncated" and person.bids[0][0] == 1  # the same bid was asked again, then played
    check_bids_played(result, person, seat=0)


def test_a_bad_choice_is_refused_and_asked_again():
    """In the two-player Scheming phase the first Guy bids cannot be passed: 0, words and numbers past the list
    are refused, then a good number is taken."""
    out = io.StringIO()
    person = Person(out)
    typed = iter(["0", "99", "first", "pass"])

    def read(prompt: str) -> str:
        if prompt.startswith("Your choice"):
            bad = next(typed, None)
            if bad is not None:
                out.write(prompt + bad + "\n")
                return bad
        return person(prompt)

    result = play_game({"players": 2, "max_rounds": 2}, seat=0, seed=2, read=read, out=out)
    text = out.getvalue()
    assert text.count("you may not pass here: type a number from 1-") == 2  # "0" and "pass"
    assert "there is no choice 99: type a number from 1-" in text
    assert "type a number from 1-" in text.split("first\n", 1)[1].split("\n", 1)[0]
    assert result.final is not None and person.picks


def test_help_lists_the_targets_with_their_immunities_and_the_holdings():
    _, _, text = play({"players": 3, "max_rounds": 1}, script=["help"])
    assert re.search(r"^  General +immune to Force +wins: 1 support, 1 force, a cube in Fortress$", text, re.M)
    assert re.search(r"^  Rogue +immune to Force, Blackmail ", text, re.M)
    assert re.search(r"^  Printer +takes any token +wins: 10 support$", text, re.M)
    assert "You hold 1 force, 1 blackmail, 3 gold." in text


def test_bids_read_abbreviations_of_tokens_and_names():
    codec = revolution_env.raw_env(players=2).core.codec
    held = np.array([1, 2, 3])
    counts, warnings = parse_human_bid("1f Priest, 2 bm print; 2g scheming, 1 golds on aristo", codec, held)
    names = codec.layout.target_names
    expect = np.zeros((codec.T, 3), dtype=np.int64)
    expect[names.index("Priest"), 0] = 1
    expect[names.index("Printer"), 1] = 2
    expect[names.index("Scheming"), 2] = 2
    expect[names.index("Aristocrat"), 2] = 1
    assert np.array_equal(counts, expect) and warnings == []
    with pytest.raises(ValueError, match="the Scheming space takes Gold only, not Force"):
        parse_human_bid("1 force scheming, 2 blackmail printer, 3 gold printer", codec, held)


def test_tokens_past_the_sixth_character_are_a_warning_not_an_error():
    """docs/rules.md §3: later characters' tokens go to the bank; the bid is legal, so the person is only warned."""
    codec = revolution_env.raw_env(players=3).core.codec
    layout = codec.layout
    counts = np.zeros((codec.T, 3), dtype=np.int64)
    counts[4:11, 2] = 1  # Priest ... Apothecary: seven characters
    errors, warnings = check_bid(counts, np.array([0, 0, 7]), layout)
    assert errors == [] and warnings == ["only your first 6 characters count: your tokens on Apothecary go to the bank"]


def test_a_warned_bid_is_placed_only_when_confirmed():
    seven = ", ".join(f"1 gold {name}" for name in ("priest", "aristo", "merch", "printer", "rogue", "spy", "apoth"))
    answers = iter([seven, "n", seven, "y"])
    out = io.StringIO()
    read = lambda prompt: out.write(prompt) and next(answers)  # noqa: E731
    session = Session("player_0", {}, read, out, {"players": 3}, names=["P0", "P1", "P2"])
    session.runner.reset(0)
    env = session.env
    env.unwrapped.game.tokens[0] = (0, 0, 7)
    mask = env.observe("player_0")["action_mask"]
    action = session.human_bid(mask)
    assert out.getvalue().count("your tokens on Apothecary go to the bank. Bid anyway? [y/N] ") == 2
    codec = env.unwrapped.core.codec
    assert np.array_equal(codec.bid_counts(action, np.array([0, 0, 7]))[4:11, 2], [1] * 7)


# --- quitting, the end of input, the command line --------------------------------------------------------------


def run_play(*args: str, stdin: str) -> subprocess.CompletedProcess:
    cmd = [sys.executable, "-m", "revolution_env.frontends.terminal", *args]
    return subprocess.run(cmd, input=stdin, capture_output=True, text=True, timeout=60)


def test_quit_ends_the_game_cleanly():
    result, _, text = play({"players": 3}, script=["quit"])
    assert result.ended == "quit" and result.final is None
    assert text.rstrip().endswith("You quit in round 1.")


def test_the_end_of_input_stops_the_game_with_a_message():
    proc = run_play("--seed", "1", stdin="1 force priest, 1 blackmail priest, 3 gold printer\n")
    assert proc.returncode == 1 and proc.stderr == ""
    assert proc.stdout.rstrip().endswith("The input ended: the game stops in round 2.")


def test_a_whole_game_piped_through_standard_input():
    """The answers of a game played in-process, piped to the command: the same game, to the same end."""
    result, person, text = play({"players": 2, "max_rounds": 8}, seat=1, seed=7)
    proc = run_play("--players", "2", "--seat", "1", "--seed", "7", "--max-rounds", "8", stdin="\n".join(person.typed))
    assert proc.returncode == 0, proc.stderr
    final = text[text.rindex("Final support") :]
    assert proc.stdout.rstrip().endswith(final.rstrip())


def test_the_command_takes_the_rule_options_and_the_opponents():
    parser = argparse.ArgumentParser()
    add_parser(parser.add_subparsers(dest="command"))
    args = parser.parse_args(
        ["play", "--players", "4", "--seat", "2", "--opponents", "random", "random", "random", "--first-edition"]
    )
    assert (args.players, args.seat, args.opponents, args.first_edition) == (4, 2, ["random"] * 3, True)
    assert args.seed is None and callable(args.func)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--seat", "3"], "error: --seat: expected 0 to 2, got 3"),
        (
            ["--opponents", "random", "random", "random"],
            "error: --opponents: give one spec for all bots or one per bot",
        ),
        (["--opponents", "nobody"], "error: unknown agent spec 'nobody'"),
        (["--players", "5"], "error: players: expected 2, 3 or 4, got 5"),
    ],
)
def test_bad_options_are_refused_in_one_line(args, message):
    proc = run_play(*args, stdin="")
    assert proc.returncode == 2 and proc.stderr.startswith(message) and proc.stderr.count("\n") == 1


def test_every_known_bot_can_be_played_against():
    from revolution_env.agents.loading import known_specs

    for spec in known_specs():
        out = io.StringIO()
        result = play_game({"players": 3, "max_rounds": 3}, opponents=[spec], seed=0, read=Person(out), out=out)
        assert result.final is not None, spec
        assert f"P1: {spec} bot" in out.getvalue()
