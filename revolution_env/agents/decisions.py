"""Everything the heuristic bots compute, as loops that Numba compiles (:mod:`revolution_env.common.jit`) and that
run as plain Python without it, with the same results: :mod:`.heuristics` has each bot's idea and parameters,
:mod:`.compiled` calls :func:`decide_rows` compiled, or as plain Python while Numba builds it. One module: Numba's
cache knows a compiled function's own source file only, and would keep a function's old machine code inside a
caller of another file after an edit.

**The judgement** (:func:`appraise` -> :class:`Position`), read from an observation only. Every seat's *projected
points* are its support; its expected area points (each area's free spaces are filled at random, one cube to a
uniformly chosen seat per space, and the seat with strictly the most cubes at the end scores the area, plus the
Area Control Bonus where it is on), counted less while many rounds remain (Spies and Apothecaries move cubes until
the end); the support it will still earn (its income per round so far, over the rounds the free spaces need); and,
under Bid Refunds, its tokens at their end-game points. A seat's *margin* is its projected points minus its rivals'
(a blend of the best rival and their mean), plus what its lead gains from an earlier end. Every decision is judged
by how it changes the margins: a character won (its support, its tokens at their bidding power or, in what may be
the last round, their points, its cube), a Spy move, an Apothecary swap, a Remove card. Seats are relative, as in
the observation (0 = the observer, the puppet last).

**The rivals' bids** (:func:`model_rivals` -> :class:`BidModel`), seen from ``seat`` (0: us). A share ``mirror`` of
each rival's samples is level one: the rival plans its bid as we plan ours (:func:`plan_bid`), against rivals that
play by their interests; the rest come from its interests and habits. Of those, a share ``habit`` repeats its bid
of last round (public once revealed): its tokens of each type spread over the targets in the same proportions.
The others place each token at random on a target it may take, more likely where that rival's own margin gains
most (``sharpness``) and where it bid last round (``persistence``), partly at random (``spread``); tokens of one
type stack as much as they did last round (a Dirichlet-multinomial, :func:`clumping`).

**A bid of ours on a target** (:func:`bid_worth`) is worth its value times the chance it is strictly highest, plus
the (negative) value of the rival who would otherwise win, minus the tokens it spends under Bid Refunds
(``spend``). Two players: a bid Guy could tie or beat is discounted (``guy_risk``), one Guy could beat is a way to
hand him a character we would rather he won (the last space of an area we cannot fill ourselves, say); Scheming
Gold buys priority. The targets are independent. **Each style's bid** (:func:`value_bid`, :func:`bargain_bid`,
:func:`area_bid`) builds on these; the three share the cube choices (:func:`cube_choice`) and Guy's bids
(:func:`guy_bid`).

**The random draws** are NumPy's algorithms, on the bot's own ``numpy.random.Generator`` through the methods that
Numba compiles (``random``, ``binomial``, ``standard_gamma``): :func:`multinomial` (a binomial per category),
:func:`dirichlet` (gamma variates, or stick-breaking with :func:`beta` variates when every alpha is below 0.1) and
:func:`beta` (Johnk's algorithm with NumPy's log-space branch for underflow) are written here as NumPy's C code
has them, and sums of arrays add in NumPy's pairwise order (:func:`pairwise_sum`), so that compiled and plain
Python draw the same numbers and the decisions stay those recorded in ``tests/golden/bots/``.

**What travels between the functions**: named tuples, at most six to a function. :class:`Bot` (a bot: the variant's
:class:`Tables`, built once per bot by :func:`tables`, its :class:`FeatureStarts`, its :class:`Settings` and its
:class:`Judgement`, the weights the appraisal reads alone), :class:`View` (an observation) and its
:class:`Position`, :class:`Stakes` (what the round's targets are worth to a seat, which its model of the rivals'
bids is built on), :class:`Rival` (one rival as it is sampled) and the :class:`BidModel`; small tuples where a few
numbers go together: a bid on one target (Force, Blackmail, Gold), a cube (area, seat), a plan's effort
(``max_group``, ``improve``). Three things about Numba shape how. It compiles a function again for each new type of
its arguments, and a literal number passed as an argument is a type of its own: so the observer's seat travels as
the field ``View.me`` and the level-one planner's settings as fields of :class:`Settings`, not as the literals ``0``
and ``5``. It reads the types of a call's arguments from Python quickly for plain tuples, slowly for named ones: so
the entry points (:func:`decide_rows`, :func:`value_per_sample`, :func:`margins_now`) take the named tuples as plain
ones and name them again. And a compiled function counts a reference to every array of a tuple it is given, and
gives it back once the tuple is last used: where that is in the function's first lines, Numba cancels the pairs of
the arrays it does not use; where it is further down, every call pays for all of them. So every function reads the
fields it needs into locals at its top, and uses the tuple no more except to hand it on.
"""

from __future__ import annotations

import itertools
import math
from math import factorial
from typing import Any, NamedTuple

import numpy as np

from revolution_env.common.jit import COMPILED, borrowed, jit
from revolution_env.engine.game import MAX_GUY_BIDS
from revolution_env.engine.kernels import BLACKMAIL, FORCE, GOLD, K_APO1, K_BID, K_GUY, K_NONE, K_REMOVE, K_SPY  # ints

BONUS = 10  # Area Control Bonus (docs/rules.md §5)
MIN_ROUNDS = 0.3  # the rounds left once the board is full (the round being played)
VEHICLE = 0.8  # two players: the chance that we get to make Guy beat one of our own bids
NEG = -np.inf
VALUE, BARGAIN, AREA = 0, 1, 2  # Settings.style
STYLES = {"value": VALUE, "bargain": BARGAIN, "area": AREA}


# --- a bot's weights ----------------------------------------------------------------------------------------------


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


@jit(inline=True)  # inlined in the two entry points
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
def margins(X, change, lead, rounds, j, out):
    """Every seat's margin over its rivals after ``change``, the time its lead has to hold included, into ``out``."""
    w, lock = j.rival_weight, j.lock
    S = X.shape[0]
    for s in range(S):
        most = NEG
        total = 0.0
        for i in range(S - 1):
            o = i if i < s else i + 1  # the rivals of s in seat order
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
def gain(pos, change, seat, j, buf):
    """The change in ``seat``'s margin that ``change`` makes (``buf``: room for every seat's margin)."""
    pos, change, buf = borrowed(pos), borrowed(change), borrowed(buf)  # arguments: the caller's for the whole call
    X, lead, U0, rounds = pos.X, pos.lead, pos.U0, pos.rounds
    margins(X, change, lead, rounds, j, buf)
    return buf[seat] - U0[seat]


@jit
def gains(pos, D, j):
    """(T, S, S) over (target, winner, judge): every seat's change in margin for each change ``D[c, w]``."""
    pos, D = borrowed(pos), borrowed(D)  # arguments: the caller's for the whole call
    X, lead, U0, rounds = pos.X, pos.lead, pos.U0, pos.rounds
    T, S = D.shape[0], D.shape[1]
    G = np.empty((T, S, S))
    buf = np.empty(S)
    for c in range(T):
        for w in range(S):
            margins(X, D[c, w], lead, rounds, j, buf)
            for judge in range(S):
                G[c, w, judge] = buf[judge] - U0[judge]
    return G


