"""Observations and masks of many games at once, from a :class:`revolution_env.engine.batched.BatchedGame`.

:class:`BatchedView` gives, for any list of (game, seat) pairs, exactly the vectors that
``ObservationLayout.build`` and ``Codec.mask`` give for the same state and seat (``tests/test_batched.py`` checks
this element for element): the observations in one compiled loop over the games (:func:`observe_many`), the masks
in another (:func:`masks_many`: the bid blocks from the tokens held, the other decisions' (Guy, Spy, Apothecary,
Remove) from the engine's compiled options: faster than NumPy's gathers, and one code for the choice masks too).
What the loops read travels as typed records: the games' (``engine.kernels.State`` and ``Tables``), the view's
(:class:`ViewTables`) and the rows' (:class:`Rows`); the observation's features are the entries of :class:`Feature`.
"""

from __future__ import annotations

from collections.abc import Callable
from enum import IntEnum
from typing import NamedTuple

import numpy as np

from revolution_env.common.jit import borrowed, in_parts, jit, read_only
from revolution_env.engine.batched import BatchedGame, count_type
from revolution_env.engine.game import (
    APOTHECARY_FIRST,
    APOTHECARY_SECOND,
    BID,
    BIDDING,
    GUY,
    OVER,
    SPY,
)
from revolution_env.engine.kernels import (
    K_BID,
    K_NONE,
    NONE,
    Cfg,
    Meta,
    State,
    Tables,
    board,
    can_decline,
    cube_targets,
    guy_options,
    scheming,
    scratch,
)
from revolution_env.env.encoding import Codec
from revolution_env.env.observation import ObservationLayout


class Feature(IntEnum):
    """The features :func:`observe_many` writes (the names of ``ObservationLayout``, lower-cased): the entries of
    ``ViewTables.starts``, each feature's first column (-1 where a variant has none)."""

    ROUND = 0
    ROUNDS_LEFT = 1
    PHASE = 2
    DECISION = 3
    FOR_PUPPET = 4
    CAN_DECLINE = 5
    TOKENS = 6
    SUPPORT = 7
    SUPPLY = 8
    BANK = 9
    CUBES = 10
    BIDS = 11
    FREE = 12
    BIDS_CURRENT = 13
    WINNERS = 14
    APOTHECARY_FIRST = 15
    SCHEMING_GOLD = 16
    GUY_BIDS = 17
    GUY_LAST_PLACER = 18
    FINAL_SUPPORT = 19
    CARDS_DRAWN = 20
    DECK_LEFT = 21


FEATURES = tuple(feature.name.lower() for feature in Feature)


class ViewTables(NamedTuple):
    """What the compiled loops read of a view's codec and observation layout."""

    perm: np.ndarray  # (P, S): each seat's relative seats as absolute seats
    inv: np.ndarray  # (P, S): each seat's absolute seats as relative seats
    starts: np.ndarray  # (len(Feature),): each feature's first column of the observation, -1 none
    card_type: np.ndarray  # (D,): the first edition's deck as the card types of cards_drawn and deck_left
    # bid actions: the token dimensions (0..K-1, action column d + 1) of each type in a block, one per token
    token_first: np.ndarray  # (3,): each type's first dimension
    token_count: np.ndarray  # (3,): and how many it has
    token_column: np.ndarray  # (3,): each type's first column of the mask
    nvec: np.ndarray  # (1 + K,): the values of each action dimension
    offsets: np.ndarray  # (1 + K,): each dimension's first column of the mask


class Rows(NamedTuple):
    """The rows of a call: a seat of a game each, and the decision it faces."""

    games: np.ndarray  # (n,) contiguous int64
    seats: np.ndarray  # (n,)
    kinds: np.ndarray  # (n,): the Decision each seat faces (NONE: nothing to decide)


