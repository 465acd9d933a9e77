"""The heuristic bots compiled: the same decisions as :mod:`.heuristics`, as loops that Numba compiles.

:mod:`.heuristics` and :mod:`.appraisal` are the reference, written with NumPy over small arrays; a decision makes
thousands of NumPy calls on arrays of a few elements, where each call costs more than its arithmetic. This module
is the same computation as loops for Numba (:mod:`revolution_env.common.jit`), drawing the same random numbers from
the bot's own ``numpy.random.Generator`` (Numba reads and advances its state), so that for the same observation and
the same generator state both give the same action and leave the generator in the same state.
``tests/test_compiled_bots.py`` holds them to it over thousands of decisions of every variant. Where Numba is
missing the bots play the reference (``HeuristicBot.act``); the functions here still run as plain Python.

Each function mirrors one piece of the reference, in the reference's order, under the reference's name where it
can be; the named tuples that carry the numbers and arrays between them keep the reference's names too
(``t.spy``, ``view.free``, ``pos.movable``, ``model.guy_risk``):

- :class:`Tables`, :class:`FeatureStarts`, :class:`Judgement`, :class:`Bot` (built by :func:`tables` and
  :func:`params`): ``appraisal.Tables`` with the action codec's layout, where the observation's features start,
  ``appraisal.Judgement``, and the bot's own attributes;
- :func:`_view` -> :class:`View`: ``ObservationLayout.decode`` -> ``ObservationView``;
- :func:`_position` -> :class:`Position`: ``appraisal.Position``, with its methods ``_rounds_left``, ``_points``,
  ``margins`` (:func:`_margins`), ``gain``, ``gains``, ``removal``, ``character_deltas``, ``_best_spies``,
  ``_best_swaps`` and ``card_value`` under the same names (:func:`_special_deltas`: the Spy's and the
  Apothecary's rows of ``character_deltas``), ``spy_options`` and ``swap_options`` one element at a time
  (:func:`_spy_may_replace`, :func:`_may_swap`, :func:`_swap_change`), and ``appraisal.token_worth``;
- :func:`_bid_model` -> :class:`BidModel`: ``heuristics.BidModel`` (:func:`_interest_model`: with
  ``mirror=0.0``), its loop over the rivals in :func:`_rival_bids` and the rest in
  :func:`_model_from_rival_bids`; ``_sample`` and ``_clumping`` under the same names; ``values`` one target at a
  time (:func:`_bid_worth`); :func:`_with_guy_terms` sets the two-player terms that the styles set afterwards;
- ``heuristics.plan_bid``, ``_room``, ``_improve_once``: under the same names;
- ``ValueBot.bid`` (with ``_two_player``), ``BargainBot.bid`` (``_prices``, ``_room``), ``AreaBot.bid``:
  :func:`_value_bot_bid` (:func:`_two_player`), :func:`_bargain_bot_bid` (:func:`_prices`,
  :func:`_bargain_room`), :func:`_area_bot_bid`;
- ``HeuristicBot.cube`` and ``HeuristicBot.guy`` (``_guy_options``, ``_guy_open``): under the same names;
  ``HeuristicBot.act_reference``, row after row: :func:`_decide_many` (called by :func:`decide`).

Where the reference works on whole arrays at once (every sample, every swap), the loops here visit the same
elements in the same order and keep what NumPy would pick. What makes it exact rather than close:

- the random draws: Numba's ``Generator.random``, ``binomial`` and ``standard_gamma`` are NumPy's algorithms;
  ``multinomial`` (sequential binomials), ``dirichlet`` (gamma variates, or stick-breaking with beta variates
  when every alpha is below 0.1) and ``beta`` (Johnk's algorithm with NumPy's log-space branch for underflow;
  Numba 0.61's own ``beta`` returns 0 there) are written here as NumPy's C code has them;
- the sums: :func:`_sum` adds in NumPy's pairwise order (eight accumulators from eight elements on), and the
  token dot products are ``a0 b0 + a1 b1 + a2 b2`` on both sides (``appraisal.dot3``; NumPy's float ``@`` would
  go through BLAS, whose rounding depends on the CPU);
- ties: every ``argmax`` takes the first maximum and every sort is stable, as in the reference.

What can still differ is the last bit of a transcendental function (NumPy may use its own SIMD ``log`` and
``pow``, Numba the C library's): a decision changes only where two options are that close to a tie, which the
tests have not met.

Three things about Numba shape how the values travel. It compiles a function again for each new type of its
arguments, and a literal number passed as an argument is a type of its own: so the observer's seat travels as the
field ``View.me`` and the level-one planner's settings as fields of :class:`Bot`, not as the literals ``0`` and
``5``. And it reads the types of a call's arguments from Python quickly for plain tuples, slowly for named ones:
so :func:`decide` passes the bot's named tuples as plain ones and :func:`_decide_many` names them again. And a
compiled function counts a reference to every array of a tuple it is given, and gives it back once the tuple is
last used: where that is in the function's first lines, Numba cancels the pairs of the arrays it does not use;
where it is further down, every call pays for all of them (``_bid_worth``, called thousands of times a bid, took
several times longer so). So every function reads the fields it needs into locals at its top, and uses the tuple
no more except to hand it on.

**Compiling without waiting.** Compiling this module takes about 50 s of one core, once per machine: Numba keeps
the machine code in its cache. Since both versions decide alike, nobody waits for it: the first decision of a
process that finds the cache empty starts one background process that compiles and fills it
(``python -m revolution_env.agents.build_bots``, a lock file in the cache folder keeps sibling processes from
starting their own), and the bots play the NumPy reference until it is done (:func:`ready`). A caller that is
about to make thousands of decisions (training's imitation: a minute of them on the reference costs several of
compiling) waits for it instead, with progress (:func:`wait_until_ready`); :func:`build` compiles in the calling
process.
"""

from __future__ import annotations

import itertools
import math
import os
import subprocess
import sys
import time
import warnings
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

from revolution_env.agents.appraisal import BONUS, MIN_ROUNDS, VEHICLE, area_points  # noqa: F401  (BONUS: in area_points, precomputed below)
from revolution_env.common.jit import COMPILED, borrowed, jit, read_only
from revolution_env.engine.game import MAX_GUY_BIDS
from revolution_env.engine.kernels import BLACKMAIL, FORCE, GOLD, K_APO1, K_BID, K_GUY, K_NONE, K_REMOVE, K_SPY  # ints

NEG = -np.inf
VALUE, BARGAIN, AREA = 0, 1, 2  # Bot.style
STYLES = {"value": VALUE, "bargain": BARGAIN, "area": AREA}


# --- what the functions read: named tuples of numbers and arrays --------------------------------------------------


class FeatureStarts(NamedTuple):
    """Where each feature the bots read starts in the observation vector (``ObservationLayout``; -1 where the
    variant has no such feature)."""

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


class Tables(NamedTuple):
    """The static data of one variant: ``appraisal.Tables`` (the same names) and the action codec's layout."""

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
    printer: int
    bonus: bool  # the Area Control Bonus
    refunds: bool  # Bid Refunds
    max_characters: int  # at most this many characters carry tokens in one bid
    card_max_gold: int
    legal: np.ndarray  # (T, 3) bool: the token types each target takes
    bid_targets: np.ndarray  # (3, T) float: where each type may go to contest a character
    bid_count: np.ndarray  # (3,) float
    support: np.ndarray  # (T,) float: each character's support
    char_tokens: np.ndarray  # (T, 3): each character's tokens
    char_area: np.ndarray  # (T,): each character's area, or -1
    spaces: np.ndarray  # (A,)
    token_points: np.ndarray  # (3,) float
    strength: np.ndarray  # (3,): a bid as one comparable integer (docs/rules.md §3)
    guy_legal: np.ndarray  # (T, 3) bool: the types a Guy bid may hold
    others: np.ndarray  # (S, S - 1): each seat's rivals
    area_points: np.ndarray  # (A, radix ** S, S): ``area_points`` of every cube count, the counts in base radix
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


class Judgement(NamedTuple):
    """``appraisal.Judgement``: the weights of the appraisal (the same fields)."""

    rival_weight: float
    prior_income: float
    prior_rounds: float
    fill_rate: float
    unsettled: float
    power: tuple[float, float, float]
    refund_power: float
    hoard: float
    special_scale: float
    lock: float
    trailing: float


