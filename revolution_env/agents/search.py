"""Play-time search over a round's bids: ``search:PATH`` plays a policy checkpoint whose bids are chosen by regret
matching over its own candidate bids.

A policy that takes its most likely bid can be read and outbid: a rival that expects it to bid as it did last round
beats it (``value-habit``, docs/heldout.md). The SearchBot / DORA line of work (Gray et al., "Human-Level
Performance in No-Press Diplomacy via Equilibrium Search", ICLR 2021) keeps the policy as the source of candidate
actions and lets a small equilibrium computation at each decision pick a mixture of them. Here, at each bid:

1. **Candidates**: the policy's most likely bid and ``candidates - 1`` bids sampled from its masked distribution
   (the same bid drawn twice counts once).
2. **Rivals**: the rivals' bids as ``value`` samples them (:mod:`.decisions`: their interests, their habits, a
   third of them planned as ``value`` plans its own bid), and what each candidate is worth against each sample
   (:meth:`.heuristics.ValueBot.bid_values`, the change in projected margin). A
   policy checkpoint holds its actor only, no critic: the heuristics' appraisal is the judge.
3. **Regret matching** (RM+, alternating updates, linear averaging) on that matrix: we choose a mixture over our
   candidates, the rivals a mixture over their samples, ``caution`` of it chosen against us (an adversary that
   learns by regret matching too), the rest the samples as drawn. ``caution`` 0 answers the model's rivals;
   1 plays the candidates' minimax mixture against the worst mixture of samples.
4. The bid is drawn from our **average strategy** (seeded by ``reset``).

Every other decision (Guy, the Spy, the Apothecary, Remove) is the policy's most likely action. The search runs
in NumPy, several times slower a game than the policy alone (``docs/experiments.md``, "Search over a round's bids").
``docs/experiments.md`` ("Search over a round's bids") has what it gains, against which opponents, and what a
best response makes of it.
"""

from __future__ import annotations

import copy
import numbers
from typing import Any

import numpy as np

from revolution_env.agents.base import Agent
from revolution_env.agents.checkpoint import PolicyAgent
from revolution_env.engine.game import Decision

PREFIX = "search:"
CANDIDATES, CAUTION, ITERATIONS = 4, 0.5, 200  # the defaults of a search: spec


def is_search(spec: Any) -> bool:
    return isinstance(spec, str) and spec.startswith(PREFIX)


def searched_spec(spec: str) -> str:
    """The checkpoint spec that a ``search:`` spec plays (``search:PATH`` -> ``PATH``)."""
    return spec[len(PREFIX) :]


def regret_matching(payoff: np.ndarray, caution: float = CAUTION, iterations: int = ITERATIONS) -> np.ndarray:
    """Our average strategy over the rows of ``payoff`` (n, m), our payoff for each of our rows against each of the
    rivals' columns. The rivals play ``caution`` times an adversary's mixture (minimising our payoff) plus the rest
    uniformly over the columns. Both sides learn by regret matching+ with alternating updates; our strategy of
    iteration ``i`` counts ``i`` times in the average (linear averaging, as in CFR+)."""
    n, m = payoff.shape
    _check_settings(caution=caution, iterations=iterations)
    uniform = np.full(m, 1.0 / m)
    ours, theirs = np.zeros(n), np.zeros(m)
    adversary = uniform.copy()
    average = np.zeros(n)
    for i in range(1, iterations + 1):
        u = payoff @ ((1.0 - caution) * uniform + caution * adversary)
        ours = np.maximum(ours + u - _strategy(ours) @ u, 0.0)
        x = _strategy(ours)
        average += i * x
        v = -(x @ payoff)
        theirs = np.maximum(theirs + v - adversary @ v, 0.0)
        adversary = _strategy(theirs)
    return average / average.sum()


def _check_settings(where: str = "", **settings: Any) -> None:
    """Raise ``ValueError`` for a setting of a search out of range: ``caution`` a number from 0 to 1, the others
    (``candidates``, ``iterations``) positive integers; ``where`` starts the message."""
    for what, value in settings.items():
        if what == "caution":
            if not isinstance(value, numbers.Real) or isinstance(value, bool) or not 0.0 <= value <= 1.0:
                raise ValueError(f"{where}caution: expected a number from 0 to 1, got {value!r}")
        elif not isinstance(value, numbers.Integral) or isinstance(value, bool) or value < 1:
            raise ValueError(f"{where}{what}: expected a positive integer, got {value!r}")


