"""The rules of Revolution! as a state machine over a few arrays (docs/rules.md §2–§7).

A :class:`Game` is always waiting for exactly one :class:`Pending` decision (or is over). Bids are submitted for all
deciding seats at once; every other decision (the puppet's Scheming placements, Spy, Apothecary, Remove) is
made by one seat. Between decisions the engine runs the rules on its own: cleaning bids, resolving characters,
drawing cards, Patronage and scoring. The engine knows nothing about observations or learning.

State (``S`` seats, ``T`` bid targets, ``A`` areas; token columns are force, blackmail, gold):
``tokens (S,3)`` held, ``bank (3,)``, ``support (S,)``, ``cubes (A,S)`` on the board, ``supply (S,)``,
``bids (S,T,3)`` still on the bid boards this round.
"""

from __future__ import annotations

import numbers
import secrets
from dataclasses import dataclass
from typing import Any

import numpy as np

from revolution_env.engine.components import (
    BLACKMAIL,
    FORCE,
    GOLD,
    TOKEN_TYPES,
    Character,
    Components,
    NamedIntEnum,
    load_components,
)


class Phase(NamedIntEnum):
    """Where a round stands (docs/rules.md §2). A number, which the batched engine stores (``kernels``); ``str()`` is
    the lower-cased name, which state dicts, scenarios and rendering write. A phase also equals its name
    (``game.phase == "over"``): it was that string before it was a number."""

    BIDDING = 0
    SCHEMING = 1
    RESOLUTION = 2
    OVER = 3

    def __eq__(self, other: object) -> bool:
        return str(self) == other if isinstance(other, str) else int.__eq__(self, other)

    def __ne__(self, other: object) -> bool:
        equal = self.__eq__(other)
        return equal if equal is NotImplemented else not equal

    __hash__ = int.__hash__


BIDDING, SCHEMING, RESOLUTION, OVER = Phase.BIDDING, Phase.SCHEMING, Phase.RESOLUTION, Phase.OVER


class Decision(NamedIntEnum):
    """What a seat is asked to decide. A number, so that infos turn into tensors; ``str()`` gives the lower-cased
    name (``"bid"``, ``"apothecary_first"``), which was the decision's name in ``revolution_v1``."""

    NONE = 0
    BID = 1
    GUY = 2
    SPY = 3
    APOTHECARY_FIRST = 4
    APOTHECARY_SECOND = 5
    REMOVE = 6

    @classmethod
    def parse(cls, value: Any) -> Decision:
        """A decision from its number, its member or its name (``"bid"``)."""
        if isinstance(value, str):
            try:
                return cls[value.upper()]
            except KeyError:
                raise ValueError(f"unknown decision {value!r} (one of: {', '.join(map(str, cls))})") from None
        return cls(value)


BID, GUY, SPY, APOTHECARY_FIRST, APOTHECARY_SECOND, REMOVE = (
    Decision.BID, Decision.GUY, Decision.SPY, Decision.APOTHECARY_FIRST, Decision.APOTHECARY_SECOND, Decision.REMOVE,
)  # fmt: skip
DECISIONS = (BID, GUY, SPY, APOTHECARY_FIRST, APOTHECARY_SECOND, REMOVE)
CUBE_DECISIONS = (SPY, APOTHECARY_FIRST, APOTHECARY_SECOND, REMOVE)
TIE, BEAT = 0, 1
SCHEMING_SPACE = "Scheming"
GUY_BIDS_COMPULSORY = 2  # D12
MAX_GUY_BIDS = 6  # D12
MAX_ROUNDS_LIMIT = 2**24  # the largest round count a float32 observation holds exactly
RULE_SWITCHES = ("bid_refunds", "area_control_bonus", "first_edition")  # the rule options that are on or off


class RulesError(ValueError):
    """Bad rule options (unknown option, bad value, impossible combination)."""


def check_players(players: object) -> None:
    """The one check of a player count, worded alike by every command: 2, 3 or 4 (docs/rules.md §1)."""
    if isinstance(players, bool) or not isinstance(players, numbers.Integral) or players not in (2, 3, 4):
        raise RulesError(f"players: expected 2, 3 or 4, got {players!r}")  # 3.0 too: a count is a whole number


class IllegalAction(ValueError):
    """A decision that the rules do not allow in the current state."""


class UnrecordedDraw(ValueError):
    """A game replayed from its record (``Game.replaying``) came to a chance outcome that the record does not hold:
    a draw from a deck it does not give, or a reshuffle it does not list (docs/scenarios.md §3). ``field``: the
    scenario key that would hold it."""

    def __init__(self, message: str, field: str) -> None:
        super().__init__(message)
        self.field = field


