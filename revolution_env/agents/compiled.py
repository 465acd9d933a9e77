"""The heuristic bots compiled: the same decisions as :mod:`.heuristics`, five to fifty times sooner.

:mod:`.heuristics` and :mod:`.appraisal` are the reference, written with NumPy over small arrays: a decision of
``value`` makes some two thousand NumPy calls of a few microseconds each (about 1.3 ms a decision; compiled, a
bid takes 0.15 to 0.25 ms, most of it drawing the opponents' likely bids, a Spy or Apothecary choice 5 to 30 us).
This module is the same computation as
loops that Numba compiles (:mod:`revolution_env.common.jit`): one function per method of the reference, in the same
order, drawing the same random numbers from the bot's own ``numpy.random.Generator`` (Numba reads and advances
its state), so that for the same observation and the same generator state both give the same action and leave
the generator in the same state. ``tests/test_compiled_bots.py`` holds them to it over thousands of decisions of
every variant.

What makes it exact rather than close:

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
tests have not met. Where Numba is missing the bots run the NumPy reference (``HeuristicBot.act``); this module
then is not used.

**Compiling without waiting.** Compiling this module takes about 50 s of one core, once per machine: Numba keeps
the machine code in its cache. Since both versions decide alike, nobody waits for it: the first decision of a
process that finds the cache empty starts one background process that compiles and fills it
(``python -m revolution_env.agents.build_bots``, a lock file in the cache folder keeps sibling processes from
starting their own), and the bots play the NumPy reference until it is done (:func:`ready`). :func:`build`
compiles in the calling process instead.
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
from typing import Any

import numpy as np

from revolution_env.agents.appraisal import BONUS, MIN_ROUNDS, VEHICLE, area_points  # noqa: F401  (BONUS: in area_points, precomputed below)
from revolution_env.common.jit import COMPILED, jit
from revolution_env.engine.game import MAX_GUY_BIDS
from revolution_env.engine.kernels import BLACKMAIL, FORCE, GOLD, K_APO1, K_BID, K_GUY, K_NONE, K_REMOVE, K_SPY  # ints

NEG = -np.inf

# cfg: the variant (ints)
(S_, P_, PUPPET, A_, T_, C_, SPY, APO, CARD, SCHEMING, BONUS_ON, REFUNDS, MAX_CHARS, CARD_MAX_GOLD, RADIX,
 N_CARDS, CHOICES, DIMS, PRINTER, N_CFG) = range(20)  # fmt: skip
# F: where the observation's features start
(F_ROUND, F_ROUNDS_LEFT, F_DECISION, F_FOR_PUPPET, F_TOKENS, F_SUPPORT, F_SUPPLY, F_BANK, F_CUBES, F_BIDS, F_FREE,
 F_APO_FIRST, F_SCHEMING_GOLD, F_GUY_BIDS, F_DECK_LEFT, N_F) = range(16)  # fmt: skip
# prm: the bot's weights (floats): its Judgement, then its bidding
(RIVAL_WEIGHT, PRIOR_INCOME, PRIOR_ROUNDS, FILL_RATE, UNSETTLED, POWER_F, POWER_B, POWER_G, REFUND_POWER, HOARD,
 SPECIAL_SCALE, LOCK, TRAILING, HABIT, SHARPNESS, SPREAD, CLUMPING, PERSISTENCE, MIRROR, SPEND, DECLINE_BELOW,
 GUY_RISK, PRIORITY, PRINTER_BONUS, SURE, N_PRM) = range(26)  # fmt: skip
# ipr: the bot's integers
STYLE, SAMPLES, INNER_SAMPLES, MIRROR_RIVALS, FOCUS, GROUP, IMPROVE, GROUP_INNER, IMPROVE_INNER, ME, N_IPR = range(11)
VALUE, BARGAIN, AREA = 0, 1, 2
STYLES = {"value": VALUE, "bargain": BARGAIN, "area": AREA}


# --- NumPy's arithmetic and random draws, as NumPy has them ----------------------------------------------------


@jit
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


@jit
def _beta(rng, a, b):
    """NumPy's ``random_beta`` (Johnk's algorithm for a, b <= 1, with its log-space branch when a power
    underflows; else two gamma variates)."""
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


@jit
def _multinomial(rng, n, p, out):
    """NumPy's ``random_multinomial`` into ``out`` (zeroed here): a binomial per category on what is left."""
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


@jit
def _dirichlet(rng, alpha, out):
    """NumPy's ``Generator.dirichlet`` for one sample into ``out``."""
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
            v = _beta(rng, alpha[j], csum[j + 1])
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


@jit
def _any(a2):
    for i in range(a2.shape[0]):
        for k in range(a2.shape[1]):
            if a2[i, k] != 0:
                return True
    return False


@jit
def _argmax(a):
    """The first maximum (``np.argmax``)."""
    best = 0
    for i in range(1, a.shape[0]):
        if a[i] > a[best]:
            best = i
    return best


@jit
def _beats(f, b, g, guy, legal_row):
    """D11 (revised) for one bid: Guy's beat of ``(f, b, g)`` with tokens ``guy`` (``engine.game.guy_beats``):
    whether he can place it, and the token type it adds (-1 if he cannot)."""
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


@jit
def _int(x):
    return np.int64(np.rint(x))