class Bot(NamedTuple):
    """One bot: its style and its attributes by the same names (``HeuristicBot``'s and the style's own; 0 where
    the style has none). Its judgement travels beside it (:class:`Judgement`)."""

    style: int  # VALUE, BARGAIN or AREA
    samples: int  # how the rivals' bids are sampled (BidModel)
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
    guy_risk: float  # value
    priority: float  # value
    printer_bonus: float  # bargain
    sure: float  # bargain
    focus: int  # area
    max_group: int  # plan_bid's arguments, as the style calls it
    improve: int
    inner_max_group: int  # plan_bid's defaults, as a rival's level-one plan calls it
    inner_improve: int


class View(NamedTuple):
    """What the bots read of an observation (``ObservationView``, the same names). Seats are relative: 0 is us."""

    round: int
    rounds_left: int
    decision: int  # a Decision
    for_puppet: bool
    apothecary_first: tuple[int, int]  # (area, seat) of the Apothecary's first cube, or (-1, -1)
    guy_bids: int
    me: int  # our seat: 0
    tokens: np.ndarray  # (S, 3)
    support: np.ndarray  # (S,)
    supply: np.ndarray  # (S,)
    bank: np.ndarray  # (3,)
    cubes: np.ndarray  # (A, S)
    free: np.ndarray  # (A,)
    bids: np.ndarray  # (S, T, 3)
    scheming_gold: np.ndarray  # (S,)
    deck_left: np.ndarray  # (max(n_cards, 1),)


class Position(NamedTuple):
    """``appraisal.Position``: one observation appraised (the same names). A change is an (S + 1,) array: each
    seat's change in projected points, then the change in the rounds left."""

    X: np.ndarray  # (S,) projected points
    lead: np.ndarray  # (S,) each seat's margin now (a seat behind: times ``trailing``)
    U0: np.ndarray  # (S,) each seat's margin
    income: np.ndarray  # (S,) support per round
    area: np.ndarray  # (A, S) expected area points
    movable: np.ndarray  # (A, S) the cubes the Spy and the Apothecary may touch
    add: np.ndarray  # (A, S, S + 1) the change when seat w adds a cube in area a
    worth: np.ndarray  # (S, 3) what a token won now is worth to each seat
    move: np.ndarray  # (A, S, S, S + 1) the change when a cube of v in a becomes w's
    rounds: float  # rounds left
    settled: float  # the weight of area points now


class BidModel(NamedTuple):
    """``heuristics.BidModel``: the rivals' sampled bids, and what a bid of ours on each target is worth against
    them (the same names; the sorted bids are per target here, not in one flat array)."""

    value: np.ndarray  # (T,) the value of each target to ``seat``
    sorted_keys: np.ndarray  # (T, K) each target's strongest opposing bid in each sample, sorted
    above: np.ndarray  # (T, K + 1) the losses to the opposing bids of each rank and above, summed, over K
    top: np.ndarray  # (K, T) the strongest opposing bid of each sample
    cost: np.ndarray  # (3,) what winning costs per token (Bid Refunds)
    vehicle: np.ndarray  # (T,) two players: what handing Guy a character is worth (else zeros)
    guy_tokens: np.ndarray  # (3,) two players: Guy's tokens (else zeros)
    card_value: float
    share: float  # 1 / K
    samples: int  # K
    seat: int
    guy_risk: float  # two players: set by the style after the model is built
    scheming_worth: float
    rival_scheming: int


# --- NumPy's arithmetic and random draws, as NumPy has them ----------------------------------------------------

# Compiled code takes and drops a reference (two atomic operations) each time it passes an array on or calls a
# method of the Generator; in a profile of `value`'s bids, those were 45% of the samples, and the draws (some 7,500
# a bid) a quarter of them. The hot loops take the Generator's bit generator once (``_bits``: no reference counted)
# and draw from it with the functions that Numba's own methods call, so the numbers are the same, in the same order.
# As plain Python (no Numba), the Generator itself and its methods.
if COMPILED:
    from numba.np.random.distributions import random_binomial, random_standard_gamma
    from numba.np.random.generator_core import next_double

    @jit
    def _bits(rng):
        """``rng``'s bit generator, for :func:`_uniform`, :func:`_binomial` and :func:`_gamma`."""
        return rng.bit_generator

    @jit
    def _uniform(bits):
        """``rng.random()``."""
        return np.float64(next_double(bits))

    @jit
    def _binomial(bits, n, p):
        """``rng.binomial(n, p)``."""
        return np.int64(random_binomial(bits, n, p))

    @jit
    def _gamma(bits, shape):
        """``rng.standard_gamma(shape)``."""
        return np.float64(random_standard_gamma(bits, shape))

else:

    def _bits(rng):
        return rng

    def _uniform(bits):
        return bits.random()

    def _binomial(bits, n, p):
        return bits.binomial(n, p)

    def _gamma(bits, shape):
        return bits.standard_gamma(shape)


@jit(refcounts=False)
def _sum(a):
    """``np.add.reduce`` of a contiguous 1-D float64 array: NumPy's pairwise summation."""
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
    return _sum(a[:half]) + _sum(a[half:])


@jit(inline=True)  # one caller
def _beta(bits, a, b):
    """NumPy's ``random_beta`` (Johnk's algorithm for a, b <= 1, with its log-space branch when a power
    underflows; else two gamma variates), drawn from ``bits`` (:func:`_bits`)."""
    if a <= 1.0 and b <= 1.0:
        while True:
            U = _uniform(bits)
            V = _uniform(bits)
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
    ga = _gamma(bits, a)
    gb = _gamma(bits, b)
    return ga / (ga + gb)


@jit
def _multinomial(rng, n, p, out):
    """NumPy's ``random_multinomial`` into ``out`` (zeroed here): a binomial per category on what is left."""
    d = p.shape[0]
    for j in range(d):
        out[j] = 0
    remaining = 1.0
    dn = n
    bits = _bits(rng)
    for j in range(d - 1):
        out[j] = _binomial(bits, dn, p[j] / remaining)
        dn -= out[j]
        if dn <= 0:
            break
        remaining -= p[j]
    if dn > 0:
        out[d - 1] = dn


if not COMPILED:

    def _multinomial(rng, n, p, out):
        """As plain Python: NumPy's ``multinomial``, the algorithm above (whose binomials Python's
        ``Generator.binomial`` would refuse where rounding leaves ``p[j] / remaining`` a hair above 1)."""
        out[:] = rng.multinomial(n, p)


@jit(inline=True)  # one caller
def _dirichlet(rng, alpha, out):
    """NumPy's ``Generator.dirichlet`` for one sample into ``out``."""
    k = alpha.shape[0]
    bits = _bits(rng)
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
            v = _beta(bits, alpha[j], csum[j + 1])
            out[j] = acc * v
            acc *= 1.0 - v
            if csum[j + 1] == 0:
                break
        out[k - 1] = acc
    else:
        acc = 0.0
        for j in range(k):
            out[j] = _gamma(bits, alpha[j])
            acc = acc + out[j]
        inv = 1.0 / acc
        for j in range(k):
            out[j] = out[j] * inv


@jit
def _stable_order(keys):
    """``np.argsort(keys, kind="stable")`` by insertion (the arrays here are short)."""
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


@jit(inline=True)  # one caller
def _any(a2):
    """``a2.any()`` of a 2-D array."""
    for i in range(a2.shape[0]):
        for k in range(a2.shape[1]):
            if a2[i, k] != 0:
                return True
    return False


@jit(refcounts=False)
def _argmax(a):
    """The first maximum (``np.argmax``)."""
    best = 0
    for i in range(1, a.shape[0]):
        if a[i] > a[best]:
            best = i
    return best


@jit(refcounts=False)
def _count_below(sorted_row, q):
    """How many of ``sorted_row`` are below ``q``: ``np.searchsorted(sorted_row, q, "left")``. The keys are
    integers, so those at most ``q`` (``"right"``) are those below ``q + 1``."""
    lo, hi = 0, sorted_row.shape[0]
    while lo < hi:
        mid = (lo + hi) // 2
        if sorted_row[mid] < q:
            lo = mid + 1
        else:
            hi = mid
    return lo


@jit(refcounts=False)
def _guy_beat(f, b, g, guy, legal_row):
    """D11 (revised) for one bid: the token type Guy adds to beat ``(f, b, g)`` holding ``guy``, or -1 if he
    cannot (``engine.game.guy_beats``)."""
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


