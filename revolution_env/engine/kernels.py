"""The per-game rules of the batched engine: plain loops over one game's slice of the batch arrays.

These functions mirror :class:`revolution_env.engine.game.Game` rule by rule, under the same names and citing the
same sections and decisions of ``docs/rules.md`` (the scalar engine stays the reference; ``tests/test_batched.py``
drives both with the same decisions and compares them). They are compiled with Numba when it is installed
(``pip install revolution-env[fast]``) and run as plain Python otherwise (the same results, far more slowly). Set
``REVOLUTION_NO_NUMBA=1`` to force plain Python.

Why loops over games rather than NumPy over the batch for this part: resolution is a chain of small steps per
character that any game may leave at a decision (Spy, Apothecary, Guy, Remove), and compiled, one game's round is
cheaper than the batch-wide NumPy work around it (bids, masks, observations; ``scripts/benchmark.py`` profiles them).

What they read and write travels as typed records, named tuples of arrays that Numba compiles as it compiles a
tuple: :class:`State` (the games), :class:`Tables` (the layout), :class:`History` (the story of each game, for
export), :class:`Work` (a call's work arrays), :class:`RandomPlay` (the random seats and their generators), and the
decisions of a call (:class:`Bids`, :class:`Choices`, :class:`Step`). A game's integer record ``State.meta`` has the
columns of :class:`Meta`, the layout's numbers ``Tables.cfg`` the entries of :class:`Cfg`.

The entry points (``*_many``), called from Python, take the records as plain tuples (``tuple(record)``) and name
them again: Numba reads the types of a call's arguments from Python quickly for plain tuples, slowly for named ones.
They borrow them (``common.jit.borrowed``): Numba counts a reference, atomically, each time it binds an array to a
name or passes one on, and those counts are much of the compiled time of a step where they are kept. An entry point
that steps games allocates its work arrays (:func:`scratch`) and hands them to its loop over the games
(``*_all``), which, with every rule it calls, is compiled without reference counting (``jit(refcounts=False)``): a
borrowed array skips the atomic count but not the runtime's two calls per binding, some 250 a game through
:func:`advance`, and the loops are faster without them (``git log`` of this file has the measurements). The
functions inside take a game index ``g`` and the records they use; the small ones called from one place are inlined
(``@jit(inline=True)``), and those called from several, :func:`advance`, :func:`cube_targets` and the Scheming
phase's, are called, not inlined, since every inlined copy of them is compiled again. A call passes every array of
every record it is given, one by one: those called many times a game take a smaller record of what they read
(:class:`Board`, :class:`Scheming`), which is faster.
"""

from __future__ import annotations

from enum import IntEnum
from typing import NamedTuple

import numpy as np

from revolution_env.common.jit import COMPILED, borrowed, jit  # noqa: F401  (COMPILED: whether compiled)
from revolution_env.engine.components import Token
from revolution_env.engine.game import (
    APOTHECARY_FIRST,
    APOTHECARY_SECOND,
    BID,
    BIDDING,
    GUY,
    OVER,
    REMOVE,
    RESOLUTION,
    SCHEMING,
    SPY,
    Decision,
)

NONE = Decision.NONE  # no decision pending: the rules run on, or the game is over

# Plain-int copies of the decisions and token types: for NumPy, which compares an array with an IntEnum member by a
# far slower path than with an int, and for the compiled heuristic bots (``agents.compiled``).
K_NONE, K_BID, K_GUY, K_SPY = int(NONE), int(BID), int(GUY), int(SPY)
K_APO1, K_APO2, K_REMOVE = int(APOTHECARY_FIRST), int(APOTHECARY_SECOND), int(REMOVE)
FORCE, BLACKMAIL, GOLD = int(Token.FORCE), int(Token.BLACKMAIL), int(Token.GOLD)


class Meta(IntEnum):
    """The columns of a game's integer record, ``State.meta`` (N, len(Meta))."""

    ROUND = 0  # the round being played (from 1)
    PHASE = 1  # the Phase, as its number
    KIND = 2  # the pending Decision, as its number (NONE while the rules run, and once the game is over)
    DECIDER = 3  # the seat that makes a pending non-bid decision
    CURSOR = 4  # the next character to resolve (docs/rules.md §4)
    GUY_COUNT = 5  # Guy's bids placed this round (D12)
    GUY_FIRST = 6  # the seat placing Guy's first bid (D9)
    GUY_LAST = 7  # the seat that placed Guy's last bid, -1 none: it decides for Guy (docs/rules.md §6)
    SPY_OWNER = 8  # the Spy's winner (D4)
    APO_AREA = 9  # the Apothecary's first pick (D5), -1 none
    APO_SEAT = 10
    TRUNCATED = 11  # 1 where the game was cut at max_rounds (D8)
    REVEALED_ROUND = 12  # the round whose bids ``State.revealed`` holds
    # The first edition's deck (D15): the shuffle in use (counted from 0, in slot DECK_SHUFFLE % Cfg.SLOTS of
    # ``State.deck``) and the cards left in its draw pile (its last DECK_LEFT entries).
    DECK_SHUFFLE = 13
    DECK_LEFT = 14


class Cfg(IntEnum):
    """The entries of a layout's numbers, ``Tables.cfg`` (len(Cfg),) int64."""

    CHARS = 0  # characters (C)
    TARGETS = 1  # targets: the characters and the Scheming space (T)
    SEATS = 2  # seats: the players and the puppet (S)
    PLAYERS = 3  # players (P)
    AREAS = 4  # areas (A)
    PUPPET = 5  # the puppet's seat, -1 none (docs/rules.md §6)
    SCHEMING = 6  # the Scheming space's target, -1 none
    SPY = 7  # the Spy's character
    APOTHECARY = 8  # the Apothecary's character
    REFUNDS = 9  # Bid Refunds (docs/rules.md §4)
    AREA_CONTROL_BONUS = 10  # Area Control Bonus (docs/rules.md §5)
    MAX_ROUNDS = 11  # the round at which a game is truncated (D8)
    MAX_CHARACTERS = 12  # the characters a bid counts (D16)
    PATRONAGE = 13  # the tokens Patronage tops a seat up to (docs/rules.md §2)
    CARD = 14  # the first edition's Card space's target, -1 none (docs/rules.md §7)
    CARD_MAX = 15  # the Gold per seat on the Card space that draws a card
    DECK = 16  # the deck's size (D)
    SLOTS = 17  # the shuffles of the deck held per game: the one in use and those drawn ahead


class Outcome(IntEnum):
    """What became of one game's decision in :func:`step_many` and :func:`choose_many`."""

    DECIDED = -1
    MISPLACED_BID = 0  # the bids place other than exactly what the seats hold (D3): the game left as it was
    REFUSED_CHOICE = 1  # the choice is not allowed: the game left as it was
    REFUSED_RANDOM = 2  # a random seat's choice was refused (never expected): the game stopped there