@jit
def _decode(obs, tb):
    """What the bots read of the observation (``ObservationLayout.decode``): ``iv`` = round, rounds left, decision,
    for_puppet, the Apothecary's first cube (area, seat, or -1), Guy bids this round, 0; then the arrays."""
    cfg, F = tb[0], tb[1]
    S, A, T = cfg[S_], cfg[A_], cfg[T_]
    iv = np.zeros(8, dtype=np.int64)  # iv[7]: the observer's seat, 0 (a runtime 0: see ipr[ME])
    iv[0] = _int(obs[F[F_ROUND]])
    iv[1] = _int(obs[F[F_ROUNDS_LEFT]])
    best = 0
    for i in range(1, F[N_F]):
        if _int(obs[F[F_DECISION] + i]) > _int(obs[F[F_DECISION] + best]):
            best = i
    iv[2] = best
    iv[3] = _int(obs[F[F_FOR_PUPPET]])
    iv[4] = iv[5] = -1
    for a in range(A):
        for s in range(S):
            if iv[4] < 0 and _int(obs[F[F_APO_FIRST] + a * S + s]) != 0:
                iv[4], iv[5] = a, s
    if F[F_GUY_BIDS] >= 0:
        iv[6] = _int(obs[F[F_GUY_BIDS]])
    tokens = np.empty((S, 3), dtype=np.int64)
    support = np.empty(S, dtype=np.int64)
    supply = np.empty(S, dtype=np.int64)
    scheming_gold = np.zeros(S, dtype=np.int64)
    for s in range(S):
        for k in range(3):
            tokens[s, k] = _int(obs[F[F_TOKENS] + s * 3 + k])
        support[s] = _int(obs[F[F_SUPPORT] + s])
        supply[s] = _int(obs[F[F_SUPPLY] + s])
        if F[F_SCHEMING_GOLD] >= 0:
            scheming_gold[s] = _int(obs[F[F_SCHEMING_GOLD] + s])
    bank = np.empty(3, dtype=np.int64)
    for k in range(3):
        bank[k] = _int(obs[F[F_BANK] + k])
    cubes = np.empty((A, S), dtype=np.int64)
    free = np.empty(A, dtype=np.int64)
    for a in range(A):
        free[a] = _int(obs[F[F_FREE] + a])
        for s in range(S):
            cubes[a, s] = _int(obs[F[F_CUBES] + a * S + s])
    bids = np.empty((S, T, 3), dtype=np.int64)
    for s in range(S):
        for c in range(T):
            for k in range(3):
                bids[s, c, k] = _int(obs[F[F_BIDS] + (s * T + c) * 3 + k])
    n = cfg[N_CARDS]
    deck_left = np.zeros(max(n, 1), dtype=np.int64)
    if F[F_DECK_LEFT] >= 0:
        for i in range(n):
            deck_left[i] = _int(obs[F[F_DECK_LEFT] + i])
    return iv, tokens, support, supply, bank, cubes, bids, free, scheming_gold, deck_left


# --- the appraisal (appraisal.Position) --------------------------------------------------------------------------


@jit
def _rounds_left(free, fill_rate, rounds_left):
    p = np.empty(free.shape[0])
    for a in range(free.shape[0]):
        x = float(free[a])
        p[a] = x**4
    rounds = _sum(p) ** 0.25 / fill_rate
    return min(rounds, float(max(rounds_left, 0)))


@jit
def _points(a, counts, settled, tb, out):
    """``settled * area_points(...)`` of area ``a`` holding ``counts`` (S,), into ``out`` (S,)."""
    cfg, ap = tb[0], tb[13]
    B = cfg[RADIX]
    idx = 0
    mul = 1
    for s in range(counts.shape[0]):
        idx += counts[s] * mul
        mul *= B
    for s in range(counts.shape[0]):
        out[s] = settled * ap[a, idx, s]


@jit
def _margins(X, change, lead, sc, prm, others, out):
    """``Position.margins(change)`` into ``out`` (S,): every seat's margin over its rivals, its time included."""
    S = X.shape[0]
    w = prm[RIVAL_WEIGHT]
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
    lock = prm[LOCK]
    if lock:
        rounds = sc[0]
        now = max(rounds, MIN_ROUNDS)
        after = max(rounds + change[S], MIN_ROUNDS)
        log = math.log(now / after)
        for s in range(S):
            out[s] = out[s] + lock * 0.5 * lead[s] * log


@jit
def _gain(pos, change, seat, prm, tb, buf):
    """``Position.gain(change, seat)``."""
    X, lead, U0, sc = pos[0], pos[1], pos[2], pos[9]
    _margins(X, change, lead, sc, prm, tb[12], buf)
    return buf[seat] - U0[seat]


@jit
def _position(view, tb, prm):
    """``appraisal.Position`` of the observer: (X, lead, U0, income, area, movable, add, worth, move, sc) with
    sc = (rounds left, settled)."""
    iv, tokens, support, supply, cubes, free = view[0], view[1], view[2], view[3], view[5], view[7]
    cfg, spaces, token_points, others = tb[0], tb[8], tb[9], tb[12]
    S, A = cfg[S_], cfg[A_]
    played = max(iv[0] - 1, 0)
    prior = prm[PRIOR_INCOME] * prm[PRIOR_ROUNDS]
    income = np.empty(S)
    for s in range(S):
        income[s] = (support[s] + prior) / (played + prm[PRIOR_ROUNDS])
    rounds = _rounds_left(free, prm[FILL_RATE], iv[1])
    settled = 1.0 / (1.0 + prm[UNSETTLED] * rounds)
    sc = np.array([rounds, settled])
    area = np.empty((A, S))
    for a in range(A):
        _points(a, cubes[a], settled, tb, area[a])
    X = np.empty(S)
    for s in range(S):
        total = 0.0
        for a in range(A):
            total += area[a, s]
        X[s] = (support[s] + total) + income[s] * rounds
        if cfg[REFUNDS]:
            X[s] = X[s] + (
                tokens[s, 0] * token_points[0] + tokens[s, 1] * token_points[1] + tokens[s, 2] * token_points[2]
            )
    zero = np.zeros(S + 1)
    lead = np.zeros(S)
    plain = np.zeros(S)
    _margins(X, zero, lead, sc, prm, others, plain)  # Position._margins(X): the lock term of no change is 0
    for s in range(S):
        lead[s] = plain[s] if plain[s] > 0 else prm[TRAILING] * plain[s]
    U0 = np.empty(S)
    _margins(X, zero, lead, sc, prm, others, U0)
    movable = np.zeros((A, S), dtype=np.bool_)
    for a in range(A):
        most = 0
        for s in range(S):
            most = max(most, cubes[a, s])
        protected = cfg[BONUS_ON] != 0 and most == spaces[a]
        for s in range(S):
            movable[a, s] = cubes[a, s] > 0 and not protected
    add = np.zeros((A, S, S + 1))
    counts = np.empty(S, dtype=np.int64)
    pts = np.empty(S)
    fewer = free.copy()
    for a in range(A):
        if free[a] > 0:
            fewer[a] -= 1
            sooner = _rounds_left(fewer, prm[FILL_RATE], iv[1]) - rounds
            fewer[a] += 1
            for w in range(S):
                if supply[w] > 0:
                    counts[:] = cubes[a]
                    counts[w] += 1
                    _points(a, counts, settled, tb, pts)
                    for s in range(S):
                        add[a, w, s] = pts[s] - area[a, s]
                        add[a, w, s] += income[s] * sooner
                    add[a, w, S] = sooner
    worth = _token_worth(tokens, free, tb, prm)
    move = np.zeros((A, S, S, S + 1))
    for a in range(A):
        for v in range(S):
            if movable[a, v]:
                for w in range(S):
                    if w != v:
                        counts[:] = cubes[a]
                        counts[v] -= 1
                        counts[w] += 1
                        _points(a, counts, settled, tb, pts)
                        for s in range(S):
                            move[a, v, w, s] = pts[s] - area[a, s]
    return X, lead, U0, income, area, movable, add, worth, move, sc


