"""Game states and scenarios as JSON (docs/scenarios.md).

* :func:`state_dict` gives the canonical state of a game; :func:`dumps_state` writes it as text.
* :func:`run_scenario` plays a scenario (a start position and the rounds to play from it) and returns the game.
  A scenario that cannot be played raises :class:`ScenarioError`, whose message says what is wrong and where:
  ``round 2, seat 1, bids.Printer.force: ...``.
* :func:`export_game` turns any game played on the engine into a scenario that replays to the same state.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator
from typing import Any

import numpy as np

from revolution_env.engine.components import TOKEN_TYPES, BoardError
from revolution_env.engine.game import (
    APOTHECARY_FIRST,
    APOTHECARY_SECOND,
    BEAT,
    BID,
    BIDDING,
    GUY,
    OVER,
    REMOVE,
    SPY,
    TIE,
    Game,
    IllegalAction,
    Rules,
    RulesError,
    UnrecordedDraw,
    clean_bids,
    make_layout,
    priority_by_rule,
)

MODES = ("tie", "beat")
MAX_COUNT = 2**31 - 1  # counts, support and rounds beyond this are no game position (and would overflow int64 sums)
SCENARIO_KEYS = ("description", "covers", "rules", "seed", "start", "rounds", "expect", "expect_error")
START_KEYS = ("round", "support", "tokens", "bank", "board", "supply", "deck")
ROUND_KEYS = ("bids", "priority", "guy", "spy", "apothecary", "remove", "reshuffles")
# Where a scenario's chance outcomes come from: its record (``start.deck``, each round's ``reshuffles``, D9's
# ``priority``), or, for games saved before records held them, the generator of its ``seed``.
DRAWS = ("record", "seed")


class ScenarioError(ValueError):
    """A scenario that cannot be played. ``str(err)`` is one line naming the round, seat and field."""

    def __init__(self, message: str, *, round: int | None = None, seat: int | None = None, field: str = "") -> None:
        where = []
        if round is not None:
            where.append(f"round {round}")
        if seat is not None:
            where.append(f"seat {seat}")
        if field:
            where.append(field)
        super().__init__(f"{', '.join(where)}: {message}" if where else message)
        self.round, self.seat, self.field = round, seat, field


# --- the canonical state ------------------------------------------------------------------------------------


def _tokens(row: np.ndarray) -> dict[str, int]:
    return {t: int(n) for t, n in zip(TOKEN_TYPES, row)}


def state_dict(game: Game) -> dict[str, Any]:
    """The whole state in the canonical JSON form of docs/scenarios.md §2 (hidden information included)."""
    L = game.layout
    state: dict[str, Any] = {
        "rules": game.rules.to_dict(),
        "round": game.round,
        "game_over": game.game_over,
        "truncated": game.truncated,
        "support": game.support.tolist(),
        "tokens": [_tokens(row) for row in game.tokens],
        "bank": _tokens(game.bank),
        "board": {a.name: game.cubes[i].tolist() for i, a in enumerate(L.components.areas)},
        "supply": game.supply.tolist(),
        "final": None if game.final is None else {k: list(v) for k, v in game.final.items()},
    }
    if L.card_space >= 0:
        deck = L.components.deck
        state["deck"] = [deck[i].name for i in game._draw_pile]
    if game.phase not in (BIDDING, OVER):
        state["round_state"] = _round_state(game)
    return state


def _round_state(game: Game) -> dict[str, Any]:
    """Where a round stands between its decisions (only in states taken mid-round)."""
    L = game.layout
    d = game.decision
    return {
        "phase": str(game.phase),
        "bids": [_bid_dict(game, row) for row in game.bids],
        "resolved": {L.target_names[c]: int(w) for c, w in enumerate(game.winners) if w >= -1},
        "pending": None if d is None else {"decision": str(d.kind), "seats": list(d.seats)},
    }


def _bid_dict(game: Game, bid: np.ndarray) -> dict[str, dict[str, int]]:
    names = game.layout.target_names
    return {names[c]: {t: int(n) for t, n in zip(TOKEN_TYPES, bid[c]) if n} for c in range(len(names)) if bid[c].any()}


def dumps_state(state: dict[str, Any]) -> str:
    """Canonical text: one top-level key per line, board areas one per line, everything else compact."""
    lines = []
    for key, value in state.items():
        if key == "board":
            areas = ",\n".join(f"    {json.dumps(a)}: {json.dumps(v)}" for a, v in value.items())
            text = "{\n" + areas + "\n  }"
        else:
            text = json.dumps(value, separators=(", ", ": "))
        lines.append(f"  {json.dumps(key)}: {text}")
    return "{\n" + ",\n".join(lines) + "\n}"


# --- scenarios ----------------------------------------------------------------------------------------------


def load_json(path: str) -> Any:
    try:
        with open(path, encoding="utf-8") as fh:
            return json.load(fh)
    except OSError as exc:
        raise ScenarioError(f"cannot read {path}: {exc.strerror}") from None
    except json.JSONDecodeError as exc:
        raise ScenarioError(f"{path} is not valid JSON: {exc.msg} (line {exc.lineno}, column {exc.colno})") from None
    except UnicodeDecodeError as exc:
        raise ScenarioError(f"{path} is not UTF-8 text (byte {exc.start}: {exc.reason})") from None


def new_game(data: dict[str, Any]) -> Game:
    """The scenario's game at its start position, before any round is played."""
    if not isinstance(data, dict):
        raise ScenarioError("a scenario must be a JSON object")
    for key in data:
        if key not in SCENARIO_KEYS:
            raise ScenarioError(f"unknown key (expected some of {', '.join(SCENARIO_KEYS)})", field=key)
    try:
        rules = Rules.from_dict(data.get("rules", {}))
        layout = make_layout(rules)
    except (RulesError, BoardError) as exc:
        raise ScenarioError(str(exc), field="rules") from None
    seed = data.get("seed", 0)
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise ScenarioError(f"expected a non-negative integer, got {seed!r}", field="seed")
    game = Game(layout, seed)
    if "start" in data:
        set_position(game, data["start"])
    return game


