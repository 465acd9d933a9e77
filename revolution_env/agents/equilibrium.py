"""A round's equilibrium by search, for every seat: ``equilibrium:`` agents.

A round's bid is a secret simultaneous allocation of a few tokens over a dozen characters, a Colonel Blotto game:
a bid played with near certainty is outbid, and an equilibrium mixes. As SearchBot does in Diplomacy (Gray et al.,
"Human-Level Performance in No-Press Diplomacy via Equilibrium Search", ICLR 2021), at each of our bid decisions:

1. **The state.** The game is rebuilt from our observation (:func:`.env.reconstruct.game_from_observation`: the
   public state, the first edition's draw pile shuffled from the cards left; the observer at seat 0, since an
   agent does not know its seat).
2. **Candidates, for every seat.** ``K`` distinct bids per player: the heuristics' bids for that seat (``value``,
   ``bargain``, ``area``, each on that seat's observation), then samples of the blueprint policy until there are
   ``K`` (a checkpoint's masked distribution, its logits divided by ``temperature=``, or a heuristic's bids under
   fresh seeds).
3. **Payoffs.** Every joint bid (``K^2`` with two players, ``K^3`` with three) is played for one round on a copy
   of the game, the round's other decisions (Guy, Spy, Apothecary, Remove) made by the blueprint, to the next bid
   decision or the game's end. Each player's payoff is the game's final reward where it ended (``win_loss``: +1 to
   a winner, -1 to the others; D7, D13), else a value function of that player's observation of the next bid
   decision: a checkpoint's critic, a critic fitted from games (``critic=PATH``), or a stand-in
   (:func:`appraisal_value`, :func:`margin_value`).
4. **An equilibrium** of that matrix game (:func:`.matrix_games.solve`: two players, the zero-sum game of their
   payoff difference by linear programming or regret matching; more, regret matching for every seat at once).
5. **Double oracle** (DORA, Bakhtin et al., NeurIPS 2021): for every seat, a pool of further bids (single-token
   moves of the bids it plays, and samples of the blueprint where they are cheap) is scored against the others'
   current mixture; the best one joins the seat's candidates if it gains more than ``oracle_gain``; the game is
   solved again. ``oracle`` rounds at most.
6. Our bid is drawn from our seat's strategy with the agent's generator. Every other decision is the blueprint's.

The joint bids are played on rows of the batched engine (:class:`BatchedRounds`, ``engine=batched``, the default),
or each on its own copy of the scalar engine (:func:`play_rounds`, ``engine=scalar``: the reference, which gives
the same payoffs; docs/experiments.md, "A round's equilibrium by search": where the time goes, and how it plays).
Many bid decisions are searched at once (:meth:`RoundSearcher.search_many`, :meth:`EquilibriumAgent.act_batch`),
their rounds in one batch.
"""

from __future__ import annotations

import copy
import itertools
import numbers
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from revolution_env.agents.base import Agent, RandomAgent, act_batch
from revolution_env.agents.matrix_games import METHODS, Solution, solve
from revolution_env.engine.game import BID, Decision, Game
from revolution_env.env.core import MARGIN_SCALE, final_rewards
from revolution_env.env.observation import ObservationLayout
from revolution_env.env.reconstruct import game_from_observation

if TYPE_CHECKING:  # the batched engine is imported where a search first plays on it: it loads Numba, which reads
    # NUMBA_NUM_THREADS as it loads, and the command line checks that setting after importing the agents
    from revolution_env.engine.batched import BatchedGame

PREFIX = "equilibrium:"
HEURISTIC_BIDS = ("value", "bargain", "area")  # the heuristics whose bid for each seat is always a candidate
SUPPORT_FLOOR = 0.01  # a bid played with less probability is left out when scoring the pool against a mixture
SEED_BOUND = 2**32
# Where a search plays its joint bids: rows of the batched engine (BatchedRounds), or a copy of the scalar game each
# (play_rounds: the reference, with the same payoffs; the batched engine is the faster, docs/experiments.md)
ENGINES = ("batched", "scalar")

Value = Callable[[np.ndarray], np.ndarray]  # observations (m, size) -> (m,) each observer's value


@dataclass(frozen=True)
class Settings:
    """The options of a search. ``candidates``: bids per seat before the double oracle (K); ``iterations``: of
    regret matching; ``pool``: bids scored per seat and oracle round; ``oracle``: double-oracle rounds (0: none);
    ``oracle_gain``: what a best response must gain, in the game solved, to join; ``method``: the solver
    (:data:`.matrix_games.METHODS`); ``engine``: where the joint bids are played (:data:`ENGINES`); ``rollout``:
    rounds the blueprint plays on after the round searched, every seat, before the value scores the state (0: the
    state right after it; the batched engine only); ``heuristics``: how many of the heuristics' bids
    (:data:`HEURISTIC_BIDS`, in order) are among each seat's candidates, the blueprint's samples making up the rest
    (a learned blueprint's other decisions go with its own bids: docs/experiments.md)."""

    candidates: int = 4
    iterations: int = 1000
    pool: int = 16
    oracle: int = 1
    oracle_gain: float = 0.02
    method: str = "auto"
    engine: str = "batched"
    rollout: int = 0
    heuristics: int = len(HEURISTIC_BIDS)

    def __post_init__(self) -> None:
        for name in ("candidates", "iterations"):
            _check_int(name, getattr(self, name), 1)
        for name in ("pool", "oracle", "rollout", "heuristics"):
            _check_int(name, getattr(self, name), 0)
        gain = self.oracle_gain
        if isinstance(gain, bool) or not isinstance(gain, numbers.Real) or not gain >= 0:
            raise ValueError(f"oracle_gain: expected a number at least 0, got {gain!r}")
        if self.method not in METHODS:
            raise ValueError(f"method: expected one of {', '.join(METHODS)}, got {self.method!r}")
        if self.engine not in ENGINES:
            raise ValueError(f"engine: expected one of {', '.join(ENGINES)}, got {self.engine!r}")
        if self.rollout and self.engine != "batched":
            raise ValueError(
                "rollout: the blueprint plays on after the round on the batched engine only (engine=batched)"
            )