@jit
def _token_worth(tokens, free, tb, prm):
    """``appraisal.token_worth``: (S, 3)."""
    cfg, token_points = tb[0], tb[9]
    S, A = cfg[S_], cfg[A_]
    open_areas = 0
    crowded = False
    for a in range(A):
        open_areas += free[a] > 0
        crowded = crowded or free[a] > 1
    last = 0.0
    if not crowded and open_areas > 0:
        m = min(open_areas, 4)
        last = 0.85 if m == 1 else (0.7 if m == 2 else (0.55 if m == 3 else 0.4))
    out = np.empty((S, 3))
    for s in range(S):
        held = float(tokens[s, 0] + tokens[s, 1] + tokens[s, 2])
        for k in range(3):
            power = prm[POWER_F + k]
            if cfg[REFUNDS]:
                power *= prm[REFUND_POWER] * min(1.0, prm[HOARD] / max(held, 1.0))
            out[s, k] = last * token_points[k] + (1 - last) * power
    return out


@jit
def _removal(pos, view, a, v, tb, prm, out):
    """``Position.removal(a, v)`` into ``out`` (S + 1,)."""
    iv, cubes, free = view[0], view[5], view[7]
    income, area, sc = pos[3], pos[4], pos[9]
    S = cubes.shape[1]
    more = free.copy()
    more[a] += 1
    later = _rounds_left(more, prm[FILL_RATE], iv[1]) - sc[0]
    counts = cubes[a].copy()
    counts[v] -= 1
    pts = np.empty(S)
    _points(a, counts, sc[1], tb, pts)
    for s in range(S):
        out[s] = pts[s] - area[a, s] + income[s] * later
    out[S] = later


@jit
def _spy_ok(pos, view, owner, a, v):
    """``Position.spy_options(owner)[0][a, v]``."""
    supply, movable = view[3], pos[5]
    return movable[a, v] and v != owner and supply[owner] > 0


@jit
def _swap_delta(move, a1, s1, s2, a2, out):
    """``Position.swap_options()[1][a1, s1, s2, a2]``: s1's cube in a1 becomes s2's, s2's in a2 becomes s1's."""
    for x in range(out.shape[0]):
        out[x] = move[a1, s1, s2, x] + move[a2, s2, s1, x]


@jit
def _swap_ok(movable, a1, s1, s2, a2):
    return movable[a1, s1] and movable[a2, s2] and s1 != s2 and a1 != a2


@jit
def _character_deltas(pos, view, tb, prm):
    """``Position.character_deltas()``: (T, S, S + 1)."""
    bank = view[4]
    cfg, support, char_tokens, char_area = tb[0], tb[5], tb[6], tb[7]
    S, T, C = cfg[S_], cfg[T_], cfg[C_]
    add, worth, move, movable = pos[6], pos[7], pos[8], pos[5]
    spy, apo, card, puppet = cfg[SPY], cfg[APO], cfg[CARD], cfg[PUPPET]
    D = np.zeros((T, S, S + 1))
    for c in range(C):
        if c in (spy, apo, card):
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
    buf = np.empty(S)
    A = cfg[A_]
    scale = prm[SPECIAL_SCALE]
    if spy >= 0:  # _best_spies: each player's best Spy move by its own margin
        for w in range(S):
            if w == puppet:
                continue
            best, ba, bv = NEG, -1, -1
            for a in range(A):
                for v in range(S):
                    if _spy_ok(pos, view, w, a, v):
                        g = _gain(pos, move[a, v, w], w, prm, tb, buf)
                        if g > best:
                            best, ba, bv = g, a, v
            for x in range(S + 1):
                D[spy, w, x] = (move[ba, bv, w, x] if ba >= 0 else 0.0) * scale
    if apo >= 0:  # _best_swaps: each player's best Apothecary swap by its own margin
        delta = np.empty(S + 1)
        for w in range(S):
            if w == puppet:
                continue
            best = NEG
            found = np.zeros(4, dtype=np.int64)
            any_ok = False
            for a1 in range(A):
                for s1 in range(S):
                    for s2 in range(S):
                        for a2 in range(A):
                            if _swap_ok(movable, a1, s1, s2, a2):
                                _swap_delta(move, a1, s1, s2, a2, delta)
                                g = _gain(pos, delta, w, prm, tb, buf)
                                if not any_ok or g > best:
                                    best = g
                                    found[0], found[1], found[2], found[3] = a1, s1, s2, a2
                                any_ok = True
            if any_ok:
                _swap_delta(move, found[0], found[1], found[2], found[3], delta)
                for x in range(S + 1):
                    D[apo, w, x] = delta[x] * scale
    return D


@jit
def _gains(pos, D, prm, tb):
    """``Position.gains(D)``: (T, S, S) over (target, winner, judge)."""
    T, S = D.shape[0], D.shape[1]
    U0 = pos[2]
    G = np.empty((T, S, S))
    buf = np.empty(S)
    for c in range(T):
        for w in range(S):
            _margins(pos[0], D[c, w], pos[1], pos[9], prm, tb[12], buf)
            for j in range(S):
                G[c, w, j] = buf[j] - U0[j]
    return G


@jit
def _card_value(pos, view, seat, tb, prm):
    """``Position.card_value(seat)``: the expected gain of one card of the first edition's deck."""
    cfg = tb[0]
    if cfg[CARD] < 0:
        return 0.0
    deck_left, movable, worth = view[9], pos[5], pos[7]
    card_remove, card_support, card_tokens, deck_full = tb[14], tb[15], tb[16], tb[17]
    n = cfg[N_CARDS]
    S, A = cfg[S_], cfg[A_]
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
                        _removal(pos, view, a, v, tb, prm, change)
                        best = max(best, _gain(pos, change, seat, prm, tb, buf))
            value = best
        else:
            t = card_tokens[i]
            value = card_support[i] + (t[0] * worth[seat, 0] + t[1] * worth[seat, 1] + t[2] * worth[seat, 2])
        total = total + value * share[i]
    return float(total)


# --- the bid model (heuristics.BidModel) -------------------------------------------------------------------------


@jit
def _clumping(last_k):
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


