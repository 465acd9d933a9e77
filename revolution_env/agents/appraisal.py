"""What a position is worth to each seat, read from an observation only: the heuristic bots' shared judgement.

Every seat's *projected points* are its support; its expected area points (each area's free spaces are filled
at random, one cube to a uniformly chosen seat per space, and the seat with strictly the most cubes at the end
scores the area, plus the Area Control Bonus where it is on), counted less while many rounds remain (Spies and
Apothecaries move cubes until the end); the support it will still earn (its income per round so far, over the
rounds the free spaces need); and, under Bid Refunds, its tokens at their end-game points. A seat's *margin* is
its projected points minus its rivals' (a blend of the best rival and their mean), plus what its lead gains from
an earlier end. Every decision is judged by how it changes the margins: a character won (its support, its tokens
at their bidding power or, in what may be the last round, their points, its cube), a Spy move, an Apothecary
swap, a Remove card. Seats are relative, as in the observation (0 = the observer, the puppet last).

The functions are loops that Numba compiles (:mod:`revolution_env.common.jit`); without Numba they run as plain
Python, with the same results. What they read travels in named tuples: :class:`Tables` (the variant, built once
per bot by :func:`tables`), :class:`View` (an observation, :func:`read_view`), :class:`Position` (an observation
appraised, :func:`appraise`) and :class:`Judgement` (a bot's weights).
"""

from __future__ import annotations

import itertools
import math
from math import factorial
from typing import Any, NamedTuple

import numpy as np

from revolution_env.common.jit import borrowed, jit
from revolution_env.engine.kernels import BLACKMAIL, FORCE, GOLD  # ints, for compiled code

BONUS = 10  # Area Control Bonus (docs/rules.md §5)
MIN_ROUNDS = 0.3  # the rounds left once the board is full (the round being played)
NEG = -np.inf


class Judgement(NamedTuple):
    """The weights of the appraisal; each bot has its own (``bot.judgement._replace(lock=0.3)`` changes one)."""

    rival_weight: float = 0.5  # the margin is taken over w * best rival + (1 - w) * mean rival
    prior_income: float = 8.0  # support per round expected of a seat before it has shown its own ...
    prior_rounds: float = 2.0  # ... counted as this many rounds of play
    fill_rate: float = 0.7  # how often an area's character is won in a round
    unsettled: float = 0.1  # area points count 1 / (1 + unsettled * rounds left): cubes move until the end
    power: tuple[float, float, float] = (4.0, 2.5, 0.3)  # a token's bidding power next round
    refund_power: float = 1.0  # under Bid Refunds tokens stay until spent: their power, as a share of ``power`` ...
    hoard: float = 6.0  # ... shrinking as hoard / tokens held once a seat holds more than ``hoard``
    special_scale: float = 1.0  # the Spy's and the Apothecary's worth, as a share of their best move now
    lock: float = 1.0  # how much a lead gains from an earlier end (0: margins in points only) ...
    trailing: float = 1.0  # ... and, as a share of that, how much a seat behind gains from a later one

    def as_floats(self) -> Judgement:
        """Every weight a float: compiled code is compiled once for each type of its arguments, and an int
        where a float was would compile it again."""
        return Judgement(*(tuple(float(x) for x in v) if isinstance(v, tuple) else float(v) for v in self))


# --- the variant --------------------------------------------------------------------------------------------------