def run_scenario(data: dict[str, Any], draws: str = "record") -> Game:
    """Play a scenario and return the game after its last round (see :func:`play_rounds` for ``draws``)."""
    game = new_game(data)
    play_rounds(game, data, draws)
    return game


def play_rounds(game: Game, data: dict[str, Any], draws: str = "record") -> None:
    """Play the scenario's rounds on ``game`` (its start position, from :func:`new_game`). With ``draws="record"``
    every chance outcome comes from the scenario (the first edition's ``start.deck`` and each round's
    ``reshuffles``): one it needs and does not hold is a :class:`ScenarioError`, so that a saved game replays the
    same wherever it is replayed, whatever the seed. ``draws="seed"`` draws what the scenario does not hold from the
    generator of its ``seed``, as games were saved before they recorded their draws. Either way the game draws from
    its generator once the scenario's rounds are played (playing on from its last state)."""
    if draws not in DRAWS:
        raise ValueError(f"draws: expected one of {', '.join(DRAWS)}, got {draws!r}")
    rounds = data.get("rounds", [])
    if not isinstance(rounds, list):
        raise ScenarioError("expected a list of rounds", field="rounds")
    game.replaying = draws == "record"
    try:
        for spec in rounds:
            play_round(game, spec)
    finally:
        game.replaying = False