@jit(inline=True)  # inlined in the two entry points
def appraise(view, t, j):
    """The :class:`Position` of ``view`` by the weights ``j``."""
    tokens, support, supply, cubes, free = view.tokens, view.support, view.supply, view.cubes, view.free
    played, left = max(view.round - 1, 0), view.rounds_left
    S, A, refunds, bonus = t.seats, t.areas, t.refunds, t.bonus
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
    margins(X, none, lead, rounds, j, plain)  # the margins in points (no lead yet: no time term)
    for s in range(S):
        lead[s] = plain[s] if plain[s] > 0 else trailing * plain[s]
    U0 = np.empty(S)
    margins(X, none, lead, rounds, j, U0)
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


# --- cubes moved: the Spy, the Apothecary, a Remove card ----------------------------------------------------------


@jit
def removal_change(pos, view, cube, t, j, out):
    """The change when ``cube``, (area ``a``, seat ``v``), returns to its owner's supply (a Remove card), into
    ``out``."""
    a, v = cube
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
                    g = gain(pos, move[a, v, w], w, j, buf)
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
    X, lead, U0, rounds = pos.X, pos.lead, pos.U0, pos.rounds  # gain's arrays, read once here
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
                            margins(X, change, lead, rounds, j, buf)  # gain, without passing pos on
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
                        removal_change(pos, view, (a, v), t, j, change)
                        best = max(best, gain(pos, change, seat, j, buf))
            value = best
        else:
            tk = card_tokens[i]
            value = card_support[i] + (tk[0] * worth[seat, 0] + tk[1] * worth[seat, 1] + tk[2] * worth[seat, 2])
        total = total + value * share[i]
    return float(total)


# --- NumPy's random draws -----------------------------------------------------------------------------------------


@jit(inline=True)  # one caller
def beta(rng, a, b):
    """A beta variate as NumPy's ``random_beta`` draws it: Johnk's algorithm for a, b <= 1, with its log-space
    branch when a power underflows; else two gamma variates."""
    if a <= 1.0 and b <= 1.0:
        while True:
            U = rng.random()
            V = rng.random()
            X = U ** (1.0 / a)
            Y = V ** (1.0 / b)
            XpY = X + Y
            if XpY <= 1.0 and U + V > 0.0:
                if X > 0 and Y > 0:
                    return X / XpY
                log_x = math.log(U) / a
                log_y = math.log(V) / b
                delta = log_x - log_y
                if delta > 0:
                    return math.exp(-math.log1p(math.exp(-delta)))
                return math.exp(delta - math.log1p(math.exp(delta)))
    ga = rng.standard_gamma(a)
    gb = rng.standard_gamma(b)
    return ga / (ga + gb)


# Inlined in its three calls: passed to a function of its own, the generator costs a reference counted per call
# (the slower way: docs/experiments.md, "One implementation of the heuristic bots").
@jit(inline=True)
def multinomial(rng, n, p, out):
    """``rng.multinomial(n, p)`` into ``out``, as NumPy draws it: a binomial per category on what is left."""
    d = p.shape[0]
    for j in range(d):
        out[j] = 0
    remaining = 1.0
    dn = n
    for j in range(d - 1):
        out[j] = rng.binomial(dn, p[j] / remaining)
        dn -= out[j]
        if dn <= 0:
            break
        remaining -= p[j]
    if dn > 0:
        out[d - 1] = dn


def _multinomial_as_python(rng, n, p, out):
    """:func:`multinomial` as plain Python: NumPy's ``multinomial`` itself, the same algorithm, whose binomials
    Python's ``Generator.binomial`` would refuse where rounding leaves ``p[j] / remaining`` a hair above 1."""
    out[:] = rng.multinomial(n, p)


AS_PYTHON = {"multinomial": _multinomial_as_python}  # what runs instead as plain Python (compiled.as_python)
if not COMPILED:
    multinomial = _multinomial_as_python


@jit(inline=True)  # one caller
def dirichlet(rng, alpha, out):
    """``rng.dirichlet(alpha)`` into ``out``, as NumPy draws one sample."""
    k = alpha.shape[0]
    if k > 0 and alpha.max() < 0.1:  # small alphas: stick-breaking with beta variates
        csum = np.empty(k)
        acc = 0.0
        for j in range(k - 1, -1, -1):
            acc += alpha[j]
            csum[j] = acc
        for j in range(k):
            out[j] = 0.0
        acc = 1.0
        for j in range(k - 1):
            v = beta(rng, alpha[j], csum[j + 1])
            out[j] = acc * v
            acc *= 1.0 - v
            if csum[j + 1] == 0:
                break
        out[k - 1] = acc
    else:
        acc = 0.0
        for j in range(k):
            out[j] = rng.standard_gamma(alpha[j])
            acc = acc + out[j]
        inv = 1.0 / acc
        for j in range(k):
            out[j] = out[j] * inv


# --- the rivals' bids ---------------------------------------------------------------------------------------------


class BidModel(NamedTuple):
    """The rivals' sampled bids, and what a bid of ours on each target is worth against them (:func:`bid_worth`)."""

    value: np.ndarray  # (T,) the value of each target to ``seat``
    sorted_keys: np.ndarray  # (T, K) each target's strongest opposing bid in each sample, sorted
    above: np.ndarray  # (T, K + 1) the losses to the opposing bids of each rank and above, summed, over K
    top: np.ndarray  # (K, T) the strongest opposing bid of each sample
    lost: np.ndarray  # (K, T) our change in margin where that bid is strictly highest (0 where nobody wins)
    cost: np.ndarray  # (3,) what winning costs per token (Bid Refunds)
    vehicle: np.ndarray  # (T,) two players: what handing Guy a character is worth (else zeros)
    guy_tokens: np.ndarray  # (3,) two players: Guy's tokens (else zeros)
    card_value: float
    share: float  # 1 / K
    samples: int  # K
    seat: int
    guy_risk: float  # two players: set by the style once the model is built (:func:`with_guy_terms`)
    scheming_worth: float
    rival_scheming: int


@jit(inline=True)  # one caller
def clumping(last_k):
    """The Dirichlet concentration that matches how a rival spread one token type last round: small when it
    stacked, large when it spread one token per target."""
    n = 0
    for c in range(last_k.shape[0]):
        n += last_k[c]
    if n <= 1:
        return 2.0
    sq = np.empty(last_k.shape[0])
    for c in range(last_k.shape[0]):
        x = last_k[c] / n
        sq[c] = x * x
    h = float(pairwise_sum(sq))
    return float(min(max(1.5 * (1 - h) / max(h, 1e-3), 0.3), 8.0))


@jit(inline=True)  # one caller
def sample_tokens(rng, rival, k, bot, out):
    """Samples of where ``rival`` puts its tokens of type ``k``, one a row of ``out`` (K, T), added into it times the
    type's strength: the first ``rival.habit`` repeat its bid of last round, the others follow its interests."""
    n, weight, last, habit = rival.tokens[k], rival.weight, rival.last, rival.habit
    t, s = bot.tables, bot.settings
    legal, bid_count, strength = t.bid_targets[k], t.bid_count[k], t.strength[k]
    spread, inner_samples, default_clumping = s.spread, s.inner_samples, s.clumping
    T, K = weight.shape[0], out.shape[0]
    counts = np.zeros((K, T), dtype=np.int64)
    if habit:  # the rival repeats its bid of last round
        used = np.empty(T)
        any_used = False
        for c in range(T):
            used[c] = last[c, k] * legal[c]
            any_used = any_used or used[c] != 0
        if any_used:
            p = used / pairwise_sum(used)
            for i in range(habit):
                multinomial(rng, n, p, counts[i])
        else:
            habit = 0
    rest = K - habit
    w = np.empty(T)
    for c in range(T):
        w[c] = legal[c] * weight[c]
    total = pairwise_sum(w)
    p = np.empty(T)
    for c in range(T):
        p[c] = (1 - spread) * w[c] / total + spread * legal[c] / bid_count
    if n > 1 and inner_samples < K:  # Dirichlet-multinomial: rivals stack their tokens
        m = 0
        for c in range(T):
            m += legal[c] != 0
        on = np.empty(m, dtype=np.int64)
        i = 0
        for c in range(T):
            if legal[c] != 0:
                on[i] = c
                i += 1
        last_k = np.empty(T, dtype=np.int64)
        for c in range(T):
            last_k[c] = last[c, k]
        kappa = clumping(last_k) if last_k.sum() > 1 else default_clumping
        alpha = np.empty(m)
        for i in range(m):
            alpha[i] = kappa * p[on[i]]
        p_k = np.empty((rest, m))
        for i in range(rest):
            dirichlet(rng, alpha, p_k[i])
        row = np.empty(m, dtype=np.int64)
        for i in range(rest):
            p_k[i] = p_k[i] / pairwise_sum(p_k[i])
        for i in range(rest):
            multinomial(rng, n, p_k[i], row)
            for x in range(m):
                counts[habit + i, on[x]] = row[x]
    else:
        for i in range(rest):
            multinomial(rng, n, p, counts[habit + i])
    for i in range(K):
        for c in range(T):
            out[i, c] += counts[i, c] * strength