class Tables(NamedTuple):
    """The static data of one variant that the bots read: the bid card, the areas, the tokens, the action codec."""

    seats: int  # S
    players: int  # P
    puppet: int  # the puppet's seat, or -1
    areas: int  # A
    targets: int  # T: the characters, then the Card and Scheming spaces where the variant has them
    n_characters: int  # C
    spy: int  # each special target's index, or -1
    apothecary: int
    card: int
    scheming: int
    printer: int  # the character that gives the most support and nothing else (the Printer), or -1
    bonus: bool  # the Area Control Bonus
    refunds: bool  # Bid Refunds
    max_characters: int  # at most this many characters carry tokens in one bid
    card_max_gold: int
    legal: np.ndarray  # (T, 3) bool: the token types each target takes
    bid_targets: np.ndarray  # (3, T) float: where each type may go to contest a character
    bid_count: np.ndarray  # (3,) float: how many targets each type may contest
    support: np.ndarray  # (T,) float: each character's support
    char_tokens: np.ndarray  # (T, 3): each character's tokens
    char_area: np.ndarray  # (T,): each character's area, or -1
    spaces: np.ndarray  # (A,)
    token_points: np.ndarray  # (3,) float: a token's end-game points
    strength: np.ndarray  # (3,): a bid as one comparable integer (docs/rules.md §3)
    guy_legal: np.ndarray  # (T, 3) bool: the types a Guy bid may hold (D10, D11: characters only)
    others: np.ndarray  # (S, S - 1): each seat's rivals
    area_points: np.ndarray  # (A, radix ** S, S): ``expected_area_points`` of every cube count, in base radix
    radix: int  # max(spaces) + 1
    n_cards: int  # the kinds of card in the first edition's deck (0 elsewhere)
    card_remove: np.ndarray  # (max(n_cards, 1),) bool: each card kind removes a cube ...
    card_support: np.ndarray  # ... or gives this support ...
    card_tokens: np.ndarray  # ... and these tokens (float)
    deck_full: np.ndarray  # how many of each kind the full deck holds
    decisions: int  # the size of the one-hot decision feature
    offsets: np.ndarray  # the codec: each action dimension's first mask entry ...
    block: np.ndarray  # ... each token type's first dimension ...
    dims: int  # ... and how many dimensions an action has


class FeatureStarts(NamedTuple):
    """Where each feature the bots read starts in the observation vector (-1 where the variant has none)."""

    round: int
    rounds_left: int
    decision: int
    for_puppet: int
    tokens: int
    support: int
    supply: int
    bank: int
    cubes: int
    bids: int
    free: int
    apothecary_first: int
    scheming_gold: int
    guy_bids: int
    deck_left: int


_COMPOSITIONS: dict[tuple[int, int], tuple[np.ndarray, np.ndarray]] = {}
_AREA_TABLES: dict[tuple, np.ndarray] = {}


def _compositions(free: int, seats: int) -> tuple[np.ndarray, np.ndarray]:
    """Every way ``free`` cubes fall to ``seats`` seats, with its multinomial probability (uniform seats)."""
    key = (free, seats)
    if key not in _COMPOSITIONS:
        comps = np.array([c for c in itertools.product(range(free + 1), repeat=seats) if sum(c) == free])
        ways = np.array([factorial(free) / np.prod([factorial(int(x)) for x in c]) for c in comps])
        _COMPOSITIONS[key] = (comps, ways / seats**free)
    return _COMPOSITIONS[key]


def expected_area_points(support: int, spaces: int, bonus: bool, counts: tuple[int, ...]) -> np.ndarray:
    """Expected points per seat of one area holding ``counts`` cubes per seat once its free spaces are filled."""
    comps, probs = _compositions(max(spaces - sum(counts), 0), len(counts))
    final = np.asarray(counts) + comps
    top = final == final.max(1, keepdims=True)
    sole = top & (top.sum(1, keepdims=True) == 1) & (final > 0)
    out = support * (probs @ sole)
    if bonus:
        out = out + BONUS * (probs @ (final == spaces))
    return out


def _area_table(spaces: np.ndarray, support: np.ndarray, bonus: bool, seats: int) -> np.ndarray:
    """(A, radix ** S, S): :func:`expected_area_points` of every cube count an area can hold, indexed by the counts
    in base ``max(spaces) + 1``: the compiled code looks them up."""
    key = (tuple(int(x) for x in spaces), tuple(int(x) for x in support), bool(bonus), seats)
    table = _AREA_TABLES.get(key)
    if table is None:
        radix = int(spaces.max()) + 1
        table = np.zeros((len(spaces), radix**seats, seats))
        powers = radix ** np.arange(seats)
        for a, n in enumerate(spaces):
            for counts in itertools.product(range(int(n) + 1), repeat=seats):
                if sum(counts) <= n:
                    points = expected_area_points(int(support[a]), int(n), bool(bonus), counts)
                    table[a, int(np.dot(counts, powers))] = points
        table.flags.writeable = False
        _AREA_TABLES[key] = table
    return table