class State(NamedTuple):
    """N games of one layout, the batch first: what the rules read and write (``BatchedGame``'s arrays)."""

    tokens: np.ndarray  # (N, S, 3) held, by type (Force, Blackmail, Gold)
    bank: np.ndarray  # (N, 3)
    support: np.ndarray  # (N, S)
    cubes: np.ndarray  # (N, A, S)
    supply: np.ndarray  # (N, S) cubes not on the board
    bids: np.ndarray  # (N, S, T, 3) still on the bid boards
    revealed: np.ndarray  # (N, S, T, 3) as placed, the puppet's included
    winners: np.ndarray  # (N, T): -2 unresolved, -1 nobody, else seat
    scheming_gold: np.ndarray  # (N, S)
    meta: np.ndarray  # (N, len(Meta)) int64: the columns of Meta
    final_support: np.ndarray  # (N, S)
    final_tokens: np.ndarray  # (N, S)
    final_areas: np.ndarray  # (N, S)
    final_win: np.ndarray  # (N, S) bool
    deck: np.ndarray  # (N, Cfg.SLOTS, D): shuffles of the deck (card indices), the one in use and those drawn ahead
    card_queue: np.ndarray  # (N, S): cards each seat still draws from the Card space being resolved
    drawn: np.ndarray  # (N, S, D): cards drawn this round per seat and card index


class Tables(NamedTuple):
    """What the rules read of a layout (``engine.game.Layout``), as arrays."""

    cfg: np.ndarray  # (len(Cfg),) int64: the entries of Cfg
    legal: np.ndarray  # (T, 3) bool: the token types each target takes (D18)
    strength: np.ndarray  # (3,): a bid's strength is its dot product with this (docs/rules.md §3)
    rewards: np.ndarray  # (C, 3): the tokens each character pays its winner
    char_support: np.ndarray  # (C,)
    char_area: np.ndarray  # (C,): the area each character places a cube in, -1 none
    spaces: np.ndarray  # (A,): the spaces of each area
    area_support: np.ndarray  # (A,): the support an area's control scores (docs/rules.md §5)
    token_points: np.ndarray  # (3,): the support a held token scores
    card_support: np.ndarray  # (D,): the first edition's cards (docs/rules.md §7)
    card_tokens: np.ndarray  # (D, 3)
    card_remove: np.ndarray  # (D,) bool


class History(NamedTuple):
    """Each game's story for export, per round index (``BatchedGame`` grows the rounds as games go on)."""

    bids: np.ndarray  # (N, R, P, T, 3): the players' bids as placed
    priority: np.ndarray  # (N, R): the seat placing Guy's first bid (D9), -1 none
    # the non-bid choices (:func:`choose`'s values; -2 none, -1 declined or passed)
    spy: np.ndarray  # (N, R)
    apothecary: np.ndarray  # (N, R, 2): the first pick and the second
    guy: np.ndarray  # (N, R, 7): Guy's placements in order (at most six, then a pass: D12)
    remove: np.ndarray  # (N, R, draws): the Remove cards' picks in order


class Work(NamedTuple):
    """Work arrays that one call lends to each game in turn (:func:`scratch`)."""

    picks: np.ndarray  # (A, S) bool: the cubes a decision may pick (:func:`cube_targets`)
    placements: np.ndarray  # (C, 2, 2) bool: Guy's placements (:func:`guy_options`)
    beats: np.ndarray  # (C, 2, 3): the tokens of Guy's beats
    tally: np.ndarray  # (A + S,): room for :func:`cube_targets` to count in


class Board(NamedTuple):
    """What the cube decisions' options read (:func:`cube_targets`), picked from a State and its Tables
    (:func:`board`)."""

    cubes: np.ndarray
    supply: np.ndarray
    meta: np.ndarray
    cfg: np.ndarray
    spaces: np.ndarray


class Scheming(NamedTuple):
    """What the Scheming phase's rules read and write (:func:`guy_options`, :func:`next_guy_turn`,
    :func:`place_guy`, :func:`end_scheming`), picked from a State and its Tables (:func:`scheming`)."""

    tokens: np.ndarray
    bank: np.ndarray
    bids: np.ndarray
    revealed: np.ndarray
    meta: np.ndarray
    cfg: np.ndarray
    legal: np.ndarray


class RandomPlay(NamedTuple):
    """The seats that play at random (``engine.random_play``'s rule) and what they draw from."""

    seats: np.ndarray  # (N, P) bool: the random seats of each game
    states: np.ndarray  # (N,) int64: each game's generator (:func:`random_states`), advanced in place
    targets: np.ndarray  # (3, W): each token type's legal targets, the first counts[t] of its row
    counts: np.ndarray  # (3,)
    # at most one choice per game in a call of :func:`play_random_many`, and none in :func:`step_many`: the first
    # edition's, whose deck the caller draws ahead between choices (D15)
    one_at_a_time: bool


class Bids(NamedTuple):
    """The players' bids of some games (:func:`submit_many`), a row per game."""

    games: np.ndarray  # (n,) the games, distinct, each waiting for bids
    bids: np.ndarray  # (n, P, T, 3) token counts per target, each seat's placing exactly what it holds (D3)
    coin: np.ndarray  # (n,) the seat placing Guy's first bid where D9's rule comes to its coin flip


class Choices(NamedTuple):
    """The non-bid choices of some games (:func:`choose_many`), a row per game."""

    games: np.ndarray  # (n,) the games, distinct
    values: np.ndarray  # (n,) :func:`choose`'s values
    outcome: np.ndarray  # (n,) written: Outcome.DECIDED or REFUSED_CHOICE


class Step(NamedTuple):
    """One decision of each of some games (:func:`step_many`), a row per game: bids or a choice."""

    games: np.ndarray  # (n,) the games, distinct, each waiting for a decision
    bids: np.ndarray  # (n, P, T, 3) where the game waits for bids (the random seats' rows written here)
    values: np.ndarray  # (n,) where it waits for another decision: :func:`choose`'s value
    coin: np.ndarray  # (n,) D9's coin flip, as in Bids
    outcome: np.ndarray  # (n,) written: an Outcome


@jit(inline=True)
def scratch(cfg):
    """The :class:`Work` arrays of one call, allocated once per call rather than once per game, by the entry points:
    their loops over the games, and everything those call, are compiled without reference counting
    (``jit(refcounts=False)``), where nothing may allocate."""
    C, A, S = cfg[Cfg.CHARS], cfg[Cfg.AREAS], cfg[Cfg.SEATS]
    return Work(
        np.zeros((A, S), dtype=np.bool_),
        np.zeros((C, 2, 2), dtype=np.bool_),
        np.zeros((C, 2, 3), dtype=np.int64),
        np.zeros(A + S, dtype=np.int64),
    )


@jit(inline=True)
def board(st, tb):
    """The :class:`Board` of ``st`` and ``tb``."""
    return Board(st.cubes, st.supply, st.meta, tb.cfg, tb.spaces)


