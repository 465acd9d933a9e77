"""The opponents of a learner's games: who plays the other seats of ``gym_env`` and ``vector_env``.

``opponents`` is one of:

- ``None``: :data:`DEFAULT_OPPONENT` in every other seat;
- one agent spec (``"random"``, a heuristic's name, a checkpoint path, a ``mix:`` mixture, a per-game mixture:
  ``meta:`` or a population file, whose member is drawn for each game) or ``Agent`` for every other seat;
- a list (or tuple) of them, one per other seat in seat order;
- a **league**: any object with ``sample(rng, slot)``, asked for the opponent of each other seat (``slot`` 0, 1,
  ... in seat order, the learner's seats left out) of every new game, with the environment's generator ``rng``. It
  answers ``(name, agent)``, the name being what the game's results are kept under (``info["opponents"]``), or a
  spec or an ``Agent`` alone, which is then named by itself.

An agent is an :class:`~revolution_env.agents.base.Agent` or anything with ``act(observation, info)``. Specs are
loaded for the rules of the learner's game, whatever its action mode (opponents always play whole bids).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

import numpy as np

from revolution_env.agents.base import Agent
from revolution_env.agents.loading import load_agent
from revolution_env.agents.mixture import MetaAgent
from revolution_env.env.core import ENV_OPTIONS

DEFAULT_OPPONENT = "value"  # the strongest heuristic (docs/environment.md §5 "Single agent")


class League(Protocol):
    """What picks each new game's opponents (the module documentation)."""

    def sample(self, rng: np.random.Generator, slot: int) -> tuple[str, Any] | str | Any: ...


def is_league(opponents: Any) -> bool:
    """Whether ``opponents`` is a league rather than a spec, an agent or a list of them."""
    return not isinstance(opponents, (str, list, tuple, Agent)) and callable(getattr(opponents, "sample", None))


def _is_agent(spec: Any) -> bool:
    return isinstance(spec, Agent) or callable(getattr(spec, "act", None))


class Opponents:
    """The parsed ``opponents`` argument of a learner's environment: fixed agents per other seat, or a league.

    ``shared``: whether one agent plays every seat whose spec is the same (the vector env, which asks each agent
    for all its games at once), or each seat loads its own (``gym_env``, which reseeds each seat's agent every
    game). ``options``: the environment's options; the agents are built for its rules. ``others``: the seats of a
    game the opponents take (default: all but the learner's one).
    """

    def __init__(
        self, opponents: Any, players: int, options: dict[str, Any], shared: bool = False, others: int | None = None
    ) -> None:
        self.players = players
        self.others = players - 1 if others is None else others  # the seats the learner leaves to opponents
        self.options = {k: v for k, v in options.items() if k not in ENV_OPTIONS}
        self.options["players"] = players
        self.shared = shared
        self._loaded: dict[Any, Agent] = {}
        self.league: League | None = opponents if is_league(opponents) else None
        self.fixed: list[tuple[str, Any]] = []
        if self.league is None:
            self.fixed = [self.resolve(spec, slot) for slot, spec in enumerate(self._specs(opponents))]
        # whether each new game draws its opponents (a league, or a per-game mixture among the fixed ones)
        self.per_game = self.league is not None or any(isinstance(a, MetaAgent) for _, a in self.fixed)

    def _specs(self, opponents: Any) -> list[Any]:
        others = self.others
        if opponents is None:
            return [DEFAULT_OPPONENT] * others
        if isinstance(opponents, str) or _is_agent(opponents):
            return [opponents] * others
        if not isinstance(opponents, (list, tuple)):
            raise ValueError(
                "opponents: expected an agent spec, an Agent, a list with one per other seat, or an object with "
                f"sample(rng, slot), got {type(opponents).__name__}"
            )
        if len(opponents) != others:
            raise ValueError(
                f"opponents: expected {others} opponent(s), one per other seat of {self.players} players, "
                f"got {len(opponents)}"
            )
        return list(opponents)

    def resolve(self, spec: Any, slot: int) -> tuple[str, Any]:
        """``(name, agent)`` for a spec or an agent in opponent ``slot``; a spec is loaded once (per slot unless
        ``shared``)."""
        if _is_agent(spec):
            return getattr(spec, "name", type(spec).__name__), spec
        if not isinstance(spec, str):
            raise ValueError(
                "opponents: expected an agent spec (a name, a checkpoint path, mix:SPEC@W,... or search:PATH) or an "
                f"Agent, got {spec!r}"
            )
        key = spec if self.shared else (spec, slot)
        if key not in self._loaded:
            try:
                self._loaded[key] = load_agent(spec, **self.options)
            except ValueError as exc:
                raise ValueError(f"opponents: {exc}") from None
        return spec, self._loaded[key]

    def sample(self, rng: np.random.Generator, slot: int) -> tuple[str, Any]:
        """The opponent of ``slot`` in a new game: the fixed one, or the league's pick (drawn with ``rng``); a
        per-game mixture (``meta:``, a population file) plays the member it draws for the game (with ``rng``),
        under its own name."""
        if self.league is None:
            name, agent = self.fixed[slot]
        else:
            pick = self.league.sample(rng, slot)
            name, agent = pick if isinstance(pick, tuple) and len(pick) == 2 and isinstance(pick[0], str) else (
                self.resolve(pick, slot))  # fmt: skip
        if isinstance(agent, MetaAgent):
            agent = agent.agents[int(rng.choice(len(agent.agents), p=agent.weights))]
        return name, agent


__all__: Sequence[str] = ("DEFAULT_OPPONENT", "League", "Opponents", "is_league")