class Decided(NamedTuple):
    """Where :func:`decide_many` writes what it reads of the actions."""

    ok: np.ndarray  # (n,) bool: whether each row's action satisfies its mask
    bids: np.ndarray  # (G, P, T, 3): the bids of the games, a row per (game, seat)
    values: np.ndarray  # (G,) int64: each game's choice, as the engine's value


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
        first = [int(c.block[t]) - 1 for t in range(3)]
        self.tables = ViewTables(
            perm=self.perm,
            inv=np.stack(c.inv),
            starts=np.array([ol._at.get(name, -1) for name in FEATURES], dtype=np.int64),
            card_type=ol._card_type.astype(np.int64) if ol.first_edition else np.zeros(0, dtype=np.int64),
            token_first=np.array(first, dtype=np.int64),
            token_count=np.array(c.n_tokens, dtype=np.int64),
            token_column=np.array([c.C + first[t] * c.T for t in range(3)], dtype=np.int64),
            nvec=np.asarray(c.nvec, dtype=np.int64),
            offsets=np.asarray(c.offsets, dtype=np.int64),
        )
        self.count_type = count_type(L)  # the bids' integer type, as BatchedGame.step takes them

    # --- what each seat is asked -------------------------------------------------------------------------------

    def kinds(self, game: BatchedGame, games: np.ndarray, seats: np.ndarray) -> np.ndarray:
        """The :class:`Decision` each seat faces (bids: every player; other decisions: the decider only)."""
        kind = game.kind[games]
        mine = (kind == K_BID) | (game.decider[games] == seats)  # plain ints: NumPy is slower with IntEnum members
        return np.where(mine, kind, K_NONE)

    # --- observations and masks --------------------------------------------------------------------------------

    def observe(self, game: BatchedGame, games: np.ndarray, seats: np.ndarray, kinds: np.ndarray) -> np.ndarray:
        """(n, size) float32: ``ObservationLayout.build(game_i, seat_i, kind_i)`` for every pair."""
        return self._passes(game, Rows(games, seats, kinds), observe=True, mask=False)[0]

    def masks(self, game: BatchedGame, games: np.ndarray, seats: np.ndarray, kinds: np.ndarray) -> np.ndarray:
        """(n, sum(nvec)) bool: ``Codec.mask(game_i, seat_i, kind_i)`` for every pair."""
        return self._passes(game, Rows(games, seats, kinds), observe=False, mask=True)[1]

    def observe_and_mask(
        self, game: BatchedGame, games: np.ndarray, seats: np.ndarray, kinds: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray]:
        """:meth:`observe` and :meth:`masks` in one pass side by side: each part's rows observed, then masked, by the
        same thread (one hand-off between threads instead of two, and the part's games read while in its cache)."""
        return self._passes(game, Rows(games, seats, kinds), observe=True, mask=True)

    def _passes(
        self, game: BatchedGame, rows: Rows, observe: bool, mask: bool
    ) -> tuple[np.ndarray | None, np.ndarray | None]:
        """The observations and the masks asked for (None for the other) of :class:`Rows` ``rows``, in parts side by
        side."""
        rows = Rows(*_indices(*rows))
        n = len(rows.games)
        # each row zeroed by the loop that fills it
        obs = np.empty((n, self.ol.size), dtype=np.float32) if observe else None
        m = np.empty((n, self.codec.size), dtype=bool) if mask else None
        in_parts(n, self.observer(game, rows, obs, m))
        return obs, m

    def observer(
        self, game: BatchedGame, rows: Rows, obs: np.ndarray | None, masks: np.ndarray | None, fresh: bool = False
    ) -> Callable[[int, int], None]:
        """``part(lo, hi)``: the observations (into ``obs``, (n, size) float32) and the masks (into ``masks``, (n,
        sum(nvec)) bool) of the rows ``lo:hi`` of :class:`Rows` ``rows`` (contiguous int64), each None where not
        wanted, facing ``rows.kinds``; with ``fresh``, facing the decisions they face when the part runs
        (:meth:`kinds`, written into ``rows.kinds``), for a caller that changes the games in the same part first."""
        st, tb, view = tuple(game.state), tuple(game.tables), tuple(self.tables)  # as the loops take them
        games, seats, kinds = rows

        def part(lo: int, hi: int) -> None:
            rows = (games[lo:hi], seats[lo:hi], kinds[lo:hi])  # a Rows, as the loops take it
            if fresh:
                rows[2][:] = self.kinds(game, rows[0], rows[1])
            if obs is not None:
                observe_many(rows, st, tb, view, obs[lo:hi])
            if masks is not None:
                masks_many(rows, st, tb, view, masks[lo:hi])

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
        legal_many(np.ascontiguousarray(a, dtype=np.int64), read_only(masks), tuple(self.tables), ok)
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
        bid_counts_many(actions, held, rows, seats, tuple(self.tables), out)

    def decider(
        self,
        actions: np.ndarray,
        masks: np.ndarray,
        rows: Rows,
        tokens: np.ndarray,
        into: tuple[np.ndarray, np.ndarray],
    ) -> tuple[np.ndarray, Callable[[int, int], None]]:
        """Bid-mode actions (n, D) of the seats ``rows.seats`` of ``rows.games`` (:class:`Rows`), facing
        ``rows.kinds``, to be checked and read in one pass: returns ``ok`` (n,) bool and ``part(lo, hi)``, which fills
        ``ok[lo:hi]`` with whether each of the rows ``lo:hi`` satisfies its mask (:meth:`legal`; a row with nothing to
        decide passes) and, where it does, counts a bid into ``bids[game, seat]`` (``into``: ``(bids, values)``;
        ``bids`` (G, players, T, 3), :meth:`bid_counts`'s counts, from the tokens held in ``tokens``) or writes a
        choice as the engine's value into ``values[game]`` (:meth:`engine_choices`). Each (game, seat) at most once.
        The caller runs the parts (``in_parts(n, part)``, or with other work on the same rows); the arguments are
        checked here, since the parts write unchecked."""
        c = self.codec
        bids, values = into
        actions, kinds, games, seats = _indices(actions, rows.kinds, rows.games, rows.seats)
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
        view = tuple(self.tables)  # as the loops take it

        def part(lo: int, hi: int) -> None:
            rows, out = (games[lo:hi], seats[lo:hi], kinds[lo:hi]), (ok[lo:hi], bids, values)  # Rows, Decided
            decide_many(actions[lo:hi], masks[lo:hi], rows, tokens, view, out)

        return ok, part

    def _bids_form(self, bids: np.ndarray) -> bool:
        """Whether ``bids`` holds the bids of games as ``BatchedGame.step`` takes them."""
        if not isinstance(bids, np.ndarray) or bids.dtype != self.count_type or not bids.flags.c_contiguous:
            return False
        return bids.ndim == 4 and bids.shape[2:] == (self.codec.T, 3)

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


