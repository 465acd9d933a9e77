"""Policy checkpoints for inference: read one, check it fits the environment, play it as an agent.

A checkpoint is a ``torch.save`` of a dict of plain types and tensors (so ``torch.load(weights_only=True)`` reads
it, and loading one runs no code), with this metadata beside the weights:

| key              | meaning                                                                                   |
|------------------|-------------------------------------------------------------------------------------------|
| `format`         | `"revolution-policy"`                                                                     |
| `format_version` | `1`                                                                                       |
| `env`            | the environment id it was trained on (`"revolution_v2"`; see ``VERSION_CHANGES``)          |
| `env_options`    | the rule options (normalised, defaults filled in) and the reward the policy was trained with |
| `layout_hash`    | sha256 of the observation layout's feature table and the action ``nvec``                  |
| `policy`         | `hidden` sizes, `activation`, `obs_size`, `nvec`, and the actor's `state_dict`; `action_mode`  |
|                  | `"tokens"` for a policy trained in the token mode (absent: the bid mode); `bid_head` for an |
|                  | autoregressive bid head (absent: the factorised head); `critic`: the value network        |
|                  | (`hidden`, `activation`, `state_dict`; absent from checkpoints written before it was kept)  |
| `config`         | the training config                                                                       |
| `step`           | learner steps trained                                                                     |
| `wall_time`      | seconds of training behind it; `saved_at`: when it was written (UTC, ISO 8601)            |
| `origin`         | only for a run started from trained weights: that source's path, `step`, `wall_time` and   |
|                  | its own `origin` (so the whole training history adds up)                                  |

A checkpoint may also hold ``critic_fit``: how its critic was fitted from games apart from training (``revolution
fit-critic``: the games, the target, the held-out figures); such a critic is the undiscounted final reward (the
target) the seat can expect in those games. A *critic file* (``format`` ``"revolution-critic"``, the same
``format_version``, ``env``, ``env_options`` and ``layout_hash``; its ``env_options["reward"]`` the target) holds a
value network alone (``critic``, as above, and ``critic_fit``), for agents without a network of their own (the
heuristics); :func:`load_critic` reads one, or a policy checkpoint's critic, as a :class:`Critic`.

The policy is the actor of an MLP policy: hidden layers with ``tanh`` (or ``relu``), then one logit per value of
every action dimension (``sum(nvec)`` logits). Its input is the observation vector divided by the layout's
``scale``. Acting masks the logits with the action mask, then takes each dimension's most likely legal value
(``deterministic=True``, the default) or samples one. With an autoregressive bid head (``bid_head``,
:class:`AutoregressiveChooser`) the last layer also gives the head's context, and each token's target is chosen
given the tokens already placed. The critic (``critic``) is an MLP of the same input to one number, the value the
policy's training reward expects from the observing seat (``PolicyAgent.value``). A token-mode policy
(``nvec = [n]``, the token mode's ``Discrete(n)``; its observation ends with the bid under construction) plays a
bid token by token, one forward pass per token, and hands it over as the bid mode's action: it plays in any game,
as every agent does. The forward pass runs in numpy. torch is needed only to read the file
(``pip install -e '.[torch]'``); writing checkpoints belongs to the training package.
"""

from __future__ import annotations

import hashlib
import json
import os
import warnings
import zipfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from revolution_env.agents.base import Agent
from revolution_env.engine.game import Decision, Rules
from revolution_env.env.core import ENV_NAME, ENV_OPTIONS, EnvConfig
from revolution_env.env.modes import ACTION_MODES
from revolution_env.env.observation import ObservationLayout
from revolution_env.env.spaces import equal_width_runs
from revolution_env.env.tokens import TokenCodec

FORMAT = "revolution-policy"
FORMAT_VERSION = 1
REQUIRED = ("format", "format_version", "env", "env_options", "layout_hash", "policy", "step")
CRITIC_FORMAT = "revolution-critic"  # a value network alone (load_critic)
CRITIC_REQUIRED = ("format", "format_version", "env", "env_options", "layout_hash", "critic")
# What changed for a policy between environment versions (said once when an older checkpoint is loaded).
VERSION_CHANGES = {
    "revolution_v1": "v2 changed the rules of Guy's beat in the two-player variant (D11 revised: the answered bid plus"
    " one token of Guy's lowest-value type available, not one more Gold); observations and actions are laid out as"
    " before, so the policy loads, but two-player play may differ from what it was trained on",
}
ACTIVATIONS = {"tanh": np.tanh, "relu": lambda x: np.maximum(x, 0.0)}
_warned: set[str] = set()


# --- the environment a policy belongs to -------------------------------------------------------------------------


def rule_options(env_options: Mapping[str, Any]) -> dict[str, Any]:
    """The rule options with every default filled in (what decides the game a policy plays)."""
    options = {k: v for k, v in env_options.items() if k not in ENV_OPTIONS}
    return Rules(**EnvConfig.from_options(options).rules.to_dict()).to_dict()