def set_position(game: Game, start: Any) -> None:
    """Set a start position (docs/scenarios.md §3, `start`), checking that tokens and cubes are conserved."""
    L = game.layout
    S = L.seats
    comp = L.components
    if not isinstance(start, dict):
        raise ScenarioError("expected an object", field="start")
    for key in start:
        if key not in START_KEYS or (key == "deck" and L.card_space < 0):
            raise ScenarioError("unknown key", field=f"start.{key}")

    if "round" in start:
        r = start["round"]
        if isinstance(r, bool) or not isinstance(r, int) or not 1 <= r <= game.rules.max_rounds:
            raise ScenarioError(f"expected a round from 1 to max_rounds ({game.rules.max_rounds}), got {r!r}",
                                field="start.round")  # fmt: skip
        game.round = r
    if "support" in start:
        game.support[:] = _int_list(start["support"], S, "start.support")
    if "tokens" in start:
        rows = start["tokens"]
        if not isinstance(rows, list) or len(rows) != S:
            raise ScenarioError(f"expected a list of {S} token holdings, one per seat", field="start.tokens")
        for seat, row in enumerate(rows):
            game.tokens[seat] = _token_obj(row, f"start.tokens[{seat}]")
    held = game.tokens.sum(0)
    if "bank" in start:
        game.bank[:] = _token_obj(start["bank"], "start.bank")
        for t, name in enumerate(TOKEN_TYPES):
            if game.bank[t] + held[t] != L.totals[t]:
                raise ScenarioError(
                    f"{name}: bank {game.bank[t]} + held {held[t]} must make the game's {L.totals[t]}",
                    field="start.bank",
                )
    else:
        game.bank[:] = L.totals - held
        if (game.bank < 0).any():
            t = int(np.argmax(game.bank < 0))
            raise ScenarioError(
                f"the seats hold {held[t]} {TOKEN_TYPES[t]}, more than the game's {L.totals[t]}", field="start.tokens"
            )
    if "board" in start:
        board = start["board"]
        if not isinstance(board, dict):
            raise ScenarioError("expected an object mapping area names to cubes per seat", field="start.board")
        game.cubes[:] = 0
        names = list(comp.area_names)
        for name, row in board.items():
            if name not in names:
                raise ScenarioError(f"unknown area {name!r} (areas: {', '.join(names)})", field="start.board")
            a = names.index(name)
            game.cubes[a] = _int_list(row, S, f"start.board.{name}")
            if game.cubes[a].sum() > L.spaces[a]:
                raise ScenarioError(f"{game.cubes[a].sum()} cubes in {L.spaces[a]} spaces", field=f"start.board.{name}")
    on_board = game.cubes.sum(0)
    if (on_board > comp.cubes_per_seat).any():
        seat = int(np.argmax(on_board > comp.cubes_per_seat))
        raise ScenarioError(f"seat {seat} has {on_board[seat]} cubes on the board, more than its {comp.cubes_per_seat}",
                            field="start.board")  # fmt: skip
    if "supply" in start:
        game.supply[:] = _int_list(start["supply"], S, "start.supply")
        for seat in range(S):
            if game.supply[seat] + on_board[seat] != comp.cubes_per_seat:
                raise ScenarioError(
                    f"seat {seat}: supply {game.supply[seat]} + {on_board[seat]} on the board must make"
                    f" {comp.cubes_per_seat}",
                    field="start.supply",
                )
    else:
        game.supply[:] = comp.cubes_per_seat - on_board
    if "deck" in start:
        game._draw_pile = _deck(game, start["deck"])
        game.first_pile, game.recorded_deck = list(game._draw_pile), True
    game.start = {k: start[k] for k in START_KEYS if k in start}


def _int_list(value: Any, n: int, field: str) -> list[int]:
    if not isinstance(value, list) or len(value) != n:
        raise ScenarioError(f"expected a list of {n} integers, one per seat", field=field)
    for v in value:
        if isinstance(v, bool) or not isinstance(v, int) or not 0 <= v <= MAX_COUNT:
            raise ScenarioError(f"expected non-negative integers up to {MAX_COUNT}, got {v!r}", field=field)
    return value


def _token_obj(value: Any, field: str, *, round: int | None = None, seat: int | None = None) -> list[int]:
    where = {"round": round, "seat": seat}
    if not isinstance(value, dict):
        raise ScenarioError(f'expected token counts such as {{"gold": 3}}, got {value!r}', field=field, **where)
    counts = [0, 0, 0]
    for name, n in value.items():
        if name not in TOKEN_TYPES:
            raise ScenarioError(f"unknown token type {name!r} (force, blackmail or gold)", field=f"{field}.{name}",
                                **where)  # fmt: skip
        if isinstance(n, bool) or not isinstance(n, int) or not 0 <= n <= MAX_COUNT:
            raise ScenarioError(f"expected a non-negative integer up to {MAX_COUNT}, got {n!r}",
                                field=f"{field}.{name}", **where)  # fmt: skip
        counts[TOKEN_TYPES.index(name)] = n
    return counts


def _deck(game: Game, value: Any, field: str = "start.deck", whole: bool = False, **where: Any) -> list[int]:
    """Card names, top card first, as deck indices; ``whole``: every card of the deck, as a reshuffle deals."""
    deck = game.layout.components.deck
    if not isinstance(value, list):
        raise ScenarioError("expected a list of card names, top card first", field=field, **where)
    free = list(range(len(deck)))
    pile = []
    for i, name in enumerate(value):
        match = next((j for j in free if deck[j].name == name), None)
        if match is None:
            names = sorted({c.name for c in deck})
            raise ScenarioError(f"no card {name!r} left in the deck (cards: {', '.join(names)})",
                                field=f"{field}[{i}]", **where)  # fmt: skip
        free.remove(match)
        pile.append(match)
    if whole and free:
        raise ScenarioError(f"a reshuffle deals the whole deck (D15): {len(deck)} cards, not {len(pile)}",
                            field=field, **where)  # fmt: skip
    return pile