@jit
def observe_many(rows, st, tb, view, out):
    """``ObservationLayout.build`` for each of ``rows`` (:class:`Rows`), into the rows of ``out`` (each zeroed here
    first: in the cache and in the parts side by side, where a zeroed array is a pass of its own), from the games'
    ``st`` and ``tb`` (``engine.kernels.State``, ``Tables``) and the view's :class:`ViewTables` ``view``, the records
    as plain tuples (``engine.kernels`` says why)."""
    rows, st, tb = Rows(*rows), State(*borrowed(st)), Tables(*borrowed(tb))
    view, out = ViewTables(*borrowed(view)), borrowed(out)  # the caller's, for the whole call
    tokens, support, cubes, supply, bank, revealed = st.tokens, st.support, st.cubes, st.supply, st.bank, st.revealed
    winners, scheming_gold, meta, final_support = st.winners, st.scheming_gold, st.meta, st.final_support
    deck, drawn = st.deck, st.drawn
    cfg, spaces = tb.cfg, tb.spaces
    perm, inv, at, card_type = view.perm, view.inv, view.starts, view.card_type
    D = cfg[Cfg.DECK]
    n_types = 0
    for k in range(D):
        n_types = max(n_types, card_type[k] + 1)
    S, A, T = cfg[Cfg.SEATS], cfg[Cfg.AREAS], cfg[Cfg.TARGETS]
    puppet = cfg[Cfg.PUPPET]
    # the columns of the features written in loops, as locals: read from ``at`` after each store to ``out``, which
    # might be the same memory
    at_tokens, at_support, at_supply = at[Feature.TOKENS], at[Feature.SUPPORT], at[Feature.SUPPLY]
    at_cubes, at_bids, at_free, at_winners = at[Feature.CUBES], at[Feature.BIDS], at[Feature.FREE], at[Feature.WINNERS]
    for i in range(len(rows.games)):
        g, seat, kind = rows.games[i], rows.seats[i], rows.kinds[i]
        o = out[i]
        o[:] = 0
        rnd, phase = meta[g, Meta.ROUND], meta[g, Meta.PHASE]
        o[at[Feature.ROUND]] = rnd
        o[at[Feature.ROUNDS_LEFT]] = cfg[Cfg.MAX_ROUNDS] - rnd
        o[at[Feature.PHASE] + phase] = 1
        o[at[Feature.DECISION] + kind] = 1
        if kind >= GUY:
            decline = kind in (SPY, APOTHECARY_FIRST) or (kind == GUY and meta[g, Meta.GUY_COUNT] >= 2)
            o[at[Feature.CAN_DECLINE]] = decline
            if puppet >= 0 and SPY <= kind <= APOTHECARY_SECOND:
                who = cfg[Cfg.SPY] if kind == SPY else cfg[Cfg.APOTHECARY]
                o[at[Feature.FOR_PUPPET]] = winners[g, who] == puppet
            if kind == APOTHECARY_SECOND:
                o[at[Feature.APOTHECARY_FIRST] + meta[g, Meta.APO_AREA] * S + inv[seat, meta[g, Meta.APO_SEAT]]] = 1
        for r in range(S):
            s = perm[seat, r]
            for t in range(3):
                o[at_tokens + r * 3 + t] = tokens[g, s, t]
            o[at_support + r] = support[g, s]
            o[at_supply + r] = supply[g, s]
            for a in range(A):
                o[at_cubes + a * S + r] = cubes[g, a, s]
            for c in range(T):
                for t in range(3):
                    o[at_bids + (r * T + c) * 3 + t] = revealed[g, s, c, t]
        for t in range(3):
            o[at[Feature.BANK] + t] = bank[g, t]
        for a in range(A):
            free = spaces[a]
            for s in range(S):
                free -= cubes[g, a, s]
            o[at_free + a] = free
        revealed_round = meta[g, Meta.REVEALED_ROUND]
        this_round = revealed_round == rnd and phase != BIDDING
        o[at[Feature.BIDS_CURRENT]] = revealed_round > 0 and this_round
        for c in range(T):
            w = winners[g, c]
            col = 0 if w == -2 else (1 if w == -1 else 2 + inv[seat, w])
            o[at_winners + c * (S + 2) + col] = 1
        if puppet >= 0:
            for r in range(S):
                o[at[Feature.SCHEMING_GOLD] + r] = scheming_gold[g, perm[seat, r]]
            if this_round:
                o[at[Feature.GUY_BIDS]] = meta[g, Meta.GUY_COUNT]
            last = meta[g, Meta.GUY_LAST]
            o[at[Feature.GUY_LAST_PLACER] + (0 if last < 0 else 1 + inv[seat, last])] = 1
        if phase == OVER:
            for r in range(S):
                o[at[Feature.FINAL_SUPPORT] + r] = final_support[g, perm[seat, r]]
        if cfg[Cfg.CARD] >= 0:  # the cards of `bids_round` per seat and type, and the types left in the draw pile
            for r in range(S):
                for k in range(D):
                    o[at[Feature.CARDS_DRAWN] + r * n_types + card_type[k]] += drawn[g, perm[seat, r], k]
            slot = meta[g, Meta.DECK_SHUFFLE] % cfg[Cfg.SLOTS]
            for j in range(D - meta[g, Meta.DECK_LEFT], D):
                o[at[Feature.DECK_LEFT] + card_type[deck[g, slot, j]]] += 1