@jit
def _rivals(seat, P):
    """The players other than ``seat``, in seat order."""
    rivals = np.empty(P - 1, dtype=np.int64)
    i = 0
    for j in range(P):
        if j != seat:
            rivals[i] = j
            i += 1
    return rivals


class Rival(NamedTuple):
    """One rival as a bot samples its bids (:func:`rival_interests`)."""

    tokens: np.ndarray  # (3,) what it holds
    weight: np.ndarray  # (T,) how likely it bids on each target: its interest in it, more where it bid last round
    last: np.ndarray  # (T, 3) its bid of last round (zeros in the first)
    habit: int  # how many of the samples repeat that bid


class Stakes(NamedTuple):
    """What the round's targets are worth, as ``seat`` sees them: what its model of the rivals' bids is built on
    (:func:`model_rivals`)."""

    G: np.ndarray  # (T, S, S) every seat's change in margin per target won, by (target, winner, judge) (:func:`gains`)
    seat: int
    card_value: float  # what one card of the first edition's deck is worth to ``seat`` (:func:`card_value`), or 0


@jit(inline=True)  # one caller
def rival_interests(view, stakes, j, bot, rows):
    """Rival ``j`` as ``stakes.seat`` sees it, for ``rows`` samples of its bids: each target wanted as much as its
    own margin gains from it (the card at ``stakes.card_value``), more where it bid last round."""
    round_, bids, tokens = view.round, view.bids, view.tokens
    G, value_of_card = stakes.G, stakes.card_value
    T, card = bot.tables.targets, bot.tables.card
    habit_share, sharpness, persistence = bot.settings.habit, bot.settings.sharpness, bot.settings.persistence
    habit = np.int64(np.rint(rows * habit_share)) if round_ > 1 else 0
    weight = np.empty(T)
    for c in range(T):
        want = max(G[c, j, j], 0.0)
        if c == card:
            want = value_of_card
        weight[c] = (want + 1.0) ** sharpness
    last = bids[j] if round_ > 1 else np.zeros((T, 3), dtype=np.int64)
    if last.any():  # rivals tend to bid again where they bid last round
        for c in range(T):
            bid_on = last[c, 0] + last[c, 1] + last[c, 2] > 0
            weight[c] = weight[c] * (1.0 + persistence * bid_on)
    return Rival(tokens=tokens[j], weight=weight, last=last, habit=habit)


@jit
def sample_rival(rng, view, stakes, j, bot, out):
    """Rival ``j``'s bids sampled from its interests and habits (:func:`rival_interests`), as keys, into ``out``
    (its samples not planned, :func:`model_rivals`; T)."""
    view, stakes, out = borrowed(view), borrowed(stakes), borrowed(out)  # arguments: the caller's for the whole call
    rival = rival_interests(view, stakes, j, bot, out.shape[0])
    for k in range(3):
        if rival.tokens[k]:
            sample_tokens(rng, rival, k, bot, out)


@jit
def _model_from_rival_bids(pos, view, stakes, keys, bot):
    """The :class:`BidModel` of ``stakes.seat`` once the rivals' bids (``keys``: rival in seat order, sample, target)
    are drawn."""
    pos, view, stakes, keys = borrowed(pos), borrowed(view), borrowed(stakes), borrowed(keys)  # the caller's
    worth, tokens = pos.worth, view.tokens
    G, seat, value_of_card = stakes.G, stakes.seat, stakes.card_value
    T, puppet, refunds, spend = bot.tables.targets, bot.tables.puppet, bot.tables.refunds, bot.settings.spend
    R, K = keys.shape[0], keys.shape[1]
    value = np.empty(T)
    for c in range(T):
        value[c] = G[c, seat, seat]
    top = np.empty((K, T), dtype=np.int64)
    lost = np.zeros((K, T))  # our change in margin when a rival's bid is strictly highest
    for m in range(K):
        for c in range(T):
            best = keys[0, m, c]
            who = 0
            for i in range(1, R):
                if keys[i, m, c] > best:
                    best, who = keys[i, m, c], i
            count = 0
            for i in range(R):
                count += keys[i, m, c] == best
            top[m, c] = best
            if count == 1 and best > 0:
                rival = who if who < seat else who + 1  # the rivals of seat in seat order
                lost[m, c] = G[c, rival, seat]
    # each target's strongest opposing bids, sorted (stable), and the losses of the ranks above each, summed
    sorted_keys = np.empty((T, K), dtype=np.int64)
    above = np.zeros((T, K + 1))
    for c in range(T):
        order = stable_order(top[:, c])
        acc = 0.0
        for r in range(K - 1, -1, -1):
            acc += lost[order[r], c]
            above[c, r] = acc / K
        for r in range(K):
            sorted_keys[c, r] = top[order[r], c]
    cost = np.zeros(3)
    if refunds:
        for k in range(3):
            cost[k] = worth[seat, k] * spend
    vehicle = np.zeros(T)
    guy_tokens = np.zeros(3, dtype=np.int64)
    if puppet >= 0:  # two players: a bid of ours that Guy can beat lets us hand him a character
        for c in range(T):
            vehicle[c] = max(G[c, puppet, seat], 0.0) * VEHICLE
        guy_tokens[:] = tokens[puppet]
    return BidModel(
        value=value,
        sorted_keys=sorted_keys,
        above=above,
        top=top,
        lost=lost,
        cost=cost,
        vehicle=vehicle,
        guy_tokens=guy_tokens,
        card_value=value_of_card,
        share=1.0 / K,
        samples=K,
        seat=seat,
        guy_risk=0.0,
        scheming_worth=0.0,
        rival_scheming=0,
    )


@jit
def with_guy_terms(model, guy_risk, scheming_worth, rival_scheming):
    """The model with its two-player terms set: the discount of a bid Guy could tie or beat, what Scheming's
    priority is worth, and the Gold the rival placed on Scheming last round."""
    return BidModel(
        value=model.value,
        sorted_keys=model.sorted_keys,
        above=model.above,
        top=model.top,
        lost=model.lost,
        cost=model.cost,
        vehicle=model.vehicle,
        guy_tokens=model.guy_tokens,
        card_value=model.card_value,
        share=model.share,
        samples=model.samples,
        seat=model.seat,
        guy_risk=guy_risk,
        scheming_worth=scheming_worth,
        rival_scheming=rival_scheming,
    )