@jit
def _sample(rng, n, k, weight, last, habit, K, tb, prm, ipr, out):
    """``BidModel._sample``: (K, T) counts of one opponent's ``n`` tokens of type ``k``, added into ``out`` times
    the type's strength."""
    bid_targets, bid_count, strength = tb[3], tb[4], tb[10]
    T = weight.shape[0]
    legal = bid_targets[k]
    counts = np.zeros((K, T), dtype=np.int64)
    if habit:
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
    spread = prm[SPREAD]
    p = np.empty(T)
    for c in range(T):
        p[c] = (1 - spread) * w[c] / total + spread * legal[c] / bid_count[k]
    if n > 1 and ipr[INNER_SAMPLES] < K:  # Dirichlet-multinomial: opponents stack their tokens
        m = 0
        for c in range(T):
            m += legal[c] != 0
        on = np.empty(m, dtype=np.int64)
        j = 0
        for c in range(T):
            if legal[c] != 0:
                on[j] = c
                j += 1
        lastk = np.empty(T, dtype=np.int64)
        for c in range(T):
            lastk[c] = last[c, k]
        kappa = _clumping(lastk) if lastk.sum() > 1 else prm[CLUMPING]
        alpha = np.empty(m)
        for j in range(m):
            alpha[j] = kappa * p[on[j]]
        pk = np.empty((rest, m))
        for i in range(rest):
            _dirichlet(rng, alpha, pk[i])
        row = np.empty(m, dtype=np.int64)
        for i in range(rest):
            pk[i] = pk[i] / _sum(pk[i])
        for i in range(rest):
            _multinomial(rng, n, pk[i], row)
            for j in range(m):
                counts[habit + i, on[j]] = row[j]
    else:
        for i in range(rest):
            _multinomial(rng, n, p, counts[habit + i])
    for i in range(K):
        for c in range(T):
            out[i, c] += counts[i, c] * strength[k]


@jit
def _rivals(seat, P):
    rivals = np.empty(P - 1, dtype=np.int64)
    i = 0
    for j in range(P):
        if j != seat:
            rivals[i] = j
            i += 1
    return rivals


@jit
def _rival_keys(rng, view, G, j, K, mirrored, card_value, tb, prm, ipr, keys_i):
    """One rival's sampled bids (``BidModel.__init__``, the loop body): rows ``mirrored:`` of ``keys_i`` (K, T)."""
    iv, tokens, bids = view[0], view[1], view[6]
    cfg = tb[0]
    T, card = cfg[T_], cfg[CARD]
    habit = np.int64(np.rint((K - mirrored) * prm[HABIT])) if iv[0] > 1 else 0
    weight = np.empty(T)
    for c in range(T):
        want = max(G[c, j, j], 0.0)
        if c == card:
            want = card_value
        weight[c] = (want + 1.0) ** prm[SHARPNESS]
    last = bids[j] if iv[0] > 1 else np.zeros((T, 3), dtype=np.int64)
    if _any(last):  # opponents tend to bid again where they bid last round
        for c in range(T):
            bid_on = last[c, 0] + last[c, 1] + last[c, 2] > 0
            weight[c] = weight[c] * (1.0 + prm[PERSISTENCE] * bid_on)
    for k in range(3):
        n = tokens[j, k]
        if n:
            _sample(rng, n, k, weight, last, habit, K - mirrored, tb, prm, ipr, keys_i[mirrored:])


@jit
def _finish_model(pos, G, seat, K, rivals, keys, card_value, tb, prm):
    """The rest of ``BidModel.__init__`` once the rivals' bids are sampled: (value, keys sorted per target, losses
    above each rank, top, fm = (card value, Guy risk, Scheming worth, rival Scheming Gold, 1 / K), cost, vehicle,
    Guy's tokens, im = (seat, K, puppet?))."""
    cfg = tb[0]
    T, puppet = cfg[T_], cfg[PUPPET]
    R = rivals.shape[0]
    value = np.empty(T)
    for c in range(T):
        value[c] = G[c, seat, seat]
    top = np.empty((K, T), dtype=np.int64)
    lost = np.zeros((K, T))
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
    fm = np.array([card_value, 0.0, 0.0, 0.0, 1.0 / K])
    cost = np.zeros(3)
    if cfg[REFUNDS]:
        for k in range(3):
            cost[k] = pos[7][seat, k] * prm[SPEND]
    vehicle = np.zeros(T)
    guy_tokens = np.zeros(3, dtype=np.int64)
    if puppet >= 0:  # two players: a bid of ours that Guy can beat lets us hand him a character
        for c in range(T):
            vehicle[c] = max(G[c, puppet, seat], 0.0) * VEHICLE
    im = np.array([seat, K, 1 if puppet >= 0 else 0, 0])  # the last: a runtime 0 (a literal would compile a copy)
    return value, sorted_keys, above, top, fm, cost, vehicle, guy_tokens, im


@jit
def _model_plain(rng, view, pos, G, seat, K, tb, prm, ipr):
    """``BidModel(..., seat, K, mirror=0.0)``: every rival's bids sampled from its interests and habits."""
    cfg = tb[0]
    card_value = _card_value(pos, view, seat, tb, prm) if cfg[CARD] >= 0 else 0.0
    rivals = _rivals(seat, cfg[P_])
    keys = np.zeros((rivals.shape[0], K, cfg[T_]), dtype=np.int64)
    for i in range(rivals.shape[0]):
        _rival_keys(rng, view, G, rivals[i], K, 0, card_value, tb, prm, ipr, keys[i])
    model = _finish_model(pos, G, seat, K, rivals, keys, card_value, tb, prm)
    if cfg[PUPPET] >= 0:
        model[7][:] = view[1][cfg[PUPPET]]
    return model


@jit
def _model(rng, view, pos, G, seat, K, mirror, tb, prm, ipr):
    """``BidModel(bot, view, pos, G, seat, K, mirror)``: a share ``mirror`` of each levelled rival's samples is the
    bid it would plan if it thought as we do (:func:`_model_plain`, then :func:`_plan_bid`); the rest sampled."""
    tokens = view[1]
    cfg, token_points, strength = tb[0], tb[9], tb[10]
    T, P = cfg[T_], cfg[P_]
    card_value = _card_value(pos, view, seat, tb, prm) if cfg[CARD] >= 0 else 0.0
    rivals = _rivals(seat, P)
    R = rivals.shape[0]
    levelled = np.zeros(P, dtype=np.bool_)
    if mirror:
        if ipr[MIRROR_RIVALS] >= R:
            for i in range(R):
                levelled[rivals[i]] = True
        else:  # the best armed
            armed = np.empty(R)
            for i in range(R):
                j = rivals[i]
                armed[i] = -(tokens[j, 0] * token_points[0] + tokens[j, 1] * token_points[1]
                             + tokens[j, 2] * token_points[2])  # fmt: skip
            order = _stable_order(armed)
            for i in range(ipr[MIRROR_RIVALS]):
                levelled[rivals[order[i]]] = True
    keys = np.zeros((R, K, T), dtype=np.int64)
    for i in range(R):
        j = rivals[i]
        mirrored = np.int64(np.rint(K * mirror)) if levelled[j] else 0
        _rival_keys(rng, view, G, j, K, mirrored, card_value, tb, prm, ipr, keys[i])
        if mirrored:  # level one: the rival plans its bid as we do, against rivals that bid by interest
            inner = _model_plain(rng, view, pos, G, j, ipr[INNER_SAMPLES], tb, prm, ipr)
            plan = _plan_bid(rng, inner, tokens[j], ipr[GROUP_INNER], ipr[IMPROVE_INNER], pos, tb)
            for c in range(T):
                key = plan[c, 0] * strength[0] + plan[c, 1] * strength[1] + plan[c, 2] * strength[2]
                for m in range(mirrored):
                    keys[i, m, c] = key
    model = _finish_model(pos, G, seat, K, rivals, keys, card_value, tb, prm)
    if cfg[PUPPET] >= 0:
        model[7][:] = tokens[cfg[PUPPET]]
    return model


