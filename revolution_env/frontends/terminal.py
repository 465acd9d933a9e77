"""`revolution play`: a person plays a game of Revolution! in the terminal against bots.

The game runs through the AEC environment; the bots act through ``act(observation, info)`` and the person
answers the same decisions by typing. Before each of the person's decisions the board is shown with
:func:`revolution_env.env.text.render`, which holds only public information (holdings, board, support, the revealed
bids); the bots' pending bids are never shown. After each round the revealed bids, the winners and every Spy,
Apothecary, Remove and Scheming decision are told.

Answers are read line by line (``input()``), so a game can be scripted through a pipe. A bid is written like
``3 gold printer, 1 force priest`` (also ``3g print, 1f priest``: token letters and unique beginnings of names);
other decisions are picked by number from a list. ``help`` explains the decision, ``board`` shows the board again,
``quit`` ends the game. Exit status: 0 when the game is played out or quit, 1 when the input ends first.
"""

from __future__ import annotations

import argparse
import difflib
import re
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, TextIO

import numpy as np

from revolution_env.agents.loading import load_agent
from revolution_env.arena.runner import GameRunner, IllegalMoveError
from revolution_env.common.workers import exit_status
from revolution_env.engine.components import TOKEN_TYPES
from revolution_env.engine.game import APOTHECARY_FIRST, APOTHECARY_SECOND, BID, GUY, REMOVE, SPY, Game, Layout
from revolution_env.env import describe_action
from revolution_env.env.core import EnvConfig
from revolution_env.env.encoding import IllegalActionError
from revolution_env.env.text import gains_text, render, seat_names, tokens_text
from revolution_env.frontends.options import (
    OneLineParser,
    add_rule_options,
    non_negative_int,
    rules_from_args,
    run_command,
)

Reader = Callable[[str], str]

TOKEN_WORDS = {"f": "force", "b": "blackmail", "bm": "blackmail", "g": "gold"}
BID_EXAMPLE = "3 gold printer, 1 force priest"


class Quit(Exception):
    """The person typed ``quit``, or the input ended (``eof``)."""

    def __init__(self, eof: bool = False) -> None:
        super().__init__("end of input" if eof else "quit")
        self.eof = eof


@dataclass
class PlayResult:
    """How a played game ended: ``ended`` is ``over``, ``truncated``, ``quit``, ``end of input`` or
    ``illegal move`` (a bot broke the mask); ``final`` is the engine's final score when the game was played out."""

    ended: str
    game: Game
    final: dict[str, Any] | None = None
    human_won: bool = False


# --- reading a bid -----------------------------------------------------------------------------------------


def _resolve_name(word: str, names: Sequence[str], what: str) -> str:
    """The name ``word`` stands for: exact, or a unique beginning (case ignored); else a one-line ValueError."""
    lower = {n.lower(): n for n in names}
    w = word.strip().lower()
    if w in lower:
        return lower[w]
    starts = [n for n in names if n.lower().startswith(w)]
    if len(starts) == 1:
        return starts[0]
    if len(starts) > 1:
        raise ValueError(f"{what} {word!r} could be {' or '.join(starts)}")
    close = difflib.get_close_matches(w, list(lower), n=1, cutoff=0.6)
    hint = f"did you mean {lower[close[0]]}?" if close else f"one of: {', '.join(names)}"
    raise ValueError(f"unknown {what} {word!r} ({hint})")


def _token_word(word: str) -> str:
    w = word.lower()
    if w in TOKEN_WORDS:
        return TOKEN_WORDS[w]
    if len(w) > 1 and w.endswith("s") and w[:-1] in TOKEN_TYPES:
        return w[:-1]
    return _resolve_name(w, TOKEN_TYPES, "token")