@jit(inline=True)
def scheming(st, tb):
    """The :class:`Scheming` of ``st`` and ``tb``."""
    return Scheming(st.tokens, st.bank, st.bids, st.revealed, st.meta, tb.cfg, tb.legal)


# --- the options of a decision -----------------------------------------------------------------------------------


@jit(refcounts=False)
def cube_targets(g, kind, b, out, tally):
    """(A, S) bool into ``out``: the cubes a ``kind`` decision (Spy, Apothecary, Remove) may pick now (D4, D5, the
    Remove card of docs/rules.md §7), as ``Game.cube_targets``. ``tally`` (at least A + S int64): room to count in.
    Returns how many there are. One pass over the cubes (two for the Apothecary's first pick, whose rule counts them
    first), without branches on them, which a branch predictor would miss as often as not."""
    cubes, supply, meta, cfg, spaces = b.cubes, b.supply, b.meta, b.cfg, b.spaces  # b: a Board
    A, S = cfg[Cfg.AREAS], cfg[Cfg.SEATS]
    acb = cfg[Cfg.AREA_CONTROL_BONUS]
    # the seat whose cubes are out of reach (the Spy's owner, the Apothecary's first pick, the Remove card's drawer)
    # and the area (the Apothecary's first pick's); -1: none
    barred_seat, barred_area = -1, -1
    if kind == SPY:
        barred_seat = meta[g, Meta.SPY_OWNER]
        if supply[g, barred_seat] == 0:  # D2: no cube of his own to put in its place
            for a in range(A):
                for s in range(S):
                    out[a, s] = False
            return 0
    elif kind == APOTHECARY_SECOND:
        barred_seat, barred_area = meta[g, Meta.APO_SEAT], meta[g, Meta.APO_AREA]
    elif kind == REMOVE:  # an opponent's cube, the drawer's own are out of reach (docs/rules.md §7)
        barred_seat = meta[g, Meta.DECIDER]
    apo1 = kind == APOTHECARY_FIRST
    if apo1:
        for k in range(A + S):
            tally[k] = 0  # the pickable cubes per area (A), then per seat (S): the Apothecary's first pick counts them
    n = 0
    for a in range(A):
        prot = False
        if acb:  # Area Control Bonus: an area wholly held by one seat is untouchable (docs/rules.md §5)
            for s in range(S):
                prot |= cubes[g, a, s] == spaces[a]
        for s in range(S):
            ok = (cubes[g, a, s] > 0) & (not prot) & (s != barred_seat) & (a != barred_area)
            out[a, s] = ok
            n += ok
            if apo1:
                tally[a] += ok
                tally[A + s] += ok
    if not apo1 or n == 0:
        return n
    # D5, the Apothecary's first pick: a cube with a partner of another owner in another area (``&``, not ``and``,
    # which compiles to a branch: whether a cube is pickable is as good as random to a branch predictor)
    total, n = n, 0
    for a in range(A):
        for s in range(S):
            ok = out[a, s] & (total - tally[a] - tally[A + s] + 1 > 0)
            out[a, s] = ok
            n += ok
    return n


@jit(refcounts=False)
def guy_options(g, sch, ok, beat):
    """Guy's legal placements (D10, D11 revised), as ``Game._guy_options``: ``ok`` (C, 2, 2) over (character,
    answered player, tie/beat) and the beats' tokens ``beat`` (C, 2, 3), by the rule of ``engine.game.guy_beats``
    (``sch``: a :class:`Scheming`). Returns how many."""
    tokens, bids, cfg, legal = sch.tokens, sch.bids, sch.cfg, sch.legal
    puppet = cfg[Cfg.PUPPET]
    n = 0
    for c in range(cfg[Cfg.CHARS]):
        open_ = c != cfg[Cfg.CARD]  # none on the Card space, where there is no contest
        for t in range(3):
            if bids[g, puppet, c, t] > 0:  # D10: one Guy bid per character
                open_ = False
        for p in range(2):
            has = False
            can_copy = True
            for t in range(3):
                b = bids[g, p, c, t]
                beat[c, p, t] = b
                if b > 0:
                    has = True
                if tokens[g, puppet, t] < b:
                    can_copy = False
            found = False
            if can_copy:
                for t in (GOLD, BLACKMAIL, FORCE):  # D11: the lowest-value type available
                    if tokens[g, puppet, t] - bids[g, p, c, t] >= 1 and legal[c, t]:
                        beat[c, p, t] += 1
                        found = True
                        break
            ok[c, p, 0] = has and open_ and can_copy
            ok[c, p, 1] = has and open_ and found
            n += int(ok[c, p, 0]) + int(ok[c, p, 1])  # ints: NumPy adds two bools as a logical or
    return n


@jit(inline=True)
def can_decline(g, st):
    """Whether the pending decision may be declined or passed, as ``Game.can_decline``: the Spy (D4), the
    Apothecary's first pick (D5), Guy's bids after the first two (D12)."""
    kind = st.meta[g, Meta.KIND]
    if kind in (SPY, APOTHECARY_FIRST):
        return True
    return kind == GUY and st.meta[g, Meta.GUY_COUNT] >= 2


# --- bidding and scheming (docs/rules.md §3, §6) -------------------------------------------------------------------


@jit(inline=True)
def reveal_bids(g, raw, i, st, tb, hist):
    """Game ``g``'s bids ``raw[i]`` (P, T, 3) revealed, recorded for export and cleaned, as ``Game.submit_bids``:
    illegal tokens (D18), then the tokens past a player's sixth character (D16), go to the bank (``clean_bids``,
    docs/rules.md §3); the puppet's row emptied for Guy's placements."""
    tokens, bank, bids, revealed, meta = st.tokens, st.bank, st.bids, st.revealed, st.meta
    cfg, legal = tb.cfg, tb.legal
    hist_bids = hist.bids
    C, T, S, P = cfg[Cfg.CHARS], cfg[Cfg.TARGETS], cfg[Cfg.SEATS], cfg[Cfg.PLAYERS]
    r = meta[g, Meta.ROUND] - 1
    for p in range(P, S):  # the puppet's seat: its bids come from the players' Guy placements
        for c in range(T):
            for t in range(3):
                revealed[g, p, c, t] = 0
                bids[g, p, c, t] = 0
    max_chars = cfg[Cfg.MAX_CHARACTERS]
    to_bank0 = to_bank1 = to_bank2 = 0  # the tokens each type sends to the bank, paid once
    for p in range(P):  # every entry of the players' rows is written
        if tokens[g, p, 0] + tokens[g, p, 1] + tokens[g, p, 2] <= max_chars:
            # too few tokens to bid on more characters than allowed (D16): only illegal tokens go to the bank, each
            # entry on its own, a faster loop than the general rule below
            for c in range(T):
                for t in range(3):
                    n = raw[i, p, c, t]
                    ok = legal[c, t]
                    revealed[g, p, c, t] = n
                    hist_bids[g, r, p, c, t] = n
                    bids[g, p, c, t] = n * ok
                    lost = n * (not ok)
                    to_bank0 += lost * (t == 0)
                    to_bank1 += lost * (t == 1)
                    to_bank2 += lost * (t == 2)
        else:
            placed = 0  # characters that still carry tokens (D16: counted after illegal tokens are removed)
            for c in range(T):  # ``&`` and ``|``, not ``and`` and ``or``, which compile to branches on the bids
                has = False
                for t in range(3):
                    n = raw[i, p, c, t]
                    revealed[g, p, c, t] = n
                    hist_bids[g, r, p, c, t] = n
                    has |= (n > 0) & legal[c, t]
                counted = has & (c < C)
                placed += counted
                keep = not (counted & (placed > max_chars))
                for t in range(3):
                    n = raw[i, p, c, t]
                    kept = keep & legal[c, t]
                    bids[g, p, c, t] = n * kept
                    lost = n * (not kept)  # illegal, or past the sixth character: to the bank
                    to_bank0 += lost * (t == 0)
                    to_bank1 += lost * (t == 1)
                    to_bank2 += lost * (t == 2)
        for t in range(3):
            tokens[g, p, t] = 0
    bank[g, 0] += to_bank0
    bank[g, 1] += to_bank1
    bank[g, 2] += to_bank2
    meta[g, Meta.REVEALED_ROUND] = meta[g, Meta.ROUND]


