"""The heuristic bots' decisions, row by row: each style's bid, the cube choices (Spy, Apothecary, Remove) and
Guy's bids, which the three styles share. :mod:`.heuristics` has each bot's idea and parameters; this module is
what they compute, as loops that Numba compiles (:mod:`revolution_env.common.jit`) and that run as plain Python
without it; :mod:`.compiled` calls :func:`decide_rows` compiled, or as plain Python while Numba builds it.

Three things about Numba shape how the values travel. It compiles a function again for each new type of its
arguments, and a literal number passed as an argument is a type of its own: so the observer's seat travels as the
field ``View.me`` and the level-one planner's settings as fields of :class:`Settings`, not as the literals ``0`` and
``5``. It reads the types of a call's arguments from Python quickly for plain tuples, slowly for named ones: so
:func:`decide_rows` takes the named tuples as plain ones and names them again. And a compiled function counts a
reference to every array of a tuple it is given, and gives it back once the tuple is last used: where that is in
the function's first lines, Numba cancels the pairs of the arrays it does not use; where it is further down, every
call pays for all of them. So every function reads the fields it needs into locals at its top, and uses the tuple
no more except to hand it on.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

from revolution_env.agents.appraisal import (
    NEG,
    FeatureStarts,
    Judgement,
    Tables,
    appraise,
    changes_if_won,
    first_max,
    gain,
    gains,
    guy_beat,
    may_swap,
    pairwise_sum,
    read_view,
    removal_change,
    stable_order,
    swap_change,
)
from revolution_env.agents.bidding import (
    bid_worth,
    count_below,
    model_rivals,
    plan_bid,
    values_per_sample,
    with_guy_terms,
)
from revolution_env.common.jit import borrowed, jit
from revolution_env.engine.game import MAX_GUY_BIDS
from revolution_env.engine.kernels import BLACKMAIL, FORCE, GOLD, K_APO1, K_BID, K_GUY, K_NONE, K_REMOVE, K_SPY  # ints

VALUE, BARGAIN, AREA = 0, 1, 2  # Settings.style
STYLES = {"value": VALUE, "bargain": BARGAIN, "area": AREA}


class Settings(NamedTuple):
    """A bot's parameters as its decisions read them (``HeuristicBot``'s and its style's attributes, by the same
    names; 0 where the style has none)."""

    style: int  # VALUE, BARGAIN or AREA
    samples: int  # how the rivals' bids are sampled (:mod:`.bidding`)
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


# --- value ---------------------------------------------------------------------------------------------------------


@jit
def value_model(rng, view, pos, t, j, bot):
    """``value``'s model of the rivals' bids: every target worth the change in our margin if we win it, the
    rivals' bids sampled (a share ``mirror`` planned as ours); two players, Guy's terms (:func:`_against_guy`)."""
    view, pos = borrowed(view), borrowed(pos)  # arguments: the caller's for the whole call
    me, puppet, samples, mirror = view.me, t.puppet, bot.samples, bot.mirror
    G = gains(pos, changes_if_won(pos, view, t, j), j, t)
    model = model_rivals(rng, view, pos, G, me, samples, mirror, t, j, bot)
    if puppet >= 0:
        model = _against_guy(model, view, t, bot)
    return model


@jit(inline=True)  # one caller
def _against_guy(model, view, t, bot):
    """Two players: Guy may tie or beat our bids (``guy_risk``), and Scheming Gold buys priority over his tokens,
    worth ``priority`` times his strongest tokens."""
    tokens, scheming_gold, round_ = view.tokens, view.scheming_gold, view.round
    guy = tokens[t.puppet]
    scheming_worth = bot.priority * (4.0 * guy[FORCE] + 2.0 * guy[BLACKMAIL] + 1.0)
    rival_scheming = scheming_gold[1] if round_ > 1 else 0
    return with_guy_terms(model, bot.guy_risk, scheming_worth, rival_scheming)


@jit(inline=True)  # one caller
def value_bid(rng, view, pos, t, j, bot):
    """``value``: every token where it adds most expected value against the rivals' sampled bids."""
    tokens, max_group, improve = view.tokens, bot.max_group, bot.improve
    model = value_model(rng, view, pos, t, j, bot)
    return plan_bid(rng, model, tokens[0], max_group, improve, pos, t)