# --- the observation -----------------------------------------------------------------------------------------


@jit(refcounts=False)
def _int(x):
    """A feature of the observation (a float32) as the integer it holds."""
    return np.int64(np.rint(x))


@jit(inline=True)  # one caller
def _view(obs, t, at):
    """``ObservationLayout.decode``: what the bots read of the observation."""
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


# --- the appraisal (appraisal.Position) --------------------------------------------------------------------------


@jit
def _rounds_left(free, fill_rate, rounds_left):
    """``Position._rounds_left``: the rounds the game may still last with ``free`` spaces."""
    p = np.empty(free.shape[0])
    for a in range(free.shape[0]):
        x = float(free[a])
        p[a] = x**4
    rounds = _sum(p) ** 0.25 / fill_rate
    return min(rounds, float(max(rounds_left, 0)))


@jit(refcounts=False)
def _points(a, counts, settled, t, out):
    """``Position._points``: ``settled * area_points(...)`` of area ``a`` holding ``counts`` (S,), into ``out``."""
    radix, table = t.radix, t.area_points
    idx = 0
    mul = 1
    for s in range(counts.shape[0]):
        idx += counts[s] * mul
        mul *= radix
    for s in range(counts.shape[0]):
        out[s] = settled * table[a, idx, s]


@jit(refcounts=False)
def _margins(X, change, lead, rounds, j, others, out):
    """``Position.margins(change)`` into ``out`` (S,): every seat's margin over its rivals, its time included."""
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
def _gain(pos, change, seat, j, t, buf):
    """``Position.gain(change, seat)``: the change in ``seat``'s margin (``buf``: room for every seat's)."""
    pos, change, buf = borrowed(pos), borrowed(change), borrowed(buf)  # arguments: the caller's for the whole call
    X, lead, U0, rounds, others = pos.X, pos.lead, pos.U0, pos.rounds, t.others
    _margins(X, change, lead, rounds, j, others, buf)
    return buf[seat] - U0[seat]


@jit(inline=True)  # one caller
def _position(view, t, j):
    """``appraisal.Position(tables, view, judgement)``."""
    tokens, support, supply, cubes, free = view.tokens, view.support, view.supply, view.cubes, view.free
    played, rounds_left = max(view.round - 1, 0), view.rounds_left
    S, A, refunds, bonus, others = t.seats, t.areas, t.refunds, t.bonus, t.others
    spaces, token_points = t.spaces, t.token_points
    prior_income, prior_rounds, fill_rate = j.prior_income, j.prior_rounds, j.fill_rate
    unsettled, trailing = j.unsettled, j.trailing
    prior = prior_income * prior_rounds
    income = np.empty(S)
    for s in range(S):
        income[s] = (support[s] + prior) / (played + prior_rounds)
    rounds = _rounds_left(free, fill_rate, rounds_left)
    settled = 1.0 / (1.0 + unsettled * rounds)  # cubes move until the end: count them less early
    area = np.empty((A, S))
    for a in range(A):
        _points(a, cubes[a], settled, t, area[a])
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
    _margins(X, none, lead, rounds, j, others, plain)  # Position._margins(X): the time term of no change is 0
    for s in range(S):
        lead[s] = plain[s] if plain[s] > 0 else trailing * plain[s]
    U0 = np.empty(S)
    _margins(X, none, lead, rounds, j, others, U0)
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
            sooner = _rounds_left(fewer, fill_rate, rounds_left) - rounds
            fewer[a] += 1
            for w in range(S):
                if supply[w] > 0:
                    counts[:] = cubes[a]
                    counts[w] += 1
                    _points(a, counts, settled, t, pts)
                    for s in range(S):
                        add[a, w, s] = pts[s] - area[a, s]
                        add[a, w, s] += income[s] * sooner
                    add[a, w, S] = sooner
    worth = _token_worth(tokens, free, t, j)
    move = np.zeros((A, S, S, S + 1))
    for a in range(A):
        for v in range(S):
            if movable[a, v]:
                for w in range(S):
                    if w != v:
                        counts[:] = cubes[a]
                        counts[v] -= 1
                        counts[w] += 1
                        _points(a, counts, settled, t, pts)
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
def _token_worth(tokens, free, t, j):
    """``appraisal.token_worth``: (S, 3), a Force, Blackmail, Gold won now to each seat."""
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


@jit
def _removal(pos, view, a, v, t, j, out):
    """``Position.removal(a, v)`` into ``out`` (S + 1,): a cube of ``v`` in ``a`` returns to its owner."""
    free, cubes, rounds_left = view.free, view.cubes, view.rounds_left
    rounds, settled, area, income = pos.rounds, pos.settled, pos.area, pos.income
    S, fill_rate = t.seats, j.fill_rate
    more = free.copy()
    more[a] += 1
    later = _rounds_left(more, fill_rate, rounds_left) - rounds
    counts = cubes[a].copy()
    counts[v] -= 1
    pts = np.empty(S)
    _points(a, counts, settled, t, pts)
    for s in range(S):
        out[s] = pts[s] - area[a, s] + income[s] * later
    out[S] = later


@jit(inline=True)  # one caller
def _spy_may_replace(movable, supply, owner, a, v):
    """``Position.spy_options(owner)[0][a, v]``: whether ``owner``'s Spy may replace ``v``'s cube in ``a``."""
    return movable[a, v] and v != owner and supply[owner] > 0


@jit(refcounts=False)
def _may_swap(movable, a1, s1, s2, a2):
    """``Position.swap_options()[0][a1, s1, s2, a2]``: whether s1's cube in a1 may swap with s2's in a2."""
    return movable[a1, s1] and movable[a2, s2] and s1 != s2 and a1 != a2


@jit(refcounts=False)
def _swap_change(move, a1, s1, s2, a2, out):
    """``Position.swap_options()[1][a1, s1, s2, a2]``: s1's cube in a1 becomes s2's, s2's in a2 becomes s1's."""
    for x in range(out.shape[0]):
        out[x] = move[a1, s1, s2, x] + move[a2, s2, s1, x]


@jit
def _character_deltas(pos, view, t, j):
    """``Position.character_deltas()``: (T, S, S + 1), the change if seat ``w`` wins target ``c`` now."""
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
        _special_deltas(_best_spies(pos, view, t, j), puppet, scale, D[spy])
    if apothecary >= 0:
        _special_deltas(_best_swaps(pos, t, j), puppet, scale, D[apothecary])
    return D


@jit(refcounts=False)
def _special_deltas(best, puppet, scale, out):
    """The Spy's or the Apothecary's rows of ``character_deltas`` into ``out`` (S, S + 1): each player's best move,
    times ``special_scale``; the puppet's stay nothing (someone else decides its moves)."""
    for w in range(out.shape[0]):
        if w != puppet:
            for x in range(out.shape[1]):
                out[w, x] = best[w, x] * scale


@jit(inline=True)  # one caller
def _best_spies(pos, view, t, j):
    """``Position._best_spies``: (S, S + 1), each player's best Spy move by its own margin (nothing if none, and
    nothing for the puppet)."""
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
                if _spy_may_replace(movable, supply, w, a, v):
                    g = _gain(pos, move[a, v, w], w, j, t, buf)
                    if g > best:
                        best, ba, bv = g, a, v
        if ba >= 0:
            out[w] = move[ba, bv, w]
    return out


@jit(inline=True)  # one caller
def _best_swaps(pos, t, j):
    """``Position._best_swaps``: (S, S + 1), each player's best Apothecary swap by its own margin (nothing if none,
    and nothing for the puppet)."""
    move, movable = pos.move, pos.movable
    X, lead, U0, rounds, others = pos.X, pos.lead, pos.U0, pos.rounds, t.others  # _gain's arrays, read once here
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
                        if _may_swap(movable, a1, s1, s2, a2):
                            _swap_change(move, a1, s1, s2, a2, change)
                            _margins(X, change, lead, rounds, j, others, buf)  # _gain, without a reference
                            g = buf[w] - U0[w]  # taken and dropped for each of its arrays at each swap tried
                            if not found or g > best:
                                best = g
                                best_a1, best_s1, best_s2, best_a2 = a1, s1, s2, a2
                            found = True
        if found:
            _swap_change(move, best_a1, best_s1, best_s2, best_a2, out[w])
    return out


