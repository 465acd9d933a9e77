"""A faster masked MultiDiscrete distribution for MaskablePPO's ``MlpPolicy``.

sb3-contrib's ``MaskableMultiCategoricalDistribution`` builds one torch ``Categorical`` per action dimension, and
Revolution!'s action has 57 (the choice, then one per token): most of the training time went there. This
distribution is the same mathematics — independent categoricals per dimension, masked logits set to -1e8,
log-probabilities summed, masked values adding nothing to the entropy — computed on one ``(batch, dimensions,
width)`` view per run of dimensions of one width (the choice; the tokens), with one fused ``log_softmax``
each. :class:`MaskableMultiDiscretePolicy` is ``MlpPolicy`` with it.

:class:`AutoregressiveBidPolicy` (``TrainConfig.bid_head: autoregressive``) replaces the independent tokens with
:class:`AutoregressiveBidHead`: each token's target conditioned on the tokens already placed, so that the policy can
put its mass on a few whole bids (a round's bid is a Colonel Blotto allocation, whose equilibria mix over coherent
allocations, which a product of independent tokens cannot represent).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NamedTuple

import torch as th
from sb3_contrib.common.maskable.distributions import MaskableDistribution
from sb3_contrib.common.maskable.policies import MaskableActorCriticPolicy
from torch import nn

from revolution_env.interop.torch import MASKED, MaskedRuns, legal_probabilities


class _FromParams(MaskableDistribution):
    """SB3's ``*_from_params`` methods, the same for both of our distributions: set the logits, then act."""

    def actions_from_params(self, action_logits: th.Tensor, deterministic: bool = False) -> th.Tensor:
        self.proba_distribution(action_logits)
        return self.get_actions(deterministic=deterministic)

    def log_prob_from_params(self, action_logits: th.Tensor) -> tuple[th.Tensor, th.Tensor]:
        actions = self.actions_from_params(action_logits)
        return actions, self.log_prob(actions)


class GroupedMaskableMultiCategorical(_FromParams):
    """Independent masked categoricals over the dimensions of ``MultiDiscrete(nvec)``, computed per run of
    dimensions of one width (``revolution_env.interop.torch.MaskedRuns``: views of the flat logits, one fused
    masked ``log_softmax`` per run)."""

    def __init__(self, action_dims: list[int]) -> None:
        super().__init__()
        self.action_dims = [int(n) for n in action_dims]
        self.runs = MaskedRuns(self.action_dims)
        self._total = self.runs.total
        self.raw: th.Tensor | None = None
        self.legal: list[th.Tensor] | None = None
        self._log_p: list[th.Tensor] | None = None

    def proba_distribution_net(self, latent_dim: int) -> nn.Module:
        return nn.Linear(latent_dim, self._total)

    def proba_distribution(self, action_logits: th.Tensor) -> GroupedMaskableMultiCategorical:
        self.raw = action_logits.view(-1, self._total)
        self.legal, self._log_p = None, None
        return self

    def apply_masking(self, masks: Any) -> None:
        assert self.raw is not None, "Must set distribution parameters"
        if masks is None:
            self.legal = None
        else:
            m = th.as_tensor(masks, device=self.raw.device).view(-1, self._total)
            self.legal = self.runs.legal(m)
        self._log_p = None

    @property
    def log_p(self) -> list[th.Tensor]:
        """Masked log-probabilities, one (batch, dimensions, width) tensor per run; computed once per masking."""
        if self._log_p is None:
            self._log_p = self.runs.log_softmax(self.raw, self.legal)
        return self._log_p

    def log_prob(self, actions: th.Tensor) -> th.Tensor:
        return self.runs.log_prob(self.log_p, actions.view(-1, len(self.action_dims)))

    def entropy(self) -> th.Tensor:
        return self.runs.entropy(self.log_p, self.legal)

    def sample(self) -> th.Tensor:
        return self.runs.sample(self.log_p)

    def mode(self) -> th.Tensor:
        return self.runs.mode(self.log_p)


class MaskableMultiDiscretePolicy(MaskableActorCriticPolicy):
    """MaskablePPO's ``MlpPolicy`` with :class:`GroupedMaskableMultiCategorical` as its action distribution (the
    networks, their initialisation and the checkpoints are the same)."""

    def _build(self, lr_schedule: Any) -> None:
        self.action_dist = GroupedMaskableMultiCategorical(list(self.action_space.nvec))
        super()._build(lr_schedule)