@jit(inline=True)
def priority_by_rule(g, st, tb):
    """D9 on the cleaned bids of game ``g`` (as ``engine.game.priority_by_rule``): the seat placing Guy's first bid,
    or -1 where the rule comes to the coin flip."""
    bids, cfg, strength = st.bids, tb.cfg, tb.strength
    sch = cfg[Cfg.SCHEMING]
    gold0, gold1 = bids[g, 0, sch, GOLD], bids[g, 1, sch, GOLD]
    if gold0 != gold1:
        return 0 if gold0 > gold1 else 1
    best0 = best1 = where0 = where1 = 0  # each seat's strongest bid and its character (the first of equals)
    for c in range(cfg[Cfg.CHARS]):
        key = strength[0] * bids[g, 0, c, 0] + strength[1] * bids[g, 0, c, 1] + strength[2] * bids[g, 0, c, 2]
        if key > best0:
            best0, where0 = key, c
        key = strength[0] * bids[g, 1, c, 0] + strength[1] * bids[g, 1, c, 1] + strength[2] * bids[g, 1, c, 2]
        if key > best1:
            best1, where1 = key, c
    if best0 != best1:
        return 0 if best0 > best1 else 1
    if best0 > 0 and where0 != where1:
        return 0 if where0 < where1 else 1
    return -1


@jit(inline=True)
def start_scheming(g, coin, st, tb, hist, work):
    """The Scheming phase (docs/rules.md §6), as ``Game._start_scheming``: Guy's first placer by D9's rule (before
    the Scheming Gold goes), else ``coin``, recorded for export; the Scheming Gold to the bank, whatever follows; then
    Guy's first turn."""
    bank, bids, scheming_gold, meta, cfg = st.bank, st.bids, st.scheming_gold, st.meta, tb.cfg
    sch = cfg[Cfg.SCHEMING]
    ruled = priority_by_rule(g, st, tb)
    first = ruled if ruled >= 0 else coin
    hist.priority[g, meta[g, Meta.ROUND] - 1] = first
    for s in range(cfg[Cfg.SEATS]):
        gold = bids[g, s, sch, GOLD]
        scheming_gold[g, s] = gold
        bank[g, GOLD] += gold
        for t in range(3):
            bids[g, s, sch, t] = 0
    meta[g, Meta.PHASE] = SCHEMING
    meta[g, Meta.GUY_FIRST] = first
    meta[g, Meta.GUY_COUNT] = 0
    meta[g, Meta.GUY_LAST] = -1
    next_guy_turn(g, scheming(st, tb), work)


@jit(refcounts=False)
def next_guy_turn(g, sch, work):
    """Guy's next bid, asked of the players in turn from the first placer, as ``Game._next_guy_turn``; the phase
    ends after six bids, with Guy's tokens spent, or where the player to act cannot place (D12)."""
    tokens, meta, cfg = sch.tokens, sch.meta, sch.cfg
    puppet = cfg[Cfg.PUPPET]
    held = tokens[g, puppet, 0] + tokens[g, puppet, 1] + tokens[g, puppet, 2]
    if meta[g, Meta.GUY_COUNT] >= 6 or held == 0:  # D12
        end_scheming(g, sch)
        return
    if guy_options(g, sch, work.placements, work.beats) == 0:  # the player to act cannot place
        end_scheming(g, sch)
        return
    first = meta[g, Meta.GUY_FIRST]
    meta[g, Meta.KIND] = GUY
    meta[g, Meta.DECIDER] = first if meta[g, Meta.GUY_COUNT] % 2 == 0 else 1 - first


@jit(refcounts=False)
def place_guy(g, value, sch, work):
    """One Guy bid, as ``Game._place_guy``: ``value`` is ``(character * 2 + answered_seat) * 2 + mode`` (a tie
    copies the answered bid, a beat adds one token: D11). Returns False (and changes nothing) if it is not
    offered."""
    tokens, bids, revealed, meta, cfg = sch.tokens, sch.bids, sch.revealed, sch.meta, sch.cfg
    c, answered, mode = value // 4, (value // 2) % 2, value % 2
    if c >= cfg[Cfg.CHARS]:
        return False
    puppet = cfg[Cfg.PUPPET]
    ok, beat = work.placements, work.beats
    guy_options(g, sch, ok, beat)
    if not ok[c, answered, mode]:
        return False
    for t in range(3):
        n = beat[c, answered, t] if mode == 1 else bids[g, answered, c, t]
        tokens[g, puppet, t] -= n
        bids[g, puppet, c, t] = n
        revealed[g, puppet, c, t] = n
    meta[g, Meta.GUY_COUNT] += 1
    meta[g, Meta.GUY_LAST] = meta[g, Meta.DECIDER]
    meta[g, Meta.KIND] = NONE
    next_guy_turn(g, sch, work)
    return True


@jit(inline=True)
def end_scheming(g, sch):
    """The end of the Scheming phase, as ``Game._end_scheming``: Guy's unplaced tokens go to the bank (docs/rules.md
    §6, "The Scheming phase")."""
    tokens, bank, meta = sch.tokens, sch.bank, sch.meta
    puppet = sch.cfg[Cfg.PUPPET]
    for t in range(3):
        bank[g, t] += tokens[g, puppet, t]
        tokens[g, puppet, t] = 0
    meta[g, Meta.KIND] = NONE
    meta[g, Meta.PHASE] = RESOLUTION


# --- resolution (docs/rules.md §4) ---------------------------------------------------------------------------------


