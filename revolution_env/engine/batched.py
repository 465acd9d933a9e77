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

import copy
import functools
from collections.abc import Callable
from typing import Any

import numpy as np

from revolution_env.common.jit import in_parts
from revolution_env.engine import kernels as K
from revolution_env.engine.components import TOKEN_TYPES
from revolution_env.engine.game import (
    DECK_STREAM,
    Decision,
    Game,
    IllegalAction,
    Layout,
    Phase,
    clean_bids,
    seed_stream,
)
from revolution_env.engine.kernels import Cfg, History, Meta, Outcome, RandomPlay, State, Tables
from revolution_env.engine.scenario import MODES, export_game, run_scenario

# The fewest games of a part where a call steps games side by side (common.jit.in_parts): a game's step costs four
# times an observation's, so that parts of 512 games pay for the hand-off to a thread, and the vector env steps
# faster with them than with in_parts' default (measured in the commit that set it)
GAME_ROWS = 512
HISTORY_START = 32  # rounds of history kept per game before the buffer grows
MAX_GUY_CHOICES = 7  # D12: at most six Guy bids, then a pass
# The numbers NumPy compares arrays with here as plain ints (as kernels.K_BID): with an IntEnum member it takes a far
# slower path.
_OVER = int(Phase.OVER)
_DECIDED, _MISPLACED, _REFUSED = int(Outcome.DECIDED), int(Outcome.MISPLACED_BID), int(Outcome.REFUSED_CHOICE)


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


