"""The per-game rules of the batched engine: plain loops over one game's slice of the batch arrays.

These functions mirror :class:`revolution_env.engine.game.Game` rule by rule (the scalar engine stays the
reference; ``tests/test_batched.py`` drives both with the same decisions and compares them). They are compiled
with Numba when it is installed (``pip install revolution-env[fast]``) and run as plain Python otherwise (the same
results, far more slowly). Set ``REVOLUTION_NO_NUMBA=1`` to force plain Python.

Why loops over games rather than NumPy over the batch for this part: resolution is a chain of small steps per
character that any game may leave at a decision (Spy, Apothecary, Guy, Remove); compiled, one game's round costs about
a microsecond, and the profile (``scripts/benchmark.py``) shows the batch-wide NumPy work around it (bids, masks,
observations) dominating.

The entry points (``*_many``) take ``st`` (the state arrays, see :data:`STATE_FIELDS`) and ``tb`` (the layout's
static tables, see :data:`TABLE_FIELDS`) as tuples, and borrow them (``common.jit.borrowed``): Numba counts a
reference, atomically, each time it binds an array to a name or passes one on, and ``perf`` had those counts at
nearly half of the compiled time of a step. An entry point that steps games allocates its work arrays
(:func:`scratch`) and hands them to its loop over the games (``*_all``), which, with every rule it calls, is
compiled without reference counting (``jit(refcounts=False)``): a borrowed array skips the atomic count but not
the runtime's two calls per binding, some 250 a game through :func:`advance` (a game's submitted bids resolved
in 1.47 us with them, 1.16 without). The functions inside take a game index ``g`` and only the arrays they use;
the small ones called from one place are inlined (``@jit(inline=True)``), and :func:`advance`, the largest, is
called, not inlined, since every inlined copy of it is compiled again.
"""

from __future__ import annotations

import numpy as np

from revolution_env.common.jit import COMPILED, borrowed, jit  # noqa: F401  (COMPILED: whether compiled)
from revolution_env.engine.components import Token
from revolution_env.engine.game import Decision, Phase

# Phases, decisions and token types as the plain ints the compiled loops read (defined once: Phase, Decision, Token).
BIDDING, SCHEMING, RESOLUTION, OVER = int(Phase.BIDDING), int(Phase.SCHEMING), int(Phase.RESOLUTION), int(Phase.OVER)
K_NONE, K_BID, K_GUY, K_SPY = int(Decision.NONE), int(Decision.BID), int(Decision.GUY), int(Decision.SPY)
K_APO1, K_APO2, K_REMOVE = int(Decision.APOTHECARY_FIRST), int(Decision.APOTHECARY_SECOND), int(Decision.REMOVE)
FORCE, BLACKMAIL, GOLD = int(Token.FORCE), int(Token.BLACKMAIL), int(Token.GOLD)

# Columns of the per-game integer record ``meta`` (N, N_META).
ROUND, PHASE, KIND, DSEAT, CURSOR, GUY_COUNT, GUY_FIRST, GUY_LAST, SPY_OWNER, APO_AREA, APO_SEAT = range(11)
TRUNCATED, REVEALED_ROUND = 11, 12
# The first edition's deck (D15): the shuffle in use (counted from 0, in slot DECK_SHUFFLE % C_SLOTS of ``deck``) and
# the cards left in its draw pile (its last DECK_LEFT entries).
DECK_SHUFFLE, DECK_LEFT, N_META = 13, 14, 15

# Entries of the configuration vector ``cfg``.
(C_CHARS, C_TARGETS, C_SEATS, C_PLAYERS, C_AREAS, C_PUPPET, C_SCHEMING, C_SPY, C_APO) = range(9)
(C_REFUNDS, C_ACB, C_MAX_ROUNDS, C_MAX_CHARS, C_PATRONAGE) = range(9, 14)
# The first edition: the Card space's target (-1: none), the Gold per seat that draws, the deck's size, shuffle slots.
(C_CARD, C_CARD_MAX, C_DECK, C_SLOTS, N_CFG) = range(14, 19)