@jit(inline=True)  # one caller
def _interest_model(rng, view, pos, stakes, bot):
    """Every rival's bids as ``stakes.seat`` samples them from the rivals' interests and habits alone (no level
    one)."""
    T, K = bot.tables.targets, bot.settings.inner_samples
    rivals = _rivals(stakes.seat, bot.tables.players)
    keys = np.zeros((rivals.shape[0], K, T), dtype=np.int64)
    for i in range(rivals.shape[0]):
        sample_rival(rng, view, stakes, rivals[i], bot, keys[i])
    return _model_from_rival_bids(pos, view, stakes, keys, bot)


@jit
def model_rivals(rng, view, pos, G, bot):
    """The rivals' bids as we sample them (``samples`` samples; ``G``: every seat's change in margin per target
    won, :func:`gains`): a share ``mirror`` of the samples of each levelled rival (the best armed
    ``mirror_rivals``) is the bid it would plan if it thought as we do (:func:`plan_bid` against rivals sampled
    from their interests); the rest sampled from its interests and habits."""
    view, pos, G = borrowed(view), borrowed(pos), borrowed(G)  # arguments: the caller's for the whole call
    me, tokens = view.me, view.tokens
    t, judgement, s = bot.tables, bot.judgement, bot.settings
    T, P, card, token_points, strength = t.targets, t.players, t.card, t.token_points, t.strength
    K, mirror, mirror_rivals = s.samples, s.mirror, s.mirror_rivals
    inner = (s.inner_max_group, s.inner_improve)
    ours = Stakes(G=G, seat=me, card_value=card_value(pos, view, me, t, judgement) if card >= 0 else 0.0)
    rivals = _rivals(me, P)
    R = rivals.shape[0]
    levelled = np.zeros(P, dtype=np.bool_)
    if mirror:
        if mirror_rivals >= R:
            for i in range(R):
                levelled[rivals[i]] = True
        else:  # the best armed
            armed = np.empty(R)
            for i in range(R):
                j = rivals[i]
                armed[i] = -(tokens[j, 0] * token_points[0] + tokens[j, 1] * token_points[1]
                             + tokens[j, 2] * token_points[2])  # fmt: skip
            order = stable_order(armed)
            for i in range(mirror_rivals):
                levelled[rivals[order[i]]] = True
    keys = np.zeros((R, K, T), dtype=np.int64)
    for i in range(R):
        j = rivals[i]
        mirrored = np.int64(np.rint(K * mirror)) if levelled[j] else 0
        sample_rival(rng, view, ours, j, bot, keys[i, mirrored:])
        if mirrored:  # level one: the rival plans its bid as we do, against rivals that bid by interest
            theirs = Stakes(G=G, seat=j, card_value=card_value(pos, view, j, t, judgement) if card >= 0 else 0.0)
            model = _interest_model(rng, view, pos, theirs, bot)
            plan = plan_bid(rng, model, tokens[j], inner, pos, t)
            for c in range(T):
                key = plan[c, 0] * strength[0] + plan[c, 1] * strength[1] + plan[c, 2] * strength[2]
                for m in range(mirrored):
                    keys[i, m, c] = key
    return _model_from_rival_bids(pos, view, ours, keys, bot)


# --- what a bid is worth ------------------------------------------------------------------------------------------


@jit(refcounts=False)
def count_below(sorted_row, q):
    """How many of ``sorted_row`` are below ``q`` (a binary search). The keys are integers, so those at most ``q``
    are those below ``q + 1``."""
    lo, hi = 0, sorted_row.shape[0]
    while lo < hi:
        mid = (lo + hi) // 2
        if sorted_row[mid] < q:
            lo = mid + 1
        else:
            hi = mid
    return lo


@jit(refcounts=False)
def bid_worth(model, c, counts, pos, t):
    """What a bid of ``counts``, (Force, Blackmail, Gold) = (f, b, g), on target ``c`` is worth against the sampled
    rivals' bids (the module's docstring). The Card space: its Gold at the card's value; Scheming: priority over
    Guy's bid, worth ``scheming_worth``."""
    f, b, g = counts
    value, sorted_keys, above, cost = model.value, model.sorted_keys, model.above, model.cost
    vehicle, guy = model.vehicle, model.guy_tokens
    share, value_of_card, guy_risk = model.share, model.card_value, model.guy_risk
    scheming_worth, rival_scheming, seat = model.scheming_worth, model.rival_scheming, model.seat
    strength, guy_legal, puppet, refunds = t.strength, t.guy_legal, t.puppet, t.refunds
    card, card_max_gold, scheming = t.card, t.card_max_gold, t.scheming
    worth_now = pos.worth
    q = f * strength[0] + b * strength[1] + g * strength[2]
    win = count_below(sorted_keys[c], q) * share  # the opposing bids strictly weaker ...
    lost = above[c, count_below(sorted_keys[c], q + 1)]  # ... and the losses to those stronger
    worth = value[c]
    placed = f > 0 or b > 0 or g > 0
    two_players = puppet >= 0
    if two_players and guy_risk:
        exposed = f <= guy[0] and b <= guy[1] and g <= guy[2] and placed
        worth = worth * (1 - guy_risk * exposed)
    out = worth * win + lost
    if refunds:
        out -= win * (f * cost[0] + b * cost[1] + g * cost[2])
    if two_players:
        beatable = guy_beat(f, b, g, guy, guy_legal[c]) >= 0 and placed
        out = out + vehicle[c] * beatable
    if c == card:
        out = value_of_card * min(g, card_max_gold) - g * cost[GOLD]
    if c == scheming:
        first = 1.0 if g > rival_scheming else (0.5 if g == rival_scheming else 0.0)
        out = scheming_worth * first - g * worth_now[seat, GOLD]
    return out


@jit
def values_per_sample(model, bids, pos, t, out):
    """What each whole bid of ``bids`` (n, T, 3) is worth against each sample of the rivals' bids, into ``out``
    (n, K): :func:`bid_worth` summed over the targets is this averaged over the samples. Play-time search scores
    its candidate bids with it (:mod:`.search`)."""
    model, bids, pos, out = borrowed(model), borrowed(bids), borrowed(pos), borrowed(out)  # the caller's
    value, top, lost, cost = model.value, model.top, model.lost, model.cost
    vehicle, guy, value_of_card = model.vehicle, model.guy_tokens, model.card_value
    guy_risk, seat = model.guy_risk, model.seat
    scheming_worth, rival_scheming = model.scheming_worth, model.rival_scheming
    strength, guy_legal, puppet, refunds = t.strength, t.guy_legal, t.puppet, t.refunds
    card, card_max_gold, scheming, T = t.card, t.card_max_gold, t.scheming, t.targets
    worth_now = pos.worth
    row = np.empty(T)
    for i in range(bids.shape[0]):
        fixed = 0.0  # the targets whose worth does not hang on the rivals' bids, added after the others
        if card >= 0:
            g = bids[i, card, GOLD]
            fixed = fixed + (value_of_card * min(g, card_max_gold) - g * cost[GOLD])
        if scheming >= 0:
            g = bids[i, scheming, GOLD]
            first = 1.0 if g > rival_scheming else (0.5 if g == rival_scheming else 0.0)
            fixed = fixed + (scheming_worth * first - g * worth_now[seat, GOLD])
        for m in range(top.shape[0]):
            for c in range(T):
                f, b, g = bids[i, c, 0], bids[i, c, 1], bids[i, c, 2]
                q = f * strength[0] + b * strength[1] + g * strength[2]
                win = 1.0 if q > top[m, c] else 0.0
                lose = 1.0 if top[m, c] > q else 0.0
                placed = f > 0 or b > 0 or g > 0
                prize = value[c]
                if puppet >= 0 and guy_risk:
                    exposed = f <= guy[0] and b <= guy[1] and g <= guy[2] and placed
                    prize = value[c] * (1 - guy_risk * exposed)
                x = prize * win + lost[m, c] * lose
                if refunds:
                    x = x - win * (f * cost[0] + b * cost[1] + g * cost[2])
                if puppet >= 0:
                    beatable = guy_beat(f, b, g, guy, guy_legal[c]) >= 0 and placed
                    x = x + vehicle[c] * beatable
                row[c] = 0.0 if c in (card, scheming) else x
            out[i, m] = pairwise_sum(row) + fixed