def _check_int(name: str, value: Any, least: int) -> None:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < least:
        raise ValueError(f"{name}: expected an integer at least {least}, got {value!r}")


# --- what the search asks of a policy ---------------------------------------------------------------------------


class Sampler:
    """Bids of a policy at a bid decision: ``sample(observation, mask, n, rng)`` gives ``n`` bid actions (n, D),
    drawn afresh for each call (an agent's ``act_batch`` on ``n`` copies of the row, the agent reseeded from
    ``rng``). ``cheap``: whether a pool of samples costs little (a network's forward pass), which decides whether
    the double oracle's pool draws from it. ``temperature``: a checkpoint's logits divided by it before they are
    sampled (above 1: more distinct candidates where the policy is nearly sure)."""

    def __init__(self, agent: Agent, cheap: bool, temperature: float = 1.0) -> None:
        self.agent, self.cheap, self.temperature = agent, cheap, temperature

    def sample(self, observation: np.ndarray, mask: np.ndarray, n: int, rng: np.random.Generator) -> np.ndarray:
        return self.sample_rows(observation[None], mask[None], n, rng)[0]

    def sample_rows(self, observations: np.ndarray, masks: np.ndarray, n: int, rng: np.random.Generator
                    ) -> np.ndarray:  # fmt: skip
        """``n`` bids (m, n, D) at each of ``m`` bid decisions (``observations`` (m, size), ``masks``), in one call
        of the agent, reseeded once from ``rng``."""
        return self.sample_many([observations], [masks], [n], [rng])[0]

    def sample_many(self, observations: Sequence[np.ndarray], masks: Sequence[np.ndarray], counts: Sequence[int],
                    rngs: Sequence[np.random.Generator]) -> list[np.ndarray]:  # fmt: skip
        """:meth:`sample_rows` for several groups of bid decisions (each its observations, masks, ``n`` and
        generator), each group's bids those of its call alone; a policy (``act_groups``) decides for all the
        groups in one forward pass."""
        seeds = [int(rng.integers(SEED_BOUND)) for rng in rngs]
        if hasattr(self.agent, "act_groups"):
            obs, mask = np.concatenate(observations), np.concatenate(masks)
            sizes = [len(o) for o in observations]
            acts = self.agent.act_groups(obs, mask, np.full(len(obs), int(BID)), sizes, seeds, counts,
                                         self.temperature)  # fmt: skip
        else:
            if self.temperature != 1.0:
                raise ValueError("temperature: a checkpoint's samples only")
            acts = []
            for o, m, n, seed in zip(observations, masks, counts, seeds):
                self.agent.reset(seed)
                rows = np.repeat(o, n, 0), np.repeat(m, n, 0), np.full(len(o) * n, int(BID))
                acts.append(act_batch(self.agent, *rows))
        return [a.reshape(len(o), n, -1) for a, o, n in zip(acts, observations, counts)]


def random_sampler(**env_options: Any) -> Sampler:
    """Uniformly random legal bids (each token to a uniform legal target)."""
    return Sampler(RandomAgent(**env_options), cheap=True)


def margin_value(layout: ObservationLayout, scale: float = MARGIN_SCALE) -> Value:
    """A stand-in for a critic: the observer's projected margin (its support, tokens at their end-game points and
    the areas it would score if the game ended now, minus the best other seat's, the puppet included; docs/rules.md
    §5), squashed by ``tanh(margin / scale)`` into the rewards' range. It knows nothing of who is likely to win."""
    L = layout.codec.layout
    f = layout.features
    S, A = layout.seats, layout.areas
    bonus = L.rules.area_control_bonus

    def value(observations: np.ndarray) -> np.ndarray:
        obs = np.rint(np.asarray(observations, dtype=np.float64)).reshape(len(observations), -1)
        tokens = obs[:, f["tokens"].start : f["tokens"].stop].reshape(-1, S, 3)
        support = obs[:, f["support"].start : f["support"].stop]
        cubes = obs[:, f["cubes"].start : f["cubes"].stop].reshape(-1, A, S)
        most = cubes.max(2, keepdims=True)
        sole = (cubes == most) & (most > 0) & ((cubes == most).sum(2, keepdims=True) == 1)
        worth = L.area_support[None, :, None] + (10 * (cubes == L.spaces[None, :, None]) if bonus else 0)
        total = support + tokens @ L.token_points + (sole * worth).sum(1)
        return np.tanh((total[:, 0] - total[:, 1:].max(1)) / scale)

    return value


def appraisal_value(bot: Agent, scale: float = MARGIN_SCALE) -> Value:
    """A stand-in for a critic from the heuristics' judgement (:func:`.decisions.appraise`): the observer's
    projected margin as ``bot`` (a heuristic) appraises it (expected area points, the support still to come, the
    lead's worth in an earlier end), squashed by ``tanh(margin / scale)``. It is what the heuristics' bids are
    built on."""
    from revolution_env.agents.compiled import observers_margins  # only the heuristics' code needs it

    def value(observations: np.ndarray) -> np.ndarray:
        return np.tanh(observers_margins(bot, np.asarray(observations)) / scale)

    return value


# --- one round on the engine -------------------------------------------------------------------------------------


def copy_game(game: Game) -> Game:
    """An independent copy of a game that shares its layout (the printed components and tables, never changed)."""
    return copy.deepcopy(game, {id(game.layout): game.layout, id(game.rules): game.rules})


def kind_of(game: Game, seat: int) -> Decision:
    """The decision ``seat`` faces in ``game`` (every player at a bid decision)."""
    d = game.decision
    if d is None:
        return Decision.NONE
    if d.kind == BID:
        return Decision.BID
    return d.kind if d.seat == seat else Decision.NONE