def play_round(game: Game, spec: Any) -> None:
    """Play one scenario round: the bids, then every decision the round asks for, in order."""
    L = game.layout
    r = game.round
    if game.over:
        how = "was truncated at max_rounds" if game.truncated else "ended"
        raise ScenarioError(f"the game is already over (it {how} after round {r})", round=r + 1)
    if not isinstance(spec, dict):
        raise ScenarioError("expected an object with bids and decisions", round=r)
    for key in spec:
        if key not in ROUND_KEYS:
            raise ScenarioError(f"unknown key (expected some of {', '.join(ROUND_KEYS)})", round=r, field=key)
    if "guy" in spec and L.puppet < 0:
        raise ScenarioError("Guy's placements exist only in the two-player variant (players 2)", round=r, field="guy")
    if "remove" in spec and L.card_space < 0:
        raise ScenarioError('"Remove 1 Influence" cards exist only in the first edition', round=r, field="remove")
    if "reshuffles" in spec and L.card_space < 0:
        raise ScenarioError("the deck exists only in the first edition", round=r, field="reshuffles")
    game.reshuffles = [_deck(game, order, f"reshuffles[{i}]", True, round=r)
                       for i, order in enumerate(_list(spec, "reshuffles", r))]  # fmt: skip
    bids = spec.get("bids")
    if not isinstance(bids, list) or len(bids) != L.players:
        raise ScenarioError(f"expected a list of {L.players} bids, one per deciding seat", round=r, field="bids")
    array = np.zeros((L.players, L.n_targets, 3), dtype=np.int64)
    for seat, bid in enumerate(bids):
        array[seat] = parse_bid(game, bid, round=r, seat=seat)
    with _chance(game, r):
        game.submit_bids(array, _priority(game, spec, array, r))

    guy = _list(spec, "guy", r)
    removes = _list(spec, "remove", r)
    used = {"guy": 0, "remove": 0, "spy": False, "apothecary": False}
    while game.decision is not None and game.decision.kind != BID:
        d = game.decision
        seat = d.seat
        if d.kind == GUY:
            field = f"guy[{used['guy']}]"
            if used["guy"] >= len(guy):
                raise ScenarioError("a Guy placement is asked here but the scenario gives none", round=r, seat=seat,
                                    field=field)  # fmt: skip
            choice = _guy_choice(game, guy[used["guy"]], r, seat, field)
            used["guy"] += 1
        elif d.kind == SPY:
            if "spy" not in spec:
                raise ScenarioError("the Spy decision is asked here but the scenario gives none", round=r, seat=seat,
                                    field="spy")  # fmt: skip
            used["spy"] = True
            choice = _cube_choice(game, spec["spy"], r, seat, "spy")
        elif d.kind in (APOTHECARY_FIRST, APOTHECARY_SECOND):
            if "apothecary" not in spec:
                raise ScenarioError("the Apothecary decision is asked here but the scenario gives none", round=r,
                                    seat=seat, field="apothecary")  # fmt: skip
            used["apothecary"] = True
            value = spec["apothecary"]
            if value == "decline":
                choice = _cube_choice(game, value, r, seat, "apothecary")
            elif not isinstance(value, dict) or set(value) != {"first", "second"}:
                raise ScenarioError('expected {"first": {...}, "second": {...}} or "decline"', round=r, seat=seat,
                                    field="apothecary")  # fmt: skip
            else:
                part = "first" if d.kind == APOTHECARY_FIRST else "second"
                choice = _cube_choice(game, value[part], r, seat, f"apothecary.{part}")
        else:  # REMOVE
            field = f"remove[{used['remove']}]"
            if used["remove"] >= len(removes):
                raise ScenarioError('a "Remove 1 Influence" card is drawn here but the scenario gives no target',
                                    round=r, seat=seat, field=field)  # fmt: skip
            choice = _cube_choice(game, removes[used["remove"]], r, seat, field)
            used["remove"] += 1
        try:
            with _chance(game, r):
                game.choose(choice)
        except IllegalAction as exc:
            raise ScenarioError(str(exc), round=r, seat=seat, field=_field_of(d.kind, used)) from None

    if used["guy"] < len(guy):
        raise ScenarioError("given but not asked: the Scheming phase had already ended", round=r,
                            field=f"guy[{used['guy']}]")  # fmt: skip
    if used["remove"] < len(removes):
        raise ScenarioError('given but not asked: no further "Remove 1 Influence" card was drawn with a target',
                            round=r, field=f"remove[{used['remove']}]")  # fmt: skip
    if "spy" in spec and not used["spy"]:
        raise ScenarioError("given but not asked: nobody won the Spy with a cube to replace", round=r, field="spy")
    if "apothecary" in spec and not used["apothecary"]:
        raise ScenarioError("given but not asked: nobody won the Apothecary with a swap to make", round=r,
                            field="apothecary")  # fmt: skip
    if game.reshuffles:
        unused = len(_list(spec, "reshuffles", r)) - len(game.reshuffles)
        game.reshuffles = []
        raise ScenarioError("given but not asked: the deck did not run out again this round", round=r,
                            field=f"reshuffles[{unused}]")  # fmt: skip