def normalize_bid(text: str, target_names: Sequence[str]) -> str:
    """The bid in the codec's words: ``3g print`` -> ``3 gold Printer``. Parts it cannot read are kept as they
    are, for the codec to refuse."""
    parts = []
    for part in re.split(r"\s*[,;]\s*", text.strip()):
        m = re.fullmatch(r"(\d+)\s*([a-zA-Z]+)\s+(?:on\s+)?([a-zA-Z][a-zA-Z ]*)", part.strip())
        if not m:
            parts.append(part)
            continue
        token = _token_word(m.group(2))
        target = _resolve_name(m.group(3), target_names, "target")
        parts.append(f"{m.group(1)} {token} {target}")
    return ", ".join(parts)


def target_phrase(layout: Layout, target: int) -> str:
    """``the General``, ``the Scheming space``, ``the Card space``."""
    name = layout.target_names[target]
    return f"the {name} space" if target in (layout.scheming, layout.card_space) else f"the {name}"


def check_bid(counts: np.ndarray, held: np.ndarray, layout: Layout) -> tuple[list[str], list[str]]:
    """Problems with a bid given as (T, 3) counts: ``errors`` (immune targets, tokens not placed exactly, D3)
    and ``warnings`` (tokens that the rules send to the bank with no effect: past the sixth character, Gold past
    the limit on the Card space)."""
    errors = []
    for c, t in np.argwhere((counts > 0) & ~layout.legal):
        if c == layout.scheming:
            errors.append(f"the Scheming space takes Gold only, not {TOKEN_TYPES[t].capitalize()}")
        else:
            errors.append(f"{target_phrase(layout, int(c))} is immune to {TOKEN_TYPES[t].capitalize()}")
    placed = counts.sum(0)
    for t, token in enumerate(TOKEN_TYPES):
        if placed[t] != held[t]:
            errors.append(f"you hold {int(held[t])} {token} but placed {int(placed[t])}")
    warnings = []
    chars = np.flatnonzero(counts[: layout.n_characters].any(1))
    limit = layout.components.max_characters_per_bid
    if len(chars) > limit:
        late = ", ".join(layout.target_names[c] for c in chars[limit:])
        warnings.append(f"only your first {limit} characters count: your tokens on {late} go to the bank")
    if layout.card_space >= 0:
        most = layout.components.card_max_gold
        if counts[layout.card_space, 2] > most:
            warnings.append(f"the Card space draws at most {most} cards: the Gold past {most} only goes to the bank")
    return errors, warnings


def parse_human_bid(text: str, codec: Any, held: np.ndarray) -> tuple[np.ndarray, list[str]]:
    """(T, 3) counts and warnings for a typed bid; a ValueError with a one-line message if it is not a legal
    bid for these holdings."""
    layout = codec.layout
    try:
        counts = codec.parse_bid(normalize_bid(text, layout.target_names))
    except OverflowError:
        raise ValueError("that is more tokens than the game holds") from None
    errors, warnings = check_bid(counts, held, layout)
    if errors:
        raise ValueError("; ".join(errors))
    return counts, warnings


# --- describing ----------------------------------------------------------------------------------------------


def holdings_text(row: Sequence[int]) -> str:
    parts = [f"{int(n)} {token}" for n, token in zip(row, TOKEN_TYPES) if n]
    return ", ".join(parts) if parts else "nothing"


def targets_help(layout: Layout) -> str:
    lines = ["Bid targets, in resolution order:"]
    for c, name in enumerate(layout.target_names):
        immune = [TOKEN_TYPES[t].capitalize() for t in range(3) if not layout.legal[c, t]]
        takes = f"immune to {', '.join(immune)}" if immune else "takes any token"
        lines.append(f"  {name:<11} {takes:<29} wins: {gains_text(layout, c)}")
    return "\n".join(lines)


