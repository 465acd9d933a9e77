"""Games between a person and bots for ``revolution serve``: one :class:`PlaySession` per game, many at once.

The game is played by the one game loop, :class:`~revolution_env.arena.runner.GameRunner`, the person's seat
left to decisions from outside: the bots act through ``act(observation, info)`` until the person has a decision
to make (``GameRunner.advance``). The environment checks every action against the mask and raises before anything
changes: an illegal move sent by hand is refused and the game goes on unchanged. The page gets what the person may
see (public holdings, the board, revealed bids), the decision asked (``revolution_env.Decision``) and the legal
moves derived from the environment's own action mask, never the bots' hidden bids or the deck order.
"""

from __future__ import annotations

import logging
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

log = logging.getLogger(__name__)
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
        self._layout: dict[str, Any] | None = None
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

    def events(self, since: int = 0) -> tuple[list[dict[str, Any]], int]:
        """Every event of the game from number ``since`` on (numbered across rounds), and how many there are."""
        out, n = [], 0
        for record in self.game.trace:
            events = record["events"]
            if n + len(events) > since:
                out.extend({**event, "n": n + i, "round": record["round"]}
                           for i, event in enumerate(events) if n + i >= since)  # fmt: skip
            n += len(events)
        return out, n

    def view(self, since: int = 0) -> dict[str, Any]:
        game = self.game
        final = None if game.final is None else {k: list(v) for k, v in game.final.items()}
        events, count = self.events(since)
        if self._layout is None:
            self._layout = describe_layout(game.layout)  # the same for the whole game
        return {
            "id": self.id,
            "layout": self._layout,
            "names": self.names,
            "seat": self.seat,
            "opponents": self.specs,
            "state": snapshot(game),
            "pending": self.pending(),
            "events": events,
            "event_count": count,
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


class ServerFull(RuntimeError):
    """Every place for a game is taken by a game still being played: HTTP 503, try again later."""


SEED_LIMIT = 2**63  # a seed the server takes stays a 64-bit integer in every file and tool that reads it back


class Sessions:
    """The games being played, by id.

    A game stays as long as its player comes back within ``idle_timeout`` seconds: a game being played is never
    dropped to make room for another. A game left alone longer expires; a finished one is saved first
    (``save(session)``, which records where in ``session.saved_as``), so that it can still be watched as a replay.
    At most ``max_games`` at once: when they are all taken, finished games make room (saved first, the one left
    alone longest first), and when none is finished a new game is refused with :class:`ServerFull` rather than
    taking someone's place. Games that ended this way are remembered by id (and where they were saved), so that a
    late request for one says what became of it.
    """

    def __init__(
        self,
        load_agent: Callable[..., Any],
        allowed: Sequence[str] = BUILT_IN,
        max_games: int = 256,
        idle_timeout: float = 1800.0,
        save: Callable[[PlaySession], None] | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if isinstance(max_games, bool) or not isinstance(max_games, int) or max_games < 1:
            raise ValueError(f"max games: expected a positive integer, got {max_games!r}")
        if not idle_timeout > 0:
            raise ValueError(f"idle timeout: expected a positive number of seconds, got {idle_timeout!r}")
        self._load_agent = load_agent
        self.allowed = list(dict.fromkeys(allowed))  # only these specs: a spec can name a file to load
        self._games: OrderedDict[str, PlaySession] = OrderedDict()  # least recently touched first
        self._ended: OrderedDict[str, str | None] = OrderedDict()  # id -> where it was saved (None: not saved)
        self._starting = 0  # games being set up, their places taken
        self._lock = threading.Lock()
        self.max_games = max_games
        self.idle_timeout = float(idle_timeout)
        self._save = save
        self._clock = clock

    def __len__(self) -> int:
        return len(self._games)

    def create(self, request: Any) -> PlaySession:
        if not isinstance(request, dict):
            raise GameRequestError("expected a JSON object with the game's options")
        unknown = [k for k in request if k not in (*RULE_OPTIONS, "seat", "opponents", "seed")]
        if unknown:
            raise GameRequestError(f"{str(unknown[0])[:40]!r}: unknown option")
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
                raise GameRequestError(f"opponents: {spec[:80]!r} is not offered (offered: {', '.join(self.allowed)})")
        seed = request.get("seed")
        if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed < SEED_LIMIT):
            shown = (
                repr(seed)
                if not isinstance(seed, int) or abs(seed) < 10**30
                else f"an integer of {len(str(seed))} digits"
            )
            raise GameRequestError(f"seed: expected an integer from 0 to 2**63 - 1, got {shown[:60]}")
        self._take_place()
        try:
            session = PlaySession(options, request.get("seat", 0), opponents, self._load_agent, seed)
        except BaseException:
            with self._lock:
                self._starting -= 1
            raise
        session.touched = self._clock()
        with self._lock:
            self._starting -= 1
            self._games[session.id] = session
        return session

    def _take_place(self) -> None:
        """Keep a place for a new game, making room if needed, or raise :class:`ServerFull`."""
        with self._lock:
            self._expire(self._clock())
            if len(self._games) + self._starting >= self.max_games:
                finished = [s for s in self._games.values() if s.game.over]
                for session in finished:  # least recently touched first
                    if len(self._games) + self._starting < self.max_games:
                        break
                    self._end(session)
            if len(self._games) + self._starting >= self.max_games:
                raise ServerFull("the server is full, try again later")
            self._starting += 1

    def get(self, game_id: str) -> PlaySession:
        """The game with this id, its clock started again; ``KeyError`` for one that is not (or no longer) here."""
        with self._lock:
            session = self._games.get(game_id)
            if session is None:
                raise KeyError(game_id)
            self._games.move_to_end(game_id)
            session.touched = self._clock()
        return session

    def ended(self, game_id: str) -> tuple[bool, str | None]:
        """Whether a game with this id was here and has ended, and where it was saved (None: nowhere)."""
        with self._lock:
            return game_id in self._ended, self._ended.get(game_id)

    def expire(self) -> int:
        """End the games left alone longer than the idle timeout (finished ones saved first); how many ended."""
        with self._lock:
            return self._expire(self._clock())

    def close(self) -> None:
        """Save every finished game not yet saved (the server is stopping)."""
        with self._lock:
            for session in list(self._games.values()):
                self._end(session)

    def _expire(self, now: float) -> int:
        ended = 0
        for session in list(self._games.values()):  # least recently touched first
            if now - session.touched <= self.idle_timeout:
                break
            ended += self._end(session)
        return ended

    def _end(self, session: PlaySession) -> bool:
        """Drop a game, saving it first when it is finished; False (and kept) when its player is acting now."""
        if not session.lock.acquire(blocking=False):
            return False
        try:
            if session.game.over and session.saved_as is None and self._save is not None:
                self._save(session)
        except OSError as exc:  # kept rather than lost: a later expiry (or the server's end) tries again
            log.warning("revolution serve: cannot save finished game %s (%s): it is kept", session.id, exc)
            return False
        finally:
            session.lock.release()
        del self._games[session.id]
        self._ended[session.id] = session.saved_as
        while len(self._ended) > 16 * self.max_games:
            self._ended.popitem(last=False)
        return True