def _strategy(regrets: np.ndarray) -> np.ndarray:
    """Regret matching: play in proportion to the positive regrets, uniformly where none is positive."""
    total = regrets.sum()
    return regrets / total if total > 0 else np.full(len(regrets), 1.0 / len(regrets))


class SearchAgent(Agent):
    """A policy checkpoint's bids chosen by regret matching over its candidates (the module's docstring); every
    other decision the policy's argmax. ``policy``: the checkpoint's :class:`.checkpoint.PolicyAgent`."""

    name = "search"

    def __init__(self, policy: PolicyAgent, candidates: int = CANDIDATES, caution: float = CAUTION,
                 iterations: int = ITERATIONS, **env_options: Any) -> None:  # fmt: skip
        _check_settings("search ", candidates=candidates, iterations=iterations, caution=caution)
        options = {k: v for k, v in env_options.items() if k not in ("reward", "action_mode")}
        super().__init__(**options)
        self.candidates, self.caution, self.iterations = int(candidates), float(caution), int(iterations)
        self.argmax = copy.copy(policy)
        self.argmax.deterministic = True
        self.sampler = copy.copy(policy)
        self.sampler.deterministic = False
        from revolution_env.agents.heuristics import ValueBot  # (numba: not imported by loading agent specs)

        self.judge = ValueBot(**options)

    def reset(self, seed: int | None = None) -> None:
        super().reset(seed)
        sampler, judge = np.random.SeedSequence(seed).spawn(2) if seed is not None else (None, None)
        self.sampler.reset(None if sampler is None else int(sampler.generate_state(1)[0]))
        self.judge.reset(None if judge is None else int(judge.generate_state(1)[0]))

    def fork(self, seed: int | None) -> SearchAgent:
        twin = copy.copy(self)
        twin.sampler, twin.judge = copy.copy(self.sampler), copy.copy(self.judge)
        twin.reset(seed)
        return twin

    def act(self, observation: dict[str, np.ndarray], info: dict[str, Any]) -> np.ndarray:
        if Decision(int(info["decision"])) != Decision.BID:
            return self.argmax.act(observation, info)
        view = self.judge.view(observation)
        bids, actions = self.candidate_bids(observation, info, view.tokens[0])
        if len(bids) == 1:
            return actions[0]
        per_sample, _ = self.judge.bid_values(observation, bids)
        strategy = regret_matching(per_sample, self.caution, self.iterations)
        return actions[int(self.rng.choice(len(bids), p=strategy))]

    def candidate_bids(
        self, observation: dict[str, np.ndarray], info: dict[str, Any], held: np.ndarray
    ) -> tuple[np.ndarray, list]:
        """The distinct candidate bids of a player holding ``held`` tokens, as (n, T, 3) counts, the policy's argmax
        first, and their actions."""
        actions = [np.asarray(self.argmax.act(observation, info))]
        if self.candidates > 1:
            rows = self.candidates - 1
            decisions = np.full(rows, int(Decision.BID))
            drawn = self.sampler.act_batch(
                np.repeat(observation["observation"][None], rows, 0),
                np.repeat(observation["action_mask"][None], rows, 0),
                decisions,
            )
            actions += list(drawn)
        distinct: dict[bytes, tuple[np.ndarray, np.ndarray]] = {}
        for action in actions:
            counts = self.codec.bid_counts(action, held)
            distinct.setdefault(counts.tobytes(), (counts, action))
        return np.stack([counts for counts, _ in distinct.values()]), [action for _, action in distinct.values()]


def load_search(spec: str, load_policy: Any, **env_options: Any) -> SearchAgent:
    """The agent of a ``search:PATH`` spec (one that :func:`.loading.spec_problem` accepts): the checkpoint that
    ``load_policy(PATH, **env_options)`` reads, played by :class:`SearchAgent` with the default settings."""
    agent = SearchAgent(load_policy(searched_spec(spec), **env_options), **env_options)
    agent.name = spec
    return agent