def bid_help(layout: Layout, held: np.ndarray) -> str:
    limit = layout.components.max_characters_per_bid
    return "\n".join(
        [
            targets_help(layout),
            f"You hold {holdings_text(held)}. Place every token; only your first {limit} characters count.",
            "Strength: one Force beats any Blackmail and Gold; at equal Force, more Blackmail wins; then more Gold.",
            f"Write a bid like '{BID_EXAMPLE}' (or '3g print, 1f priest'). Commands: help, board, quit.",
        ]
    )


EVENT_VERBS = {
    SPY: ("Spy", "replaces", "declines"),
    APOTHECARY_FIRST: ("Apothecary", "picks", "declines"),
    APOTHECARY_SECOND: ("Apothecary", "swaps it with", None),
    REMOVE: ("Remove 1 Influence", "removes", None),
    GUY: ("Scheming", "has Guy", "passes: Guy places no more bids this round"),
}


def choice_text(env: Any, agent: str, value: int) -> str:
    """A choice without its decision's name: ``P1's cube in Tavern``, ``beat P0's bid on Printer (Guy places 2G)``."""
    core = env.unwrapped.core
    kind = core.kind(core.seat_of[agent])
    action = np.zeros(len(core.codec.nvec), dtype=np.int64)
    action[0] = value
    text = describe_action(env, agent, action).split(": ", 1)[1]
    if kind == GUY and value:
        character, answered, mode = core.codec.choice(value, core.seat_of[agent], GUY)
        text += f" (Guy places {tokens_text(core.game.guy_bid(character, answered, mode))})"
    return text


def event_text(kind: str, who: str, value: int, text: str) -> str:
    label, verb, declined = EVENT_VERBS[kind]
    return f"  {label}: {who} {declined if value == 0 else verb + ' ' + text}"


def round_report(game: Game, names: Sequence[str], round_: int, events: Sequence[str]) -> str:
    """What happened in a round, seat by seat: the targets each won, the ties, and the Scheming, Spy,
    Apothecary and Remove decisions. (The bids themselves are on the board shown next.)"""
    L = game.layout
    lines = [f"=== Round {round_} resolved ==="]
    for s in range(L.seats):
        won = [L.target_names[c] for c in np.flatnonzero(game.winners == s)]
        if won:
            lines.append(f"  {names[s]} won {', '.join(won)}")
    contested = game.revealed[:, : L.n_characters].any((0, 2))
    tied = [L.target_names[c] for c in np.flatnonzero(contested & (game.winners[: L.n_characters] == -1))]
    tied = [name for name in tied if L.target_names.index(name) != L.card_space]
    if tied:
        lines.append(f"  tied, nobody won: {', '.join(tied)}")
    lines += events
    return "\n".join(lines)


def decision_header(game: Game, kind: str, first_pick: str | None) -> str:
    """What the pending Scheming, Spy, Apothecary or Remove decision is about."""
    L = game.layout
    if kind == GUY:
        placed = int(game.revealed[L.puppet, : L.n_characters].any(1).sum())
        return (
            f"Scheming: you place Guy's bid number {placed + 1} (Guy holds {tokens_text(game.tokens[L.puppet])}). "
            "Guy ties or beats a bid already on a character."
        )
    if kind == REMOVE:
        return "You drew 'Remove 1 Influence': remove one opponent cube from the board."
    special = L.spy if kind == SPY else L.apothecary
    winner = int(game.winners[special])
    by = "Guy won it and you placed Guy's last bid" if winner == L.puppet else "you won it"
    if kind == SPY:
        if winner == L.puppet:
            return f"Spy ({by}): replace a player's cube with one of Guy's, or decline."
        return f"Spy ({by}): replace another seat's cube with one of yours, or decline."
    if kind == APOTHECARY_FIRST:
        return f"Apothecary ({by}): pick the first of two cubes to swap, or decline."
    return f"Apothecary: swap {first_pick} with which cube?"


# --- the game ------------------------------------------------------------------------------------------------