# --- the autoregressive bid head ---------------------------------------------------------------------------------


class BidSteps(NamedTuple):
    """The steps of one pass of :class:`AutoregressiveBidHead` over a batch of ``B`` rows: the actions (canonical,
    ``(B, D)``), their log-probabilities and the sum of the steps' entropies ``(B,)``. A pass that followed given
    actions also keeps what a KL to another head of the same shape reads: the choice's masked log-probabilities
    and mask ``(B, C)``, and those of the tokens that some row may choose (``token_columns``, F of them) in the
    rows that choose a token (``token_rows``, R of them): ``(R, F, T)``. Every other token has one legal value."""

    actions: th.Tensor
    log_prob: th.Tensor
    entropy: th.Tensor
    choice_log_p: th.Tensor | None = None
    choice_legal: th.Tensor | None = None
    token_log_p: th.Tensor | None = None
    token_legal: th.Tensor | None = None
    token_rows: th.Tensor | None = None
    token_columns: th.Tensor | None = None


class AutoregressiveBidHead(nn.Module):
    """The bid mode's action as a sequence: the choice (dimension 0), then the tokens one after the other, each
    token's target conditioned on the tokens already placed. ``forward`` is the linear layer on the actor's latent
    (what SB3 calls the action logits): the factorised head's ``sum(nvec)`` logits, then a context of ``size``
    values. Token ``k`` of type ``t`` then takes::

        hidden_k = tanh(context + sum of embed[t', target'] over the tokens placed before k + position[k])
        logits_k = logits[k] + hidden_k @ out[t]

    With ``out`` zero it is the factorised head. The masks: the env's, and within a run of tokens of one type
    with the same mask (the tokens a seat holds), no target before the previous token's: every bid has exactly
    one sequence (the canonical order, as in the token mode), so a bid's probability is its sequence's and the
    head mixes over bids, not over orderings of one bid. Every prefix completes to a legal bid (the later tokens
    may repeat the last target), so each step's mask is exact given the steps before. A bid's log-probability is
    the sum of its steps'. ``revolution_env.agents.checkpoint.AutoregressiveChooser`` is the same head in numpy
    (what a checkpoint plays); ``blocks``: the number of token dimensions of each type, in order."""

    def __init__(self, latent_dim: int, nvec: Sequence[int], blocks: Sequence[int], size: int = 64) -> None:
        super().__init__()
        nvec = [int(n) for n in nvec]
        self.C, self.T, self.K = nvec[0], nvec[1], len(nvec) - 1
        self.blocks = [int(b) for b in blocks]
        if sum(self.blocks) != self.K or any(n != self.T for n in nvec[1:]):
            raise ValueError(f"bid_head: blocks {self.blocks} do not fit nvec [C] + [T] * {self.K}")
        self.total, self.size = sum(nvec), int(size)
        types = len(self.blocks)
        self.linear = nn.Linear(latent_dim, self.total + self.size)
        # a unit-scale start for the token and position embeddings (the hidden layer's inputs) and a small one for
        # ``out``, as SB3 starts its action layer: the head starts near the factorised head
        self.embed = nn.Parameter(th.randn(types * self.T, self.size) * EMBED_SCALE)
        self.position = nn.Parameter(th.randn(self.K, self.size) * EMBED_SCALE)
        self.out = nn.Parameter(th.randn(types, self.size, self.T) * OUT_SCALE)
        type_of = th.repeat_interleave(th.arange(types), th.tensor(self.blocks))
        self.register_buffer("type_of", type_of, persistent=False)
        self.register_buffer("continues", th.cat([th.zeros(1, dtype=th.bool), type_of[1:] == type_of[:-1]]),
                             persistent=False)  # fmt: skip

    def forward(self, latent: th.Tensor) -> th.Tensor:
        return self.linear(latent)

    def _structure(self, legal: th.Tensor) -> tuple[th.Tensor, th.Tensor, th.Tensor]:
        """From the flat masks (B, sum(nvec)) bool: the tokens' masks (B, K, T), which tokens are held (their mask
        allows a target other than 0) and which continue the run of the token before (same type, same mask)."""
        tokens = legal[:, self.C : self.total].view(-1, self.K, self.T)
        placed = tokens[..., 1:].any(-1)
        same = th.zeros_like(placed)
        same[:, 1:] = self.continues[1:] & (tokens[:, 1:] == tokens[:, :-1]).all(-1)
        return tokens, placed, same

    def canonical(self, tokens: th.Tensor, same: th.Tensor) -> th.Tensor:
        """The tokens' targets (B, K) sorted within each run of ``same``: the same bid, in the canonical order."""
        run = (~same).long().cumsum(1)
        return th.sort(run * (self.T + 1) + tokens, dim=1).values % (self.T + 1)

    def _choice(self, raw: th.Tensor, legal: th.Tensor) -> tuple[th.Tensor, th.Tensor]:
        """The choice's mask (B, C) and masked log-probabilities."""
        choice_legal = legal[:, : self.C]
        return choice_legal, th.log_softmax(raw[:, : self.C] + (~choice_legal) * MASKED, -1)

    def follow(self, raw: th.Tensor, legal: th.Tensor, actions: th.Tensor) -> BidSteps:
        """Every step's masked log-probabilities along ``actions`` (B, D) (put in the canonical order first), all
        steps at once: the prefix of each token is a cumulative sum of the embeddings of the tokens before it. The
        network runs over the tokens that some row may choose, in the rows that choose one: a token with one legal
        value adds 0 to the log-probability (``actions`` are taken to be legal), to the entropy and to a KL."""
        C, T = self.C, self.T
        context = raw[:, self.total :]
        choice_legal, choice_log_p = self._choice(raw, legal)
        tokens, placed, same = self._structure(legal)
        chosen = self.canonical(actions[:, 1:].long(), same)
        free = tokens.sum(-1) > 1
        rows, columns = free.any(1).nonzero().squeeze(1), free.any(0).nonzero().squeeze(1)
        held = placed.any(0).nonzero().squeeze(1)  # every column that some row may choose among them
        tokens, placed, same, chosen_r = tokens[rows], placed[rows], same[rows], chosen[rows]
        embedded = self.embed[self.type_of[held] * T + chosen_r[:, held]] * placed[:, held, None]
        at = th.searchsorted(held, columns)
        prefix = embedded.cumsum(1)[:, at] - embedded[:, at]  # (R, F, G): the tokens placed before each
        before = chosen_r[:, (columns - 1).clamp(min=0)]
        floor = th.where(same[:, columns], before, th.zeros_like(before))
        allowed = tokens[:, columns] & (th.arange(T, device=raw.device) >= floor[..., None])
        hidden = th.tanh(context[rows, None] + prefix + self.position[columns])
        extra = th.bmm(hidden.transpose(0, 1), self.out[self.type_of[columns]]).transpose(0, 1)  # (R, F, T)
        logits = raw[rows, C : self.total].view(len(rows), self.K, T)[:, columns]
        token_log_p = th.log_softmax(logits + extra + (~allowed) * MASKED, -1)
        picked = token_log_p.gather(2, chosen_r[:, columns, None]).squeeze(2).sum(1)
        log_prob = choice_log_p.gather(1, actions[:, :1].long()).squeeze(1).index_add(0, rows, picked)
        entropy = _entropy(choice_log_p, choice_legal).index_add(0, rows, _entropy(token_log_p, allowed).sum(1))
        actions = th.cat([actions[:, :1].long(), chosen], 1)
        return BidSteps(actions, log_prob, entropy, choice_log_p, choice_legal, token_log_p, allowed, rows, columns)

    def decode(self, raw: th.Tensor, legal: th.Tensor, greedy: bool) -> BidSteps:
        """A bid step by step: each step's most likely legal value (``greedy``) or one sampled (Gumbel-max), in the
        rows that choose a token; the tokens that no row may choose are taken without the network."""
        C, T = self.C, self.T
        choice_legal, choice_log_p = self._choice(raw, legal)
        first = _choose(choice_log_p, greedy)
        log_prob = choice_log_p.gather(1, first[:, None]).squeeze(1)
        entropy = _entropy(choice_log_p, choice_legal)
        tokens, placed, same = self._structure(legal)
        chosen = tokens.float().argmax(-1)  # the one legal value, where there is one
        free = tokens.sum(-1) > 1
        rows = free.any(1).nonzero().squeeze(1)
        if len(rows):
            tokens, placed, same, free = tokens[rows], placed[rows], same[rows], free[rows]
            context, logits = raw[rows, self.total :], raw[rows, C : self.total].view(len(rows), self.K, T)
            prefix = th.zeros_like(context)
            before = chosen.new_zeros(len(rows))
            targets = th.arange(T, device=raw.device)
            sums, entropies, out = th.zeros_like(prefix[:, 0]), th.zeros_like(prefix[:, 0]), []
            for k, some in enumerate(free.any(0).tolist()):
                allowed = tokens[:, k] & (targets >= th.where(same[:, k], before, th.zeros_like(before))[:, None])
                if some:
                    hidden = th.tanh(context + prefix + self.position[k])
                    log_p = th.log_softmax(logits[:, k] + hidden @ self.out[self.type_of[k]] + (~allowed) * MASKED, -1)
                    a = _choose(log_p, greedy)
                    sums = sums + log_p.gather(1, a[:, None]).squeeze(1)
                    entropies = entropies + _entropy(log_p, allowed)
                else:
                    a = allowed.float().argmax(1)
                prefix = prefix + self.embed[self.type_of[k] * T + a] * placed[:, k, None]
                out.append(a)
                before = a
            chosen[rows] = th.stack(out, 1)
            log_prob, entropy = log_prob.index_add(0, rows, sums), entropy.index_add(0, rows, entropies)
        return BidSteps(th.cat([first[:, None], chosen], 1), log_prob, entropy)