@jit
def _count_below(sorted_row, q, right):
    """``np.searchsorted(sorted_row, q, "right" if right else "left")``."""
    lo, hi = 0, sorted_row.shape[0]
    while lo < hi:
        mid = (lo + hi) // 2
        if sorted_row[mid] < q or (right and sorted_row[mid] == q):
            lo = mid + 1
        else:
            hi = mid
    return lo


@jit
def _value(model, c, f, b, g, pos, tb):
    """``BidModel.values(bid)[c]`` for a bid of (f, b, g) on target ``c`` (the targets are independent)."""
    value, sorted_keys, above, fm, cost, vehicle, guy_tokens, im = model[0], model[1], model[2], model[4], \
        model[5], model[6], model[7], model[8]  # fmt: skip
    cfg, strength, guy_legal = tb[0], tb[10], tb[11]
    q = f * strength[0] + b * strength[1] + g * strength[2]
    win = _count_below(sorted_keys[c], q, im[3] == 1) * fm[4]  # im[3] == 0: left
    lost = above[c, _count_below(sorted_keys[c], q, im[3] == 0)]  # right
    worth = value[c]
    placed = f > 0 or b > 0 or g > 0
    if im[2] and fm[1]:
        exposed = f <= guy_tokens[0] and b <= guy_tokens[1] and g <= guy_tokens[2] and placed
        worth = worth * (1 - fm[1] * exposed)
    out = worth * win + lost
    if cfg[REFUNDS]:
        out -= win * (f * cost[0] + b * cost[1] + g * cost[2])
    if im[2]:
        beatable = _beats(f, b, g, guy_tokens, guy_legal[c]) >= 0 and placed
        out = out + vehicle[c] * beatable
    if c == cfg[CARD]:
        out = fm[0] * min(g, cfg[CARD_MAX_GOLD]) - g * cost[GOLD]
    if c == cfg[SCHEMING]:
        rival = fm[3]
        first = 1.0 if g > rival else (0.5 if g == rival else 0.0)
        out = fm[2] * first - g * pos[7][im[0], GOLD]
    return out


@jit
def _room(bid, counted, max_chars, out):
    """``heuristics._room``: the targets a token may still join."""
    T = bid.shape[0]
    used = 0
    for c in range(T):
        used += (bid[c, 0] > 0 or bid[c, 1] > 0 or bid[c, 2] > 0) and counted[c]
    for c in range(T):
        carries = (bid[c, 0] > 0 or bid[c, 1] > 0 or bid[c, 2] > 0) and counted[c]
        out[c] = used < max_chars or carries or not counted[c]


@jit
def _plan_bid(rng, model, tokens, max_group, improve, pos, tb):
    """``heuristics.plan_bid``: every token, strongest first, where it adds most value per token; then single
    tokens moved while that helps."""
    cfg, legal = tb[0], tb[2]
    T = cfg[T_]
    bid = np.zeros((T, 3), dtype=np.int64)
    current = np.empty(T)
    for c in range(T):
        current[c] = _value(model, c, bid[c, 0], bid[c, 1], bid[c, 2], pos, tb)
    counted = np.ones(T, dtype=np.bool_)
    if cfg[SCHEMING] >= 0:
        counted[cfg[SCHEMING]] = False
    room = np.empty(T, dtype=np.bool_)
    trial = np.empty(3, dtype=np.int64)
    for k in range(3):
        left = tokens[k]
        while left > 0:
            n_groups = min(left, max_group)
            noise = np.empty((n_groups, T))
            for m in range(n_groups):
                for c in range(T):
                    noise[m, c] = rng.random() * 1e-6
            _room(bid, counted, cfg[MAX_CHARS], room)
            best, bm, bc = NEG, 0, 0
            for m in range(n_groups):
                for c in range(T):
                    if legal[c, k] and room[c]:
                        trial[:] = bid[c]
                        trial[k] += m + 1
                        v = (_value(model, c, trial[0], trial[1], trial[2], pos, tb) - current[c]) / (m + 1) + noise[
                            m, c
                        ]
                    else:
                        v = NEG
                    if v > best:
                        best, bm, bc = v, m, c
            bid[bc, k] += bm + 1
            left -= bm + 1
            current[bc] = _value(model, bc, bid[bc, 0], bid[bc, 1], bid[bc, 2], pos, tb)
    for _ in range(improve):
        if not _improve_once(model, bid, counted, pos, tb):
            break
    return bid


@jit
def _improve_once(model, bid, counted, pos, tb):
    """``heuristics._improve_once``: move the one token whose move adds most value, if any does."""
    cfg, legal = tb[0], tb[2]
    T = cfg[T_]
    current = np.empty(T)
    for c in range(T):
        current[c] = _value(model, c, bid[c, 0], bid[c, 1], bid[c, 2], pos, tb)
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
            gain_add[c] = _value(model, c, trial[0], trial[1], trial[2], pos, tb) - current[c]
            if bid[c, k] > 0:
                trial[k] -= 2
                gain_take[c] = _value(model, c, trial[0], trial[1], trial[2], pos, tb) - current[c]
            else:
                gain_take[c] = NEG
        for c1 in range(T):
            if bid[c1, k] <= 0:
                continue
            bid[c1, k] -= 1
            _room(bid, counted, cfg[MAX_CHARS], room)
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


@jit
def _bid_value(rng, view, pos, tb, prm, ipr):
    """``ValueBot.bid``."""
    iv, tokens, scheming_gold = view[0], view[1], view[8]
    cfg = tb[0]
    G = _gains(pos, _character_deltas(pos, view, tb, prm), prm, tb)
    model = _model(rng, view, pos, G, ipr[ME], ipr[SAMPLES], prm[MIRROR], tb, prm, ipr)
    puppet = cfg[PUPPET]
    if puppet >= 0:
        guy = tokens[puppet]
        fm = model[4]
        fm[1] = prm[GUY_RISK]
        fm[2] = prm[PRIORITY] * (4.0 * guy[FORCE] + 2.0 * guy[BLACKMAIL] + 1.0)
        fm[3] = scheming_gold[1] if iv[0] > 1 else 0
    return _plan_bid(rng, model, tokens[0], ipr[GROUP], ipr[IMPROVE], pos, tb)