@jit(refcounts=False)
def advance(g, st, tb, work):
    """Run the rules until a decision is needed or the game is over, as ``Game._advance``: resolve the characters
    from the cursor (docs/rules.md §4; the first edition's Card space draws its cards, §7), then end the round."""
    meta, cfg = st.meta, tb.cfg
    C = cfg[Cfg.CHARS]
    card = cfg[Cfg.CARD]
    while meta[g, Meta.KIND] == NONE and meta[g, Meta.PHASE] == RESOLUTION:
        if card >= 0:
            draw_cards(g, st, tb, work)  # the Card space's cards still to draw (none before it resolves)
            if meta[g, Meta.KIND] != NONE:
                break
        c = meta[g, Meta.CURSOR]
        if c >= C:
            end_round(g, st, tb)
            break
        meta[g, Meta.CURSOR] = c + 1
        if c == card:
            start_cards(g, c, st, tb)
        else:
            resolve_character(g, c, st, tb, work)


@jit(inline=True)
def resolve_character(g, c, st, tb, work):
    """Character ``c`` resolved, as ``Game._resolve_character`` (docs/rules.md §4): the strictly highest bid wins
    (a tie: nobody), every bid's tokens go to the bank (Bid Refunds: the losing and tied bids back to their owners),
    then the winner's support, tokens (D1) and cube (D2) at once, and the Spy's (D4) or the Apothecary's (D5)
    decision where it has an option. The contest is found as the character resolves: its bids are final once Scheming
    is over, and nothing before its turn changes them."""
    tokens, bank, support, bids, winners, meta = st.tokens, st.bank, st.support, st.bids, st.winners, st.meta
    cfg, strength = tb.cfg, tb.strength
    S = cfg[Cfg.SEATS]
    s0, s1, s2 = strength[0], strength[1], strength[2]
    top = 0
    w = -1
    count = 0
    for s in range(S):  # the strongest bid and how many reach it, each bid read once
        key = s0 * bids[g, s, c, 0] + s1 * bids[g, s, c, 1] + s2 * bids[g, s, c, 2]
        if key > top:
            top, w, count = key, s, 1
        elif key == top:
            count += 1
    if top == 0:
        winners[g, c] = -1  # nobody bid
        return
    if count > 1:
        w = -1  # a tie: nobody wins
    refunds = cfg[Cfg.REFUNDS]
    paid0 = paid1 = paid2 = 0  # to the bank
    for s in range(S):
        n0, n1, n2 = bids[g, s, c, 0], bids[g, s, c, 1], bids[g, s, c, 2]
        bids[g, s, c, 0] = bids[g, s, c, 1] = bids[g, s, c, 2] = 0
        if refunds and s != w:  # losing and tied bids go back to their owners
            tokens[g, s, 0] += n0
            tokens[g, s, 1] += n1
            tokens[g, s, 2] += n2
        else:
            paid0 += n0
            paid1 += n1
            paid2 += n2
    bank[g, 0] += paid0
    bank[g, 1] += paid1
    bank[g, 2] += paid2
    winners[g, c] = w
    if w < 0:
        return
    support[g, w] += tb.char_support[c]
    pay(g, w, tb.rewards[c], st)
    area = tb.char_area[c]
    if area >= 0:
        place_cube(g, w, area, st, tb)
    # the decision as its number (``.value``), of the type of the kinds read from ``meta``: cube_targets compiled once
    kind = SPY.value if c == cfg[Cfg.SPY] else (APOTHECARY_FIRST.value if c == cfg[Cfg.APOTHECARY] else NONE.value)
    if kind != NONE:
        if kind == SPY:
            meta[g, Meta.SPY_OWNER] = w
        if cube_targets(g, kind, board(st, tb), work.picks, work.tally) > 0:
            meta[g, Meta.KIND] = kind
            # Guy's Spy and Apothecary: decided by whoever placed his last bid this round (docs/rules.md §6)
            meta[g, Meta.DECIDER] = meta[g, Meta.GUY_LAST] if w == cfg[Cfg.PUPPET] else w


@jit(inline=True)
def pay(g, seat, amount, st):
    """Tokens ``amount`` (3,) from the bank to ``seat``, as far as the bank can pay (D1), as ``Game._pay``."""
    tokens, bank = st.tokens, st.bank
    for t in range(3):
        paid = min(amount[t], bank[g, t])
        bank[g, t] -= paid
        tokens[g, seat, t] += paid


@jit(inline=True)
def place_cube(g, seat, area, st, tb):
    """One cube on an empty space; none if the area is full or the seat has no cube left (D2), as
    ``Game._place_cube``."""
    cubes, supply = st.cubes, st.supply
    filled = 0
    for s in range(tb.cfg[Cfg.SEATS]):
        filled += cubes[g, area, s]
    if supply[g, seat] > 0 and filled < tb.spaces[area]:
        cubes[g, area, seat] += 1
        supply[g, seat] -= 1


@jit(inline=True)
def apply_cube_choice(g, kind, area, seat, st):
    """A picked cube, as ``Game._apply_cube_choice``: the Spy's owner's cube in its place (D4), the Apothecary's
    first pick kept and its second asked for, then the two swapped (D5), or the Remove card's cube back to its
    owner's supply (docs/rules.md §7)."""
    cubes, supply, meta = st.cubes, st.supply, st.meta
    meta[g, Meta.KIND] = NONE
    if kind == SPY:
        owner = meta[g, Meta.SPY_OWNER]
        cubes[g, area, seat] -= 1
        supply[g, seat] += 1
        cubes[g, area, owner] += 1
        supply[g, owner] -= 1
    elif kind == APOTHECARY_FIRST:
        meta[g, Meta.APO_AREA] = area
        meta[g, Meta.APO_SEAT] = seat
        meta[g, Meta.KIND] = APOTHECARY_SECOND
    elif kind == APOTHECARY_SECOND:
        a1, s1 = meta[g, Meta.APO_AREA], meta[g, Meta.APO_SEAT]
        meta[g, Meta.APO_AREA] = -1
        meta[g, Meta.APO_SEAT] = -1
        cubes[g, a1, s1] -= 1
        cubes[g, a1, seat] += 1
        cubes[g, area, seat] -= 1
        cubes[g, area, s1] += 1
    else:
        cubes[g, area, seat] -= 1
        supply[g, seat] += 1


# --- the first edition's Card space (docs/rules.md §7) -------------------------------------------------------------


@jit(inline=True)
def start_cards(g, c, st, tb):
    """The Card space, as ``Game._start_cards`` (docs/rules.md §7): no contest; all Gold placed there goes to the
    bank, refunds or not, and each Gold, up to the limit per seat, is a card for its owner to draw."""
    bank, bids, cfg = st.bank, st.bids, tb.cfg
    for s in range(cfg[Cfg.SEATS]):
        st.card_queue[g, s] = min(bids[g, s, c, GOLD], cfg[Cfg.CARD_MAX])
        for t in range(3):
            bank[g, t] += bids[g, s, c, t]
            bids[g, s, c, t] = 0
    st.winners[g, c] = -1