EMBED_SCALE, OUT_SCALE = 0.3, 0.01


def _entropy(log_p: th.Tensor, legal: th.Tensor) -> th.Tensor:
    """The entropy over the last axis, a masked value (probability 0) adding nothing."""
    m = legal.to(log_p.dtype)
    return -(legal_probabilities(log_p, m) * log_p).sum(-1)


def runs_kl(log_p: list[th.Tensor], log_q: list[th.Tensor], legal: list[th.Tensor]) -> th.Tensor:
    """``KL(p || q)`` per row, summed over the dimensions: ``log_p``, ``log_q`` and ``legal`` per run of
    :class:`~revolution_env.interop.torch.MaskedRuns` (``(..., width, dimensions)``), a masked value adding
    nothing."""
    total = 0
    for lp, lq, m in zip(log_p, log_q, legal):
        total = total + (legal_probabilities(lp, m) * (lp - lq)).sum((-2, -1))
    return total


def steps_kl(steps: BidSteps, choice_q: th.Tensor, token_q: th.Tensor) -> th.Tensor:
    """``KL(pi || rho)`` per row along the actions that ``steps`` (a :meth:`AutoregressiveBidHead.follow`) followed:
    the sum of each step's exact KL over the values its mask allows, ``choice_q`` (B, C) and ``token_q`` (R, F, T)
    being ``rho``'s log-probabilities at the same steps."""
    choice_m, token_m = steps.choice_legal.float(), steps.token_legal.float()
    kl = (legal_probabilities(steps.choice_log_p, choice_m) * (steps.choice_log_p - choice_q)).sum(-1)
    tokens = (legal_probabilities(steps.token_log_p, token_m) * (steps.token_log_p - token_q)).sum((-2, -1))
    return kl.index_add(0, steps.token_rows, tokens)


