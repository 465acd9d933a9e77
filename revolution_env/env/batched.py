"""Observations and masks of many games at once, from a :class:`revolution_env.engine.batched.BatchedGame`.

:class:`BatchedView` gives, for any list of (game, seat) pairs, exactly the vectors that
``ObservationLayout.build`` and ``Codec.mask`` give for the same state and seat (``tests/test_batched.py`` checks
this element for element): the observations in one compiled loop over the games (:func:`observe_many`), the masks
in another (:func:`masks_many`: the bid blocks from the tokens held, the other decisions' (Guy, Spy, Apothecary,
Remove) from the engine's compiled options; a third faster than the NumPy gathers it replaces, and one code for the
choice masks too).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from revolution_env.common.jit import borrowed, in_parts, read_only
from revolution_env.engine import kernels as K
from revolution_env.engine.batched import BatchedGame, count_type
from revolution_env.engine.kernels import (
    C_APO,
    C_AREAS,
    C_CHARS,
    C_MAX_ROUNDS,
    C_PUPPET,
    C_SEATS,
    C_SPY,
    C_TARGETS,
    jit,
)
from revolution_env.env.encoding import Codec
from revolution_env.env.observation import ObservationLayout


def _indices(*arrays) -> tuple[np.ndarray, ...]:
    """Index arrays as the kernels take them: contiguous int64 (a strided slice would be another Numba type, and
    another compilation of each kernel on a fresh machine)."""
    return tuple(np.ascontiguousarray(a, dtype=np.int64) for a in arrays)


class BatchedView:
    """The seat-relative observation and the flat mask of many games of one layout."""

    def __init__(self, codec: Codec, obs_layout: ObservationLayout) -> None:
        self.codec = c = codec
        self.ol = ol = obs_layout
        L = c.layout
        self.layout = L
        self.perm = np.stack(c.perm)  # (P, S): relative -> absolute seat
        self.inv = np.stack(c.inv)  # (P, S): absolute -> relative seat
        self.at = ol._at
        self.sl = ol._slices
        self.starts = np.array([ol._at.get(name, -1) for name in FEATURES], dtype=np.int64)
        # the first edition: each card of the deck as its type (the columns of cards_drawn and deck_left)
        self.card_type = ol._card_type.astype(np.int64) if ol.first_edition else np.zeros(0, dtype=np.int64)
        # bid actions: the token dimensions (0..K-1, action column d + 1) of each type in a block, one per token, its
        # first dimension and its number of dimensions
        self.blocks = np.array([[int(c.block[t]) - 1 for t in range(3)], list(c.n_tokens)], dtype=np.int64)
        # what masks_many reads of the codec: C, T, then each token type's first column, then how many it has
        first = [c.C + (int(c.block[t]) - 1) * c.T for t in range(3)]
        self.codes = np.array([c.C, c.T, *first, *c.n_tokens], dtype=np.int64)
        self.count_type = count_type(L)  # the bids' integer type, as BatchedGame.step takes them

    # --- what each seat is asked -------------------------------------------------------------------------------

    def kinds(self, game: BatchedGame, games: np.ndarray, seats: np.ndarray) -> np.ndarray:
        """The :class:`Decision` each seat faces (bids: every player; other decisions: the decider only)."""
        kind = game.meta[games, K.KIND]
        mine = (kind == K.K_BID) | (game.meta[games, K.DSEAT] == seats)
        return np.where(mine, kind, K.K_NONE)

    # --- observations and masks --------------------------------------------------------------------------------

    def observe(self, game: BatchedGame, games: np.ndarray, seats: np.ndarray, kinds: np.ndarray) -> np.ndarray:
        """(n, size) float32: ``ObservationLayout.build(game_i, seat_i, kind_i)`` for every pair."""
        return self._passes(game, games, seats, kinds, observe=True, mask=False)[0]

    def masks(self, game: BatchedGame, games: np.ndarray, seats: np.ndarray, kinds: np.ndarray) -> np.ndarray:
        """(n, sum(nvec)) bool: ``Codec.mask(game_i, seat_i, kind_i)`` for every pair."""
        return self._passes(game, games, seats, kinds, observe=False, mask=True)[1]

    def observe_and_mask(
        self, game: BatchedGame, games: np.ndarray, seats: np.ndarray, kinds: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray]:
        """:meth:`observe` and :meth:`masks` in one pass side by side: each part's rows observed, then masked, by the
        same thread (one hand-off between threads instead of two, and the part's games read while in its cache)."""
        return self._passes(game, games, seats, kinds, observe=True, mask=True)

    def _passes(
        self, game: BatchedGame, games: np.ndarray, seats: np.ndarray, kinds: np.ndarray, observe: bool, mask: bool
    ) -> tuple[np.ndarray | None, np.ndarray | None]:
        """The observations and the masks asked for (None for the other), the rows in parts side by side."""
        g, seats, kinds = _indices(games, seats, kinds)
        # each row zeroed by the loop that fills it
        obs = np.empty((len(g), self.ol.size), dtype=np.float32) if observe else None
        m = np.empty((len(g), self.codec.size), dtype=bool) if mask else None
        in_parts(len(g), self.observer(game, g, seats, kinds, obs, m))
        return obs, m

    def observer(
        self,
        game: BatchedGame,
        games: np.ndarray,
        seats: np.ndarray,
        kinds: np.ndarray,
        obs: np.ndarray | None,
        masks: np.ndarray | None,
        fresh: bool = False,
    ) -> Callable[[int, int], None]:
        """``part(lo, hi)``: the observations (into ``obs``, (n, size) float32) and the masks (into ``masks``, (n,
        sum(nvec)) bool) of the rows ``lo:hi`` of ``games`` and ``seats`` (contiguous int64), each None where not
        wanted, facing ``kinds``; with ``fresh``, facing the decisions they face when the part runs (:meth:`kinds`,
        written into ``kinds``), for a caller that changes the games in the same part first."""
        st, tb, tables = game._st, game._tb, (self.perm, self.inv, self.starts, self.card_type)
        perm, codes = self.perm, self.codes

        def part(lo: int, hi: int) -> None:
            g, s, k = games[lo:hi], seats[lo:hi], kinds[lo:hi]
            if fresh:
                k[:] = self.kinds(game, g, s)
            if obs is not None:
                observe_many(g, s, k, st, tb, *tables, obs[lo:hi])
            if masks is not None:
                masks_many(g, s, k, st, tb, perm, codes, masks[lo:hi])

        return part

    def choice_masks(self, game: BatchedGame, games: np.ndarray, seats: np.ndarray, kinds: np.ndarray) -> np.ndarray:
        """(n, C) bool: dimension 0 of the masks of games whose seat faces a non-bid decision (Guy, Spy,
        Apothecary, Remove): 0 where declining is allowed, then the options in the seat's relative terms."""
        return self.masks(game, games, seats, kinds)[:, : self.codec.C]

    # --- actions -----------------------------------------------------------------------------------------------

    def legal(self, actions: np.ndarray, masks: np.ndarray) -> np.ndarray:
        """(n,) bool: each action (n, D) satisfies its mask dimension by dimension."""
        c = self.codec
        a = np.asarray(actions)
        if a.ndim != 2 or a.shape[1] != len(c.nvec) or a.dtype.kind not in "iu":
            raise ValueError(f"actions: expected integers of shape (num_envs, {len(c.nvec)}), got {a.shape}")
        ok = np.zeros(len(a), dtype=bool)
        legal_many(np.ascontiguousarray(a, dtype=np.int64), read_only(masks), c.nvec, c.offsets, ok)
        return ok

    def bid_counts(self, actions: np.ndarray, held: np.ndarray) -> np.ndarray:
        """(n, T, 3) token counts per target from bid actions (n, D) and the tokens held (n, 3)."""
        n = len(actions)
        out = np.empty((n, 1, self.codec.T, 3), dtype=self.count_type)
        self.bid_counts_into(out, np.arange(n), np.zeros(n, dtype=np.int64), actions, held)
        return out[:, 0].astype(np.int64)

    def bid_counts_into(
        self, out: np.ndarray, rows: np.ndarray, seats: np.ndarray, actions: np.ndarray, held: np.ndarray
    ) -> None:
        """:meth:`bid_counts` of each action written into ``out[rows[i], seats[i]]``: ``out`` (m, players, T, 3) holds
        the bids of games as ``BatchedGame.step`` takes them."""
        actions, held, rows, seats = _indices(actions, held, rows, seats)
        if not self._bids_form(out):
            raise ValueError(f"out: {self._bids_expected()}")
        if len(rows) and (rows.min() < 0 or rows.max() >= len(out) or seats.min() < 0 or seats.max() >= out.shape[1]):
            raise ValueError("rows, seats: outside out")
        bid_counts_many(actions, held, self.blocks, rows, seats, out)

    def decider(
        self,
        actions: np.ndarray,
        masks: np.ndarray,
        kinds: np.ndarray,
        games: np.ndarray,
        seats: np.ndarray,
        tokens: np.ndarray,
        bids: np.ndarray,
        values: np.ndarray,
    ) -> tuple[np.ndarray, Callable[[int, int], None]]:
        """Bid-mode actions (n, D) of the seats ``seats`` of ``games``, facing ``kinds``, to be checked and read in
        one pass: returns ``ok`` (n,) bool and ``part(lo, hi)``, which fills ``ok[lo:hi]`` with whether each of the
        rows ``lo:hi`` satisfies its mask (:meth:`legal`; a row with nothing to decide passes) and, where it does,
        counts a bid into ``bids[game, seat]`` (``bids``: (G, players, T, 3), :meth:`bid_counts`'s counts, from the
        tokens held in ``tokens``) or writes a choice as the engine's value into ``values[game]``
        (:meth:`engine_choices`). Each (game, seat) at most once. The caller runs the parts (``in_parts(n, part)``,
        or with other work on the same rows); the arguments are checked here, since the parts write unchecked."""
        c = self.codec
        actions, kinds, games, seats = _indices(actions, kinds, games, seats)
        n = len(actions)
        same = {len(kinds), len(games), len(seats)} == {n}
        if actions.shape != (n, len(c.nvec)) or masks.shape != (n, c.size) or not same:
            raise ValueError("decide: actions, masks, kinds, games and seats of one row each")
        if not self._bids_form(bids):
            raise ValueError(f"bids: {self._bids_expected()}")
        G, P = bids.shape[:2]
        if len(tokens) != G or tokens.shape[1] < P or values.shape != (G,) or values.dtype != np.int64:
            raise ValueError("decide: tokens, bids and values of the same games (values: int64)")
        if n and (games.min() < 0 or games.max() >= G or seats.min() < 0 or seats.max() >= P):  # written unchecked
            raise ValueError("decide: games or seats outside bids")
        ok = np.empty(n, dtype=bool)
        masks = read_only(masks)
        tables = (c.nvec, c.offsets, self.blocks, self.perm)

        def part(lo: int, hi: int) -> None:
            decide_many(actions[lo:hi], masks[lo:hi], kinds[lo:hi], games[lo:hi], seats[lo:hi], tokens, *tables,
                        ok[lo:hi], bids, values)  # fmt: skip

        return ok, part

    def _bids_form(self, bids: np.ndarray) -> bool:
        """Whether ``bids`` holds the bids of games as ``BatchedGame.step`` takes them."""
        return (isinstance(bids, np.ndarray) and bids.dtype == self.count_type and bids.ndim == 4
                and bids.shape[2:] == (self.codec.T, 3) and bids.flags.c_contiguous)  # fmt: skip

    def _bids_expected(self) -> str:
        name = np.dtype(self.count_type).name
        return f"expected a contiguous {name} array (count_type) of shape (m, players, {self.codec.T}, 3)"

    def engine_choices(self, values: np.ndarray, seats: np.ndarray, kinds: np.ndarray) -> np.ndarray:
        """The engine's choice values (-1 declines; absolute seats) from dimension 0 of the actions."""
        values, seats, kinds = _indices(values, seats, kinds)
        if not len(values) == len(seats) == len(kinds):
            raise ValueError("engine_choices: values, seats and kinds of one row each")
        if len(seats) and (seats.min() < 0 or seats.max() >= len(self.perm)):  # read unchecked
            raise ValueError(f"engine_choices: seats from 0 to {len(self.perm) - 1}")
        out = np.empty(len(values), dtype=np.int64)
        engine_choices_many(values, seats, kinds, self.perm, out)
        return out


# The features observe_many writes, in this order (the names of ObservationLayout; -1 where a variant has none).
FEATURES = ("round", "rounds_left", "phase", "decision", "for_puppet", "can_decline", "tokens", "support", "supply",
            "bank", "cubes", "bids", "free", "bids_current", "winners", "apothecary_first", "scheming_gold",
            "guy_bids", "guy_last_placer", "final_support", "cards_drawn", "deck_left")  # fmt: skip


@jit
def observe_many(games, seats, kinds, st, tb, perm, inv, at, card_type, out):
    """``ObservationLayout.build`` for each (game, seat, kind), into the rows of ``out`` (each zeroed here first: in
    the cache and in the parts side by side, where a zeroed array is a pass of its own); ``card_type`` maps the
    first edition's deck to the card types of ``cards_drawn`` and ``deck_left``."""
    st, tb, out = borrowed(st), borrowed(tb), borrowed(out)  # the caller's, for the whole call
    tokens, support, cubes, supply, bank, revealed = st[0], st[2], st[3], st[4], st[1], st[6]
    winners, scheming_gold, meta, final_support = st[7], st[8], st[9], st[10]
    deck, drawn = st[14], st[16]
    cfg, spaces = tb[0], tb[6]
    D = cfg[K.C_DECK]
    n_types = 0
    for k in range(D):
        n_types = max(n_types, card_type[k] + 1)
    S, A, T = cfg[C_SEATS], cfg[C_AREAS], cfg[C_TARGETS]
    puppet = cfg[C_PUPPET]
    # the columns of the features written in loops, as locals: read from ``at`` after each store to ``out``, which
    # might be the same memory
    at6, at7, at8, at10, at11, at12, at14 = at[6], at[7], at[8], at[10], at[11], at[12], at[14]
    for i in range(len(games)):
        g, seat, kind = games[i], seats[i], kinds[i]
        o = out[i]
        o[:] = 0
        rnd, phase = meta[g, K.ROUND], meta[g, K.PHASE]
        o[at[0]] = rnd
        o[at[1]] = cfg[C_MAX_ROUNDS] - rnd
        o[at[2] + phase] = 1
        o[at[3] + kind] = 1
        if kind >= K.K_GUY:
            decline = kind in (K.K_SPY, K.K_APO1) or (kind == K.K_GUY and meta[g, K.GUY_COUNT] >= 2)
            o[at[5]] = decline
            if puppet >= 0 and K.K_SPY <= kind <= K.K_APO2:
                who = cfg[C_SPY] if kind == K.K_SPY else cfg[C_APO]
                o[at[4]] = winners[g, who] == puppet
            if kind == K.K_APO2:
                o[at[15] + meta[g, K.APO_AREA] * S + inv[seat, meta[g, K.APO_SEAT]]] = 1
        for r in range(S):
            s = perm[seat, r]
            for t in range(3):
                o[at6 + r * 3 + t] = tokens[g, s, t]
            o[at7 + r] = support[g, s]
            o[at8 + r] = supply[g, s]
            for a in range(A):
                o[at10 + a * S + r] = cubes[g, a, s]
            for c in range(T):
                for t in range(3):
                    o[at11 + (r * T + c) * 3 + t] = revealed[g, s, c, t]
        for t in range(3):
            o[at[9] + t] = bank[g, t]
        for a in range(A):
            free = spaces[a]
            for s in range(S):
                free -= cubes[g, a, s]
            o[at12 + a] = free
        revealed_round = meta[g, K.REVEALED_ROUND]
        this_round = revealed_round == rnd and phase != K.BIDDING
        o[at[13]] = revealed_round > 0 and this_round
        for c in range(T):
            w = winners[g, c]
            col = 0 if w == -2 else (1 if w == -1 else 2 + inv[seat, w])
            o[at14 + c * (S + 2) + col] = 1
        if puppet >= 0:
            for r in range(S):
                o[at[16] + r] = scheming_gold[g, perm[seat, r]]
            if this_round:
                o[at[17]] = meta[g, K.GUY_COUNT]
            last = meta[g, K.GUY_LAST]
            o[at[18] + (0 if last < 0 else 1 + inv[seat, last])] = 1
        if phase == K.OVER:
            for r in range(S):
                o[at[19] + r] = final_support[g, perm[seat, r]]
        if cfg[K.C_CARD] >= 0:  # the cards of `bids_round` per seat and type, and the types left in the draw pile
            for r in range(S):
                for k in range(D):
                    o[at[20] + r * n_types + card_type[k]] += drawn[g, perm[seat, r], k]
            slot = meta[g, K.DECK_SHUFFLE] % cfg[K.C_SLOTS]
            for j in range(D - meta[g, K.DECK_LEFT], D):
                o[at[21] + card_type[deck[g, slot, j]]] += 1


@jit
def masks_many(games, seats, kinds, st, tb, perm, codes, out):
    """``Codec.mask`` for each (game, seat, kind), into the rows of ``out`` (each zeroed here first). Dimension 0
    allows only 0, but for a non-bid decision: declining where allowed, then the engine's options in the seat's
    relative terms (Guy's placements over (character, answered seat with the seat's own first, tie/beat); cubes
    over (area, relative seat)). A token dimension allows its type's legal targets where the seat bids now and
    holds that token, else only 0."""
    st, tb, out = borrowed(st), borrowed(tb), borrowed(out)  # the caller's, for the whole call
    tokens, cubes, supply, bids, meta = st[0], st[3], st[4], st[5], st[9]
    cfg, legal, spaces = tb[0], tb[1], tb[6]
    S, A, n_chars = cfg[C_SEATS], cfg[C_AREAS], cfg[C_CHARS]
    T = codes[1]
    cube, guy, beat, tally = K.scratch(cfg)  # the engine's work arrays for its cube and Guy options
    by_type = np.empty((3, T), dtype=np.bool_)  # each type's legal targets, contiguous: a held token's block copied
    for t in range(3):
        for x in range(T):
            by_type[t, x] = legal[x, t]
    # each token type's first column and count as locals: read from ``codes`` after each store to ``out``, which
    # might be the same memory
    first0, first1, first2, count0, count1, count2 = codes[2], codes[3], codes[4], codes[5], codes[6], codes[7]
    for i in range(len(games)):
        g, seat, kind = games[i], seats[i], kinds[i]
        m = out[i]
        m[:] = False
        m[0] = True
        bidding = kind == K.K_BID
        mask_tokens(m, first0, count0, tokens[g, seat, 0] * bidding, by_type, 0, T)
        mask_tokens(m, first1, count1, tokens[g, seat, 1] * bidding, by_type, 1, T)
        mask_tokens(m, first2, count2, tokens[g, seat, 2] * bidding, by_type, 2, T)
        if kind == K.K_GUY:
            m[0] = K.can_decline(g, meta)
            guy[:] = False
            K.guy_options(g, tokens, bids, cfg, legal, guy, beat)
            for c in range(n_chars):
                for p in range(2):
                    answered = 1 - p if seat == 1 else p
                    for mode in range(2):
                        m[1 + (c * 2 + p) * 2 + mode] = guy[c, answered, mode]
        elif kind >= K.K_SPY:
            m[0] = K.can_decline(g, meta)
            cube[:] = False
            K.cube_targets(g, kind, cubes, supply, meta, cfg, spaces, cube, tally)
            for a in range(A):
                for r in range(S):
                    m[1 + a * S + r] = cube[a, perm[seat, r]]


@jit(inline=True)
def mask_tokens(m, first, count, held, by_type, t, T):
    """The ``count`` token dimensions of type ``t`` from column ``first`` of the mask row ``m``: the first ``held``
    allow the type's legal targets (``by_type[t]``), the others only target 0."""
    for j in range(min(held, count)):
        col = first + j * T
        for x in range(T):
            m[col + x] = by_type[t, x]
    for j in range(held, count):
        m[first + j * T] = True


@jit
def legal_many(actions, masks, nvec, offsets, ok):
    """Whether each action row satisfies its mask row, dimension by dimension (values outside a dimension fail)."""
    for i in range(actions.shape[0]):
        ok[i] = legal_row(actions, masks, i, nvec, offsets)


@jit(inline=True)
def legal_row(actions, masks, i, nvec, offsets):
    """Whether action row ``i`` satisfies mask row ``i``."""
    for d in range(actions.shape[1]):
        v = actions[i, d]
        if v < 0 or v >= nvec[d] or not masks[i, offsets[d] + v]:
            return False
    return True


@jit
def bid_counts_many(actions, held, blocks, rows, seats, out):
    """Each bid action's tokens counted per target and type into ``out[rows[i], seats[i]]`` (:func:`count_bid`)."""
    for i in range(actions.shape[0]):
        count_bid(actions, i, held[i], blocks, out, rows[i], seats[i])


@jit(inline=True)
def count_bid(actions, i, held, blocks, out, r, s):
    """Bid action row ``i``'s tokens counted per target and type into ``out[r, s]`` (T, 3), zeroed first: the token
    dimensions of type ``t`` are ``blocks[1, t]`` from dimension ``blocks[0, t]`` (action column ``d + 1`` for
    dimension ``d``), the first ``held[t]`` of them placed (the seat's tokens, (3,)), the others unread."""
    for c in range(out.shape[2]):
        for t in range(3):
            out[r, s, c, t] = 0
    for t in range(3):
        first = blocks[0, t] + 1
        for j in range(min(held[t], blocks[1, t])):
            target = actions[i, first + j]
            if target < 0 or target >= out.shape[2]:  # never expected: the actions are checked first
                raise IndexError("bid_counts: a token's target is out of range")
            out[r, s, target, t] += 1


@jit
def decide_many(actions, masks, kinds, games, seats, tokens, nvec, offsets, blocks, perm, ok, bids, values):
    """The bid mode's actions of many rows in one pass: ``ok[i]``, whether row ``i``'s action satisfies its mask (as
    :func:`legal_many`; a row with nothing to decide, ``kinds[i]`` 0, passes whatever its action); then, where it
    does, a bid counted into ``bids[games[i], seats[i]]`` (T, 3) (as :func:`bid_counts_many`, the tokens the seat
    holds in ``tokens``), a choice as the engine's value into ``values[games[i]]`` (as
    :func:`engine_choice`: -1 declines; absolute seats)."""
    for i in range(actions.shape[0]):
        kind = kinds[i]
        good = kind == K.K_NONE or legal_row(actions, masks, i, nvec, offsets)
        ok[i] = good
        if kind == K.K_NONE or not good:
            continue
        g, s = games[i], seats[i]
        if kind == K.K_BID:
            count_bid(actions, i, tokens[g, s], blocks, bids, g, s)
            continue
        values[g] = engine_choice(actions[i, 0], kind, s, perm)


@jit
def engine_choices_many(values, seats, kinds, perm, out):
    """:func:`engine_choice` of each row into ``out``."""
    for i in range(len(values)):
        out[i] = engine_choice(values[i], kinds[i], seats[i], perm)


@jit(inline=True)
def engine_choice(v, kind, s, perm):
    """The engine's choice value of dimension 0 of an action, ``v``, for seat ``s`` facing a non-bid decision
    ``kind``: -1 declines (``v`` 0); a Guy placement ``(character * 2 + answered seat) * 2 + mode`` from
    ``1 + (character * 2 + answered, the seat's own first) * 2 + mode``; a cube ``area * S + absolute seat`` from
    ``1 + area * S + relative seat`` (``perm``: relative to absolute seat, per seat)."""
    if v == 0:
        return -1
    if kind == K.K_GUY:
        character, rest = (v - 1) // 4, (v - 1) % 4
        answered = s if rest // 2 == 0 else 1 - s
        return (character * 2 + answered) * 2 + rest % 2
    S = perm.shape[1]
    return (v - 1) // S * S + perm[s, (v - 1) % S]
