"""Games between a person and bots for ``revolution serve``: one :class:`PlaySession` per game, many at once.

The game is played by the one game loop, :class:`~revolution_env.arena.runner.GameRunner`, the person's seat
left to decisions from outside: the bots act through ``act(observation, info)`` until the person has a decision
to make (``GameRunner.advance``). The environment checks every action against the mask and raises before anything
changes: an illegal move sent by hand is refused and the game goes on unchanged. The page gets what the person may
see (public holdings, the board, revealed bids), the decision asked (``revolution_env.Decision``) and the legal
moves derived from the environment's own action mask, never the bots' hidden bids or the deck order.
"""

from __future__ import annotations

import secrets
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from revolution_env.agents.heuristics import HEURISTICS
from revolution_env.agents.loading import display_name
from revolution_env.arena.runner import GameRunner
from revolution_env.engine.components import TOKEN_TYPES
from revolution_env.engine.game import BID, GUY, RULE_SWITCHES, Decision, RulesError, check_players
from revolution_env.engine.scenario import export_game
from revolution_env.env import describe_action
from revolution_env.env.core import EnvConfig
from revolution_env.env.encoding import IllegalActionError
from revolution_env.frontends.web.trace import TracedGame, describe_layout, snapshot

BUILT_IN = ("random", *HEURISTICS)  # what the page offers without --agents: the heuristics, not their held-out variants
RULE_OPTIONS = ("players", "bid_refunds", "area_control_bonus", "first_edition", "max_rounds")


class GameRequestError(ValueError):
    """A request the game cannot take (bad options, an illegal move, not the person's turn): HTTP 400."""


def _flag(options: dict[str, Any], name: str) -> bool | None:
    value = options.get(name)
    if value is None:
        return None
    if not isinstance(value, bool):
        raise GameRequestError(f"{name}: expected true or false, got {value!r}")
    return value


def game_options(request: dict[str, Any]) -> dict[str, Any]:
    """The environment's rule options from a new-game request (unknown keys refused)."""
    options: dict[str, Any] = {}
    players = request.get("players", 3)
    try:
        check_players(players)
    except RulesError as error:
        raise GameRequestError(str(error)) from None
    options["players"] = players
    for name in RULE_SWITCHES:
        value = _flag(request, name)
        if value is not None:
            options[name] = value
    if request.get("max_rounds") is not None:
        options["max_rounds"] = request["max_rounds"]
    return options


