"""An agent that plays as another and keeps what it was asked and what it answered: the positions that the tests
and scripts which study an agent's decisions replay (``tests/test_search.py``, ``scripts/equilibrium_profile.py``)."""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

from revolution_env.engine.game import Decision


class Decided(NamedTuple):
    """One decision of the recorded agent."""

    observation: dict[str, np.ndarray]  # a copy of what it was given
    info: dict[str, Any]
    action: np.ndarray
    last: Any  # the agent's ``last`` once it has acted (a search's record of its search), or None


class Recording:
    """Plays as ``agent`` (its name, its reset, its actions) and keeps each of its decisions in ``seen``."""

    def __init__(self, agent: Any) -> None:
        self.agent, self.name, self.seen = agent, agent.name, []

    def reset(self, seed: int | None = None) -> None:
        self.agent.reset(seed)

    def act(self, observation: dict[str, np.ndarray], info: dict[str, Any]) -> np.ndarray:
        kept = {k: np.array(v) for k, v in observation.items()}
        action = self.agent.act(observation, info)
        self.seen.append(Decided(kept, dict(info), action, getattr(self.agent, "last", None)))
        return action

    def bids(self) -> list[Decided]:
        """The decisions that were bids, in order."""
        return [d for d in self.seen if d.info["decision"] == Decision.BID]