@jit
def _bid_area(rng, view, pos, tb, prm, ipr):
    """``AreaBot.bid``."""
    tokens, free = view[1], view[7]
    cfg, legal, char_area, spaces = tb[0], tb[2], tb[7], tb[8]
    S, T, C, A = cfg[S_], cfg[T_], cfg[C_], cfg[A_]
    me = view[0][7]
    D = _character_deltas(pos, view, tb, prm)
    G = _gains(pos, D, prm, tb)
    add = pos[6]
    area_part = np.zeros(T)
    fill = np.empty(A)
    for a in range(A):
        fill[a] = 1.0 - free[a] / spaces[a]
    buf = np.empty(S)
    for c in range(C):
        a = char_area[c]
        if a >= 0 and free[a] > 0:
            mine = _gain(pos, add[a, 0], me, prm, tb, buf)
            least = np.inf
            for j in range(1, S):
                least = min(least, _gain(pos, add[a, j], me, prm, tb, buf))
            area_part[c] = (mine - least) * (1.0 + fill[a])
    late = 0.5 + float(_sum(fill) / A)
    for c in (cfg[SPY], cfg[APO]):
        if c >= 0:
            area_part[c] = max(G[c, 0, 0], 0.0) * late
    value = np.empty(T)
    for c in range(T):
        value[c] = 0.5 * max(G[c, 0, 0], 0.0) + area_part[c]
    G2 = G.copy()
    for c in range(T):
        G2[c, 0, 0] = value[c]
    model = _model(rng, view, pos, G2, ipr[ME], ipr[SAMPLES], prm[MIRROR], tb, prm, ipr)
    order = _stable_order(-value)
    blocked = np.ones(T, dtype=np.bool_)
    for i in range(min(ipr[FOCUS], T)):
        blocked[order[i]] = False
    mvalue = model[0]
    for c in range(T):
        if not legal[c, FORCE] and not legal[c, BLACKMAIL]:
            blocked[c] = False  # Gold-only spaces stay open
        if blocked[c]:
            mvalue[c] = 0.0
    if cfg[PUPPET] >= 0:
        model[4][1] = 0.4
    return _plan_bid(rng, model, tokens[0], ipr[GROUP], ipr[IMPROVE], pos, tb)


@jit
def _room_bargain(bid, c, cfg):
    """``BargainBot._room``."""
    if c == cfg[SCHEMING] or bid[c, 0] > 0 or bid[c, 1] > 0 or bid[c, 2] > 0:
        return True
    used = 0
    for x in range(cfg[C_]):
        used += bid[x, 0] > 0 or bid[x, 1] > 0 or bid[x, 2] > 0
    return used < cfg[MAX_CHARS]


@jit
def _bid_bargain(rng, view, pos, tb, prm, ipr):
    """``BargainBot.bid``."""
    tokens = view[1]
    cfg, legal, token_points, strength = tb[0], tb[2], tb[9], tb[10]
    T, C = cfg[T_], cfg[C_]
    G = _gains(pos, _character_deltas(pos, view, tb, prm), prm, tb)
    model = _model(rng, view, pos, G, ipr[ME], ipr[SAMPLES], prm[MIRROR], tb, prm, ipr)
    sorted_keys, top, fm = model[1], model[3], model[4]
    K = model[8][1]
    value = np.empty(T)
    for c in range(T):
        value[c] = max(model[0][c], 0.0)
    printer = cfg[PRINTER]
    if printer >= 0:
        value[printer] = value[printer] * prm[PRINTER_BONUS] + 2.0
    if cfg[CARD] >= 0:
        value[cfg[CARD]] = fm[0]
    left = tokens[0].copy()
    bid = np.zeros((T, 3), dtype=np.int64)
    noise = np.empty(T)
    for c in range(T):
        noise[c] = rng.random() * 1e-6
    # _prices: every bid on one character (up to six Gold), and how often it is strictly highest
    nf, nb, ng = left[FORCE] + 1, left[BLACKMAIL] + 1, min(left[GOLD], 6) + 1
    N = nf * nb * ng
    bids = np.empty((N, 3), dtype=np.int64)
    n = 0
    for f in range(nf):
        for b in range(nb):
            for g in range(ng):
                bids[n, 0], bids[n, 1], bids[n, 2] = f, b, g
                n += 1
    win = np.zeros((C, N))
    cost = np.empty(N)
    for n in range(N):
        cost[n] = bids[n, 0] * token_points[0] + bids[n, 1] * token_points[1] + bids[n, 2] * token_points[2]
        q = bids[n, 0] * strength[0] + bids[n, 1] * strength[1] + bids[n, 2] * strength[2]
        for c in range(C):
            allowed = True
            for k in range(3):
                allowed = allowed and (bids[n, k] == 0 or legal[c, k])
            if allowed:
                win[c, n] = _count_below(sorted_keys[c], q, model[8][3] == 1) / K
    sure = np.zeros((C, N), dtype=np.bool_)
    for c in range(C):
        for n in range(N):
            placed = bids[n, 0] > 0 or bids[n, 1] > 0 or bids[n, 2] > 0
            sure[c, n] = win[c, n] >= prm[SURE] and value[c] > 0 and placed and c != cfg[CARD]
    ratio = np.empty(C)
    cheapest = np.zeros(C, dtype=np.int64)
    open_ = np.empty(C, dtype=np.bool_)
    while True:  # buy the best bargain that is still affordable
        for c in range(C):
            open_[c] = not (bid[c, 0] > 0 or bid[c, 1] > 0 or bid[c, 2] > 0) and _room_bargain(bid, c, cfg)
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
        if legal[c, GOLD] and not (bid[c, 0] > 0 or bid[c, 1] > 0 or bid[c, 2] > 0) and _room_bargain(bid, c, cfg):
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
            if not (legal[c, k] and _room_bargain(bid, c, cfg)) or c == cfg[SCHEMING]:
                score[c] = NEG
        c = _argmax(score)
        bid[c, k] += left[k]
        left[k] = 0
    return bid


# --- the other decisions (HeuristicBot.cube, HeuristicBot.guy) ------------------------------------------------