class PlaySession:
    """One game: the person at ``seat``, bots in the other seats (``opponents``: one spec per bot)."""

    def __init__(
        self,
        options: dict[str, Any],
        seat: int,
        opponents: Sequence[str],
        load_agent: Callable[..., Any],
        seed: int | None = None,
    ) -> None:
        try:
            players = EnvConfig.from_options(options).rules.players
        except ValueError as exc:
            raise GameRequestError(str(exc)) from None
        if isinstance(seat, bool) or not isinstance(seat, int) or not 0 <= seat < players:
            raise GameRequestError(f"seat: expected 0 to {players - 1}, got {seat!r}")
        if len(opponents) != players - 1:
            raise GameRequestError(f"opponents: {players} players need {players - 1} bots, got {len(opponents)}")
        self.options = options
        self.id = secrets.token_hex(8)
        self.lock = threading.Lock()
        self.touched = time.monotonic()
        self.seat = seat
        self.specs = list(opponents)
        bots = []
        for spec in opponents:
            try:
                bots.append(load_agent(spec, **options))
            except (ValueError, ImportError, OSError) as exc:
                raise GameRequestError(f"opponent {spec!r}: {exc}") from None
        specs = [*self.specs[:seat], None, *self.specs[seat:]]  # None: the person's seat, decided from outside
        self.names = [f"P{s} {'(you)' if spec is None else display_name(spec, folder=False)}"
                      for s, spec in enumerate(specs)]  # fmt: skip
        self.runner = GameRunner([*bots[:seat], None, *bots[seat:]], options, self.names)
        self.env = self.runner.env
        self.human = self.env.possible_agents[seat]
        # the bots' seeds: seed + 1, seed + 2, ... in seat order, the person's seat left out
        bot_seeds = [None if seed is None else seed + 1 + i for i in range(players - 1)]
        self.runner.reset(seed, [*bot_seeds[:seat], None, *bot_seeds[seat:]])
        self.game = TracedGame.adopt(self.runner.game)
        if self.game.layout.puppet >= 0:
            self.names.append("Guy")
        self.saved_as: str | None = None
        self.runner.advance()

    @property
    def core(self) -> Any:
        return self.env.unwrapped.core

    # --- the person's moves ---

    def act(self, action: Any) -> None:
        """Apply the person's action (the environment's MultiDiscrete action as a list of integers); refused
        with :class:`GameRequestError` (and nothing changed) when it is not legal."""
        if self.game.over:
            raise GameRequestError("the game is over")
        if self.env.agent_selection != self.human:  # pragma: no cover - the bots always finish their turns
            raise GameRequestError("it is not your turn")
        nvec = self.core.codec.nvec
        if (
            not isinstance(action, list)
            or len(action) != len(nvec)
            or not all(isinstance(x, int) and not isinstance(x, bool) for x in action)
        ):
            raise GameRequestError(f"action: expected a list of {len(nvec)} integers (the MultiDiscrete action)")
        try:
            self.runner.apply_outside(np.array(action, dtype=np.int64))
        except IllegalActionError as exc:
            raise GameRequestError(f"illegal move: {exc}") from None
        except OverflowError:
            raise GameRequestError("illegal move: a value is out of range") from None
        self.runner.advance()

    # --- what the page sees ---

    def pending(self) -> dict[str, Any] | None:
        """The person's decision and its legal moves, from the environment's mask."""
        if self.game.over:
            return None
        codec = self.core.codec
        mask = self.env.observe(self.human)["action_mask"]
        kind = Decision(self.env.infos[self.human]["decision"])
        out: dict[str, Any] = {"decision": str(kind), "code": int(kind), "size": len(codec.nvec)}
        if kind == BID:
            held = self.game.tokens[self.seat]
            tokens = []
            for t in range(3):
                for j in range(int(held[t])):
                    dim = int(codec.block[t]) + j
                    start = int(codec.offsets[dim])
                    allowed = np.flatnonzero(mask[start : start + codec.T]).tolist()
                    tokens.append({"dim": dim, "type": TOKEN_TYPES[t], "allowed": allowed})
            out["tokens"] = tokens
            return out
        values = np.flatnonzero(mask[: codec.C]).tolist()
        choices = []
        for value in values:
            if value == 0:
                continue
            choice = codec.choice(value, self.seat, kind)
            action = codec.action_from_choice(choice, self.seat, kind)
            text = describe_action(self.env, self.human, action).split(": ", 1)[1]
            if kind == GUY:
                c, answered, mode = choice
                tokens = self.game.guy_bid(c, answered, mode).tolist()
                choices.append({"value": value, "text": text, "target": c, "answer": answered, "mode": mode,
                                "tokens": tokens})  # fmt: skip
            else:
                area, cube = choice
                choices.append({"value": value, "text": text, "area": area, "cube": cube})
        out["choices"] = choices
        out["can_decline"] = bool(0 in values)
        if kind == Decision.APOTHECARY_SECOND and self.game._apothecary_first is not None:
            out["first_pick"] = list(self.game._apothecary_first)
        return out

    def events(self, since: int = 0) -> list[dict[str, Any]]:
        """Every event of the game from number ``since`` on (numbered across rounds)."""
        out, n = [], 0
        for record in self.game.trace:
            for event in record["events"]:
                if n >= since:
                    out.append({**event, "n": n, "round": record["round"]})
                n += 1
        return out

    def view(self, since: int = 0) -> dict[str, Any]:
        game = self.game
        final = None if game.final is None else {k: list(v) for k, v in game.final.items()}
        events = self.events(since)
        return {
            "id": self.id,
            "layout": describe_layout(game.layout),
            "names": self.names,
            "seat": self.seat,
            "opponents": self.specs,
            "state": snapshot(game),
            "pending": self.pending(),
            "events": events,
            "event_count": since + len(events),
            "over": game.over,
            "truncated": bool(game.truncated),
            "final": final,
            "saved_as": self.saved_as,
        }

    def export(self) -> dict[str, Any]:
        """The finished game as a scenario that replays it (refused before the end: it holds the seed)."""
        if not self.game.over:
            raise GameRequestError("the game is not over yet: only a finished game can be saved as a replay")
        data = export_game(self.game)
        data["description"] = f"Played in the browser: {', '.join(self.names[: self.game.layout.players])}"
        return data


class Sessions:
    """The games being played, by id; the oldest untouched ones are dropped past ``limit``."""

    def __init__(self, load_agent: Callable[..., Any], allowed: Sequence[str] = BUILT_IN, limit: int = 64) -> None:
        self._load_agent = load_agent
        self.allowed = list(dict.fromkeys(allowed))  # only these specs: a spec can name a file to load
        self._games: OrderedDict[str, PlaySession] = OrderedDict()
        self._lock = threading.Lock()
        self.limit = limit

    def create(self, request: dict[str, Any]) -> PlaySession:
        if not isinstance(request, dict):
            raise GameRequestError("expected a JSON object with the game's options")
        unknown = [k for k in request if k not in (*RULE_OPTIONS, "seat", "opponents", "seed")]
        if unknown:
            raise GameRequestError(f"{unknown[0]}: unknown option")
        options = game_options(request)
        opponents = request.get("opponents", ["value"])
        players = options["players"]
        if isinstance(opponents, str):
            opponents = [opponents] * (players - 1)
        if not isinstance(opponents, list) or not all(isinstance(x, str) for x in opponents):
            raise GameRequestError("opponents: expected a list of agent specs")
        if len(opponents) == 1:
            opponents = opponents * (players - 1)
        for spec in opponents:
            if spec not in self.allowed:
                raise GameRequestError(f"opponents: {spec!r} is not offered (offered: {', '.join(self.allowed)})")
        seed = request.get("seed")
        if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int) or seed < 0):
            raise GameRequestError(f"seed: expected a non-negative integer, got {seed!r}")
        session = PlaySession(options, request.get("seat", 0), opponents, self._load_agent, seed)
        with self._lock:
            self._games[session.id] = session
            while len(self._games) > self.limit:
                self._games.popitem(last=False)
        return session

    def get(self, game_id: str) -> PlaySession:
        with self._lock:
            session = self._games.get(game_id)
            if session is None:
                raise KeyError(game_id)
            self._games.move_to_end(game_id)
        session.touched = time.monotonic()
        return session
