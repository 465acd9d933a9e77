"""Behaviour cloning before self-play: the learner first imitates a teacher (a heuristic bot).

PPO from random weights spends most of a CPU budget relearning what a good heuristic already knows. With
``imitation.teacher`` set, a new run first records the teacher's decisions from the learner's seat, in the very
games the learner will then play (the same self-play env, opponents drawn from the league's ``heuristics``), and
fits the policy to them by maximum likelihood under the action masks; the value network is fitted at the same time
to the discounted returns of those games, so that PPO's first advantages are not noise. Then PPO takes over.

```python
demos = collect(config, steps=50_000, seed=0)    # Demonstrations: obs, masks, actions, returns, decisions
report = clone(model, demos, config)             # fits model.policy in place; held-out accuracy in the report
```

Collection plays ``n_envs`` games at once on the batched engine (``revolution_env.vector_env``, as training does;
the teacher decides for all of them in one call), or, on the ``subprocess`` backend, in
``n_envs`` processes each playing its own games, seeded by ``SeedSequence([seed, process])``. Either way it is
reproducible from the seed and ``n_envs``: each of the ``n_envs`` games in flight records whole games until it
holds its share of ``steps``. With ``imitation.selfplay`` the teacher plays every seat of ``n_envs`` games against
itself (``revolution_env.selfplay_vector_env``) and every seat's decisions are recorded, whole games until there are
``steps`` of them: a recording of the same size is faster, since no opponent decides for nothing (the
measurement: docs/experiments.md, "The main job").
"""

from __future__ import annotations

import functools
import time
from dataclasses import dataclass
from typing import Any, NamedTuple

import numpy as np
import torch
import torch.nn.functional as F
from revolution_training.config import TrainConfig
from revolution_training.distributions import AutoregressiveBidHead, logits_kl
from revolution_training.league import LeagueReader
from revolution_training.policy import critic_and_actor_latent
from revolution_training.selfplay import make_selfplay_env
from tqdm import tqdm

from revolution_env import Decision
from revolution_env.agents.base import act_batch
from revolution_env.agents.loading import load_agent
from revolution_env.common.workers import Pace, in_thread_pool, opponent_threads, side_by_side, worker_pool
from revolution_env.interop.torch import MaskedRuns


@dataclass
class Demonstrations:
    """The teacher's decisions: one row per learner step."""

    obs: np.ndarray  # (N, obs_size) float32, scaled as the learner sees it
    masks: np.ndarray  # (N, sum(nvec)) bool
    actions: np.ndarray  # (N, len(nvec)) int64
    returns: np.ndarray  # (N,) float32: the discounted return from that step to the end of its game
    decisions: np.ndarray  # (N,) int: the Decision of each step
    game: np.ndarray  # (N,) int64: which game each step belongs to (0, 1, ... over all processes)
    games: int

    def __len__(self) -> int:
        return len(self.actions)

    @staticmethod
    def concatenate(parts: list[Demonstrations]) -> Demonstrations:
        fields = ("obs", "masks", "actions", "returns", "decisions")
        first_game = np.cumsum([0] + [p.games for p in parts[:-1]])
        return Demonstrations(
            *(np.concatenate([getattr(p, f) for p in parts]) for f in fields),
            game=np.concatenate([p.game + g for p, g in zip(parts, first_game)]),
            games=sum(p.games for p in parts),
        )


class Progress:
    """How many of ``total`` decisions are recorded: a bar on a terminal (``bar`` True), a line at every tenth of
    the way otherwise (False), nothing (None)."""

    def __init__(self, total: int, label: str, bar: bool | None) -> None:
        self.total, self.label, self.done = total, label, 0
        self.start = time.monotonic()
        self.next = total / 10
        self.bar = tqdm(total=total, desc=label, unit=" decisions", dynamic_ncols=True) if bar else None
        self.lines = bar is False

    def __call__(self, done: int) -> None:
        done = min(done, self.total)
        if self.bar is not None:
            self.bar.update(done - self.done)
        elif self.lines and done >= self.next:
            print(f"  {self.label}: {done:,} of {self.total:,} decisions, {time.monotonic() - self.start:.0f} s",
                  flush=True)  # fmt: skip
            while self.next <= done:
                self.next += self.total / 10
        self.done = done

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()


