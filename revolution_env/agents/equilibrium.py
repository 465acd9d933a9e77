"""A round's equilibrium by search, for every seat: ``equilibrium:`` agents.

A round's bid is a secret simultaneous allocation of a few tokens over a dozen characters, a Colonel Blotto game:
a bid played with near certainty is outbid, and an equilibrium mixes. As SearchBot does in Diplomacy (Gray et al.,
"Human-Level Performance in No-Press Diplomacy via Equilibrium Search", ICLR 2021), at each of our bid decisions:

1. **The state.** The game is rebuilt from our observation (:func:`.env.reconstruct.game_from_observation`: the
   public state, the first edition's draw pile shuffled from the cards left; the observer at seat 0, since an
   agent does not know its seat).
2. **Candidates, for every seat.** ``K`` distinct bids per player: the heuristics' bids for that seat (``value``,
   ``bargain``, ``area``, each on that seat's observation), then samples of the blueprint policy until there are
   ``K`` (a checkpoint's masked distribution, or a heuristic's bids under fresh seeds).
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

This module is the scalar reference: every joint bid is played on its own copy of the scalar engine. The batched
engine is how it is meant to run fast (docs/experiments.md, "A round's equilibrium by search": where the time goes,
what that version needs, and how this reference plays).
"""

from __future__ import annotations

import copy
import itertools
import numbers
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from revolution_env.agents.base import Agent, RandomAgent, act_batch
from revolution_env.agents.matrix_games import METHODS, Solution, solve
from revolution_env.engine.game import BID, Decision, Game
from revolution_env.env.core import MARGIN_SCALE, final_rewards
from revolution_env.env.observation import ObservationLayout
from revolution_env.env.reconstruct import game_from_observation

PREFIX = "equilibrium:"
HEURISTIC_BIDS = ("value", "bargain", "area")  # the heuristics whose bid for each seat is always a candidate
SUPPORT_FLOOR = 0.01  # a bid played with less probability is left out when scoring the pool against a mixture
SEED_BOUND = 2**32

Value = Callable[[np.ndarray], np.ndarray]  # observations (m, size) -> (m,) each observer's value


@dataclass(frozen=True)
class Settings:
    """The options of a search. ``candidates``: bids per seat before the double oracle (K); ``iterations``: of
    regret matching; ``pool``: bids scored per seat and oracle round; ``oracle``: double-oracle rounds (0: none);
    ``oracle_gain``: what a best response must gain, in the game solved, to join; ``method``: the solver
    (:data:`.matrix_games.METHODS`)."""

    candidates: int = 4
    iterations: int = 1000
    pool: int = 16
    oracle: int = 1
    oracle_gain: float = 0.02
    method: str = "auto"

    def __post_init__(self) -> None:
        for name in ("candidates", "iterations"):
            _check_int(name, getattr(self, name), 1)
        for name in ("pool", "oracle"):
            _check_int(name, getattr(self, name), 0)
        gain = self.oracle_gain
        if isinstance(gain, bool) or not isinstance(gain, numbers.Real) or not gain >= 0:
            raise ValueError(f"oracle_gain: expected a number at least 0, got {gain!r}")
        if self.method not in METHODS:
            raise ValueError(f"method: expected one of {', '.join(METHODS)}, got {self.method!r}")


def _check_int(name: str, value: Any, least: int) -> None:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < least:
        raise ValueError(f"{name}: expected an integer at least {least}, got {value!r}")


# --- what the search asks of a policy ---------------------------------------------------------------------------