@jit
def _gains(pos, D, j, t):
    """``Position.gains(D)``: (T, S, S) over (target, winner, judge)."""
    pos, D = borrowed(pos), borrowed(D)  # arguments: the caller's for the whole call
    X, lead, U0, rounds, others = pos.X, pos.lead, pos.U0, pos.rounds, t.others
    T, S = D.shape[0], D.shape[1]
    G = np.empty((T, S, S))
    buf = np.empty(S)
    for c in range(T):
        for w in range(S):
            _margins(X, D[c, w], lead, rounds, j, others, buf)
            for judge in range(S):
                G[c, w, judge] = buf[judge] - U0[judge]
    return G


@jit
def _card_value(pos, view, seat, t, j):
    """``Position.card_value(seat)``: the expected gain of one card of the first edition's deck."""
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
    share = left / _sum(left)
    change = np.empty(S + 1)
    buf = np.empty(S)
    total = 0.0
    for i in range(n):
        if card_remove[i]:
            best = 0.0
            for a in range(A):
                for v in range(S):
                    if movable[a, v] and v != seat:
                        _removal(pos, view, a, v, t, j, change)
                        best = max(best, _gain(pos, change, seat, j, t, buf))
            value = best
        else:
            tk = card_tokens[i]
            value = card_support[i] + (tk[0] * worth[seat, 0] + tk[1] * worth[seat, 1] + tk[2] * worth[seat, 2])
        total = total + value * share[i]
    return float(total)


# --- the bid model (heuristics.BidModel) -------------------------------------------------------------------------


@jit(inline=True)  # one caller
def _clumping(last_k):
    """``BidModel._clumping``: the Dirichlet concentration that matches how a rival spread one token type."""
    n = 0
    for c in range(last_k.shape[0]):
        n += last_k[c]
    if n <= 1:
        return 2.0
    sq = np.empty(last_k.shape[0])
    for c in range(last_k.shape[0]):
        x = last_k[c] / n
        sq[c] = x * x
    h = float(_sum(sq))
    return float(min(max(1.5 * (1 - h) / max(h, 1e-3), 0.3), 8.0))


@jit(inline=True)  # one caller
def _sample(rng, n, k, weight, last, habit, K, t, bot, out):
    """``BidModel._sample``: (K, T) counts of one rival's ``n`` tokens of type ``k``, added into ``out`` times
    the type's strength."""
    legal, bid_count, strength = t.bid_targets[k], t.bid_count[k], t.strength[k]
    spread, inner_samples, clumping = bot.spread, bot.inner_samples, bot.clumping
    T = weight.shape[0]
    counts = np.zeros((K, T), dtype=np.int64)
    if habit:  # the rival repeats its bid of last round
        used = np.empty(T)
        any_used = False
        for c in range(T):
            used[c] = last[c, k] * legal[c]
            any_used = any_used or used[c] != 0
        if any_used:
            p = used / _sum(used)
            for i in range(habit):
                _multinomial(rng, n, p, counts[i])
        else:
            habit = 0
    rest = K - habit
    w = np.empty(T)
    for c in range(T):
        w[c] = legal[c] * weight[c]
    total = _sum(w)
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
        kappa = _clumping(last_k) if last_k.sum() > 1 else clumping
        alpha = np.empty(m)
        for i in range(m):
            alpha[i] = kappa * p[on[i]]
        p_k = np.empty((rest, m))
        for i in range(rest):
            _dirichlet(rng, alpha, p_k[i])
        row = np.empty(m, dtype=np.int64)
        for i in range(rest):
            p_k[i] = p_k[i] / _sum(p_k[i])
        for i in range(rest):
            _multinomial(rng, n, p_k[i], row)
            for x in range(m):
                counts[habit + i, on[x]] = row[x]
    else:
        for i in range(rest):
            _multinomial(rng, n, p, counts[habit + i])
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


@jit
def _rival_bids(rng, view, G, j, K, mirrored, card_value, t, bot, keys_j):
    """Rival ``j``'s bids sampled from its interests and habits (``BidModel.__init__``, the loop body): rows
    ``mirrored:`` of ``keys_j`` (K, T), as keys."""
    view, G, keys_j = borrowed(view), borrowed(G), borrowed(keys_j)  # arguments: the caller's for the whole call
    round_, bids, tokens = view.round, view.bids, view.tokens
    T, card = t.targets, t.card
    habit_share, sharpness, persistence = bot.habit, bot.sharpness, bot.persistence
    habit = np.int64(np.rint((K - mirrored) * habit_share)) if round_ > 1 else 0
    weight = np.empty(T)
    for c in range(T):
        want = max(G[c, j, j], 0.0)
        if c == card:
            want = card_value
        weight[c] = (want + 1.0) ** sharpness
    last = bids[j] if round_ > 1 else np.zeros((T, 3), dtype=np.int64)
    if _any(last):  # rivals tend to bid again where they bid last round
        for c in range(T):
            bid_on = last[c, 0] + last[c, 1] + last[c, 2] > 0
            weight[c] = weight[c] * (1.0 + persistence * bid_on)
    for k in range(3):
        n = tokens[j, k]
        if n:
            _sample(rng, n, k, weight, last, habit, K - mirrored, t, bot, keys_j[mirrored:])


@jit
def _model_from_rival_bids(pos, view, G, seat, K, rivals, keys, card_value, t, bot):
    """The rest of ``BidModel.__init__`` once the rivals' bids (``keys``: rival, sample, target) are drawn."""
    pos, view, G, keys = borrowed(pos), borrowed(view), borrowed(G), borrowed(keys)  # the caller's
    worth, tokens = pos.worth, view.tokens
    T, puppet, refunds, spend = t.targets, t.puppet, t.refunds, bot.spend
    R = rivals.shape[0]
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
                lost[m, c] = G[c, rivals[who], seat]
    # each target's strongest opposing bids, sorted (stable), and the losses of the ranks above each, summed
    sorted_keys = np.empty((T, K), dtype=np.int64)
    above = np.zeros((T, K + 1))
    for c in range(T):
        order = _stable_order(top[:, c])
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
        cost=cost,
        vehicle=vehicle,
        guy_tokens=guy_tokens,
        card_value=card_value,
        share=1.0 / K,
        samples=K,
        seat=seat,
        guy_risk=0.0,
        scheming_worth=0.0,
        rival_scheming=0,
    )