@jit
def _cube(rng, kind, view, pos, mask, tb, prm):
    """``HeuristicBot.cube``: the legal cube choice that raises our margin most; decline where allowed when
    nothing helps."""
    iv = view[0]
    me = iv[7]
    cfg = tb[0]
    S, A = cfg[S_], cfg[A_]
    move = pos[8]
    gain = np.empty((A, S))
    gain[:] = NEG
    buf = np.empty(S)
    change = np.empty(S + 1)
    if kind == K_APO1:
        movable = pos[5]
        for a in range(A):
            for v in range(S):
                if not mask[1 + a * S + v]:
                    continue
                for s2 in range(S):
                    for a2 in range(A):
                        if _swap_ok(movable, a, v, s2, a2):
                            _swap_delta(move, a, v, s2, a2, change)
                            gain[a, v] = max(gain[a, v], _gain(pos, change, me, prm, tb, buf))
    else:
        for a in range(A):
            for v in range(S):
                if not mask[1 + a * S + v]:
                    continue
                if kind == K_SPY:
                    owner = cfg[PUPPET] if iv[3] else me
                    gain[a, v] = _gain(pos, move[a, v, owner], me, prm, tb, buf)
                elif kind == K_REMOVE:
                    _removal(pos, view, a, v, tb, prm, change)
                    gain[a, v] = _gain(pos, change, me, prm, tb, buf)
                else:  # K_APO2: the first pick's owner s1 swaps with v
                    a1, s1 = iv[4], iv[5]
                    for x in range(S + 1):
                        change[x] = move[a1, s1, v, x] + move[a, v, s1, x]
                    gain[a, v] = _gain(pos, change, me, prm, tb, buf)
    best, ba, bv = NEG, 0, 0
    for a in range(A):
        for v in range(S):
            g = gain[a, v] + rng.random() * 1e-9
            if g > best:
                best, ba, bv = g, a, v
    if mask[0] and best <= prm[DECLINE_BELOW]:
        return 0
    return 1 + ba * S + bv


@jit
def _guy(rng, view, pos, mask, tb, prm):
    """``HeuristicBot.guy``: place one bid for Guy, the option with the best change in our margin once the
    opponent has answered with its own best placement (two plies); pass where allowed if nothing beats passing."""
    iv, tokens, bids = view[0], view[1], view[6]
    cfg, strength, guy_legal = tb[0], tb[10], tb[11]
    S, C, puppet = cfg[S_], cfg[C_], cfg[PUPPET]
    G = _gains(pos, _character_deltas(pos, view, tb, prm), prm, tb)
    guy = tokens[puppet]
    # _guy_options: every placement (character, answered player, tie/beat): its tokens and the change it makes
    n_opt = 4 * C
    tok = np.zeros((n_opt, 3), dtype=np.int64)
    value = np.zeros((n_opt, S))
    keys = np.empty((S, C), dtype=np.int64)
    for s in range(S):
        for c in range(C):
            keys[s, c] = bids[s, c, 0] * strength[0] + bids[s, c, 1] * strength[1] + bids[s, c, 2] * strength[2]
    for c in range(C):
        most = keys[0, c]
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
                    tok[i, k] = bids[p, c, k]
                if mode == 1:
                    t = _beats(bids[p, c, 0], bids[p, c, 1], bids[p, c, 2], guy, guy_legal[c])
                    if t >= 0:
                        tok[i, t] += 1
                gk = tok[i, 0] * strength[0] + tok[i, 1] * strength[1] + tok[i, 2] * strength[2]
                k0, k1 = keys[0, c], keys[1, c]
                top = max(max(k0, k1), gk)
                n_top = (k0 == top) + (k1 == top) + (gk == top)
                winner = puppet if gk == top else (1 if k1 == top else 0)
                if not (n_top == 1 and top > 0):
                    winner = -1
                for s in range(S):
                    outcome = G[c, winner, s] if winner >= 0 else 0.0
                    before = G[c, who, s] if sole else 0.0
                    value[i, s] = outcome - before
    # which player bids Guy may still answer (D10): Guy has not bid there
    open_ = np.zeros((C, 2), dtype=np.bool_)
    for c in range(C):
        guy_there = bids[puppet, c, 0] > 0 or bids[puppet, c, 1] > 0 or bids[puppet, c, 2] > 0
        for p in range(2):
            has = bids[p, c, 0] > 0 or bids[p, c, 1] > 0 or bids[p, c, 2] > 0
            open_[c, p] = has and not guy_there and c != cfg[CARD]
    can_pass = iv[6] + 1 >= 2
    score = np.empty(n_opt)
    left = np.empty(3, dtype=np.int64)
    for i in range(n_opt):
        c = i // 4
        for k in range(3):
            left[k] = guy[k] - tok[i, k]
        # the opponent's replies: its options are ours seen from its seat (answered 0 = its own bid)
        best_j, best_v, fits_any = 0, NEG, False
        for j in range(n_opt):
            cj, rj = j // 4, (j % 4) // 2
            mj = j % 2
            if cj == c or not open_[cj, 1 - rj]:
                continue
            p_bid = 1 - rj  # the bid it answers (theirs first): answered_r[cj, rj] = bids[1 - rj, cj]
            if mj == 0:
                ok = bids[p_bid, cj, 0] <= left[0] and bids[p_bid, cj, 1] <= left[1] and bids[p_bid, cj, 2] <= left[2]
            else:
                ok = _beats(bids[p_bid, cj, 0], bids[p_bid, cj, 1], bids[p_bid, cj, 2], left, guy_legal[cj]) >= 0
            if not ok:
                continue
            fits_any = True
            jr = 4 * cj + 2 * (1 - rj) + mj  # val_r[j] = value[c, 1 - r, mode]
            v = value[jr, 1]
            if v > best_v:
                best_v, best_j = v, j
        answered = fits_any and not (can_pass and best_v <= 0)
        answered = answered and iv[6] + 1 < MAX_GUY_BIDS
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
def _decide_many(rng, observations, masks, tb, prm, ipr, actions):
    """``HeuristicBot.act`` for each row in order (the same draws as one ``act`` call per row), into ``actions``.
    Returns how many rows broke the mask and played the legal default instead (a fallback; never expected)."""
    cfg, offsets, block = tb[0], tb[18], tb[19]
    T, D = cfg[T_], cfg[DIMS]
    fallbacks = 0
    for row in range(observations.shape[0]):
        obs, mask, action = observations[row], masks[row], actions[row]
        for d in range(D):
            action[d] = 0
        view = _decode(obs, tb)
        kind = view[0][2]
        if kind == K_NONE:
            continue
        pos = _position(view, tb, prm)
        if kind == K_BID:
            style = ipr[STYLE]
            if style == VALUE:
                bid = _bid_value(rng, view, pos, tb, prm, ipr)
            elif style == BARGAIN:
                bid = _bid_bargain(rng, view, pos, tb, prm, ipr)
            else:
                bid = _bid_area(rng, view, pos, tb, prm, ipr)
            for k in range(3):  # Codec.action_from_bid: each type's tokens in target order
                d = block[k]
                for c in range(T):
                    for _ in range(bid[c, k]):
                        action[d] = c
                        d += 1
        elif kind == K_GUY:
            action[0] = _guy(rng, view, pos, mask, tb, prm)
        else:
            action[0] = _cube(rng, kind, view, pos, mask, tb, prm)
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