def tables(agent: Any) -> tuple[Tables, FeatureStarts]:
    """The static data of an agent's variant and where its observation's features start: every number and array
    of one type in every variant, so that one compiled decision serves them all."""
    L, layout, codec = agent.codec.layout, agent.layout, agent.codec
    S, T, C = L.seats, L.n_targets, L.n_characters
    legal = L.legal.astype(np.bool_)
    bid_targets = L.legal.T.astype(np.float64)
    if L.scheming >= 0:
        bid_targets[:, L.scheming] = 0.0
    char_tokens = np.zeros((T, 3), dtype=np.int64)
    char_tokens[:C] = [ch.tokens for ch in L.card]
    char_area = np.array([ch.area for ch in L.card] + [-1] * (T - C), dtype=np.int64)
    support = np.array([ch.support for ch in L.card] + [0] * (T - C), dtype=np.float64)
    guy_legal = legal.copy()
    guy_legal[C:] = False
    if L.card_space >= 0:
        guy_legal[L.card_space] = False
    plain = [c for c in range(C) if char_area[c] < 0 and not char_tokens[c].any()
             and c not in (L.spy, L.apothecary, L.card_space)]  # fmt: skip
    names = layout.card_names
    cards = [next(c for c in L.components.deck if c.name == n) for n in names]
    deck = [c.name for c in L.components.deck]
    bonus = bool(L.rules.area_control_bonus)
    static = Tables(
        seats=int(S),
        players=int(L.players),
        puppet=int(S - 1 if L.puppet >= 0 else -1),
        areas=len(L.spaces),
        targets=int(T),
        n_characters=int(C),
        spy=int(L.spy),
        apothecary=int(L.apothecary),
        card=int(L.card_space),
        scheming=int(L.scheming),
        printer=int(max(plain, key=lambda c: support[c]) if plain else -1),
        bonus=bonus,
        refunds=bool(L.rules.bid_refunds),
        max_characters=int(L.components.max_characters_per_bid),
        card_max_gold=int(L.components.card_max_gold),
        legal=legal,
        bid_targets=bid_targets,
        bid_count=bid_targets.sum(1),
        support=support,
        char_tokens=char_tokens,
        char_area=char_area,
        spaces=L.spaces.astype(np.int64),
        token_points=L.token_points.astype(np.float64),
        strength=np.array([64 * 64, 64, 1], dtype=np.int64),
        guy_legal=guy_legal,
        others=np.array([[q for q in range(S) if q != p] for p in range(S)], dtype=np.int64),
        area_points=_area_table(L.spaces, L.area_support, bonus, S),
        radix=int(L.spaces.max()) + 1,
        n_cards=len(cards),
        card_remove=np.array([c.remove for c in cards] or [False], dtype=np.bool_),
        card_support=np.array([c.support for c in cards] or [0], dtype=np.float64),
        card_tokens=np.array([c.tokens for c in cards] or [(0, 0, 0)], dtype=np.float64).reshape(-1, 3),
        deck_full=np.array([deck.count(n) for n in names], dtype=np.float64) if cards else np.zeros(1),
        decisions=int(layout.features["decision"].size),
        offsets=codec.offsets.astype(np.int64),
        block=codec.block.astype(np.int64),
        dims=len(codec.nvec),
    )
    return static, FeatureStarts(**{name: int(layout._at.get(name, -1)) for name in FeatureStarts._fields})


# --- small pieces -------------------------------------------------------------------------------------------------


@jit(refcounts=False)
def pairwise_sum(a):
    """The sum of a contiguous 1-D float64 array, added in NumPy's pairwise order (eight accumulators from eight
    elements on, halves from 128 on), so that a sum rounds as the bots' decisions were recorded with."""
    n = a.shape[0]
    if n < 8:
        res = -0.0
        for i in range(n):
            res += a[i]
        return res
    if n <= 128:
        r0, r1, r2, r3, r4, r5, r6, r7 = a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7]
        i = 8
        stop = n - n % 8
        while i < stop:
            r0 += a[i]
            r1 += a[i + 1]
            r2 += a[i + 2]
            r3 += a[i + 3]
            r4 += a[i + 4]
            r5 += a[i + 5]
            r6 += a[i + 6]
            r7 += a[i + 7]
            i += 8
        res = ((r0 + r1) + (r2 + r3)) + ((r4 + r5) + (r6 + r7))
        while i < n:
            res += a[i]
            i += 1
        return res
    half = n // 2
    half -= half % 8
    return pairwise_sum(a[:half]) + pairwise_sum(a[half:])