@jit
def _with_guy_terms(model, guy_risk, scheming_worth, rival_scheming):
    """The model with its two-player terms set (``BidModel.guy_risk``, ``.scheming_worth``, ``.rival_scheming``,
    which the styles set once it is built)."""
    return BidModel(
        value=model.value,
        sorted_keys=model.sorted_keys,
        above=model.above,
        top=model.top,
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
def _interest_model(rng, view, pos, G, seat, K, t, judgement, bot):
    """``BidModel(bot, view, pos, G, seat, K, mirror=0.0)``: every rival's bids sampled from its interests and
    habits."""
    T, P, card = t.targets, t.players, t.card
    card_value = _card_value(pos, view, seat, t, judgement) if card >= 0 else 0.0
    rivals = _rivals(seat, P)
    keys = np.zeros((rivals.shape[0], K, T), dtype=np.int64)
    unmirrored = np.int64(0)  # not the literal 0: Numba would compile _rival_bids a second time for it (2 s)
    for i in range(rivals.shape[0]):
        _rival_bids(rng, view, G, rivals[i], K, unmirrored, card_value, t, bot, keys[i])
    return _model_from_rival_bids(pos, view, G, seat, K, rivals, keys, card_value, t, bot)


@jit
def _bid_model(rng, view, pos, G, seat, K, mirror, t, judgement, bot):
    """``BidModel(bot, view, pos, G, seat, K, mirror)``: a share ``mirror`` of each levelled rival's samples is the
    bid it would plan if it thought as we do (:func:`_interest_model`, then :func:`_plan_bid`); the rest sampled."""
    view, pos, G = borrowed(view), borrowed(pos), borrowed(G)  # arguments: the caller's for the whole call
    tokens = view.tokens
    T, P, card, token_points, strength = t.targets, t.players, t.card, t.token_points, t.strength
    mirror_rivals, inner_samples = bot.mirror_rivals, bot.inner_samples
    inner_max_group, inner_improve = bot.inner_max_group, bot.inner_improve
    card_value = _card_value(pos, view, seat, t, judgement) if card >= 0 else 0.0
    rivals = _rivals(seat, P)
    R = rivals.shape[0]
    levelled = np.zeros(P, dtype=np.bool_)  # BidModel._mirrored
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
            order = _stable_order(armed)
            for i in range(mirror_rivals):
                levelled[rivals[order[i]]] = True
    keys = np.zeros((R, K, T), dtype=np.int64)
    for i in range(R):
        j = rivals[i]
        mirrored = np.int64(np.rint(K * mirror)) if levelled[j] else 0
        _rival_bids(rng, view, G, j, K, mirrored, card_value, t, bot, keys[i])
        if mirrored:  # level one: the rival plans its bid as we do, against rivals that bid by interest
            inner = _interest_model(rng, view, pos, G, j, inner_samples, t, judgement, bot)
            plan = _plan_bid(rng, inner, tokens[j], inner_max_group, inner_improve, pos, t)
            for c in range(T):
                key = plan[c, 0] * strength[0] + plan[c, 1] * strength[1] + plan[c, 2] * strength[2]
                for m in range(mirrored):
                    keys[i, m, c] = key
    return _model_from_rival_bids(pos, view, G, seat, K, rivals, keys, card_value, t, bot)


@jit(refcounts=False)
def _bid_worth(model, c, f, b, g, pos, t):
    """``BidModel.values(bid)[c]``: what a bid of (f, b, g) on target ``c`` is worth (the targets are
    independent)."""
    value, sorted_keys, above, cost = model.value, model.sorted_keys, model.above, model.cost
    vehicle, guy = model.vehicle, model.guy_tokens
    share, card_value, guy_risk = model.share, model.card_value, model.guy_risk
    scheming_worth, rival_scheming, seat = model.scheming_worth, model.rival_scheming, model.seat
    strength, guy_legal, puppet, refunds = t.strength, t.guy_legal, t.puppet, t.refunds
    card, card_max_gold, scheming = t.card, t.card_max_gold, t.scheming
    worth_now = pos.worth
    q = f * strength[0] + b * strength[1] + g * strength[2]
    win = _count_below(sorted_keys[c], q) * share  # the opposing bids strictly weaker ...
    lost = above[c, _count_below(sorted_keys[c], q + 1)]  # ... and the losses to those stronger
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
        beatable = _guy_beat(f, b, g, guy, guy_legal[c]) >= 0 and placed
        out = out + vehicle[c] * beatable
    if c == card:
        out = card_value * min(g, card_max_gold) - g * cost[GOLD]
    if c == scheming:
        first = 1.0 if g > rival_scheming else (0.5 if g == rival_scheming else 0.0)
        out = scheming_worth * first - g * worth_now[seat, GOLD]
    return out


@jit(refcounts=False)
def _room(bid, counted, max_characters, out):
    """``heuristics._room``: the targets a token may still join (at most ``max_characters`` carry tokens)."""
    T = bid.shape[0]
    used = 0
    for c in range(T):
        used += (bid[c, 0] > 0 or bid[c, 1] > 0 or bid[c, 2] > 0) and counted[c]
    for c in range(T):
        carries = (bid[c, 0] > 0 or bid[c, 1] > 0 or bid[c, 2] > 0) and counted[c]
        out[c] = used < max_characters or carries or not counted[c]


@jit
def _plan_bid(rng, model, tokens, max_group, improve, pos, t):
    """``heuristics.plan_bid``: every token, strongest first, where it adds most value per token; then single
    tokens moved while that helps."""
    model, pos = borrowed(model), borrowed(pos)  # arguments: the caller's for the whole call
    T, legal, scheming, max_characters = t.targets, t.legal, t.scheming, t.max_characters
    bid = np.zeros((T, 3), dtype=np.int64)
    current = np.empty(T)
    for c in range(T):
        current[c] = _bid_worth(model, c, bid[c, 0], bid[c, 1], bid[c, 2], pos, t)
    counted = np.ones(T, dtype=np.bool_)
    if scheming >= 0:
        counted[scheming] = False  # the Scheming space is not one of the six
    room = np.empty(T, dtype=np.bool_)
    trial = np.empty(3, dtype=np.int64)
    bits = _bits(rng)
    for k in range(3):
        left = tokens[k]
        while left > 0:
            n_groups = min(left, max_group)
            noise = np.empty((n_groups, T))  # ties broken at random
            for m in range(n_groups):
                for c in range(T):
                    noise[m, c] = _uniform(bits) * 1e-6
            _room(bid, counted, max_characters, room)
            best, bm, bc = NEG, 0, 0
            for m in range(n_groups):
                for c in range(T):
                    if legal[c, k] and room[c]:
                        trial[:] = bid[c]
                        trial[k] += m + 1
                        gain = _bid_worth(model, c, trial[0], trial[1], trial[2], pos, t) - current[c]
                        v = gain / (m + 1) + noise[m, c]
                    else:
                        v = NEG
                    if v > best:
                        best, bm, bc = v, m, c
            bid[bc, k] += bm + 1
            left -= bm + 1
            current[bc] = _bid_worth(model, bc, bid[bc, 0], bid[bc, 1], bid[bc, 2], pos, t)
    for _ in range(improve):
        if not _improve_once(model, bid, counted, pos, t):
            break
    return bid


@jit(inline=True)  # one caller
def _improve_once(model, bid, counted, pos, t):
    """``heuristics._improve_once``: move the one token whose move adds most value, if any does."""
    T, legal, max_characters = t.targets, t.legal, t.max_characters
    current = np.empty(T)
    for c in range(T):
        current[c] = _bid_worth(model, c, bid[c, 0], bid[c, 1], bid[c, 2], pos, t)
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
            gain_add[c] = _bid_worth(model, c, trial[0], trial[1], trial[2], pos, t) - current[c]
            if bid[c, k] > 0:
                trial[k] -= 2
                gain_take[c] = _bid_worth(model, c, trial[0], trial[1], trial[2], pos, t) - current[c]
            else:
                gain_take[c] = NEG
        for c1 in range(T):
            if bid[c1, k] <= 0:
                continue
            bid[c1, k] -= 1
            _room(bid, counted, max_characters, room)
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


# --- the three styles ----------------------------------------------------------------------------------------


@jit(inline=True)  # one caller
def _value_bot_bid(rng, view, pos, t, j, bot):
    """``ValueBot.bid``."""
    me, tokens = view.me, view.tokens
    puppet = t.puppet
    samples, mirror, max_group, improve = bot.samples, bot.mirror, bot.max_group, bot.improve
    G = _gains(pos, _character_deltas(pos, view, t, j), j, t)
    model = _bid_model(rng, view, pos, G, me, samples, mirror, t, j, bot)
    if puppet >= 0:
        model = _two_player(model, view, t, bot)
    return _plan_bid(rng, model, tokens[0], max_group, improve, pos, t)


@jit(inline=True)  # one caller
def _two_player(model, view, t, bot):
    """``ValueBot._two_player``: Guy may tie or beat our bids, and Scheming Gold buys priority over his tokens."""
    tokens, scheming_gold, round_ = view.tokens, view.scheming_gold, view.round
    guy = tokens[t.puppet]
    scheming_worth = bot.priority * (4.0 * guy[FORCE] + 2.0 * guy[BLACKMAIL] + 1.0)
    rival_scheming = scheming_gold[1] if round_ > 1 else 0
    return _with_guy_terms(model, bot.guy_risk, scheming_worth, rival_scheming)


@jit(inline=True)  # one caller
def _area_bot_bid(rng, view, pos, t, j, bot):
    """``AreaBot.bid``."""
    me, tokens, free, add = view.me, view.tokens, view.free, pos.add
    S, T, C, A = t.seats, t.targets, t.n_characters, t.areas
    spy, apothecary, puppet = t.spy, t.apothecary, t.puppet
    legal, char_area, spaces = t.legal, t.char_area, t.spaces
    samples, mirror, focus, max_group, improve = bot.samples, bot.mirror, bot.focus, bot.max_group, bot.improve
    D = _character_deltas(pos, view, t, j)
    G = _gains(pos, D, j, t)
    area_part = np.zeros(T)
    fill = np.empty(A)
    for a in range(A):
        fill[a] = 1.0 - free[a] / spaces[a]
    buf = np.empty(S)
    for c in range(C):
        a = char_area[c]
        if a >= 0 and free[a] > 0:
            mine = _gain(pos, add[a, 0], me, j, t, buf)
            least = np.inf  # the rival who would gain most from the cube
            for r in range(1, S):
                least = min(least, _gain(pos, add[a, r], me, j, t, buf))
            area_part[c] = (mine - least) * (1.0 + fill[a])
    late = 0.5 + float(_sum(fill) / A)
    for c in (spy, apothecary):
        if c >= 0:
            area_part[c] = max(G[c, 0, 0], 0.0) * late
    value = np.empty(T)
    for c in range(T):
        value[c] = 0.5 * max(G[c, 0, 0], 0.0) + area_part[c]
    G2 = G.copy()
    for c in range(T):
        G2[c, 0, 0] = value[c]
    model = _bid_model(rng, view, pos, G2, me, samples, mirror, t, j, bot)
    order = _stable_order(-value)
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
        model = _with_guy_terms(model, 0.4, model.scheming_worth, model.rival_scheming)
    return _plan_bid(rng, model, tokens[0], max_group, improve, pos, t)


@jit(refcounts=False)
def _bargain_room(bid, c, t):
    """``BargainBot._room``: whether target ``c`` may take tokens (at most six characters carry them)."""
    scheming, C, max_characters = t.scheming, t.n_characters, t.max_characters
    if c == scheming or bid[c, 0] > 0 or bid[c, 1] > 0 or bid[c, 2] > 0:
        return True
    used = 0
    for x in range(C):
        used += bid[x, 0] > 0 or bid[x, 1] > 0 or bid[x, 2] > 0
    return used < max_characters


@jit(inline=True)  # one caller
def _prices(model, held, t):
    """``BargainBot._prices``: every bid we could place on one character (up to six Gold), and per character how
    often it would be strictly highest against the sampled opposing bids (0 where a token type is not allowed)."""
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
                win[c, n] = _count_below(sorted_keys[c], q) / K
    return bids, win


@jit(inline=True)  # one caller
def _bargain_bot_bid(rng, view, pos, t, j, bot):
    """``BargainBot.bid``."""
    me, tokens = view.me, view.tokens
    T, C, printer, card, scheming = t.targets, t.n_characters, t.printer, t.card, t.scheming
    legal, tp = t.legal, t.token_points
    samples, mirror, printer_bonus, sure_share = bot.samples, bot.mirror, bot.printer_bonus, bot.sure
    G = _gains(pos, _character_deltas(pos, view, t, j), j, t)
    model = _bid_model(rng, view, pos, G, me, samples, mirror, t, j, bot)
    K, top, model_value, card_value = model.samples, model.top, model.value, model.card_value
    value = np.empty(T)
    for c in range(T):
        value[c] = max(model_value[c], 0.0)
    if printer >= 0:
        value[printer] = value[printer] * printer_bonus + 2.0
    if card >= 0:
        value[card] = card_value
    left = tokens[0].copy()
    bid = np.zeros((T, 3), dtype=np.int64)
    noise = np.empty(T)
    for c in range(T):
        noise[c] = rng.random() * 1e-6
    bids, win = _prices(model, left, t)
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
                ok = (
                    sure[c, n]
                    and open_[c]
                    and bids[n, 0] <= left[0]
                    and bids[n, 1] <= left[1]
                    and bids[n, 2] <= left[2]
                )
                if ok:
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
        c = _argmax(ratio)
        for k in range(3):
            bid[c, k] += bids[cheapest[c], k]
            left[k] -= bids[cheapest[c], k]
    neglected = np.empty(T)
    for c in range(T):
        nobody = 0.0
        for m in range(K):
            nobody += top[m, c] == 0
        neglected[c] = -(value[c] * (nobody / K)) - noise[c]
    for c in _stable_order(neglected):  # one Gold on each neglected character
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
        c = _argmax(score)
        bid[c, k] += left[k]
        left[k] = 0
    return bid


# --- the other decisions (HeuristicBot.cube, HeuristicBot.guy) ------------------------------------------------


@jit(inline=True)  # one caller
def _cube(rng, kind, view, pos, mask, t, j, bot):
    """``HeuristicBot.cube``: Spy, Apothecary (both picks) and Remove: the legal choice that raises our margin
    most; decline where allowed when nothing helps."""
    me, for_puppet = view.me, view.for_puppet
    a1, s1 = view.apothecary_first  # the Apothecary's first cube (second pick)
    move, movable = pos.move, pos.movable
    S, A, puppet = t.seats, t.areas, t.puppet
    decline_below = bot.decline_below
    gain = np.empty((A, S))
    gain[:] = NEG
    buf = np.empty(S)
    change = np.empty(S + 1)
    if kind == K_APO1:  # the first cube, at its best swap
        for a in range(A):
            for v in range(S):
                if not mask[1 + a * S + v]:
                    continue
                for s2 in range(S):
                    for a2 in range(A):
                        if _may_swap(movable, a, v, s2, a2):
                            _swap_change(move, a, v, s2, a2, change)
                            gain[a, v] = max(gain[a, v], _gain(pos, change, me, j, t, buf))
    else:
        for a in range(A):
            for v in range(S):
                if not mask[1 + a * S + v]:
                    continue
                if kind == K_SPY:
                    owner = puppet if for_puppet else me
                    gain[a, v] = _gain(pos, move[a, v, owner], me, j, t, buf)
                elif kind == K_REMOVE:
                    _removal(pos, view, a, v, t, j, change)
                    gain[a, v] = _gain(pos, change, me, j, t, buf)
                else:  # the Apothecary's second cube: the first pick's owner s1 swaps with v
                    for x in range(S + 1):
                        change[x] = move[a1, s1, v, x] + move[a, v, s1, x]
                    gain[a, v] = _gain(pos, change, me, j, t, buf)
    best, ba, bv = NEG, 0, 0
    for a in range(A):
        for v in range(S):
            g = gain[a, v] + rng.random() * 1e-9
            if g > best:
                best, ba, bv = g, a, v
    if mask[0] and best <= decline_below:
        return 0
    return 1 + ba * S + bv


@jit(inline=True)  # one caller
def _guy_options(view, guy, G, t):
    """``HeuristicBot._guy_options``: every Guy placement ``4 c + 2 p + mode`` (character ``c``, answering player
    ``p``'s bid, a tie (mode 0) or a beat (mode 1)): its tokens (D11) and every seat's change in margin once that
    character is resolved with it, against the outcome without it."""
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
        most = keys[0, c]  # the winner without Guy's bid (HeuristicBot._winners)
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
                    beat = _guy_beat(bids[p, c, 0], bids[p, c, 1], bids[p, c, 2], guy, guy_legal[c])
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
    """``HeuristicBot._guy_open``: (C, 2), D10: a player's bid that Guy may answer (Guy has not bid there; not the
    Card space)."""
    C, puppet, card = t.n_characters, t.puppet, t.card
    open_ = np.zeros((C, 2), dtype=np.bool_)
    for c in range(C):
        guy_there = bids[puppet, c, 0] > 0 or bids[puppet, c, 1] > 0 or bids[puppet, c, 2] > 0
        for p in range(2):
            has = bids[p, c, 0] > 0 or bids[p, c, 1] > 0 or bids[p, c, 2] > 0
            open_[c, p] = has and not guy_there and c != card
    return open_


@jit(inline=True)  # one caller
def _guy(rng, view, pos, mask, t, j):
    """``HeuristicBot.guy``: place one bid for Guy, the option with the best change in our margin once the
    opponent has answered with its own best placement (two plies); pass where allowed if nothing beats passing."""
    bids, guy_bids = view.bids, view.guy_bids
    guy = view.tokens[t.puppet]
    C, guy_legal = t.n_characters, t.guy_legal
    G = _gains(pos, _character_deltas(pos, view, t, j), j, t)
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
            p_bid = 1 - rj  # the bid it answers (theirs first): answered_r[cj, rj] = bids[1 - rj, cj]
            if mj == 0:  # a tie: Guy can pay it
                ok = bids[p_bid, cj, 0] <= left[0] and bids[p_bid, cj, 1] <= left[1] and bids[p_bid, cj, 2] <= left[2]
            else:
                ok = _guy_beat(bids[p_bid, cj, 0], bids[p_bid, cj, 1], bids[p_bid, cj, 2], left, guy_legal[cj]) >= 0
            if not ok:
                continue
            fits_any = True
            jr = 4 * cj + 2 * (1 - rj) + mj  # val_r[opt] = value[cj, 1 - rj, mj]
            v = value[jr, 1]
            if v > best_v:
                best_v, best_j = v, opt
        answered = fits_any and not (can_pass and best_v <= 0)
        answered = answered and guy_bids + 1 < MAX_GUY_BIDS
        jr = 4 * (best_j // 4) + 2 * (1 - (best_j % 4) // 2) + best_j % 2
        mine = value[i, 0]
        total = mine + (value[jr, 0] if answered else 0.0)
        score[i] = total if mask[1 + i] else NEG
    best, at = NEG, 0
    for i in range(n_opt):
        s = score[i] + rng.random() * 1e-9
        if s > best:
            best, at = s, i
    if mask[0] and best <= 0.0:
        return 0
    return 1 + at


# --- the decision --------------------------------------------------------------------------------------------


@jit
def _decide_row(rng, kind, view, pos, mask, action, t, j, bot):
    """One row's decision into ``action`` (zeroed), ``kind`` being a decision. A function of its own, not inlined,
    so that the row's own arrays (``view``, ``pos``), which its caller holds for the whole call, are borrowed here
    by everything the decision calls (``common.jit.borrowed``: no reference counted per call)."""
    view, pos = borrowed(view), borrowed(pos)
    if kind == K_BID:
        if bot.style == VALUE:
            bid = _value_bot_bid(rng, view, pos, t, j, bot)
        elif bot.style == BARGAIN:
            bid = _bargain_bot_bid(rng, view, pos, t, j, bot)
        else:
            bid = _area_bot_bid(rng, view, pos, t, j, bot)
        for k in range(3):  # Codec.action_from_bid: each type's tokens in target order
            d = t.block[k]
            for c in range(t.targets):
                for _ in range(bid[c, k]):
                    action[d] = c
                    d += 1
    elif kind == K_GUY:
        action[0] = _guy(rng, view, pos, mask, t, j)
    else:
        action[0] = _cube(rng, kind, view, pos, mask, t, j, bot)


@jit
def _decide_many(rng, observations, masks, tables, starts, settings, judgement, actions):
    """``HeuristicBot.act_reference`` for each row in order (the same draws as one ``act`` call per row), into
    ``actions``. Returns how many rows broke the mask and played the legal default instead (never expected).
    ``tables``, ``starts``, ``settings``, ``judgement``: the fields of :class:`Tables`, :class:`FeatureStarts`,
    :class:`Bot`, :class:`Judgement` as plain tuples (see :func:`_arguments_after_rows`)."""
    observations, masks, actions = borrowed(observations), borrowed(masks), borrowed(actions)  # the caller's, for
    tables, judgement = borrowed(tables), borrowed(judgement)  # the whole call: no reference counted for them
    t, at, bot, j = Tables(*tables), FeatureStarts(*starts), Bot(*settings), Judgement(*judgement)
    D, offsets = t.dims, t.offsets
    fallbacks = 0
    for row in range(observations.shape[0]):
        obs, mask, action = observations[row], masks[row], actions[row]
        for d in range(D):
            action[d] = 0
        view = _view(obs, t, at)
        kind = view.decision
        if kind == K_NONE:
            continue
        _decide_row(rng, kind, view, _position(view, t, j), mask, action, t, j, bot)
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


# --- from a bot to the named tuples ------------------------------------------------------------------------------

_AREA_TABLES: dict[tuple, np.ndarray] = {}


def _area_table(spaces: np.ndarray, support: np.ndarray, bonus: bool, seats: int) -> np.ndarray:
    """(A, radix ** S, S): ``area_points`` of every cube count an area can hold, indexed by the counts in base
    ``max(spaces) + 1`` (the reference's own function, so the compiled bots read the same numbers)."""
    key = (tuple(int(x) for x in spaces), tuple(int(x) for x in support), bool(bonus), seats)
    table = _AREA_TABLES.get(key)
    if table is None:
        radix = int(spaces.max()) + 1
        table = np.zeros((len(spaces), radix**seats, seats))
        powers = radix ** np.arange(seats)
        for a, n in enumerate(spaces):
            for counts in itertools.product(range(int(n) + 1), repeat=seats):
                if sum(counts) <= n:
                    table[a, int(np.dot(counts, powers))] = area_points(int(support[a]), int(n), bool(bonus), counts)
        table.flags.writeable = False
        _AREA_TABLES[key] = table
    return table


def tables(bot: Any) -> tuple[Tables, FeatureStarts]:
    """The static data of a bot's variant (``appraisal.Tables``, the action codec) and where the observation's
    features start: every number and array of one type in every variant, so that one compiled ``_decide_many``
    serves them all."""
    t, layout, codec = bot.t, bot.layout, bot.codec
    cards = t.cards
    static = Tables(
        seats=int(t.seats),
        players=int(t.players),
        puppet=int(t.puppet),
        areas=int(t.areas),
        targets=int(t.targets),
        n_characters=int(t.n_characters),
        spy=int(t.spy),
        apothecary=int(t.apothecary),
        card=int(t.card),
        scheming=int(t.scheming),
        printer=int(t.printer),
        bonus=bool(t.bonus),
        refunds=bool(t.refunds),
        max_characters=int(t.max_characters),
        card_max_gold=int(t.card_max_gold),
        legal=t.legal.astype(np.bool_),
        bid_targets=t.bid_targets.astype(np.float64),
        bid_count=t.bid_count.astype(np.float64),
        support=t.support.astype(np.float64),
        char_tokens=t.char_tokens.astype(np.int64),
        char_area=t.char_area.astype(np.int64),
        spaces=t.spaces.astype(np.int64),
        token_points=t.token_points.astype(np.float64),
        strength=t.strength.astype(np.int64),
        guy_legal=t.guy_legal.astype(np.bool_),
        others=t.others.astype(np.int64),
        area_points=_area_table(t.spaces, t.area_support, t.bonus, t.seats),
        radix=int(t.spaces.max()) + 1,
        n_cards=len(cards),
        card_remove=np.array([c.remove for c in cards] or [False], dtype=np.bool_),
        card_support=np.array([c.support for c in cards] or [0], dtype=np.float64),
        card_tokens=np.array([c.tokens for c in cards] or [(0, 0, 0)], dtype=np.float64).reshape(-1, 3),
        deck_full=t.deck_full.astype(np.float64) if cards else np.zeros(1),
        decisions=int(layout.features["decision"].size),
        offsets=codec.offsets.astype(np.int64),
        block=codec.block.astype(np.int64),
        dims=len(codec.nvec),
    )
    return static, FeatureStarts(**{name: int(layout._at.get(name, -1)) for name in FeatureStarts._fields})


def params(bot: Any) -> tuple[Bot, Judgement]:
    """A bot's settings and judgement (read at every call, so that a changed attribute counts at once)."""
    j = bot.judgement
    style = STYLES[bot.style]
    max_group, improve = (8, 3) if style == AREA else (5, 6)  # plan_bid's max_group and improve, as each style calls it
    settings = Bot(
        style=style,
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
        guy_risk=float(getattr(bot, "guy_risk", 0.0)),
        priority=float(getattr(bot, "priority", 0.0)),
        printer_bonus=float(getattr(bot, "printer_bonus", 0.0)),
        sure=float(getattr(bot, "sure", 0.0)),
        focus=int(getattr(bot, "focus", 0)),
        max_group=max_group,
        improve=improve,
        inner_max_group=5,
        inner_improve=0,
    )
    judgement = Judgement(
        rival_weight=float(j.rival_weight),
        prior_income=float(j.prior_income),
        prior_rounds=float(j.prior_rounds),
        fill_rate=float(j.fill_rate),
        unsettled=float(j.unsettled),
        power=(float(j.power[0]), float(j.power[1]), float(j.power[2])),
        refund_power=float(j.refund_power),
        hoard=float(j.hoard),
        special_scale=float(j.special_scale),
        lock=float(j.lock),
        trailing=float(j.trailing),
    )
    return settings, judgement


def _arguments_after_rows(bot: Any) -> tuple[tuple, tuple, tuple, tuple]:
    """:func:`tables` and :func:`params` as ``_decide_many`` takes them: plain tuples, which it names again. Numba
    reads the types of a plain tuple of numbers and arrays from a quick fingerprint, those of a named tuple by a
    slower road that would cost each call about 10 us, as much as a whole Spy decision."""
    static, starts = bot._compiled_tables
    settings, judgement = params(bot)
    return tuple(static), tuple(starts), tuple(settings), tuple(judgement)


def decide(bot: Any, observations: np.ndarray, masks: np.ndarray) -> tuple[np.ndarray, int]:
    """The bot's actions for ``observations`` (n, size) with ``masks`` (n, sum(nvec)), in row order, drawing from
    ``bot.rng``; and how many were fallbacks."""
    obs = np.ascontiguousarray(observations, dtype=np.float32)
    m = np.ascontiguousarray(masks).view(np.int8) if masks.dtype == np.bool_ else np.ascontiguousarray(masks, np.int8)
    m = read_only(m)  # one type whoever hands the masks over (the envs' are read-only): one compilation
    actions = np.zeros((len(obs), len(bot.codec.nvec)), dtype=np.int64)
    fallbacks = _decide_many(bot.rng, obs, m, *_arguments_after_rows(bot), actions)
    return actions, int(fallbacks)


# --- the machine code: in Numba's cache, built in the background ------------------------------------------------

STALE_BUILD = 1800.0  # seconds after which a build lock is taken for abandoned
LOCK_NAME = "revolution-bots.build"


class _Build:
    state = "unknown"  # "ready": compiled or cached; "failed": the bots play the reference; else not yet
    next_check = 0.0
    proc: subprocess.Popen | None = None
    proc_owner = -1
    started: float | None = None  # time.monotonic() when this process started the build
    signature: tuple | None = None


def _arguments(bot: Any) -> tuple:
    """Arguments of the types that ``_decide_many`` is compiled for (one row)."""
    size = bot.layout.size
    return (bot.rng, np.zeros((1, size), np.float32), read_only(np.zeros((1, bot.codec.size), np.int8)),
            *_arguments_after_rows(bot), np.zeros((1, len(bot.codec.nvec)), np.int64))  # fmt: skip


def _cache_folder() -> Path | None:
    try:
        return Path(_decide_many._cache.cache_path)
    except Exception:  # pragma: no cover - Numba without a cache
        return None


def _in_cache(signature: tuple) -> bool:
    """Whether Numba's cache holds ``_decide_many`` for these argument types, so that a call loads it rather than
    compiling it (Numba's own index; an internal API, so any surprise answers False)."""
    try:
        cache = _decide_many._cache
        key = cache._index_key(signature, _decide_many.targetctx.codegen())
        return key in cache._cache_file._load_index()
    except Exception:  # pragma: no cover
        return False


def _loaded() -> bool:
    """Whether this process has ``_decide_many``'s machine code already (compiled or loaded)."""
    return bool(_decide_many.signatures)


def _lock_is_live(lock: Path) -> bool:
    try:
        pid, started = lock.read_text().split()
        if time.time() - float(started) > STALE_BUILD:
            return False
        os.kill(int(pid), 0)
        return True
    except (OSError, ValueError):
        return False


def _take_lock(lock: Path) -> bool:
    """Create the build lock (pid and time) unless a live build holds it; a stale one is replaced."""
    lock.parent.mkdir(parents=True, exist_ok=True)
    for _ in range(2):
        try:
            fd = os.open(lock, os.O_CREAT | os.O_EXCL | os.O_WRONLY)
        except FileExistsError:
            if _lock_is_live(lock):
                return False
            lock.unlink(missing_ok=True)
            continue
        with os.fdopen(fd, "w") as fh:
            fh.write(f"{os.getpid()} {time.time()}")
        return True
    return False


def _give_up(why: str) -> None:
    _Build.state = "failed"
    warnings.warn(f"heuristic bots: {why}; they play their NumPy version (the same decisions, slower)", stacklevel=3)


def ready(bot: Any) -> bool:
    """Whether the compiled bots can decide now without compiling in this process: compiled already, or in Numba's
    cache. If not, starts (once per machine at a time) the background process that compiles them, and answers
    False until it is done; checks again at most once a second."""
    if _Build.state == "ready":
        return True
    if _Build.state == "failed" or not COMPILED:
        return False
    now = time.monotonic()
    if now < _Build.next_check:
        return False
    _Build.next_check = now + 1.0
    if _Build.signature is None:
        _Build.signature = tuple(_decide_many.typeof_pyval(a) for a in _arguments(bot))
    folder = _cache_folder()
    if _Build.proc is not None and _Build.proc_owner == os.getpid():  # our build: reaped as soon as it ends
        code = _Build.proc.poll()
        if code is None:
            return False
        _Build.proc = None
        if code != 0:
            _give_up(f"compiling them failed (exit status {code}; see {folder / 'revolution-bots.log'})")
        elif not _in_cache(_Build.signature):
            _give_up(f"Numba could not cache them in {folder} (set NUMBA_CACHE_DIR to a writable folder)")
        else:
            _Build.state = "ready"
        return _Build.state == "ready"
    if _loaded() or _in_cache(_Build.signature):
        _Build.state = "ready"
        return True
    if folder is None:  # pragma: no cover
        _give_up("Numba has no cache folder here")
        return False
    if _take_lock(folder / LOCK_NAME):
        env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
        with open(folder / "revolution-bots.log", "wb") as log:
            _Build.proc = subprocess.Popen(
                [sys.executable, "-m", "revolution_env.agents.build_bots", "--lock", str(folder / LOCK_NAME)],
                stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True,
            )  # fmt: skip
        _Build.proc_owner, _Build.started = os.getpid(), time.monotonic()
    return False


def building_since() -> float | None:
    """``time.monotonic()`` when this process started the background build that is still under way, else None."""
    mine = _Build.proc is not None and _Build.proc_owner == os.getpid()
    return _Build.started if mine else None


COMPILING = "compiling the heuristic bots into Numba's cache (once per machine, about a minute of one core)"


def wait_until_ready(bot: Any, report: Any = print, every: float = 10.0, since: float | None = None) -> bool:
    """Have the compiled bots before their first decision: :func:`ready`, which starts the background build where
    Numba's cache lacks them (or finds a sibling's build under way), then wait for it, with a line through
    ``report`` every ``every`` seconds, the times counted from ``since`` (``time.monotonic()`` when the caller
    started the build and said so; else from now, and :data:`COMPILING` first). Returns whether they are ready
    (False: they play the reference). Ctrl-C stops the wait; the build goes on, in its own session, and fills
    the cache for the next run."""
    if ready(bot) or _Build.state == "failed" or not COMPILED:
        return ready(bot)
    start = time.monotonic() if since is None else since
    last = time.monotonic()
    if since is None:
        report(COMPILING + " ...")
    while not ready(bot) and _Build.state != "failed":
        time.sleep(0.2)
        _Build.next_check = 0.0  # ready() looks again at once
        now = time.monotonic()
        if now - last >= every:
            last = now
            report(f"  ... still compiling the heuristic bots, {now - start:.0f} s")
    if _Build.state == "ready":
        report(f"compiled the heuristic bots in {time.monotonic() - start:.0f} s")
    return _Build.state == "ready"


def build(bot: Any, lock: Path | None = None, timeout: float = STALE_BUILD) -> None:
    """Compile the bots in this process (``bot``: any of the three styles, for the argument types), so that they
    are in Numba's cache: under the build lock, waiting first for a build that holds it; or under ``lock``, a lock
    already taken for this build (the background build's, which its parent took). Raises ``RuntimeError`` without
    Numba."""
    if not COMPILED:
        raise RuntimeError("the compiled bots need Numba (pip install revolution-env[fast])")
    if lock is None:
        folder = _cache_folder()
        lock = folder / LOCK_NAME if folder is not None else None
        deadline = time.monotonic() + timeout
        while lock is not None and not _take_lock(lock):  # someone else builds: wait for it
            if time.monotonic() > deadline:
                raise RuntimeError(f"a build of the compiled bots holds {lock} for longer than {timeout} s")
            time.sleep(1.0)
    try:
        _decide_many(*_arguments(bot))
    finally:
        if lock is not None:
            lock.unlink(missing_ok=True)
    _Build.state = "ready"


__all__ = [
    "COMPILED",
    "COMPILING",
    "build",
    "building_since",
    "decide",
    "params",
    "ready",
    "tables",
    "wait_until_ready",
]