@jit(inline=True)
def draw_cards(g, st, tb, work):
    """The cards still to draw, seat by seat from seat 0, each resolved as it is drawn; stops at a Remove decision,
    as ``Game._draw_cards``. An empty draw pile is the game's next shuffle of the whole deck (D15), drawn ahead into
    ``deck`` by ``BatchedGame`` from the game's own seeded generator, as ``Game._shuffled_deck`` draws it."""
    support, meta, deck, card_queue, drawn = st.support, st.meta, st.deck, st.card_queue, st.drawn
    cfg = tb.cfg
    S, D = cfg[Cfg.SEATS], cfg[Cfg.DECK]
    seat = 0
    while meta[g, Meta.KIND] == NONE:
        while seat < S and card_queue[g, seat] == 0:
            seat += 1
        if seat == S:
            return
        card_queue[g, seat] -= 1
        if meta[g, Meta.DECK_LEFT] == 0:  # D15: reshuffled, discards included
            meta[g, Meta.DECK_SHUFFLE] += 1
            meta[g, Meta.DECK_LEFT] = D
        card = deck[g, meta[g, Meta.DECK_SHUFFLE] % cfg[Cfg.SLOTS], D - meta[g, Meta.DECK_LEFT]]
        meta[g, Meta.DECK_LEFT] -= 1
        drawn[g, seat, card] += 1
        support[g, seat] += tb.card_support[card]
        pay(g, seat, tb.card_tokens[card], st)
        if tb.card_remove[card]:  # compulsory where an opponent's cube can be removed, else nothing to ask
            meta[g, Meta.DECIDER] = seat
            # REMOVE.value: the decision as its number, as in resolve_character
            if cube_targets(g, REMOVE.value, board(st, tb), work.picks, work.tally) > 0:
                meta[g, Meta.KIND] = REMOVE


# --- the end of a round, the end of the game (docs/rules.md §2, §5) ------------------------------------------------


@jit(inline=True)
def end_round(g, st, tb):
    """The end of a Resolution phase, as ``Game._end_round``: the game is scored once every space is full (D6) or at
    ``max_rounds`` (truncated, D8); else Patronage, and the next round's bids."""
    meta, cfg = st.meta, tb.cfg
    over = board_full(g, st, tb)  # D6
    if not over and meta[g, Meta.ROUND] >= cfg[Cfg.MAX_ROUNDS]:  # D8
        meta[g, Meta.TRUNCATED] = 1
        over = True
    if over:
        score(g, st, tb)
        return
    patronage(g, st, tb)
    meta[g, Meta.ROUND] += 1
    meta[g, Meta.PHASE] = BIDDING
    meta[g, Meta.KIND] = BID
    meta[g, Meta.DECIDER] = 0


@jit(inline=True)
def board_full(g, st, tb):
    """Whether every influence space of game ``g`` holds a cube, as ``Game.board_full``: the game ends (D6,
    docs/rules.md §5)."""
    cubes, cfg, spaces = st.cubes, tb.cfg, tb.spaces
    S = cfg[Cfg.SEATS]
    full = True
    for a in range(cfg[Cfg.AREAS]):
        filled = 0
        for s in range(S):
            filled += cubes[g, a, s]
        if filled < spaces[a]:
            full = False
    return full


@jit(inline=True)
def patronage(g, st, tb):
    """Everyone below the minimum takes Gold up to it, seat by seat from seat 0 (docs/rules.md §2, D17), as
    ``Game._patronage``."""
    tokens, bank, cfg = st.tokens, st.bank, tb.cfg
    for s in range(cfg[Cfg.SEATS]):
        want = cfg[Cfg.PATRONAGE] - (tokens[g, s, 0] + tokens[g, s, 1] + tokens[g, s, 2])
        if want > 0:
            take = min(want, bank[g, GOLD])
            bank[g, GOLD] -= take
            tokens[g, s, GOLD] += take


@jit(inline=True)
def score(g, st, tb):
    """The final support (docs/rules.md §5), as ``Game._score``: support, tokens' points and each area's control,
    with the Area Control Bonus where it is on; the winners: the most support, ties sharing the win (D7), and in the
    two-player game strictly more than Guy (D13)."""
    tokens, support, cubes, meta = st.tokens, st.support, st.cubes, st.meta
    fin_support, fin_tokens, fin_areas, fin_win = st.final_support, st.final_tokens, st.final_areas, st.final_win
    cfg, spaces, area_support, token_points = tb.cfg, tb.spaces, tb.area_support, tb.token_points
    S, P, puppet = cfg[Cfg.SEATS], cfg[Cfg.PLAYERS], cfg[Cfg.PUPPET]
    meta[g, Meta.PHASE] = OVER
    meta[g, Meta.KIND] = NONE
    for s in range(S):
        fin_tokens[g, s] = tokens[g, s, 0] * token_points[0] + tokens[g, s, 1] * token_points[1]
        fin_tokens[g, s] += tokens[g, s, 2] * token_points[2]
        fin_areas[g, s] = 0
    for a in range(cfg[Cfg.AREAS]):
        most = 0
        who = -1
        count = 0
        for s in range(S):
            n = cubes[g, a, s]
            if n > most:
                most, who, count = n, s, 1
            elif n == most and n > 0:
                count += 1
        if most > 0 and count == 1:
            fin_areas[g, who] += area_support[a]
            if cfg[Cfg.AREA_CONTROL_BONUS] and most == spaces[a]:
                fin_areas[g, who] += 10
    for s in range(S):
        fin_support[g, s] = support[g, s] + fin_tokens[g, s] + fin_areas[g, s]
    if puppet >= 0:  # D13: a player must also beat the puppet strictly
        top = max(fin_support[g, 0], fin_support[g, 1])
        for s in range(S):
            fin_win[g, s] = s < P and fin_support[g, s] == top and top > fin_support[g, puppet]
    else:  # D7: ties share the win
        top = fin_support[g, 0]
        for s in range(S):
            top = max(top, fin_support[g, s])
        for s in range(S):
            fin_win[g, s] = fin_support[g, s] == top


# --- a game's decisions ---------------------------------------------------------------------------------------------


@jit(inline=True)
def submit_bids(i, d, st, tb, hist, work):
    """Game ``d.games[i]``'s bids ``d.bids[i]`` (P, T, 3; each seat's placing exactly what it holds: D3, checked by
    the caller), as ``Game.submit_bids``: revealed, recorded and cleaned (:func:`reveal_bids`); then Scheming (two
    players: :func:`start_scheming`, ``d.coin[i]`` D9's coin flip) and resolution up to the next decision or the
    end. ``d``: :class:`Bids` or :class:`Step`."""
    winners, scheming_gold, drawn, meta, cfg = st.winners, st.scheming_gold, st.drawn, st.meta, tb.cfg
    g = d.games[i]
    reveal_bids(g, d.bids, i, st, tb, hist)
    for c in range(cfg[Cfg.TARGETS]):
        winners[g, c] = -2
    for s in range(cfg[Cfg.SEATS]):
        scheming_gold[g, s] = 0
        for k in range(cfg[Cfg.DECK]):
            drawn[g, s, k] = 0  # the cards of the round before
    meta[g, Meta.CURSOR] = 0
    meta[g, Meta.KIND] = NONE
    if cfg[Cfg.SCHEMING] >= 0:
        start_scheming(g, d.coin[i], st, tb, hist, work)
    else:
        meta[g, Meta.PHASE] = RESOLUTION
    advance(g, st, tb, work)


