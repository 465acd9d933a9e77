"""One interface for everything that plays: ``act(observation, info) -> action`` and ``reset(seed)``.

An agent is built for one set of environment options (it needs the observation layout and the action codec of
that variant). Agents see only what the observation shows: heuristics read it through
:meth:`Agent.view`, the same decoder a learner's inputs come from.
"""

from __future__ import annotations

import copy
from typing import Any

import numpy as np

from revolution_env.engine.game import Decision
from revolution_env.env.core import Core, EnvConfig
from revolution_env.env.encoding import Codec
from revolution_env.env.observation import ObservationLayout, ObservationView
from revolution_env.env.spaces import MaskedMultiDiscrete


class Agent:
    """Base class. Subclasses implement :meth:`act`; ``name`` is how reports call the agent."""

    name = "agent"

    def __init__(self, **env_options: Any) -> None:
        options = {k: v for k, v in env_options.items() if k != "render_mode"}
        self.env_options = options
        core = Core(EnvConfig.from_options(options))
        self.codec: Codec = core.codec
        self.layout: ObservationLayout = core.obs_layout
        self.target_names: tuple[str, ...] = core.layout.target_names
        self.n_characters: int = core.layout.n_characters
        self.components = core.layout.components
        self.rules = core.layout.rules
        self.rng = np.random.default_rng()

    def reset(self, seed: int | None = None) -> None:
        """Start a new game; a seed makes a stochastic agent reproducible."""
        self.rng = np.random.default_rng(seed)

    def act(self, observation: dict[str, np.ndarray], info: dict[str, Any]) -> np.ndarray:
        raise NotImplementedError

    def fork(self, seed: int | None) -> Agent:
        """A copy of this agent for one game, reset with ``seed``: it shares what a game does not change (tables,
        weights) and has random state of its own, so that many games can be played side by side, each exactly as
        this agent would play it alone after ``reset(seed)`` (the batched evaluation does)."""
        twin = copy.copy(self)
        twin.reset(seed)
        return twin

    # --- helpers for subclasses ---------------------------------------------------------------------------

    def view(self, observation: dict[str, np.ndarray]) -> ObservationView:
        return self.layout.decode(observation["observation"])

    def choices(self, mask: np.ndarray) -> np.ndarray:
        """The legal values of dimension 0 (the choice) under ``mask``."""
        return np.flatnonzero(mask[: self.codec.C])

    def choice_action(self, value: int) -> np.ndarray:
        a = np.zeros(len(self.codec.nvec), dtype=np.int64)
        a[0] = value
        return a

    def cube_choice(self, area: int, seat: int) -> int:
        """Dimension-0 value that picks the cube of relative ``seat`` in ``area`` (0 declines)."""
        return 1 + area * self.codec.S + seat

    def cube_of_choice(self, value: int) -> tuple[int, int]:
        """(area, relative seat) of a cube choice value (> 0)."""
        return divmod(value - 1, self.codec.S)

    def guy_choice(self, character: int, answered: int, mode: int) -> int:
        """Dimension-0 value for a Guy placement: ``answered`` 0 = own bid, 1 = the opponent's; mode 0 tie, 1 beat."""
        return 1 + (character * 2 + answered) * 2 + mode

    def guy_of_choice(self, value: int) -> tuple[int, int, int]:
        character, rest = divmod(value - 1, 4)
        answered, mode = divmod(rest, 2)
        return character, answered, mode

    def bid_action(self, counts: np.ndarray) -> np.ndarray:
        """The action for a bid given as (T, 3) counts per target."""
        return self.codec.action_from_bid(counts)

    def legal_types(self) -> np.ndarray:
        """(T, 3) bool: which token types each bid target accepts."""
        return self.codec.layout.legal


class RandomAgent(Agent):
    """Uniform over the mask: each token to a uniformly random legal target; a uniform legal choice. In the token
    mode (``action_mode="tokens"``), a uniform legal action, token after token."""

    name = "random"

    def __init__(self, **env_options: Any) -> None:
        super().__init__(**env_options)
        self._space = MaskedMultiDiscrete(self.codec.nvec)
        self._tokens = env_options.get("action_mode") == "tokens"

    def reset(self, seed: int | None = None) -> None:
        super().reset(seed)
        self._space.seed(seed)

    def fork(self, seed: int | None) -> RandomAgent:
        twin = copy.copy(self)
        twin._space = MaskedMultiDiscrete(self.codec.nvec)  # its generator is the agent's random state
        twin.reset(seed)
        return twin

    def act(self, observation: dict[str, np.ndarray], info: dict[str, Any]) -> np.ndarray:
        if self._tokens:
            return np.int64(self.rng.choice(np.flatnonzero(observation["action_mask"])))
        return self._space.sample(observation["action_mask"])


def act_batch(agent: Any, observations: np.ndarray, masks: np.ndarray, decisions: np.ndarray) -> np.ndarray:
    """An agent's actions (n, D) for the rows of ``observations`` (n, size), flat ``masks`` (n, sum(nvec)) and
    ``decisions`` (n,): in one call where the agent has ``act_batch`` (the heuristics' compiled code, a policy's
    forward pass), else ``act`` row by row."""
    if hasattr(agent, "act_batch"):
        return np.asarray(agent.act_batch(observations, masks, decisions), dtype=np.int64)
    masks = np.asarray(masks).view(np.int8)
    return np.stack(
        [
            np.asarray(
                agent.act({"observation": o, "action_mask": m}, {"decision": Decision(int(k)), "illegal_action": 0}),
                dtype=np.int64,
            )
            for o, m, k in zip(observations, masks, decisions)
        ]
    )
