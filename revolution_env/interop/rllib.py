"""RLlib (new API stack): a PPO RLModule that plays within the environment's action mask.

The environment goes into RLlib the way RLlib's PettingZoo docs show, through its own wrappers, and this module
is named in the ``RLModuleSpec``:

```python
from ray.rllib.algorithms.ppo import PPOConfig
from ray.rllib.core.rl_module.multi_rl_module import MultiRLModuleSpec
from ray.rllib.core.rl_module.rl_module import RLModuleSpec
from ray.rllib.env.wrappers.pettingzoo_env import ParallelPettingZooEnv
from ray.tune.registry import register_env

import revolution_env
from revolution_env.interop.rllib import MaskedPPOTorchRLModule, RLModuleAgent

register_env("revolution", lambda config: ParallelPettingZooEnv(revolution_env.parallel_env(**config)))
config = (
    PPOConfig()
    .environment("revolution", env_config={"players": 3})
    .multi_agent(policies={"shared"}, policy_mapping_fn=lambda agent_id, *args, **kwargs: "shared")
    .rl_module(rl_module_spec=MultiRLModuleSpec(
        rl_module_specs={"shared": RLModuleSpec(module_class=MaskedPPOTorchRLModule)}))
)
algo = config.build_algo()
algo.train()
bot = RLModuleAgent(algo.get_module("shared"), players=3)   # an Agent: play_game, GameRunner, tournaments
```

Every seat maps to one policy: self-play with shared parameters. Both action modes work: in bid mode
(MultiDiscrete) RLlib's multi-categorical takes the logits as ``sum(nvec)`` values, dimension after dimension,
the layout of the environment's flat mask; in token mode (Discrete) they are the mask's own ``n`` values. The
AEC env works too, through ``ray.rllib.env.wrappers.pettingzoo_env.PettingZooEnv``.

Why a module of ours and not RLlib's action-masking example: that example reads the observation under the key
``"observations"``, PettingZoo's convention (and ours) is ``"observation"``; it also pops the mask out of the
batch it is given, which this module does not (it reads the batch and leaves it as it was). A masked logit is
the large negative number of :mod:`revolution_env.interop.torch`, so entropies and gradients stay finite.
``pip install -e '.[rllib]'`` (Ray with RLlib, and torch).
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import torch
from ray.rllib.algorithms.ppo.torch.default_ppo_torch_rl_module import DefaultPPOTorchRLModule
from ray.rllib.core.columns import Columns

from revolution_env.agents.base import Agent
from revolution_env.interop.torch import MASKED

OBSERVATION, MASK = "observation", "action_mask"


class MaskedPPOTorchRLModule(DefaultPPOTorchRLModule):
    """RLlib's default PPO module (its encoder, policy and value heads, built from ``model_config``) on
    ``observation["observation"]``, with the logits of every value the mask forbids set to a large negative
    number before the action distribution is made."""

    def __init__(self, *, observation_space: gym.Space | None = None, **kwargs: Any) -> None:
        if not (isinstance(observation_space, gym.spaces.Dict) and {OBSERVATION, MASK} <= set(observation_space)):
            raise ValueError(
                "MaskedPPOTorchRLModule: expected a Dict observation space with 'observation' and 'action_mask' "
                f"(revolution_env.env() and parallel_env() give one), got {observation_space!r}"
            )
        self._with_mask = observation_space
        # the networks are built for the observation vector alone
        super().__init__(observation_space=observation_space[OBSERVATION], **kwargs)

    def setup(self) -> None:
        super().setup()
        self.observation_space = self._with_mask  # what the env gives, for RLlib's checks and connectors

    def _forward(self, batch: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
        mask, batch = _split(batch)
        return _masked(super()._forward(batch, **kwargs), mask)

    def _forward_train(self, batch: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
        mask, batch = _split(batch)
        return _masked(super()._forward_train(batch, **kwargs), mask)

    def compute_values(self, batch: dict[str, Any], embeddings: Any = None) -> Any:
        if embeddings is None:
            _, batch = _split(batch)
        return super().compute_values(batch, embeddings)


def _split(batch: dict[str, Any]) -> tuple[torch.Tensor, dict[str, Any]]:
    """The mask, and a shallow copy of ``batch`` whose observation is the vector alone."""
    obs = batch[Columns.OBS]
    if not isinstance(obs, dict) or MASK not in obs or OBSERVATION not in obs:
        raise ValueError(
            "MaskedPPOTorchRLModule: the batch's observations must be a dict of 'observation' and 'action_mask' "
            "(an env-to-module connector that flattens observations, such as FlattenObservations, removes the mask)"
        )
    return obs[MASK], {**batch, Columns.OBS: obs[OBSERVATION]}


def _masked(out: dict[str, Any], mask: torch.Tensor) -> dict[str, Any]:
    logits = out[Columns.ACTION_DIST_INPUTS]
    allowed = mask.to(device=logits.device, dtype=torch.bool)
    out[Columns.ACTION_DIST_INPUTS] = torch.where(allowed, logits, torch.full_like(logits, MASKED))
    return out


class RLModuleAgent(Agent):
    """A module trained in RLlib (:class:`MaskedPPOTorchRLModule`) as an :class:`~revolution_env.agents.base.Agent`,
    to seat in this package's games and tournaments (``play_game``, ``GameRunner``) against the heuristics and
    checkpoints. ``deterministic``: the most likely legal action (default), or a sample (torch's generator).
    ``env_options`` are those of the games it plays, its ``action_mode`` included."""

    name = "rllib"

    def __init__(self, module: Any, deterministic: bool = True, **env_options: Any) -> None:
        super().__init__(**env_options)
        self.module, self.deterministic = module, deterministic
        self._dist = module.get_inference_action_dist_cls()

    def act(self, observation: dict[str, Any], info: dict[str, Any]) -> Any:
        obs = {k: torch.as_tensor(observation[k])[None] for k in (OBSERVATION, MASK)}
        with torch.no_grad():
            out = self.module.forward_inference({Columns.OBS: obs})
        dist = self._dist.from_logits(out[Columns.ACTION_DIST_INPUTS])
        if self.deterministic:
            dist = dist.to_deterministic()
        return dist.sample()[0].cpu().numpy()