# --- planning a bid -----------------------------------------------------------------------------------------------


@jit(refcounts=False)
def plan_room(bid, counted, max_characters, out):
    """Into ``out``: the targets a token may still join. Any while fewer than ``max_characters`` characters carry
    tokens (``counted``: the targets that count as characters), else those that do and those not counted."""
    T = bid.shape[0]
    used = 0
    for c in range(T):
        used += (bid[c, 0] > 0 or bid[c, 1] > 0 or bid[c, 2] > 0) and counted[c]
    for c in range(T):
        carries = (bid[c, 0] > 0 or bid[c, 1] > 0 or bid[c, 2] > 0) and counted[c]
        out[c] = used < max_characters or carries or not counted[c]


@jit
def plan_bid(rng, model, tokens, effort, pos, t):
    """Place every token, strongest first, each time on the target (and in the number, at most ``max_group``)
    that adds most value per token, ties broken at random; then move single tokens while that helps (at most
    ``improve`` moves); ``effort``: (max_group, improve). At most six characters carry tokens (docs/rules.md §3)."""
    model, pos = borrowed(model), borrowed(pos)  # arguments: the caller's for the whole call
    max_group, improve = effort
    T, legal, scheming, max_characters = t.targets, t.legal, t.scheming, t.max_characters
    bid = np.zeros((T, 3), dtype=np.int64)
    current = np.empty(T)
    for c in range(T):
        current[c] = bid_worth(model, c, (bid[c, 0], bid[c, 1], bid[c, 2]), pos, t)
    counted = np.ones(T, dtype=np.bool_)
    if scheming >= 0:
        counted[scheming] = False  # the Scheming space is not one of the six
    room = np.empty(T, dtype=np.bool_)
    trial = np.empty(3, dtype=np.int64)
    for k in range(3):
        left = tokens[k]
        while left > 0:
            n_groups = min(left, max_group)
            noise = rng.random((n_groups, T)) * 1e-6  # ties broken at random
            plan_room(bid, counted, max_characters, room)
            best, bm, bc = NEG, 0, 0
            for m in range(n_groups):
                for c in range(T):
                    if legal[c, k] and room[c]:
                        trial[:] = bid[c]
                        trial[k] += m + 1
                        gain = bid_worth(model, c, (trial[0], trial[1], trial[2]), pos, t) - current[c]
                        v = gain / (m + 1) + noise[m, c]
                    else:
                        v = NEG
                    if v > best:
                        best, bm, bc = v, m, c
            bid[bc, k] += bm + 1
            left -= bm + 1
            current[bc] = bid_worth(model, bc, (bid[bc, 0], bid[bc, 1], bid[bc, 2]), pos, t)
    for _ in range(improve):
        if not _move_one_token(model, bid, counted, pos, t):
            break
    return bid


@jit(inline=True)  # one caller
def _move_one_token(model, bid, counted, pos, t):
    """Move the one token whose move adds most value, if any does; whether one moved."""
    T, legal, max_characters = t.targets, t.legal, t.max_characters
    current = np.empty(T)
    for c in range(T):
        current[c] = bid_worth(model, c, (bid[c, 0], bid[c, 1], bid[c, 2]), pos, t)
    best = 1e-6
    move_from, move_to, move_k = -1, -1, -1
    gain_add = np.empty(T)
    gain_take = np.empty(T)
    room = np.empty(T, dtype=np.bool_)
    trial = np.empty(3, dtype=np.int64)
    for k in range(3):
        held_any = False
        for c in range(T):
            held_any = held_any or bid[c, k] > 0
        if not held_any:
            continue
        for c in range(T):
            trial[:] = bid[c]
            trial[k] += 1
            gain_add[c] = bid_worth(model, c, (trial[0], trial[1], trial[2]), pos, t) - current[c]
            if bid[c, k] > 0:
                trial[k] -= 2
                gain_take[c] = bid_worth(model, c, (trial[0], trial[1], trial[2]), pos, t) - current[c]
            else:
                gain_take[c] = NEG
        for c1 in range(T):
            if bid[c1, k] <= 0:
                continue
            bid[c1, k] -= 1
            plan_room(bid, counted, max_characters, room)
            bid[c1, k] += 1
            g_best, c2, any_open = NEG, 0, False
            for c in range(T):
                if legal[c, k] and room[c] and c != c1:
                    gv = gain_add[c] + gain_take[c1]
                    any_open = True
                else:
                    gv = NEG + gain_take[c1]
                if gv > g_best:
                    g_best, c2 = gv, c
            if not any_open:
                continue
            if g_best > best:
                best, move_from, move_to, move_k = g_best, c1, c2, k
    if move_from < 0:
        return False
    bid[move_from, move_k] -= 1
    bid[move_to, move_k] += 1
    return True


# --- the bots' parameters -----------------------------------------------------------------------------------------


class Settings(NamedTuple):
    """A bot's parameters as its decisions read them (``HeuristicBot``'s and its style's attributes, by the same
    names; 0 where the style has none)."""

    style: int  # VALUE, BARGAIN or AREA
    samples: int  # how the rivals' bids are sampled (:func:`model_rivals`)
    inner_samples: int
    mirror_rivals: int
    habit: float
    sharpness: float
    spread: float
    clumping: float
    persistence: float
    mirror: float
    spend: float
    decline_below: float
    max_group: int  # plan_bid: at most this many tokens of a type at once ...
    improve: int  # ... then at most this many single moves
    inner_max_group: int  # the same, as a levelled rival plans its bid
    inner_improve: int
    guy_risk: float  # value, area
    priority: float  # value
    printer_bonus: float  # bargain
    sure: float  # bargain
    focus: int  # area


def settings(bot: Any) -> Settings:
    """A bot's settings (read at every call, so that a changed attribute counts at once)."""
    return Settings(
        style=STYLES[bot.style],
        samples=int(bot.samples),
        inner_samples=int(bot.inner_samples),
        mirror_rivals=int(bot.mirror_rivals),
        habit=float(bot.habit),
        sharpness=float(bot.sharpness),
        spread=float(bot.spread),
        clumping=float(bot.clumping),
        persistence=float(bot.persistence),
        mirror=float(bot.mirror),
        spend=float(bot.spend),
        decline_below=float(bot.decline_below),
        max_group=int(bot.max_group),
        improve=int(bot.improve),
        inner_max_group=5,  # a levelled rival's plan: no single moves after placing its tokens
        inner_improve=0,
        guy_risk=float(getattr(bot, "guy_risk", 0.0)),
        priority=float(getattr(bot, "priority", 0.0)),
        printer_bonus=float(getattr(bot, "printer_bonus", 0.0)),
        sure=float(getattr(bot, "sure", 0.0)),
        focus=int(getattr(bot, "focus", 0)),
    )


class Bot(NamedTuple):
    """A bot as its decisions read it: the variant it plays, where the observation's features start, its parameters
    and its weights. The entry points take it as plain tuples (:func:`named_bot`)."""

    tables: Tables
    starts: FeatureStarts
    settings: Settings
    judgement: Judgement