def play_rounds(game: Game, joint_bids: np.ndarray, chooser: Agent, layout: ObservationLayout) -> list[Game]:
    """Each joint bid (m, players, T, 3) played on its own copy of ``game`` to the next bid decision or the end,
    every other decision made by ``chooser`` (one ``act_batch`` over the copies that wait for one, step by step)."""
    codec = layout.codec
    games = []
    for bids in joint_bids:
        g = copy_game(game)
        g.submit_bids(bids)
        games.append(g)
    while True:
        waiting = [g for g in games if g.decision is not None and g.decision.kind != BID]
        if not waiting:
            return games
        seats = [g.decision.seat for g in waiting]
        kinds = [g.decision.kind for g in waiting]
        obs = np.stack([layout.build(g, s, k) for g, s, k in zip(waiting, seats, kinds)])
        masks = np.stack([codec.mask(g, s, k) for g, s, k in zip(waiting, seats, kinds)])
        actions = act_batch(chooser, obs, masks, np.array([int(k) for k in kinds]))
        for g, s, k, a in zip(waiting, seats, kinds, actions):
            g.choose(codec.choice(int(a[0]), s, k))


def seat_values(games: Sequence[Game], layout: ObservationLayout, value: Value) -> np.ndarray:
    """(m, players): each player's payoff in each game: its final reward where the game is over (``win_loss``),
    else ``value`` of its observation at the bid decision (one call for all)."""
    players = layout.codec.P
    out = np.zeros((len(games), players))
    live = []
    for i, g in enumerate(games):
        if g.final is not None:
            seats = np.arange(players)
            support = np.broadcast_to(np.asarray(g.final["support"]), (players, len(g.final["support"])))
            out[i] = final_rewards("win_loss", np.isin(seats, g.final["winners"]), support, seats)
        else:
            live.append(i)
    if live:
        obs = np.stack([layout.build(games[i], s, BID) for i in live for s in range(players)])
        out[live] = np.asarray(value(obs), dtype=np.float64).reshape(len(live), players)
    return out


class BatchedRounds:
    """:func:`play_rounds` and :func:`seat_values` on the batched engine: the position loaded into one row per joint
    bid (``BatchedGame.load``), the bids submitted in one call (D9's coin the position's, as every copy of the
    scalar game flips it), then, while rows wait for a Guy, Spy, Apothecary or Remove decision, those rows observed
    for their decider and ``chooser`` asked in one ``act_batch`` over them, in row order as :func:`play_rounds` asks;
    then every player of every row observed and valued in one call. The same payoffs as the scalar reference where
    ``chooser``'s draws are the same (``tests/test_equilibrium.py``). The batch is kept between calls, grown as
    needed."""

    def __init__(self, layout: ObservationLayout) -> None:
        from revolution_env.env.batched import BatchedView

        self.layout, self.codec = layout, layout.codec
        self.view = BatchedView(layout.codec, layout)
        self.batch: BatchedGame | None = None

    def _rows(self, m: int) -> BatchedGame:
        from revolution_env.engine.batched import BatchedGame

        if self.batch is None or self.batch.n < m:
            n = max(m, 64, 0 if self.batch is None else 2 * self.batch.n)
            seeds = np.zeros(n, dtype=np.int64)  # its coins are never drawn: each round is given the position's
            self.batch = BatchedGame(self.codec.layout, n, seeds=seeds, rng=np.random.default_rng(0))
        return self.batch

    def payoffs(self, game: Game, joint_bids: np.ndarray, chooser: Agent, value: Value, coin: int | None = None
                ) -> np.ndarray:  # fmt: skip
        """(m, players): each joint bid (m, players, T, 3) played one round from ``game`` (at a bid decision), each
        player's payoff in it as :func:`seat_values` gives it. ``coin``: ``game.next_coin()``, where the caller has
        it already (two players)."""
        return self.payoffs_many([game], [joint_bids], chooser, value, None if coin is None else [coin])[0]

    def payoffs_many(self, games: Sequence[Game], joint_bids: Sequence[np.ndarray], chooser: Agent, value: Value,
                     coins: Sequence[int] | None = None, rollout: int = 0) -> list[np.ndarray]:  # fmt: skip
        """:meth:`payoffs` of many positions in one batch (each ``games[i]`` with its ``joint_bids[i]``, on rows of
        its own, in order): the engine's steps, the chooser's and the value's calls over the rows of all of them.
        ``rollout``: rounds ``chooser`` then plays on in every seat (:class:`Settings`) before the value."""
        L, view = self.codec.layout, self.view
        P = L.players
        sizes = [len(j) for j in joint_bids]
        starts = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
        m = int(starts[-1])
        batch = self._rows(m)
        rows = np.arange(m)
        for game, lo, hi in zip(games, starts[:-1], starts[1:]):
            batch.load(rows[lo:hi], game)
        bids = np.ascontiguousarray(np.concatenate(joint_bids), dtype=np.int64)
        priority = None
        if L.scheming >= 0:  # D9: the rule where it decides, else the coin every copy of the position flips
            if coins is None:
                coins = [game.next_coin() for game in games]
            from revolution_env.engine.batched import clean_bids_batch, priority_by_rule_batch

            ruled = priority_by_rule_batch(clean_bids_batch(bids, L)[0], L)
            priority = np.where(ruled >= 0, -1, np.repeat(np.asarray(coins, dtype=np.int64), sizes))
        batch.submit_bids(rows, bids, priority=priority)
        self._to_bids(batch, rows, chooser)
        for _ in range(rollout):  # the blueprint plays on, every seat, its coins the batch's own
            live = rows[~batch.over[:m]]
            if not len(live):
                break
            at, seats = np.repeat(live, P), np.tile(np.arange(P), len(live))
            kinds = np.full(len(at), int(BID))
            obs, masks = view.observe_and_mask(batch, at, seats, kinds)
            counts = view.bid_counts(act_batch(chooser, obs, masks, kinds), batch.tokens[at, seats])
            batch.submit_bids(live, np.ascontiguousarray(counts.reshape(len(live), P, *counts.shape[1:])))
            self._to_bids(batch, live, chooser)
        out = np.zeros((m, P))
        over = batch.over[:m]
        ended = rows[over]
        if len(ended):
            seats = np.tile(np.arange(P), len(ended))
            support = np.repeat(batch.final_support[ended], P, 0)
            won = batch.final_win[ended, :P].ravel()
            out[ended] = final_rewards("win_loss", won, support, seats).reshape(len(ended), P)
        live = rows[~over]
        if len(live):
            at, seats = np.repeat(live, P), np.tile(np.arange(P), len(live))
            obs = view.observe(batch, at, seats, np.full(len(at), int(BID)))
            out[live] = np.asarray(value(obs), dtype=np.float64).reshape(len(live), P)
        return [out[lo:hi] for lo, hi in zip(starts[:-1], starts[1:])]

    def _to_bids(self, batch: BatchedGame, rows: np.ndarray, chooser: Agent) -> None:
        """``rows`` played on, ``chooser`` deciding for every row that waits for a Guy, Spy, Apothecary or Remove
        decision (one ``act_batch`` a step, in row order), until each is at a bid decision or over."""
        view = self.view
        while True:
            waiting = rows[batch.kind[rows] >= int(Decision.GUY)]
            if not len(waiting):
                return
            seats, kinds = batch.decider[waiting].copy(), batch.kind[waiting].copy()
            obs, masks = view.observe_and_mask(batch, waiting, seats, kinds)
            actions = act_batch(chooser, obs, masks, kinds)
            batch.choose(waiting, view.engine_choices(actions[:, 0], seats, kinds))


