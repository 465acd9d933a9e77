"""The Parallel environment: bidding is one simultaneous step (in the token mode, one step per token, a player
whose bid is complete waiting with the no-op); every other decision is a step in which only the deciding agent
has a non-trivial mask (the others send the no-op: the all-zero action, or 0 in the token mode, or nothing)."""

from __future__ import annotations

from typing import Any

import numpy as np
from pettingzoo import ParallelEnv
from pettingzoo.utils.env_logger import EnvLogger

from revolution_env.engine.game import OVER, check_seed
from revolution_env.env.core import ENV_NAME, ILLEGAL_REWARD, RENDER_MODES, Core, CoreAccess, EnvConfig
from revolution_env.env.encoding import NONE, IllegalActionError


class parallel_env(CoreAccess, ParallelEnv):
    """Revolution! in the Parallel API. ``illegal="terminate"`` (default): an illegal action ends the game with -1
    to each offender and 0 to the others; ``illegal="raise"``: :class:`IllegalActionError`. Either way, a step's
    actions are all checked before any is applied."""

    metadata = {"name": ENV_NAME, "render_modes": list(RENDER_MODES), "is_parallelizable": True, "render_fps": 1}

    def __init__(self, **options: Any) -> None:
        self.config = EnvConfig.from_options(options)
        self.render_mode = self.config.render_mode
        self.core = Core(self.config)
        self.possible_agents = list(self.core.agents)
        self.agents: list[str] = []
        self.observation_spaces = {a: self.core.observation_space() for a in self.possible_agents}
        self.action_spaces = {a: self.core.action_space() for a in self.possible_agents}

    def reset(self, seed: int | None = None, options: dict | None = None):
        seed = check_seed(seed)  # before anything changes
        if seed is not None:
            for i, agent in enumerate(self.possible_agents):
                self.action_spaces[agent].seed(seed + 1 + i)
        self.core.reset(seed)
        self.agents = list(self.possible_agents)
        return self._observations(), self._infos()

    def step(self, actions: dict[str, Any]):
        core = self.core
        if not self.agents:
            raise RuntimeError("step: the game is over; call reset() to start a new one")
        unknown = [a for a in actions if a not in self.agents]
        if unknown:
            raise ValueError(f"actions: {unknown[0]!r} is not a live agent (agents: {self.agents})")
        deciders = [a for a in self.agents if core.kind(core.seat_of[a]) != NONE]
        for agent in deciders:
            if agent not in actions:
                raise ValueError(f"actions: {agent} must act now (decision {core.kind(core.seat_of[agent])})")
        checked, offenders = {}, []
        for agent, action in actions.items():  # every action checked before any is applied
            seat = core.seat_of[agent]
            try:
                if agent in deciders:
                    checked[agent] = core.check(seat, action, agent)
                else:  # nothing to decide: only the no-op (the all-zero action, 0 in the token mode) is legal
                    core.check_idle(seat, action, agent)
            except IllegalActionError:
                if self.config.illegal == "raise":
                    raise
                offenders.append(agent)
        if offenders:
            return self._end_illegal(offenders)
        for agent in deciders:
            core.apply(core.seat_of[agent], checked[agent])
        over = core.game.phase == OVER
        rewards = dict.fromkeys(self.agents, 0.0)
        if over:
            rewards = {a: r for a, r in zip(self.agents, core.rewards())}
        terminations = dict.fromkeys(self.agents, over and not core.game.truncated)
        truncations = dict.fromkeys(self.agents, over and core.game.truncated)
        observations, infos = self._observations(), self._infos()
        if over:
            self.agents = []
        if self.render_mode == "human":
            self.render()
        return observations, rewards, terminations, truncations, infos

    def _end_illegal(self, offenders: list[str]):
        """PettingZoo classic's convention: the game ends at once, -1 to each offender, 0 to everyone else."""
        EnvLogger.warn_on_illegal_move()
        observations, infos = self._observations(), self._infos()
        rewards = {a: ILLEGAL_REWARD if a in offenders else 0.0 for a in self.agents}
        for a in offenders:
            infos[a]["illegal_action"] = 1
        terminations = dict.fromkeys(self.agents, True)
        truncations = dict.fromkeys(self.agents, False)
        self.agents = []
        return observations, rewards, terminations, truncations, infos

    def _observations(self) -> dict[str, dict[str, np.ndarray]]:
        return {a: self.core.observe(i) for i, a in enumerate(self.possible_agents) if a in self.agents}

    def _infos(self) -> dict[str, dict[str, int]]:
        infos = self.core.infos()
        return {a: infos[i] for i, a in enumerate(self.possible_agents) if a in self.agents}