@jit
def masks_many(rows, st, tb, view, out):
    """``Codec.mask`` for each of ``rows`` (:class:`Rows`), into the rows of ``out`` (each zeroed here first).
    Dimension 0 allows only 0, but for a non-bid decision: declining where allowed, then the engine's options in the
    seat's relative terms (Guy's placements over (character, answered seat with the seat's own first, tie/beat);
    cubes over (area, relative seat)). A token dimension allows its type's legal targets where the seat bids now and
    holds that token, else only 0. The records as plain tuples."""
    rows, st, tb = Rows(*rows), State(*borrowed(st)), Tables(*borrowed(tb))
    view, out = ViewTables(*borrowed(view)), borrowed(out)  # the caller's, for the whole call
    tokens, cfg, legal, perm = st.tokens, tb.cfg, tb.legal, view.perm
    S, A, n_chars, T = cfg[Cfg.SEATS], cfg[Cfg.AREAS], cfg[Cfg.CHARS], cfg[Cfg.TARGETS]
    work = scratch(cfg)  # the engine's work arrays for its cube and Guy options
    cube, guy = work.picks, work.placements
    by_type = np.empty((3, T), dtype=np.bool_)  # each type's legal targets, contiguous: a held token's block copied
    for t in range(3):
        for x in range(T):
            by_type[t, x] = legal[x, t]
    # each token type's first column and count as locals: read from ``view`` after each store to ``out``, which
    # might be the same memory
    first0, first1, first2 = view.token_column[0], view.token_column[1], view.token_column[2]
    count0, count1, count2 = view.token_count[0], view.token_count[1], view.token_count[2]
    for i in range(len(rows.games)):
        g, seat, kind = rows.games[i], rows.seats[i], rows.kinds[i]
        m = out[i]
        m[:] = False
        m[0] = True
        bidding = kind == BID
        mask_tokens(m, first0, count0, tokens[g, seat, 0] * bidding, by_type, 0)
        mask_tokens(m, first1, count1, tokens[g, seat, 1] * bidding, by_type, 1)
        mask_tokens(m, first2, count2, tokens[g, seat, 2] * bidding, by_type, 2)
        if kind == GUY:
            m[0] = can_decline(g, st)
            guy[:] = False
            guy_options(g, scheming(st, tb), guy, work.beats)
            for c in range(n_chars):
                for p in range(2):
                    answered = 1 - p if seat == 1 else p
                    for mode in range(2):
                        m[1 + (c * 2 + p) * 2 + mode] = guy[c, answered, mode]
        elif kind >= SPY:
            m[0] = can_decline(g, st)
            cube[:] = False
            cube_targets(g, kind, board(st, tb), cube, work.tally)
            for a in range(A):
                for r in range(S):
                    m[1 + a * S + r] = cube[a, perm[seat, r]]