def solved_payoff(values: np.ndarray, seat: int) -> np.ndarray:
    """A seat's payoff in the game solved, from each player's payoff (``values``: (..., players)): its own value,
    or with two players half the difference (the zero-sum game of :func:`.matrix_games.solve`)."""
    values = np.asarray(values)
    if values.shape[-1] == 2:
        return 0.5 * (values[..., seat] - values[..., 1 - seat])
    return values[..., seat]


# --- the search --------------------------------------------------------------------------------------------------


@dataclass
class RoundSearch:
    """What a search found at one bid decision. ``bids[s]`` (K_s, T, 3) seat ``s``'s candidates (token counts)
    and ``actions[s]`` the same as actions; ``payoffs`` (K_1, ..., K_n, n); ``solution`` its equilibrium;
    ``added`` the best responses the double oracle added per seat; ``rollouts`` the joint bids played;
    ``seconds`` where the time went."""

    bids: list[np.ndarray]
    actions: list[np.ndarray]
    payoffs: np.ndarray
    solution: Solution
    added: list[int]
    rollouts: int
    seconds: dict[str, float] = field(default_factory=dict)


class _Clock:
    def __init__(self) -> None:
        self.seconds: dict[str, float] = {}

    def add(self, what: str, since: float) -> float:
        now = time.perf_counter()
        self.seconds[what] = self.seconds.get(what, 0.0) + now - since
        return now


def distinct(bids: np.ndarray, actions: np.ndarray, limit: int, seen: set[bytes] | None = None
             ) -> tuple[list[np.ndarray], list[np.ndarray]]:  # fmt: skip
    """The first ``limit`` bids not seen before (and not in ``seen``), with their actions."""
    seen = set() if seen is None else set(seen)
    kept_bids, kept_actions = [], []
    for b, a in zip(bids, actions):
        key = b.tobytes()
        if key not in seen and len(kept_bids) < limit:
            seen.add(key)
            kept_bids.append(b)
            kept_actions.append(a)
    return kept_bids, kept_actions


def neighbours(bids: np.ndarray, legal: np.ndarray) -> np.ndarray:
    """Every bid one token away from one of ``bids`` (m, T, 3): a token moved to another target that takes its
    type. Local changes are where a best response to a mixture of near bids is found (outbidding by one)."""
    out = []
    T = legal.shape[0]
    for b in bids:
        for c, k in zip(*np.nonzero(b)):
            for d in np.flatnonzero(legal[:, k]):
                if d != c:
                    moved = b.copy()
                    moved[c, k] -= 1
                    moved[d, k] += 1
                    out.append(moved)
    return np.array(out, dtype=np.int64).reshape(-1, T, 3)


@dataclass
class _Position:
    """One position's search as it goes: its game, generator, D9's coin (two players), every seat's view, the
    candidates, the payoffs played so far by joint bid, and the game solved last."""

    game: Game
    rng: np.random.Generator
    coin: int | None
    views: list[tuple[np.ndarray, np.ndarray]]
    bids: list[np.ndarray] = field(default_factory=list)
    actions: list[np.ndarray] = field(default_factory=list)
    cache: dict[tuple[bytes, ...], np.ndarray] = field(default_factory=dict)
    payoffs: np.ndarray | None = None
    solution: Solution | None = None
    added: list[int] = field(default_factory=list)