def collect(config: TrainConfig, steps: int, seed: int, progress: bool | None = None) -> Demonstrations:
    """At least ``steps`` decisions of ``config.imitation.teacher`` in the learner's seat (whole games; in every seat
    with ``imitation.selfplay``), from ``config.n_envs`` games at once (the module's docstring says how);
    ``progress`` as :class:`Progress` has it (the batched engine's collection; the subprocess backend's workers say
    nothing)."""
    try:
        teacher = load_agent(str(config.imitation.teacher), **config.env_options())  # a bad spec fails here
    except ValueError as exc:
        raise ValueError(f"imitation.teacher: {exc}") from None
    workers = max(1, min(config.n_envs, steps))
    if config.backend() == "vector" and config.imitation.selfplay:
        return _collect_selfplay(config, teacher, workers, steps, seed, progress)
    shares = [steps // workers + (i < steps % workers) for i in range(workers)]
    if config.backend() == "vector":
        return _collect_batched(config, teacher, shares, seed, progress)
    jobs = [(config, share, (seed, i)) for i, share in enumerate(shares)]
    if workers == 1:
        return _collect(*jobs[0])
    with worker_pool(workers) as pool:  # workers ignore Ctrl-C and SIGTERM: the trainer stops them
        return Demonstrations.concatenate(pool.starmap(_collect, jobs))


def _discounted(rewards: list[float], gamma: float) -> list[float]:
    """The discounted return from every step of a game to its end."""
    g, tail = 0.0, []
    for r in reversed(rewards):
        g = r + gamma * g
        tail.append(g)
    return tail[::-1]


def _collect_batched(
    config: TrainConfig, teacher: Any, shares: list[int], seed: int, progress: bool | None = None
) -> Demonstrations:
    """The teacher in the learner's seat of ``len(shares)`` games at once (``vector_env``, opponents drawn from
    ``heuristics``); game ``i`` of the batch records whole games until it holds ``shares[i]`` decisions, then
    plays on unrecorded until every game is done."""
    from revolution_env import vector_env

    options = config.env_options()
    n = len(shares)
    league = LeagueReader(None, config.league.heuristics, options, heuristics_weights=config.league.heuristics_weights)
    env = vector_env(n, opponents=league, keep_finished=0, action_mode=config.policy.action_mode, **options)
    try:  # closed however the recording ends: a Ctrl-C leaves no opponent's bids under way in its threads
        return _record(config, teacher, shares, seed, env, progress)
    finally:
        env.close()


def _record(
    config: TrainConfig, teacher: Any, shares: list[int], seed: int, env: Any, progress: bool | None
) -> Demonstrations:
    """:func:`_collect_batched`'s recording in ``env``, one game of it per share."""
    n = len(shares)
    seeds = np.random.default_rng(np.random.SeedSequence([seed, n]))
    obs, info = env.reset(seed=int(seeds.integers(2**31)))
    teacher.reset(int(seeds.integers(2**31)))
    scale = env.obs_layout.scale
    current: list[list[tuple]] = [[] for _ in range(n)]  # the game in flight: (obs, mask, action, decision, reward)
    done: list[list[tuple]] = []  # finished games, in the order they finished
    returns: list[float] = []
    held = [0] * n
    queued: list[list[int]] = [[] for _ in range(n)]  # the token mode: the teacher's decision, token by token
    shown = Progress(sum(shares), f"recording {config.imitation.teacher}", progress)
    while min(h - s for h, s in zip(held, shares)) < 0:
        masks = env.action_masks()
        if env.tokens:
            actions = _teacher_tokens(env, teacher, queued, info["decision"])
        else:
            actions = act_batch(teacher, obs, masks, info["decision"])
        scaled = obs / scale
        rows = [(scaled[i], masks[i], actions[i], int(info["decision"][i])) for i in range(n)]
        obs, reward, terminated, truncated, info = env.step(actions)
        for i in range(n):
            if held[i] < shares[i]:
                current[i].append((*rows[i], float(reward[i])))
        for i in np.flatnonzero(terminated | truncated).tolist():
            if held[i] < shares[i]:
                done.append(current[i])
                returns += _discounted([r[4] for r in current[i]], config.ppo.gamma)
                held[i] += len(current[i])
            current[i] = []
        shown(sum(min(h + len(c), s) for h, c, s in zip(held, current, shares)))  # games in flight count too
    shown.close()
    return _demonstrations(done, returns, list(range(len(done))), len(done))


def _demonstrations(done: list[list], returns: list[float], game_of: list[int], games: int) -> Demonstrations:
    """The recorded trajectories ``done`` (each a list of (obs, mask, action, decision, ...) rows, one seat's
    decisions of one game, ``game_of`` it) and their ``returns``, row by row, as :class:`Demonstrations`."""
    rows = [row for trajectory in done for row in trajectory]
    return Demonstrations(
        np.asarray([r[0] for r in rows], dtype=np.float32),
        np.asarray([r[1] for r in rows], dtype=bool),
        np.asarray([r[2] for r in rows], dtype=np.int64),
        np.asarray(returns, dtype=np.float32),
        np.asarray([r[3] for r in rows], dtype=np.int64),
        np.repeat(np.asarray(game_of, dtype=np.int64), [len(trajectory) for trajectory in done]),
        games,
    )


def _collect_selfplay(
    config: TrainConfig, teacher: Any, games: int, steps: int, seed: int, progress: bool | None
) -> Demonstrations:
    """The teacher in every seat of ``games`` games at once against itself; every seat's decisions recorded, whole
    games, until there are at least ``steps`` of them (the games still in flight then are dropped)."""
    from revolution_env import selfplay_vector_env

    env = selfplay_vector_env(games, keep_finished=0, **config.env_options())
    try:
        return _record_selfplay(config, teacher, steps, seed, env, progress)
    finally:
        env.close()


def _record_selfplay(
    config: TrainConfig, teacher: Any, steps: int, seed: int, env: Any, progress: bool | None
) -> Demonstrations:
    """:func:`_collect_selfplay`'s recording in ``env``: each row (a seat of a game) holds the decisions of its game
    in flight; a game's rows go to the record together when it ends, each seat's reward on its last decision."""
    rows, players = env.num_envs, env.players
    seeds = np.random.default_rng(np.random.SeedSequence([seed, env.num_games, players]))
    obs, info = env.reset(seed=int(seeds.integers(2**31)))
    # the deciding rows in halves, each decided by a copy of the teacher with its own generator, side by side where
    # two threads are free (a compiled bot releases the GIL): the same recording on any machine
    teachers = [teacher, load_agent(str(config.imitation.teacher), **config.env_options())]
    for copy in teachers:
        copy.reset(int(seeds.integers(2**31)))
    parallel = opponent_threads() > 1
    scale = env.obs_layout.scale
    width = len(env.codec.nvec)
    current: list[list[list]] = [[] for _ in range(rows)]  # per row: [obs, mask, action, decision, reward]
    done: list[list[list]] = []  # each seat's decisions of a finished game
    game_of: list[int] = []  # the finished game each of ``done`` belongs to
    returns: list[float] = []
    held = finished = 0
    shown = Progress(steps, f"recording {config.imitation.teacher}", progress)
    while held < steps:
        masks = env.action_masks()
        kinds = np.asarray(info["decision"])
        acting = np.flatnonzero(kinds != Decision.NONE)
        actions = np.zeros((rows, width), dtype=np.int64)  # a row with nothing to decide: its no-op
        halves = [(copy, half) for copy, half in zip(teachers, np.array_split(acting, 2)) if len(half)]
        calls = [functools.partial(_decide, copy, obs, masks, kinds, half) for copy, half in halves]
        for (_, half), decided in zip(halves, side_by_side(calls, parallel)):
            actions[half] = decided
        scaled = obs[acting] / scale
        for j, r in enumerate(acting.tolist()):
            current[r].append([scaled[j], masks[r], actions[r], int(kinds[r]), 0.0])
        obs, reward, terminated, truncated, info = env.step(actions)
        for game in np.unique(np.flatnonzero(terminated | truncated) // players).tolist():
            for r in range(game * players, (game + 1) * players):
                if current[r]:
                    current[r][-1][4] += float(reward[r])
                    done.append(current[r])
                    game_of.append(finished)
                    returns += _discounted([row[4] for row in current[r]], config.ppo.gamma)
                    held += len(current[r])
                current[r] = []
            finished += 1
        shown(min(held, steps))
    shown.close()
    return _demonstrations(done, returns, game_of, finished)


def _decide(teacher: Any, obs: np.ndarray, masks: np.ndarray, kinds: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """The teacher's actions for ``rows`` of a step."""
    return act_batch(teacher, obs[rows], masks[rows], kinds[rows])


def _teacher_tokens(env: Any, teacher: Any, queued: list[list[int]], decisions: np.ndarray) -> np.ndarray:
    """The token mode's next action of every game: the next token of the teacher's bid (the teacher decides, in
    the bid mode, for the games that start a decision), or its choice."""
    games = np.flatnonzero([not q for q in queued])
    if len(games):
        kinds = decisions[games]
        decided = act_batch(teacher, *env.bid_mode_view(games), kinds)
        for i, action, kind in zip(games.tolist(), decided, kinds.tolist()):
            if kind == Decision.BID:
                counts = env.codec.bid_counts(action, env.game.tokens[i, env.seat[i]])
                queued[i] = env.tokens.sequence(counts)
            else:
                queued[i] = [int(action[0])]
    return np.array([q.pop(0) for q in queued], dtype=np.int64)


def _collect(config: TrainConfig, steps: int, key: tuple[int, int]) -> Demonstrations:
    options = config.env_options()
    env = make_selfplay_env(options, None, config.league.heuristics)
    teacher = load_agent(str(config.imitation.teacher), **options)
    rows: dict[str, list[Any]] = {"obs": [], "masks": [], "actions": [], "decisions": []}
    returns: list[float] = []
    rewards: list[float] = []
    lengths: list[int] = []
    games = 0
    seeds = np.random.default_rng(np.random.SeedSequence(key))  # the games' seeds, the teacher's seeds
    obs, info = env.reset(seed=int(seeds.integers(2**31)))
    teacher.reset(int(seeds.integers(2**31)))
    while True:
        raw, raw_info = env.learner_view()
        action = np.asarray(teacher.act(raw, raw_info), dtype=np.int64)
        rows["obs"].append(obs)
        rows["masks"].append(env.action_masks())
        rows["actions"].append(action)
        rows["decisions"].append(info["decision"])
        obs, reward, terminated, truncated, info = env.step(action)
        rewards.append(reward)
        if terminated or truncated:
            games += 1
            returns += _discounted(rewards, config.ppo.gamma)
            lengths.append(len(rewards))
            rewards = []
            if len(returns) >= steps:
                break
            obs, info = env.reset()
            teacher.reset(int(seeds.integers(2**31)))
    return Demonstrations(
        np.asarray(rows["obs"], dtype=np.float32),
        np.asarray(rows["masks"], dtype=bool),
        np.asarray(rows["actions"], dtype=np.int64),
        np.asarray(returns, dtype=np.float32),
        np.asarray(rows["decisions"], dtype=np.int64),
        np.repeat(np.arange(games, dtype=np.int64), lengths),
        games,
    )


def held_out(n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Indices (fit, held out) of ``n`` demonstrations: a tenth held out, drawn from ``seed``."""
    order = np.random.default_rng(seed).permutation(n)
    cut = max(1, n // 10)
    return order[cut:], order[:cut]


def _batch(demos: Demonstrations, idx: np.ndarray, device: Any) -> tuple[torch.Tensor, ...]:
    return (
        torch.as_tensor(demos.obs[idx], device=device),
        torch.as_tensor(demos.actions[idx], device=device),  # (N,) in the token mode: SB3's Discrete form
        torch.as_tensor(demos.masks[idx], device=device),
        torch.as_tensor(demos.returns[idx], device=device),
    )


class FitLoss(NamedTuple):
    """The imitation's loss beyond the log-likelihood: ``vf_coef`` times the critic's squared error, and
    ``magnet_coef`` times ``KL(pi || magnet)`` (``magnet``: a frozen :class:`~revolution_training.mmd.MagnetActor`;
    None: no such term), MMD's anchor on a fit (policy iteration's: training/search_iteration.py)."""

    vf_coef: float
    magnet: Any = None
    magnet_coef: float = 0.0


def clone(model: Any, demos: Demonstrations, config: TrainConfig, magnet: Any = None, magnet_coef: float = 0.0
          ) -> dict[str, float]:  # fmt: skip
    """Fit ``model.policy`` (a MaskablePPO policy) to the demonstrations: the actor by the masked log-likelihood of
    the teacher's actions, the critic by squared error to the returns, ``imitation.epochs`` passes of minibatches of
    ``imitation.batch_size`` (else ``ppo.batch_size``) with the policy's own optimizer at
    ``imitation.learning_rate`` (else PPO's); a tenth is held out. Returns :func:`score` on the held-out tenth.
    With a ``magnet`` (a frozen ``MagnetActor`` of the same network) the loss adds ``magnet_coef`` times
    ``KL(pi || magnet)`` on every row (:func:`~revolution_training.distributions.logits_kl`, the autoregressive
    head's along the teacher's bid), and the score its held-out mean, ``magnet_kl``.

    Each minibatch's gradient is the sum of its two halves' (:func:`_half_gradients`), taken side by side in two
    threads (``workers.side_by_side``) or one after the other, whichever ``workers.Pace`` finds faster now (torch's
    kernels release the GIL): the same weights either way, on any machine. On quiet cores side by side is faster;
    beside a busy process, one after the other; torch's own two threads spin at their OpenMP barriers and are
    slower than one there (the measurements: docs/experiments.md, "The main job")."""
    policy = model.policy
    rng = np.random.default_rng(config.seed)
    fit, held = held_out(len(demos), config.seed)
    size = config.imitation.batch_size or config.ppo.batch_size
    params = [p for p in policy.parameters() if p.requires_grad]  # not a magnet's frozen copy
    space = policy.action_space
    runs = MaskedRuns(space.nvec if hasattr(space, "nvec") else [space.n])  # the token mode: one Discrete
    pace = Pace(opponent_threads() > 1 and not in_thread_pool())
    loss = FitLoss(config.ppo.vf_coef, magnet, magnet_coef)
    groups = policy.optimizer.param_groups
    before = [group["lr"] for group in groups]
    if config.imitation.learning_rate is not None:
        for group in groups:
            group["lr"] = config.imitation.learning_rate
    policy.set_training_mode(True)
    try:
        for _ in range(config.imitation.epochs):
            rng.shuffle(fit)
            for start in range(0, len(fit), size):
                idx = fit[start : start + size]
                args = (policy, params, runs, loss, len(idx))
                halves = [_batch(demos, half, policy.device) for half in np.array_split(idx, 2)]
                calls = [functools.partial(_half_gradients, *args, batch) for batch in halves]
                with pace as parallel:
                    grads, rest = side_by_side(calls, parallel)
                for p, a, b in zip(params, grads, rest):
                    p.grad = a + b
                torch.nn.utils.clip_grad_norm_(params, config.ppo.max_grad_norm)
                policy.optimizer.step()
    finally:
        policy.set_training_mode(False)
        for group, lr in zip(groups, before):
            group["lr"] = lr
    scored = score(policy, demos, held)
    if magnet is not None:
        with torch.no_grad():
            scored["magnet_kl"] = float(_magnet_kl(policy, runs, magnet, _batch(demos, held, policy.device)).mean())
    return scored


def _half_gradients(
    policy: Any, params: list[torch.Tensor], runs: MaskedRuns, loss: FitLoss, size: int, batch: tuple
) -> list[torch.Tensor]:
    """The gradients of the imitation's loss over the rows of ``batch`` (:func:`_batch`'s tensors), summed over
    them and divided by the minibatch's ``size``: the negative log-likelihood of the teacher's actions plus the
    terms of ``loss``. The policy's networks are run directly, with the masked log-probabilities of
    :class:`~revolution_env.interop.torch.MaskedRuns`, not through the policy's action distribution, which holds
    its last inputs and so cannot serve two threads."""
    obs, actions, masks, returns = batch
    values, latent = critic_and_actor_latent(policy, obs)
    logits = policy.action_net(latent)
    actions = actions.view(len(actions), len(runs.nvec))
    if isinstance(policy.action_net, AutoregressiveBidHead):  # its steps along the teacher's bid
        log_prob = policy.action_net.follow(logits, masks.bool(), actions).log_prob
    else:
        log_prob = runs.log_prob(runs.log_softmax(logits, runs.legal(masks)), actions)
    total = loss.vf_coef * (values - returns).square().sum() - log_prob.sum()
    if loss.magnet is not None:
        total = total + loss.magnet_coef * _magnet_kl(policy, runs, loss.magnet, batch, logits).sum()
    grads = torch.autograd.grad(total / size, params, allow_unused=True)
    return [torch.zeros_like(p) if g is None else g for p, g in zip(params, grads)]


def _magnet_kl(policy: Any, runs: MaskedRuns, magnet: Any, batch: tuple, logits: torch.Tensor | None = None
               ) -> torch.Tensor:  # fmt: skip
    """``KL(pi || magnet)`` per row of ``batch`` (``logits``: the policy's, where already computed)."""
    obs, actions, masks, _ = batch
    if logits is None:
        logits = policy.action_net(critic_and_actor_latent(policy, obs)[1])
    with torch.no_grad():
        magnet_logits = magnet(policy.extract_features(obs, policy.pi_features_extractor))
    head = policy.action_net if isinstance(policy.action_net, AutoregressiveBidHead) else None
    actions = actions.view(len(actions), len(runs.nvec))
    return logits_kl(logits, magnet_logits, masks.bool(), actions, runs, head, magnet.head())


def score(policy: Any, demos: Demonstrations, idx: np.ndarray) -> dict[str, float]:
    """How well ``policy`` matches the demonstrations ``idx``: ``accuracy`` (its greedy action equals the
    teacher's in every dimension), ``bid_accuracy`` (the same over bids), ``dim_accuracy`` (per dimension that
    had a choice), ``nll`` (of the teacher's actions) and ``value_mse`` (against the returns)."""
    with torch.no_grad():
        obs, actions, masks, returns = _batch(demos, idx, policy.device)
        values, log_prob, _ = policy.evaluate_actions(obs, actions, action_masks=masks)
        greedy = policy.get_distribution(obs, action_masks=masks.cpu().numpy()).get_actions(deterministic=True)
    same = (greedy == actions).cpu().numpy().reshape(len(idx), -1)
    exact = same.all(axis=1)
    bids = demos.decisions[idx] == Decision.BID
    space = policy.action_space
    nvec = np.asarray(space.nvec if hasattr(space, "nvec") else [space.n])  # the token mode: one Discrete
    offsets = np.concatenate([[0], np.cumsum(nvec)[:-1]])
    legal = np.add.reduceat(demos.masks[idx].astype(np.int64), offsets, axis=1)  # legal values per dimension
    open_ = legal > 1
    return {
        "steps": float(len(demos)),
        "games": float(demos.games),
        "accuracy": float(exact.mean()),
        "bid_accuracy": float(exact[bids].mean()) if bids.any() else float("nan"),
        "dim_accuracy": float(same[open_].mean()) if open_.any() else float("nan"),
        "nll": float(-log_prob.mean()),
        "value_mse": float(F.mse_loss(values.flatten(), returns)),
    }
