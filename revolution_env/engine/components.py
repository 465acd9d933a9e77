"""Component data: the board, the bid card and the token pool, read from a data file.

What is printed on the components lives in JSON files (``revolution_env/data/boards/``), never in code.
A file is checked field by field when it is loaded; a malformed one raises :class:`BoardError` naming the
field, for example ``characters[3].immune[0]: unknown token type 'iron'``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from enum import IntEnum
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np


class NamedIntEnum(IntEnum):
    """A number that is written as its lower-cased name: ``str()`` and f-strings give ``"gold"``, ``"bid"``."""

    def __str__(self) -> str:
        return self.name.lower()

    __format__ = object.__format__  # f"{x}" is str(x), on every Python version


class Token(NamedIntEnum):
    """The token types, strongest first (docs/rules.md §1): the index of a type in every array of three (holdings,
    bids, the bank). ``str()`` is the name that board files, scenarios and text write (``"gold"``)."""

    FORCE = 0
    BLACKMAIL = 1
    GOLD = 2


TOKEN_TYPES: tuple[str, ...] = tuple(str(t) for t in Token)  # ("force", "blackmail", "gold")
FORCE, BLACKMAIL, GOLD = Token.FORCE, Token.BLACKMAIL, Token.GOLD
SPECIALS = ("spy", "apothecary")
BOARDS_DIR = Path(__file__).resolve().parent.parent / "data" / "boards"


class BoardError(ValueError):
    """A board data file is missing, unreadable or malformed."""


@dataclass(frozen=True)
class Area:
    name: str
    spaces: int
    support: int


@dataclass(frozen=True)
class Character:
    """One space of the bid card. ``legal`` is indexed like TOKEN_TYPES."""

    name: str
    support: int
    tokens: tuple[int, int, int]
    area: int  # index into Components.areas, or -1
    legal: tuple[bool, bool, bool]
    special: str | None = None  # "spy", "apothecary", "card" or None


@dataclass(frozen=True)
class Card:
    name: str
    support: int
    tokens: tuple[int, int, int]
    remove: bool


@dataclass(frozen=True)
class Components:
    """Everything printed on the components, as plain data and a few derived arrays."""

    name: str
    areas: tuple[Area, ...]
    characters: tuple[Character, ...]  # the standard bid card, in resolution order
    token_totals: tuple[int, int, int]
    token_start: tuple[int, int, int]
    token_points: tuple[int, int, int]
    cubes_per_seat: int
    max_characters_per_bid: int
    patronage_minimum: int
    first_edition_replaces: int | None  # index of the character the Card space replaces
    card_space: Character | None
    card_max_gold: int
    deck: tuple[Card, ...]

    @property
    def area_names(self) -> tuple[str, ...]:
        return tuple(a.name for a in self.areas)

    @property
    def spaces(self) -> np.ndarray:
        return np.array([a.spaces for a in self.areas], dtype=np.int64)

    def bid_card(self, first_edition: bool) -> tuple[Character, ...]:
        """The characters in resolution order, with the Card space in the first edition."""
        if not first_edition:
            return self.characters
        if self.card_space is None or self.first_edition_replaces is None:
            raise BoardError(f"board {self.name!r} has no first_edition section")
        chars = list(self.characters)
        chars[self.first_edition_replaces] = self.card_space
        return tuple(chars)


def load_components(board: str | Path = "standard") -> Components:
    """Load a board by name (a file in ``data/boards``) or by path to a JSON file."""
    path = Path(board)
    if path.suffix != ".json" and not path.exists():
        path = BOARDS_DIR / f"{board}.json"
        if not path.exists():
            known = ", ".join(sorted(p.stem for p in BOARDS_DIR.glob("*.json")))
            raise BoardError(f"unknown board {str(board)!r} (known boards: {known}; or give a path to a .json file)")
    return _load_path(str(path.resolve()))


@lru_cache(maxsize=16)
def _load_path(path: str) -> Components:
    try:
        with open(path, encoding="utf-8") as fh:
            data = json.load(fh)
    except OSError as exc:
        raise BoardError(f"cannot read board file {path}: {exc.strerror}") from None
    except json.JSONDecodeError as exc:
        raise BoardError(f"board file {path} is not valid JSON: {exc}") from None
    try:
        return parse_components(data)
    except BoardError as exc:
        raise BoardError(f"board file {path}: {exc}") from None


# --- parsing, field by field ------------------------------------------------------------------------------


def _field(obj: dict, key: str, where: str, kind: type | tuple[type, ...], default: Any = ...) -> Any:
    if not isinstance(obj, dict):
        raise BoardError(f"{where or 'the file'}: expected an object")
    if key not in obj:
        if default is ...:
            raise BoardError(f"{_join(where, key)}: missing")
        return default
    value = obj[key]
    if kind is int and (isinstance(value, bool) or not isinstance(value, int)):
        raise BoardError(f"{_join(where, key)}: expected an integer, got {value!r}")
    if not isinstance(value, kind):
        names = kind.__name__ if isinstance(kind, type) else " or ".join(k.__name__ for k in kind)
        raise BoardError(f"{_join(where, key)}: expected {names}, got {value!r}")
    return value


def _join(where: str, key: str) -> str:
    return f"{where}.{key}" if where else key


def _nonneg(value: int, where: str, minimum: int = 0) -> int:
    if value < minimum:
        raise BoardError(f"{where}: must be at least {minimum}, got {value}")
    return value


def _check_keys(obj: dict, allowed: set[str], where: str) -> None:
    unknown = sorted(set(obj) - allowed)
    if unknown:
        raise BoardError(f"{_join(where, unknown[0])}: unknown field")


def _token_counts(obj: Any, where: str) -> tuple[int, int, int]:
    if not isinstance(obj, dict):
        raise BoardError(f"{where}: expected an object of token counts")
    counts = [0, 0, 0]
    for name, n in obj.items():
        if name not in TOKEN_TYPES:
            raise BoardError(f"{where}.{name}: unknown token type {name!r} (expected one of {', '.join(TOKEN_TYPES)})")
        if isinstance(n, bool) or not isinstance(n, int) or n < 0:
            raise BoardError(f"{where}.{name}: expected a non-negative integer, got {n!r}")
        counts[TOKEN_TYPES.index(name)] = n
    return (counts[0], counts[1], counts[2])


def _immune(obj: dict, where: str) -> tuple[bool, bool, bool]:
    immune = _field(obj, "immune", where, list, [])
    legal = [True, True, True]
    for i, name in enumerate(immune):
        if name not in TOKEN_TYPES:
            raise BoardError(f"{where}.immune[{i}]: unknown token type {name!r}")
        legal[TOKEN_TYPES.index(name)] = False
    if not any(legal):
        raise BoardError(f"{where}.immune: a character must accept at least one token type")
    return (legal[0], legal[1], legal[2])


def parse_components(data: Any) -> Components:
    """Check and convert the decoded JSON of a board file."""
    if not isinstance(data, dict):
        raise BoardError("expected a JSON object at the top level")
    _check_keys(
        data,
        {
            "name",
            "description",
            "tokens",
            "cubes_per_seat",
            "max_characters_per_bid",
            "patronage_minimum",
            "areas",
            "characters",
            "first_edition",
        },
        "",
    )
    name = _field(data, "name", "", str)

    tokens = _field(data, "tokens", "", dict)
    totals, start, points = [], [], []
    for t in TOKEN_TYPES:
        spec = _field(tokens, t, "tokens", dict)
        _check_keys(spec, {"total", "start", "points"}, f"tokens.{t}")
        totals.append(_nonneg(_field(spec, "total", f"tokens.{t}", int), f"tokens.{t}.total"))
        start.append(_nonneg(_field(spec, "start", f"tokens.{t}", int), f"tokens.{t}.start"))
        points.append(_nonneg(_field(spec, "points", f"tokens.{t}", int), f"tokens.{t}.points"))
    _check_keys(tokens, set(TOKEN_TYPES), "tokens")

    areas_raw = _field(data, "areas", "", list)
    if not areas_raw:
        raise BoardError("areas: at least one area is needed")
    areas: list[Area] = []
    for i, a in enumerate(areas_raw):
        w = f"areas[{i}]"
        _check_keys(a if isinstance(a, dict) else {}, {"name", "spaces", "support"}, w)
        area = Area(
            _field(a, "name", w, str),
            _nonneg(_field(a, "spaces", w, int), f"{w}.spaces", 1),
            _nonneg(_field(a, "support", w, int), f"{w}.support"),
        )
        if area.name in (x.name for x in areas):
            raise BoardError(f"{w}.name: duplicate area {area.name!r}")
        areas.append(area)
    area_index = {a.name: i for i, a in enumerate(areas)}

    def character(c: Any, w: str, allowed_extra: set[str] = frozenset()) -> Character:
        if not isinstance(c, dict):
            raise BoardError(f"{w}: expected an object")
        _check_keys(c, {"name", "support", "tokens", "area", "immune", "special"} | allowed_extra, w)
        area_name = _field(c, "area", w, (str, type(None)), None)
        if area_name is not None and area_name not in area_index:
            raise BoardError(f"{w}.area: unknown area {area_name!r}")
        special = _field(c, "special", w, (str, type(None)), None)
        if special is not None and special not in SPECIALS:
            raise BoardError(f"{w}.special: unknown special {special!r} (expected one of {', '.join(SPECIALS)})")
        return Character(
            name=_field(c, "name", w, str),
            support=_nonneg(_field(c, "support", w, int, 0), f"{w}.support"),
            tokens=_token_counts(_field(c, "tokens", w, dict, {}), f"{w}.tokens"),
            area=-1 if area_name is None else area_index[area_name],
            legal=_immune(c, w),
            special=special,
        )

    chars_raw = _field(data, "characters", "", list)
    if not chars_raw:
        raise BoardError("characters: at least one character is needed")
    characters = tuple(character(c, f"characters[{i}]") for i, c in enumerate(chars_raw))
    names = [c.name for c in characters]
    for i, n in enumerate(names):
        if n in names[:i]:
            raise BoardError(f"characters[{i}].name: duplicate character {n!r}")
        if n == "Scheming":
            raise BoardError(f"characters[{i}].name: 'Scheming' is reserved for the two-player variant")
    for special in SPECIALS:
        if names.count(special) > 1:  # pragma: no cover - names are unique already
            raise BoardError(f"characters: more than one {special}")
    for special in SPECIALS:
        if sum(c.special == special for c in characters) > 1:
            raise BoardError(f"characters: more than one character with special {special!r}")

    replaces = None
    card_space = None
    card_max_gold = 0
    deck: list[Card] = []
    fe = _field(data, "first_edition", "", dict, None)
    if fe is not None:
        _check_keys(fe, {"replaces", "card_space", "deck"}, "first_edition")
        rep = _field(fe, "replaces", "first_edition", str)
        if rep not in names:
            raise BoardError(f"first_edition.replaces: unknown character {rep!r}")
        replaces = names.index(rep)
        cs = _field(fe, "card_space", "first_edition", dict)
        card_max_gold = _nonneg(
            _field(cs, "max_gold_per_seat", "first_edition.card_space", int),
            "first_edition.card_space.max_gold_per_seat",
            1,
        )
        cs_plain = {k: v for k, v in cs.items() if k != "max_gold_per_seat"}
        card_space = character(cs_plain, "first_edition.card_space")
        card_space = Character(card_space.name, 0, (0, 0, 0), -1, card_space.legal, "card")
        if card_space.legal != (False, False, True):
            raise BoardError(
                "first_edition.card_space.immune: the Card space takes Gold only (immune to force and blackmail)"
            )
        if card_space.name in names[:replaces] + names[replaces + 1 :]:
            raise BoardError(f"first_edition.card_space.name: duplicate character {card_space.name!r}")
        deck_raw = _field(fe, "deck", "first_edition", list)
        for i, d in enumerate(deck_raw):
            w = f"first_edition.deck[{i}]"
            if not isinstance(d, dict):
                raise BoardError(f"{w}: expected an object")
            _check_keys(d, {"name", "count", "support", "tokens", "remove"}, w)
            remove = _field(d, "remove", w, int, 0)
            if remove not in (0, 1):
                raise BoardError(f"{w}.remove: expected 0 or 1, got {remove!r}")
            card = Card(
                _field(d, "name", w, str),
                _nonneg(_field(d, "support", w, int, 0), f"{w}.support"),
                _token_counts(_field(d, "tokens", w, dict, {}), f"{w}.tokens"),
                bool(remove),
            )
            deck.extend([card] * _nonneg(_field(d, "count", w, int), f"{w}.count", 1))
        if not deck:
            raise BoardError("first_edition.deck: the deck needs at least one card")

    return Components(
        name=name,
        areas=tuple(areas),
        characters=characters,
        token_totals=tuple(totals),
        token_start=tuple(start),
        token_points=tuple(points),
        cubes_per_seat=_nonneg(_field(data, "cubes_per_seat", "", int), "cubes_per_seat", 1),
        max_characters_per_bid=_nonneg(_field(data, "max_characters_per_bid", "", int), "max_characters_per_bid", 1),
        patronage_minimum=_nonneg(_field(data, "patronage_minimum", "", int), "patronage_minimum"),
        first_edition_replaces=replaces,
        card_space=card_space,
        card_max_gold=card_max_gold,
        deck=tuple(deck),
    )
