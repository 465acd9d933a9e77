"""N games of one variant held as arrays (the batch first) and stepped together.

:class:`BatchedGame` is the batched counterpart of :class:`revolution_env.engine.game.Game`: the same rules
(docs/rules.md, D1-D18), the same state as arrays with a leading batch axis (``tokens (N, S, 3)``, ``bank (N, 3)``,
``support (N, S)``, ``cubes (N, A, S)``, ``supply (N, S)``, ``bids (N, S, T, 3)``, ...), and one pending decision
per game (``kind (N,)``, ``decider (N,)``). Bids of many games are submitted in one call and cleaned with NumPy over
the batch; resolution runs per game in the compiled loops of :mod:`.kernels`, pausing a game at a Guy, Spy,
Apothecary or Remove decision. The scalar engine stays the reference (``tests/test_batched.py``).

Every variant of the scalar engine plays here, the first edition included: each game's deck (D15) is shuffled by
its own generator, seeded from the game's seed as :class:`Game` seeds it (``seed_stream``), the shuffles drawn
ahead into ``deck`` so that the compiled loops draw without calling back; the same seed deals the same cards.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import numpy as np

from revolution_env.common.jit import in_parts
from revolution_env.engine import kernels as K
from revolution_env.engine.components import TOKEN_TYPES
from revolution_env.engine.game import DECK_STREAM, Decision, IllegalAction, Layout, Phase, clean_bids, seed_stream
from revolution_env.engine.kernels import (
    APO_AREA,
    APO_SEAT,
    DECK_LEFT,
    DECK_SHUFFLE,
    DSEAT,
    GUY_COUNT,
    GUY_LAST,
    KIND,
    PHASE,
    REVEALED_ROUND,
    ROUND,
    SPY_OWNER,
    TRUNCATED,
)
from revolution_env.engine.scenario import MODES, export_game, run_scenario

# The fewest games of a part where a call steps games side by side (common.jit.in_parts): a game's step costs about
# a microsecond, four times an observation's, so that parts of 512 games pay for the hand-off to a thread (a
# 4,096-game vector env with random opponents: 28% more steps/s than with in_parts' 2,048, 2 cores, quiet; as fast
# as before beside one busy process)
GAME_ROWS = 512
HISTORY_START = 32  # rounds of history kept per game before the buffer grows
MAX_GUY_CHOICES = 7  # D12: at most six Guy bids, then a pass


def _count_type(most: int) -> type:
    """The narrowest signed integer type that holds ``0..most``."""
    return next(t for t in (np.int8, np.int16, np.int32, np.int64) if most <= np.iinfo(t).max)


def count_type(layout: Layout) -> type:
    """The integer type of a :class:`BatchedGame`'s bids (its ``bids`` and ``revealed``, the bids
    :meth:`~BatchedGame.step` takes): a bid holds at most the game's total of a type (the bank is finite, D1), so
    int8 on the printed board, wider where a custom board has more. An eighth of int64's bytes: a 4,096-game step of
    the vector env reads and writes its bids several times, and memory traffic, not arithmetic, is much of its
    time."""
    return _count_type(int(np.max(layout.totals)))


def _card_draws(L: Layout) -> int:
    """The most cards one round can draw: every player's Gold on the Card space up to the limit (Guy never bids
    there); 0 outside the first edition."""
    return L.players * L.components.card_max_gold if L.card_space >= 0 else 0


def _tables(L: Layout) -> tuple[np.ndarray, ...]:
    comp = L.components
    deck = comp.deck if L.card_space >= 0 else ()
    cfg = np.zeros(K.N_CFG, dtype=np.int64)
    cfg[K.C_CHARS] = L.n_characters
    cfg[K.C_TARGETS] = L.n_targets
    cfg[K.C_SEATS] = L.seats
    cfg[K.C_PLAYERS] = L.players
    cfg[K.C_AREAS] = len(L.spaces)
    cfg[K.C_PUPPET] = L.puppet
    cfg[K.C_SCHEMING] = L.scheming
    cfg[K.C_SPY] = L.spy
    cfg[K.C_APO] = L.apothecary
    cfg[K.C_REFUNDS] = bool(L.rules.bid_refunds)
    cfg[K.C_ACB] = L.rules.area_control_bonus
    cfg[K.C_MAX_ROUNDS] = L.rules.max_rounds
    cfg[K.C_MAX_CHARS] = comp.max_characters_per_bid
    cfg[K.C_PATRONAGE] = comp.patronage_minimum
    cfg[K.C_CARD] = L.card_space
    cfg[K.C_CARD_MAX] = comp.card_max_gold
    cfg[K.C_DECK] = len(deck)
    # the shuffle in use and enough drawn ahead for the draws of one call (a call draws at most one round's cards)
    cfg[K.C_SLOTS] = 1 + max(1, -(-_card_draws(L) // max(len(deck), 1)))
    return (
        cfg,
        L.legal.astype(np.bool_),
        L.strength.astype(np.int64),
        L.rewards.astype(np.int64),
        np.array([ch.support for ch in L.card], dtype=np.int64),
        np.array([ch.area for ch in L.card], dtype=np.int64),
        L.spaces.astype(np.int64),
        L.area_support.astype(np.int64),
        L.token_points.astype(np.int64),
        np.array([c.support for c in deck], dtype=np.int64),
        np.array([c.tokens for c in deck], dtype=np.int64).reshape(len(deck), 3),
        np.array([c.remove for c in deck], dtype=np.bool_),
    )


class BatchedGame:
    """``n`` games of the variant ``layout``, each with its own seed and pending decision.

    Decisions go in per game index: :meth:`submit_bids` for the games waiting for bids, :meth:`choose` for the
    others, or both at once in :meth:`step` (the vector envs' step, random seats' decisions drawn inside). Games are
    reset individually (:meth:`reset`), so finished ones can start again while others play on.
    ``rng`` draws D9's coin flips (a scenario exported by :meth:`export` carries the resulting ``priority``); the
    first edition's shuffles come from each game's seed, as the scalar engine's do. Bids are held in
    :attr:`count_type` (:func:`count_type`: int8 on the printed board), the rest of the state in int64.
    """

    def __init__(self, layout: Layout, n: int, seeds: Any = None, rng: np.random.Generator | None = None) -> None:
        L = layout
        if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 1:
            raise ValueError(f"num_envs: expected a positive integer, got {n!r}")
        self.layout = L
        self.rules = L.rules
        self.n = n = int(n)
        self.rng = rng if rng is not None else np.random.default_rng()
        S, A, T = L.seats, len(L.spaces), L.n_targets
        self.tokens = np.zeros((n, S, 3), dtype=np.int64)
        self.bank = np.zeros((n, 3), dtype=np.int64)
        self.support = np.zeros((n, S), dtype=np.int64)
        self.cubes = np.zeros((n, A, S), dtype=np.int64)
        self.supply = np.zeros((n, S), dtype=np.int64)
        self.count_type = count = count_type(L)
        self.bids = np.zeros((n, S, T, 3), dtype=count)
        self.revealed = np.zeros((n, S, T, 3), dtype=count)
        self.winners = np.full((n, T), -2, dtype=np.int64)
        self.scheming_gold = np.zeros((n, S), dtype=np.int64)
        self.meta = np.zeros((n, K.N_META), dtype=np.int64)
        self.final_support = np.zeros((n, S), dtype=np.int64)
        self.final_tokens = np.zeros((n, S), dtype=np.int64)
        self.final_areas = np.zeros((n, S), dtype=np.int64)
        self.final_win = np.zeros((n, S), dtype=np.bool_)
        self.seeds = np.zeros(n, dtype=np.int64)
        self._tb = _tables(L)
        cfg = self._tb[0]
        D = int(cfg[K.C_DECK])
        self.deck = np.zeros((n, int(cfg[K.C_SLOTS]), D), dtype=np.int64)
        self.card_queue = np.zeros((n, S), dtype=np.int64)
        self.drawn = np.zeros((n, S, D), dtype=np.int64)
        self._deck_rngs: list[np.random.Generator | None] = [None] * n  # each game's D15 shuffles
        self._shuffles = np.zeros(n, dtype=np.int64)  # shuffles drawn into `deck` so far, per game
        self._st = tuple(getattr(self, name) for name in K.STATE_FIELDS)
        # The story of each game, for export: raw bids and priority per round, and the rare choices.
        self._hist_bids = np.zeros((n, HISTORY_START, L.players, T, 3), dtype=count)
        self._hist_priority = np.full((n, HISTORY_START), -1, dtype=np.int8)
        # choices per round: -2 none, -1 declined or passed, else the engine's choice value
        self._hist_spy = np.full((n, HISTORY_START), -2, dtype=np.int16)
        self._hist_apothecary = np.full((n, HISTORY_START, 2), -2, dtype=np.int16)
        self._hist_guy = np.full((n, HISTORY_START, MAX_GUY_CHOICES), -2, dtype=np.int16)
        self._hist_remove = np.full((n, HISTORY_START, max(_card_draws(L), 1)), -2, dtype=np.int16)
        legal_targets = L.legal_targets
        width = max(len(t) for t in legal_targets)
        self._random_targets = (
            np.array([np.resize(t, width) for t in legal_targets], dtype=np.int64),
            np.array([len(t) for t in legal_targets], dtype=np.int64),
        )
        self._start_tokens = np.tile(np.array(L.components.token_start, dtype=np.int64), (S, 1))
        self.reset(np.arange(n), seeds)

    # --- state as views ------------------------------------------------------------------------------------

    @property
    def round(self) -> np.ndarray:
        return self.meta[:, ROUND]

    @property
    def phase(self) -> np.ndarray:
        """The :class:`~revolution_env.engine.game.Phase` of each game, as its number."""
        return self.meta[:, PHASE]

    @property
    def kind(self) -> np.ndarray:
        """The pending :class:`Decision` of every game (``NONE`` once over)."""
        return self.meta[:, KIND]

    @property
    def decider(self) -> np.ndarray:
        """The seat that makes a pending non-bid decision (meaningless for bids, which every player makes)."""
        return self.meta[:, DSEAT]

    @property
    def over(self) -> np.ndarray:
        return self.meta[:, PHASE] == K.OVER

    @property
    def truncated(self) -> np.ndarray:
        return self.meta[:, TRUNCATED].astype(bool)

    @property
    def guy_count(self) -> np.ndarray:
        return self.meta[:, GUY_COUNT]

    @property
    def guy_last_placer(self) -> np.ndarray:
        return self.meta[:, GUY_LAST]

    @property
    def revealed_round(self) -> np.ndarray:
        return self.meta[:, REVEALED_ROUND]

    # --- starting ----------------------------------------------------------------------------------------------

    def reset(self, games: Any, seeds: Any = None) -> None:
        """Start ``games`` (indices) afresh; ``seeds`` (one per game, or None to draw them) are the games' seeds as
        exported in their scenarios."""
        g = np.asarray(games, dtype=np.int64).reshape(-1)
        if seeds is None:
            seeds = self.rng.integers(2**63 - 1, size=len(g))
        seeds = np.asarray(seeds, dtype=np.int64).reshape(-1)
        if len(seeds) != len(g) or (seeds < 0).any():
            raise ValueError(f"seeds: expected {len(g)} non-negative integers")
        L = self.layout
        comp = L.components
        self.seeds[g] = seeds
        self.tokens[g] = self._start_tokens
        self.bank[g] = L.totals - self._start_tokens.sum(0)
        self.support[g] = 0
        self.cubes[g] = 0
        self.supply[g] = comp.cubes_per_seat
        self.bids[g] = 0
        self.revealed[g] = 0
        self.winners[g] = -2
        self.scheming_gold[g] = 0
        self.final_support[g] = self.final_tokens[g] = self.final_areas[g] = 0
        self.final_win[g] = False
        meta = np.zeros(K.N_META, dtype=np.int64)
        meta[ROUND] = 1
        meta[PHASE] = K.BIDDING
        meta[KIND] = K.K_BID
        meta[[GUY_LAST, SPY_OWNER, APO_AREA, APO_SEAT]] = -1
        self.meta[g] = meta
        self._hist_priority[g] = -1
        self._hist_spy[g] = -2
        self._hist_apothecary[g] = -2
        self._hist_guy[g] = -2
        self._hist_remove[g] = -2
        if L.card_space >= 0:
            self.card_queue[g] = 0
            self.drawn[g] = 0
            self.meta[g, DECK_LEFT] = self.deck.shape[2]  # the first shuffle, whole
            self._shuffles[g] = 0
            for i, seed in zip(g.tolist(), seeds.tolist()):
                self._deck_rngs[i] = seed_stream(seed, DECK_STREAM)
            self._draw_ahead(g)

    def _draw_ahead(self, games: np.ndarray) -> None:
        """Fill the shuffle slots of ``games`` that were used up (D15): each game's next shuffles from its own
        generator, in the order ``Game._shuffled_deck`` draws them, so that every slot but the one in use holds a
        shuffle still to come."""
        slots, D = self.deck.shape[1:]
        wanted = self.meta[games, DECK_SHUFFLE] + slots
        behind = self._shuffles[games] < wanted
        for i, made, upto in zip(
            games[behind].tolist(), self._shuffles[games[behind]].tolist(), wanted[behind].tolist()
        ):
            rng = self._deck_rngs[i]
            for k in range(made, upto):
                self.deck[i, k % slots] = rng.permutation(D)
        self._shuffles[games[behind]] = wanted[behind]

    # --- decisions ---------------------------------------------------------------------------------------------

    def submit_bids(self, games: Any, bids: Any, priority: Any = None) -> None:
        """Every player's bid in each of ``games``: ``bids`` (n, players, T, 3) token counts per target.

        ``priority`` (two-player variant; one seat per game, -1 for the rule) replaces D9's coin flip where the
        rule comes to it, as in :meth:`Game.submit_bids`."""
        L = self.layout
        g = np.asarray(games, dtype=np.int64).reshape(-1)
        bids = np.asarray(bids)
        if bids.shape != (len(g), L.players, L.n_targets, 3) or bids.dtype.kind not in "iu":
            raise IllegalAction(f"bids: expected integers of shape {(len(g), L.players, L.n_targets, 3)}")
        if len(g) == 0:
            return
        if (self.meta[g, KIND] != K.K_BID).any():
            bad = int(g[self.meta[g, KIND] != K.K_BID][0])
            raise IllegalAction(f"game {bad}: no bid is pending (pending: {Decision(int(self.meta[bad, KIND]))})")
        bids = np.ascontiguousarray(bids, dtype=np.int64)
        bad = K.misplaced_bid(g, bids, self.tokens)
        if bad >= 0:
            raise IllegalAction(f"game {int(g[bad])}: every held token must be placed, and nothing else (D3)")
        self._grow_history(int(self.meta[g, ROUND].max()))
        given = np.full(len(g), -1, dtype=np.int64)
        coin = given
        if L.scheming >= 0:
            if priority is not None:  # a replay's priority must agree with the rule (checked before any change)
                given = np.asarray(priority, dtype=np.int64).reshape(len(g))
                ruled = priority_by_rule_batch(clean_bids_batch(bids, L)[0], L)
                clash = (given >= 0) & (ruled >= 0) & (given != ruled)
                if clash.any():
                    i = int(np.flatnonzero(clash)[0])
                    raise IllegalAction(
                        f"game {int(g[i])}: priority: the rule (D9) gives seat {ruled[i]}, not {given[i]}"
                    )
            coin = self.rng.integers(2, size=len(g))  # D9's coin flip, where the rule comes to it
        st, tb, hist = self._st, self._tb, (self._hist_bids, self._hist_priority)
        if priority is None:  # games in parts side by side (none can fail: no priority is given)
            in_parts(
                len(g),
                lambda lo, hi: K.submit_many(g[lo:hi], bids[lo:hi], given[lo:hi], coin[lo:hi], st, tb, *hist),
                GAME_ROWS,
            )
        else:  # in one call, which stops at a game whose given priority the rule contradicts (checked above)
            K.submit_many(g, bids, given, coin, st, tb, *hist)
        if self.layout.card_space >= 0:
            self._draw_ahead(g)

    def choose(self, games: Any, values: Any) -> None:
        """Answer the pending non-bid decision of each of ``games``: ``values`` per game, -1 to decline or pass,
        ``area * S + seat`` (absolute seat) for a cube, ``(character * 2 + answered_seat) * 2 + mode`` for a Guy
        placement. Raises :class:`IllegalAction` if a choice is not allowed (the other games' allowed choices are
        applied)."""
        g = np.asarray(games, dtype=np.int64).reshape(-1)
        values = np.asarray(values, dtype=np.int64).reshape(-1)
        if len(values) != len(g):
            raise ValueError(f"values: expected {len(g)} choices, got {len(values)}")
        kinds = self.meta[g, KIND].copy()
        deciders = self.meta[g, DSEAT].copy()
        ok = np.zeros(len(g), dtype=np.bool_)
        st, tb = self._st, self._tb
        hist = (self._hist_spy, self._hist_apothecary, self._hist_guy, self._hist_remove)
        in_parts(len(g), lambda lo, hi: K.choose_many(g[lo:hi], values[lo:hi], st, tb, hist, ok[lo:hi]), GAME_ROWS)
        if self.layout.card_space >= 0:
            self._draw_ahead(g)
        if not ok.all():
            i = int(np.flatnonzero(~ok)[0])
            what = Decision(int(kinds[i]))
            raise IllegalAction(
                f"game {int(g[i])}: {what} choice {int(values[i])} by seat {int(deciders[i])} is not allowed"
            )

    def options(self, games: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """For each game's pending non-bid decision: the cubes it may pick (n, A, S) (absolute seats), the Guy
        placements it may make (n, C, 2, 2) over (character, answered seat, tie/beat), and whether it may decline."""
        L = self.layout
        g = np.asarray(games, dtype=np.int64).reshape(-1)
        cubes = np.zeros((len(g), len(L.spaces), L.seats), dtype=np.bool_)
        guy = np.zeros((len(g), L.n_characters, 2, 2), dtype=np.bool_)
        decline = np.zeros(len(g), dtype=np.bool_)
        K.options_many(g, self._st, self._tb, cubes, guy, decline)
        return cubes, guy, decline

    # --- random play (the vector envs' ``random`` opponents) -------------------------------------------------------

    def random_bids(self, games: np.ndarray, seats: np.ndarray, states: np.ndarray) -> np.ndarray:
        """(n, T, 3) token counts: seat ``seats[i]`` of game ``games[i]`` bids each token it holds on a uniform legal
        target of its type (``engine.random_play``'s rule), drawn from the games' generators ``states``
        (``kernels.random_states``, one per game of the batch, advanced in place)."""
        g, s = (np.ascontiguousarray(a, dtype=np.int64) for a in (games, seats))
        self._check_random(states)
        out = np.empty((len(g), 1, self.layout.n_targets, 3), dtype=np.int64)
        targets, counts = self._random_targets
        K.random_bids_many(g, s, self.tokens, targets, counts, states, out)
        return out[:, 0]

    def play_random(self, games: np.ndarray, random_seat: np.ndarray, states: np.ndarray) -> None:
        """Uniform random choices (``engine.random_play``'s rule) in ``games`` for as long as each waits for a non-bid
        decision of a seat with ``random_seat[game, seat]`` (N, players) true; drawn from the games' generators
        ``states``, recorded for export like :meth:`choose`'s."""
        g = np.ascontiguousarray(games, dtype=np.int64)
        random_seat = self._check_random(states, random_seat)
        first_edition = self.layout.card_space >= 0
        hist = (self._hist_spy, self._hist_apothecary, self._hist_guy, self._hist_remove)

        def part(games: np.ndarray, lo: int, hi: int) -> int:
            bad = K.play_random_many(games[lo:hi], random_seat, self._st, self._tb, states, *hist, first_edition)
            return lo + bad if bad >= 0 else -1

        while len(g):
            refused = [i for i in in_parts(len(g), functools.partial(part, g), GAME_ROWS) if i >= 0]
            if refused:  # never expected: the draw is over the engine's own options
                raise RuntimeError(f"game {int(g[refused[0]])}: a random choice was refused by the engine")
            if not first_edition:
                return
            self._draw_ahead(g)  # one choice per game per call: the deck is refilled between choices
            kind, seat = self.meta[g, KIND], self.meta[g, DSEAT]
            g = g[(kind >= K.K_GUY) & random_seat[g, seat]]

    def step(
        self, games: np.ndarray, bids: np.ndarray, values: np.ndarray, random_seat: np.ndarray, states: np.ndarray
    ) -> None:
        """One decision of each of ``games`` (distinct), in one pass over them side by side, and the random seats'
        decisions that follow: :meth:`submit_bids`, :meth:`choose` and :meth:`play_random` in one. A game that waits for
        bids takes ``bids[i]`` (players, T, 3; of :attr:`count_type`) with the rows of the seats with
        ``random_seat[game, seat]`` (N, players) drawn here instead (:meth:`random_bids`' rule, from the games'
        generators ``states``); one that waits for a non-bid decision takes ``values[i]`` (:meth:`choose`'s value). Then
        each game's random seats play their non-bid decisions until another seat decides or the game ends. The games
        come out as those methods called in turn leave them (``tests/test_batched.py``). Bids that misplace tokens (D3)
        or a choice not allowed raise :class:`IllegalAction` naming the first such game; the other games' decisions are
        made. ``bids`` is written to (the random seats' rows)."""
        L = self.layout
        g = np.ascontiguousarray(games, dtype=np.int64).reshape(-1)
        n = len(g)
        if not (isinstance(bids, np.ndarray) and bids.shape == (n, L.players, L.n_targets, 3)
                and bids.dtype == self.count_type and bids.flags.c_contiguous):  # fmt: skip
            raise ValueError(
                f"bids: expected a contiguous {np.dtype(self.count_type).name} array (count_type) of shape "
                f"{(n, L.players, L.n_targets, 3)}"
            )
        values = np.ascontiguousarray(values, dtype=np.int64).reshape(-1)
        if len(values) != n:
            raise ValueError(f"values: expected {n} choices, got {len(values)}")
        random_seat = self._check_random(states, random_seat)
        kinds = self.meta[g, KIND]  # a copy
        waiting = (kinds == K.K_BID) | (kinds >= K.K_GUY)
        if not waiting.all():
            bad = int(g[~waiting][0])
            raise IllegalAction(f"game {bad}: no decision is pending")
        bidding = kinds == K.K_BID
        coin = np.zeros(n, dtype=np.int64)
        coin[bidding] = self._coins(g[bidding])
        outcome = np.empty(n, dtype=np.int64)
        first_edition = L.card_space >= 0  # its random choices one at a time, the deck refilled between them
        run = self._stepper(random_seat, states, play=not first_edition)
        in_parts(n, lambda lo, hi: run(g[lo:hi], bids[lo:hi], values[lo:hi], coin[lo:hi], outcome[lo:hi]), GAME_ROWS)
        if first_edition:
            self._draw_ahead(g)
            kind, seat = self.meta[g, KIND], self.meta[g, DSEAT]
            self.play_random(g[(outcome == K.DECIDED) & (kind >= K.K_GUY) & random_seat[g, seat]], random_seat, states)
        self._refused(g, outcome, kinds, values)

    def step_parts(
        self, bidding: np.ndarray, random_seat: np.ndarray, states: np.ndarray
    ) -> tuple[Callable[..., None], Callable[..., None]]:
        """:meth:`step` for a caller that runs the games' steps in parts of its own, side by side with other work on
        the same games (the vector env: one thread reads a part's actions, steps its games and observes them, while
        the games are in its core's cache). What spans every game is done here, first: the history grown for the
        games that bid (``bidding``, bool per game: those waiting for bids that will bid this step) and D9's coin
        flipped for each, in game order, as :meth:`step` flips them for the same games. Returns ``run(games, bids,
        values, outcome)``, one part's step (``games`` distinct from the other parts', each waiting for a decision:
        unchecked; ``outcome`` per game of the part, written), and ``refused(games, outcome, kinds, values)``, which
        raises as :meth:`step` does for the first game not decided. Not for the first edition (its deck is drawn
        between a step's choices): ``ValueError``."""
        if self.layout.card_space >= 0:
            raise ValueError("step_parts: the first edition's steps draw cards between parts (use step)")
        random_seat = self._check_random(states, random_seat)
        games = np.flatnonzero(bidding)
        coin = np.zeros(self.n, dtype=np.int64)
        coin[games] = self._coins(games)
        run = self._stepper(random_seat, states, play=True)

        def run_games(g: np.ndarray, bids: np.ndarray, values: np.ndarray, outcome: np.ndarray) -> None:
            run(g, bids, values, coin[g], outcome)

        return run_games, self._refused

    def _coins(self, games: np.ndarray) -> np.ndarray:
        """D9's coin flipped for each of ``games`` (waiting for bids, in order) where the rule comes to it (else 0),
        after growing the history for their round."""
        if len(games) == 0:
            return np.zeros(0, dtype=np.int64)
        self._grow_history(int(self.meta[games, ROUND].max()))
        if self.layout.scheming < 0:
            return np.zeros(len(games), dtype=np.int64)
        return self.rng.integers(2, size=len(games))

    def _stepper(self, random_seat: np.ndarray, states: np.ndarray, play: bool) -> Callable[..., None]:
        """``run(games, bids, values, coin, outcome)``: the compiled step of ``games`` (one part)."""
        targets, counts = self._random_targets
        hist = (self._hist_bids, self._hist_priority, self._hist_spy, self._hist_apothecary, self._hist_guy,
                self._hist_remove)  # fmt: skip
        st, tb = self._st, self._tb

        def run(g: np.ndarray, bids: np.ndarray, values: np.ndarray, coin: np.ndarray, outcome: np.ndarray) -> None:
            K.step_many(g, bids, values, random_seat, coin, st, tb, states, targets, counts, hist, play, outcome)

        return run

    def _refused(self, g: np.ndarray, outcome: np.ndarray, kinds: np.ndarray, values: np.ndarray) -> None:
        """The error of the first of ``g`` not decided (``outcome``), if any."""
        failed = np.flatnonzero(outcome != K.DECIDED)
        if len(failed):
            i = int(failed[0])
            if outcome[i] == K.MISPLACED_BID:
                raise IllegalAction(f"game {int(g[i])}: every held token must be placed, and nothing else (D3)")
            if outcome[i] == K.REFUSED_CHOICE:
                what = Decision(int(kinds[i]))
                raise IllegalAction(f"game {int(g[i])}: {what} choice {int(values[i])} is not allowed")
            raise RuntimeError(f"game {int(g[i])}: a random choice was refused by the engine")

    def _check_random(self, states: np.ndarray, random_seat: Any = None) -> np.ndarray | None:
        """The random seats (N, players) as the kernels read them (bool, contiguous), after checking them and the
        games' generators ``states`` (advanced in place: the caller's int64 array of N): the kernels index both by
        game and seat unchecked, and a shorter array would be read and written past its end."""
        if not (isinstance(states, np.ndarray) and states.shape == (self.n,) and states.dtype == np.int64
                and states.flags.c_contiguous and states.flags.writeable):  # fmt: skip
            raise ValueError(f"states: expected the games' generators, a writable int64 array of {self.n}")
        if random_seat is None:
            return None
        random_seat = np.ascontiguousarray(random_seat, dtype=bool)
        if random_seat.shape != (self.n, self.layout.players):
            raise ValueError(f"random_seat: expected a bool array of shape {(self.n, self.layout.players)}")
        return random_seat

    # --- history and export ------------------------------------------------------------------------------------

    def _grow_history(self, rounds: int) -> None:
        cap = self._hist_bids.shape[1]
        if rounds <= cap:
            return
        new = max(rounds, 2 * cap)
        for name, fill in (("_hist_bids", 0), ("_hist_priority", -1), ("_hist_spy", -2), ("_hist_apothecary", -2),
                           ("_hist_guy", -2), ("_hist_remove", -2)):  # fmt: skip
            old = getattr(self, name)
            grown = np.full((self.n, new, *old.shape[2:]), fill, dtype=old.dtype)
            grown[:, :cap] = old
            setattr(self, name, grown)

    def snapshot(self, games: Any) -> GameRecords:
        """Everything :meth:`export` and :meth:`state_dict` need about ``games``, copied in one go (so that the
        games may be reset and the records turned into JSON later)."""
        g = np.asarray(games, dtype=np.int64).reshape(-1)
        played = int(self.meta[g, ROUND].max()) if len(g) else 0
        return GameRecords(
            layout=self.layout,
            seeds=self.seeds[g].copy(),
            tokens=self.tokens[g],
            bank=self.bank[g],
            support=self.support[g],
            cubes=self.cubes[g],
            supply=self.supply[g],
            meta=self.meta[g],
            final_support=self.final_support[g],
            final_tokens=self.final_tokens[g],
            final_areas=self.final_areas[g],
            final_win=self.final_win[g],
            deck=self.deck[g],
            bids=self.bids[g],
            winners=self.winners[g],
            hist_bids=self._hist_bids[g, :played],
            hist_priority=self._hist_priority[g, :played],
            hist_spy=self._hist_spy[g, :played],
            hist_apothecary=self._hist_apothecary[g, :played],
            hist_guy=self._hist_guy[g, :played],
            hist_remove=self._hist_remove[g, :played],
        )

    def state_dict(self, game: int) -> dict[str, Any]:
        """Game ``game``'s canonical state (docs/scenarios.md §2), as ``engine.scenario.state_dict`` gives it."""
        return self.snapshot([game]).state_dict(0)

    def export(self, game: int) -> dict[str, Any]:
        """Game ``game`` so far as a scenario (with ``seed``, ``priority`` in every round of the two-player variant,
        the first edition's ``start.deck`` and rounds' ``reshuffles``) that ``revolution_env.run_scenario`` replays to
        the same state without the generator."""
        return self.snapshot([game]).export(0)


class GameRecords:
    """Copies of some games' arrays (the batch first), turned into canonical states and scenarios on demand."""

    def __init__(self, layout: Layout, **arrays: np.ndarray) -> None:
        self.layout = layout
        for name, value in arrays.items():
            setattr(self, name, value)

    def __len__(self) -> int:
        return len(self.seeds)

    def state_dict(self, i: int) -> dict[str, Any]:
        L = self.layout
        meta = self.meta[i]
        over = meta[PHASE] == K.OVER

        def tok(row: np.ndarray) -> dict[str, int]:
            return {t: int(n) for t, n in zip(TOKEN_TYPES, row)}

        final = None
        if over:
            final = {
                "support": self.final_support[i].tolist(),
                "token_points": self.final_tokens[i].tolist(),
                "area_points": self.final_areas[i].tolist(),
                "winners": np.flatnonzero(self.final_win[i]).tolist(),
            }
        state: dict[str, Any] = {
            "rules": L.rules.to_dict(),
            "round": int(meta[ROUND]),
            "game_over": bool(over and not meta[TRUNCATED]),
            "truncated": bool(meta[TRUNCATED]),
            "support": self.support[i].tolist(),
            "tokens": [tok(row) for row in self.tokens[i]],
            "bank": tok(self.bank[i]),
            "board": {a.name: self.cubes[i, k].tolist() for k, a in enumerate(L.components.areas)},
            "supply": self.supply[i].tolist(),
            "final": final,
        }
        if L.card_space >= 0:  # the draw pile, top card first (settled case 9)
            deck = L.components.deck
            state["deck"] = [deck[k].name for k in draw_pile(self.deck[i], meta)]
        if meta[PHASE] not in (K.BIDDING, K.OVER):
            names = L.target_names
            kind = int(meta[KIND])
            state["round_state"] = {
                "phase": str(Phase(int(meta[PHASE]))),
                "bids": [_bid_dict(row, names) for row in self.bids[i]],
                "resolved": {names[c]: int(w) for c, w in enumerate(self.winners[i]) if w >= -1},
                "pending": None if kind == K.K_NONE else {"decision": str(Decision(kind)), "seats": [int(meta[DSEAT])]},
            }
        return state

    def export(self, i: int) -> dict[str, Any]:
        L = self.layout
        meta = self.meta[i]
        areas = L.components.area_names
        names = L.target_names
        played = int(meta[ROUND]) if meta[PHASE] == K.OVER else int(meta[ROUND]) - 1

        S = L.seats

        def cube(v: int) -> Any:
            return "decline" if v < 0 else {"area": areas[v // S], "seat": v % S}

        rounds = []
        for r in range(played):
            entry: dict[str, Any] = {"bids": [_bid_dict(b, names) for b in self.hist_bids[i, r].astype(np.int64)]}
            if L.puppet >= 0:
                entry["priority"] = int(self.hist_priority[i, r])
            guy = [int(v) for v in self.hist_guy[i, r] if v != -2]
            if guy:
                entry["guy"] = [
                    "pass" if v < 0 else {"character": names[v // 4], "answer": (v // 2) % 2, "mode": MODES[v % 2]}
                    for v in guy
                ]
            spy = int(self.hist_spy[i, r])
            if spy != -2:
                entry["spy"] = cube(spy)
            first, second = (int(v) for v in self.hist_apothecary[i, r])
            if first != -2:
                entry["apothecary"] = "decline" if first < 0 else {"first": cube(first), "second": cube(second)}
            removes = [cube(int(v)) for v in self.hist_remove[i, r] if v != -2]
            if removes:
                entry["remove"] = removes
            rounds.append(entry)
        data = {"rules": L.rules.to_dict(), "seed": int(self.seeds[i]), "rounds": rounds}
        if L.card_space >= 0:
            # A saved game records its draws (start.deck, each round's reshuffles). The batched engine draws its
            # shuffles ahead and keeps no record of the round each came in: the scalar engine, replaying the game
            # from its seed (the same generator, the same shuffles), records them.
            return export_game(run_scenario(data, draws="seed"))
        return data


def draw_pile(deck: np.ndarray, meta: np.ndarray) -> np.ndarray:
    """One game's draw pile, top card first (card indices), from its shuffles ``deck`` (slots, D) and ``meta``."""
    D = deck.shape[1]
    return deck[meta[DECK_SHUFFLE] % len(deck), D - meta[DECK_LEFT] :]


def _bid_dict(bid: np.ndarray, names: tuple[str, ...]) -> dict[str, dict[str, int]]:
    return {names[c]: {t: int(n) for t, n in zip(TOKEN_TYPES, bid[c]) if n} for c in range(len(names)) if bid[c].any()}


def clean_bids_batch(bids: np.ndarray, layout: Layout) -> tuple[np.ndarray, np.ndarray]:
    """``engine.game.clean_bids`` over a batch: bids (n, players, T, 3) -> cleaned bids and, per game, the tokens
    that go to the bank (n, 3) (docs/rules.md §3, D16, D18)."""
    return clean_bids(bids, layout, batch_dims=1)


def priority_by_rule_batch(bids: np.ndarray, layout: Layout) -> np.ndarray:
    """``engine.game.priority_by_rule`` over a batch of cleaned bids (n, players, T, 3): the seat placing Guy's
    first bid, -1 where the rule comes to the coin flip (D9)."""
    L = layout
    gold = bids[:, :2, L.scheming, 2]
    keys = bids[:, :2, : L.n_characters] @ L.strength  # (n, 2, C)
    best = keys.max(2)
    where = (keys == best[:, :, None]).argmax(2)
    out = np.full(len(bids), -1, dtype=np.int64)
    by_where = (best[:, 0] == best[:, 1]) & (best[:, 0] > 0) & (where[:, 0] != where[:, 1])
    out[by_where] = np.where(where[by_where, 0] < where[by_where, 1], 0, 1)
    by_best = best[:, 0] != best[:, 1]
    out[by_best] = np.where(best[by_best, 0] > best[by_best, 1], 0, 1)
    by_gold = gold[:, 0] != gold[:, 1]
    out[by_gold] = np.where(gold[by_gold, 0] > gold[by_gold, 1], 0, 1)
    return out
