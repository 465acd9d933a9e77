"""Magnetic Mirror Descent: PPO regularised towards a magnet policy, for self-play that converges towards an
equilibrium instead of chasing its last opponent.

Sokota et al., "A Unified Approach to Reinforcement Learning, Quantal Response Equilibria, and Two-Player
Zero-Sum Games" (ICLR 2023, arXiv 2206.05825): each update moves the policy towards the best response to its
value estimates while staying near a *magnet* policy ``rho`` and near its previous self. As a PPO loss (the form of
IIG-RL-Benchmark's ``algorithms/mmd`` and OpenSpiel's ``pytorch/nash_pg.py``), per minibatch::

    loss = clipped policy-gradient loss
         + vf_coef    * value loss
         + magnet_coef * KL(pi || rho)          exact, over the legal actions of every head of the action
         + kl_coef     * KL(pi || pi_old)       estimated from the rollout's actions: r log r - (r - 1)
         - ent_coef    * entropy                (kept for configs that set it; MMD's entropy is the uniform magnet)

where ``r = pi(a) / pi_old(a)`` of the whole action. Rudolph et al. ("Reevaluating Policy Gradient Methods for
Imperfect-Information Games", arXiv 2502.08938) found tuned PPO and MMD the least exploitable of the methods they
compared. The magnet (``TrainConfig.magnet``):

- ``uniform``: the uniform policy over the legal actions of each head, ``KL(pi || uniform) = log(legal) - H(pi)``:
  an entropy bonus taken per head, which MMD's theory asks for (a quantal response equilibrium of temperature
  ``magnet_coef``, near a Nash equilibrium when it is small);
- ``imitation``: a frozen copy of the policy right after imitating ``imitation.teacher``: play stays near the
  teacher's where the game gives no reason to leave it;
- ``latest``: a frozen copy of the policy, replaced by the current one every ``magnet_every`` learner steps (the
  moving magnet of OpenSpiel's ``nash_pg.py``): the fixed point of the sequence is an equilibrium, not a
  regularised one;
- a policy checkpoint ``PATH.pt`` of the same network shape and action mode.

For a bid (MultiDiscrete: a choice, then one head per token) ``KL(pi || rho)`` is the sum over the heads, each over
the values its mask allows; in the token mode it is over the one head of each token's step; with the autoregressive
bid head, the sum over its steps along the rollout's bid (:func:`kl_to_magnet`). A head with one legal
value (a decision with nothing to choose) adds nothing. The magnet's weights live in the policy's state (the
submodule ``magnet``), so saves, ``--resume`` and ``init_from`` a run folder carry them.
"""

from __future__ import annotations

import copy
from typing import Any

import numpy as np
import torch as th
from gymnasium import spaces
from revolution_training.distributions import (
    AutoregressiveBidDistribution,
    AutoregressiveBidHead,
    GroupedMaskableMultiCategorical,
    runs_kl,
    steps_kl,
)
from revolution_training.policy import evaluate_rows, load_actor
from sb3_contrib import MaskablePPO
from sb3_contrib.common.maskable.distributions import MaskableCategoricalDistribution
from stable_baselines3.common.utils import explained_variance
from torch import nn
from torch.nn import functional as F

from revolution_env.interop.torch import legal_probabilities


class MagnetActor(nn.Module):
    """A frozen copy of an SB3 ``MlpPolicy``'s actor (its hidden layers and ``action_net``): the magnet's logits."""

    def __init__(self, sb3_policy: Any) -> None:
        super().__init__()
        self.policy_net = copy.deepcopy(sb3_policy.mlp_extractor.policy_net)
        self.action_net = copy.deepcopy(sb3_policy.action_net)
        self.requires_grad_(False)

    def forward(self, features: th.Tensor) -> th.Tensor:
        return self.action_net(self.policy_net(features))

    def copy_from(self, sb3_policy: Any) -> None:
        """Become the policy's actor as it is now (a refresh of the ``latest`` magnet)."""
        with th.no_grad():
            self.policy_net.load_state_dict(sb3_policy.mlp_extractor.policy_net.state_dict())
            self.action_net.load_state_dict(sb3_policy.action_net.state_dict())

    def load_checkpoint(self, checkpoint: dict[str, Any], where: str) -> None:
        """The actor of a policy checkpoint (``revolution_env.agents.checkpoint``'s format)."""
        load_actor(checkpoint["policy"], self.policy_net, self.action_net, f"magnet: {where}")

    def head(self) -> AutoregressiveBidHead | None:
        """The magnet's autoregressive bid head (None: the factorised head)."""
        return self.action_net if isinstance(self.action_net, AutoregressiveBidHead) else None