@jit(inline=True)  # inlined in the entry points, whose arguments these are
def named_bot(plain):
    """The :class:`Bot` of ``plain``: its fields as plain tuples (tables, starts, settings, judgement)."""
    tables, starts, settings, judgement = plain
    tables, judgement = borrowed(tables), borrowed(judgement)  # the caller's, for the whole call
    return Bot(Tables(*tables), FeatureStarts(*starts), Settings(*settings), Judgement(*judgement))


# --- value --------------------------------------------------------------------------------------------------------


@jit
def value_model(rng, view, pos, bot):
    """``value``'s model of the rivals' bids: every target worth the change in our margin if we win it, the
    rivals' bids sampled (a share ``mirror`` planned as ours); two players, Guy's terms (:func:`_against_guy`)."""
    view, pos = borrowed(view), borrowed(pos)  # arguments: the caller's for the whole call
    t, j = bot.tables, bot.judgement
    G = gains(pos, changes_if_won(pos, view, t, j), j)
    model = model_rivals(rng, view, pos, G, bot)
    if t.puppet >= 0:
        model = _against_guy(model, view, bot)
    return model


@jit(inline=True)  # one caller
def _against_guy(model, view, bot):
    """Two players: Guy may tie or beat our bids (``guy_risk``), and Scheming Gold buys priority over his tokens,
    worth ``priority`` times his strongest tokens."""
    tokens, scheming_gold, round_ = view.tokens, view.scheming_gold, view.round
    puppet, priority, guy_risk = bot.tables.puppet, bot.settings.priority, bot.settings.guy_risk
    guy = tokens[puppet]
    scheming_worth = priority * (4.0 * guy[FORCE] + 2.0 * guy[BLACKMAIL] + 1.0)
    rival_scheming = scheming_gold[1] if round_ > 1 else 0
    return with_guy_terms(model, guy_risk, scheming_worth, rival_scheming)


@jit(inline=True)  # one caller
def value_bid(rng, view, pos, bot):
    """``value``: every token where it adds most expected value against the rivals' sampled bids."""
    tokens, effort = view.tokens, (bot.settings.max_group, bot.settings.improve)
    model = value_model(rng, view, pos, bot)
    return plan_bid(rng, model, tokens[0], effort, pos, bot.tables)


# --- bargain ------------------------------------------------------------------------------------------------------


@jit(refcounts=False)
def _bargain_room(bid, c, t):
    """Whether target ``c`` may take tokens (at most six characters carry them)."""
    scheming, C, max_characters = t.scheming, t.n_characters, t.max_characters
    if c == scheming or bid[c, 0] > 0 or bid[c, 1] > 0 or bid[c, 2] > 0:
        return True
    used = 0
    for x in range(C):
        used += bid[x, 0] > 0 or bid[x, 1] > 0 or bid[x, 2] > 0
    return used < max_characters


@jit(inline=True)  # one caller
def _win_chances(model, held, t):
    """Every bid we could place on one character holding ``held`` (up to six Gold), and per character how often
    it would be strictly highest against the sampled opposing bids (0 where a token type is not allowed)."""
    sorted_keys, K = model.sorted_keys, model.samples
    C, strength, legal = t.n_characters, t.strength, t.legal
    nf, nb, ng = held[FORCE] + 1, held[BLACKMAIL] + 1, min(held[GOLD], 6) + 1
    N = nf * nb * ng
    bids = np.empty((N, 3), dtype=np.int64)
    n = 0
    for f in range(nf):
        for b in range(nb):
            for g in range(ng):
                bids[n, 0], bids[n, 1], bids[n, 2] = f, b, g
                n += 1
    win = np.zeros((C, N))
    for n in range(N):
        q = bids[n, 0] * strength[0] + bids[n, 1] * strength[1] + bids[n, 2] * strength[2]
        for c in range(C):
            allowed = True
            for k in range(3):
                allowed = allowed and (bids[n, k] == 0 or legal[c, k])
            if allowed:
                win[c, n] = count_below(sorted_keys[c], q) / K
    return bids, win


@jit(inline=True)  # one caller
def bargain_bid(rng, view, pos, bot):
    """``bargain``: the characters it is ``sure`` to win at the lowest price, best value per point first; one Gold
    on each neglected character; what is left on the Printer or its best bid."""
    tokens = view.tokens
    t, j, printer_bonus, sure_share = bot.tables, bot.judgement, bot.settings.printer_bonus, bot.settings.sure
    T, C, printer, card, scheming = t.targets, t.n_characters, t.printer, t.card, t.scheming
    legal, tp = t.legal, t.token_points
    G = gains(pos, changes_if_won(pos, view, t, j), j)
    model = model_rivals(rng, view, pos, G, bot)
    K, top, model_value, value_of_card = model.samples, model.top, model.value, model.card_value
    value = np.empty(T)
    for c in range(T):
        value[c] = max(model_value[c], 0.0)
    if printer >= 0:
        value[printer] = value[printer] * printer_bonus + 2.0
    if card >= 0:
        value[card] = value_of_card
    left = tokens[0].copy()
    bid = np.zeros((T, 3), dtype=np.int64)
    noise = rng.random(T) * 1e-6
    bids, win = _win_chances(model, left, t)
    N = bids.shape[0]
    cost = np.empty(N)
    for n in range(N):
        cost[n] = bids[n, 0] * tp[0] + bids[n, 1] * tp[1] + bids[n, 2] * tp[2]
    sure = np.zeros((C, N), dtype=np.bool_)
    for c in range(C):
        for n in range(N):
            placed = bids[n, 0] > 0 or bids[n, 1] > 0 or bids[n, 2] > 0
            sure[c, n] = win[c, n] >= sure_share and value[c] > 0 and placed and c != card
    ratio = np.empty(C)
    cheapest = np.zeros(C, dtype=np.int64)
    open_ = np.empty(C, dtype=np.bool_)
    while True:  # buy the best bargain that is still affordable
        for c in range(C):
            open_[c] = not (bid[c, 0] > 0 or bid[c, 1] > 0 or bid[c, 2] > 0) and _bargain_room(bid, c, t)
        any_ok = False
        for c in range(C):
            low, at, row_ok = np.inf, 0, False
            for n in range(N):
                affordable = bids[n, 0] <= left[0] and bids[n, 1] <= left[1] and bids[n, 2] <= left[2]
                if sure[c, n] and open_[c] and affordable:
                    row_ok = True
                    if cost[n] < low:
                        low, at = cost[n], n
            cheapest[c] = at
            any_ok = any_ok or row_ok
            if row_ok:
                ratio[c] = value[c] * win[c, at] / max(cost[at], 1.0) + noise[c]
            else:
                ratio[c] = NEG + noise[c]
        if not any_ok:
            break
        c = first_max(ratio)
        for k in range(3):
            bid[c, k] += bids[cheapest[c], k]
            left[k] -= bids[cheapest[c], k]
    neglected = np.empty(T)
    for c in range(T):
        nobody = 0.0
        for m in range(K):
            nobody += top[m, c] == 0
        neglected[c] = -(value[c] * (nobody / K)) - noise[c]
    for c in stable_order(neglected):  # one Gold on each neglected character
        if left[GOLD] == 0 or value[c] <= 0 or c >= C:
            break
        if legal[c, GOLD] and not (bid[c, 0] > 0 or bid[c, 1] > 0 or bid[c, 2] > 0) and _bargain_room(bid, c, t):
            bid[c, GOLD] += 1
            left[GOLD] -= 1
    score = np.empty(T)
    for k in range(3):  # what is left strengthens the bids already made, the Printer first
        if left[k] == 0:
            continue
        for c in range(T):
            carries = bid[c, 0] > 0 or bid[c, 1] > 0 or bid[c, 2] > 0
            score[c] = value[c] * (1 + carries) + noise[c]
        if printer >= 0:
            score[printer] += 100.0
        for c in range(T):
            if not (legal[c, k] and _bargain_room(bid, c, t)) or c == scheming:
                score[c] = NEG
        c = first_max(score)
        bid[c, k] += left[k]
        left[k] = 0
    return bid