@jit
def stable_order(keys):
    """The indices that sort ``keys`` ascending, equal keys in index order (by insertion: the arrays are short)."""
    n = keys.shape[0]
    order = np.arange(n)
    for i in range(1, n):
        j = i
        o = order[i]
        while j > 0 and keys[order[j - 1]] > keys[o]:
            order[j] = order[j - 1]
            j -= 1
        order[j] = o
    return order


@jit(refcounts=False)
def first_max(a):
    """The index of the first maximum."""
    best = 0
    for i in range(1, a.shape[0]):
        if a[i] > a[best]:
            best = i
    return best


@jit(refcounts=False)
def guy_beat(f, b, g, guy, legal_row):
    """D11 (revised) for one bid (f, b, g): the token type Guy adds to beat it holding ``guy``, or -1 if he cannot
    (as ``engine.game.guy_beats``)."""
    spare0, spare1, spare2 = guy[0] - f, guy[1] - b, guy[2] - g
    if spare0 < 0 or spare1 < 0 or spare2 < 0:
        return -1
    if spare2 >= 1 and legal_row[GOLD]:
        return GOLD
    if spare1 >= 1 and legal_row[BLACKMAIL]:
        return BLACKMAIL
    if spare0 >= 1 and legal_row[FORCE]:
        return FORCE
    return -1


# --- the observation ----------------------------------------------------------------------------------------------


class View(NamedTuple):
    """What the bots read of an observation (``ObservationView``'s names). Seats are relative: 0 is us."""

    round: int
    rounds_left: int
    decision: int  # a Decision
    for_puppet: bool
    apothecary_first: tuple[int, int]  # (area, seat) of the Apothecary's first cube, or (-1, -1)
    guy_bids: int
    me: int  # our seat, 0: a field, not the literal (Numba compiles a function again for each literal argument)
    tokens: np.ndarray  # (S, 3)
    support: np.ndarray  # (S,)
    supply: np.ndarray  # (S,)
    bank: np.ndarray  # (3,)
    cubes: np.ndarray  # (A, S)
    free: np.ndarray  # (A,)
    bids: np.ndarray  # (S, T, 3)
    scheming_gold: np.ndarray  # (S,)
    deck_left: np.ndarray  # (max(n_cards, 1),)


@jit(refcounts=False)
def _int(x):
    """A feature of the observation (a float32) as the integer it holds."""
    return np.int64(np.rint(x))


@jit(inline=True)  # one caller
def read_view(obs, t, at):
    """The features of the observation vector ``obs`` that the bots read (as ``ObservationLayout.decode``)."""
    S, A, T, n_cards, decisions = t.seats, t.areas, t.targets, t.n_cards, t.decisions
    decision = 0  # the one-hot decision's first maximum
    for i in range(1, decisions):
        if _int(obs[at.decision + i]) > _int(obs[at.decision + decision]):
            decision = i
    first_area = first_seat = -1
    for a in range(A):
        for s in range(S):
            if first_area < 0 and _int(obs[at.apothecary_first + a * S + s]) != 0:
                first_area, first_seat = a, s
    guy_bids = _int(obs[at.guy_bids]) if at.guy_bids >= 0 else 0
    tokens = np.empty((S, 3), dtype=np.int64)
    support = np.empty(S, dtype=np.int64)
    supply = np.empty(S, dtype=np.int64)
    scheming_gold = np.zeros(S, dtype=np.int64)
    for s in range(S):
        for k in range(3):
            tokens[s, k] = _int(obs[at.tokens + s * 3 + k])
        support[s] = _int(obs[at.support + s])
        supply[s] = _int(obs[at.supply + s])
        if at.scheming_gold >= 0:
            scheming_gold[s] = _int(obs[at.scheming_gold + s])
    bank = np.empty(3, dtype=np.int64)
    for k in range(3):
        bank[k] = _int(obs[at.bank + k])
    cubes = np.empty((A, S), dtype=np.int64)
    free = np.empty(A, dtype=np.int64)
    for a in range(A):
        free[a] = _int(obs[at.free + a])
        for s in range(S):
            cubes[a, s] = _int(obs[at.cubes + a * S + s])
    bids = np.empty((S, T, 3), dtype=np.int64)
    for s in range(S):
        for c in range(T):
            for k in range(3):
                bids[s, c, k] = _int(obs[at.bids + (s * T + c) * 3 + k])
    deck_left = np.zeros(max(n_cards, 1), dtype=np.int64)
    if at.deck_left >= 0:
        for i in range(n_cards):
            deck_left[i] = _int(obs[at.deck_left + i])
    return View(
        round=_int(obs[at.round]),
        rounds_left=_int(obs[at.rounds_left]),
        decision=decision,
        for_puppet=_int(obs[at.for_puppet]) != 0,
        apothecary_first=(first_area, first_seat),
        guy_bids=guy_bids,
        me=0,
        tokens=tokens,
        support=support,
        supply=supply,
        bank=bank,
        cubes=cubes,
        free=free,
        bids=bids,
        scheming_gold=scheming_gold,
        deck_left=deck_left,
    )