STATE_FIELDS = (
    "tokens",  # (N, S, 3)
    "bank",  # (N, 3)
    "support",  # (N, S)
    "cubes",  # (N, A, S)
    "supply",  # (N, S)
    "bids",  # (N, S, T, 3) still on the bid boards
    "revealed",  # (N, S, T, 3) as placed, the puppet's included
    "winners",  # (N, T): -2 unresolved, -1 nobody, else seat
    "scheming_gold",  # (N, S)
    "meta",  # (N, N_META)
    "final_support",  # (N, S)
    "final_tokens",  # (N, S)
    "final_areas",  # (N, S)
    "final_win",  # (N, S) bool
    "deck",  # (N, C_SLOTS, D): shuffles of the deck (card indices), the one in use and those drawn ahead
    "card_queue",  # (N, S): cards each seat still draws from the Card space being resolved
    "drawn",  # (N, S, D): cards drawn this round per seat and card index
)
TABLE_FIELDS = ("cfg", "legal", "strength", "rewards", "char_support", "char_area", "spaces", "area_support",
                "token_points", "card_support", "card_tokens", "card_remove")  # fmt: skip


@jit(inline=True)
def scratch(cfg):
    """Work arrays that one batch call lends to each game in turn (``work``): a cube decision's targets (A, S), Guy's
    placements and their beats (C, 2, 2) and (C, 2, 3), and :func:`cube_targets`' tally (A + S); allocated once per
    call rather than once per game, by the entry points: their loops over the games, and everything those call,
    are compiled without reference counting (``jit(refcounts=False)``), where nothing may allocate."""
    C, A, S = cfg[C_CHARS], cfg[C_AREAS], cfg[C_SEATS]
    return (np.zeros((A, S), dtype=np.bool_), np.zeros((C, 2, 2), dtype=np.bool_),
            np.zeros((C, 2, 3), dtype=np.int64), np.zeros(A + S, dtype=np.int64))  # fmt: skip


@jit(refcounts=False)
def cube_targets(g, kind, cubes, supply, meta, cfg, spaces, out, tally):
    """(A, S) bool into ``out``: the cubes a ``kind`` decision (Spy, Apothecary, Remove) may pick now (D4, D5).
    ``tally`` (at least A + S int64): room to count in. Returns how many there are. One pass over the cubes (two for
    the Apothecary's first pick, whose rule counts them first), without branches on them: a fifth of the engine's
    time in a step of the vector env went here with a pass per condition and branches (1.9 calls a game-step)."""
    A, S = cfg[C_AREAS], cfg[C_SEATS]
    acb = cfg[C_ACB]
    # the seat whose cubes are out of reach (the Spy's owner, the Apothecary's first pick, the Remove card's drawer)
    # and the area (the Apothecary's first pick's); -1: none
    barred_seat, barred_area = -1, -1
    if kind == K_SPY:
        barred_seat = meta[g, SPY_OWNER]
        if supply[g, barred_seat] == 0:  # D2: no cube of his own to put in its place
            for a in range(A):
                for s in range(S):
                    out[a, s] = False
            return 0
    elif kind == K_APO2:
        barred_seat, barred_area = meta[g, APO_SEAT], meta[g, APO_AREA]
    elif kind == K_REMOVE:  # an opponent's cube, the drawer's own are out of reach (docs/rules.md §7)
        barred_seat = meta[g, DSEAT]
    apo1 = kind == K_APO1
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
    # the Apothecary's first pick: a cube with a partner of another owner in another area (``&``, not ``and``, which
    # compiles to a branch: whether a cube is pickable is as good as random to a branch predictor)
    total, n = n, 0
    for a in range(A):
        for s in range(S):
            ok = out[a, s] & (total - tally[a] - tally[A + s] + 1 > 0)
            out[a, s] = ok
            n += ok
    return n


@jit(refcounts=False)
def guy_options(g, tokens, bids, cfg, legal, ok, beat):
    """Guy's legal placements (D10, D11 revised): ``ok`` (C, 2, 2) over (character, answered player, tie/beat) and
    the beats' tokens ``beat`` (C, 2, 3). The same rule as ``engine.game.guy_beats``. Returns how many."""
    puppet = cfg[C_PUPPET]
    n = 0
    for c in range(cfg[C_CHARS]):
        open_ = c != cfg[C_CARD]  # none on the Card space, where there is no contest
        for t in range(3):
            if bids[g, puppet, c, t] > 0:
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
def can_decline(g, meta):
    kind = meta[g, KIND]
    if kind in (K_SPY, K_APO1):
        return True
    return kind == K_GUY and meta[g, GUY_COUNT] >= 2  # D12


@jit(inline=True)
def end_scheming(g, tokens, bank, meta, cfg):
    puppet = cfg[C_PUPPET]
    for t in range(3):
        bank[g, t] += tokens[g, puppet, t]  # Guy's unplaced tokens go to the bank
        tokens[g, puppet, t] = 0
    meta[g, KIND] = K_NONE
    meta[g, PHASE] = RESOLUTION