@dataclass
class Session:
    """One person's game against bots: the seats (the person and the bots, played by a :class:`GameRunner`),
    and the terminal."""

    human: str
    bots: dict[str, Any]
    read: Reader
    out: TextIO
    options: dict[str, Any] = field(default_factory=dict)
    names: list[str] = field(default_factory=list)
    events: list[str] = field(default_factory=list)
    first_pick: str | None = None
    runner: GameRunner | None = None
    _round: int = 1

    def __post_init__(self) -> None:
        players = EnvConfig.from_options(self.options).rules.players
        seats = [_Seat(self, f"player_{i}") for i in range(players)]
        self.runner = GameRunner(seats, self.options)

    @property
    def env(self) -> Any:
        return self.runner.env

    @property
    def game(self) -> Game:
        return self.runner.game

    @property
    def seat(self) -> int:
        return self.env.unwrapped.core.seat_of[self.human]

    def say(self, text: str = "") -> None:
        self.out.write(text + "\n")
        self.out.flush()

    def ask(self, prompt: str) -> str:
        """One line of input; ``quit`` or the end of input raise :class:`Quit`."""
        try:
            line = self.read(prompt)
        except EOFError:
            raise Quit(eof=True) from None
        if line.strip().lower() in ("quit", "exit", "q"):
            raise Quit()
        return line.strip()

    def board(self) -> str:
        return render(self.game, self.names)

    # --- the person's decisions ---

    def human_bid(self, mask: np.ndarray) -> np.ndarray:
        codec = self.env.unwrapped.core.codec
        held = self.game.tokens[self.seat].copy()
        self.say(self.board())
        self.say()
        if not held.any():
            self.say("You hold no tokens: you bid nothing this round.")
            return codec.action_from_bid(np.zeros((codec.T, 3), dtype=np.int64))
        prompt = f"Your bid (you hold {holdings_text(held)}; 'help' for the targets): "
        while True:
            text = self.ask(prompt)
            if text.lower() in ("help", "?", "h"):
                self.say(bid_help(codec.layout, held))
                continue
            if text.lower() == "board":
                self.say(self.board())
                continue
            if not text:
                self.say(f"type your bid, like '{BID_EXAMPLE}' ('help' lists the targets)")
                continue
            try:
                counts, warnings = parse_human_bid(text, codec, held)
                action = codec.check(codec.action_from_bid(counts), mask, self.human, BID)
            except (ValueError, IllegalActionError) as exc:
                self.say(f"not a legal bid: {exc}")
                continue
            if warnings and not self.confirm("; ".join(warnings)):
                continue
            self.say(f"You bid: {describe_action(self.env, self.human, action).split(': ', 1)[1]}")
            return action

    def confirm(self, warning: str) -> bool:
        answer = self.ask(f"note: {warning}. Bid anyway? [y/N] ")
        return answer.lower() in ("y", "yes")

    def human_choice(self, kind: str, mask: np.ndarray) -> int:
        codec = self.env.unwrapped.core.codec
        values = np.flatnonzero(mask[: codec.C]).tolist()
        options = [v for v in values if v != 0]
        can_decline = 0 in values
        decline_word = "pass" if kind == GUY else "decline"
        listing = [f"  {i}) {choice_text(self.env, self.human, v)}" for i, v in enumerate(options, start=1)]
        if can_decline:
            listing.append(f"  0) {decline_word}")
        header = decision_header(self.game, kind, self.first_pick)
        self.say(self.board())
        self.say()
        self.say(header)
        self.say("\n".join(listing))
        low = 0 if can_decline else 1
        span = f"{low}-{len(options)}" if len(options) > low else str(low)
        while True:
            text = self.ask(f"Your choice [{span}]: ")
            if text.lower() in ("help", "?", "h"):
                self.say(header)
                self.say("\n".join(listing))
                self.say(f"Type the number of a choice{f' (0 to {decline_word})' if can_decline else ''}.")
                continue
            if text.lower() == "board":
                self.say(self.board())
                continue
            if text.lower() in ("decline", "pass", "no", "none"):
                if can_decline:
                    return 0
                text = "0"
            if not (text.isascii() and text.isdigit()):  # "²" is a digit to isdigit, not a number to int
                self.say(f"type a number from {span} ('help' repeats the choices)")
                continue
            i = int(text)
            if i == 0 and can_decline:
                return 0
            if 1 <= i <= len(options):
                return options[i - 1]
            why = f"you may not {decline_word} here" if i == 0 else f"there is no choice {i}"
            self.say(f"{why}: type a number from {span}")

    # --- one step of the game ---

    def decide(self, agent: str, observation: dict[str, np.ndarray], info: dict[str, Any]) -> np.ndarray:
        kind = info["decision"]
        if agent == self.human:
            if kind == BID:
                return self.human_bid(observation["action_mask"])
            value = self.human_choice(kind, observation["action_mask"])
            action = np.zeros(len(self.env.unwrapped.core.codec.nvec), dtype=np.int64)
            action[0] = value
        else:
            action = np.asarray(self.bots[agent].act(observation, info))
            if kind == BID:
                return action
            value = int(action[0])
        self.note(agent, kind, value)
        return action

    def note(self, agent: str, kind: str, value: int) -> None:
        """Tell a Scheming, Spy, Apothecary or Remove decision, and keep it for the round's report."""
        text = choice_text(self.env, agent, value) if value else ""
        if kind == APOTHECARY_FIRST:
            self.first_pick = text
        who = self.names[self.env.unwrapped.core.seat_of[agent]]
        line = event_text(kind, who, value, text)
        self.events.append(line)
        if agent != self.human:
            self.say(line.strip())

    def run(self) -> PlayResult:
        """Play the game the runner has started (:meth:`GameRunner.reset`) to its end."""
        self._round = self.game.round
        try:
            self.runner.run(on_step=self._after_step)
        except IllegalMoveError:
            return PlayResult("illegal move", self.game)
        return self.finish()

    def _after_step(self, env: Any, agent: str, observation: Any, info: dict[str, Any], action: np.ndarray) -> None:
        """After every decision: at the end of a round, tell what happened in it."""
        game = self.game
        if game.round != self._round or game.over:
            self.say(round_report(game, self.names, self._round, self.events))
            self.say()
            self.events = []
            self._round = game.round

    def finish(self) -> PlayResult:
        game = self.game
        self.say(self.board())
        won = self.seat in game.final["winners"]
        shared = len(game.final["winners"]) > 1
        self.say()
        self.say("You win!" if won and not shared else "You share the win!" if won else "You lose.")
        return PlayResult("truncated" if game.truncated else "over", game, game.final, won)