@dataclass(frozen=True)
class Rules:
    """The options of one game. ``bid_refunds=None`` takes the variant's default (docs/rules.md §6, D14)."""

    players: int = 3
    bid_refunds: bool | None = None
    area_control_bonus: bool = False
    first_edition: bool = False
    max_rounds: int = 100
    board: str = "standard"

    def __post_init__(self) -> None:
        for name in RULE_SWITCHES:
            value = getattr(self, name)
            if not isinstance(value, bool) and not (name == "bid_refunds" and value is None):
                raise RulesError(f"{name}: expected true or false, got {value!r}")
        check_players(self.players)
        if isinstance(self.max_rounds, bool) or not isinstance(self.max_rounds, int) or self.max_rounds < 1:
            raise RulesError(f"max_rounds: expected a positive integer, got {self.max_rounds!r}")
        if self.max_rounds > MAX_ROUNDS_LIMIT:
            raise RulesError(
                f"max_rounds: expected at most {MAX_ROUNDS_LIMIT:,} (2**24; observations are float32, exact up to "
                f"there; a game lasts about 15 rounds), got {self.max_rounds:,}"
            )
        if not isinstance(self.board, str) or not self.board:
            raise RulesError(f"board: expected a board name or a path, got {self.board!r}")
        forced = self.players == 2 or self.first_edition
        if self.bid_refunds is None:
            object.__setattr__(self, "bid_refunds", forced)
        elif forced and not self.bid_refunds:
            why = "the two-player variant" if self.players == 2 else "the first edition (D14)"
            raise RulesError(f"bid_refunds: {why} always plays with Bid Refunds")

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Rules:
        if not isinstance(data, dict):
            raise RulesError(f"rules: expected an object, got {data!r}")
        known = {f for f in cls.__dataclass_fields__}
        for key in data:
            if key not in known:
                raise RulesError(f"{key}: unknown rule option (known: {', '.join(sorted(known))})")
        return cls(**data)

    def to_dict(self) -> dict[str, Any]:
        return {
            "players": self.players,
            "bid_refunds": self.bid_refunds,
            "area_control_bonus": self.area_control_bonus,
            "first_edition": self.first_edition,
            "max_rounds": self.max_rounds,
            "board": self.board,
        }


@dataclass(frozen=True)
class Pending:
    """What the game waits for: ``kind`` (one of DECISIONS) from ``seats`` (all deciding seats for a bid)."""

    kind: Decision
    seats: tuple[int, ...]

    @property
    def seat(self) -> int:
        return self.seats[0]


@dataclass(frozen=True)
class Layout:
    """Sizes and static tables derived from the components and the rules, shared by every game of a kind."""

    components: Components
    rules: Rules
    seats: int  # including the puppet
    players: int  # seats that decide
    puppet: int  # the puppet's seat, or -1
    card: tuple[Character, ...]  # bid card in resolution order
    n_characters: int
    n_targets: int  # characters, then the Scheming space in the two-player variant
    scheming: int  # target index of the Scheming space, or -1
    card_space: int  # target index of the first edition's Card space, or -1
    spy: int
    apothecary: int
    legal: np.ndarray  # (T, 3) bool: token type allowed on target
    legal_targets: tuple[np.ndarray, ...]  # per token type, the targets it may go to
    strength: np.ndarray  # (3,) weights that turn a bid into one comparable integer
    rewards: np.ndarray  # (n_characters, 3) tokens each character gives its winner
    spaces: np.ndarray  # (A,)
    area_support: np.ndarray  # (A,)
    token_points: np.ndarray  # (3,)
    totals: np.ndarray  # (3,)
    target_names: tuple[str, ...]


def make_layout(rules: Rules, components: Components | None = None) -> Layout:
    comp = components if components is not None else load_components(rules.board)
    card = comp.bid_card(rules.first_edition)
    seats = 3 if rules.players == 2 else rules.players
    n_chars = len(card)
    scheming = n_chars if rules.players == 2 else -1
    n_targets = n_chars + (1 if rules.players == 2 else 0)
    legal = np.zeros((n_targets, 3), dtype=bool)
    for i, ch in enumerate(card):
        legal[i] = ch.legal
    if scheming >= 0:
        legal[scheming] = (False, False, True)  # D18: Gold only
    totals = np.array(comp.token_totals, dtype=np.int64)
    start = np.array(comp.token_start, dtype=np.int64)
    if np.any(start * seats > totals):
        raise RulesError(f"board {comp.name!r} has too few tokens for {seats} seats")
    base = int(totals.max()) + 1
    names = tuple(ch.name for ch in card) + ((SCHEMING_SPACE,) if scheming >= 0 else ())

    def index_of(special: str) -> int:
        return next((i for i, ch in enumerate(card) if ch.special == special), -1)

    return Layout(
        components=comp,
        rules=rules,
        seats=seats,
        players=2 if rules.players == 2 else rules.players,
        puppet=2 if rules.players == 2 else -1,
        card=card,
        n_characters=n_chars,
        n_targets=n_targets,
        scheming=scheming,
        card_space=index_of("card"),
        spy=index_of("spy"),
        apothecary=index_of("apothecary"),
        legal=legal,
        legal_targets=tuple(np.flatnonzero(legal[:, t]) for t in range(3)),
        rewards=np.array([ch.tokens for ch in card], dtype=np.int64).reshape(n_chars, 3),
        strength=np.array([base * base, base, 1], dtype=np.int64),
        spaces=comp.spaces,
        area_support=np.array([a.support for a in comp.areas], dtype=np.int64),
        token_points=np.array(comp.token_points, dtype=np.int64),
        totals=totals,
        target_names=names,
    )