class UnrecordedDrawError(ScenarioError):
    """A scenario replayed from its record needs a chance outcome that it does not hold (:func:`play_rounds`)."""


@contextlib.contextmanager
def _chance(game: Game, r: int) -> Iterator[None]:
    """A draw the replayed record does not hold, as the scenario's error where it is missing."""
    try:
        yield
    except UnrecordedDraw as exc:
        raise UnrecordedDrawError(f"{exc}: a saved game records its draws; one saved before records held them replays "
                            "from its seed (draws='seed', revolution scenario --draws-from-seed)", round=r,
                            field=exc.field) from None  # fmt: skip


def _priority(game: Game, spec: dict[str, Any], bids: np.ndarray, r: int) -> int | None:
    """The round's ``priority`` (two-player variant): required where D9 comes to the coin flip, since a scenario
    carries no random draws; checked against the rule otherwise."""
    L = game.layout
    given = spec.get("priority")
    if L.puppet < 0:
        if given is not None:
            raise ScenarioError("there is no Scheming priority outside the two-player variant", round=r,
                                field="priority")  # fmt: skip
        return None
    if given is not None and (isinstance(given, bool) or given not in (0, 1)):
        raise ScenarioError(f"expected seat 0 or 1, got {given!r}", round=r, field="priority")
    ruled = priority_by_rule(clean_bids(bids, L)[0], L)
    if ruled is None and given is None:
        raise ScenarioError(
            "required: Scheming Gold and the strongest bids are equal, so priority comes to the coin"
            " flip (D9); give the seat that places Guy's first bid",
            round=r,
            field="priority",
        )
    if ruled is not None and given is not None and given != ruled:
        raise ScenarioError(f"seat {given} contradicts the rule (D9), which gives seat {ruled} priority", round=r,
                            field="priority")  # fmt: skip
    return given


def _field_of(kind: str, used: dict[str, Any]) -> str:
    if kind == GUY:
        return f"guy[{used['guy'] - 1}]"
    if kind == REMOVE:
        return f"remove[{used['remove'] - 1}]"
    if kind == SPY:
        return "spy"
    return "apothecary.first" if kind == APOTHECARY_FIRST else "apothecary.second"


def _list(spec: dict, key: str, r: int) -> list:
    value = spec.get(key, [])
    if not isinstance(value, list):
        raise ScenarioError("expected a list", round=r, field=key)
    return value


def parse_bid(game: Game, bid: Any, *, round: int | None = None, seat: int | None = None) -> np.ndarray:
    """A bid written as {target name: {token: count}} as a (T, 3) array, checked against the seat's holdings."""
    L = game.layout
    if not isinstance(bid, dict):
        raise ScenarioError('expected an object such as {"Printer": {"gold": 2}}', round=round, seat=seat,
                            field="bids")  # fmt: skip
    out = np.zeros((L.n_targets, 3), dtype=np.int64)
    for name, counts in bid.items():
        if name not in L.target_names:
            raise ScenarioError(f"unknown bid target {name!r} (targets: {', '.join(L.target_names)})", round=round,
                                seat=seat, field=f"bids.{name}")  # fmt: skip
        out[L.target_names.index(name)] = _token_obj(counts, f"bids.{name}", round=round, seat=seat)
    if seat is not None:
        placed, held = out.sum(0), game.tokens[seat]
        for t, name in enumerate(TOKEN_TYPES):
            if placed[t] > held[t]:
                raise ScenarioError(f"places {placed[t]} {name} but holds {held[t]}", round=round, seat=seat,
                                    field="bids")  # fmt: skip
            if placed[t] < held[t]:
                raise ScenarioError(f"places {placed[t]} {name} but holds {held[t]}: every held token must be placed"
                                    " (D3)", round=round, seat=seat, field="bids")  # fmt: skip
    return out