# --- the position -------------------------------------------------------------------------------------------------


class Position(NamedTuple):
    """One observation appraised: projected points per seat, and what every change does to every seat's margin.

    A *change* is an (S + 1,) array: each seat's change in projected points, then the change in the rounds left
    (filling a space may bring the end nearer). ``add[a, w]``: seat ``w`` adds a cube in area ``a``;
    ``move[a, v, w]``: one cube of ``v`` in ``a`` becomes ``w``'s (the Spy; half of an Apothecary swap);
    :func:`removal_change`: one cube goes back to its owner. ``movable[a, v]``: the cubes the Spy and the
    Apothecary may touch.

    A seat's margin counts its lead twice over: as projected points, and as time. A leader gains from an earlier
    end (fewer rounds for the others to catch up: a lead ``m`` is worth ``m / 2 * ln(R / R')`` more when the rounds
    left go from ``R`` to ``R'``, as for a normal spread of outcomes growing as the square root of the rounds left);
    a seat behind gains from a longer game."""

    X: np.ndarray  # (S,) projected points
    lead: np.ndarray  # (S,) each seat's margin now (a seat behind: times ``trailing``)
    U0: np.ndarray  # (S,) each seat's margin, its time included
    income: np.ndarray  # (S,) support per round
    area: np.ndarray  # (A, S) expected area points
    movable: np.ndarray  # (A, S)
    add: np.ndarray  # (A, S, S + 1)
    worth: np.ndarray  # (S, 3) what a token won now is worth to each seat (:func:`token_worth`)
    move: np.ndarray  # (A, S, S, S + 1) (0 where no such cube may be touched)
    rounds: float  # rounds left
    settled: float  # the weight of area points now


@jit
def rounds_left(free, fill_rate, limit):
    """The rounds the game may still last with ``free`` spaces (at most ``limit``, the observation's rounds left):
    those of the fullest-to-be areas, one cube per area and round, each character won some of the time."""
    p = np.empty(free.shape[0])
    for a in range(free.shape[0]):
        x = float(free[a])
        p[a] = x**4
    rounds = pairwise_sum(p) ** 0.25 / fill_rate
    return min(rounds, float(max(limit, 0)))


@jit(refcounts=False)
def area_points(a, counts, settled, t, out):
    """Every seat's expected points of area ``a`` holding ``counts`` (S,) cubes, counted ``settled``, into ``out``."""
    radix, table = t.radix, t.area_points
    idx = 0
    mul = 1
    for s in range(counts.shape[0]):
        idx += counts[s] * mul
        mul *= radix
    for s in range(counts.shape[0]):
        out[s] = settled * table[a, idx, s]


@jit(refcounts=False)
def margins(X, change, lead, rounds, j, others, out):
    """Every seat's margin over its rivals after ``change``, the time its lead has to hold included, into ``out``."""
    w, lock = j.rival_weight, j.lock
    S = X.shape[0]
    for s in range(S):
        most = NEG
        total = 0.0
        for i in range(S - 1):
            o = others[s, i]
            v = X[o] + change[o]
            if v > most:
                most = v
            total += v
        out[s] = (X[s] + change[s]) - (w * most + (1 - w) * (total / (S - 1)))
    if lock:
        now = max(rounds, MIN_ROUNDS)
        after = max(rounds + change[S], MIN_ROUNDS)
        log = math.log(now / after)
        for s in range(S):
            out[s] = out[s] + lock * 0.5 * lead[s] * log