def layout_hash(env_options: Mapping[str, Any]) -> str:
    """sha256 of the observation layout's feature table (name, start, shape, scale) and the action ``nvec`` (with
    ``action_mode="tokens"`` among the options: the token mode's layout and ``n``)."""
    from revolution_env.env import observation_layout

    layout: ObservationLayout = observation_layout(**{k: v for k, v in env_options.items() if k != "render_mode"})
    table: dict[str, Any] = {
        "features": [[f.name, f.start, list(f.shape), float(f.scale)] for f in layout.features.values()],
        "nvec": [int(n) for n in layout.codec.nvec],
    }
    if env_options.get("action_mode", "bid") == "tokens":  # (bid-mode hashes stay what they were)
        table["tokens"] = TokenCodec(layout.codec).n
    return hashlib.sha256(json.dumps(table, sort_keys=True).encode("utf-8")).hexdigest()


def env_metadata(env_options: Mapping[str, Any]) -> dict[str, Any]:
    """The checkpoint keys that say which environment a policy belongs to (``action_mode`` only counts for the
    layout hash: the policy entry says its mode)."""
    reward = env_options.get("reward", "win_loss")
    return {
        "env": ENV_NAME,
        "env_options": {**rule_options(env_options), "reward": reward},
        "layout_hash": layout_hash(env_options),
    }