def logits_kl(logits: th.Tensor, magnet_logits: th.Tensor, masks: th.Tensor, actions: th.Tensor, runs: MaskedRuns,
              head: AutoregressiveBidHead | None = None, magnet_head: AutoregressiveBidHead | None = None
              ) -> th.Tensor:  # fmt: skip
    """``KL(pi || rho)`` per row from the two actors' outputs on the same rows (``masks``: the flat boolean masks;
    ``runs``: the action's :class:`MaskedRuns`): exact per dimension for independent dimensions; for the
    autoregressive head (``head``, ``magnet_head``) the sum of each step's exact KL along ``actions``."""
    if head is not None:
        steps = head.follow(logits, masks, actions)
        theirs = magnet_head.follow(magnet_logits, masks, steps.actions)
        return steps_kl(steps, theirs.choice_log_p, theirs.token_log_p)
    legal = runs.legal(masks)
    return runs_kl(runs.log_softmax(logits, legal), runs.log_softmax(magnet_logits, legal), legal)


def _choose(log_p: th.Tensor, greedy: bool) -> th.Tensor:
    if greedy:
        return log_p.argmax(-1)
    u = th.rand_like(log_p).clamp_(min=th.finfo(log_p.dtype).tiny)
    return (log_p - th.log(-th.log(u))).argmax(-1)


