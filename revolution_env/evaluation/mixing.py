"""How much an agent mixes at a round's bid, on real states: how often two of its bids drawn at one state are the
same bid (the *tie rate*: two copies of a bot at one table that make the same bid tie, and a tie wins nothing), and
the entropy of its bid, overall and round by round.

```python
from revolution_env.evaluation.mixing import collect_bid_states, bid_mixing
states = collect_bid_states(["value", "bargain", "area"], games=60, seed=0, players=3)
report = bid_mixing("checkpoints/three_players.pt:sample", states, seed=0)
report.tie_rate, report.entropy, report.rounds
```

The states are every seat's bid decisions in games of a lineup (``collect_bid_states``); every agent is measured
on the same states. Two bids are the same bid when they put the same tokens on the same targets (the order of
the tokens of one type in the action does not matter). ``tie_rate`` counts pairs of draws (two independent
draws at each state); for a policy checkpoint (``PolicyAgent``) the probability of each drawn bid is also computed
exactly, which gives the probability that two draws tie, ``E[P(bid)]`` (``tie_probability``, the same quantity
with far less noise), and the entropy of the bid, ``E[-log P(bid)]`` (``entropy``, in nats; Monte Carlo over the
draws, exact per draw): for the factorised head a bid's probability sums over every assignment of its tokens to
its targets (the tokens of one type are distinct dimensions of the action), for the autoregressive head it is its
one canonical sequence's. Any other agent (a heuristic, a ``search:`` spec, a mixture) is measured by its draws
alone.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from revolution_env.agents.base import Agent
from revolution_env.agents.checkpoint import AutoregressiveChooser, PolicyAgent
from revolution_env.agents.loading import load_agent
from revolution_env.arena.runner import GameRunner
from revolution_env.engine.game import Decision
from revolution_env.evaluation.stats import wilson_interval


@dataclass
class BidStates:
    """Bid decisions from real games: the bid-mode observations (raw, as the env gives them), their masks, the
    round of each and the lineup and options they come from."""

    observations: np.ndarray
    masks: np.ndarray
    rounds: np.ndarray
    lineup: list[str]
    env_options: dict[str, Any]

    def __len__(self) -> int:
        return len(self.observations)


STATES_FROM = ("value", "bargain", "area", "random")  # the first `players` of these give the states by default


def collect_bid_states(lineup: Sequence[str], games: int, seed: int = 0, **env_options: Any) -> BidStates:
    """Every seat's bid decisions in ``games`` games of ``lineup`` (agent specs, one per seat, rotated one seat each
    game so that every agent plays every seat); game ``i`` is seeded ``seed + i``."""
    players = int(env_options.get("players", 3))
    if len(lineup) != players:
        raise ValueError(f"lineup: expected {players} agent specs (one per seat), got {len(lineup)}")
    agents = [load_agent(spec, **env_options) for spec in lineup]
    at = agents[0].layout.features["round"].start
    rows: list[tuple[np.ndarray, np.ndarray]] = []

    def record(env: Any, name: str, observation: Mapping, info: Mapping, action: Any) -> None:
        if int(info["decision"]) == Decision.BID:
            rows.append((np.array(observation["observation"]), np.array(observation["action_mask"])))

    for game in range(games):
        turn = game % players
        runner = GameRunner(agents[turn:] + agents[:turn], env_options)
        runner.play(seed=seed + game, on_step=record)
    if not rows:
        raise ValueError("no bid decision in these games")
    observations = np.stack([r[0] for r in rows]).astype(np.float32)
    return BidStates(observations, np.stack([r[1] for r in rows]), np.rint(observations[:, at]).astype(np.int64),
                     list(lineup), dict(env_options))  # fmt: skip


@dataclass
class MixingReport:
    """What :func:`bid_mixing` measured; ``rounds``: one row per round (``round``, ``states``, ``tie_rate``,
    ``tie_probability``, ``entropy``), the rounds past ``last_round`` pooled in the last row."""

    agent: str
    states: int
    tie_rate: float
    tie_rate_ci95: tuple[float, float]
    tie_probability: float | None
    entropy: float | None
    rounds: list[dict[str, Any]] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {"agent": self.agent, "states": self.states, "tie_rate": self.tie_rate,
                "tie_rate_ci95": list(self.tie_rate_ci95), "tie_probability": self.tie_probability,
                "entropy": self.entropy, "rounds": self.rounds}  # fmt: skip


def bid_mixing(agent: str | Agent, states: BidStates, seed: int = 0, last_round: int = 12) -> MixingReport:
    """The tie rate of two draws of ``agent`` (a spec, or an agent built for ``states.env_options``) at each of
    ``states``, and, for a policy checkpoint, the probability that two draws tie and the bid's entropy (the
    module's docstring). A policy checkpoint is drawn from as it plays when sampling (``PATH:sample``); given as
    ``PATH`` or ``PATH:argmax`` it is measured as it plays, its argmax, whose draws always tie."""
    name = agent if isinstance(agent, str) else agent.name
    if isinstance(agent, str):
        agent = load_agent(agent, **states.env_options)
    agent.reset(seed)
    first, second = _draw(agent, states), _draw(agent, states)
    same = (bid_key(agent.codec, states.masks, first) == bid_key(agent.codec, states.masks, second)).all(1)
    log_p = None
    if isinstance(agent, PolicyAgent) and agent.tokens is None:
        log_p = bid_log_prob(agent, states.observations, states.masks, first)
        if agent.deterministic:  # the argmax is the one bid it plays
            log_p = np.zeros(len(states))
    rows = []
    for r in sorted(set(np.minimum(states.rounds, last_round).tolist())):
        at = np.minimum(states.rounds, last_round) == r
        rows.append({"round": f"{r}+" if r == last_round and (states.rounds > r).any() else str(r),
                     "states": int(at.sum()), "tie_rate": float(same[at].mean()),
                     "tie_probability": None if log_p is None else float(np.exp(log_p[at]).mean()),
                     "entropy": None if log_p is None else float(-log_p[at].mean()) + 0.0})  # fmt: skip
    low, high = wilson_interval(int(same.sum()), len(same))
    return MixingReport(
        agent=name,
        states=len(states),
        tie_rate=float(same.mean()),
        tie_rate_ci95=(float(low), float(high)),
        tie_probability=None if log_p is None else float(np.exp(log_p).mean()),
        entropy=None if log_p is None else float(-log_p.mean()) + 0.0,
        rounds=rows,
    )


def _draw(agent: Agent, states: BidStates) -> np.ndarray:
    """One bid per state: a policy's for all states in one pass, any other agent's state by state."""
    if isinstance(agent, PolicyAgent):
        kinds = np.full(len(states), int(Decision.BID))
        return agent.act_batch(states.observations, states.masks, kinds)
    info = {"decision": Decision.BID}
    return np.stack([agent.act({"observation": o, "action_mask": m}, info)
                     for o, m in zip(states.observations, states.masks)])  # fmt: skip


def held_tokens(codec: Any, masks: np.ndarray) -> np.ndarray:
    """(n, K) bool: the token dimensions a seat holds at a bid (its mask allows a target other than 0)."""
    return (np.asarray(masks)[:, codec.C :].reshape(len(masks), codec.K, codec.T)[:, :, 1:] != 0).any(2)


def bid_key(codec: Any, masks: np.ndarray, actions: np.ndarray) -> np.ndarray:
    """(n, K) per bid, equal for two actions if and only if they are the same bid: each type's held tokens'
    targets sorted (the tokens not held marked ``T``)."""
    keys = np.where(held_tokens(codec, masks), np.asarray(actions)[:, 1:], codec.T)
    for start, end in zip(codec.block[:-1] - 1, codec.block[1:] - 1):
        keys[:, start:end] = np.sort(keys[:, start:end], axis=1)
    return keys


def bid_log_prob(agent: PolicyAgent, observations: np.ndarray, masks: np.ndarray, actions: np.ndarray) -> np.ndarray:
    """The log-probability (n,) that ``agent`` (a bid-mode policy checkpoint, sampling) bids the bid of each of
    ``actions`` at each state: whatever the order of the tokens of a type in the action."""
    logits = agent.net.logits(np.asarray(observations, dtype=np.float32) / agent.scale)
    if isinstance(agent.chooser, AutoregressiveChooser):
        return agent.chooser.log_prob_batch(logits, masks, actions)
    codec = agent.codec
    n, C, T, K = len(actions), codec.C, codec.T, codec.K
    scores = np.where(
        np.asarray(masks)[:, C:].reshape(n, K, T) != 0, logits[:, C : C + K * T].reshape(n, K, T), -np.inf
    )
    top = scores.max(2, keepdims=True)
    probs = np.exp(scores - top)
    probs /= probs.sum(2, keepdims=True)
    held = held_tokens(codec, masks)
    out = np.zeros(n)
    for i in range(n):
        for start, end in zip(codec.block[:-1] - 1, codec.block[1:] - 1):
            dims = start + np.flatnonzero(held[i, start:end])
            if len(dims):
                out[i] += np.log(_assignments(probs[i, dims], actions[i, 1 + dims]))
    return out


def _assignments(probs: np.ndarray, targets: np.ndarray) -> float:
    """The probability that independent tokens (``probs``: (m, T), each token's distribution over the targets) land
    with the counts of ``targets`` (m,) on the targets, in any order: a sum over the assignments of the tokens to
    the targets, by dynamic programming over the tokens with the counts still to place (mixed-radix states)."""
    support, counts = np.unique(targets, return_counts=True)
    radix = np.cumprod(np.r_[1, counts[:-1] + 1])
    states = int(np.prod(counts + 1))
    digits = (np.arange(states)[:, None] // radix) % (counts + 1)  # (states, support): how many placed per target
    ways = np.zeros(states)
    ways[0] = 1.0
    for p in probs:
        nxt = np.zeros(states)
        for j, target in enumerate(support):
            room = digits[:, j] < counts[j]
            nxt[np.flatnonzero(room) + radix[j]] += ways[room] * p[target]
        ways = nxt
    return float(ways[-1])