class Sampler:
    """Bids of a policy at a bid decision: ``sample(observation, mask, n, rng)`` gives ``n`` bid actions (n, D),
    drawn afresh for each call (an agent's ``act_batch`` on ``n`` copies of the row, the agent reseeded from
    ``rng``). ``cheap``: whether a pool of samples costs little (a network's forward pass), which decides whether
    the double oracle's pool draws from it."""

    def __init__(self, agent: Agent, cheap: bool) -> None:
        self.agent, self.cheap = agent, cheap

    def sample(self, observation: np.ndarray, mask: np.ndarray, n: int, rng: np.random.Generator) -> np.ndarray:
        self.agent.reset(int(rng.integers(SEED_BOUND)))
        rows = np.repeat(observation[None], n, 0), np.repeat(mask[None], n, 0), np.full(n, int(BID))
        return act_batch(self.agent, *rows)


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

    def search(self, game: Game, rng: np.random.Generator) -> RoundSearch:
        """The equilibrium of ``game``'s round, at a bid decision, for every player."""
        if game.decision is None or game.decision.kind != BID:
            raise ValueError("search: the game is not at a bid decision")
        clock = _Clock()
        t = time.perf_counter()
        codec, st, P = self.codec, self.settings, self.players
        views = [(self.layout.build(game, s, BID), codec.mask(game, s, BID)) for s in range(P)]
        bids, actions = [], []
        for s, (obs, mask) in enumerate(views):
            b, a = self._candidates(obs, mask, game.tokens[s], rng)
            bids.append(b)
            actions.append(a)
        t = clock.add("candidates", t)
        cache: dict[tuple[bytes, ...], np.ndarray] = {}
        payoffs, t = self._payoffs(game, bids, cache, clock, t)
        solution = solve(payoffs, st.iterations, st.method)
        t = clock.add("solve", t)
        added = [0] * P
        for _ in range(st.oracle):
            if st.pool == 0:
                break
            grew = False
            for s, (obs, mask) in enumerate(views):
                best, t = self._best_response(game, s, obs, mask, bids, solution, cache, rng, clock, t)
                if best is not None:
                    bids[s] = np.concatenate([bids[s], best[0][None]])
                    actions[s] = np.concatenate([actions[s], best[1][None]])
                    added[s] += 1
                    grew = True
            if not grew:
                break
            payoffs, t = self._payoffs(game, bids, cache, clock, t)
            solution = solve(payoffs, st.iterations, st.method)
            t = clock.add("solve", t)
        return RoundSearch(bids, actions, payoffs, solution, added, len(cache), clock.seconds)

    def _candidates(self, obs: np.ndarray, mask: np.ndarray, held: np.ndarray, rng: np.random.Generator
                    ) -> tuple[np.ndarray, np.ndarray]:  # fmt: skip
        """A seat's distinct candidates: the heuristics' bids first, then the blueprint's samples, ``K`` in all."""
        codec, K = self.codec, self.settings.candidates
        acts = []
        for bot in self.heuristics[:K]:
            bot.reset(int(rng.integers(SEED_BOUND)))
            acts.append(np.asarray(bot.act({"observation": obs, "action_mask": mask}, {"decision": BID})))
        acts.extend(self.blueprint.sample(obs, mask, 2 * K, rng))  # twice as many: some are drawn twice
        acts = np.array(acts, dtype=np.int64)
        counts = np.stack([codec.bid_counts(a, held) for a in acts])
        b, a = distinct(counts, acts, K)
        return np.array(b), np.array(a)

    def _payoffs(self, game: Game, bids: list[np.ndarray], cache: dict, clock: _Clock, t: float
                 ) -> tuple[np.ndarray, float]:  # fmt: skip
        """(K_1, ..., K_n, n): every joint bid's payoffs, played where the cache does not have them yet."""
        joints = list(itertools.product(*[range(len(b)) for b in bids]))
        keys = [tuple(bids[s][i].tobytes() for s, i in enumerate(j)) for j in joints]
        missing = [(k, j) for k, j in zip(keys, joints) if k not in cache]
        t = self._play(game, [np.stack([bids[s][i] for s, i in enumerate(j)]) for _, j in missing],
                       [k for k, _ in missing], cache, clock, t)  # fmt: skip
        U = np.stack([cache[k] for k in keys]).reshape(*[len(b) for b in bids], self.players)
        return U, t

    def _play(self, game: Game, joint: list[np.ndarray], keys: list, cache: dict, clock: _Clock, t: float) -> float:
        if not joint:
            return t
        games = play_rounds(game, np.stack(joint), self.chooser, self.layout)
        t = clock.add("rounds", t)
        values = seat_values(games, self.layout, self.value)
        for k, v in zip(keys, values):
            cache[k] = v
        return clock.add("values", t)

    def _best_response(self, game: Game, seat: int, obs: np.ndarray, mask: np.ndarray, bids: list[np.ndarray],
                       solution: Solution, cache: dict, rng: np.random.Generator, clock: _Clock, t: float
                       ) -> tuple[tuple[np.ndarray, np.ndarray] | None, float]:  # fmt: skip
        """The pool bid of ``seat`` that does best against the others' strategies, with its action, where it gains
        more than ``oracle_gain`` over the seat's own strategy in the game solved; else None."""
        codec, st = self.codec, self.settings
        x = solution.strategies
        pool = self._pool(seat, obs, mask, bids[seat], x[seat], game.tokens[seat], rng)
        t = clock.add("pool", t)
        if not len(pool):
            return None, t
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
        missing = [(r, k) for r, k in zip(rows, keys) if k not in cache]
        t = self._play(game, [r for r, _ in missing], [k for _, k in missing], cache, clock, t)
        payoff = np.stack([self._solved(cache[k], seat) for k in keys]) * np.array(weights)
        worth = payoff.reshape(-1, len(pool)).sum(0)  # (pool,): each pool bid against the others' mixture
        mine = self._solved(solution.values, seat)
        i = int(np.argmax(worth))
        if worth[i] - mine <= st.oracle_gain:
            return None, t
        return (pool[i], codec.action_from_bid(pool[i])), t

    def _solved(self, values: np.ndarray, seat: int) -> float:
        return solved_payoff(values, seat)

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
        blueprint = Sampler(s.blueprint.agent.fork(None), s.blueprint.cheap)
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


# --- the spec: equilibrium:[KEY=VALUE:]...POLICY -----------------------------------------------------------------

OPTIONS = {  # the spec's keys: (Settings field or agent option, type)
    "k": ("candidates", int),
    "iterations": ("iterations", int),
    "pool": ("pool", int),
    "oracle": ("oracle", int),
    "gain": ("oracle_gain", float),
    "method": ("method", str),
    "seed": ("seed", int),
    "value": ("value", str),
    "critic": ("critic", str),
}
VALUES = ("critic", "appraisal", "margin")  # value=: the checkpoint's critic (or critic=PATH's), or a stand-in


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
    return options, rest


def spec_settings(options: dict[str, Any]) -> Settings:
    return Settings(**{k: v for k, v in options.items() if k not in ("seed", "value", "critic")})


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
    the double oracle's pool too) and plays its argmax at every other decision."""
    options, policy = parse_spec(spec)
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
        blueprint = Sampler(load(policy, **env_options), cheap=policy == "random")
        chooser = load(policy, **env_options)
        how = options.get("value", "critic" if critic is not None else "margin")
        if how == "critic" and critic is None:
            raise ValueError(f"{spec!r}: {policy} has no critic; give critic=PATH, value=margin or value=appraisal")
    else:
        blueprint = Sampler(load(policy + ":sample", **env_options), cheap=True)
        chooser = load(policy + ":argmax", **env_options)
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
