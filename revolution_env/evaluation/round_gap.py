"""The one-round gap: on real bid states, how much the best bid of an enlarged pool gains against an agent's own
mixture over what the agent's own bid gets, each joint bid played for one round and scored by a value.

```python
from revolution_env.evaluation.mixing import collect_bid_states
from revolution_env.evaluation.round_gap import one_round_gap
states = collect_bid_states(["value", "bargain"], games=20, seed=0, players=2)
report = one_round_gap("checkpoints/two_players.pt", states, states_used=20, seed=0)
report.gap, report.gap_ci95, report.value
```

At each state (a seat's bid decision, drawn from ``states``), the game is rebuilt from that seat's observation
(:func:`.env.reconstruct.game_from_observation`, the observer at seat 0) and:

1. **The agent's mixture.** ``draws`` bids of the agent for every other seat, each from that seat's observation
   (independent draws: profiles ``j = 1..draws``); ``own`` bids of the agent for the observer's seat.
2. **The pool** of ``pool`` distinct bids for the observer: the agent's own draws, the heuristics' bids (``value``,
   ``bargain``, ``area``), single-token moves of those (:func:`.equilibrium.neighbours`), then uniformly random
   legal bids until it holds ``pool`` (at least ``pool // 4`` random ones where the moves are many).
3. **Payoffs.** Every pool bid is played for one round against every profile of the others' draws, on the engine
   (:func:`.equilibrium.play_rounds`: the round's other decisions made by the agent), and scored as the search
   scores a round (:func:`.equilibrium.seat_values`, then :func:`.equilibrium.solved_payoff`: the seat's value, or
   with two players half the difference): a bid's worth is its mean over the profiles.
4. **The gap**: the best pool bid's worth minus the mean worth of the agent's own draws. The own draws are in the
   pool and scored against the same profiles, so the gap is never negative; 0 means nothing in the pool beats
   the agent's own play against its own mixture for one round.

It is one round's regret against a sample of the agent's mixture, a lower bound of what a better bid gains
there (a larger pool finds more), measured by a value that is an estimate: a checkpoint's critic where it has
one, else a critic file (``critic=``, ``revolution fit-critic``), else a stand-in (:func:`.equilibrium.appraisal_value`,
``value``'s judgement, or :func:`.equilibrium.margin_value`); the report names it.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from revolution_env.agents.base import Agent
from revolution_env.agents.equilibrium import (
    HEURISTIC_BIDS,
    SEED_BOUND,
    Sampler,
    Value,
    appraisal_value,
    distinct,
    margin_value,
    neighbours,
    play_rounds,
    random_sampler,
    seat_values,
    solved_payoff,
)
from revolution_env.agents.loading import load_agent
from revolution_env.engine.game import BID
from revolution_env.env.reconstruct import game_from_observation
from revolution_env.evaluation.mixing import BidStates

SOURCES = ("own", "heuristic", "move", "random")  # where a pool bid came from, in the order the pool is filled
VALUES = ("auto", "critic", "appraisal", "margin")


@dataclass
class RoundGapReport:
    """What :func:`one_round_gap` measured. ``gap``: the mean over states (``gap_ci95``: its normal 95% interval);
    ``own_worth`` / ``best_worth``: the mean worth of the agent's own bid and of the pool's best; ``best_from``:
    how many states' best bid came from each source (:data:`SOURCES`); ``per_state``: one row per state."""

    agent: str
    value: str
    players: int
    states: int
    pool: int
    draws: int
    own: int
    gap: float
    gap_ci95: tuple[float, float]
    gap_median: float
    gap_max: float
    own_worth: float
    best_worth: float
    best_from: dict[str, int]
    seconds: float
    per_state: list[dict[str, Any]] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {k: (list(v) if isinstance(v, tuple) else v) for k, v in self.__dict__.items()}


