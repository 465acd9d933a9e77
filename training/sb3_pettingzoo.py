"""Stable-Baselines3 on the PettingZoo envs through SuperSuit: the action masks MaskablePPO cannot reach, and an
agent that seats a trained model in games and tournaments.

SuperSuit's documented path to SB3 is ``pettingzoo_env_to_vec_env_v1`` (each seat a sub-env, one policy shared
over the seats) then ``concat_vec_envs_v1(..., base_class="stable_baselines3")``. sb3-contrib's MaskablePPO reads
the masks of a ``VecEnv`` through ``has_attr("action_masks")`` and ``env_method("action_masks")``; SuperSuit's
``SB3VecEnvWrapper`` forwards both to its ``ConcatVecEnv``, which has neither (``AttributeError: 'ConcatVecEnv'
object has no attribute 'has_attr'``, SuperSuit 3.11), and sb3-contrib offers no wrapper that takes the masks from
the observations (Stable-Baselines-Team/stable-baselines3-contrib#279, open). :class:`VecActionMasks` is that
wrapper (it also seeds the games, which ``ConcatVecEnv`` cannot through SB3's ``seed()``)::

    venv = supersuit.pettingzoo_env_to_vec_env_v1(revolution_env.parallel_env(players=3))
    venv = VecActionMasks(supersuit.concat_vec_envs_v1(venv, 8, base_class="stable_baselines3"))
    model = sb3_contrib.MaskablePPO("MultiInputPolicy", venv)

It lives in ``training/`` because only the training layer imports stable-baselines3 (docs/architecture.md);
``pip install -e '.[train]'``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
from stable_baselines3.common.vec_env import VecEnv, VecEnvWrapper

from revolution_env.agents.base import Agent

__all__ = ["SB3ModelAgent", "VecActionMasks"]

METHOD = "action_masks"


class VecActionMasks(VecEnvWrapper):
    """An SB3 ``VecEnv`` whose ``action_masks()`` is the ``key`` entry of its latest observations (one row per
    sub-env), as MaskablePPO asks for it: ``env_method("action_masks")`` after ``has_attr("action_masks")``."""

    def __init__(self, venv: VecEnv, key: str = "action_mask") -> None:
        spaces = getattr(venv.observation_space, "spaces", None)
        if not spaces or key not in spaces:
            raise ValueError(f"VecActionMasks: the observations must be a Dict with an {key!r} entry, "
                             f"got {venv.observation_space}")  # fmt: skip
        super().__init__(venv)
        self.key = key
        self._masks: np.ndarray | None = None

    def _keep(self, observations: dict[str, np.ndarray]) -> None:
        self._masks = np.asarray(observations[self.key], dtype=bool)

    def reset(self) -> Any:
        observations = self.venv.reset()
        self._keep(observations)
        return observations

    def step_wait(self) -> Any:
        observations, rewards, dones, infos = self.venv.step_wait()
        self._keep(observations)  # after a game ends: the next game's first observation, as MaskablePPO needs
        return observations, rewards, dones, infos

    def action_masks(self) -> np.ndarray:
        if self._masks is None:
            raise RuntimeError("VecActionMasks.action_masks: call reset() first")
        return self._masks

    def seed(self, seed: int | None = None) -> Any:
        """Seed the games, as SB3's ``VecEnv.seed`` does (``MaskablePPO(seed=...)`` calls it). SuperSuit's
        ``ConcatVecEnv`` has no ``seed()`` (``AttributeError`` through SuperSuit's SB3 wrapper), but its
        ``reset(seed=s)`` seeds game ``i`` with ``s + i``, and the games go on from there: that reset is done here."""
        try:
            return self.venv.seed(seed)
        except AttributeError:
            if seed is None:
                return [None] * self.num_envs
            inner = self.venv
            while hasattr(inner, "venv"):
                inner = inner.venv
            inner.reset(seed=seed)
            return [seed] * self.num_envs

    def has_attr(self, attr_name: str) -> bool:
        if attr_name == METHOD:
            return True
        try:
            return self.venv.has_attr(attr_name)
        except AttributeError:  # SuperSuit's ConcatVecEnv has no has_attr
            return False

    def env_method(self, method_name: str, *args: Any, indices: Any = None, **kwargs: Any) -> list[Any]:
        if method_name == METHOD:
            return list(self.action_masks()[self._get_indices(indices)])
        return self.venv.env_method(method_name, *args, indices=indices, **kwargs)


class SB3ModelAgent(Agent):
    """A trained sb3-contrib MaskablePPO model (its ``predict`` takes ``action_masks``) in one seat of
    :func:`play_game`, a tournament or ``win_share``. ``preprocess`` turns the env's observation dict into the
    model's input (the same transform the model was trained with; default: unchanged)."""

    name = "sb3"

    def __init__(
        self,
        model: Any,
        preprocess: Callable[[dict[str, np.ndarray]], dict[str, np.ndarray]] | None = None,
        deterministic: bool = True,
        **env_options: Any,
    ) -> None:
        super().__init__(**env_options)
        self.model = model
        self.preprocess = preprocess or (lambda observation: observation)
        self.deterministic = deterministic

    def act(self, observation: dict[str, np.ndarray], info: dict[str, Any]) -> np.ndarray:
        mask = np.asarray(observation["action_mask"], dtype=bool)
        action, _ = self.model.predict(self.preprocess(observation), action_masks=mask,
                                       deterministic=self.deterministic)  # fmt: skip
        return np.asarray(action)
