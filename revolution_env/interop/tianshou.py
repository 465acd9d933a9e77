"""Tianshou 2: a masked actor and a critic for its PPO, and each seat's own trajectory in its multi-agent training.

The environment goes into Tianshou the way Tianshou's PettingZoo docs show, through its own ``PettingZooEnv``, in
token mode (Tianshou masks Discrete actions only):

```python
from tianshou.algorithm import PPO
from tianshou.algorithm.modelfree.reinforce import DiscreteActorPolicy
from tianshou.algorithm.optim import AdamOptimizerFactory
from tianshou.env.pettingzoo_env import PettingZooEnv
from tianshou.utils.net.common import Net

import revolution_env
from revolution_env.interop.tianshou import MaskedActor, ObservationCritic, SeatwiseOnPolicyAlgorithm

env = PettingZooEnv(revolution_env.env(players=3, action_mode="tokens"))
scale = revolution_env.observation_layout(players=3, action_mode="tokens").scale
size, actions = env.observation_space["observation"].shape, int(env.action_space.n)
actor = MaskedActor(Net(state_shape=size, action_shape=actions, hidden_sizes=[128, 128]), scale=scale)
critic = ObservationCritic(Net(state_shape=size, action_shape=1, hidden_sizes=[128, 128]), scale=scale)
ppo = PPO(policy=DiscreteActorPolicy(actor=actor, action_space=env.action_space), critic=critic,
          optim=AdamOptimizerFactory(lr=3e-4))
algorithm = SeatwiseOnPolicyAlgorithm(algorithms=[ppo] * len(env.agents), env=env)   # self-play, one network
```

``examples/tianshou_ppo.py`` trains it with Tianshou's ``OnPolicyTrainerParams``. Why these pieces (Tianshou 2.0.1):

- Tianshou's PPO has no action masks (only its DQN reads ``obs.mask``), and its stock nets take an array, while a
  ``PettingZooEnv`` observation is a ``Batch`` of ``agent_id``, ``obs`` and ``mask``. ``MaskedActor`` runs a stock
  ``Net`` on ``obs.obs`` and sets the logits the mask forbids to a large negative number; ``ObservationCritic``
  runs one on ``obs.obs``.
- Tianshou's multi-agent algorithms (``tianshou/algorithm/multiagent/marl.py``) give each agent the transitions it
  took, with its column of the reward vector *of that transition* and that transition's ``obs_next`` and done
  flags. In a game where rewards come at the end and seats do not alternate one step each, that is wrong for
  every agent but the one that moved last: the others never see their final reward (it sits in the last mover's
  transition), their last transition is not marked as the end of their episode (its return runs into the next
  game's), and ``obs_next`` is often another seat's observation. ``SeatwiseOnPolicyAlgorithm`` (a
  ``MultiAgentOnPolicyAlgorithm``) rewrites each agent's transitions before its algorithm computes returns: the
  reward is the agent's column summed from its step up to its next step in the same game, ``obs_next`` is its
  own next observation, and its last step in a game ends its episode the way the game ended. Nothing else of
  Tianshou changes. (Its DQN path, ``MultiAgentOffPolicyAlgorithm``, computes n-step targets from the replay
  buffer itself, over whichever seats took the next steps; it has no such adapter here.)
- Tianshou's trainers mark the policy they train as "within a training step" so that it samples (or explores)
  instead of playing its mode; its ``MultiAgentPolicy`` keeps the mark to itself, so every seat's policy plays
  its evaluation behaviour in its own training games (the ``is_within_training_step`` flag of
  thu-ml/tianshou#1123; the same defect for ``train()`` was thu-ml/tianshou#967). ``SeatPolicies``, the
  ``MultiAgentPolicy`` of ``SeatwiseOnPolicyAlgorithm``, passes it on.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch
from tianshou.algorithm.algorithm_base import OnPolicyAlgorithm
from tianshou.algorithm.multiagent.marl import (
    MapTrainingStats,
    MARLDispatcher,
    MultiAgentOnPolicyAlgorithm,
    MultiAgentPolicy,
)
from tianshou.data import Batch, ReplayBuffer
from tianshou.env.pettingzoo_env import PettingZooEnv
from torch.nn import ModuleList

from revolution_env.interop.torch import MASKED


def _observation(obs: Any, scale: torch.Tensor | None) -> torch.Tensor:
    inner = obs.obs if isinstance(obs, Batch) and "obs" in obs.get_keys() else obs
    x = torch.as_tensor(np.asarray(inner), dtype=torch.float32)
    return x / scale if scale is not None else x


class _OnObservation(torch.nn.Module):
    def __init__(self, net: torch.nn.Module, scale: Any = None) -> None:
        super().__init__()
        self.net = net
        self.register_buffer("scale", None if scale is None else torch.as_tensor(scale, dtype=torch.float32))


class MaskedActor(_OnObservation):
    """A Tianshou actor (observation -> logits, hidden state) over ``PettingZooEnv`` observations: ``net`` (a stock
    ``tianshou.utils.net.common.Net`` with one output per action) runs on ``obs.obs`` (divided by ``scale`` when
    given: the layout's ``scale`` turns raw counts into numbers near [0, 1]), and every logit outside ``obs.mask``
    becomes a large negative number, so sampling, the mode and the entropy stay within the legal actions."""

    def forward(self, obs: Any, state: Any = None, info: Any = None) -> tuple[torch.Tensor, Any]:
        logits, hidden = self.net(_observation(obs, self.scale), state=state)
        mask = torch.as_tensor(np.asarray(obs.mask), dtype=torch.bool)
        return logits.masked_fill(~mask, MASKED), hidden


class ObservationCritic(_OnObservation):
    """A Tianshou critic (observation -> value) over ``PettingZooEnv`` observations: ``net`` (a stock ``Net`` with
    one output) on ``obs.obs``, divided by ``scale`` when given."""

    def forward(self, obs: Any, **kwargs: Any) -> torch.Tensor:
        value, _ = self.net(_observation(obs, self.scale))
        return value


def seats(buffer: ReplayBuffer, agent_idx: dict[Any, int]) -> np.ndarray:
    """The acting seat of every buffer index (-1 where the buffer holds nothing), from ``obs.agent_id``."""
    agent_ids = np.asarray(buffer.obs.agent_id)[: buffer.maxsize]
    seat_of = np.full(buffer.maxsize, -1, dtype=np.int64)
    for agent, index in agent_idx.items():
        seat_of[agent_ids == agent] = index
    return seat_of


def seat_transitions(
    buffer: ReplayBuffer, indices: np.ndarray, seat_of: np.ndarray, seat: int
) -> dict[str, np.ndarray]:
    """Seat ``seat``'s view of its own transitions at buffer ``indices``: ``rew`` (its column of the reward summed
    from each of its steps up to its next step in the same game), ``next`` (the buffer index of that next step, or
    the step itself where there is none), ``terminated`` / ``truncated`` (the game ended, so, before its next step)
    and ``unfinished`` (the buffer holds no more of the game). ``seat_of`` is the acting seat of every buffer index."""
    rew = buffer.rew[:, seat] if buffer.rew.ndim == 2 else buffer.rew
    total = rew[indices].astype(np.float64)
    current = np.asarray(indices).copy()
    following = current.copy()
    terminated = np.zeros(len(current), dtype=bool)
    truncated = np.zeros(len(current), dtype=bool)
    unfinished = np.zeros(len(current), dtype=bool)
    open_ = np.ones(len(current), dtype=bool)
    while open_.any():
        at = np.flatnonzero(open_)
        step = buffer.next(current[at])
        ended = step == current[at]  # the game ended here, or the buffer holds no more of it
        if ended.any():
            where = at[ended]
            terminated[where] = buffer.terminated[current[where]]
            truncated[where] = buffer.truncated[current[where]]
            unfinished[where] = ~(terminated[where] | truncated[where])
            open_[where] = False
        going = ~ended
        where, step = at[going], step[going]
        own = seat_of[step] == seat
        following[where[own]] = step[own]
        open_[where[own]] = False
        passing = where[~own]
        total[passing] += rew[step[~own]]
        current[passing] = step[~own]
    return {"rew": total, "next": following, "terminated": terminated, "truncated": truncated, "unfinished": unfinished}


class SeatPolicies(MultiAgentPolicy):
    """Tianshou's ``MultiAgentPolicy`` that passes ``is_within_training_step`` on to every seat's policy. Tianshou's
    trainers set the flag on the policy they train, here this one; without it passed on, each seat's policy
    believes it is being evaluated while its training games are collected (a PPO with ``deterministic_eval``
    plays its mode, a DQN its ``eps_inference``) and learns from games it did not sample."""

    @property
    def is_within_training_step(self) -> bool:
        return self.__dict__.get("_within_training_step", False)

    @is_within_training_step.setter
    def is_within_training_step(self, value: bool) -> None:
        self.__dict__["_within_training_step"] = value
        for policy in self.__dict__.get("policies", {}).values():
            policy.is_within_training_step = value


class SeatwiseOnPolicyAlgorithm(MultiAgentOnPolicyAlgorithm):
    """``MultiAgentOnPolicyAlgorithm`` whose agents each learn from their own trajectory (see the module's
    docstring): rewards that reach a seat between its steps, its last step in a game ending its episode, and
    ``obs_next`` its own next observation. Pass the same algorithm for several seats to share one network: it
    then makes one update on all their steps together (Tianshou's makes one per seat, one after the other, each
    with the clipping reference of before the first). A seat whose algorithm is not on-policy (Tianshou's masked
    random player, ``MARLRandomDiscreteMaskedOffPolicyAlgorithm``) plays without learning."""

    def __init__(self, *, algorithms: list[Any], env: PettingZooEnv) -> None:
        # MultiAgentOnPolicyAlgorithm.__init__, with SeatPolicies for its MultiAgentPolicy.
        self._dispatcher = MARLDispatcher(algorithms, env)
        super(MultiAgentOnPolicyAlgorithm, self).__init__(
            policy=SeatPolicies({agent: algorithm.policy for agent, algorithm in self._dispatcher.algorithms.items()})
        )
        self._submodules = ModuleList(algorithms)

    def _update_with_batch(self, batch: Any, batch_size: int | None, repeat: int) -> MapTrainingStats:
        shared: dict[int, tuple[Any, list[Any]]] = {}
        for agent, algorithm in self._dispatcher.algorithms.items():
            shared.setdefault(id(algorithm), (algorithm, []))[1].append(agent)
        stats = {}
        for algorithm, agents in shared.values():
            steps = [batch[agent] for agent in agents if len(batch[agent].get_keys()) != 0]
            if steps and isinstance(algorithm, OnPolicyAlgorithm):
                stats[agents[0]] = algorithm._update_with_batch(Batch.cat(steps), batch_size, repeat)
        return MapTrainingStats(stats)

    def _preprocess_batch(self, batch: Any, buffer: ReplayBuffer, indices: np.ndarray) -> Any:
        dispatcher = self._dispatcher
        seat_of = seats(buffer, dispatcher.agent_idx)
        acting = np.asarray(batch.obs.agent_id)
        # Every seat's view first, from the buffer as collected (the loop below changes its done flags).
        views = {}
        for agent in dispatcher.algorithms:
            mine = np.flatnonzero(acting == agent)
            views[agent] = mine, seat_transitions(buffer, indices[mine], seat_of, dispatcher.agent_idx[agent])
        saved = buffer.terminated
        results: dict[Any, Any] = {}
        try:
            for agent, algorithm in dispatcher.algorithms.items():
                mine, view = views[agent]
                if len(mine) == 0:
                    results[agent] = Batch()
                    continue
                own, where = batch[mine], indices[mine]
                own.rew = view["rew"]
                own.terminated = view["terminated"]
                # A game the buffer holds only part of: the return stops at the seat's last step there and
                # bootstraps on its value (``next`` is then the step itself: its own observation stands in for
                # the unseen next one).
                own.truncated = view["truncated"] | view["unfinished"]
                own.obs_next = buffer.obs[view["next"]]
                # compute_episodic_return masks the next value with buffer.terminated[indices]: this seat's.
                terminated = np.zeros(buffer.maxsize, dtype=bool)
                terminated[where] = view["terminated"]
                buffer._meta.terminated = terminated
                results[agent] = algorithm._preprocess_batch(own, buffer, where)
        finally:
            buffer._meta.terminated = saved
        return Batch(results)