class _Seat:
    """One seat of the terminal game as an agent for the runner: the person (asked at the terminal) or a bot;
    either way the session tells the decision."""

    def __init__(self, session: Session, agent: str) -> None:
        self.session, self.agent = session, agent

    @property
    def name(self) -> str:
        bot = self.session.bots.get(self.agent)
        return "you" if bot is None else bot.name

    def reset(self, seed: int | None = None) -> None:
        bot = self.session.bots.get(self.agent)
        if bot is not None:
            bot.reset(seed)

    def act(self, observation: dict[str, np.ndarray], info: dict[str, Any]) -> np.ndarray:
        return self.session.decide(self.agent, observation, info)


def make_bots(specs: Sequence[str], agents: Sequence[str], options: dict[str, Any]) -> dict[str, tuple[str, Any]]:
    """(spec, bot) per agent, from agent specs: one for all, or one per agent."""
    if len(specs) == 1:
        specs = list(specs) * len(agents)
    if len(specs) != len(agents):
        raise ValueError(f"--opponents: give one spec for all bots or one per bot ({len(agents)}), got {len(specs)}")
    return {agent: (spec, load_agent(spec, **options)) for agent, spec in zip(agents, specs)}


def play_game(
    options: dict[str, Any] | None = None,
    seat: int = 0,
    opponents: Sequence[str] = ("random",),
    seed: int | None = None,
    read: Reader = input,
    out: TextIO | None = None,
) -> PlayResult:
    """Play one game: the person at ``seat`` answers through ``read(prompt) -> line`` (``input`` by default),
    the other seats are bots built from ``opponents`` (one spec for all, or one per bot). ``options`` are the
    environment's rule options. Returns how the game ended; ``quit`` and the end of input end it cleanly."""
    options = dict(options or {})
    out = out if out is not None else sys.stdout
    players = EnvConfig.from_options(options).rules.players
    agents = [f"player_{i}" for i in range(players)]
    if not 0 <= seat < len(agents):
        raise ValueError(f"--seat: expected 0 to {len(agents) - 1}, got {seat}")
    human = agents[seat]
    others = [a for a in agents if a != human]
    bots = make_bots(opponents, others, options)
    session = Session(human, {agent: bot for agent, (_, bot) in bots.items()}, read, out, options)
    session.runner.reset(seed)
    names = seat_names(session.game)
    names[seat] += " (you)"
    session.names = names
    session.say(f"Revolution! with {len(agents)} players. You are P{seat}.")
    for agent in others:
        s = session.env.unwrapped.core.seat_of[agent]
        session.say(f"  P{s}: {bots[agent][0]} bot")
    if session.game.layout.puppet >= 0:
        session.say("  Guy: the puppet, whose bids you and your opponent place in the Scheming phase")
    session.say(f"Bid like '{BID_EXAMPLE}'. Type 'help' at any prompt, 'quit' to stop.\n")
    try:
        result = session.run()
    except Quit as q:
        game = session.game
        if q.eof:
            session.say(f"\nThe input ended: the game stops in round {game.round}.")
            return PlayResult("end of input", game)
        session.say(f"You quit in round {game.round}.")
        return PlayResult("quit", game)
    if result.ended == "illegal move":
        session.say("A bot made an illegal move: the game ends.")
    return result