def kl_to_magnet(
    distribution: Any, magnet_logits: th.Tensor | None, magnet_head: AutoregressiveBidHead | None = None
) -> th.Tensor:
    """``KL(pi || rho)`` per sample, summed over the heads of the action, each over its legal values; ``rho`` is
    the uniform policy over the legal values when ``magnet_logits`` is None. ``distribution`` is the policy's
    masked distribution after ``evaluate_actions`` (the bid mode's :class:`GroupedMaskableMultiCategorical` or
    sb3-contrib's ``MaskableCategoricalDistribution`` of the token mode).

    For the autoregressive bid head (:class:`AutoregressiveBidDistribution`; ``magnet_head``: the magnet's head,
    whose output ``magnet_logits`` is) the sum over the steps of each step's exact KL, both heads following the
    actions last evaluated (PPO's: the rollout's), each step over the values its mask allows given the steps
    before: the estimator of the distribution's entropy, and with the same reason (its expectation over bids drawn
    from ``pi`` is the KL of whole bids). The uniform magnet is uniform at each step."""
    if isinstance(distribution, AutoregressiveBidDistribution):
        steps = distribution.followed()
        if magnet_logits is None:
            choice_m, token_m = steps.choice_legal.float(), steps.token_legal.float()
            choice_q = -th.log(choice_m.sum(-1, keepdim=True).clamp(min=1.0)).expand_as(choice_m)
            token_q = -th.log(token_m.sum(-1, keepdim=True).clamp(min=1.0)).expand_as(token_m)
        else:  # the same rows and tokens as the policy's (both follow the same actions under the same masks)
            theirs = magnet_head.follow(magnet_logits, distribution._legal(), steps.actions)
            choice_q, token_q = theirs.choice_log_p, theirs.token_log_p
        return steps_kl(steps, choice_q, token_q)
    if isinstance(distribution, GroupedMaskableMultiCategorical):
        runs, legal = distribution.runs, distribution.legal
        log_p = distribution.log_p
        if legal is None:
            legal = [th.ones_like(lp) for lp in log_p]
        if magnet_logits is None:
            log_q = [-th.log(m.sum(-2, keepdim=True)).expand_as(m) for m in legal]
        else:
            log_q = runs.log_softmax(magnet_logits, legal)
        return runs_kl(log_p, log_q, legal)
    if isinstance(distribution, MaskableCategoricalDistribution):
        inner = distribution.distribution
        log_p = th.log_softmax(inner.logits, -1)
        legal = inner.masks if inner.masks is not None else th.ones_like(log_p, dtype=th.bool)
        m = legal.float()
        if magnet_logits is None:
            log_q = -th.log(m.sum(-1, keepdim=True)).expand_as(m)
        else:
            log_q = th.log_softmax(th.where(legal, magnet_logits, th.full_like(magnet_logits, -1e8)), -1)
        return (legal_probabilities(log_p, m) * (log_p - log_q)).sum(-1)
    raise TypeError(f"magnet: no KL for the action distribution {type(distribution).__name__}")