@jit(refcounts=False)
def next_guy_turn(g, tokens, bank, bids, meta, cfg, legal, work):
    puppet = cfg[C_PUPPET]
    held = tokens[g, puppet, 0] + tokens[g, puppet, 1] + tokens[g, puppet, 2]
    if meta[g, GUY_COUNT] >= 6 or held == 0:  # D12
        end_scheming(g, tokens, bank, meta, cfg)
        return
    if guy_options(g, tokens, bids, cfg, legal, work[1], work[2]) == 0:  # the player to act cannot place
        end_scheming(g, tokens, bank, meta, cfg)
        return
    first = meta[g, GUY_FIRST]
    meta[g, KIND] = K_GUY
    meta[g, DSEAT] = first if meta[g, GUY_COUNT] % 2 == 0 else 1 - first


@jit(refcounts=False)
def place_guy(g, c, answered, mode, tokens, bank, bids, revealed, meta, cfg, legal, work):
    """One Guy bid; returns False if it is not offered."""
    puppet = cfg[C_PUPPET]
    ok, beat = work[1], work[2]
    guy_options(g, tokens, bids, cfg, legal, ok, beat)
    if not ok[c, answered, mode]:
        return False
    for t in range(3):
        n = beat[c, answered, t] if mode == 1 else bids[g, answered, c, t]
        tokens[g, puppet, t] -= n
        bids[g, puppet, c, t] = n
        revealed[g, puppet, c, t] = n
    meta[g, GUY_COUNT] += 1
    meta[g, GUY_LAST] = meta[g, DSEAT]
    meta[g, KIND] = K_NONE
    next_guy_turn(g, tokens, bank, bids, meta, cfg, legal, work)
    return True


@jit(inline=True)
def priority_by_rule(g, bids, cfg, strength):
    """D9 on the cleaned bids of game ``g`` (as ``engine.game.priority_by_rule``): the seat placing Guy's first bid,
    or -1 where the rule comes to the coin flip."""
    sch = cfg[C_SCHEMING]
    gold0, gold1 = bids[g, 0, sch, GOLD], bids[g, 1, sch, GOLD]
    if gold0 != gold1:
        return 0 if gold0 > gold1 else 1
    best0 = best1 = where0 = where1 = 0  # each seat's strongest bid and its character (the first of equals)
    for c in range(cfg[C_CHARS]):
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
def place_cube(g, seat, area, cubes, supply, cfg, spaces):
    """One cube on an empty space; none if the area is full or the seat has no cube left (D2)."""
    filled = 0
    for s in range(cfg[C_SEATS]):
        filled += cubes[g, area, s]
    if supply[g, seat] > 0 and filled < spaces[area]:
        cubes[g, area, seat] += 1
        supply[g, seat] -= 1


@jit(inline=True)
def pay(g, seat, amount, tokens, bank):
    """Tokens ``amount`` (3,) from the bank to ``seat``, as far as the bank can pay (D1)."""
    for t in range(3):
        paid = min(amount[t], bank[g, t])
        bank[g, t] -= paid
        tokens[g, seat, t] += paid


@jit(inline=True)
def start_cards(g, c, bank, bids, winners, card_queue, cfg):
    """The Card space (docs/rules.md §7): no contest; all Gold placed there goes to the bank, refunds or not, and each
    Gold, up to the limit per seat, is a card for its owner to draw."""
    for s in range(cfg[C_SEATS]):
        card_queue[g, s] = min(bids[g, s, c, GOLD], cfg[C_CARD_MAX])
        for t in range(3):
            bank[g, t] += bids[g, s, c, t]
            bids[g, s, c, t] = 0
    winners[g, c] = -1


@jit(inline=True)
def draw_cards(g, st, tb, work):
    """The cards still to draw, seat by seat from seat 0, each resolved as it is drawn; stops at a Remove decision
    (docs/rules.md §7). An empty draw pile is the game's next shuffle of the whole deck (D15), drawn ahead into ``deck``
    by ``BatchedGame`` from the game's own seeded generator, as ``Game._shuffled_deck`` draws it."""
    tokens, bank, support, cubes, supply, meta = st[0], st[1], st[2], st[3], st[4], st[9]
    deck, card_queue, drawn = st[14], st[15], st[16]
    cfg, spaces, card_support, card_tokens, card_remove = tb[0], tb[6], tb[9], tb[10], tb[11]
    S, D = cfg[C_SEATS], cfg[C_DECK]
    seat = 0
    while meta[g, KIND] == K_NONE:
        while seat < S and card_queue[g, seat] == 0:
            seat += 1
        if seat == S:
            return
        card_queue[g, seat] -= 1
        if meta[g, DECK_LEFT] == 0:  # D15: reshuffled, discards included
            meta[g, DECK_SHUFFLE] += 1
            meta[g, DECK_LEFT] = D
        card = deck[g, meta[g, DECK_SHUFFLE] % cfg[C_SLOTS], D - meta[g, DECK_LEFT]]
        meta[g, DECK_LEFT] -= 1
        drawn[g, seat, card] += 1
        support[g, seat] += card_support[card]
        pay(g, seat, card_tokens[card], tokens, bank)
        if card_remove[card]:  # compulsory where an opponent's cube can be removed, else nothing to ask
            meta[g, DSEAT] = seat
            if cube_targets(g, K_REMOVE, cubes, supply, meta, cfg, spaces, work[0], work[3]) > 0:
                meta[g, KIND] = K_REMOVE