# --- bargain -------------------------------------------------------------------------------------------------------


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
def bargain_bid(rng, view, pos, t, j, bot):
    """``bargain``: the characters it is ``sure`` to win at the lowest price, best value per point first; one Gold
    on each neglected character; what is left on the Printer or its best bid."""
    me, tokens = view.me, view.tokens
    T, C, printer, card, scheming = t.targets, t.n_characters, t.printer, t.card, t.scheming
    legal, tp = t.legal, t.token_points
    samples, mirror, printer_bonus, sure_share = bot.samples, bot.mirror, bot.printer_bonus, bot.sure
    G = gains(pos, changes_if_won(pos, view, t, j), j, t)
    model = model_rivals(rng, view, pos, G, me, samples, mirror, t, j, bot)
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


# --- area ----------------------------------------------------------------------------------------------------------


@jit(inline=True)  # one caller
def area_bid(rng, view, pos, t, j, bot):
    """``area``: each character valued mostly by its cube (our area points against the rival who would gain most
    from it, more the fuller the area), the Spy and the Apothecary by their best move, more as the board fills;
    the bid planned on the ``focus`` most valuable targets alone."""
    me, tokens, free, add = view.me, view.tokens, view.free, pos.add
    S, T, C, A = t.seats, t.targets, t.n_characters, t.areas
    spy, apothecary, puppet = t.spy, t.apothecary, t.puppet
    legal, char_area, spaces = t.legal, t.char_area, t.spaces
    samples, mirror, focus, max_group, improve = bot.samples, bot.mirror, bot.focus, bot.max_group, bot.improve
    D = changes_if_won(pos, view, t, j)
    G = gains(pos, D, j, t)
    area_part = np.zeros(T)
    fill = np.empty(A)
    for a in range(A):
        fill[a] = 1.0 - free[a] / spaces[a]
    buf = np.empty(S)
    for c in range(C):
        a = char_area[c]
        if a >= 0 and free[a] > 0:
            mine = gain(pos, add[a, 0], me, j, t, buf)
            least = np.inf  # the rival who would gain most from the cube
            for r in range(1, S):
                least = min(least, gain(pos, add[a, r], me, j, t, buf))
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
    model = model_rivals(rng, view, pos, G2, me, samples, mirror, t, j, bot)
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
        model = with_guy_terms(model, bot.guy_risk, model.scheming_worth, model.rival_scheming)
    return plan_bid(rng, model, tokens[0], max_group, improve, pos, t)


# --- the cubes: the Spy, the Apothecary, a Remove card -------------------------------------------------------------


@jit(inline=True)  # one caller
def cube_choice(rng, kind, view, pos, mask, t, j, bot):
    """Spy, Apothecary (both picks) and Remove: the legal choice that raises our margin most (the Apothecary's
    first pick at its best swap), ties broken at random; decline where allowed when no choice gains more than
    ``decline_below``."""
    me, for_puppet = view.me, view.for_puppet
    a1, s1 = view.apothecary_first  # the Apothecary's first cube (second pick)
    move, movable = pos.move, pos.movable
    S, A, puppet = t.seats, t.areas, t.puppet
    decline_below = bot.decline_below
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
                            gain_of[a, v] = max(gain_of[a, v], gain(pos, change, me, j, t, buf))
    else:
        for a in range(A):
            for v in range(S):
                if not mask[1 + a * S + v]:
                    continue
                if kind == K_SPY:
                    owner = puppet if for_puppet else me
                    gain_of[a, v] = gain(pos, move[a, v, owner], me, j, t, buf)
                elif kind == K_REMOVE:
                    removal_change(pos, view, a, v, t, j, change)
                    gain_of[a, v] = gain(pos, change, me, j, t, buf)
                else:  # the Apothecary's second cube: the first pick's owner s1 swaps with v
                    for x in range(S + 1):
                        change[x] = move[a1, s1, v, x] + move[a, v, s1, x]
                    gain_of[a, v] = gain(pos, change, me, j, t, buf)
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