def clean_bids(bids: np.ndarray, layout: Layout, batch_dims: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """docs/rules.md §3, D16, D18: illegal tokens removed, then everything past the sixth character. Returns the
    cleaned bids (same shape, (..., T, 3)) and the tokens that go to the bank: (3,), or per game (n, 3) when the
    first ``batch_dims`` axes are a batch of games (the batched engine)."""
    L = layout
    cleaned = bids * L.legal
    chars = cleaned[..., : L.n_characters, :]
    has = chars.any(-1)
    over = has & (np.cumsum(has, axis=-1) > L.components.max_characters_per_bid)
    chars[over] = 0
    summed = tuple(range(batch_dims, bids.ndim - 1))
    return cleaned, bids.sum(summed) - cleaned.sum(summed)


def priority_by_rule(bids: np.ndarray, layout: Layout) -> int | None:
    """docs/rules.md §6, D9: the player who places Guy's first bid, from the two players' cleaned bids (2, T, 3):
    more Scheming Gold, then the stronger strongest bid, then the earlier strongest bid; ``None`` when it comes to
    the coin flip."""
    L = layout
    gold = bids[:2, L.scheming, GOLD]
    if gold[0] != gold[1]:
        return 0 if gold[0] > gold[1] else 1
    keys = bids[:2, : L.n_characters] @ L.strength  # (2, n_characters)
    best = keys.max(1)
    if best[0] != best[1]:
        return 0 if best[0] > best[1] else 1
    if best[0] > 0:
        where = (keys == best[:, None]).argmax(1)  # the earliest strongest bid
        if where[0] != where[1]:
            return 0 if where[0] < where[1] else 1
    return None


BEAT_ORDER = (GOLD, BLACKMAIL, FORCE)  # D11: the token a beat adds is of the lowest-value type available


def guy_beats(bids: np.ndarray, guy: np.ndarray, legal: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """D11 (revised): Guy's beat of each bid, and whether he can place it.

    ``bids`` (..., C, 3) are the answered bids, ``guy`` (..., 3) Guy's tokens (broadcast against the bids' leading
    axes), ``legal`` (C, 3) the types each character takes. A beat is the bid plus one token of the lowest-value
    type that Guy holds beyond the copy and that the character takes. Returns ``(beat (..., C, 3), payable (...,
    C))``; where not payable, ``beat`` is the bid itself. Shared by the engine, the bots and the batched engine.
    """
    bids = np.asarray(bids)
    spare = np.expand_dims(guy, -2) - bids  # (..., C, 3): what Guy holds beyond the copy
    can_copy = (spare >= 0).all(-1)
    added = np.zeros(spare.shape, dtype=spare.dtype)
    found = np.zeros(can_copy.shape, dtype=bool)
    for t in BEAT_ORDER:
        take = ~found & can_copy & (spare[..., t] >= 1) & legal[:, t]
        added[..., t] = take
        found |= take
    return bids + added, found


def check_seed(seed: Any) -> int | None:
    """A seed as an int (None stays None), or :class:`RulesError` for anything that is not a non-negative integer
    (a negative number, a fraction, a string, a bool)."""
    if seed is None:
        return None
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise RulesError(f"seed: expected a non-negative integer or None, got {seed!r} ({type(seed).__name__})")
    return int(seed)


COIN_STREAM, DECK_STREAM = 0, 1  # a game's two independent random streams (settled case 16): D9's coin, D15's deck


def seed_stream(seed: int, stream: int) -> np.random.Generator:
    """The generator of one of a game's random streams, ``COIN_STREAM`` or ``DECK_STREAM``: that of
    ``SeedSequence(seed).spawn(2)[stream]``, made without spawning the other (half the cost, which counts where the
    batched engine starts thousands of games). The batched engine and the batched evaluation draw from the same
    streams, so that a seed gives the same game everywhere."""
    return np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(stream,)))