@jit(inline=True)
def score(g, tokens, support, cubes, meta, fin_support, fin_tokens, fin_areas, fin_win, cfg, spaces, area_support,
          token_points):  # fmt: skip
    S, P, puppet = cfg[C_SEATS], cfg[C_PLAYERS], cfg[C_PUPPET]
    meta[g, PHASE] = OVER
    meta[g, KIND] = K_NONE
    for s in range(S):
        fin_tokens[g, s] = tokens[g, s, 0] * token_points[0] + tokens[g, s, 1] * token_points[1]
        fin_tokens[g, s] += tokens[g, s, 2] * token_points[2]
        fin_areas[g, s] = 0
    for a in range(cfg[C_AREAS]):
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
            if cfg[C_ACB] and most == spaces[a]:
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


@jit(refcounts=False)
def advance(g, st, tb, work):
    """Run the rules until a decision is needed or the game is over: resolve the characters from the cursor
    (docs/rules.md §4: the strictly highest bid wins, tokens are spent, benefits come at once; the first edition's Card
    space draws its cards, §7), then end the round."""
    tokens, bank, support, cubes, supply, bids = st[0], st[1], st[2], st[3], st[4], st[5]
    winners, meta, card_queue = st[7], st[9], st[15]
    cfg, strength, rewards, char_support, char_area, spaces = tb[0], tb[2], tb[3], tb[4], tb[5], tb[6]
    C, S = cfg[C_CHARS], cfg[C_SEATS]
    card, refunds = cfg[C_CARD], cfg[C_REFUNDS]
    s0, s1, s2 = strength[0], strength[1], strength[2]
    while meta[g, KIND] == K_NONE and meta[g, PHASE] == RESOLUTION:
        if card >= 0:
            draw_cards(g, st, tb, work)  # the Card space's cards still to draw (none before it resolves)
            if meta[g, KIND] != K_NONE:
                break
        c = meta[g, CURSOR]
        if c >= C:
            end_round(g, st, tb)
            break
        meta[g, CURSOR] = c + 1
        if c == card:
            start_cards(g, c, bank, bids, winners, card_queue, cfg)
            continue
        # the strictly highest bid (docs/rules.md §3, §4), found as the character resolves (its bids are final once
        # Scheming is over, and nothing before its turn changes them), its bids read once for both: with the contest
        # of every target first, kept in state arrays for the loop, a bid round took 1.24 us a game, 1.0 this way
        top = 0
        w = -1
        count = 0
        for s in range(S):
            key = s0 * bids[g, s, c, 0] + s1 * bids[g, s, c, 1] + s2 * bids[g, s, c, 2]
            if key > top:
                top, w, count = key, s, 1
            elif key == top:
                count += 1
        if top == 0:
            winners[g, c] = -1  # nobody bid
            continue
        if count > 1:
            w = -1  # a tie: nobody wins
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
            continue
        support[g, w] += char_support[c]
        pay(g, w, rewards[c], tokens, bank)
        if char_area[c] >= 0:
            place_cube(g, w, char_area[c], cubes, supply, cfg, spaces)
        decider = meta[g, GUY_LAST] if w == cfg[C_PUPPET] else w  # Guy's choices: whoever placed his last bid
        kind = K_SPY if c == cfg[C_SPY] else (K_APO1 if c == cfg[C_APO] else K_NONE)
        if kind != K_NONE:
            if kind == K_SPY:
                meta[g, SPY_OWNER] = w
            if cube_targets(g, kind, cubes, supply, meta, cfg, spaces, work[0], work[3]) > 0:
                meta[g, KIND] = kind
                meta[g, DSEAT] = decider