def gap_value(agent: Agent, how: str | Value = "auto", critic: str | None = None, **env_options: Any
              ) -> tuple[Value, str]:  # fmt: skip
    """The value that scores the next state, and its name: ``critic`` (a file of ``revolution fit-critic`` or a
    policy checkpoint, fitted to ``win_loss``) where given; else ``how``: ``critic`` the agent's own (refused in one
    line where it has none), ``appraisal`` or ``margin`` a stand-in, ``auto`` the agent's critic where it has one
    and the appraisal otherwise, or a value function itself (observations (m, size) to values (m,))."""
    if callable(how):
        return how, getattr(how, "__name__", "a given value")
    if how not in VALUES:
        raise ValueError(f"value: expected one of {', '.join(VALUES)}, got {how!r}")
    if critic is not None:
        if how not in ("auto", "critic"):
            raise ValueError(f"critic={critic} scores the states by that critic, value={how} by a stand-in: give one")
        from revolution_env.agents.checkpoint import load_critic  # (torch reads the file)

        fitted = load_critic(critic, **env_options)
        if fitted.target != "win_loss":
            raise ValueError(f"{critic} predicts the {fitted.target} reward; the payoffs are win_loss "
                             "(fit one with revolution fit-critic --target win_loss)")  # fmt: skip
        return fitted.value, f"critic {critic}"
    own = getattr(agent, "critic", None)
    if how == "critic" and own is None:
        raise ValueError(f"{agent.name}: no critic of its own to score the states; give critic=PATH, "
                         "value=appraisal or value=margin")  # fmt: skip
    if how in ("auto", "critic") and own is not None:
        return agent.value, f"the critic of {agent.name}"
    if how == "margin":
        return margin_value(agent.layout), "margin (stand-in: the projected margin)"
    why = "" if how == "appraisal" else f"; {agent.name} carries no critic"
    return appraisal_value(load_agent("value", **env_options)), f"appraisal (stand-in: value's judgement{why})"


def one_round_gap(agent: str | Agent, states: BidStates, states_used: int = 40, pool: int = 64, draws: int = 8,
                  own: int = 8, value: str | Value = "auto", critic: str | None = None, seed: int = 0
                  ) -> RoundGapReport:  # fmt: skip
    """The one-round gap of ``agent`` (a spec, or an agent built for ``states.env_options``) on ``states_used`` of
    ``states`` drawn at random (all of them where there are fewer): the module's documentation."""
    for name, number, least in (("states_used", states_used, 1), ("pool", pool, 2), ("draws", draws, 1),
                                ("own", own, 1)):  # fmt: skip
        if isinstance(number, bool) or not isinstance(number, (int, np.integer)) or number < least:
            raise ValueError(f"{name}: expected an integer at least {least}, got {number!r}")
    if own > pool:
        raise ValueError(f"own: the agent's {own} draws must fit in the pool of {pool}")
    options = {k: v for k, v in states.env_options.items() if k not in ("reward", "action_mode")}
    name = agent if isinstance(agent, str) else agent.name
    if isinstance(agent, str):
        agent = load_agent(agent, **options)
    scorer, value_name = gap_value(agent, value, critic, **options)
    rng = np.random.default_rng(seed)
    picked = np.sort(rng.permutation(len(states))[:states_used])
    gauge = _Gauge(agent, [load_agent(h, **options) for h in HEURISTIC_BIDS], random_sampler(**options), scorer)
    start = time.perf_counter()
    rows = [gauge.state(states.observations[i], int(states.rounds[i]), pool, draws, own, rng) for i in picked]
    seconds = time.perf_counter() - start
    gaps = np.array([r["gap"] for r in rows])
    half = 1.96 * gaps.std(ddof=1) / np.sqrt(len(gaps)) if len(gaps) > 1 else float("nan")
    return RoundGapReport(
        agent=name,
        value=value_name,
        players=agent.codec.P,
        states=len(rows),
        pool=pool,
        draws=draws,
        own=own,
        gap=float(gaps.mean()),
        gap_ci95=(float(gaps.mean() - half), float(gaps.mean() + half)),
        gap_median=float(np.median(gaps)),
        gap_max=float(gaps.max()),
        own_worth=float(np.mean([r["own_worth"] for r in rows])),
        best_worth=float(np.mean([r["best_worth"] for r in rows])),
        best_from={s: sum(r["best_from"] == s for r in rows) for s in SOURCES},
        seconds=seconds,
        per_state=rows,
    )