@jit
def gain(pos, change, seat, j, t, buf):
    """The change in ``seat``'s margin that ``change`` makes (``buf``: room for every seat's margin)."""
    pos, change, buf = borrowed(pos), borrowed(change), borrowed(buf)  # arguments: the caller's for the whole call
    X, lead, U0, rounds, others = pos.X, pos.lead, pos.U0, pos.rounds, t.others
    margins(X, change, lead, rounds, j, others, buf)
    return buf[seat] - U0[seat]


@jit
def gains(pos, D, j, t):
    """(T, S, S) over (target, winner, judge): every seat's change in margin for each change ``D[c, w]``."""
    pos, D = borrowed(pos), borrowed(D)  # arguments: the caller's for the whole call
    X, lead, U0, rounds, others = pos.X, pos.lead, pos.U0, pos.rounds, t.others
    T, S = D.shape[0], D.shape[1]
    G = np.empty((T, S, S))
    buf = np.empty(S)
    for c in range(T):
        for w in range(S):
            margins(X, D[c, w], lead, rounds, j, others, buf)
            for judge in range(S):
                G[c, w, judge] = buf[judge] - U0[judge]
    return G


@jit(inline=True)  # one caller
def appraise(view, t, j):
    """The :class:`Position` of ``view`` by the weights ``j``."""
    tokens, support, supply, cubes, free = view.tokens, view.support, view.supply, view.cubes, view.free
    played, left = max(view.round - 1, 0), view.rounds_left
    S, A, refunds, bonus, others = t.seats, t.areas, t.refunds, t.bonus, t.others
    spaces, token_points = t.spaces, t.token_points
    prior_income, prior_rounds, fill_rate = j.prior_income, j.prior_rounds, j.fill_rate
    unsettled, trailing = j.unsettled, j.trailing
    prior = prior_income * prior_rounds
    income = np.empty(S)
    for s in range(S):
        income[s] = (support[s] + prior) / (played + prior_rounds)
    rounds = rounds_left(free, fill_rate, left)
    settled = 1.0 / (1.0 + unsettled * rounds)  # cubes move until the end: count them less early
    area = np.empty((A, S))
    for a in range(A):
        area_points(a, cubes[a], settled, t, area[a])
    X = np.empty(S)  # support, area points, and the support still to come
    for s in range(S):
        total = 0.0
        for a in range(A):
            total += area[a, s]
        X[s] = (support[s] + total) + income[s] * rounds
        if refunds:
            tp = token_points
            X[s] = X[s] + (tokens[s, 0] * tp[0] + tokens[s, 1] * tp[1] + tokens[s, 2] * tp[2])
    none = np.zeros(S + 1)
    lead = np.zeros(S)
    plain = np.zeros(S)
    margins(X, none, lead, rounds, j, others, plain)  # the margins in points (no lead yet: no time term)
    for s in range(S):
        lead[s] = plain[s] if plain[s] > 0 else trailing * plain[s]
    U0 = np.empty(S)
    margins(X, none, lead, rounds, j, others, U0)
    movable = np.zeros((A, S), dtype=np.bool_)
    for a in range(A):
        most = 0
        for s in range(S):
            most = max(most, cubes[a, s])
        protected = bonus and most == spaces[a]
        for s in range(S):
            movable[a, s] = cubes[a, s] > 0 and not protected
    add = np.zeros((A, S, S + 1))
    counts = np.empty(S, dtype=np.int64)
    pts = np.empty(S)
    fewer = free.copy()
    for a in range(A):
        if free[a] > 0:
            fewer[a] -= 1
            sooner = rounds_left(fewer, fill_rate, left) - rounds
            fewer[a] += 1
            for w in range(S):
                if supply[w] > 0:
                    counts[:] = cubes[a]
                    counts[w] += 1
                    area_points(a, counts, settled, t, pts)
                    for s in range(S):
                        add[a, w, s] = pts[s] - area[a, s]
                        add[a, w, s] += income[s] * sooner
                    add[a, w, S] = sooner
    worth = token_worth(tokens, free, t, j)
    move = np.zeros((A, S, S, S + 1))
    for a in range(A):
        for v in range(S):
            if movable[a, v]:
                for w in range(S):
                    if w != v:
                        counts[:] = cubes[a]
                        counts[v] -= 1
                        counts[w] += 1
                        area_points(a, counts, settled, t, pts)
                        for s in range(S):
                            move[a, v, w, s] = pts[s] - area[a, s]
    return Position(
        X=X,
        lead=lead,
        U0=U0,
        income=income,
        area=area,
        movable=movable,
        add=add,
        worth=worth,
        move=move,
        rounds=rounds,
        settled=settled,
    )