def _tables(L: Layout) -> Tables:
    """What the kernels read of the layout ``L``."""
    comp = L.components
    deck = comp.deck if L.card_space >= 0 else ()
    numbers = {
        Cfg.CHARS: L.n_characters,
        Cfg.TARGETS: L.n_targets,
        Cfg.SEATS: L.seats,
        Cfg.PLAYERS: L.players,
        Cfg.AREAS: len(L.spaces),
        Cfg.PUPPET: L.puppet,
        Cfg.SCHEMING: L.scheming,
        Cfg.SPY: L.spy,
        Cfg.APOTHECARY: L.apothecary,
        Cfg.REFUNDS: bool(L.rules.bid_refunds),
        Cfg.AREA_CONTROL_BONUS: L.rules.area_control_bonus,
        Cfg.MAX_ROUNDS: L.rules.max_rounds,
        Cfg.MAX_CHARACTERS: comp.max_characters_per_bid,
        Cfg.PATRONAGE: comp.patronage_minimum,
        Cfg.CARD: L.card_space,
        Cfg.CARD_MAX: comp.card_max_gold,
        Cfg.DECK: len(deck),
        # the shuffle in use and enough drawn ahead for the draws of one call (a call draws at most one round's cards)
        Cfg.SLOTS: 1 + max(1, -(-_card_draws(L) // max(len(deck), 1))),
    }
    return Tables(
        cfg=np.array([numbers[entry] for entry in Cfg], dtype=np.int64),
        legal=L.legal.astype(np.bool_),
        strength=L.strength.astype(np.int64),
        rewards=L.rewards.astype(np.int64),
        char_support=np.array([ch.support for ch in L.card], dtype=np.int64),
        char_area=np.array([ch.area for ch in L.card], dtype=np.int64),
        spaces=L.spaces.astype(np.int64),
        area_support=L.area_support.astype(np.int64),
        token_points=L.token_points.astype(np.int64),
        card_support=np.array([c.support for c in deck], dtype=np.int64),
        card_tokens=np.array([c.tokens for c in deck], dtype=np.int64).reshape(len(deck), 3),
        card_remove=np.array([c.remove for c in deck], dtype=np.bool_),
    )


class BatchedGame:
    """``n`` games of the variant ``layout``, each with its own seed and pending decision.

    Decisions go in per game index: :meth:`submit_bids` for the games waiting for bids, :meth:`choose` for the
    others, or both at once in :meth:`step` (the vector envs' step, random seats' decisions drawn inside). Games are
    reset individually (:meth:`reset`), so finished ones can start again while others play on.
    ``rng`` draws D9's coin flips (a scenario exported by :meth:`export` carries the resulting ``priority``); the
    first edition's shuffles come from each game's seed, as the scalar engine's do. Bids are held in
    :attr:`count_type` (:func:`count_type`: int8 on the printed board), the rest of the state in int64.

    The arrays are attributes (``tokens``, ``bank``, ``meta``, ...), and the records the kernels take:
    :attr:`state` (:class:`~revolution_env.engine.kernels.State`, the same arrays), :attr:`tables` (the layout's) and
    :attr:`history` (each game's story for export, replaced as it grows).
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
        self.meta = np.zeros((n, len(Meta)), dtype=np.int64)
        self.final_support = np.zeros((n, S), dtype=np.int64)
        self.final_tokens = np.zeros((n, S), dtype=np.int64)
        self.final_areas = np.zeros((n, S), dtype=np.int64)
        self.final_win = np.zeros((n, S), dtype=np.bool_)
        self.seeds = np.zeros(n, dtype=np.int64)
        self.tables = _tables(L)
        cfg = self.tables.cfg
        D = int(cfg[Cfg.DECK])
        self.deck = np.zeros((n, int(cfg[Cfg.SLOTS]), D), dtype=np.int64)
        self.card_queue = np.zeros((n, S), dtype=np.int64)
        self.drawn = np.zeros((n, S, D), dtype=np.int64)
        self._deck_rngs: list[np.random.Generator | None] = [None] * n  # each game's D15 shuffles
        self._shuffles = np.zeros(n, dtype=np.int64)  # shuffles drawn into `deck` so far, per game
        self.state = State(**{name: getattr(self, name) for name in State._fields})
        start = np.zeros(len(Meta), dtype=np.int64)  # meta's row of a game about to start
        start[[Meta.ROUND, Meta.PHASE, Meta.KIND]] = 1, Phase.BIDDING, Decision.BID
        start[[Meta.GUY_LAST, Meta.SPY_OWNER, Meta.APO_AREA, Meta.APO_SEAT]] = -1
        self._start_meta = start
        # The story of each game, for export: raw bids and priority per round, and the rare choices per round (-2
        # none, -1 declined or passed, else the engine's choice value).
        self.history = History(
            bids=np.zeros((n, HISTORY_START, L.players, T, 3), dtype=count),
            priority=np.full((n, HISTORY_START), -1, dtype=np.int8),
            spy=np.full((n, HISTORY_START), -2, dtype=np.int16),
            apothecary=np.full((n, HISTORY_START, 2), -2, dtype=np.int16),
            guy=np.full((n, HISTORY_START, MAX_GUY_CHOICES), -2, dtype=np.int16),
            remove=np.full((n, HISTORY_START, max(_card_draws(L), 1)), -2, dtype=np.int16),
        )
        legal_targets = L.legal_targets
        width = max(len(t) for t in legal_targets)
        # RandomPlay's fields after the seats and the generators, the same for every call: each token type's legal
        # targets and how many (the random seats' bids), and whether choices come one at a time (the first edition)
        self._random_rest = (
            np.array([np.resize(t, width) for t in legal_targets], dtype=np.int64),
            np.array([len(t) for t in legal_targets], dtype=np.int64),
            L.card_space >= 0,
        )
        self._start_tokens = np.tile(np.array(L.components.token_start, dtype=np.int64), (S, 1))
        self.reset(np.arange(n), seeds)

    # --- state as views ------------------------------------------------------------------------------------

    @property
    def round(self) -> np.ndarray:
        return self.meta[:, Meta.ROUND]

    @property
    def phase(self) -> np.ndarray:
        """The :class:`~revolution_env.engine.game.Phase` of each game, as its number."""
        return self.meta[:, Meta.PHASE]

    @property
    def kind(self) -> np.ndarray:
        """The pending :class:`Decision` of every game (``NONE`` once over)."""
        return self.meta[:, Meta.KIND]

    @property
    def decider(self) -> np.ndarray:
        """The seat that makes a pending non-bid decision (meaningless for bids, which every player makes)."""
        return self.meta[:, Meta.DECIDER]

    @property
    def over(self) -> np.ndarray:
        return self.meta[:, Meta.PHASE] == _OVER

    @property
    def truncated(self) -> np.ndarray:
        return self.meta[:, Meta.TRUNCATED].astype(bool)

    @property
    def guy_count(self) -> np.ndarray:
        return self.meta[:, Meta.GUY_COUNT]

    @property
    def guy_last_placer(self) -> np.ndarray:
        return self.meta[:, Meta.GUY_LAST]

    @property
    def revealed_round(self) -> np.ndarray:
        return self.meta[:, Meta.REVEALED_ROUND]

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
        self.meta[g] = self._start_meta
        history = self.history
        history.priority[g] = -1
        for choices in (history.spy, history.apothecary, history.guy, history.remove):
            choices[g] = -2
        if L.card_space >= 0:
            self.card_queue[g] = 0
            self.drawn[g] = 0
            self.meta[g, Meta.DECK_LEFT] = self.deck.shape[2]  # the first shuffle, whole
            self._shuffles[g] = 0
            for i, seed in zip(g.tolist(), seeds.tolist()):
                self._deck_rngs[i] = seed_stream(seed, DECK_STREAM)
            self._draw_ahead(g)

    def load(self, games: Any, game: Game) -> None:
        """Write the scalar ``game``'s state, at a bid decision, into each of ``games`` (indices), so that they play on
        as copies of it would (a search plays many rounds from one position so): the public state, the last round's
        story the observations show (revealed bids, winners, Scheming Gold, Guy's last placer, the cards drawn), the
        seed, and the first edition's draw pile and deck generator, each game's reshuffles (D15) the ones ``game``'s
        copies would draw. D9's coin is not carried (a batched game draws its coins from :attr:`rng`): a caller that
        wants ``game``'s gives :meth:`submit_bids` the priority (:meth:`Game.next_coin`). Each game's history starts
        empty. ``ValueError`` for a game of another variant or not at a bid decision."""
        L = self.layout
        if game.rules != L.rules or (game.layout.seats, game.layout.n_targets) != (L.seats, L.n_targets):
            raise ValueError("load: the game is of another variant than the batch's")
        if game.decision is None or game.decision.kind != Decision.BID or game.phase != Phase.BIDDING:
            raise ValueError("load: the game is not at a bid decision")
        g = np.asarray(games, dtype=np.int64).reshape(-1)
        if len(g) and (g.min() < 0 or g.max() >= self.n):
            raise ValueError(f"games: expected indices from 0 to {self.n - 1}")
        self.seeds[g] = game.seed
        self.tokens[g] = game.tokens
        self.bank[g] = game.bank
        self.support[g] = game.support
        self.cubes[g] = game.cubes
        self.supply[g] = game.supply
        self.bids[g] = game.bids
        self.revealed[g] = game.revealed
        self.winners[g] = game.winners
        self.scheming_gold[g] = game.scheming_gold
        self.final_support[g] = self.final_tokens[g] = self.final_areas[g] = 0
        self.final_win[g] = False
        meta = self._start_meta.copy()
        meta[Meta.ROUND] = game.round
        meta[Meta.GUY_LAST] = game.guy_last_placer
        meta[Meta.REVEALED_ROUND] = game.revealed_round
        pile = game._draw_pile
        meta[Meta.DECK_LEFT] = len(pile)
        self.meta[g] = meta
        history = self.history
        history.bids[g] = 0
        history.priority[g] = -1
        for choices in (history.spy, history.apothecary, history.guy, history.remove):
            choices[g] = -2
        if L.card_space >= 0:
            slots, D = self.deck.shape[1:]
            ahead = copy.deepcopy(game._deck_rng)  # the shuffles every copy of the game draws next, drawn once
            shuffles = [ahead.permutation(D) for _ in range(slots - 1)]
            self.deck[g, 0] = 0
            self.deck[g, 0, D - len(pile) :] = pile  # the shuffle in use: its draw pile is its last DECK_LEFT cards
            for k, shuffle in enumerate(shuffles, 1):
                self.deck[g, k] = shuffle
            self._shuffles[g] = slots
            for i in g.tolist():
                self._deck_rngs[i] = copy.deepcopy(ahead)
            self.card_queue[g] = 0
            self.drawn[g] = 0
            for seat, index in game.cards_drawn:
                self.drawn[g, seat, index] += 1

    def _draw_ahead(self, games: np.ndarray) -> None:
        """Fill the shuffle slots of ``games`` that were used up (D15): each game's next shuffles from its own
        generator, in the order ``Game._shuffled_deck`` draws them, so that every slot but the one in use holds a
        shuffle still to come."""
        slots, D = self.deck.shape[1:]
        wanted = self.meta[games, Meta.DECK_SHUFFLE] + slots
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
        if (self.kind[g] != K.K_BID).any():
            bad = int(g[self.kind[g] != K.K_BID][0])
            pending = Decision(int(self.kind[bad]))
            raise IllegalAction(f"game {bad}: no bid is pending (pending: {pending})")
        bids = np.ascontiguousarray(bids, dtype=np.int64)
        bad = K.misplaced_bid(g, bids, self.tokens)
        if bad >= 0:
            raise IllegalAction(f"game {int(g[bad])}: every held token must be placed, and nothing else (D3)")
        self._grow_history(int(self.round[g].max()))
        given = coin = np.full(len(g), -1, dtype=np.int64)
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
            coin = np.where(given >= 0, given, coin)  # a given priority agrees with the rule: it stands for the coin
        st, tb, history = tuple(self.state), tuple(self.tables), tuple(self.history)  # as the kernels take them

        def part(lo: int, hi: int) -> None:
            K.submit_many(tuple(K.Bids(g[lo:hi], bids[lo:hi], coin[lo:hi])), st, tb, history)

        in_parts(len(g), part, GAME_ROWS)
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
        kinds, deciders = self.kind[g], self.decider[g]  # copies
        outcome = np.empty(len(g), dtype=np.int64)
        st, tb, history = tuple(self.state), tuple(self.tables), tuple(self.history)  # as the kernels take them

        def part(lo: int, hi: int) -> None:
            K.choose_many(tuple(K.Choices(g[lo:hi], values[lo:hi], outcome[lo:hi])), st, tb, history)

        in_parts(len(g), part, GAME_ROWS)
        if self.layout.card_space >= 0:
            self._draw_ahead(g)
        if (outcome != _DECIDED).any():
            i = int(np.flatnonzero(outcome != _DECIDED)[0])
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
        K.options_many(g, tuple(self.state), tuple(self.tables), cubes, guy, decline)
        return cubes, guy, decline

    # --- random play (the vector envs' ``random`` opponents) -------------------------------------------------------

    def random_bids(self, games: np.ndarray, seats: np.ndarray, states: np.ndarray) -> np.ndarray:
        """(n, T, 3) token counts: seat ``seats[i]`` of game ``games[i]`` bids each token it holds on a uniform legal
        target of its type (``engine.random_play``'s rule), drawn from the games' generators ``states``
        (``kernels.random_states``, one per game of the batch, advanced in place)."""
        g, s = (np.ascontiguousarray(a, dtype=np.int64) for a in (games, seats))
        out = np.empty((len(g), 1, self.layout.n_targets, 3), dtype=np.int64)
        K.random_bids_many(g, s, self.tokens, tuple(self._random_play(states)), out)
        return out[:, 0]

    def play_random(self, games: np.ndarray, random_seat: np.ndarray, states: np.ndarray) -> None:
        """Uniform random choices (``engine.random_play``'s rule) in ``games`` for as long as each waits for a non-bid
        decision of a seat with ``random_seat[game, seat]`` (N, players) true; drawn from the games' generators
        ``states``, recorded for export like :meth:`choose`'s."""
        g = np.ascontiguousarray(games, dtype=np.int64)
        rand = self._random_play(states, random_seat)
        st, tb, history, plain = tuple(self.state), tuple(self.tables), tuple(self.history), tuple(rand)

        def part(games: np.ndarray, lo: int, hi: int) -> int:
            bad = K.play_random_many(games[lo:hi], st, tb, history, plain)
            return lo + bad if bad >= 0 else -1

        while len(g):
            refused = [i for i in in_parts(len(g), functools.partial(part, g), GAME_ROWS) if i >= 0]
            if refused:  # never expected: the draw is over the engine's own options
                raise RuntimeError(f"game {int(g[refused[0]])}: a random choice was refused by the engine")
            if not rand.one_at_a_time:
                return
            self._draw_ahead(g)  # one choice per game per call: the deck is refilled between choices
            g = g[(self.kind[g] >= K.K_GUY) & rand.seats[g, self.decider[g]]]

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
        shape = (n, L.players, L.n_targets, 3)
        contiguous = isinstance(bids, np.ndarray) and bids.flags.c_contiguous
        if not (contiguous and bids.shape == shape and bids.dtype == self.count_type):
            name = np.dtype(self.count_type).name
            raise ValueError(f"bids: expected a contiguous {name} array (count_type) of shape {shape}")
        values = np.ascontiguousarray(values, dtype=np.int64).reshape(-1)
        if len(values) != n:
            raise ValueError(f"values: expected {n} choices, got {len(values)}")
        rand = self._random_play(states, random_seat)
        kinds = self.kind[g]  # a copy
        waiting = (kinds == K.K_BID) | (kinds >= K.K_GUY)
        if not waiting.all():
            bad = int(g[~waiting][0])
            raise IllegalAction(f"game {bad}: no decision is pending")
        bidding = kinds == K.K_BID
        coin = np.zeros(n, dtype=np.int64)
        coin[bidding] = self._coins(g[bidding])
        outcome = np.empty(n, dtype=np.int64)
        run = self._stepper(rand)
        in_parts(n, lambda lo, hi: run(g[lo:hi], bids[lo:hi], values[lo:hi], coin[lo:hi], outcome[lo:hi]), GAME_ROWS)
        if L.card_space >= 0:  # the first edition: its random choices one at a time, the deck refilled between them
            self._draw_ahead(g)
            choosing = (outcome == _DECIDED) & (self.kind[g] >= K.K_GUY) & rand.seats[g, self.decider[g]]
            self.play_random(g[choosing], rand.seats, states)
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
        rand = self._random_play(states, random_seat)
        games = np.flatnonzero(bidding)
        coin = np.zeros(self.n, dtype=np.int64)
        coin[games] = self._coins(games)
        run = self._stepper(rand)

        def run_games(g: np.ndarray, bids: np.ndarray, values: np.ndarray, outcome: np.ndarray) -> None:
            run(g, bids, values, coin[g], outcome)

        return run_games, self._refused

    def _coins(self, games: np.ndarray) -> np.ndarray:
        """D9's coin flipped for each of ``games`` (waiting for bids, in order) where the rule comes to it (else 0),
        after growing the history for their round."""
        if len(games) == 0:
            return np.zeros(0, dtype=np.int64)
        self._grow_history(int(self.round[games].max()))
        if self.layout.scheming < 0:
            return np.zeros(len(games), dtype=np.int64)
        return self.rng.integers(2, size=len(games))

    def _stepper(self, rand: RandomPlay) -> Callable[..., None]:
        """``run(games, bids, values, coin, outcome)``: the compiled step of ``games`` (one part), the random seats'
        play ``rand``'s."""
        st, tb, history, plain = tuple(self.state), tuple(self.tables), tuple(self.history), tuple(rand)

        def run(g: np.ndarray, bids: np.ndarray, values: np.ndarray, coin: np.ndarray, outcome: np.ndarray) -> None:
            K.step_many((g, bids, values, coin, outcome), st, tb, history, plain)  # a K.Step, as a plain tuple

        return run

    def _refused(self, g: np.ndarray, outcome: np.ndarray, kinds: np.ndarray, values: np.ndarray) -> None:
        """The error of the first of ``g`` not decided (``outcome``), if any."""
        failed = np.flatnonzero(outcome != _DECIDED)
        if len(failed):
            i = int(failed[0])
            if outcome[i] == _MISPLACED:
                raise IllegalAction(f"game {int(g[i])}: every held token must be placed, and nothing else (D3)")
            if outcome[i] == _REFUSED:
                what = Decision(int(kinds[i]))
                raise IllegalAction(f"game {int(g[i])}: {what} choice {int(values[i])} is not allowed")
            raise RuntimeError(f"game {int(g[i])}: a random choice was refused by the engine")

    def _random_play(self, states: np.ndarray, random_seat: Any = None) -> RandomPlay:
        """The random seats' play as the kernels read it, after checking the random seats ``random_seat`` (N,
        players), bool, made contiguous; None: every seat) and the games' generators ``states`` (advanced in place:
        the caller's int64 array of N): the kernels index both by game and seat unchecked, and a shorter array would
        be read and written past its end."""
        n, players = self.n, self.layout.players
        if not (
            isinstance(states, np.ndarray)
            and states.shape == (n,)
            and states.dtype == np.int64
            and states.flags.c_contiguous
            and states.flags.writeable
        ):
            raise ValueError(f"states: expected the games' generators, a writable int64 array of {n}")
        if random_seat is None:
            random_seat = np.ones((n, players), dtype=bool)
        random_seat = np.ascontiguousarray(random_seat, dtype=bool)
        if random_seat.shape != (n, players):
            raise ValueError(f"random_seat: expected a bool array of shape {(n, players)}")
        return RandomPlay(random_seat, states, *self._random_rest)

    # --- history and export ------------------------------------------------------------------------------------

    def _grow_history(self, rounds: int) -> None:
        """:attr:`history` replaced by one of at least ``rounds`` rounds, where it has fewer."""
        cap = self.history.bids.shape[1]
        if rounds <= cap:
            return
        new = max(rounds, 2 * cap)
        fills = History(bids=0, priority=-1, spy=-2, apothecary=-2, guy=-2, remove=-2)
        grown = []
        for old, fill in zip(self.history, fills):
            array = np.full((self.n, new, *old.shape[2:]), fill, dtype=old.dtype)
            array[:, :cap] = old
            grown.append(array)
        self.history = History(*grown)

    def snapshot(self, games: Any) -> GameRecords:
        """Everything :meth:`export` and :meth:`state_dict` need about ``games``, copied in one go (so that the
        games may be reset and the records turned into JSON later)."""
        g = np.asarray(games, dtype=np.int64).reshape(-1)
        played = int(self.round[g].max()) if len(g) else 0
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
            **{f"hist_{name}": rounds[g, :played] for name, rounds in self.history._asdict().items()},
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
        over = meta[Meta.PHASE] == Phase.OVER

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
            "round": int(meta[Meta.ROUND]),
            "game_over": bool(over and not meta[Meta.TRUNCATED]),
            "truncated": bool(meta[Meta.TRUNCATED]),
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
        if meta[Meta.PHASE] not in (Phase.BIDDING, Phase.OVER):
            names = L.target_names
            kind = int(meta[Meta.KIND])
            state["round_state"] = {
                "phase": str(Phase(int(meta[Meta.PHASE]))),
                "bids": [_bid_dict(row, names) for row in self.bids[i]],
                "resolved": {names[c]: int(w) for c, w in enumerate(self.winners[i]) if w >= -1},
                "pending": None
                if kind == Decision.NONE
                else {"decision": str(Decision(kind)), "seats": [int(meta[Meta.DECIDER])]},
            }
        return state

    def export(self, i: int) -> dict[str, Any]:
        L = self.layout
        meta = self.meta[i]
        areas = L.components.area_names
        names = L.target_names
        played = int(meta[Meta.ROUND]) if meta[Meta.PHASE] == Phase.OVER else int(meta[Meta.ROUND]) - 1

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
    return deck[meta[Meta.DECK_SHUFFLE] % len(deck), D - meta[Meta.DECK_LEFT] :]


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
