"""Mixed strategies over agents: per decision (``mix:``), or per game (``meta:`` and population files).

A ``mix:`` spec makes each decision by one of its agents, drawn afresh with fixed weights (:class:`MixtureAgent`).
A ``meta:`` spec (the same syntax) or a population file written by ``revolution psro`` (``population.json``)
draws one agent at the start of every game and plays it for the whole game (:class:`MetaAgent`): PSRO's
meta-strategy, a distribution over whole policies.

```
revolution eval --players 2 --gauntlet "mix:checkpoints/two_players.pt@0.5,value@0.5" --opponents value bargain
revolution exploit "mix:checkpoints/two_players.pt,value"
```

The spec is ``mix:`` and then agent specs (``random``, a heuristic, a checkpoint, ``PATH:sample``) separated by commas,
each with an optional weight after ``@`` (1 where none is given; the weights are normalised), so a component's own spec
cannot hold a comma or an ``@`` (a path with one is split there, and fails as a spec that does not exist or a malformed
weight). A deterministic policy in a game of secret simultaneous bids can be read and outbid (``revolution exploit``
beats the shipped two-player bot in every game); drawing the agent of every decision anew gives a best response a
distribution over whole bids to answer, not one bid it can predict. The agents of this repository keep no state between
decisions, so any of them can take over at any decision. That does not make two strategies mix well: the two-player bot
mixed with ``value`` (0.8, 0.2) won less often against ``value`` than the bot alone, and a best response still beat the
mixture nearly always (``docs/experiments.md``, "Mixing with value").
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import numpy as np

from revolution_env.agents.base import Agent, act_batch

PREFIX = "mix:"
META = "meta:"
WEIGHT = "@"
POPULATION_FORMAT = "revolution-population"


def is_mixture(spec: Any) -> bool:
    return isinstance(spec, str) and spec.startswith(PREFIX)


def is_meta(spec: Any) -> bool:
    """A per-game mixture: ``meta:SPEC@W,...`` or a population file (``.json``)."""
    return isinstance(spec, str) and (spec.startswith(META) or spec.endswith(".json"))


def _parts(spec: str) -> list[tuple[str, str | None]]:
    """The components of a ``mix:`` or ``meta:`` spec as written: (spec, weight text, None where none is given)."""
    parts: list[tuple[str, str | None]] = []
    for part in spec.split(":", 1)[1].split(","):
        name, sep, weight = part.strip().rpartition(WEIGHT)  # ("", "", part) where it has no weight
        parts.append((name.strip(), weight.strip()) if sep else (weight, None))
    return parts


def parse_mixture(spec: str) -> list[tuple[str, float]]:
    """The (component spec, weight) pairs of a ``mix:`` spec, the weights normalised; ``ValueError`` for a malformed
    one (an empty component, a nested mixture, a weight that is not a positive number)."""
    pairs = []
    for name, weight in _parts(spec):
        if not name:
            raise ValueError(f"{spec!r}: expected mix:SPEC[@WEIGHT],SPEC[@WEIGHT],... (an empty component)")
        if is_mixture(name) or is_meta(name):
            raise ValueError(f"{spec!r}: a mixture cannot hold a mixture ({name!r})")
        try:
            w = 1.0 if weight is None else float(weight)
        except ValueError:
            raise ValueError(f"{spec!r}: the weight of {name!r} is not a number: {weight!r}") from None
        if not np.isfinite(w) or w <= 0:
            raise ValueError(f"{spec!r}: the weight of {name!r} must be a positive number, got {weight!r}")
        pairs.append((name, w))
    top = max(w for _, w in pairs)  # first to at most 1: weights near the float limit add up to no infinity
    total = sum(w / top for _, w in pairs)
    return [(name, w / top / total) for name, w in pairs]


def rename_components(spec: str, rename: Callable[[str], str]) -> str:
    """A ``mix:`` spec with each component's spec passed through ``rename`` and the weights kept as written: how
    reports name a mixture (a checkpoint by its short name)."""
    return (
        spec.split(":", 1)[0]
        + ":"
        + ",".join(rename(name) + ("" if weight is None else WEIGHT + weight) for name, weight in _parts(spec))
    )


class MixtureAgent(Agent):
    """Each decision by one of ``agents``, drawn with probabilities ``weights`` from this agent's generator. The
    draws come first, then each component decides for its rows in one call (``act_batch``), so a batch of games
    is played as the same games one by one would be only where the components' own draws do not depend on the
    order of rows (a policy's argmax, the heuristics' compiled code per row); the evaluation plays a forked
    mixture per game."""

    def __init__(self, agents: list[Agent], weights: list[float], name: str = "mixture", **env_options: Any) -> None:
        super().__init__(**env_options)
        if not agents or len(agents) != len(weights):
            raise ValueError("MixtureAgent: expected as many weights as agents, and at least one agent")
        p = np.asarray(weights, dtype=np.float64)
        if not np.all(np.isfinite(p)) or np.any(p <= 0):
            raise ValueError(f"MixtureAgent: the weights must be positive numbers, got {weights!r}")
        self.agents = list(agents)
        self.weights = p / p.sum()
        self.name = name

    def reset(self, seed: int | None = None) -> None:
        super().reset(seed)
        seeds = np.random.SeedSequence(seed).spawn(len(self.agents)) if seed is not None else [None] * len(self.agents)
        for agent, s in zip(self.agents, seeds):
            agent.reset(None if s is None else int(s.generate_state(1)[0]))

    def fork(self, seed: int | None) -> MixtureAgent:
        twin = copy.copy(self)
        twin.agents = [agent.fork(None) for agent in self.agents]
        twin.reset(seed)
        return twin

    def _draw(self, n: int) -> np.ndarray:
        return self.rng.choice(len(self.agents), size=n, p=self.weights)

    def pick(self) -> int:
        """The index of the agent that makes the next decision, drawn from the mixture's stream as ``act`` draws it
        (the batched evaluation draws it so, then plays a checkpoint's decisions of many games in one pass)."""
        return int(self._draw(1)[0])

    def act(self, observation: dict[str, np.ndarray], info: dict[str, Any]) -> np.ndarray:
        return self.agents[self.pick()].act(observation, info)

    def act_batch(self, observations: np.ndarray, masks: np.ndarray, decisions: np.ndarray) -> np.ndarray:
        picks = self._draw(len(observations))
        out = np.zeros((len(observations), len(self.codec.nvec)), dtype=np.int64)
        for j, agent in enumerate(self.agents):
            rows = np.flatnonzero(picks == j)
            if len(rows):
                out[rows] = act_batch(agent, observations[rows], masks[rows], decisions[rows])
        return out


def load_mixture(spec: str, load: Any, **env_options: Any) -> MixtureAgent:
    """The mixture a ``mix:`` spec names, its components built by ``load(spec, **env_options)``."""
    pairs = parse_mixture(spec)
    agents = [load(name, **env_options) for name, _ in pairs]
    return MixtureAgent(agents, [w for _, w in pairs], name=spec, **env_options)


class MetaAgent(Agent):
    """One of ``agents`` for a whole game, drawn at :meth:`reset` with probabilities ``weights`` (PSRO's
    meta-strategy). It decides through the drawn agent alone; a batch of games (``act_batch``) is refused, since the
    games of a batch each have their own draw: the evaluation plays it game by game, and a learner environment
    draws a member per game as a league does (``members``)."""

    def __init__(self, agents: list[Agent], weights: list[float], name: str = "meta", **env_options: Any) -> None:
        super().__init__(**env_options)
        p = np.asarray(weights, dtype=np.float64)
        if not agents or len(agents) != len(weights) or not np.all(np.isfinite(p)) or np.any(p < 0) or p.sum() <= 0:
            raise ValueError("MetaAgent: expected one non-negative weight per agent, not all 0")
        self.agents = list(agents)
        self.weights = p / p.sum()
        self.name = name
        self.current = 0

    def members(self) -> list[tuple[Agent, float]]:
        """The agents with their weights (what a league draws from, per game)."""
        return list(zip(self.agents, self.weights.tolist()))

    def reset(self, seed: int | None = None) -> None:
        super().reset(seed)
        self.current = int(self.rng.choice(len(self.agents), p=self.weights))
        child = None if seed is None else int(np.random.SeedSequence([seed, 1]).generate_state(1)[0])
        self.agents[self.current].reset(child)

    def fork(self, seed: int | None) -> MetaAgent:
        twin = copy.copy(self)
        twin.agents = [agent.fork(None) for agent in self.agents]
        twin.reset(seed)
        return twin

    def act(self, observation: dict[str, np.ndarray], info: dict[str, Any]) -> np.ndarray:
        return self.agents[self.current].act(observation, info)


def read_population(path: str) -> list[tuple[str, float]]:
    """The (member spec, weight) pairs of a population file (``revolution psro``'s ``population.json``), a
    checkpoint member's path taken relative to the file's folder; ``ValueError`` for anything else."""
    import json
    import os

    try:
        with open(path, encoding="utf-8") as fh:
            data = json.load(fh)
    except OSError as exc:
        raise ValueError(f"{path}: cannot read the population file: {exc.strerror or exc}") from None
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ValueError(f"{path}: not a population file ({exc})") from None
    if (
        not isinstance(data, dict)
        or data.get("format") != POPULATION_FORMAT
        or not isinstance(data.get("population"), list)
    ):
        raise ValueError(f"{path}: not a finished population file (revolution psro writes one at the end of its run)")
    pairs = []
    for member in data["population"]:
        spec, weight = member.get("spec"), member.get("weight")
        if not isinstance(spec, str) or not isinstance(weight, (int, float)) or weight < 0:
            raise ValueError(f"{path}: a malformed member: {member!r}")
        local = os.path.join(os.path.dirname(path), spec.removesuffix(":sample"))
        if os.path.isfile(local):
            spec = local + spec[len(spec.removesuffix(":sample")) :]
        if weight > 0:
            pairs.append((spec, float(weight)))
    if not pairs:
        raise ValueError(f"{path}: no member has a positive weight")
    return pairs


def meta_members(spec: str) -> list[tuple[str, float]]:
    """The (member spec, weight) pairs of a ``meta:`` spec or a population file."""
    return parse_mixture(spec) if spec.startswith(META) else read_population(spec)


def load_meta(spec: str, load: Any, **env_options: Any) -> MetaAgent:
    """The per-game mixture a ``meta:`` spec or population file names, its members built by ``load``."""
    pairs = meta_members(spec)
    return MetaAgent([load(name, **env_options) for name, _ in pairs], [w for _, w in pairs], name=spec, **env_options)