class RoundSearcher:
    """The search at one variant's bid decisions (the module's documentation): ``blueprint`` proposes bids,
    ``heuristics`` add theirs, ``chooser`` makes the round's other decisions, ``value`` scores the next state."""

    def __init__(self, layout: ObservationLayout, blueprint: Sampler, chooser: Agent, value: Value,
                 heuristics: Sequence[Agent] = (), settings: Settings | None = None) -> None:  # fmt: skip
        self.layout, self.codec = layout, layout.codec
        self.blueprint, self.chooser, self.value = blueprint, chooser, value
        self.heuristics = list(heuristics)
        self.settings = settings if settings is not None else Settings()
        self.players = self.codec.P
        self.rounds = BatchedRounds(layout) if self.settings.engine == "batched" else None
        if self.rounds is not None:
            self.view = self.rounds.view  # the candidates' bid counts, many at once
        else:
            from revolution_env.env.batched import BatchedView

            self.view = BatchedView(layout.codec, layout)

    def search(self, game: Game, rng: np.random.Generator) -> RoundSearch:
        """The equilibrium of ``game``'s round, at a bid decision, for every player."""
        return self.search_many([game], [rng])[0]

    def search_many(self, games: Sequence[Game], rngs: Sequence[np.random.Generator]) -> list[RoundSearch]:
        """:meth:`search` of many positions at once, each with its own generator (each position's draws those of its
        search alone): the rounds of all of them played together at every stage (the first payoffs, the double
        oracle's pools, the grown games), on the batched engine in one batch (``BatchedRounds.payoffs_many``).
        ``seconds`` is the whole call's, in every result."""
        for game in games:
            if game.decision is None or game.decision.kind != BID:
                raise ValueError("search: the game is not at a bid decision")
        clock = _Clock()
        t = time.perf_counter()
        codec, st, P = self.codec, self.settings, self.players
        found = []
        for game, rng in zip(games, rngs):
            coin = game.next_coin() if codec.layout.scheming >= 0 else None  # every round searched flips it
            views = [(self.layout.build(game, s, BID), codec.mask(game, s, BID)) for s in range(P)]
            found.append(_Position(game, rng, coin, views, added=[0] * P))
        self._candidates(found)
        t = clock.add("candidates", t)
        t = self._solve(found, clock, t)
        growing = found if st.pool > 0 else []
        for _ in range(st.oracle):
            if not growing:
                break
            # every seat's pool against the others' strategies, played in one batch (each seat's is scored against
            # the strategies solved, whatever another seat adds)
            asked = [[self._pool_rows(at, s, obs, mask) for s, (obs, mask) in enumerate(at.views)] for at in growing]
            t = clock.add("pool", t)
            wanted = []
            for at, pools in zip(growing, asked):
                missing = {k: r for a in pools if a is not None for r, k in zip(a[1], a[2]) if k not in at.cache}
                wanted.append((at, list(missing.values()), list(missing)))
            t = self._play(wanted, clock, t)
            grown = []
            for at, pools in zip(growing, asked):
                for s, a in enumerate(pools):
                    best = None if a is None else self._best_response(s, *a, at.solution, at.cache)
                    if best is not None:
                        at.bids[s] = np.concatenate([at.bids[s], best[0][None]])
                        at.actions[s] = np.concatenate([at.actions[s], best[1][None]])
                        at.added[s] += 1
                if any(len(b) > k for b, k in zip(at.bids, at.payoffs.shape)):
                    grown.append(at)
            t = self._solve(grown, clock, t)
            growing = grown
        return [RoundSearch(at.bids, at.actions, at.payoffs, at.solution, at.added, len(at.cache), clock.seconds)
                for at in found]  # fmt: skip

    def _candidates(self, positions: list[_Position]) -> None:
        """Every position's ``bids`` and ``actions``: each seat's distinct candidates, the heuristics' bids first
        (``Settings.heuristics`` of them), then the blueprint's samples, ``K`` in all.
        Each heuristic bids for every seat of a position in one call, and the blueprint samples for every seat of
        every position in one call (one call over many rows costs less than one a seat: docs/experiments.md): as
        many samples a seat as the seat with the fewest distinct bids lacks, then, where draws repeated, ``2K``
        more (a heuristic blueprint's sample costs as much as a heuristic's bid). Each position's draws are those
        of its search alone."""
        codec, K, P = self.codec, self.settings.candidates, self.players
        views, acts, found = [], [], []
        for at in positions:
            obs, masks = np.stack([o for o, _ in at.views]), np.stack([m for _, m in at.views])
            drawn = np.zeros((P, 0, len(codec.nvec)), dtype=np.int64)
            for bot in self.heuristics[: min(K, self.settings.heuristics)]:
                bot.reset(int(at.rng.integers(SEED_BOUND)))
                drawn = np.concatenate([drawn, act_batch(bot, obs, masks, np.full(P, int(BID)))[:, None]], axis=1)
            views.append((obs, masks))
            acts.append(drawn)
            found.append(self._distinct(drawn, at.game.tokens))
        for more in (None, 2 * K):
            short = [i for i, f in enumerate(found) if min(len(b) for b, _ in f) < K]
            if not short:
                break
            counts = [K - min(len(b) for b, _ in found[i]) if more is None else more for i in short]
            samples = self.blueprint.sample_many([views[i][0] for i in short], [views[i][1] for i in short], counts,
                                                 [positions[i].rng for i in short])  # fmt: skip
            for i, got in zip(short, samples):
                acts[i] = np.concatenate([acts[i], got], axis=1)
                found[i] = self._distinct(acts[i], positions[i].game.tokens)
        for at, f in zip(positions, found):
            at.bids, at.actions = [np.array(b) for b, _ in f], [np.array(a) for _, a in f]

    def _distinct(self, acts: np.ndarray, tokens: np.ndarray) -> list[tuple[list[np.ndarray], list[np.ndarray]]]:
        """Each seat's first ``K`` distinct bids of ``acts`` (P, n, D), as token counts and as actions."""
        K = self.settings.candidates
        P, n, D = acts.shape
        counts = self.view.bid_counts(acts.reshape(P * n, D), np.repeat(tokens[:P], n, 0)).reshape(
            P, n, self.codec.T, 3
        )
        return [distinct(c, rows, K) for c, rows in zip(counts, acts)]

    def _solve(self, positions: list[_Position], clock: _Clock, t: float) -> float:
        """Every position's payoffs (K_1, ..., K_n, n) over its candidates, the joint bids not in its cache played
        (all positions' in one batch), and their equilibria."""
        wanted, joints = [], []
        for at in positions:
            index = list(itertools.product(*[range(len(b)) for b in at.bids]))
            keys = [tuple(at.bids[s][i].tobytes() for s, i in enumerate(j)) for j in index]
            missing = {k: np.stack([at.bids[s][i] for s, i in enumerate(j)])
                       for k, j in zip(keys, index) if k not in at.cache}  # fmt: skip
            wanted.append((at, list(missing.values()), list(missing)))
            joints.append(keys)
        t = self._play(wanted, clock, t)
        st = self.settings
        for at, keys in zip(positions, joints):
            at.payoffs = np.stack([at.cache[k] for k in keys]).reshape(*[len(b) for b in at.bids], self.players)
            at.solution = solve(at.payoffs, st.iterations, st.method)
        return clock.add("solve", t)

    def _play(self, wanted: list[tuple[_Position, list[np.ndarray], list]], clock: _Clock, t: float) -> float:
        """The joint bids ``wanted`` (position, joint bids, their keys) played, their payoffs into the positions'
        caches: on the batched engine all positions in one batch, on the scalar engine each on copies of its game."""
        wanted = [(at, rows, keys) for at, rows, keys in wanted if rows]
        if not wanted:
            return t
        if self.rounds is not None:
            games, joints = [at.game for at, _, _ in wanted], [np.stack(rows) for _, rows, _ in wanted]
            coins = None if self.codec.layout.scheming < 0 else [at.coin for at, _, _ in wanted]
            values = self.rounds.payoffs_many(games, joints, self.chooser, self.value, coins, self.settings.rollout)
            t = clock.add("rounds", t)  # the values inside: the batched rounds end in one call of the value
        else:
            values = []
            for at, rows, _ in wanted:
                games = play_rounds(at.game, np.stack(rows), self.chooser, self.layout)
                t = clock.add("rounds", t)
                values.append(seat_values(games, self.layout, self.value))
                t = clock.add("values", t)
        for (at, _, keys), got in zip(wanted, values):
            for k, v in zip(keys, got):
                at.cache[k] = v
        return t

    def _pool_rows(self, at: _Position, seat: int, obs: np.ndarray, mask: np.ndarray
                   ) -> tuple[np.ndarray, list[np.ndarray], list[tuple], list[float]] | None:  # fmt: skip
        """``seat``'s pool (:meth:`_pool`) and the joint bids that score it against the others' strategies: ``(pool,
        rows, keys, weights)``, every pool bid against every combination of the others' bids they play, each
        combination's probability its weight; None for an empty pool."""
        bids, x = at.bids, at.solution.strategies
        pool = self._pool(seat, obs, mask, bids[seat], x[seat], at.game.tokens[seat], at.rng)
        if not len(pool):
            return None
        support = []  # the others' bids they play, with their probabilities
        for s in range(self.players):
            keep = np.flatnonzero(x[s] >= SUPPORT_FLOOR) if s != seat else np.array([0])
            p = x[s][keep] / x[s][keep].sum() if s != seat else np.ones(1)
            support.append((keep, p))
        rows, keys, weights = [], [], []
        for combo in itertools.product(*[range(len(k)) for k, _ in support]):
            w = np.prod([support[s][1][i] for s, i in enumerate(combo)])
            for b in pool:
                joint = [b if s == seat else bids[s][support[s][0][i]] for s, i in enumerate(combo)]
                rows.append(np.stack(joint))
                keys.append(tuple(j.tobytes() for j in joint))
                weights.append(w)
        return pool, rows, keys, weights

    def _best_response(self, seat: int, pool: np.ndarray, rows: list[np.ndarray], keys: list[tuple],
                       weights: list[float], solution: Solution, cache: dict
                       ) -> tuple[np.ndarray, np.ndarray] | None:  # fmt: skip
        """The pool bid of ``seat`` that does best against the others' strategies (:meth:`_pool_rows`, played), with
        its action, where it gains more than ``oracle_gain`` over the seat's own strategy in the game solved; else
        None."""
        payoff = np.stack([solved_payoff(cache[k], seat) for k in keys]) * np.array(weights)
        worth = payoff.reshape(-1, len(pool)).sum(0)  # (pool,): each pool bid against the others' mixture
        mine = solved_payoff(solution.values, seat)
        i = int(np.argmax(worth))
        if worth[i] - mine <= self.settings.oracle_gain:
            return None
        return pool[i], self.codec.action_from_bid(pool[i])

    def _pool(self, seat: int, obs: np.ndarray, mask: np.ndarray, bids: np.ndarray, strategy: np.ndarray,
              held: np.ndarray, rng: np.random.Generator) -> np.ndarray:  # fmt: skip
        """Up to ``pool`` bids of ``seat`` that are not candidates yet: the blueprint's samples where they are
        cheap (half the pool), then single-token moves of the bids the seat plays, drawn at random."""
        n = self.settings.pool
        seen = {b.tobytes() for b in bids}
        out: list[np.ndarray] = []
        if self.blueprint.cheap:
            acts = self.blueprint.sample(obs, mask, n // 2, rng)
            drawn = np.stack([self.codec.bid_counts(a, held) for a in acts])
            out, _ = distinct(drawn, acts, n // 2, seen)
            seen |= {b.tobytes() for b in out}
        near = neighbours(bids[strategy >= SUPPORT_FLOOR], self.codec.layout.legal)
        if len(near):
            near = near[rng.permutation(len(near))]
            more, _ = distinct(near, near, n - len(out), seen)
            out += more
        T = self.codec.T
        return np.array(out, dtype=np.int64).reshape(-1, T, 3)


# --- the agent ---------------------------------------------------------------------------------------------------


class EquilibriumAgent(Agent):
    """Bids drawn from our seat's strategy in the round's equilibrium (the module's documentation); every other
    decision ``chooser``'s. ``last`` keeps the search of the latest bid (for reports and tests)."""

    name = "equilibrium"

    def __init__(self, blueprint: Sampler, chooser: Agent, value: Value, heuristics: Sequence[Agent] = (),
                 settings: Settings | None = None, seed: int | None = None, **env_options: Any) -> None:  # fmt: skip
        options = {k: v for k, v in env_options.items() if k not in ("reward", "action_mode")}
        super().__init__(**options)
        if seed is not None:
            _check_int("seed", seed, 0)
        self.seed = seed
        self.chooser = chooser
        self.searcher = RoundSearcher(self.layout, blueprint, chooser, value, heuristics, settings)
        self.last: RoundSearch | None = None

    def reset(self, seed: int | None = None) -> None:
        """A game's seed; the agent's own ``seed`` (the spec's ``seed=``), where given, is mixed into it, so that
        two agents that differ only by it search differently in the same game."""
        if self.seed is not None:
            seed = int(np.random.SeedSequence([self.seed, *([] if seed is None else [seed])]).generate_state(1)[0])
        super().reset(seed)
        self.chooser.reset(None if seed is None else int(self.rng.integers(SEED_BOUND)))

    def fork(self, seed: int | None) -> EquilibriumAgent:
        twin = copy.copy(self)
        twin.chooser = self.chooser.fork(None)
        s = self.searcher
        blueprint = Sampler(s.blueprint.agent.fork(None), s.blueprint.cheap, s.blueprint.temperature)
        heuristics = [h.fork(None) for h in s.heuristics]
        twin.searcher = RoundSearcher(s.layout, blueprint, twin.chooser, s.value, heuristics, s.settings)
        twin.reset(seed)
        return twin

    def search(self, observation: dict[str, np.ndarray]) -> RoundSearch:
        """The search at a bid decision of ours, on the game rebuilt from our observation."""
        game = game_from_observation(observation["observation"][: self.layout.size], self.layout, 0, self.rng)
        self.last = self.searcher.search(game, self.rng)
        return self.last

    def act(self, observation: dict[str, np.ndarray], info: dict[str, Any]) -> np.ndarray:
        if Decision(int(info["decision"])) != Decision.BID:
            return self.chooser.act(observation, info)
        found = self.search(observation)
        x = found.solution.strategies[0]
        return found.actions[0][int(self.rng.choice(len(x), p=x / x.sum()))]

    def act_batch(self, observations: np.ndarray, masks: np.ndarray, decisions: np.ndarray) -> np.ndarray:
        """Actions (n, D) for many games' rows at once: the bid rows searched together
        (:meth:`RoundSearcher.search_many`, their rounds in one batch), each with a generator of its own drawn from
        the agent's, which rebuilds its game, searches and draws its bid; the other rows by ``chooser`` in one call.
        Reproducible after :meth:`reset`, but not the draws of :meth:`act` row by row."""
        observations, decisions = np.asarray(observations), np.asarray(decisions).reshape(-1)
        out = np.zeros((len(observations), len(self.codec.nvec)), dtype=np.int64)
        bid = np.flatnonzero(decisions == int(Decision.BID))
        other = np.flatnonzero(decisions != int(Decision.BID))
        if len(other):
            out[other] = act_batch(self.chooser, observations[other], np.asarray(masks)[other], decisions[other])
        if len(bid):
            rngs = [np.random.default_rng(int(self.rng.integers(SEED_BOUND))) for _ in bid]
            size = self.layout.size
            games = [game_from_observation(observations[i][:size], self.layout, 0, r) for i, r in zip(bid, rngs)]
            for i, found, rng in zip(bid, self.searcher.search_many(games, rngs), rngs):
                x = found.solution.strategies[0]
                out[i] = found.actions[0][int(rng.choice(len(x), p=x / x.sum()))]
        return out


# --- the spec: equilibrium:[KEY=VALUE:]...POLICY -----------------------------------------------------------------

OPTIONS = {  # the spec's keys: (Settings field or agent option, type)
    "k": ("candidates", int),
    "iterations": ("iterations", int),
    "pool": ("pool", int),
    "oracle": ("oracle", int),
    "gain": ("oracle_gain", float),
    "method": ("method", str),
    "engine": ("engine", str),
    "rollout": ("rollout", int),
    "heuristics": ("heuristics", int),
    "seed": ("seed", int),
    "value": ("value", str),
    "critic": ("critic", str),
    "play": ("play", str),
    "temperature": ("temperature", float),
}
VALUES = ("critic", "appraisal", "margin")  # value=: the checkpoint's critic (or critic=PATH's), or a stand-in
# play=: how a checkpoint makes the round's other decisions and the rollouts' bids, where not as it says it plays:
# its argmax, or drawn from its distribution (a policy trained to be sampled: its factorised argmax can be a bid it
# rarely plays)
PLAYS = ("argmax", "sample")


def is_equilibrium(spec: Any) -> bool:
    return isinstance(spec, str) and spec.startswith(PREFIX)


def parse_spec(spec: str) -> tuple[dict[str, Any], str]:
    """The options and the policy of ``equilibrium:[KEY=VALUE:]...POLICY`` (keys: :data:`OPTIONS`), or
    ``ValueError`` in one line."""
    rest = spec[len(PREFIX) :]
    options: dict[str, Any] = {}
    while True:
        head, sep, tail = rest.partition(":")
        if not sep or "=" not in head:
            break
        key, _, text = head.partition("=")
        if key not in OPTIONS:
            raise ValueError(f"{spec!r}: unknown option {key!r} (options: {', '.join(OPTIONS)})")
        name, kind = OPTIONS[key]
        try:
            options[name] = kind(text)
        except ValueError:
            raise ValueError(f"{spec!r}: {key}={text!r} is not a{'n integer' if kind is int else ' number'}") from None
        rest = tail
    if not rest or "=" in rest.partition(":")[0]:
        raise ValueError(f"{spec!r}: expected {PREFIX}[KEY=VALUE:]...POLICY, POLICY a heuristic or a checkpoint file")
    if options.get("value", "margin") not in VALUES:
        raise ValueError(f"{spec!r}: value={options['value']!r}: expected one of {', '.join(VALUES)}")
    if options.get("play", "argmax") not in PLAYS:
        raise ValueError(f"{spec!r}: play={options['play']!r}: expected one of {', '.join(PLAYS)}")
    return options, rest


def play_problem(spec: str, policy: str) -> str:
    """Why ``play=`` is refused with a named ``policy``, which plays as it always does."""
    return f"{spec!r}: play= is how a checkpoint plays; {policy} plays as it always does"


def temperature_problem(spec: str, options: dict[str, Any], named: bool) -> str | None:
    """Why ``temperature=`` is refused: not a positive number, or a named policy (whose bids have no logits)."""
    if "temperature" not in options:
        return None
    t = options["temperature"]
    if named:
        return f"{spec!r}: temperature= divides a checkpoint's logits; a named policy has none"
    if not (np.isfinite(t) and t > 0):
        return f"{spec!r}: temperature: expected a number above 0, got {t!r}"
    return None


AGENT_OPTIONS = ("seed", "value", "critic", "play", "temperature")  # the spec's keys that are not Settings'


def spec_settings(options: dict[str, Any]) -> Settings:
    return Settings(**{k: v for k, v in options.items() if k not in AGENT_OPTIONS})


def load_equilibrium(spec: str, load: Callable[..., Agent], named: Callable[[str], bool],
                     **env_options: Any) -> EquilibriumAgent:  # fmt: skip
    """The agent of an ``equilibrium:`` spec: its policy built by ``load(POLICY, **env_options)``, a named agent
    (``random`` or a heuristic, which ``named`` tells) or a checkpoint; the heuristics' bids by ``load``.

    A named agent has no critic: its states are scored by :func:`margin_value` (``value=margin``, its default) or
    :func:`appraisal_value` (``value=appraisal``). A checkpoint's are scored by its critic (``value=critic``,
    the default: ``PolicyAgent.value(observations) -> values``, raw observation vectors in, one value per row in
    the rewards' range), which a checkpoint without one refuses in one line; ``value=appraisal`` or ``value=margin``
    asks for a stand-in. ``critic=PATH`` scores the states of either by the critic in ``PATH`` instead
    (:func:`.checkpoint.load_critic`: a critic file that ``revolution fit-critic`` wrote for agents without a
    network, or a policy checkpoint's critic), which must predict the ``win_loss`` reward, the payoff of a game
    that ends within the round. A checkpoint is sampled for candidates (its masked distribution, cheap enough for
    the double oracle's pool too; its candidates are its own samples alone unless ``heuristics=`` says otherwise)
    and plays every other decision and the rollouts as it says it plays (its ``play``: argmax or sample), or as
    ``play=argmax`` or ``play=sample`` says."""
    options, policy = parse_spec(spec)
    if not named(policy):  # a checkpoint's other decisions go with bids of its own (docs/experiments.md)
        options.setdefault("heuristics", 0)
    if problem := temperature_problem(spec, options, named(policy)):
        raise ValueError(problem)
    try:
        settings = spec_settings(options)
    except ValueError as exc:
        raise ValueError(f"{spec!r}: {exc}") from None
    env_options = {k: v for k, v in env_options.items() if k not in ("reward", "action_mode")}
    heuristics = [load(name, **env_options) for name in HEURISTIC_BIDS]
    critic = options.get("critic")
    if critic is not None and options.get("value", "critic") != "critic":
        raise ValueError(f"{spec!r}: critic= scores the states by that critic, value={options['value']} by a stand-in:"
                         " give one of them")  # fmt: skip
    if named(policy):
        if "play" in options:
            raise ValueError(play_problem(spec, policy))
        blueprint = Sampler(load(policy, **env_options), cheap=policy == "random")
        chooser = load(policy, **env_options)
        how = options.get("value", "critic" if critic is not None else "margin")
        if how == "critic" and critic is None:
            raise ValueError(f"{spec!r}: {policy} has no critic; give critic=PATH, value=margin or value=appraisal")
    else:
        blueprint = Sampler(
            load(policy + ":sample", **env_options), cheap=True, temperature=options.get("temperature", 1.0)
        )
        chooser = load(f"{policy}:{options['play']}" if "play" in options else policy, **env_options)
        how = options.get("value", "critic")
    if critic is not None:
        from revolution_env.agents.checkpoint import load_critic  # (torch reads the file)

        fitted = load_critic(critic, **env_options)
        if fitted.target != "win_loss":
            raise ValueError(f"{spec!r}: {critic} predicts the {fitted.target} reward; the search's payoffs are "
                             "win_loss (fit one with revolution fit-critic --target win_loss)")  # fmt: skip
        value = fitted.value
    elif how == "critic":
        value = _critic(policy, chooser)
    elif how == "appraisal":
        value = appraisal_value(heuristics[0])
    else:
        value = margin_value(chooser.layout)
    agent = EquilibriumAgent(blueprint, chooser, value, heuristics, settings, options.get("seed"), **env_options)
    agent.name = spec
    return agent


def _critic(path: str, policy: Agent) -> Value:
    """A checkpoint's critic as a batched function of observations (``PolicyAgent.value``: raw observations in, as
    the environment gives them), or ``ValueError`` where it has none (``PolicyAgent.critic`` is None)."""
    if getattr(policy, "critic", None) is None:
        raise ValueError(
            f"{path}: the checkpoint carries no critic to score the search's states; give {PREFIX}value=margin:{path}"
            " (or value=appraisal) to score them by a stand-in"
        )
    return policy.value