@jit(inline=True)
def mask_tokens(m, first, count, held, by_type, t):
    """The ``count`` token dimensions of type ``t`` from column ``first`` of the mask row ``m``: the first ``held``
    allow the type's legal targets (``by_type[t]``, (3, T)), the others only target 0."""
    T = by_type.shape[1]
    for j in range(min(held, count)):
        col = first + j * T
        for x in range(T):
            m[col + x] = by_type[t, x]
    for j in range(held, count):
        m[first + j * T] = True


@jit
def legal_many(actions, masks, view, ok):
    """Whether each action row satisfies its mask row, dimension by dimension (values outside a dimension fail);
    ``view``: :class:`ViewTables` as a plain tuple."""
    view = ViewTables(*borrowed(view))
    for i in range(actions.shape[0]):
        ok[i] = legal_row(actions, masks, i, view)


@jit(inline=True)
def legal_row(actions, masks, i, view):
    """Whether action row ``i`` satisfies mask row ``i`` (the dimensions of :class:`ViewTables` ``view``)."""
    nvec, offsets = view.nvec, view.offsets
    for d in range(actions.shape[1]):
        v = actions[i, d]
        if v < 0 or v >= nvec[d] or not masks[i, offsets[d] + v]:
            return False
    return True


@jit
def bid_counts_many(actions, held, rows, seats, view, out):
    """Each bid action's tokens counted per target and type into ``out[rows[i], seats[i]]`` (:func:`count_bid`);
    ``view``: :class:`ViewTables` as a plain tuple."""
    view, out = ViewTables(*borrowed(view)), borrowed(out)  # the caller's, for the whole call
    for i in range(actions.shape[0]):
        count_bid(actions, i, held[i], view, out[rows[i], seats[i]])


@jit(inline=True)
def count_bid(actions, i, held, view, out):
    """Bid action row ``i``'s tokens counted per target and type into ``out`` (T, 3), zeroed first: the token
    dimensions of type ``t`` are ``view.token_count[t]`` from dimension ``view.token_first[t]`` (action column
    ``d + 1`` for dimension ``d``), the first ``held[t]`` of them placed (the seat's tokens, (3,)), the others
    unread."""
    T = out.shape[0]
    for c in range(T):
        for t in range(3):
            out[c, t] = 0
    for t in range(3):
        first = view.token_first[t] + 1
        for j in range(min(held[t], view.token_count[t])):
            target = actions[i, first + j]
            if target < 0 or target >= T:  # never expected: the actions are checked first
                raise IndexError("bid_counts: a token's target is out of range")
            out[target, t] += 1


@jit
def decide_many(actions, masks, rows, tokens, view, out):
    """The bid mode's actions of many rows in one pass: ``out.ok[i]`` (:class:`Decided`), whether row ``i``'s action
    satisfies its mask (as :func:`legal_many`; a row with nothing to decide, ``rows.kinds[i]`` NONE, passes whatever
    its action); then, where it does, a bid counted into ``out.bids[games[i], seats[i]]`` (T, 3) (as
    :func:`bid_counts_many`, the tokens the seat holds in ``tokens``), a choice as the engine's value into
    ``out.values[games[i]]`` (as :func:`engine_choice`: -1 declines; absolute seats). The records as plain tuples."""
    rows, view, out = Rows(*rows), ViewTables(*borrowed(view)), Decided(*borrowed(out))  # the caller's, for the call
    ok, bids, values = out.ok, out.bids, out.values
    for i in range(actions.shape[0]):
        kind = rows.kinds[i]
        good = kind == NONE or legal_row(actions, masks, i, view)
        ok[i] = good
        if kind == NONE or not good:
            continue
        g, s = rows.games[i], rows.seats[i]
        if kind == BID:
            count_bid(actions, i, tokens[g, s], view, bids[g, s])
            continue
        values[g] = engine_choice(actions[i, 0], kind, s, view.perm)


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
    if kind == GUY:
        character, rest = (v - 1) // 4, (v - 1) % 4
        answered = s if rest // 2 == 0 else 1 - s
        return (character * 2 + answered) * 2 + rest % 2
    S = perm.shape[1]
    return (v - 1) // S * S + perm[s, (v - 1) % S]