@jit(inline=True)  # one caller
def token_worth(tokens, free, t, j):
    """(S, 3): what one Force, Blackmail, Gold won now is worth to each seat: its end-game points if this round
    may well be the last, else its bidding power in the rounds to come. Under Bid Refunds tokens are kept until
    spent, so a seat's power per token shrinks as its hoard grows."""
    S, A, refunds, token_points = t.seats, t.areas, t.refunds, t.token_points
    power, refund_power, hoard = j.power, j.refund_power, j.hoard
    open_areas = 0
    crowded = False
    for a in range(A):
        open_areas += free[a] > 0
        crowded = crowded or free[a] > 1
    last = 0.0  # the chance that this round is the last
    if not crowded and open_areas > 0:
        m = min(open_areas, 4)
        last = 0.85 if m == 1 else (0.7 if m == 2 else (0.55 if m == 3 else 0.4))
    out = np.empty((S, 3))
    for s in range(S):
        held = float(tokens[s, 0] + tokens[s, 1] + tokens[s, 2])
        for k in range(3):
            power_k = power[k]
            if refunds:
                power_k *= refund_power * min(1.0, hoard / max(held, 1.0))
            out[s, k] = last * token_points[k] + (1 - last) * power_k
    return out


# --- cubes moved: the Spy, the Apothecary, a Remove card -----------------------------------------------------------


@jit
def removal_change(pos, view, a, v, t, j, out):
    """The change when one cube of ``v`` in ``a`` returns to its owner's supply (a Remove card), into ``out``."""
    free, cubes, left = view.free, view.cubes, view.rounds_left
    rounds, settled, area, income = pos.rounds, pos.settled, pos.area, pos.income
    S, fill_rate = t.seats, j.fill_rate
    more = free.copy()
    more[a] += 1
    later = rounds_left(more, fill_rate, left) - rounds
    counts = cubes[a].copy()
    counts[v] -= 1
    pts = np.empty(S)
    area_points(a, counts, settled, t, pts)
    for s in range(S):
        out[s] = pts[s] - area[a, s] + income[s] * later
    out[S] = later


@jit(inline=True)  # one caller
def spy_may_replace(movable, supply, owner, a, v):
    """Whether ``owner``'s Spy may replace ``v``'s cube in ``a`` with one of its own."""
    return movable[a, v] and v != owner and supply[owner] > 0


@jit(refcounts=False)
def may_swap(movable, a1, s1, s2, a2):
    """Whether the Apothecary may swap s1's cube in a1 with s2's cube in a2."""
    return movable[a1, s1] and movable[a2, s2] and s1 != s2 and a1 != a2


@jit(refcounts=False)
def swap_change(move, a1, s1, s2, a2, out):
    """The change of a swap, into ``out``: s1's cube in a1 becomes s2's, s2's in a2 becomes s1's."""
    for x in range(out.shape[0]):
        out[x] = move[a1, s1, s2, x] + move[a2, s2, s1, x]


@jit(inline=True)  # one caller
def best_spies(pos, view, t, j):
    """(S, S + 1): each player's best Spy move by its own margin (nothing if none, and nothing for the puppet)."""
    move, movable, supply = pos.move, pos.movable, view.supply
    S, A, puppet = t.seats, t.areas, t.puppet
    out = np.zeros((S, S + 1))
    buf = np.empty(S)
    for w in range(S):
        if w == puppet:
            continue
        best, ba, bv = NEG, -1, -1
        for a in range(A):
            for v in range(S):
                if spy_may_replace(movable, supply, w, a, v):
                    g = gain(pos, move[a, v, w], w, j, t, buf)
                    if g > best:
                        best, ba, bv = g, a, v
        if ba >= 0:
            out[w] = move[ba, bv, w]
    return out