# --- area ---------------------------------------------------------------------------------------------------------


@jit(inline=True)  # one caller
def area_bid(rng, view, pos, bot):
    """``area``: each character valued mostly by its cube (our area points against the rival who would gain most
    from it, more the fuller the area), the Spy and the Apothecary by their best move, more as the board fills;
    the bid planned on the ``focus`` most valuable targets alone."""
    me, tokens, free, add = view.me, view.tokens, view.free, pos.add
    t, j, s = bot.tables, bot.judgement, bot.settings
    S, T, C, A = t.seats, t.targets, t.n_characters, t.areas
    spy, apothecary, puppet = t.spy, t.apothecary, t.puppet
    legal, char_area, spaces = t.legal, t.char_area, t.spaces
    focus, effort, guy_risk = s.focus, (s.max_group, s.improve), s.guy_risk
    D = changes_if_won(pos, view, t, j)
    G = gains(pos, D, j)
    area_part = np.zeros(T)
    fill = np.empty(A)
    for a in range(A):
        fill[a] = 1.0 - free[a] / spaces[a]
    buf = np.empty(S)
    for c in range(C):
        a = char_area[c]
        if a >= 0 and free[a] > 0:
            mine = gain(pos, add[a, 0], me, j, buf)
            least = np.inf  # the rival who would gain most from the cube
            for r in range(1, S):
                least = min(least, gain(pos, add[a, r], me, j, buf))
            area_part[c] = (mine - least) * (1.0 + fill[a])
    late = 0.5 + float(pairwise_sum(fill) / A)
    for c in (spy, apothecary):
        if c >= 0:
            area_part[c] = max(G[c, 0, 0], 0.0) * late
    value = np.empty(T)
    for c in range(T):
        value[c] = 0.5 * max(G[c, 0, 0], 0.0) + area_part[c]
    G2 = G.copy()
    for c in range(T):
        G2[c, 0, 0] = value[c]
    model = model_rivals(rng, view, pos, G2, bot)
    order = stable_order(-value)
    blocked = np.ones(T, dtype=np.bool_)
    for i in range(min(focus, T)):
        blocked[order[i]] = False
    model_value = model.value
    for c in range(T):
        if not legal[c, FORCE] and not legal[c, BLACKMAIL]:
            blocked[c] = False  # Gold-only spaces stay open
        if blocked[c]:
            model_value[c] = 0.0
    if puppet >= 0:
        model = with_guy_terms(model, guy_risk, model.scheming_worth, model.rival_scheming)
    return plan_bid(rng, model, tokens[0], effort, pos, t)


# --- the cubes: the Spy, the Apothecary, a Remove card ------------------------------------------------------------


@jit(inline=True)  # one caller
def cube_choice(rng, view, pos, mask, bot):
    """Spy, Apothecary (both picks) and Remove: the legal choice that raises our margin most (the Apothecary's
    first pick at its best swap), ties broken at random; decline where allowed when no choice gains more than
    ``decline_below``."""
    kind, me, for_puppet = view.decision, view.me, view.for_puppet
    a1, s1 = view.apothecary_first  # the Apothecary's first cube (second pick)
    move, movable = pos.move, pos.movable
    t, j, decline_below = bot.tables, bot.judgement, bot.settings.decline_below
    S, A, puppet = t.seats, t.areas, t.puppet
    gain_of = np.empty((A, S))
    gain_of[:] = NEG
    buf = np.empty(S)
    change = np.empty(S + 1)
    if kind == K_APO1:  # the first cube, at its best swap
        for a in range(A):
            for v in range(S):
                if not mask[1 + a * S + v]:
                    continue
                for s2 in range(S):
                    for a2 in range(A):
                        if may_swap(movable, a, v, s2, a2):
                            swap_change(move, a, v, s2, a2, change)
                            gain_of[a, v] = max(gain_of[a, v], gain(pos, change, me, j, buf))
    else:
        for a in range(A):
            for v in range(S):
                if not mask[1 + a * S + v]:
                    continue
                if kind == K_SPY:
                    owner = puppet if for_puppet else me
                    gain_of[a, v] = gain(pos, move[a, v, owner], me, j, buf)
                elif kind == K_REMOVE:
                    removal_change(pos, view, (a, v), t, j, change)
                    gain_of[a, v] = gain(pos, change, me, j, buf)
                else:  # the Apothecary's second cube: the first pick's owner s1 swaps with v
                    for x in range(S + 1):
                        change[x] = move[a1, s1, v, x] + move[a, v, s1, x]
                    gain_of[a, v] = gain(pos, change, me, j, buf)
    noise = rng.random((A, S)) * 1e-9
    best, ba, bv = NEG, 0, 0
    for a in range(A):
        for v in range(S):
            g = gain_of[a, v] + noise[a, v]
            if g > best:
                best, ba, bv = g, a, v
    if mask[0] and best <= decline_below:
        return 0
    return 1 + ba * S + bv


# --- Guy's bids (two players) -------------------------------------------------------------------------------------


@jit(inline=True)  # one caller
def _guy_options(view, guy, G, t):
    """Every Guy placement ``4 c + 2 p + mode`` (character ``c``, answering player ``p``'s bid, a tie (mode 0) or a
    beat (mode 1)): its tokens (D11) and every seat's change in margin once that character is resolved with it,
    against the outcome without it."""
    bids = view.bids
    S, C, puppet, strength, guy_legal = t.seats, t.n_characters, t.puppet, t.strength, t.guy_legal
    n_opt = 4 * C
    tokens = np.zeros((n_opt, 3), dtype=np.int64)
    value = np.zeros((n_opt, S))
    keys = np.empty((S, C), dtype=np.int64)
    for s in range(S):
        for c in range(C):
            keys[s, c] = bids[s, c, 0] * strength[0] + bids[s, c, 1] * strength[1] + bids[s, c, 2] * strength[2]
    for c in range(C):
        most = keys[0, c]  # the winner without Guy's bid
        who = 0
        for s in range(1, S):
            if keys[s, c] > most:
                most, who = keys[s, c], s
        count = 0
        for s in range(S):
            count += keys[s, c] == most
        sole = count == 1 and most > 0
        for p in range(2):
            for mode in range(2):
                i = 4 * c + 2 * p + mode
                for k in range(3):
                    tokens[i, k] = bids[p, c, k]
                if mode == 1:
                    beat = guy_beat(bids[p, c, 0], bids[p, c, 1], bids[p, c, 2], guy, guy_legal[c])
                    if beat >= 0:
                        tokens[i, beat] += 1
                gk = tokens[i, 0] * strength[0] + tokens[i, 1] * strength[1] + tokens[i, 2] * strength[2]
                k0, k1 = keys[0, c], keys[1, c]
                top = max(max(k0, k1), gk)
                n_top = int(k0 == top) + int(k1 == top) + int(gk == top)  # ints: NumPy adds bools as "or"
                winner = puppet if gk == top else (1 if k1 == top else 0)
                if not (n_top == 1 and top > 0):
                    winner = -1
                for s in range(S):
                    outcome = G[c, winner, s] if winner >= 0 else 0.0
                    before = G[c, who, s] if sole else 0.0
                    value[i, s] = outcome - before
    return tokens, value