# --- Guy's bids (two players) --------------------------------------------------------------------------------------


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
def guy_bid(rng, view, pos, mask, t, j):
    """Place one bid for Guy: the option with the best change in our margin once the opponent has answered with
    its own best placement (two plies; its options are ours seen from its seat); pass where allowed if nothing
    beats passing."""
    bids, guy_bids = view.bids, view.guy_bids
    guy = view.tokens[t.puppet]
    C, guy_legal = t.n_characters, t.guy_legal
    G = gains(pos, changes_if_won(pos, view, t, j), j, t)
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


# --- the rows ------------------------------------------------------------------------------------------------------


@jit
def _decide_row(rng, kind, view, pos, mask, action, t, j, bot):
    """One row's decision into ``action`` (zeroed), ``kind`` being a decision. A function of its own, not inlined,
    so that the row's own arrays (``view``, ``pos``), which its caller holds for the whole call, are borrowed here
    by everything the decision calls (``common.jit.borrowed``: no reference counted per call)."""
    view, pos = borrowed(view), borrowed(pos)
    if kind == K_BID:
        if bot.style == VALUE:
            bid = value_bid(rng, view, pos, t, j, bot)
        elif bot.style == BARGAIN:
            bid = bargain_bid(rng, view, pos, t, j, bot)
        else:
            bid = area_bid(rng, view, pos, t, j, bot)
        for k in range(3):  # Codec.action_from_bid: each type's tokens in target order
            d = t.block[k]
            for c in range(t.targets):
                for _ in range(bid[c, k]):
                    action[d] = c
                    d += 1
    elif kind == K_GUY:
        action[0] = guy_bid(rng, view, pos, mask, t, j)
    else:
        action[0] = cube_choice(rng, kind, view, pos, mask, t, j, bot)


@jit
def decide_rows(rng, observations, masks, tables, starts, settings, judgement, actions):
    """The bot's decision for each row of ``observations`` with ``masks``, in order, into ``actions``, drawing from
    ``rng``. Returns how many rows broke the mask and played the legal default instead (never expected).
    ``tables``, ``starts``, ``settings``, ``judgement``: the fields of :class:`.appraisal.Tables`,
    :class:`.appraisal.FeatureStarts`, :class:`Settings`, :class:`.appraisal.Judgement` as plain tuples."""
    observations, masks, actions = borrowed(observations), borrowed(masks), borrowed(actions)  # the caller's, for
    tables, judgement = borrowed(tables), borrowed(judgement)  # the whole call: no reference counted for them
    t, at, bot, j = Tables(*tables), FeatureStarts(*starts), Settings(*settings), Judgement(*judgement)
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
        _decide_row(rng, kind, view, appraise(view, t, j), mask, action, t, j, bot)
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
def value_per_sample(rng, observation, bids, tables, starts, settings, judgement, out):
    """What each bid of ``bids`` (n, T, 3) is worth against each of ``value``'s samples of the rivals' bids in
    ``observation`` (drawn from ``rng``), into ``out`` (n, K); and, returned, what :func:`.bidding.bid_worth`
    expects of each, summed over the targets (the same averaged over the samples)."""
    t, at, bot, j = Tables(*tables), FeatureStarts(*starts), Settings(*settings), Judgement(*judgement)
    view = read_view(observation, t, at)
    pos = appraise(view, t, j)
    model = value_model(rng, view, pos, t, j, bot)
    values_per_sample(model, bids, pos, t, out)
    expected = np.zeros(bids.shape[0])
    row = np.empty(t.targets)
    for i in range(bids.shape[0]):
        for c in range(t.targets):
            row[c] = bid_worth(model, c, bids[i, c, 0], bids[i, c, 1], bids[i, c, 2], pos, t)
        expected[i] = pairwise_sum(row)
    return expected
