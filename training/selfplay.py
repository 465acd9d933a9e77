"""Self-play as a single-agent Gymnasium environment: the learner plays one seat, the league the others.

Each game the learner takes a seat drawn at random and every other seat gets an opponent drawn from the league
(:mod:`training.league`). The env steps the AEC environment itself, letting the opponents act until the learner
has a decision, so one ``step`` is one decision of the learner's.

| space       | value                                                                                    |
|-------------|------------------------------------------------------------------------------------------|
| observation | the learner's observation vector divided by the layout's ``scale`` (float32 ``Box``)     |
| action      | the environment's ``MultiDiscrete(nvec)``; ``action_masks()`` gives the learner's mask   |
| reward      | the learner seat's own reward: 0 until the end, then ``win_loss`` (+1 / -1) or ``margin`` |

The episode ends with the game: ``terminated`` when it is over, ``truncated`` at ``max_rounds``. The final
step's ``info`` carries ``seat``, ``opponents``, ``won`` and ``support`` for logging.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import gymnasium
import numpy as np

from revolution_env import raw_env
from revolution_env.agents.base import Agent

from .league import LeagueReader


class SelfPlayEnv(gymnasium.Env):
    """One seat of a Revolution! game for a learner; the other seats are played by ``league`` opponents."""

    metadata = {"render_modes": []}

    def __init__(self, env_options: Mapping[str, Any], league: LeagueReader) -> None:
        super().__init__()
        self.env_options = dict(env_options)
        self.game_env = raw_env(**self.env_options)
        self.league = league
        core = self.game_env.core
        self.scale = core.obs_layout.scale
        self.observation_space = gymnasium.spaces.Box(-np.inf, np.inf, (core.obs_layout.size,), np.float32)
        self.action_space = gymnasium.spaces.MultiDiscrete(core.codec.nvec)
        self.players = len(self.game_env.possible_agents)
        self.learner: str = self.game_env.possible_agents[0]
        self.opponents: dict[str, tuple[str, Agent]] = {}
        self._reward = 0.0

    # --- the gymnasium API -------------------------------------------------------------------------------------

    def reset(self, seed: int | None = None, options: dict | None = None) -> tuple[np.ndarray, dict[str, Any]]:
        super().reset(seed=seed)
        rng = self.np_random
        agents = self.game_env.possible_agents
        self.learner = agents[int(rng.integers(self.players))]
        others = [a for a in agents if a != self.learner]
        self.opponents = {a: self.league.sample(rng, slot) for slot, a in enumerate(others)}
        game_seed = int(rng.integers(2**31))
        for i, (_, agent) in enumerate(self.opponents.values()):
            agent.reset(game_seed + 1 + i)
        self.game_env.reset(seed=game_seed)
        self._reward = 0.0
        self._play_opponents()
        return self._observation(), self._info()

    def step(self, action: np.ndarray) -> tuple[np.ndarray, float, bool, bool, dict[str, Any]]:
        env = self.game_env
        if env.agent_selection != self.learner or self._over():
            raise RuntimeError("step() called when the learner has no decision (call reset() after the end)")
        self._step(action)
        self._play_opponents()
        reward, self._reward = self._reward, 0.0
        terminated = bool(env.terminations[self.learner])
        truncated = bool(env.truncations[self.learner])
        info = self._info()
        if terminated or truncated:
            info.update(self._final_info())
        return self._observation(), float(reward), terminated, truncated, info

    def action_masks(self) -> np.ndarray:
        """The learner's mask (flat bool, the form MaskablePPO takes); all of it after the end."""
        if self._over():
            return np.ones(int(self.action_space.nvec.sum()), dtype=bool)
        return self.game_env.core.mask(self.game_env.core.seat_of[self.learner]).astype(bool)

    def learner_view(self) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
        """The learner's observation and info as the environment gives them to an agent (unscaled): what a
        teacher acting for the learner reads (``training.pretrain``)."""
        return self.game_env.observe(self.learner), self.game_env.infos[self.learner]

    # --- inside a game -----------------------------------------------------------------------------------------

    def _over(self) -> bool:
        env = self.game_env
        return bool(env.terminations[self.learner] or env.truncations[self.learner])

    def _step(self, action: Any) -> None:
        """One AEC step; the learner's share of its rewards is all the learner is paid (never an opponent's)."""
        self.game_env.step(action)
        self._reward += self.game_env.rewards[self.learner]

    def _play_opponents(self) -> None:
        env = self.game_env
        while not self._over() and env.agent_selection != self.learner:
            name = env.agent_selection
            agent = self.opponents[name][1]
            self._step(agent.act(env.observe(name), env.infos[name]))

    def _observation(self) -> np.ndarray:
        return (self.game_env.observe(self.learner)["observation"] / self.scale).astype(np.float32)

    def _info(self) -> dict[str, Any]:
        return {"decision": self.game_env.infos[self.learner].get("decision", "none")}

    def _final_info(self) -> dict[str, Any]:
        game = self.game_env.game
        seat = self.game_env.core.seat_of[self.learner]
        return {
            "seat": seat,
            "opponents": [self.opponents[a][0] for a in self.game_env.possible_agents if a != self.learner],
            "won": seat in game.final["winners"],
            "support": int(game.final["support"][seat]),
            "rounds": int(game.round),
        }


def make_selfplay_env(
    env_options: Mapping[str, Any],
    league_folder: str | Path | None,
    heuristics: Sequence[str],
    p_latest: float = 0.0,
    p_past: float = 0.0,
    deterministic_opponents: bool = False,
) -> SelfPlayEnv:
    """A self-play env whose opponents come from the league in ``league_folder`` (None: heuristics only)."""
    reader = LeagueReader(league_folder, heuristics, env_options, p_latest, p_past, deterministic_opponents)
    return SelfPlayEnv(env_options, reader)