@jit(inline=True)
def end_round(g, st, tb):
    tokens, bank, support, cubes, meta = st[0], st[1], st[2], st[3], st[9]
    cfg, spaces = tb[0], tb[6]
    S = cfg[C_SEATS]
    full = True
    for a in range(cfg[C_AREAS]):
        filled = 0
        for s in range(S):
            filled += cubes[g, a, s]
        if filled < spaces[a]:
            full = False
    over = full  # D6
    if not full and meta[g, ROUND] >= cfg[C_MAX_ROUNDS]:  # D8
        meta[g, TRUNCATED] = 1
        over = True
    if over:
        score(g, tokens, support, cubes, meta, st[10], st[11], st[12], st[13], cfg, spaces, tb[7], tb[8])
        return
    for s in range(S):  # Patronage, seat by seat from seat 0 (D17)
        want = cfg[C_PATRONAGE] - (tokens[g, s, 0] + tokens[g, s, 1] + tokens[g, s, 2])
        if want > 0:
            take = min(want, bank[g, GOLD])
            bank[g, GOLD] -= take
            tokens[g, s, GOLD] += take
    meta[g, ROUND] += 1
    meta[g, PHASE] = BIDDING
    meta[g, KIND] = K_BID
    meta[g, DSEAT] = 0


@jit(inline=True)
def choose(g, value, st, tb, work, checked=False):
    """Answer game ``g``'s pending non-bid decision: ``value`` -1 declines or passes; a cube decision's value is
    ``area * S + seat`` (absolute seat), a Guy placement's ``(character * 2 + answered_seat) * 2 + mode``.
    Returns False (and changes nothing) if the choice is not allowed; an allowed one is applied, and the caller then
    runs the rules on (:func:`advance`, called from one place so that it is compiled once). ``checked``: a cube choice
    known to be among the options (the random play's draw from the options it has just computed), not computed again
    (the engine's pass over 2,626 real bid rounds and 1,470 choices about 4% cheaper on one thread)."""
    tokens, bank, cubes, supply, bids, revealed, meta = st[0], st[1], st[3], st[4], st[5], st[6], st[9]
    cfg, legal, spaces = tb[0], tb[1], tb[6]
    S = cfg[C_SEATS]
    kind = meta[g, KIND]
    if kind in (K_NONE, K_BID):
        return False
    if value < 0:
        if not can_decline(g, meta):
            return False
        if kind == K_GUY:
            end_scheming(g, tokens, bank, meta, cfg)
        meta[g, KIND] = K_NONE
        meta[g, APO_AREA] = -1
        meta[g, APO_SEAT] = -1
        return True
    if kind == K_GUY:
        c = value // 4
        if c >= cfg[C_CHARS]:
            return False
        return place_guy(g, c, (value // 2) % 2, value % 2, tokens, bank, bids, revealed, meta, cfg, legal, work)
    area = value // S
    seat = value % S
    if area >= cfg[C_AREAS]:
        return False
    if not checked:
        ok = work[0]
        cube_targets(g, kind, cubes, supply, meta, cfg, spaces, ok, work[3])
        if not ok[area, seat]:
            return False
    meta[g, KIND] = K_NONE
    if kind == K_SPY:
        owner = meta[g, SPY_OWNER]
        cubes[g, area, seat] -= 1
        supply[g, seat] += 1
        cubes[g, area, owner] += 1
        supply[g, owner] -= 1
    elif kind == K_APO1:
        meta[g, APO_AREA] = area
        meta[g, APO_SEAT] = seat
        meta[g, KIND] = K_APO2
    elif kind == K_APO2:
        a1, s1 = meta[g, APO_AREA], meta[g, APO_SEAT]
        meta[g, APO_AREA] = -1
        meta[g, APO_SEAT] = -1
        cubes[g, a1, s1] -= 1
        cubes[g, a1, seat] += 1
        cubes[g, area, seat] -= 1
        cubes[g, area, s1] += 1
    else:
        cubes[g, area, seat] -= 1
        supply[g, seat] += 1
    return True


# --- over many games at once ---------------------------------------------------------------------------------


@jit
def submit_many(games, raw, given, coin, st, tb, hist_bids, hist_priority):
    """The players' bids ``raw`` (n, P, T, 3) of ``games``, already checked to place exactly the held tokens (D3):
    cleaned (illegal tokens, then bids past the sixth character, to the bank: docs/rules.md §3, D16, D18), recorded in
    the history, then Scheming (two players: D9's priority, ``given`` where >= 0 else the rule, else ``coin``) and
    resolution up to the next decision or the end. Returns the index of a game whose given priority contradicts
    the rule, or -1; the games after it are not changed then, and its bids are written but not resolved
    (``BatchedGame.submit_bids`` checks the given priority before it calls)."""
    st, tb = borrowed(st), borrowed(tb)
    return submit_all(games, raw, given, coin, st, tb, hist_bids, hist_priority, scratch(tb[0]))


@jit(refcounts=False)
def submit_all(games, raw, given, coin, st, tb, hist_bids, hist_priority, work):
    """:func:`submit_many`'s loop over the games, with its work arrays."""
    for i in range(len(games)):
        if not submit_game(games[i], i, raw, given[i], coin[i], st, tb, hist_bids, hist_priority, work):
            return i
    return -1


@jit(inline=True)
def submit_game(g, i, raw, given, coin, st, tb, hist_bids, hist_priority, work):
    """Game ``g``'s bids ``raw[i]`` (P, T, 3), as :func:`submit_many` takes them, cleaned, recorded and resolved up to
    the next decision or the end; False (and the bids written but not resolved) where the given priority (``given``
    >= 0) contradicts the rule."""
    tokens, bank, bids, revealed, winners, scheming_gold, meta, drawn = (
        st[0], st[1], st[5], st[6], st[7], st[8], st[9], st[16]
    )  # fmt: skip
    cfg, legal, strength = tb[0], tb[1], tb[2]
    C, T, S, P = cfg[C_CHARS], cfg[C_TARGETS], cfg[C_SEATS], cfg[C_PLAYERS]
    sch = cfg[C_SCHEMING]
    r = meta[g, ROUND] - 1
    for p in range(P, S):  # the puppet's seat: its bids come from the players' Guy placements
        for c in range(T):
            for t in range(3):
                revealed[g, p, c, t] = 0
                bids[g, p, c, t] = 0
    max_chars = cfg[C_MAX_CHARS]
    to_bank0 = to_bank1 = to_bank2 = 0  # the tokens each type sends to the bank, paid once
    for p in range(P):  # every entry of the players' rows is written
        if tokens[g, p, 0] + tokens[g, p, 1] + tokens[g, p, 2] <= max_chars:
            # too few tokens to bid on more characters than allowed (D16): only illegal tokens go to the bank, each
            # entry on its own (the general rule below was the hottest loop of the engine's pass over the games: that
            # pass over 4,096 real games 3.45 -> 3.27 ms with this one, one thread)
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
    meta[g, REVEALED_ROUND] = meta[g, ROUND]
    for c in range(T):
        winners[g, c] = -2
    for s in range(S):
        scheming_gold[g, s] = 0
        for k in range(cfg[C_DECK]):
            drawn[g, s, k] = 0  # the cards of the round before
    meta[g, CURSOR] = 0
    meta[g, KIND] = K_NONE
    if sch >= 0:
        ruled = priority_by_rule(g, bids, cfg, strength)
        if given >= 0 and ruled >= 0 and given != ruled:
            return False
        first = given if given >= 0 else (ruled if ruled >= 0 else coin)
        hist_priority[g, r] = first
        for s in range(S):  # Scheming Gold goes to the bank, whatever follows (docs/rules.md §6)
            gold = bids[g, s, sch, GOLD]
            scheming_gold[g, s] = gold
            bank[g, GOLD] += gold
            for t in range(3):
                bids[g, s, sch, t] = 0
        meta[g, PHASE] = SCHEMING
        meta[g, GUY_FIRST] = first
        meta[g, GUY_COUNT] = 0
        meta[g, GUY_LAST] = -1
        next_guy_turn(g, tokens, bank, bids, meta, cfg, legal, work)
    else:
        meta[g, PHASE] = RESOLUTION
    advance(g, st, tb, work)
    return True


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
    """Whether game ``g``'s bids ``raw[i]`` (P, T, 3) place other than exactly what each player holds, or hold a
    negative count."""
    for p in range(raw.shape[1]):  # noqa: SIM110  (Numba compiles no generator expression)
        if misplaced_seat(g, i, p, raw, tokens):
            return True
    return False


@jit(inline=True)
def misplaced_seat(g, i, p, raw, tokens):
    """Whether seat ``p``'s bids in ``raw[i]`` place other than exactly what it holds in game ``g``, or hold a negative
    count."""
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
def choose_many(games, values, st, tb, hist, ok):
    """:func:`choose` for each game, each choice made recorded for export (``hist``: :func:`record_choice`'s);
    ``ok[i]`` says whether game ``games[i]``'s choice was allowed."""
    st, tb = borrowed(st), borrowed(tb)
    choose_all(games, values, st, tb, hist, ok, scratch(tb[0]))


@jit(refcounts=False)
def choose_all(games, values, st, tb, hist, ok, work):
    """:func:`choose_many`'s loop over the games, with its work arrays."""
    meta = st[9]
    for i in range(len(games)):
        g = games[i]
        kind, r = meta[g, KIND], meta[g, ROUND] - 1
        ok[i] = choose(g, values[i], st, tb, work)
        if ok[i]:
            record_choice(g, r, kind, values[i], hist)
            advance(g, st, tb, work)


@jit
def options_many(games, st, tb, cube_out, guy_out, decline_out):
    """The legal choices of each game's pending non-bid decision: cubes (n, A, S), Guy placements (n, C, 2, 2),
    whether declining is allowed (n,)."""
    st, tb = borrowed(st), borrowed(tb)
    tokens, cubes, supply, bids, meta = st[0], st[3], st[4], st[5], st[9]
    cfg, legal, spaces = tb[0], tb[1], tb[6]
    beat, tally = scratch(cfg)[2:]
    for i in range(len(games)):
        g = games[i]
        kind = meta[g, KIND]
        decline_out[i] = can_decline(g, meta)
        if kind == K_GUY:
            guy_options(g, tokens, bids, cfg, legal, guy_out[i], beat)
        elif kind >= K_SPY:
            cube_targets(g, kind, cubes, supply, meta, cfg, spaces, cube_out[i], tally)


# --- random play over many games -------------------------------------------------------------------------------
#
# ``engine.random_play``'s rule of thumb for the games of a BatchedGame (its ``random_bids`` and ``play_random``): the
# vector envs' ``random`` opponents (``arena.vector``). Each game draws from its own small generator (``state``, one
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
def _below(state, g, m):
    """A uniform integer in 0..m-1 from game ``g``'s generator (xorshift32), which it advances."""
    x = state[g]
    x ^= (x << 13) & _MASK32
    x ^= x >> 17
    x ^= (x << 5) & _MASK32
    state[g] = x
    return (x * m) >> 32


@jit
def random_bids_many(games, seats, tokens, targets, n_targets, state, out):
    """Random bids: each token that seat ``seats[i]`` of game ``games[i]`` holds to a uniform legal target of its
    type, counted into ``out[i, 0]`` ((n, 1, T, 3), zeroed here). ``targets[t, :n_targets[t]]``: type ``t``'s legal
    targets."""
    for i in range(len(games)):
        random_bid(games[i], seats[i], tokens, targets, n_targets, state, out, i, 0)


@jit(inline=True)
def random_bid(g, s, tokens, targets, n_targets, state, out, i, j):
    """Seat ``s`` of game ``g`` bids each token it holds on a uniform legal target of its type (drawn from the
    game's generator), counted into ``out[i, j]`` (T, 3), zeroed first."""
    for c in range(out.shape[2]):
        for t in range(3):
            out[i, j, c, t] = 0
    for t in range(3):
        for _ in range(tokens[g, s, t]):
            out[i, j, targets[t, _below(state, g, n_targets[t])], t] += 1


@jit
def play_random_many(games, random_seat, st, tb, state, hist_spy, hist_apothecary, hist_guy, hist_remove, once):
    """Random choices: while game ``games[i]`` waits for a non-bid decision (Guy, Spy, Apothecary, Remove) of a seat
    with ``random_seat[g, seat]``, a uniform draw over its legal options, declining counted as one more where it is
    allowed (the order of ``random_play.random_choice``), made, recorded for export and followed by the rules;
    ``once``: at most one choice per game (the first edition, whose deck the caller refills between choices).
    Returns the index of a game whose drawn choice the engine refused (never expected), or -1."""
    st, tb = borrowed(st), borrowed(tb)
    hist = (hist_spy, hist_apothecary, hist_guy, hist_remove)
    return play_random_all(games, random_seat, st, tb, state, hist, once, scratch(tb[0]))


@jit(refcounts=False)
def play_random_all(games, random_seat, st, tb, state, hist, once, work):
    """:func:`play_random_many`'s loop over the games, with its work arrays."""
    for i in range(len(games)):
        if not play_random_game(games[i], random_seat, st, tb, state, hist, once, work):
            return i
    return -1


@jit(inline=True)
def play_random_game(g, random_seat, st, tb, state, hist, once, work):
    """:func:`play_random_many`'s random choices in game ``g``; False where the engine refused one."""
    tokens, cubes, supply, bids, meta = st[0], st[3], st[4], st[5], st[9]
    cfg, legal, spaces = tb[0], tb[1], tb[6]
    S, A, C = cfg[C_SEATS], cfg[C_AREAS], cfg[C_CHARS]
    cube, guy, beat, tally = work
    while meta[g, KIND] >= K_GUY and random_seat[g, meta[g, DSEAT]]:
        kind = meta[g, KIND]
        if kind == K_GUY:
            n = guy_options(g, tokens, bids, cfg, legal, guy, beat)
        else:
            n = cube_targets(g, kind, cubes, supply, meta, cfg, spaces, cube, tally)
        k = _below(state, g, n + can_decline(g, meta))
        value = -1
        if k < n:  # the k-th option, in the order of np.argwhere
            if kind == K_GUY:
                for x in range(C * 4):
                    if guy[x // 4, (x // 2) % 2, x % 2]:
                        if k == 0:
                            value = x
                            break
                        k -= 1
            else:  # nested loops: a division per option took a tenth of the step's loop over the games
                x = 0
                for a in range(A):
                    for s in range(S):
                        if cube[a, s]:
                            if k == 0:
                                value = x
                            k -= 1
                        x += 1
        r = meta[g, ROUND] - 1
        if not choose(g, value, st, tb, work, True):
            return False
        record_choice(g, r, kind, value, hist)
        advance(g, st, tb, work)
        if once:
            break
    return True


@jit(inline=True)
def record_choice(g, r, kind, value, hist):
    """A non-bid choice made in round index ``r`` of game ``g``, recorded for export (``hist``: the Spy, Apothecary,
    Guy and Remove histories of ``BatchedGame``)."""
    hist_spy, hist_apothecary, hist_guy, hist_remove = hist
    if kind == K_SPY:
        hist_spy[g, r] = value
    elif kind == K_APO1:
        hist_apothecary[g, r, 0] = value
    elif kind == K_APO2:
        hist_apothecary[g, r, 1] = value
    else:  # Guy's placements and Remove cards: a list per round
        listed = hist_guy if kind == K_GUY else hist_remove
        j = 0
        while listed[g, r, j] != -2:
            j += 1
        listed[g, r, j] = value


# --- one step of many games: the decisions in, random seats' decisions drawn -----------------------------------

DECIDED, MISPLACED_BID, REFUSED_CHOICE, REFUSED_RANDOM = -1, 0, 1, 2  # step_many's outcome per game


@jit
def step_many(games, raw, values, random_seat, coin, st, tb, state, targets, n_targets, hist, play, outcome):
    """One decision of each of ``games``: where the game waits for bids, ``raw[i]`` (P, T, 3) with the rows of the
    seats with ``random_seat[g, seat]`` drawn here (:func:`random_bids_many`'s rule), checked (D3) and submitted as
    :func:`submit_many` does (``coin[i]``: D9's coin flip, where the rule comes to it); where it waits for a non-bid
    decision, the choice ``values[i]`` (:func:`choose`), recorded for export. Then, with ``play``, the random seats'
    non-bid decisions (:func:`play_random_many`'s rule) until another seat decides or the game ends. ``outcome[i]``:
    :data:`DECIDED`, or why the game was left as it was (the bids misplaced, the choice not allowed) or stopped (a
    random choice refused: never expected)."""
    st, tb = borrowed(st), borrowed(tb)
    step_all(games, raw, values, random_seat, coin, st, tb, state, targets, n_targets, hist, play, outcome,
             scratch(tb[0]))  # fmt: skip


@jit(refcounts=False)
def step_all(games, raw, values, random_seat, coin, st, tb, state, targets, n_targets, hist, play, outcome, work):
    """:func:`step_many`'s loop over the games, with its work arrays."""
    tokens, meta, cfg = st[0], st[9], tb[0]
    hist_bids, hist_priority = hist[0], hist[1]
    rest = (hist[2], hist[3], hist[4], hist[5])
    P = cfg[C_PLAYERS]
    for i in range(len(games)):
        g = games[i]
        kind = meta[g, KIND]
        outcome[i] = DECIDED
        if kind == K_BID:
            bad = False
            for s in range(P):
                if random_seat[g, s]:  # placed exactly what the seat holds, by construction
                    random_bid(g, s, tokens, targets, n_targets, state, raw, i, s)
                else:
                    bad |= misplaced_seat(g, i, s, raw, tokens)
            if bad:
                outcome[i] = MISPLACED_BID
                continue
            submit_game(g, i, raw, -1, coin[i], st, tb, hist_bids, hist_priority, work)
        else:
            r = meta[g, ROUND] - 1
            if not choose(g, values[i], st, tb, work):
                outcome[i] = REFUSED_CHOICE
                continue
            record_choice(g, r, kind, values[i], rest)
            advance(g, st, tb, work)
        if play and not play_random_game(g, random_seat, st, tb, state, rest, False, work):
            outcome[i] = REFUSED_RANDOM