class AutoregressiveBidDistribution(_FromParams):
    """MaskablePPO's distribution for :class:`AutoregressiveBidHead`. ``log_prob`` follows the given actions (all
    steps at once); ``sample`` and ``mode`` run the steps one by one. ``entropy`` is the sum over the steps of
    each step's exact entropy given the steps before, along the actions last evaluated (PPO's: the rollout's) or
    last drawn: by the chain rule its expectation over bids drawn from the policy is the entropy of the whole
    bid, with far less variance than ``-log p(bid)``, and it is the estimator of autoregressive policies in
    general (its gradient holds the earlier steps fixed). MMD's KL to a magnet is taken the same way
    (``revolution_training.mmd.kl_to_magnet``)."""

    def __init__(self, action_dims: Sequence[int], blocks: Sequence[int], size: int = 64) -> None:
        super().__init__()
        self.action_dims = [int(n) for n in action_dims]
        self.blocks = [int(b) for b in blocks]
        self.size = int(size)
        self._total = sum(self.action_dims)
        self.head: AutoregressiveBidHead | None = None
        self.raw: th.Tensor | None = None
        self.legal: th.Tensor | None = None
        self.steps: BidSteps | None = None

    def proba_distribution_net(self, latent_dim: int) -> nn.Module:
        self.head = AutoregressiveBidHead(latent_dim, self.action_dims, self.blocks, self.size)
        return self.head

    def proba_distribution(self, action_logits: th.Tensor) -> AutoregressiveBidDistribution:
        self.raw = action_logits.view(-1, self._total + self.size)
        self.legal, self.steps = None, None
        return self

    def apply_masking(self, masks: Any) -> None:
        assert self.raw is not None, "Must set distribution parameters"
        self.legal = None if masks is None else th.as_tensor(masks, device=self.raw.device).view(-1, self._total)
        self.steps = None

    def _legal(self) -> th.Tensor:
        if self.legal is None:
            return th.ones(len(self.raw), self._total, dtype=th.bool, device=self.raw.device)
        return self.legal.bool()

    def log_prob(self, actions: th.Tensor) -> th.Tensor:
        if self.steps is not None and actions is self.steps.actions:  # the rollout: the bid just drawn
            return self.steps.log_prob
        self.steps = self.head.follow(self.raw, self._legal(), actions.view(-1, len(self.action_dims)))
        return self.steps.log_prob

    def followed(self) -> BidSteps:
        """The steps along the actions last evaluated or drawn, with every step's log-probabilities."""
        if self.steps is None:
            self.sample()
        if self.steps.token_log_p is None:
            self.steps = self.head.follow(self.raw, self._legal(), self.steps.actions)
        return self.steps

    def entropy(self) -> th.Tensor:
        if self.steps is None:
            self.sample()
        return self.steps.entropy

    def sample(self) -> th.Tensor:
        self.steps = self.head.decode(self.raw, self._legal(), greedy=False)
        return self.steps.actions

    def mode(self) -> th.Tensor:
        self.steps = self.head.decode(self.raw, self._legal(), greedy=True)
        return self.steps.actions


class AutoregressiveBidPolicy(MaskableActorCriticPolicy):
    """MaskablePPO's ``MlpPolicy`` with :class:`AutoregressiveBidDistribution` (``TrainConfig.bid_head:
    autoregressive``): the same actor and critic networks, the action layer replaced by the head.
    ``token_blocks``: the number of token dimensions of each type (the env's ``Codec.n_tokens``)."""

    def __init__(self, *args: Any, token_blocks: Sequence[int] = (), head_size: int = 64, **kwargs: Any) -> None:
        self.token_blocks = [int(b) for b in token_blocks]
        self.head_size = int(head_size)
        super().__init__(*args, **kwargs)

    def _build(self, lr_schedule: Any) -> None:
        self.action_dist = AutoregressiveBidDistribution(
            list(self.action_space.nvec), self.token_blocks, self.head_size
        )
        super()._build(lr_schedule)

    def _get_constructor_parameters(self) -> dict[str, Any]:
        return {**super()._get_constructor_parameters(), "token_blocks": self.token_blocks,
                "head_size": self.head_size}  # fmt: skip