# --- from a bot to the arrays ----------------------------------------------------------------------------------

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


def tables(bot: Any) -> tuple:
    """The static arrays of a bot's variant (``appraisal.Tables``, the observation layout, the action codec)."""
    t, layout, codec = bot.t, bot.layout, bot.codec
    at = layout._at
    n_cards = len(t.cards)
    cfg = np.zeros(N_CFG, dtype=np.int64)
    cfg[[S_, P_, PUPPET, A_, T_, C_]] = t.seats, t.players, t.puppet, t.areas, t.targets, t.n_characters
    cfg[[SPY, APO, CARD, SCHEMING]] = t.spy, t.apothecary, t.card, t.scheming
    cfg[[BONUS_ON, REFUNDS, MAX_CHARS, CARD_MAX_GOLD]] = t.bonus, t.refunds, t.max_characters, t.card_max_gold
    cfg[[RADIX, N_CARDS, CHOICES, DIMS, PRINTER]] = (
        int(t.spaces.max()) + 1,
        n_cards,
        codec.C,
        len(codec.nvec),
        t.printer,
    )
    names = ("round", "rounds_left", "decision", "for_puppet", "tokens", "support", "supply", "bank", "cubes", "bids",
             "free", "apothecary_first", "scheming_gold", "guy_bids", "deck_left")  # fmt: skip
    F = np.array([at.get(name, -1) for name in names] + [layout.features["decision"].size], dtype=np.int64)
    cards = t.cards
    return (
        cfg,
        F,
        t.legal.astype(np.bool_),
        t.bid_targets.astype(np.float64),
        t.bid_count.astype(np.float64),
        t.support.astype(np.float64),
        t.char_tokens.astype(np.int64),
        t.char_area.astype(np.int64),
        t.spaces.astype(np.int64),
        t.token_points.astype(np.float64),
        t.strength.astype(np.int64),
        t.guy_legal.astype(np.bool_),
        t.others.astype(np.int64),
        _area_table(t.spaces, t.area_support, t.bonus, t.seats),
        np.array([c.remove for c in cards] or [False], dtype=np.bool_),
        np.array([c.support for c in cards] or [0], dtype=np.float64),
        np.array([c.tokens for c in cards] or [(0, 0, 0)], dtype=np.float64).reshape(-1, 3),
        t.deck_full.astype(np.float64) if n_cards else np.zeros(1),
        codec.offsets.astype(np.int64),
        codec.block.astype(np.int64),
    )


def params(bot: Any) -> tuple[np.ndarray, np.ndarray]:
    """A bot's weights as arrays (read at every call, so that a changed attribute counts at once)."""
    j = bot.judgement
    prm = np.array(
        [j.rival_weight, j.prior_income, j.prior_rounds, j.fill_rate, j.unsettled, *j.power, j.refund_power, j.hoard,
         j.special_scale, j.lock, j.trailing, bot.habit, bot.sharpness, bot.spread, bot.clumping, bot.persistence,
         bot.mirror, bot.spend, bot.decline_below, getattr(bot, "guy_risk", 0.0), getattr(bot, "priority", 0.0),
         getattr(bot, "printer_bonus", 0.0), getattr(bot, "sure", 0.0)],
        dtype=np.float64,
    )  # fmt: skip
    style = STYLES[bot.style]
    group, improve = (8, 3) if style == AREA else (5, 6)  # plan_bid's max_group and improve, as each style calls it
    ipr = np.array([style, bot.samples, bot.inner_samples, bot.mirror_rivals, getattr(bot, "focus", 0), group, improve,
                    5, 0, 0], dtype=np.int64)  # fmt: skip
    return prm, ipr


def decide(bot: Any, observations: np.ndarray, masks: np.ndarray) -> tuple[np.ndarray, int]:
    """The bot's actions for ``observations`` (n, size) with ``masks`` (n, sum(nvec)), in row order, drawing from
    ``bot.rng``; and how many were fallbacks."""
    tb = bot._compiled_tables
    prm, ipr = params(bot)
    obs = np.ascontiguousarray(observations, dtype=np.float32)
    m = np.ascontiguousarray(masks).view(np.int8) if masks.dtype == np.bool_ else np.ascontiguousarray(masks, np.int8)
    actions = np.zeros((len(obs), len(bot.codec.nvec)), dtype=np.int64)
    fallbacks = _decide_many(bot.rng, obs, m, tb, prm, ipr, actions)
    return actions, int(fallbacks)


# --- the machine code: in Numba's cache, built in the background ------------------------------------------------

STALE_BUILD = 1800.0  # seconds after which a build lock is taken for abandoned
LOCK_NAME = "revolution-bots.build"


class _Build:
    state = "unknown"  # "ready": compiled or cached; "failed": the bots play the reference; else not yet
    next_check = 0.0
    proc: subprocess.Popen | None = None
    proc_owner = -1
    signature: tuple | None = None


def _arguments(bot: Any) -> tuple:
    """Arguments of the types that ``_decide_many`` is compiled for (one row)."""
    size = bot.layout.size
    prm, ipr = params(bot)
    return (bot.rng, np.zeros((1, size), np.float32), np.zeros((1, bot.codec.size), np.int8), bot._compiled_tables,
            prm, ipr, np.zeros((1, len(bot.codec.nvec)), np.int64))  # fmt: skip


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
    if _loaded() or _in_cache(_Build.signature):
        _Build.state = "ready"
        return True
    folder = _cache_folder()
    if folder is None:  # pragma: no cover
        _give_up("Numba has no cache folder here")
        return False
    if _Build.proc is not None and _Build.proc_owner == os.getpid():
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
    if _take_lock(folder / LOCK_NAME):
        env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
        with open(folder / "revolution-bots.log", "wb") as log:
            _Build.proc = subprocess.Popen(
                [sys.executable, "-m", "revolution_env.agents.build_bots", "--lock", str(folder / LOCK_NAME)],
                stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True,
            )  # fmt: skip
        _Build.proc_owner = os.getpid()
    return False


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


__all__ = ["COMPILED", "build", "decide", "params", "ready", "tables"]