@jit(inline=True)  # one caller
def _guy_open(bids, t):
    """(C, 2), D10: the players' bids that Guy may answer (Guy has not bid there; not the Card space)."""
    C, puppet, card = t.n_characters, t.puppet, t.card
    open_ = np.zeros((C, 2), dtype=np.bool_)
    for c in range(C):
        guy_there = bids[puppet, c, 0] > 0 or bids[puppet, c, 1] > 0 or bids[puppet, c, 2] > 0
        for p in range(2):
            has = bids[p, c, 0] > 0 or bids[p, c, 1] > 0 or bids[p, c, 2] > 0
            open_[c, p] = has and not guy_there and c != card
    return open_


@jit(inline=True)  # one caller
def guy_bid(rng, view, pos, mask, bot):
    """Place one bid for Guy: the option with the best change in our margin once the opponent has answered with
    its own best placement (two plies; its options are ours seen from its seat); pass where allowed if nothing
    beats passing."""
    bids, guy_bids = view.bids, view.guy_bids
    t, j = bot.tables, bot.judgement
    guy = view.tokens[t.puppet]
    C, guy_legal = t.n_characters, t.guy_legal
    G = gains(pos, changes_if_won(pos, view, t, j), j)
    tokens, value = _guy_options(view, guy, G, t)
    n_opt = 4 * C
    open_ = _guy_open(bids, t)
    can_pass = guy_bids + 1 >= 2  # D12: from the third Guy bid on, the opponent may pass
    score = np.empty(n_opt)
    left = np.empty(3, dtype=np.int64)
    for i in range(n_opt):
        c = i // 4
        for k in range(3):
            left[k] = guy[k] - tokens[i, k]  # Guy's tokens after our option
        # the opponent's replies: its options are ours seen from its seat (answered 0 = its own bid)
        best_j, best_v, fits_any = 0, NEG, False
        for opt in range(n_opt):
            cj, rj = opt // 4, (opt % 4) // 2
            mj = opt % 2
            if cj == c or not open_[cj, 1 - rj]:
                continue
            p_bid = 1 - rj  # the bid it answers
            if mj == 0:  # a tie: Guy can pay it
                ok = bids[p_bid, cj, 0] <= left[0] and bids[p_bid, cj, 1] <= left[1] and bids[p_bid, cj, 2] <= left[2]
            else:
                ok = guy_beat(bids[p_bid, cj, 0], bids[p_bid, cj, 1], bids[p_bid, cj, 2], left, guy_legal[cj]) >= 0
            if not ok:
                continue
            fits_any = True
            jr = 4 * cj + 2 * (1 - rj) + mj  # that option as ours
            v = value[jr, 1]
            if v > best_v:
                best_v, best_j = v, opt
        answered = fits_any and not (can_pass and best_v <= 0)
        answered = answered and guy_bids + 1 < MAX_GUY_BIDS
        jr = 4 * (best_j // 4) + 2 * (1 - (best_j % 4) // 2) + best_j % 2
        mine = value[i, 0]
        total = mine + (value[jr, 0] if answered else 0.0)
        score[i] = total if mask[1 + i] else NEG
    noise = rng.random(n_opt) * 1e-9
    best, at = NEG, 0
    for i in range(n_opt):
        s = score[i] + noise[i]
        if s > best:
            best, at = s, i
    if mask[0] and best <= 0.0:
        return 0
    return 1 + at


# --- the rows -----------------------------------------------------------------------------------------------------


@jit
def _decide_row(rng, view, pos, mask, action, bot):
    """One row's decision into ``action`` (zeroed), the row waiting for one. A function of its own, not inlined,
    so that the row's own arrays (``view``, ``pos``), which its caller holds for the whole call, are borrowed here
    by everything the decision calls (``common.jit.borrowed``: no reference counted per call)."""
    view, pos = borrowed(view), borrowed(pos)
    kind, style, block, T = view.decision, bot.settings.style, bot.tables.block, bot.tables.targets
    if kind == K_BID:
        if style == VALUE:
            bid = value_bid(rng, view, pos, bot)
        elif style == BARGAIN:
            bid = bargain_bid(rng, view, pos, bot)
        else:
            bid = area_bid(rng, view, pos, bot)
        for k in range(3):  # Codec.action_from_bid: each type's tokens in target order
            d = block[k]
            for c in range(T):
                for _ in range(bid[c, k]):
                    action[d] = c
                    d += 1
    elif kind == K_GUY:
        action[0] = guy_bid(rng, view, pos, mask, bot)
    else:
        action[0] = cube_choice(rng, view, pos, mask, bot)


@jit
def decide_rows(rng, observations, masks, plain, actions):
    """The bot's decision for each row of ``observations`` with ``masks``, in order, into ``actions``, drawing from
    ``rng``. Returns how many rows broke the mask and played the legal default instead (never expected).
    ``plain``: the :class:`Bot` as plain tuples (:func:`named_bot`)."""
    observations, masks, actions = borrowed(observations), borrowed(masks), borrowed(actions)  # the caller's, for
    bot = named_bot(plain)  # the whole call: no reference counted for them
    t, at, j = bot.tables, bot.starts, bot.judgement
    D, offsets = t.dims, t.offsets
    fallbacks = 0
    for row in range(observations.shape[0]):
        obs, mask, action = observations[row], masks[row], actions[row]
        for d in range(D):
            action[d] = 0
        view = read_view(obs, t, at)
        kind = view.decision
        if kind == K_NONE:
            continue
        _decide_row(rng, view, appraise(view, t, j), mask, action, bot)
        legal = True
        for d in range(D):
            legal = legal and mask[offsets[d] + action[d]] != 0
        if legal:
            continue
        fallbacks += 1
        for d in range(D):  # the legal default: the first allowed value of every dimension
            size = (offsets[d + 1] if d + 1 < D else mask.shape[0]) - offsets[d]
            action[d] = 0
            for v in range(size):
                if mask[offsets[d] + v] != 0:
                    action[d] = v
                    break
    return fallbacks


@jit
def value_per_sample(rng, observation, bids, plain, out):
    """What each bid of ``bids`` (n, T, 3) is worth against each of ``value``'s samples of the rivals' bids in
    ``observation`` (drawn from ``rng``), into ``out`` (n, K); and, returned, what :func:`bid_worth`
    expects of each, summed over the targets (the same averaged over the samples). ``plain``: the :class:`Bot` as
    plain tuples."""
    bot = named_bot(plain)
    t, at, j = bot.tables, bot.starts, bot.judgement
    view = read_view(observation, t, at)
    pos = appraise(view, t, j)
    model = value_model(rng, view, pos, bot)
    values_per_sample(model, bids, pos, t, out)
    expected = np.zeros(bids.shape[0])
    row = np.empty(t.targets)
    for i in range(bids.shape[0]):
        for c in range(t.targets):
            row[c] = bid_worth(model, c, (bids[i, c, 0], bids[i, c, 1], bids[i, c, 2]), pos, t)
        expected[i] = pairwise_sum(row)
    return expected


@jit
def margins_now(observations, tables, starts, judgement, out):
    """The observer's margin (:attr:`Position.U0` of seat 0) in each row of ``observations``, into ``out``: what
    the judgement ``judgement`` makes of each position, with no decision taken."""
    t, at, j = Tables(*tables), FeatureStarts(*starts), Judgement(*judgement)
    for row in range(observations.shape[0]):
        out[row] = appraise(read_view(observations[row], t, at), t, j).U0[0]