@jit(inline=True)
def choose(g, value, st, tb, work, checked=False):
    """Answer game ``g``'s pending non-bid decision, as ``Game.choose``: ``value`` -1 declines or passes (where
    allowed: D4, D5, D12); a cube decision's value is ``area * S + seat`` (absolute seat), a Guy placement's
    ``(character * 2 + answered_seat) * 2 + mode``. Returns False (and changes nothing) if the choice is not allowed;
    an allowed one is applied, and the caller then runs the rules on (:func:`advance`, called from one place so that
    it is compiled once). ``checked``: a cube choice known to be among the options (the random play's draw from the
    options it has just computed), not computed again, which is cheaper."""
    meta, cfg = st.meta, tb.cfg
    S = cfg[Cfg.SEATS]
    kind = meta[g, Meta.KIND]
    if kind in (NONE, BID):
        return False
    if value < 0:
        if not can_decline(g, st):
            return False
        if kind == GUY:
            end_scheming(g, scheming(st, tb))
        meta[g, Meta.KIND] = NONE
        meta[g, Meta.APO_AREA] = -1
        meta[g, Meta.APO_SEAT] = -1
        return True
    if kind == GUY:
        return place_guy(g, value, scheming(st, tb), work)
    area = value // S
    seat = value % S
    if area >= cfg[Cfg.AREAS]:
        return False
    if not checked:
        ok = work.picks
        cube_targets(g, kind, board(st, tb), ok, work.tally)
        if not ok[area, seat]:
            return False
    apply_cube_choice(g, kind, area, seat, st)
    return True


# --- over many games at once -----------------------------------------------------------------------------------


@jit
def submit_many(d, st, tb, hist):
    """:func:`submit_bids` for each game of :class:`Bids` ``d``, whose bids are already checked to place exactly
    the held tokens (D3). The records as plain tuples (the module's docstring says why)."""
    st, tb, hist = State(*borrowed(st)), Tables(*borrowed(tb)), History(*borrowed(hist))
    submit_all(Bids(*d), st, tb, hist, scratch(tb.cfg))


@jit(refcounts=False)
def submit_all(d, st, tb, hist, work):
    """:func:`submit_many`'s loop over the games, with its work arrays."""
    for i in range(len(d.games)):
        submit_bids(i, d, st, tb, hist, work)


@jit(refcounts=False)
def misplaced_bid(games, raw, tokens):
    """The index of the first of ``games`` whose bids ``raw`` (n, P, T, 3) place other than exactly what each player
    holds (D3), or hold a negative count; -1 if none does."""
    for i in range(len(games)):
        if misplaced(games[i], i, raw, tokens):
            return i
    return -1


@jit(inline=True)
def misplaced(g, i, raw, tokens):
    """Whether game ``g``'s bids ``raw[i]`` (P, T, 3) place other than exactly what each player holds (D3), or hold a
    negative count."""
    for p in range(raw.shape[1]):  # noqa: SIM110  (Numba compiles no generator expression)
        if misplaced_seat(g, i, p, raw, tokens):
            return True
    return False


@jit(inline=True)
def misplaced_seat(g, i, p, raw, tokens):
    """Whether seat ``p``'s bids in ``raw[i]`` place other than exactly what it holds in game ``g`` (D3), or hold a
    negative count."""
    for t in range(3):
        placed = 0
        negative = False
        for c in range(raw.shape[2]):
            n = raw[i, p, c, t]
            negative |= n < 0
            placed += n
        if negative or placed != tokens[g, p, t]:
            return True
    return False


@jit
def choose_many(d, st, tb, hist):
    """:func:`choose` for each game of :class:`Choices` ``d``, each choice made recorded for export
    (:func:`record_choice`) and followed by the rules; ``d.outcome[i]``: whether it was allowed. The records as plain
    tuples."""
    st, tb, hist = State(*borrowed(st)), Tables(*borrowed(tb)), History(*borrowed(hist))
    choose_all(Choices(*d), st, tb, hist, scratch(tb.cfg))


@jit(refcounts=False)
def choose_all(d, st, tb, hist, work):
    """:func:`choose_many`'s loop over the games, with its work arrays."""
    meta = st.meta
    for i in range(len(d.games)):
        g, value = d.games[i], d.values[i]
        kind, r = meta[g, Meta.KIND], meta[g, Meta.ROUND] - 1
        if choose(g, value, st, tb, work):
            d.outcome[i] = Outcome.DECIDED
            record_choice(g, r, kind, value, hist)
            advance(g, st, tb, work)
        else:
            d.outcome[i] = Outcome.REFUSED_CHOICE


@jit
def options_many(games, st, tb, cube_out, guy_out, decline_out):
    """The legal choices of each game's pending non-bid decision: cubes (n, A, S) (:func:`cube_targets`), Guy
    placements (n, C, 2, 2) (:func:`guy_options`), whether declining is allowed (n,) (:func:`can_decline`). The
    records as plain tuples."""
    st, tb = State(*borrowed(st)), Tables(*borrowed(tb))
    work = scratch(tb.cfg)
    for i in range(len(games)):
        g = games[i]
        kind = st.meta[g, Meta.KIND]
        decline_out[i] = can_decline(g, st)
        if kind == GUY:
            guy_options(g, scheming(st, tb), guy_out[i], work.beats)
        elif kind >= SPY:
            cube_targets(g, kind, board(st, tb), cube_out[i], work.tally)


@jit(inline=True)
def record_choice(g, r, kind, value, hist):
    """A non-bid choice made in round index ``r`` of game ``g``, recorded for export in :class:`History`."""
    if kind == SPY:
        hist.spy[g, r] = value
    elif kind == APOTHECARY_FIRST:
        hist.apothecary[g, r, 0] = value
    elif kind == APOTHECARY_SECOND:
        hist.apothecary[g, r, 1] = value
    else:  # Guy's placements and Remove cards: a list per round
        listed = hist.guy if kind == GUY else hist.remove
        j = 0
        while listed[g, r, j] != -2:
            j += 1
        listed[g, r, j] = value


# --- random play over many games -------------------------------------------------------------------------------
#
# ``engine.random_play``'s rule of thumb for the games of a BatchedGame (its ``random_bids`` and ``play_random``): the
# vector envs' ``random`` opponents (``arena.vector``). Each game draws from its own small generator (``states``, one
# int64 per game: xorshift32 in integers that never overflow, so that plain Python runs it too), seeded from the
# game's seed (:func:`random_states`): the same seed gives the same opponents' play, whatever the other games do.

_MASK32 = 0xFFFFFFFF


