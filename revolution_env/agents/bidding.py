"""The rivals' bids as samples, what a bid of ours is worth against them, and a bid planned token by token: how the
heuristic bots bid (:mod:`.heuristics` has each style's idea; :mod:`.appraisal` the worth of what a bid wins).

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
Gold buys priority. The targets are independent.

**The random draws** are NumPy's algorithms, on the bot's own ``numpy.random.Generator`` through the methods that
Numba compiles (``random``, ``binomial``, ``standard_gamma``): :func:`multinomial` (a binomial per category),
:func:`dirichlet` (gamma variates, or stick-breaking with :func:`beta` variates when every alpha is below 0.1)
and :func:`beta` (Johnk's algorithm with NumPy's log-space branch for underflow) are written here as NumPy's C
code has them, so that compiled and plain Python draw the same numbers and the decisions stay those recorded in
``tests/golden/bots/``.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

from revolution_env.agents.appraisal import NEG, card_value, guy_beat, pairwise_sum, stable_order
from revolution_env.common.jit import COMPILED, borrowed, jit
from revolution_env.engine.kernels import GOLD  # an int, for compiled code

VEHICLE = 0.8  # two players: the chance that we get to make Guy beat one of our own bids


# --- NumPy's random draws ------------------------------------------------------------------------------------------


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


@jit
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


# --- the rivals' bids ----------------------------------------------------------------------------------------------


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
def sample_tokens(rng, n, k, weight, last, habit, K, t, bot, out):
    """K samples of where one rival puts its ``n`` tokens of type ``k`` (``weight``: its interest in each target;
    ``habit`` samples repeat its bid ``last``), added into ``out`` (K, T) times the type's strength."""
    legal, bid_count, strength = t.bid_targets[k], t.bid_count[k], t.strength[k]
    spread, inner_samples, default_clumping = bot.spread, bot.inner_samples, bot.clumping
    T = weight.shape[0]
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


@jit
def sample_rival(rng, view, G, j, K, mirrored, card_value, t, bot, keys_j):
    """Rival ``j``'s bids sampled from its interests and habits, as keys, into rows ``mirrored:`` of ``keys_j``
    (K, T) (the first ``mirrored`` are planned, :func:`model_rivals`)."""
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
    if last.any():  # rivals tend to bid again where they bid last round
        for c in range(T):
            bid_on = last[c, 0] + last[c, 1] + last[c, 2] > 0
            weight[c] = weight[c] * (1.0 + persistence * bid_on)
    for k in range(3):
        n = tokens[j, k]
        if n:
            sample_tokens(rng, n, k, weight, last, habit, K - mirrored, t, bot, keys_j[mirrored:])


@jit
def _model_from_rival_bids(pos, view, G, seat, K, rivals, keys, card_value, t, bot):
    """The :class:`BidModel` once the rivals' bids (``keys``: rival, sample, target) are drawn."""
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
        card_value=card_value,
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
def _interest_model(rng, view, pos, G, seat, K, t, judgement, bot):
    """Every rival's bids as ``seat`` samples them from the rivals' interests and habits alone (no level one)."""
    T, P, card = t.targets, t.players, t.card
    value_of_card = card_value(pos, view, seat, t, judgement) if card >= 0 else 0.0
    rivals = _rivals(seat, P)
    keys = np.zeros((rivals.shape[0], K, T), dtype=np.int64)
    unmirrored = np.int64(0)  # not the literal 0: Numba would compile sample_rival a second time for it
    for i in range(rivals.shape[0]):
        sample_rival(rng, view, G, rivals[i], K, unmirrored, value_of_card, t, bot, keys[i])
    return _model_from_rival_bids(pos, view, G, seat, K, rivals, keys, value_of_card, t, bot)


@jit
def model_rivals(rng, view, pos, G, seat, K, mirror, t, judgement, bot):
    """The rivals' bids as ``seat`` samples them (``K`` samples; ``G``: every seat's change in margin per target
    won, :func:`.appraisal.gains`): a share ``mirror`` of the samples of each levelled rival (the best armed
    ``mirror_rivals``) is the bid it would plan if it thought as we do (:func:`plan_bid` against rivals sampled
    from their interests); the rest sampled from its interests and habits."""
    view, pos, G = borrowed(view), borrowed(pos), borrowed(G)  # arguments: the caller's for the whole call
    tokens = view.tokens
    T, P, card, token_points, strength = t.targets, t.players, t.card, t.token_points, t.strength
    mirror_rivals, inner_samples = bot.mirror_rivals, bot.inner_samples
    inner_max_group, inner_improve = bot.inner_max_group, bot.inner_improve
    value_of_card = card_value(pos, view, seat, t, judgement) if card >= 0 else 0.0
    rivals = _rivals(seat, P)
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
        sample_rival(rng, view, G, j, K, mirrored, value_of_card, t, bot, keys[i])
        if mirrored:  # level one: the rival plans its bid as we do, against rivals that bid by interest
            inner = _interest_model(rng, view, pos, G, j, inner_samples, t, judgement, bot)
            plan = plan_bid(rng, inner, tokens[j], inner_max_group, inner_improve, pos, t)
            for c in range(T):
                key = plan[c, 0] * strength[0] + plan[c, 1] * strength[1] + plan[c, 2] * strength[2]
                for m in range(mirrored):
                    keys[i, m, c] = key
    return _model_from_rival_bids(pos, view, G, seat, K, rivals, keys, value_of_card, t, bot)


# --- what a bid is worth -------------------------------------------------------------------------------------------


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
def bid_worth(model, c, f, b, g, pos, t):
    """What a bid of (f, b, g) on target ``c`` is worth against the sampled rivals' bids (the module's docstring).
    The Card space: its Gold at the card's value; Scheming: priority over Guy's bid, worth ``scheming_worth``."""
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


# --- planning a bid ------------------------------------------------------------------------------------------------


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
def plan_bid(rng, model, tokens, max_group, improve, pos, t):
    """Place every token, strongest first, each time on the target (and in the number, at most ``max_group``)
    that adds most value per token, ties broken at random; then move single tokens while that helps (at most
    ``improve`` moves). At most six characters carry tokens (docs/rules.md §3)."""
    model, pos = borrowed(model), borrowed(pos)  # arguments: the caller's for the whole call
    T, legal, scheming, max_characters = t.targets, t.legal, t.scheming, t.max_characters
    bid = np.zeros((T, 3), dtype=np.int64)
    current = np.empty(T)
    for c in range(T):
        current[c] = bid_worth(model, c, bid[c, 0], bid[c, 1], bid[c, 2], pos, t)
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
                        gain = bid_worth(model, c, trial[0], trial[1], trial[2], pos, t) - current[c]
                        v = gain / (m + 1) + noise[m, c]
                    else:
                        v = NEG
                    if v > best:
                        best, bm, bc = v, m, c
            bid[bc, k] += bm + 1
            left -= bm + 1
            current[bc] = bid_worth(model, bc, bid[bc, 0], bid[bc, 1], bid[bc, 2], pos, t)
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
        current[c] = bid_worth(model, c, bid[c, 0], bid[c, 1], bid[c, 2], pos, t)
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
            gain_add[c] = bid_worth(model, c, trial[0], trial[1], trial[2], pos, t) - current[c]
            if bid[c, k] > 0:
                trial[k] -= 2
                gain_take[c] = bid_worth(model, c, trial[0], trial[1], trial[2], pos, t) - current[c]
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
