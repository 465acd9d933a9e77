"""Self-play as a single-agent Gymnasium environment: ``revolution_env.gym_env`` with the league as opponents.

Each game the learner takes a seat drawn at random and every other seat gets an opponent drawn from the league
(:mod:`revolution_training.league`). One ``step`` is one decision of the learner's (the scalar backend of ``revolution
train``, ``env_backend: subprocess``; the batched engine's vector env does the same for many games at once).

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
from revolution_training.league import LeagueReader

from revolution_env.arena.single import SingleAgentEnv


class SelfPlayEnv(SingleAgentEnv):
    """``revolution_env.gym_env`` with a league as the opponents, and observations divided by the layout's
    ``scale`` (what PPO trains on, and what a policy checkpoint reads). Illegal actions raise: a learner's action
    comes through its mask, so one that breaks it is a bug, not a lost game."""

    def __init__(self, env_options: Mapping[str, Any], league: LeagueReader) -> None:
        options = dict(env_options)
        players = options.pop("players", 3)
        super().__init__(players, opponents=league, illegal="raise", **options)
        self.env_options = dict(env_options)
        self.scale = self.layout.scale
        low, high = self.layout.bounds()
        self.observation_space = gymnasium.spaces.Box(low / self.scale, high / self.scale, low.shape, np.float32)

    def _observation(self) -> np.ndarray:
        return (super()._observation() / self.scale).astype(np.float32)


def make_selfplay_env(
    env_options: Mapping[str, Any], league_folder: str | Path | None, heuristics: Sequence[str], **league: Any
) -> SelfPlayEnv:
    """A self-play env whose opponents come from the league in ``league_folder`` (None: heuristics only);
    ``league``: :class:`LeagueReader`'s other options by name (``p_latest``, ``sampling``, ...)."""
    return SelfPlayEnv(env_options, LeagueReader(league_folder, heuristics, env_options, **league))