def _cube_choice(game: Game, value: Any, r: int, seat: int, field: str) -> tuple[int, int] | None:
    if value == "decline":
        return None
    names = list(game.layout.components.area_names)
    if not isinstance(value, dict) or set(value) != {"area", "seat"}:
        raise ScenarioError('expected {"area": NAME, "seat": SEAT}' + (' or "decline"' if field in ("spy", "apothecary")
                            else ""), round=r, seat=seat, field=field)  # fmt: skip
    if value["area"] not in names:
        raise ScenarioError(f"unknown area {value['area']!r}", round=r, seat=seat, field=f"{field}.area")
    target = value["seat"]
    if isinstance(target, bool) or not isinstance(target, int) or not 0 <= target < game.layout.seats:
        raise ScenarioError(f"no seat {target!r}", round=r, seat=seat, field=f"{field}.seat")
    return names.index(value["area"]), target


def _guy_choice(game: Game, value: Any, r: int, seat: int, field: str) -> tuple[int, int, int] | None:
    if value == "pass":
        return None
    L = game.layout
    if not isinstance(value, dict) or set(value) != {"character", "answer", "mode"}:
        raise ScenarioError('expected {"character": NAME, "answer": SEAT, "mode": "tie"|"beat"} or "pass"', round=r,
                            seat=seat, field=field)  # fmt: skip
    names = L.target_names[: L.n_characters]
    if value["character"] not in names:
        raise ScenarioError(f"unknown character {value['character']!r}", round=r, seat=seat, field=f"{field}.character")
    if value["answer"] not in (0, 1) or isinstance(value["answer"], bool):
        raise ScenarioError(
            f"expected seat 0 or 1, got {value['answer']!r}", round=r, seat=seat, field=f"{field}.answer"
        )
    if value["mode"] not in MODES:
        raise ScenarioError(f"expected \"tie\" or \"beat\", got {value['mode']!r}", round=r, seat=seat,
                            field=f"{field}.mode")  # fmt: skip
    return names.index(value["character"]), value["answer"], MODES.index(value["mode"])


# --- export -------------------------------------------------------------------------------------------------


def export_game(game: Game) -> dict[str, Any]:
    """The game so far as a scenario: its rules, seed, start position and every round played in full."""
    L = game.layout
    areas = L.components.area_names
    names = L.target_names
    deck = L.components.deck
    rounds = game.history if game.decision is None or game.decision.kind == BID else game.history[:-1]

    def cube(v: tuple[int, int] | None) -> Any:
        return "decline" if v is None else {"area": areas[v[0]], "seat": v[1]}

    out_rounds = []
    for log in rounds:
        entry: dict[str, Any] = {"bids": [_bid_dict(game, b) for b in log["bids"]]}
        if "priority" in log:
            entry["priority"] = log["priority"]
        if "guy" in log:
            entry["guy"] = [
                "pass" if g is None else {"character": names[g[0]], "answer": g[1], "mode": MODES[g[2]]}
                for g in log["guy"]
            ]
        if "spy" in log:
            entry["spy"] = cube(log["spy"])
        if "apothecary" in log:
            pick = log["apothecary"]
            entry["apothecary"] = "decline" if pick is None else {"first": cube(pick[0]), "second": cube(pick[1])}
        if "remove" in log:
            entry["remove"] = [cube(v) for v in log["remove"]]
        if "reshuffles" in log:
            entry["reshuffles"] = [[deck[i].name for i in order] for order in log["reshuffles"]]
        out_rounds.append(entry)
    data: dict[str, Any] = {"rules": game.rules.to_dict(), "seed": game.seed}
    start = dict(getattr(game, "start", None) or {})
    if L.card_space >= 0:  # the deck as first dealt: the game replays without the generator (D15)
        start["deck"] = [deck[i].name for i in game.first_pile]
    if start:
        data["start"] = start
    data["rounds"] = out_rounds
    return data


__all__ = [
    "BEAT",
    "DRAWS",
    "TIE",
    "ScenarioError",
    "UnrecordedDrawError",
    "dumps_state",
    "export_game",
    "load_json",
    "new_game",
    "parse_bid",
    "play_round",
    "play_rounds",
    "run_scenario",
    "set_position",
    "state_dict",
]