@jit(inline=True)  # one caller
def best_swaps(pos, t, j):
    """(S, S + 1): each player's best Apothecary swap by its own margin (nothing if none, and nothing for the
    puppet)."""
    move, movable = pos.move, pos.movable
    X, lead, U0, rounds, others = pos.X, pos.lead, pos.U0, pos.rounds, t.others  # gain's arrays, read once here
    S, A, puppet = t.seats, t.areas, t.puppet
    out = np.zeros((S, S + 1))
    buf = np.empty(S)
    change = np.empty(S + 1)
    for w in range(S):
        if w == puppet:
            continue
        best = NEG
        best_a1 = best_s1 = best_s2 = best_a2 = 0
        found = False
        for a1 in range(A):
            for s1 in range(S):
                for s2 in range(S):
                    for a2 in range(A):
                        if may_swap(movable, a1, s1, s2, a2):
                            swap_change(move, a1, s1, s2, a2, change)
                            margins(X, change, lead, rounds, j, others, buf)  # gain, without passing pos on
                            g = buf[w] - U0[w]  # at each swap tried (a reference counted per array passed)
                            if not found or g > best:
                                best = g
                                best_a1, best_s1, best_s2, best_a2 = a1, s1, s2, a2
                            found = True
        if found:
            swap_change(move, best_a1, best_s1, best_s2, best_a2, out[w])
    return out


# --- characters ---------------------------------------------------------------------------------------------------


@jit
def changes_if_won(pos, view, t, j):
    """(T, S, S + 1): the change if seat ``w`` wins target ``c`` now (``[c, w]``): its support, its tokens at their
    worth, its cube. The Spy and the Apothecary are played to the winner's best (times ``special_scale``); the
    puppet's are worth nothing to anyone (someone else decides them). The Card and Scheming spaces are not
    contests (zero)."""
    pos, view = borrowed(pos), borrowed(view)  # arguments: the caller's for the whole call
    bank, worth, add = view.bank, pos.worth, pos.add
    S, T, C, puppet = t.seats, t.targets, t.n_characters, t.puppet
    spy, apothecary, card = t.spy, t.apothecary, t.card
    support, char_tokens, char_area, scale = t.support, t.char_tokens, t.char_area, j.special_scale
    D = np.zeros((T, S, S + 1))
    for c in range(C):
        if c in (spy, apothecary, card):
            continue
        m0 = min(char_tokens[c, 0], bank[0])
        m1 = min(char_tokens[c, 1], bank[1])
        m2 = min(char_tokens[c, 2], bank[2])
        for s in range(S):
            D[c, s, s] += support[c] + (worth[s, 0] * m0 + worth[s, 1] * m1 + worth[s, 2] * m2)
        a = char_area[c]
        if a >= 0:
            for w in range(S):
                for x in range(S + 1):
                    D[c, w, x] += add[a, w, x]
    if spy >= 0:
        _special_rows(best_spies(pos, view, t, j), puppet, scale, D[spy])
    if apothecary >= 0:
        _special_rows(best_swaps(pos, t, j), puppet, scale, D[apothecary])
    return D


@jit(refcounts=False)
def _special_rows(best, puppet, scale, out):
    """The Spy's or the Apothecary's rows of :func:`changes_if_won` into ``out`` (S, S + 1): each player's best
    move, times ``special_scale``; the puppet's stay nothing."""
    for w in range(out.shape[0]):
        if w != puppet:
            for x in range(out.shape[1]):
                out[w, x] = best[w, x] * scale


@jit
def card_value(pos, view, seat, t, j):
    """The expected gain in ``seat``'s margin of one card from the first edition's deck (what is left of it)."""
    movable, worth, deck_left = pos.movable, pos.worth, view.deck_left
    S, A, card, n = t.seats, t.areas, t.card, t.n_cards
    card_remove, card_support, card_tokens, deck_full = t.card_remove, t.card_support, t.card_tokens, t.deck_full
    if card < 0:
        return 0.0
    left = np.empty(n)
    total_left = 0
    for i in range(n):
        total_left += deck_left[i]
    for i in range(n):
        left[i] = float(deck_left[i]) if total_left else deck_full[i]
    share = left / pairwise_sum(left)
    change = np.empty(S + 1)
    buf = np.empty(S)
    total = 0.0
    for i in range(n):
        if card_remove[i]:
            best = 0.0
            for a in range(A):
                for v in range(S):
                    if movable[a, v] and v != seat:
                        removal_change(pos, view, a, v, t, j, change)
                        best = max(best, gain(pos, change, seat, j, t, buf))
            value = best
        else:
            tk = card_tokens[i]
            value = card_support[i] + (tk[0] * worth[seat, 0] + tk[1] * worth[seat, 1] + tk[2] * worth[seat, 2])
        total = total + value * share[i]
    return float(total)