def random_states(seeds: np.ndarray) -> np.ndarray:
    """One generator state per game (int64 in 1..2**32-1) from the games' seeds (non-negative integers): the high
    half of SplitMix64's output, so that neighbouring seeds give unrelated states."""
    z = np.asarray(seeds, dtype=np.int64).astype(np.uint64) + np.uint64(0x9E3779B97F4A7C15)  # arrays wrap silently
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    s = ((z ^ (z >> np.uint64(31))) >> np.uint64(32)).astype(np.int64)
    return np.where(s == 0, 0x6D2B79F5, s)


@jit(inline=True)
def _below(states, g, m):
    """A uniform integer in 0..m-1 from game ``g``'s generator (xorshift32), which it advances."""
    x = states[g]
    x ^= (x << 13) & _MASK32
    x ^= x >> 17
    x ^= (x << 5) & _MASK32
    states[g] = x
    return (x * m) >> 32


@jit
def random_bids_many(games, seats, tokens, rand, out):
    """Random bids: each token that seat ``seats[i]`` of game ``games[i]`` holds (``tokens`` (N, S, 3)) to a uniform
    legal target of its type (:class:`RandomPlay` ``rand``'s, a plain tuple), counted into ``out[i, 0]`` ((n, 1, T,
    3), zeroed here)."""
    rand, out = RandomPlay(*borrowed(rand)), borrowed(out)  # the caller's, for the whole call
    for i in range(len(games)):
        random_bid(games[i], seats[i], tokens, rand, out[i, 0])


@jit(inline=True)
def random_bid(g, s, tokens, rand, out):
    """Seat ``s`` of game ``g`` bids each token it holds on a uniform legal target of its type (drawn from the
    game's generator), counted into ``out`` (T, 3), zeroed first."""
    for c in range(out.shape[0]):
        for t in range(3):
            out[c, t] = 0
    for t in range(3):
        for _ in range(tokens[g, s, t]):
            out[rand.targets[t, _below(rand.states, g, rand.counts[t])], t] += 1


@jit
def play_random_many(games, st, tb, hist, rand):
    """Random choices: while game ``games[i]`` waits for a non-bid decision (Guy, Spy, Apothecary, Remove) of a seat
    with ``rand.seats[g, seat]``, a uniform draw over its legal options, declining counted as one more where it is
    allowed (the order of ``random_play.random_choice``), made, recorded for export and followed by the rules; at most
    one per game with ``rand.one_at_a_time``. Returns the index of a game whose drawn choice the engine refused
    (never expected), or -1. The records as plain tuples."""
    st, tb, hist = State(*borrowed(st)), Tables(*borrowed(tb)), History(*borrowed(hist))
    return play_random_all(games, st, tb, hist, RandomPlay(*borrowed(rand)), scratch(tb.cfg))


@jit(refcounts=False)
def play_random_all(games, st, tb, hist, rand, work):
    """:func:`play_random_many`'s loop over the games, with its work arrays."""
    for i in range(len(games)):
        if not play_random_game(games[i], st, tb, hist, rand, work):
            return i
    return -1


@jit(inline=True)
def play_random_game(g, st, tb, hist, rand, work):
    """:func:`play_random_many`'s random choices in game ``g``; False where the engine refused one."""
    meta, cfg = st.meta, tb.cfg
    S, A, C = cfg[Cfg.SEATS], cfg[Cfg.AREAS], cfg[Cfg.CHARS]
    cube, guy = work.picks, work.placements
    while meta[g, Meta.KIND] >= GUY and rand.seats[g, meta[g, Meta.DECIDER]]:
        kind = meta[g, Meta.KIND]
        if kind == GUY:
            n = guy_options(g, scheming(st, tb), guy, work.beats)
        else:
            n = cube_targets(g, kind, board(st, tb), cube, work.tally)
        k = _below(rand.states, g, n + can_decline(g, st))
        value = -1
        if k < n:  # the k-th option, in the order of np.argwhere
            if kind == GUY:
                for x in range(C * 4):
                    if guy[x // 4, (x // 2) % 2, x % 2]:
                        if k == 0:
                            value = x
                            break
                        k -= 1
            else:  # nested loops, cheaper than a division per option
                x = 0
                for a in range(A):
                    for s in range(S):
                        if cube[a, s]:
                            if k == 0:
                                value = x
                            k -= 1
                        x += 1
        r = meta[g, Meta.ROUND] - 1
        if not choose(g, value, st, tb, work, True):
            return False
        record_choice(g, r, kind, value, hist)
        advance(g, st, tb, work)
        if rand.one_at_a_time:
            break
    return True


# --- one step of many games: the decisions in, random seats' decisions drawn -----------------------------------


@jit
def step_many(d, st, tb, hist, rand):
    """One decision of each game of :class:`Step` ``d``: where the game waits for bids, ``d.bids[i]`` (P, T, 3) with
    the rows of the seats with ``rand.seats[g, seat]`` drawn here (:func:`random_bids_many`'s rule), checked (D3) and
    submitted (:func:`submit_bids`); where it waits for a non-bid decision, the choice ``d.values[i]``
    (:func:`choose`), recorded for export. Then, unless ``rand.one_at_a_time``, the random seats' non-bid decisions
    (:func:`play_random_many`'s rule) until another seat decides or the game ends. ``d.outcome[i]``: an
    :class:`Outcome`, DECIDED or why the game was left as it was (the bids misplaced, the choice not allowed) or
    stopped (a random choice refused: never expected). The records as plain tuples."""
    st, tb, hist = State(*borrowed(st)), Tables(*borrowed(tb)), History(*borrowed(hist))
    step_all(Step(*d), st, tb, hist, RandomPlay(*borrowed(rand)), scratch(tb.cfg))


@jit(refcounts=False)
def step_all(d, st, tb, hist, rand, work):
    """:func:`step_many`'s loop over the games, with its work arrays."""
    tokens, meta, cfg = st.tokens, st.meta, tb.cfg
    P = cfg[Cfg.PLAYERS]
    play = not rand.one_at_a_time
    raw = d.bids
    for i in range(len(d.games)):
        g = d.games[i]
        kind = meta[g, Meta.KIND]
        d.outcome[i] = Outcome.DECIDED
        if kind == BID:
            bad = False
            for s in range(P):
                if rand.seats[g, s]:  # placed exactly what the seat holds, by construction
                    random_bid(g, s, tokens, rand, raw[i, s])
                else:
                    bad |= misplaced_seat(g, i, s, raw, tokens)
            if bad:
                d.outcome[i] = Outcome.MISPLACED_BID
                continue
            submit_bids(i, d, st, tb, hist, work)
        else:
            r = meta[g, Meta.ROUND] - 1
            if not choose(g, d.values[i], st, tb, work):
                d.outcome[i] = Outcome.REFUSED_CHOICE
                continue
            record_choice(g, r, kind, d.values[i], hist)
            advance(g, st, tb, work)
        if play and not play_random_game(g, st, tb, hist, rand, work):
            d.outcome[i] = Outcome.REFUSED_RANDOM
