"""The vector env (``revolution_env.vector_env``) or the self-play vector env (``revolution_env.selfplay_vector_env``,
every seat a row) as a Stable-Baselines3 ``VecEnv``, for ``sb3_contrib.MaskablePPO``.

It lives in ``training/`` because only the training layer imports stable-baselines3 (docs/architecture.md).

MaskablePPO asks a ``VecEnv`` for masks through ``env_method("action_masks")`` (``sb3_contrib``'s
``get_action_masks`` stacks what it returns): this adapter answers from the vector env's ``(num_envs, sum(nvec))``
masks. SB3's own autoreset convention is the vector env's ``SAME_STEP``: the observation returned with
``done`` is the next game's, and the last one is in ``infos[i]["terminal_observation"]``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import gymnasium
import numpy as np
from stable_baselines3.common.vec_env import VecEnv, VecEnvWrapper

from revolution_env.arena.selfplay import SelfPlayVectorEnv
from revolution_env.arena.vector import RevolutionVectorEnv


class SB3VecEnv(VecEnv):
    """A :class:`RevolutionVectorEnv` or :class:`SelfPlayVectorEnv` (without ``mask_in_obs``) seen as an SB3
    ``VecEnv``: one SB3 env per row, a learner seat of a game (one per game with ``learner_seats=1``; every seat in
    self-play), where MaskablePPO then sees every row, those waiting with the no-op included. A finished game's info
    names its ``opponents``, the seats that are not the learner's (none in self-play).

    ``scale=True`` (the default) divides observations by the layout's ``scale``, as
    :class:`revolution_training.selfplay.SelfPlayEnv` feeds PPO and as a saved policy reads them
    (``revolution_env.agents.checkpoint.PolicyAgent``)."""

    def __init__(self, venv: RevolutionVectorEnv | SelfPlayVectorEnv, scale: bool = True) -> None:
        if not isinstance(venv, (RevolutionVectorEnv, SelfPlayVectorEnv)):
            raise ValueError(
                "venv: expected a revolution_env.vector_env(...) or selfplay_vector_env(...), got "
                f"{type(venv).__name__}"
            )
        if venv.mask_in_obs:
            raise ValueError("mask_in_obs: the SB3 adapter takes the masks from action_masks(); use mask_in_obs=False")
        self.venv = venv
        self.scale = venv.obs_layout.scale if scale else None
        space = venv.single_observation_space
        if scale:
            space = gymnasium.spaces.Box(space.low / self.scale, space.high / self.scale, space.shape, np.float32)
        super().__init__(venv.num_envs, space, venv.single_action_space)
        self._actions: np.ndarray | None = None
        self._seed: int | None = None

    def reset(self) -> np.ndarray:
        obs, _ = self.venv.reset(seed=self._seed)
        self._seed = None
        return self._scaled(obs)

    def _scaled(self, obs: np.ndarray) -> np.ndarray:
        return obs if self.scale is None else (obs / self.scale).astype(np.float32)

    def step_async(self, actions: np.ndarray) -> None:
        self._actions = np.asarray(actions, dtype=np.int64).reshape(self.num_envs, -1)

    def step_wait(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, list[dict[str, Any]]]:
        obs, rewards, terminated, truncated, info = self.venv.step(self._actions)
        dones = terminated | truncated
        infos: list[dict[str, Any]] = [{} for _ in range(self.num_envs)]
        if dones.any():
            final = info["final_info"]
            names = self.venv.opponent_names() if "opponents" in final else None
            for i in np.flatnonzero(dones).tolist():
                infos[i] = {
                    "terminal_observation": self._scaled(info["final_obs"][i]),
                    "TimeLimit.truncated": bool(truncated[i] and not terminated[i]),
                    "seat": int(final["seat"][i]),
                    "won": bool(final["won"][i]),
                    "support": int(final["support"][i]),
                    "rounds": int(final["rounds"][i]),
                    "illegal_action": int(final["illegal_action"][i]),
                    "opponents": [names[k] for k in final["opponents"][i]] if names is not None else [],
                }
        return self._scaled(obs), rewards.astype(np.float32), dones, infos

    def action_masks(self) -> np.ndarray:
        """A writable copy of the vector env's read-only masks: torch warns of undefined behaviour when it wraps a
        read-only array (``model.predict(obs, action_masks=venv.action_masks())``)."""
        return self.venv.action_masks().copy()

    def close(self) -> None:
        self.venv.close()

    def seed(self, seed: int | None = None) -> Sequence[None | int]:
        self._seed = seed
        return [seed] * self.num_envs

    def get_attr(self, attr_name: str, indices: Any = None) -> list[Any]:
        value = getattr(self.venv, attr_name)
        return [value for _ in self._indices(indices)]

    def set_attr(self, attr_name: str, value: Any, indices: Any = None) -> None:
        setattr(self.venv, attr_name, value)

    def env_method(self, method_name: str, *method_args: Any, indices: Any = None, **method_kwargs: Any) -> list[Any]:
        if method_name == "action_masks":
            masks = self.venv.action_masks()
            return list(masks[self._indices(indices)])
        result = getattr(self.venv, method_name)(*method_args, **method_kwargs)
        return [result for _ in self._indices(indices)]

    def env_is_wrapped(self, wrapper_class: type, indices: Any = None) -> list[bool]:
        return [False for _ in self._indices(indices)]

    def has_attr(self, attr_name: str) -> bool:
        return hasattr(self.venv, attr_name)

    def _indices(self, indices: Any) -> list[int]:
        if indices is None:
            return list(range(self.num_envs))
        if isinstance(indices, int):
            return [indices]
        return list(indices)


class TruncatedReward(VecEnvWrapper):
    """Every env's final reward in a game cut at ``max_rounds`` replaced by ``reward``
    (``GameConfig.truncated_reward``), whatever the standing, so that a learner cannot win by stalling. SB3 marks
    such a game in its info (``TimeLimit.truncated``), whichever backend stepped it."""

    def __init__(self, venv: VecEnv, reward: float) -> None:
        super().__init__(venv)
        self.reward = float(reward)

    def reset(self) -> np.ndarray:
        return self.venv.reset()

    def step_wait(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, list[dict[str, Any]]]:
        obs, rewards, dones, infos = self.venv.step_wait()
        cut = [i for i in np.flatnonzero(dones).tolist() if infos[i].get("TimeLimit.truncated")]
        if cut:
            rewards = rewards.copy()
            rewards[cut] = self.reward
        return obs, rewards, dones, infos