class Game:
    """One game of Revolution!. Create it with :meth:`new`, then answer :attr:`decision` until it is over."""

    def __init__(self, layout: Layout, seed: int | None = None) -> None:
        self.layout = L = layout
        self.rules = layout.rules
        seed = check_seed(seed)
        if seed is None:
            seed = secrets.randbits(63)  # drawn once, so that any game can be exported and replayed
        self.seed = seed
        self._coin_rng = seed_stream(seed, COIN_STREAM)  # D9's coin flip
        self._deck_rng = seed_stream(seed, DECK_STREAM)  # D15's shuffles
        S, A = L.seats, len(L.spaces)
        comp = L.components
        self.round = 1
        self.phase = BIDDING
        self.tokens = np.tile(np.array(comp.token_start, dtype=np.int64), (S, 1))
        self.bank = L.totals - self.tokens.sum(0)
        self.support = np.zeros(S, dtype=np.int64)
        self.cubes = np.zeros((A, S), dtype=np.int64)
        self.supply = np.full(S, comp.cubes_per_seat, dtype=np.int64)
        self.bids = np.zeros((S, L.n_targets, 3), dtype=np.int64)
        self.truncated = False
        self.final: dict[str, Any] | None = None
        # The round being resolved, or during bidding the last one resolved (all public once revealed).
        self.revealed = np.zeros((S, L.n_targets, 3), dtype=np.int64)  # bids as placed, puppet's included
        self.revealed_round = 0  # the round `revealed` belongs to (0: none yet)
        self.winners = np.full(L.n_targets, -2, dtype=np.int64)  # -2 unresolved, -1 nobody, else seat
        self.scheming_gold = np.zeros(S, dtype=np.int64)
        self.cards_drawn: list[tuple[int, int]] = []  # (seat, deck index) this round
        self.cursor = 0  # next target to resolve
        self.decision: Pending | None = Pending(BID, tuple(range(L.players)))
        self._guy_order: tuple[int, int] = (0, 1)
        self._guy_count = 0
        self.guy_last_placer = -1
        self._apothecary_first: tuple[int, int] | None = None
        self._spy_owner = -1
        self._guy_cache: tuple[np.ndarray, np.ndarray] | None = None
        self._cube_cache: tuple[Pending | None, np.ndarray | None] = (None, None)
        self._winner: list[int] | None = None  # per target, the strictly highest bidder (-1 none), once final
        self._contested: list[bool] = []
        self._card_queue: list[list[int]] = []  # [seat, cards still to draw]
        self._draw_pile: list[int] = []
        # Chance outcomes are recorded as they happen, so that a saved game replays without the generator: the
        # deck as first dealt (a scenario's start.deck), and each D15 reshuffle in the history of its round. A game
        # replayed from its record sets ``replaying``: a draw the record does not hold is then an error, not a
        # draw from the generator (``recorded_deck``: whether the pile came from the record; ``reshuffles``: the
        # record's new orders, in the order the round needs them).
        self.first_pile: list[int] = []
        self.replaying = False
        self.recorded_deck = False
        self.reshuffles: list[list[int]] = []
        if L.card_space >= 0:
            self._draw_pile = self._shuffled_deck()
            self.first_pile = list(self._draw_pile)
        self.start: dict[str, Any] | None = None  # the scenario start position this game was set up from
        self.history: list[dict[str, Any]] = []  # every decision, round by round (see scenario.export)

    @classmethod
    def new(cls, rules: Rules | None = None, seed: int | None = None, components: Components | None = None) -> Game:
        rules = rules if rules is not None else Rules()
        return cls(make_layout(rules, components), seed)

    # --- queries -------------------------------------------------------------------------------------------

    @property
    def over(self) -> bool:
        return self.final is not None

    @property
    def game_over(self) -> bool:
        """True when the game ended by the rules (the board full), not by truncation (D8)."""
        return self.final is not None and not self.truncated

    def protected_areas(self) -> np.ndarray:
        """Areas wholly held by one seat, which Area Control Bonus makes untouchable (docs/rules.md §5)."""
        if not self.rules.area_control_bonus:
            return np.zeros(len(self.layout.spaces), dtype=bool)
        return self.cubes.max(1) == self.layout.spaces

    def cube_targets(self) -> np.ndarray:
        """(A, S) bool: the cubes the pending Spy/Apothecary/Remove decision may pick (absolute seats)."""
        d = self.decision
        if d is None or d.kind not in CUBE_DECISIONS:
            raise IllegalAction(f"no cube decision is pending (pending: {d.kind if d else 'nothing'})")
        if self._cube_cache[0] is not d:  # the state does not change while a decision is pending
            if d.kind == SPY:
                ok = self._spy_targets(self._spy_owner)
            elif d.kind == APOTHECARY_FIRST:
                ok = self._apothecary_first_targets()
            elif d.kind == APOTHECARY_SECOND:
                ok = self._apothecary_second_targets(*self._apothecary_first)
            else:
                ok = self._remove_targets(d.seat)
            ok.flags.writeable = False
            self._cube_cache = (d, ok)
        return self._cube_cache[1]

    def can_decline(self) -> bool:
        """Whether the pending decision may be declined (Spy, first Apothecary pick) or passed (Guy, D12)."""
        d = self.decision
        if d is None:
            return False
        if d.kind in (SPY, APOTHECARY_FIRST):
            return True
        return d.kind == GUY and self._guy_count >= GUY_BIDS_COMPULSORY

    def guy_targets(self) -> np.ndarray:
        """(n_characters, 2, 2) bool over (character, answered player seat, tie/beat) for a pending Guy bid."""
        if self.decision is None or self.decision.kind != GUY:
            raise IllegalAction("no Guy bid is pending")
        return self._guy_options()[0]

    def guy_bid(self, character: int, answered: int, mode: int) -> np.ndarray:
        """The tokens Guy would place for an option (D11); all zero where the option is not offered."""
        ok, bids = self._guy_options()
        return bids[character, answered, mode] if ok[character, answered, mode] else np.zeros(3, dtype=np.int64)

    # --- decisions -----------------------------------------------------------------------------------------

    def submit_bids(self, bids: Any, priority: int | None = None) -> None:
        """Every deciding seat's bid at once: an int array (players, T, 3) of token counts per target.

        ``priority`` (two-player variant) is the seat that places Guy's first bid, instead of the coin flip of D9
        when the rule comes to it; where the rule decides, it must agree (a replay checks itself this way)."""
        L = self.layout
        self._expect(BID)
        if priority is not None:
            if L.puppet < 0:
                raise IllegalAction("priority: there is no Scheming phase outside the two-player variant")
            if isinstance(priority, bool) or not isinstance(priority, (int, np.integer)) or priority not in (0, 1):
                raise IllegalAction(f"priority: expected seat 0 or 1, got {priority!r}")
        bids = np.asarray(bids)
        shape = (L.players, L.n_targets, 3)
        if bids.shape != shape:
            raise IllegalAction(f"bids: expected an array of shape {shape}, got {bids.shape}")
        if bids.dtype.kind not in "iu":
            raise IllegalAction(f"bids: expected integer token counts, got dtype {bids.dtype}")
        bids = bids.astype(np.int64, copy=False)
        if (bids < 0).any():
            seat, target, token = map(int, np.argwhere(bids < 0)[0])
            raise IllegalAction(f"seat {seat}: negative {TOKEN_TYPES[token]} on {L.target_names[target]}")
        placed = bids.sum(1)
        held = self.tokens[: L.players]
        if (placed != held).any():
            seat, token = map(int, np.argwhere(placed != held)[0])
            verb = "leaves unplaced" if placed[seat, token] < held[seat, token] else "places more than held:"
            raise IllegalAction(
                f"seat {seat} {verb} {TOKEN_TYPES[token]} (holds {held[seat, token]}, places {placed[seat, token]});"
                " every held token must be placed (D3)"
            )
        cleaned, dropped = clean_bids(bids, L)
        if priority is not None:
            ruled = priority_by_rule(cleaned, L)
            if ruled is not None and ruled != priority:
                raise IllegalAction(f"priority: the rule (D9) gives seat {ruled} priority, not seat {priority}")
        self.history.append({"bids": bids.copy()})
        self.tokens[: L.players] = 0
        self.bids[: L.players] = cleaned
        self.bank += dropped
        self.revealed[:] = 0
        self.revealed[: L.players] = bids
        self.revealed_round = self.round
        self.winners[:] = -2
        self.scheming_gold[:] = 0
        self.cards_drawn = []
        self.cursor = 0
        self.decision = None
        if L.scheming >= 0:
            self._start_scheming(priority)
        else:
            self.phase = RESOLUTION
        self._advance()

    def choose(self, choice: tuple[int, ...] | None) -> None:
        """Answer a non-bid decision: ``None`` declines or passes; ``(area, seat)`` picks a cube;
        ``(character, answered_seat, mode)`` places a Guy bid."""
        d = self.decision
        if d is None or d.kind == BID:
            raise IllegalAction(f"choose: no such decision is pending (pending: {d.kind if d else 'nothing'})")
        if choice is None:
            if not self.can_decline():
                raise IllegalAction(f"{d.kind}: declining is not allowed here")
            self._record(None)
            if d.kind == GUY:
                self._end_scheming()
            else:
                self._apothecary_first = None
            self.decision = None
            self._advance()
            return
        if d.kind == GUY:
            self._place_guy(*self._check_guy(choice))
        else:
            area, seat = self._check_cube(choice)
            self._record((area, seat))
            self._apply_cube_choice(d, area, seat)
        self._advance()

    def place_guy(self, character: int, answered: int, mode: int) -> None:
        self._expect(GUY)
        self.choose((character, answered, mode))

    def choose_cube(self, area: int, seat: int) -> None:
        if self.decision is None or self.decision.kind not in CUBE_DECISIONS:
            raise IllegalAction("no cube decision is pending")
        self.choose((area, seat))

    def decline(self) -> None:
        self.choose(None)

    # --- internals: checks -----------------------------------------------------------------------------------

    def _expect(self, kind: str) -> None:
        d = self.decision
        if d is None:
            raise IllegalAction(f"{kind}: the game is over")
        if d.kind != kind:
            raise IllegalAction(f"{kind}: not pending (pending: {d.kind} from seat(s) {list(d.seats)})")

    def _check_cube(self, choice: tuple[int, ...]) -> tuple[int, int]:
        d = self.decision
        L = self.layout
        if len(choice) != 2:
            raise IllegalAction(f"{d.kind}: expected (area, seat), got {choice!r}")
        area, seat = (int(x) for x in choice)
        if not (0 <= area < len(L.spaces)) or not (0 <= seat < L.seats):
            raise IllegalAction(f"{d.kind}: no such cube position (area {area}, seat {seat})")
        if not self.cube_targets()[area, seat]:
            raise IllegalAction(
                f"{d.kind}: seat {d.seat} may not pick seat {seat}'s cube in {L.components.areas[area].name}"
            )
        return area, seat

    def _check_guy(self, choice: tuple[int, ...]) -> tuple[int, int, int]:
        L = self.layout
        if len(choice) != 3:
            raise IllegalAction(f"guy: expected (character, answered_seat, mode), got {choice!r}")
        character, answered, mode = (int(x) for x in choice)
        if not (0 <= character < L.n_characters and answered in (0, 1) and mode in (TIE, BEAT)):
            raise IllegalAction(f"guy: no such placement {choice!r}")
        if not self._guy_options()[0][character, answered, mode]:
            what = "tie" if mode == TIE else "beat"
            raise IllegalAction(
                f"guy: Guy may not {what} seat {answered}'s bid on {L.target_names[character]} (D10, D11)"
            )
        return character, answered, mode

    def _record(self, value: Any) -> None:
        d = self.decision
        log = self.history[-1]
        if d.kind == GUY:
            log.setdefault("guy", []).append(value)
        elif d.kind == SPY:
            log["spy"] = value
        elif d.kind == APOTHECARY_FIRST:
            log["apothecary"] = [value] if value is not None else None
        elif d.kind == APOTHECARY_SECOND:
            log["apothecary"].append(value)
        else:
            log.setdefault("remove", []).append(value)

    # --- bidding and scheming --------------------------------------------------------------------------------

    def _start_scheming(self, priority: int | None) -> None:
        L = self.layout
        self.phase = SCHEMING
        first = priority_by_rule(self.bids[:2], L) if priority is None else priority  # D9, before Scheming Gold goes
        gold = self.bids[:, L.scheming, GOLD].copy()
        self.scheming_gold[:] = gold
        self.bank[GOLD] += gold.sum()
        self.bids[:, L.scheming] = 0
        if first is None:
            first = int(self._coin_rng.integers(2))  # D9: seeded coin flip
        self.history[-1]["priority"] = first
        self._guy_order = (first, 1 - first)
        self._guy_count = 0
        self.guy_last_placer = -1
        self._next_guy_turn()

    def _guy_options(self) -> tuple[np.ndarray, np.ndarray]:
        """Guy's legal placements and their tokens (D10, D11): ok (C, 2, 2) bool, bids (C, 2, 2, 3).
        Computed once per Guy turn; the state does not change while the turn is pending."""
        if self._guy_cache is None:
            L = self.layout
            C = L.n_characters
            player_bids = self.bids[:2, :C]  # (2, C, 3)
            open_ = ~self.bids[L.puppet, :C].any(1)  # D10: one Guy bid per character ...
            if L.card_space >= 0:
                open_[L.card_space] = False  # ... and none on the Card space, where there is no contest
            guy = self.tokens[L.puppet]
            beat, can_beat = guy_beats(player_bids, guy, L.legal[:C])  # D11
            can_tie = (player_bids <= guy).all(2)
            bids = np.stack([player_bids, beat], axis=2).transpose(1, 0, 2, 3)  # (C, 2, 2, 3)
            offered = (player_bids.any(2) & open_).T  # (C, 2): a player's bid to answer
            ok = offered[:, :, None] & np.stack([can_tie, can_beat], axis=2).transpose(1, 0, 2)
            self._guy_cache = (ok, bids)
        return self._guy_cache

    def _next_guy_turn(self) -> None:
        L = self.layout
        self._guy_cache = None
        if self._guy_count >= MAX_GUY_BIDS or not self.tokens[L.puppet].any() or not self._guy_options()[0].any():
            self._end_scheming()  # D12: six bids, no tokens, or the player to act cannot place
            return
        self.decision = Pending(GUY, (self._guy_order[self._guy_count % 2],))

    def _place_guy(self, character: int, answered: int, mode: int) -> None:
        L = self.layout
        tokens = self._guy_options()[1][character, answered, mode]
        actor = self.decision.seat
        self._record((character, answered, mode))
        self.tokens[L.puppet] -= tokens
        self.bids[L.puppet, character] = tokens
        self.revealed[L.puppet, character] = tokens
        self._guy_count += 1
        self.guy_last_placer = actor
        self.decision = None
        self._next_guy_turn()

    def _end_scheming(self) -> None:
        L = self.layout
        self.bank += self.tokens[L.puppet]  # Guy's unplaced tokens go to the bank
        self.tokens[L.puppet] = 0
        self.decision = None
        self.phase = RESOLUTION

    # --- resolution ------------------------------------------------------------------------------------------

    def _advance(self) -> None:
        """Run the rules until a decision is needed or the game is over."""
        L = self.layout
        if self.phase == RESOLUTION and self.cursor == 0 and self._winner is None:
            self._contest()
        while self.decision is None and self.phase == RESOLUTION:
            if self._card_queue:
                self._draw_cards()
            elif self.cursor < L.n_characters:
                c = self.cursor
                self.cursor += 1
                if c == L.card_space:
                    self._start_cards(c)
                else:
                    self._resolve_character(c)
            else:
                self._end_round()

    def _contest(self) -> None:
        """Once bids are final (after Scheming), find each character's strictly highest bid (docs/rules.md §3, §4)."""
        keys = self.layout.strength @ self.bids.transpose(0, 2, 1)  # (S, T)
        best = keys.max(0)
        unique = (keys == best).sum(0) == 1
        self._contested = best > 0
        self._winner = np.where(self._contested & unique, keys.argmax(0), -1).tolist()
        self._contested = self._contested.tolist()

    def _resolve_character(self, c: int) -> None:
        """docs/rules.md §4: the strictly highest bid wins; tokens are spent; benefits come at once."""
        L = self.layout
        if not self._contested[c]:
            self.winners[c] = -1  # nobody bid
            return
        col = self.bids[:, c]
        winner = self._winner[c]
        if self.rules.bid_refunds:
            if winner >= 0:
                self.bank += col[winner]
                col[winner] = 0
            self.tokens += col  # losing and tied bids go back to their owners
        else:
            self.bank += col.sum(0)
        col[:] = 0
        self.winners[c] = winner
        if winner < 0:
            return
        ch = L.card[c]
        self.support[winner] += ch.support
        if ch.tokens != (0, 0, 0):
            self._pay(winner, L.rewards[c])
        if ch.area >= 0:
            self._place_cube(winner, ch.area)
        if ch.special == "spy":
            self._spy_owner = winner
            if self._spy_targets(winner).any():
                self.decision = Pending(SPY, (self._decider(winner),))
        elif ch.special == "apothecary" and self._apothecary_first_targets().any():
            self.decision = Pending(APOTHECARY_FIRST, (self._decider(winner),))

    def _decider(self, winner: int) -> int:
        """Guy's Spy and Apothecary are decided by whoever placed Guy's last bid this round (docs/rules.md §6)."""
        return self.guy_last_placer if winner == self.layout.puppet else winner

    def _pay(self, seat: int, amount: np.ndarray) -> None:
        """Tokens from the bank, as far as the bank can pay (D1)."""
        pay = np.minimum(amount, self.bank)
        self.bank -= pay
        self.tokens[seat] += pay

    def _place_cube(self, seat: int, area: int) -> None:
        """One cube on an empty space; none if the area is full or the seat has no cube left (D2)."""
        if self.supply[seat] > 0 and self.cubes[area].sum() < self.layout.spaces[area]:
            self.cubes[area, seat] += 1
            self.supply[seat] -= 1

    def _spy_targets(self, owner: int) -> np.ndarray:
        """D4: any other seat's cube outside protected areas; nothing if the owner has no cube left (D2)."""
        if self.supply[owner] == 0:
            return np.zeros(self.cubes.shape, dtype=bool)
        ok = (self.cubes > 0) & ~self.protected_areas()[:, None]
        ok[:, owner] = False
        return ok

    def _apothecary_available(self) -> np.ndarray:
        return (self.cubes > 0) & ~self.protected_areas()[:, None]

    def _apothecary_first_targets(self) -> np.ndarray:
        """D5: a cube that has a partner of another owner in another area."""
        avail = self._apothecary_available()
        partners = avail.sum() - avail.sum(1, keepdims=True) - avail.sum(0, keepdims=True) + 1
        return avail & (partners > 0)

    def _apothecary_second_targets(self, area: int, seat: int) -> np.ndarray:
        ok = self._apothecary_available()
        ok[area, :] = False
        ok[:, seat] = False
        return ok

    def _remove_targets(self, drawer: int) -> np.ndarray:
        ok = (self.cubes > 0) & ~self.protected_areas()[:, None]
        ok[:, drawer] = False
        return ok

    def _apply_cube_choice(self, d: Pending, area: int, seat: int) -> None:
        cubes, supply = self.cubes, self.supply
        self.decision = None
        if d.kind == SPY:
            owner = self._spy_owner
            cubes[area, seat] -= 1
            supply[seat] += 1
            cubes[area, owner] += 1
            supply[owner] -= 1
        elif d.kind == APOTHECARY_FIRST:
            self._apothecary_first = (area, seat)
            self.decision = Pending(APOTHECARY_SECOND, d.seats)
        elif d.kind == APOTHECARY_SECOND:
            a1, s1 = self._apothecary_first
            self._apothecary_first = None
            cubes[a1, s1] -= 1
            cubes[a1, seat] += 1
            cubes[area, seat] -= 1
            cubes[area, s1] += 1
        else:  # REMOVE
            cubes[area, seat] -= 1
            supply[seat] += 1

    # --- the first edition's Card space (docs/rules.md §7) -------------------------------------------------------

    def _shuffled_deck(self) -> list[int]:
        return self._deck_rng.permutation(len(self.layout.components.deck)).tolist()

    def _reshuffled(self) -> list[int]:
        """The pile after a D15 reshuffle: the record's next order when replaying, else the generator's. The
        generator draws either way, so that a game replayed with its seed plays on as the original did."""
        drawn = self._shuffled_deck()
        if not self.replaying:
            return drawn
        if not self.reshuffles:
            raise UnrecordedDraw(
                "the deck runs out and is reshuffled here, but the record lists no reshuffle", "reshuffles"
            )
        self.recorded_deck = True
        return self.reshuffles.pop(0)

    def _start_cards(self, c: int) -> None:
        col = self.bids[:, c]
        gold = col[:, GOLD].copy()
        self.bank += col.sum(0)  # all Gold placed there goes to the bank, refunds or not
        col[:] = 0
        self.winners[c] = -1
        limit = self.layout.components.card_max_gold
        self._card_queue = [[s, min(int(g), limit)] for s, g in enumerate(gold) if g > 0]

    def _draw_cards(self) -> None:
        """Draw seat by seat from seat 0, each card resolved as it is drawn; stop at a Remove decision."""
        deck = self.layout.components.deck
        while self._card_queue and self.decision is None:
            entry = self._card_queue[0]
            seat = entry[0]
            entry[1] -= 1
            if entry[1] == 0:
                self._card_queue.pop(0)
            if not self._draw_pile:
                self._draw_pile = self._reshuffled()  # D15: reshuffled, discards included
                self.history[-1].setdefault("reshuffles", []).append(list(self._draw_pile))
            elif self.replaying and not self.recorded_deck:
                raise UnrecordedDraw("a card is drawn, but the record gives no deck (start.deck)", "start.deck")
            index = self._draw_pile.pop(0)
            card = deck[index]
            self.cards_drawn.append((seat, index))
            self.support[seat] += card.support
            if card.tokens != (0, 0, 0):
                self._pay(seat, np.array(card.tokens, dtype=np.int64))
            if card.remove and self._remove_targets(seat).any():
                self.decision = Pending(REMOVE, (seat,))

    # --- end of round, end of game ---------------------------------------------------------------------------

    def board_full(self) -> bool:
        return bool((self.cubes.sum(1) == self.layout.spaces).all())

    def _end_round(self) -> None:
        if self.board_full():  # D6: checked after the whole Resolution phase, Card space included
            self._score()
            return
        if self.round >= self.rules.max_rounds:  # D8
            self.truncated = True
            self._score()
            return
        self._patronage()
        self.round += 1
        self._start_bidding()

    def _patronage(self) -> None:
        """Everyone below the minimum takes Gold up to it, seat by seat from seat 0 (D17)."""
        minimum = self.layout.components.patronage_minimum
        held = self.tokens.sum(1)
        for seat in range(self.layout.seats):
            want = minimum - held[seat]
            if want > 0:
                take = min(int(want), int(self.bank[GOLD]))
                self.bank[GOLD] -= take
                self.tokens[seat, GOLD] += take

    def _start_bidding(self) -> None:
        L = self.layout
        self._winner = None
        self.phase = BIDDING  # revealed, winners, scheming_gold and cards_drawn keep the last round's story
        self.decision = Pending(BID, tuple(range(L.players)))

    def _score(self) -> None:
        L = self.layout
        self.phase = OVER
        self.decision = None
        token_points = self.tokens @ L.token_points
        area_points = np.zeros(L.seats, dtype=np.int64)
        for a, row in enumerate(self.cubes):
            most = row.max()
            if most > 0 and np.count_nonzero(row == most) == 1:
                seat = int(row.argmax())
                area_points[seat] += L.area_support[a]
                if self.rules.area_control_bonus and most == L.spaces[a]:
                    area_points[seat] += 10
        total = self.support + token_points + area_points
        if L.puppet >= 0:  # D13: a player must also beat the puppet strictly
            best = total[: L.players].max()
            winners = [s for s in range(L.players) if total[s] == best] if best > total[L.puppet] else []
        else:
            winners = [s for s in range(L.seats) if total[s] == total.max()]  # D7: ties share the win
        self.final = {
            "support": total.tolist(),
            "token_points": token_points.tolist(),
            "area_points": area_points.tolist(),
            "winners": winners,
        }

    # --- copying ---------------------------------------------------------------------------------------------

    def copy(self) -> Game:
        """An independent copy (random generators included)."""
        import copy

        return copy.deepcopy(self)

    def next_coin(self) -> int:
        """D9's coin as this game would flip it next (0 or 1), its generator untouched: every copy of the game flips
        the same, and a batched game loaded from it (``BatchedGame.load``) is given it as the priority."""
        bits = type(self._coin_rng.bit_generator)()
        bits.state = self._coin_rng.bit_generator.state  # the state copied: cheaper than a deep copy of the generator
        return int(np.random.Generator(bits).integers(2))