# --- the command line ----------------------------------------------------------------------------------------


def _stdin_line(prompt: str) -> str:
    """``input()``, echoing the answer when it comes from a pipe so that a scripted game reads like a dialogue."""
    line = input(prompt)
    if not sys.stdin.isatty():
        print(line)
    return line


def cmd_play(args: argparse.Namespace) -> int:
    options = rules_from_args(args).to_dict()
    try:
        result = play_game(options, args.seat, args.opponents, args.seed, read=_stdin_line)
    except KeyboardInterrupt as exc:  # Ctrl-C, or SIGTERM (revolution_env.common.workers)
        print("\ninterrupted: the game stops.")
        return exit_status(exc)
    return 1 if result.ended in ("end of input", "illegal move") else 0


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Register ``revolution play``."""

    p = subparsers.add_parser(
        "play",
        help="play a game in the terminal against bots",
        description="Play Revolution! against bots: type your bids ('3 gold printer, 1 force priest') and choices.",
    )
    add_rule_options(p)
    p.add_argument("--seat", type=int, default=0, help="your seat (0 bids first in the listing; default 0)")
    p.add_argument(
        "--opponents",
        nargs="+",
        default=["random"],
        metavar="SPEC",
        help="agent specs for the other seats: one for all, or one per bot (random, a heuristic, a checkpoint)",
    )
    p.add_argument("--seed", type=non_negative_int, default=None, help="seed of the game and the bots")
    p.set_defaults(func=cmd_play)
    return p


def main(argv: list[str] | None = None) -> int:
    parser = OneLineParser(prog="revolution")
    add_parser(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(["play", *(sys.argv[1:] if argv is None else argv)])
    return run_command(args)


if __name__ == "__main__":
    raise SystemExit(main())