class _Gauge:
    """The measure at one state: the agent samples bids and makes the round's other decisions."""

    def __init__(self, agent: Agent, heuristics: list[Agent], randoms: Sampler, value: Value) -> None:
        self.agent, self.heuristics, self.randoms, self.value = agent, heuristics, randoms, value
        self.sampler = Sampler(agent, cheap=True)
        self.layout, self.codec = agent.layout, agent.codec

    def state(self, observation: np.ndarray, round_: int, pool: int, draws: int, own: int,
              rng: np.random.Generator) -> dict[str, Any]:  # fmt: skip
        layout, codec = self.layout, self.codec
        game = game_from_observation(observation[: layout.size], layout, 0, rng)
        views = [(layout.build(game, s, BID), codec.mask(game, s, BID)) for s in range(codec.P)]
        mine = self._counts(game, 0, self.sampler.sample(*views[0], own, rng))
        others = [self._counts(game, s, self.sampler.sample(*views[s], draws, rng)) for s in range(1, codec.P)]
        bids, sources = self._pool(game, views[0], mine, pool, rng)
        joint = np.stack([np.stack([b, *[o[j] for o in others]]) for b in bids for j in range(draws)])
        games = play_rounds(game, joint, self.agent, layout)
        worth = solved_payoff(seat_values(games, layout, self.value), 0).reshape(len(bids), draws).mean(1)
        index = {b.tobytes(): i for i, b in enumerate(bids)}
        own_worth = float(np.mean([worth[index[b.tobytes()]] for b in mine]))
        best = int(np.argmax(worth))
        return {"round": round_, "gap": float(worth[best]) - own_worth, "own_worth": own_worth,
                "best_worth": float(worth[best]), "best_from": sources[best], "pool": len(bids)}  # fmt: skip

    def _counts(self, game: Any, seat: int, actions: np.ndarray) -> np.ndarray:
        held = game.tokens[seat]
        return np.stack([self.codec.bid_counts(a, held) for a in actions])

    def _pool(self, game: Any, view: tuple[np.ndarray, np.ndarray], mine: np.ndarray, size: int,
              rng: np.random.Generator) -> tuple[np.ndarray, list[str]]:  # fmt: skip
        """Distinct bids in :data:`SOURCES` order, ``size`` of them where the random bids suffice."""
        obs, mask = view
        bids: list[np.ndarray] = []
        sources: list[str] = []
        seen: set[bytes] = set()

        def add(candidates: np.ndarray, source: str, limit: int) -> None:
            kept, _ = distinct(candidates, candidates, min(limit, size - len(bids)), seen)
            bids.extend(kept)
            sources.extend([source] * len(kept))
            seen.update(b.tobytes() for b in kept)

        add(mine, "own", size)
        acts = []
        for bot in self.heuristics:
            bot.reset(int(rng.integers(SEED_BOUND)))
            acts.append(np.asarray(bot.act({"observation": obs, "action_mask": mask}, {"decision": BID})))
        add(self._counts(game, 0, np.array(acts, dtype=np.int64)), "heuristic", size)
        near = neighbours(np.array(bids), self.codec.layout.legal)
        add(near[rng.permutation(len(near))], "move", size - len(bids) - size // 4)
        for _ in range(4):  # random bids repeat where a seat holds few tokens: a few rounds of draws, then no more
            if len(bids) >= size:
                break
            add(self._counts(game, 0, self.randoms.sample(obs, mask, 2 * size, rng)), "random", size)
        return np.array(bids), sources