def history(checkpoint: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The stages of training behind a checkpoint, first first: ``{"path", "step", "wall_time"}`` for each run it
    was started from (``origin``), then ``{"path": None, ...}`` for the checkpoint's own run."""
    stages = [{"path": None, "step": int(checkpoint["step"]), "wall_time": float(checkpoint.get("wall_time", 0.0))}]
    origin = checkpoint.get("origin")
    while origin:
        stages.append({"path": origin["path"], "step": int(origin["step"]), "wall_time": float(origin["wall_time"])})
        origin = origin.get("origin")
    return stages[::-1]


# --- reading -----------------------------------------------------------------------------------------------------


def _torch() -> Any:
    try:
        import torch
    except ImportError:
        raise ValueError("reading a policy checkpoint needs torch: pip install -e '.[torch]'") from None
    return torch


def _unreadable(path: str, exc: Exception) -> str:
    """Why torch could not load ``path``, in the user's terms. torch's own text for a file that is not one of its
    archives (a README, a half-written file) is about unpickling and ``weights_only``, which says nothing useful
    here: a checkpoint is a zip archive that ``torch.save`` wrote, holding only tensors and plain types."""
    if not zipfile.is_zipfile(path):
        return "not a file that torch.save writes (a checkpoint is a run's latest.pt or best.pt, or a shipped bot)"
    if "policy.pth" in zipfile.ZipFile(path).namelist():
        return "it is a stable-baselines3 model (what --resume reads); use the run's latest.pt or best.pt"
    if "weights_only" in str(exc):
        return "it holds Python objects beyond tensors and plain types, which a checkpoint never does (not loaded)"
    first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    return f"torch cannot read it ({first})"


def _load(path: str, not_ours: str) -> Any:
    """What ``torch.save`` wrote at ``path`` (tensors and plain types only), or ``ValueError`` saying why not."""
    if os.path.isdir(path):
        raise ValueError(f"{path} is a folder, not a checkpoint file (a run folder holds latest.pt and best.pt)")
    if not os.path.isfile(path):
        raise ValueError(f"{path}: no such checkpoint file")
    torch = _torch()
    try:
        return torch.load(path, map_location="cpu", weights_only=True)
    except Exception as exc:  # torch raises many kinds for a file that is not one of its own
        raise ValueError(f"{not_ours}: {_unreadable(path, exc)}") from None


def read_checkpoint(path: str | Path) -> dict[str, Any]:
    """The checkpoint dict at ``path``; anything else raises ``ValueError`` saying why."""
    path = str(path)
    not_ours = f"{path} is not a Revolution! policy checkpoint"
    return _checked(_load(path, not_ours), path, not_ours, FORMAT, REQUIRED)


def _checked(data: Any, path: str, not_ours: str, fmt: str, required: Sequence[str]) -> dict[str, Any]:
    """``data`` if it is a dict of format ``fmt`` with the ``required`` keys and our format version, else
    ``ValueError`` saying what is wrong."""
    if not isinstance(data, dict) or data.get("format") != fmt:
        raise ValueError(f"{not_ours}: no {fmt!r} format tag")
    missing = [k for k in required if k not in data]
    if missing:
        raise ValueError(f"{not_ours}: missing {', '.join(missing)}")
    if data["format_version"] != FORMAT_VERSION:
        kind = "checkpoint" if fmt == FORMAT else "critic"
        raise ValueError(
            f"{path}: {kind} format version {data['format_version']!r}, this code reads version {FORMAT_VERSION}"
        )
    return data


def check_compatible(checkpoint: Mapping[str, Any], env_options: Mapping[str, Any], path: str = "checkpoint") -> None:
    """Raise ``ValueError`` naming what differs between the checkpoint's environment and ``env_options``.

    The rule options must match (the players, every optional rule, the board, ``max_rounds``); the reward may
    differ (it changes what is learned, not what the policy reads). A checkpoint of an older environment version
    loads with one warning saying what changed. The layout hash is checked last, to catch an observation layout
    that changed under the same options (a code change without an environment version bump).
    """
    trained_on = checkpoint["env"]
    if trained_on != ENV_NAME:
        if trained_on not in VERSION_CHANGES:
            raise ValueError(f"{path}: trained on {trained_on!r}, which this code does not know (it is {ENV_NAME!r})")
        if path not in _warned:
            _warned.add(path)
            warnings.warn(f"{path}: trained on {trained_on}, this is {ENV_NAME}: {VERSION_CHANGES[trained_on]}",
                          stacklevel=2)  # fmt: skip
    ours = rule_options(env_options)
    theirs = {k: v for k, v in checkpoint["env_options"].items() if k != "reward"}
    diffs = [
        f"{k}: checkpoint {theirs.get(k)!r}, environment {ours.get(k)!r}" for k in ours if theirs.get(k) != ours[k]
    ]
    if diffs:
        raise ValueError(f"{path}: trained for another environment ({'; '.join(diffs)})")
    ours_hash = layout_hash({**env_options, "action_mode": action_mode(checkpoint)})
    if checkpoint["layout_hash"] != ours_hash:
        raise ValueError(
            f"{path}: layout_hash differs: the observation layout or the action space changed since it was trained "
            f"(checkpoint {checkpoint['layout_hash'][:12]}, environment {ours_hash[:12]})"
        )


def action_mode(checkpoint: Mapping[str, Any]) -> str:
    """The action mode a policy was trained in: ``"tokens"`` or ``"bid"``."""
    policy = checkpoint.get("policy")
    mode = policy.get("action_mode", "bid") if isinstance(policy, Mapping) else "bid"
    if mode not in ACTION_MODES:
        raise ValueError(f"the policy's action_mode is {mode!r}, expected one of {', '.join(ACTION_MODES)}")
    return mode


# --- playing -----------------------------------------------------------------------------------------------------


class Mlp:
    """Dense layers ``layers.<i>`` of a ``state_dict`` as numpy arrays, the activation between them; ``__call__``
    for one or a batch of inputs. In float64: one observation and a batch go through different BLAS kernels, whose
    float32 roundings could tip an argmax between near-equal logits; in float64 a game plays the same alone or in
    a batch (``evaluation.batched``)."""

    def __init__(self, net: Mapping[str, Any]) -> None:
        state = net["state_dict"]
        n_layers = len(net["hidden"]) + 1
        self.weights = [_numpy(state[f"layers.{i}.weight"]).T.astype(np.float64) for i in range(n_layers)]
        self.biases = [_numpy(state[f"layers.{i}.bias"]).astype(np.float64) for i in range(n_layers)]
        self.activation = ACTIVATIONS[net["activation"]]

    def __call__(self, x: np.ndarray, columns: int | None = None) -> np.ndarray:
        """The outputs, or their first ``columns`` (the last layer computed for those only)."""
        h = np.asarray(x, dtype=np.float64)
        for w, b in zip(self.weights[:-1], self.biases[:-1]):
            h = self.activation(h @ w + b)
        if columns is None or columns >= len(self.biases[-1]):
            return h @ self.weights[-1] + self.biases[-1]
        return h @ self.weights[-1][:, :columns] + self.biases[-1][:columns]


class PolicyNet(Mlp):
    """The actor's weights; ``logits(x)`` for one or a batch of scaled observations: ``sum(nvec)`` logits, then,
    with an autoregressive bid head, its context (``bid_head``'s ``size`` values)."""

    def __init__(self, policy: Mapping[str, Any]) -> None:
        super().__init__(policy)
        self.obs_size = int(policy["obs_size"])
        self.nvec = np.asarray(policy["nvec"], dtype=np.int64)
        head = policy.get("bid_head")
        context = int(_numpy(head["embed"]).shape[1]) if head else 0
        if self.weights[0].shape[0] != self.obs_size or self.weights[-1].shape[1] != int(self.nvec.sum()) + context:
            raise ValueError("the policy's weights do not fit its obs_size and nvec")

    def logits(self, x: np.ndarray, columns: int | None = None) -> np.ndarray:
        """The logits (and the bid head's context), or their first ``columns``."""
        return self(x, columns)


def _numpy(t: Any) -> np.ndarray:
    if hasattr(t, "detach"):  # a torch tensor
        return t.detach().cpu().numpy().astype(np.float32)
    return np.asarray(t, np.float32)


class MaskedChooser:
    """Per-dimension masked argmax or sampling over flat logits, for any ``nvec``: one ``(n, dimensions, width)``
    view per run of dimensions of one width (``equal_width_runs``; the choice, then the tokens), no padding."""

    def __init__(self, nvec: np.ndarray) -> None:
        self.runs = equal_width_runs(nvec)
        self.dims = len(nvec)

    def choose(self, logits: np.ndarray, mask: np.ndarray, rng: np.random.Generator | None) -> np.ndarray:
        """One value per dimension: the most likely legal one (``rng`` None) or one sampled from the masked
        softmax (Gumbel-max)."""
        return self.choose_batch(np.asarray(logits)[None], np.asarray(mask)[None], rng)[0]

    def choose_batch(self, logits: np.ndarray, masks: np.ndarray, rng: np.random.Generator | None) -> np.ndarray:
        """:meth:`choose` for a batch: logits and masks (n, sum(nvec)) -> actions (n, D). The logits may stop at
        :meth:`needed`'s width: past it every dimension of every row allows 0 only (outside bidding: the tokens),
        which is the action whatever its logits. Such a run's draws are skipped on ``rng``, one 64-bit draw each as
        its Gumbel noise takes, so that the stream goes on as if they were drawn (:func:`gumbel`: the same actions
        after it)."""
        return self.choose_groups(logits, masks, None if rng is None else [rng], [len(masks)])

    def choose_groups(self, logits: np.ndarray, masks: np.ndarray, rngs: Sequence[np.random.Generator] | None,
                      sizes: Sequence[int]) -> np.ndarray:  # fmt: skip
        """:meth:`choose_batch` for consecutive groups of rows (``sizes``), each sampled with its own generator
        (``rngs``, or None for the argmax): the actions of ``choose_batch`` on each group with its generator, in one
        pass over all of them."""
        n = len(masks)
        masks = np.asarray(masks)
        action = np.zeros((n, self.dims), dtype=np.int64)
        for start, d, k, w in self.runs:
            legal = masks[:, start : start + k * w].reshape(n, k, w) != 0
            zero = _zero_only(legal)
            if start >= logits.shape[1] or zero:
                if not zero:
                    raise ValueError(f"choose_batch: logits for {logits.shape[1]} values, but the masks leave a "
                                     f"choice in dimensions {d} to {d + k - 1}")  # fmt: skip
                for rng, size in zip(rngs or (), sizes):
                    rng.bit_generator.random_raw(size * k * w, output=False)
                continue  # the action's 0s
            scores = np.where(legal, logits[:, start : start + k * w].reshape(n, k, w), -np.inf)
            if rngs is not None:
                scores = scores + gumbel(rngs, sizes, legal)
            chosen = np.argmax(scores, axis=2)
            chosen[~legal.any(axis=2)] = 0  # cannot happen with the env's masks; keep the action well formed anyway
            action[:, d : d + k] = chosen
        return action

    def needed(self, masks: np.ndarray) -> int:
        """How many logits :meth:`choose_batch` reads for ``masks`` (n, sum(nvec)): up to the trailing runs in which
        every dimension of every row allows 0 only."""
        masks = np.asarray(masks)
        width = masks.shape[1]
        for start, _, k, w in reversed(self.runs):
            if not _zero_only(masks[:, start : start + k * w].reshape(len(masks), k, w) != 0):
                break
            width = start
        return width


def gumbel(rngs: Sequence[np.random.Generator], sizes: Sequence[int], legal: np.ndarray) -> np.ndarray:
    """Gumbel noise for the values that ``legal`` (n, ...) allows, 0 for the others, each group of rows (``sizes``)
    drawn from its generator (``rngs``): the same numbers, and the same draws from each generator, as its
    ``rng.gumbel(size=group.shape)`` gives for them. A uniform is taken for every value, as numpy's Gumbel takes
    one; its two logarithms are computed for the legal values only, where they matter (most of a bid's values are
    illegal). Where a group draws a uniform of exactly 0, which numpy's Gumbel draws again (one in 2**53), that
    group draws numpy's Gumbel itself from where it started."""
    u = np.empty(legal.shape)
    exact = []
    lo = 0
    for rng, size in zip(rngs, sizes):
        state = rng.bit_generator.state
        rng.random(out=u[lo : lo + size])
        if not u[lo : lo + size].all():
            rng.bit_generator.state = state
            exact.append((lo, size, rng.gumbel(size=u[lo : lo + size].shape)))
            u[lo : lo + size] = 0.5  # any uniform inside (0, 1): the group's noise is numpy's, written below
        lo += size
    noise = np.zeros(legal.shape)
    noise[legal] = -np.log(-np.log(1.0 - u[legal]))
    for lo, size, drawn in exact:
        noise[lo : lo + size] = np.where(legal[lo : lo + size], drawn, 0.0)
    return noise


def _zero_only(legal: np.ndarray) -> bool:
    """Whether every dimension of every row of ``legal`` (n, k, w) allows 0 and nothing else (the tokens outside
    bidding)."""
    if len(legal) > 1 and not _zero_only(legal[:1]):  # a bid's row comes first in most batches that bid
        return False
    return not legal[..., 1:].any() and bool(legal[..., 0].all())


class AutoregressiveChooser:
    """The autoregressive bid head's choices (``policy["bid_head"]``, the training side's
    ``revolution_training.distributions.AutoregressiveBidHead``): the choice (dimension 0) as the factorised head
    chooses it, then the tokens one after the other, each token's target from its own logits plus a term of the
    tokens already placed::

        hidden_k = tanh(context + sum of embed[type, target] over the tokens placed before k + position[k])
        logits_k = logits[k] + hidden_k @ out[type of k]

    ``context`` is the last ``size`` values of the policy's output. The mask of each token is the env's, and, where
    it continues a run of tokens of one type with the same mask, no target before the previous token's (the
    canonical order, as in the token mode: one sequence per bid, so that a bid's probability is its sequence's).
    A token that a row does not hold (its mask allows 0 only, as outside bidding) adds nothing to the sum."""

    def __init__(self, head: Mapping[str, Any], nvec: np.ndarray) -> None:
        nvec = np.asarray(nvec, dtype=np.int64)
        self.C, self.T, self.K = int(nvec[0]), int(nvec[1]), len(nvec) - 1
        self.total = int(nvec.sum())
        self.blocks = [int(b) for b in head["blocks"]]
        self.embed = _numpy(head["embed"]).astype(np.float64)
        self.position = _numpy(head["position"]).astype(np.float64)
        self.out = _numpy(head["out"]).astype(np.float64)
        types, size = len(self.blocks), self.embed.shape[1]
        fits = (
            head.get("kind") == "autoregressive"
            and sum(self.blocks) == self.K
            and (nvec[1:] == self.T).all()
            and self.embed.shape == (types * self.T, size)
            and self.position.shape == (self.K, size)
            and self.out.shape == (types, size, self.T)
        )
        if not fits:
            raise ValueError("the policy's bid_head does not fit its nvec")
        self.type_of = np.repeat(np.arange(types), self.blocks)
        self.continues = np.r_[False, self.type_of[1:] == self.type_of[:-1]]

    def choose(self, logits: np.ndarray, mask: np.ndarray, rng: np.random.Generator | None) -> np.ndarray:
        return self.choose_batch(np.asarray(logits)[None], np.asarray(mask)[None], rng)[0]

    def choose_batch(self, logits: np.ndarray, masks: np.ndarray, rng: np.random.Generator | None) -> np.ndarray:
        """Actions (n, D): each step's most likely legal value given the steps before (``rng`` None), or a bid
        sampled step by step (Gumbel-max)."""
        return self.run(logits, masks, rng=rng)[0]

    def choose_groups(self, logits: np.ndarray, masks: np.ndarray, rngs: Sequence[np.random.Generator] | None,
                      sizes: Sequence[int]) -> np.ndarray:  # fmt: skip
        """:meth:`choose_batch` on each group of rows (``sizes``) with its generator (``rngs``, or None), in turn."""
        ends = np.cumsum(sizes)
        rngs = [None] * len(sizes) if rngs is None else rngs
        parts = [self.choose_batch(logits[hi - n : hi], masks[hi - n : hi], rng)
                 for n, hi, rng in zip(sizes, ends, rngs)]  # fmt: skip
        return np.concatenate(parts) if parts else np.zeros((0, self.K + 1), dtype=np.int64)

    def needed(self, masks: np.ndarray) -> None:
        """Every logit and the context (the steps' terms read the context whatever the masks)."""
        return None

    def log_prob_batch(self, logits: np.ndarray, masks: np.ndarray, actions: np.ndarray) -> np.ndarray:
        """The log-probability (n,) of each action, the sum of its steps' (in the canonical order: an action whose
        tokens of a type are in another order is the same bid); ``-inf`` for an action the masks forbid."""
        return self.run(logits, masks, actions=actions)[1]

    def canonical(self, actions: np.ndarray, same: np.ndarray) -> np.ndarray:
        """The tokens (n, K) sorted within each run of ``same`` (a token continuing the run of the one before)."""
        run = np.cumsum(~same, axis=1)
        return np.sort(run * (self.T + 1) + actions, axis=1) % (self.T + 1)

    def run(
        self,
        logits: np.ndarray,
        masks: np.ndarray,
        rng: np.random.Generator | None = None,
        actions: np.ndarray | None = None,
    ) -> tuple[np.ndarray, np.ndarray]:
        """The steps of the head over a batch: choosing (argmax, or sampling with ``rng``), or following
        ``actions`` (their log-probability). Returns the actions (n, D) and their log-probabilities (n,)."""
        C, T, K, total = self.C, self.T, self.K, self.total
        logits = np.asarray(logits, dtype=np.float64)
        masks = np.asarray(masks) != 0
        n = len(logits)
        z, context = logits[:, :total], logits[:, total:]
        given = None if actions is None else np.asarray(actions, dtype=np.int64)
        out = np.zeros((n, K + 1), dtype=np.int64)
        out[:, 0], log_p = _pick(z[:, :C], masks[:, :C], rng, None if given is None else given[:, 0])
        legal = masks[:, C:total].reshape(n, K, T)
        placed = legal[:, :, 1:].any(2)
        same = np.zeros((n, K), dtype=bool)
        same[:, 1:] = self.continues[1:] & (legal[:, 1:] == legal[:, :-1]).all(2)
        tokens = None if given is None else self.canonical(given[:, 1:], same)
        prefix = np.zeros_like(context)
        before = np.zeros(n, dtype=np.int64)
        targets = np.arange(T)
        for k in range(K):
            allowed = legal[:, k] & (targets >= np.where(same[:, k], before, 0)[:, None])
            chosen = None if tokens is None else tokens[:, k]
            if (allowed.sum(1) > 1).any() or chosen is not None:
                hidden = np.tanh(context + prefix + self.position[k])
                step = z[:, C + k * T : C + (k + 1) * T] + hidden @ self.out[self.type_of[k]]
                a, lp = _pick(step, allowed, rng, chosen)
                log_p = log_p + lp
            else:  # one legal value in every row: nothing to choose, nothing to draw
                a = np.argmax(allowed, axis=1)
            prefix = prefix + self.embed[self.type_of[k] * T + a] * placed[:, k, None]
            out[:, k + 1] = before = a
        return out, log_p


def _pick(
    logits: np.ndarray, legal: np.ndarray, rng: np.random.Generator | None, given: np.ndarray | None
) -> tuple[np.ndarray, np.ndarray]:
    """One categorical step over a batch: the value (``given``, else sampled with ``rng`` by Gumbel-max, else the
    most likely legal one) and its masked log-probability (``-inf`` for a value the mask forbids)."""
    scores = np.where(legal, logits, -np.inf)
    top = scores.max(1, keepdims=True)
    top[~np.isfinite(top)] = 0.0
    log_p = scores - (top + np.log(np.exp(scores - top).sum(1, keepdims=True)))
    if given is not None:
        a = given
    else:
        a = np.argmax(scores if rng is None else scores + gumbel([rng], [len(legal)], legal), axis=1)
        a[~legal.any(1)] = 0  # cannot happen with the env's masks; keep the action well formed anyway
    return a, log_p[np.arange(len(a)), a]


class PolicyAgent(Agent):
    """A trained policy playing by its mask: deterministic (argmax) or sampling (seeded by ``reset``). It reads
    and answers in the bid mode whatever mode it was trained in (a token-mode policy builds its bid token by
    token inside ``act``)."""

    name = "policy"

    def __init__(self, policy: Mapping[str, Any], deterministic: bool = True, **env_options: Any) -> None:
        options = {k: v for k, v in env_options.items() if k not in ("reward", "action_mode")}
        super().__init__(**options)
        self.net = PolicyNet(policy)
        self.tokens = TokenCodec(self.codec) if action_mode({"policy": policy}) == "tokens" else None
        layout = ObservationLayout(self.codec, building=True) if self.tokens else self.layout
        nvec = [self.tokens.n] if self.tokens else list(self.codec.nvec)
        if self.net.obs_size != layout.size or list(self.net.nvec) != nvec:
            mode = "tokens" if self.tokens else "bid"
            raise ValueError(
                f"the policy reads {self.net.obs_size} features and writes nvec {_short(self.net.nvec)}; this "
                f"environment has {layout.size} and {_short(nvec)} (action_mode {mode!r})"
            )
        self.scale = layout.scale
        self.deterministic = deterministic
        head = policy.get("bid_head")
        if head and self.tokens:
            raise ValueError("the policy has a bid_head, which a token-mode policy never has")
        self.chooser = AutoregressiveChooser(head, self.net.nvec) if head else MaskedChooser(self.net.nvec)
        self.critic = _critic(policy, layout.size)

    def value(self, observations: np.ndarray) -> np.ndarray:
        """The critic's value of each bid-mode observation, as the environment gives them (``(n, size)``, or one
        ``(size,)``: one number): the discounted return of the policy's training reward (``env_options["reward"]``
        and the config's ``gamma``) that it expected, from the observing seat, in its training games; a critic
        fitted from games, the undiscounted final reward that its ``critic_fit`` names, in those games. A
        checkpoint without a critic raises ``ValueError``."""
        if self.critic is None:
            raise ValueError(f"{self.name}: this checkpoint carries no critic (written before checkpoints kept the "
                             "value network; revolution fit-critic fits one from games)")  # fmt: skip
        x, one = _observations(observations, self.layout.size)
        if self.tokens:  # the token mode's observation ends with the bid under construction: none
            x = np.concatenate([x, np.zeros((len(x), self.codec.T * 3), dtype=np.float32)], axis=1)
        values = self.critic(x / self.scale)[:, 0]
        return values[0] if one else values

    def act(self, observation: dict[str, np.ndarray], info: dict[str, Any]) -> np.ndarray:
        if self.tokens:
            decision = np.array([int(info["decision"])])
            return self.act_batch(observation["observation"][None], observation["action_mask"][None], decision)[0]
        mask = observation["action_mask"]
        logits = self.net.logits(observation["observation"] / self.scale, self.chooser.needed(mask[None]))
        return self.chooser.choose(logits, mask, None if self.deterministic else self.rng)

    def act_batch(self, observations: np.ndarray, masks: np.ndarray, decisions: np.ndarray) -> np.ndarray:
        """Actions (n, D) for a batch of observations (n, size) and flat masks: one forward pass (the vector env
        calls this once per step for all the games this policy plays in); a token-mode policy makes one pass per
        token of the longest bid."""
        if self.tokens:
            return self._act_tokens(np.asarray(observations, dtype=np.float32), np.asarray(masks), decisions)
        x = np.asarray(observations, dtype=np.float32) / self.scale
        logits = self.net.logits(x, self.chooser.needed(masks))
        return self.chooser.choose_batch(logits, masks, None if self.deterministic else self.rng)

    def act_groups(self, observations: np.ndarray, masks: np.ndarray, decisions: np.ndarray, sizes: Sequence[int],
                   seeds: Sequence[int], repeats: Sequence[int], temperature: float = 1.0
                   ) -> list[np.ndarray]:  # fmt: skip
        """:meth:`act_batch` for consecutive groups of rows (``sizes``), each group's rows repeated ``repeats[g]``
        times in place (``np.repeat``): each group's actions those of ``reset(seed)`` then ``act_batch`` on its
        repeated rows alone (the agent's generator left as the last group's leaves it). One forward pass over the
        rows as given, the repeats sharing their row's logits, and one choice over every group (a search's samples
        at many positions). ``temperature``: the logits divided by it first (the factorised head's; a sampled
        policy's draws spread over more bids above 1)."""
        if temperature != 1.0 and (self.tokens or not isinstance(self.chooser, MaskedChooser)):
            raise ValueError("temperature: the factorised bid head's samples only (not the autoregressive head's, "
                             "nor the token mode's)")  # fmt: skip
        per_row = np.repeat(repeats, sizes)
        bounds = np.cumsum(np.asarray(sizes) * np.asarray(repeats))
        if self.tokens:  # one pass per token: group by group
            out = []
            repeated = [np.repeat(a, per_row, 0) for a in (observations, masks, decisions)]
            for lo, hi, seed in zip(np.r_[0, bounds[:-1]], bounds, seeds):
                self.reset(seed)
                out.append(self.act_batch(*(a[lo:hi] for a in repeated)))
            return out
        x = np.asarray(observations, dtype=np.float32) / self.scale
        logits = np.repeat(self.net.logits(x, self.chooser.needed(masks)), per_row, 0)
        if temperature != 1.0:
            logits = logits / temperature
        rngs = [np.random.default_rng(seed) for seed in seeds]
        if rngs:
            self.rng = rngs[-1]
        rows = np.asarray(sizes) * np.asarray(repeats)
        actions = self.chooser.choose_groups(logits, np.repeat(masks, per_row, 0), None if self.deterministic else rngs,
                                             rows)  # fmt: skip
        return np.split(actions, bounds[:-1])

    def _act_tokens(self, obs: np.ndarray, masks: np.ndarray, decisions: np.ndarray) -> np.ndarray:
        """A token-mode policy's bid-mode actions: every other decision in one pass on the choice's values; each
        bid built token by token (``TokenCodec.bid_masks``), the bid so far in the policy's observation."""
        codec, tokens = self.codec, self.tokens
        rng = None if self.deterministic else self.rng
        n, base = obs.shape
        x = np.zeros((n, base + codec.T * 3), dtype=np.float32)
        x[:, :base] = obs
        out = np.zeros((n, len(codec.nvec)), dtype=np.int64)
        bid = np.asarray(decisions) == int(Decision.BID)
        other = np.flatnonzero(~bid)
        if len(other):
            m = np.zeros((len(other), tokens.n), dtype=bool)
            m[:, : codec.C] = masks[other, : codec.C] != 0
            out[other, 0] = self.chooser.choose_batch(self.net.logits(x[other] / self.scale), m, rng)[:, 0]
        rows = np.flatnonzero(bid)
        at = self.layout.features["tokens"].start  # the observer's own tokens come first
        held = np.rint(obs[rows, at : at + 3]).astype(np.int64)
        building = np.zeros((len(rows), codec.T, 3), dtype=np.int64)
        last = np.full(len(rows), -1, dtype=np.int64)
        active = np.flatnonzero(held.any(1))
        while len(active):
            g = rows[active]
            x[g, base:] = building[active].reshape(len(active), -1)
            m = tokens.bid_masks(held[active] - building[active].sum(1), last[active])
            a = self.chooser.choose_batch(self.net.logits(x[g] / self.scale), m, rng)[:, 0]
            tokens.place(building, active, a)
            last[active] = a
            active = active[(building[active].sum(1) != held[active]).any(1)]
        for j, i in enumerate(rows.tolist()):
            out[i] = codec.action_from_bid(building[j])
        return out


def _observations(observations: np.ndarray, size: int) -> tuple[np.ndarray, bool]:
    """Observations as a float32 batch (n, size), and whether one observation was given; ``ValueError`` for
    another width."""
    x = np.asarray(observations, dtype=np.float32)
    one = x.ndim == 1
    x = np.atleast_2d(x)
    if x.shape[1] != size:
        raise ValueError(f"value: expected observations of {size} features, got {x.shape[1]}")
    return x, one


class Critic:
    """A value network apart from any policy (a critic file, or a policy checkpoint's critic): ``value``, like
    :meth:`PolicyAgent.value`, maps bid-mode observations, raw as the environment gives them, to the value the
    observing seat can expect; ``target``, the reward it predicts (``win_loss`` or ``margin``)."""

    def __init__(self, net: Mapping[str, Any], name: str = "critic", target: str = "win_loss",
                 **env_options: Any) -> None:  # fmt: skip
        from revolution_env.env import observation_layout

        options = {k: v for k, v in env_options.items() if k not in ("reward", "action_mode", "render_mode")}
        self.layout = observation_layout(**options)
        self.name = name
        self.target = target
        self.net = _critic({"critic": net}, self.layout.size)

    def value(self, observations: np.ndarray) -> np.ndarray:
        x, one = _observations(observations, self.layout.size)
        values = self.net(x / self.layout.scale)[:, 0]
        return values[0] if one else values


def load_critic(path: str | Path, **env_options: Any) -> Critic:
    """The critic in the file at ``path`` for ``env_options``: a critic file (``revolution fit-critic`` without a
    policy), or a policy checkpoint that carries one. ``ValueError`` in one line for a file that is neither, holds
    no critic, holds a network that does not fit, or was made for another environment (:func:`check_compatible`).
    Its ``target``: a critic file's ``env_options["reward"]`` (what it was fitted to); a checkpoint's, the target of
    its ``critic_fit`` if it has one, else its training reward."""
    path = str(path)
    not_ours = f"{path} is not a Revolution! critic or policy checkpoint"
    data = _load(path, not_ours)
    if isinstance(data, dict) and data.get("format") == FORMAT:
        data = _checked(data, path, f"{path} is not a Revolution! policy checkpoint", FORMAT, REQUIRED)
        if action_mode(data) != "bid":
            raise ValueError(f"{path}: a token-mode policy's critic reads the bid under construction; give a critic "
                             "of the bid mode")  # fmt: skip
        net = data["policy"].get("critic")
        if net is None:
            raise ValueError(f"{path}: this checkpoint carries no critic (revolution fit-critic fits one)")
        report = (data.get("critic_fit") or {}).get("report") or {}
        target = report.get("target") or data["env_options"].get("reward")
    else:
        data = _checked(data, path, not_ours, CRITIC_FORMAT, CRITIC_REQUIRED)
        net, target = data["critic"], data["env_options"].get("reward")
    check_compatible(data, env_options, path)
    try:
        return Critic(net, path, target or "win_loss", **env_options)
    except (KeyError, TypeError, AttributeError, IndexError) as exc:
        raise ValueError(f"{path}: bad critic entry ({type(exc).__name__}: {exc})") from None
    except ValueError as exc:
        raise ValueError(f"{path}: bad critic entry ({exc})") from None


def _critic(policy: Mapping[str, Any], size: int) -> Mlp | None:
    """The policy's critic (``policy["critic"]``), None for a checkpoint without one."""
    if "critic" not in policy:
        return None
    critic = Mlp(policy["critic"])
    if critic.weights[0].shape[0] != size or critic.weights[-1].shape[1] != 1:
        raise ValueError("the policy's critic does not fit its observation")
    return critic


def _short(nvec: Any) -> str:
    nvec = [int(v) for v in nvec]
    return str(nvec) if len(nvec) <= 3 else f"of length {len(nvec)}"


def load_policy_agent(path: str, deterministic: bool | None = None, **env_options: Any) -> PolicyAgent:
    """The policy checkpoint at ``path`` as an agent for ``env_options``: taking its argmax (``deterministic``) or
    sampling; None: as the checkpoint says it plays (``policy["play"]``: ``sample`` or ``argmax``, the default).

    Raises ``ValueError`` if the file is not a policy checkpoint, or if it was trained for another environment
    (the message names the options that differ)."""
    checkpoint = read_checkpoint(path)
    check_compatible(checkpoint, env_options, str(path))
    if deterministic is None:
        deterministic = checkpoint["policy"].get("play", "argmax") != "sample"
    try:
        agent = PolicyAgent(checkpoint["policy"], deterministic=deterministic, **env_options)
    except (KeyError, TypeError) as exc:
        raise ValueError(f"{path} is not a Revolution! policy checkpoint: bad policy entry ({exc})") from None
    agent.name = str(path)
    agent.step = int(checkpoint["step"])
    return agent