class MagnetPPO(MaskablePPO):
    """MaskablePPO with MMD's two regularisers (the module documentation): ``magnet_coef * KL(pi || rho)`` and
    ``kl_coef * KL(pi || pi_old)``. ``magnet`` is ``uniform``, ``imitation``, ``latest`` or ``checkpoint``
    (:meth:`set_magnet` loads one); ``magnet_every``: learner steps between two refreshes of a ``latest`` magnet
    (0: never), counted from the run's step, so that a resumed run refreshes where the run would have."""

    def __init__(
        self,
        *args: Any,
        magnet: str = "uniform",
        magnet_coef: float = 0.05,
        kl_coef: float = 0.05,
        magnet_every: int = 0,
        **kwargs: Any,
    ) -> None:
        self.magnet = magnet
        self.magnet_coef = float(magnet_coef)
        self.kl_coef = float(kl_coef)
        self.magnet_every = int(magnet_every)
        super().__init__(*args, **kwargs)

    def _setup_model(self) -> None:
        super()._setup_model()
        if self.magnet != "uniform":  # a frozen actor, saved with the policy (its optimizer never sees it)
            self.policy.magnet = MagnetActor(self.policy)

    def set_magnet(self, checkpoint: dict[str, Any] | None = None, where: str = "") -> None:
        """Fix the magnet now: the policy as it is (``imitation``, ``latest``), or a checkpoint's actor."""
        if self.magnet == "uniform":
            return
        if checkpoint is not None:
            self.policy.magnet.load_checkpoint(checkpoint, where)
        else:
            self.policy.magnet.copy_from(self.policy)

    def _refresh_magnet(self) -> None:
        """The moving magnet: after the update that crosses a multiple of ``magnet_every`` steps, the policy as it
        is now."""
        if self.magnet != "latest" or not self.magnet_every:
            return
        rollout = self.n_steps * self.n_envs
        if self.num_timesteps // self.magnet_every > (self.num_timesteps - rollout) // self.magnet_every:
            self.set_magnet()

    def _magnet_logits(self, observations: th.Tensor) -> th.Tensor | None:
        if self.magnet == "uniform":
            return None
        with th.no_grad():
            features = self.policy.extract_features(observations, self.policy.pi_features_extractor)
            return self.policy.magnet(features)

    def _magnet_head(self) -> AutoregressiveBidHead | None:
        return None if self.magnet == "uniform" else self.policy.magnet.head()

    def _evaluate(
        self, observations: th.Tensor, actions: th.Tensor, masks: th.Tensor
    ) -> tuple[th.Tensor, th.Tensor, th.Tensor, th.Tensor]:
        """The values, log-probabilities of ``actions`` and entropies per row of a minibatch, and the mean of
        ``KL(pi || rho)`` over its rows: ``evaluate_actions`` and :func:`kl_to_magnet`, with the actor (and the
        magnet) run over the rows that decide something only. A row whose every head has one legal value (a seat
        that waits in pure self-play: four in ten of its rows) has log-probability 0, entropy 0 and KL 0 whatever
        the weights, so it adds nothing to the policy's terms or to their gradients; the critic is fitted on every
        row. The same loss as over every row, in about half of the actor's work in pure self-play. Where few rows
        wait (under an eighth: a forced choice now and then in a league's games) the actor runs over every row, as
        ``evaluate_actions`` does: the copies would cost about what they save, and such runs train the same
        weights as before, bit for bit. The entropy is computed without a gradient when ``ent_coef`` is 0 (it is
        only logged)."""
        heads = len(self.action_space.nvec) if isinstance(self.action_space, spaces.MultiDiscrete) else 1
        decides = masks.sum(1) > heads  # some head with two legal values or more
        all_rows = int(decides.sum()) * 8 > len(decides) * 7  # the rows that wait, if any, are under an eighth
        rows = None if all_rows else decides
        values, distribution, log_prob = evaluate_rows(self.policy, observations, actions, masks, rows)
        if rows is not None:
            observations = observations[rows]
        with th.set_grad_enabled(bool(self.ent_coef) and th.is_grad_enabled()):
            entropy = distribution.entropy()
        kl = kl_to_magnet(distribution, self._magnet_logits(observations), self._magnet_head())
        magnet_kl = kl.mean() if all_rows else kl.sum() / len(decides)
        if not all_rows:
            zeros = values.new_zeros(len(decides))
            log_prob, entropy = (zeros.masked_scatter(decides, x) for x in (log_prob, entropy))
        return values, log_prob, entropy, magnet_kl

    def train(self) -> None:
        """One PPO update with MMD's loss: sb3-contrib's ``MaskablePPO.train`` with the two KL terms added."""
        self.policy.set_training_mode(True)
        self._update_learning_rate(self.policy.optimizer)
        clip_range = self.clip_range(self._current_progress_remaining)  # type: ignore[operator]
        logs: dict[str, list[float]] = {k: [] for k in ("pg", "value", "entropy", "magnet_kl", "step_kl", "clip")}
        for _ in range(self.n_epochs):
            for batch in self.rollout_buffer.get(self.batch_size):
                actions = batch.actions
                if isinstance(self.action_space, spaces.Discrete):
                    actions = actions.long().flatten()
                values, log_prob, entropy, magnet_kl = self._evaluate(batch.observations, actions, batch.action_masks)
                advantages = batch.advantages
                if self.normalize_advantage and len(advantages) > 1:
                    advantages = (advantages - advantages.mean()) / (advantages.std() + 1e-8)
                log_ratio = log_prob - batch.old_log_prob
                ratio = th.exp(log_ratio)
                pg_loss = -th.min(advantages * ratio, advantages * th.clamp(ratio, 1 - clip_range, 1 + clip_range))
                pg_loss = pg_loss.mean()
                value_loss = F.mse_loss(batch.returns, values.flatten())
                step_kl = (ratio * log_ratio - (ratio - 1)).mean()  # KL(pi || pi_old) from pi_old's samples
                entropy_loss = -th.mean(entropy)
                loss = pg_loss + self.vf_coef * value_loss + self.magnet_coef * magnet_kl + self.kl_coef * step_kl
                if self.ent_coef:  # at 0 (MMD's usual setting) the entropy is logged only: no backward through it
                    loss = loss + self.ent_coef * entropy_loss
                self.policy.optimizer.zero_grad()
                loss.backward()
                th.nn.utils.clip_grad_norm_(self.policy.parameters(), self.max_grad_norm)
                self.policy.optimizer.step()
                for key, value in (("pg", pg_loss), ("value", value_loss), ("entropy", entropy_loss),
                                   ("magnet_kl", magnet_kl), ("step_kl", step_kl)):  # fmt: skip
                    logs[key].append(value.item())
                logs["clip"].append(th.mean((th.abs(ratio - 1) > clip_range).float()).item())
            self._n_updates += 1
        self._refresh_magnet()
        explained = explained_variance(self.rollout_buffer.values.flatten(), self.rollout_buffer.returns.flatten())
        record = self.logger.record
        record("train/policy_gradient_loss", float(np.mean(logs["pg"])))
        record("train/value_loss", float(np.mean(logs["value"])))
        record("train/entropy_loss", float(np.mean(logs["entropy"])))
        record("train/magnet_kl", float(np.mean(logs["magnet_kl"])))
        record("train/step_kl", float(np.mean(logs["step_kl"])))
        record("train/clip_fraction", float(np.mean(logs["clip"])))
        record("train/explained_variance", float(explained))
        record("train/clip_range", clip_range)
        record("train/n_updates", self._n_updates, exclude="tensorboard")
