"""The training configuration: one dataclass, one docstring per field, read from YAML.

```python
from revolution_training.config import load_config
config = load_config("configs/default.yaml")   # unknown keys and bad values raise ValueError naming the key
config.env_options()                          # the options every environment and agent of the run is built with
```
"""

from __future__ import annotations

import dataclasses
import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from revolution_env.env.core import REWARDS
from revolution_env.env.modes import ACTION_MODES

ACTIVATIONS = ("tanh", "relu")
MIRROR = "self"  # in eval_opponents: a table of the learner, a copy of it and eval_fill


@dataclass
class TrainConfig:
    """Everything a self-play run depends on. Steps count the learner's own decisions (environment steps of the
    vectorised self-play env), summed over all parallel environments."""

    # --- the game ------------------------------------------------------------------------------------------------
    players: int = 3
    """Players at the table: 2 (the puppet variant), 3 or 4. The learner takes one seat, opponents the others."""
    bid_refunds: bool | None = None
    """Optional rule: losing bids come back (None: the variant's default, on for 2 players and the first edition)."""
    area_control_bonus: bool = False
    """Optional rule: +10 support and protection for a player holding a whole area."""
    first_edition: bool = False
    """The first edition's Card space and deck."""
    max_rounds: int = 100
    """A game not over after this round is truncated and scored (D8)."""
    board: str = "standard"
    """A board name or a path to a board JSON file."""
    reward: str = "win_loss"
    """The learner's reward at the end of a game: ``win_loss`` (+1 / -1) or ``margin`` (support margin / 100)."""
    truncated_reward: float | None = None
    """The learner's final reward in a game cut at ``max_rounds`` (D8), whatever the standing: ``None`` keeps the
    game's own (the game scored as it stands, so a leader can win by stalling); ``-1`` makes stalling never pay. A
    training setting, not a rule: evaluations and the environment score such games by D8."""
    action_mode: str = "bid"
    """The learner's action: ``bid`` (a whole bid a step, the masked MultiDiscrete, independent per token) or
    ``tokens`` (one token of the bid a step, a Discrete action: the policy is autoregressive over a bid, so it can
    mix over whole bids; a bid takes as many steps as the tokens held). Opponents always bid whole bids; a
    token-mode checkpoint plays in any game. ``tokens`` needs the vector backend."""
    bid_head: str = "factorised"
    """The bid mode's action head: ``factorised`` (each token's target drawn independently: a product distribution)
    or ``autoregressive`` (each token's target conditioned on the tokens already placed, in one step of the env:
    the policy can put its mass on a few whole bids; ``revolution_training.distributions.AutoregressiveBidHead``).
    ``init_from`` or a ``magnet`` may name a factorised policy for an autoregressive run (it starts as that
    policy); not the other way round."""

    # --- PPO -----------------------------------------------------------------------------------------------------
    algorithm: str = "ppo"
    """``ppo``: sb3-contrib's MaskablePPO; ``mmd``: Magnetic Mirror Descent, PPO regularised towards a magnet policy
    and towards its previous self (``revolution_training.mmd``: ``magnet``, ``magnet_coef``, ``kl_coef``), which
    converges towards an equilibrium in self-play instead of chasing its last opponent."""
    magnet: str = "uniform"
    """MMD's magnet: ``uniform`` (over the legal actions of each head: a per-head entropy bonus), ``imitation``
    (the policy right after imitating ``pretrain_teacher``), ``latest`` (a frozen copy of the policy, refreshed
    every ``magnet_every`` steps) or a policy checkpoint ``.pt``."""
    magnet_coef: float = 0.05
    """MMD: weight of ``KL(policy || magnet)`` (the papers' tuned settings: 0.05 to 0.1)."""
    kl_coef: float = 0.05
    """MMD: weight of ``KL(policy || policy before the update)``, the mirror-descent step (0.025 to 0.1)."""
    magnet_every: int = 0
    """MMD with ``magnet: latest``: learner steps between two refreshes of the magnet (0: it stays the policy the
    run started with)."""
    lr_schedule: str = "constant"
    """``constant`` or ``linear``: the learning rate falls linearly to 0 at ``total_steps`` (annealed, as the MMD
    papers train)."""
    total_steps: int = 200_000
    """Learner steps to train for in all (a resumed run continues to this count)."""
    n_envs: int = 2
    """Parallel self-play games: the games of one batched vector env (``env_backend: vector``) or subprocesses
    (``subprocess``; one runs in the main process)."""
    env_backend: str = "auto"
    """``vector``: the batched engine (``revolution_env.vector_env``) steps all games in one process, random and
    snapshot opponents in batch, heuristics game by game; ``subprocess``: one scalar self-play env per process;
    ``auto``: ``vector`` (the batched engine plays every variant, the first edition included)."""
    n_steps: int = 256
    """Steps per environment per rollout (a PPO update sees ``n_envs * n_steps`` steps)."""
    batch_size: int = 128
    """Minibatch size of the PPO updates."""
    n_epochs: int = 4
    """Passes over each rollout."""
    learning_rate: float = 3e-4
    """Adam's step size (at the start, with ``lr_schedule: linear``)."""
    gamma: float = 0.995
    """Discount factor (rewards come only at the end of a game of ~20 learner decisions)."""
    gae_lambda: float = 0.95
    """GAE's bias-variance trade-off."""
    ent_coef: float = 0.01
    """Entropy bonus: keeps the masked policy exploring."""
    vf_coef: float = 0.5
    """Weight of the value loss."""
    clip_range: float = 0.2
    """PPO's clipping of the probability ratio."""
    max_grad_norm: float = 0.5
    """Gradient clipping."""
    net_arch: list[int] = field(default_factory=lambda: [128, 128])
    """Hidden layer sizes of the policy and of the value network (separate networks of the same shape)."""
    activation: str = "tanh"
    """Activation of the hidden layers: ``tanh`` or ``relu``."""
    init_from: str | None = None
    """Start from trained weights instead of random ones: a run folder (its last save: the policy and the value
    network) or a policy checkpoint ``.pt`` (the policy only; the value network starts fresh). The game options
    must match the run's, and so must ``net_arch`` and ``activation``; the step count starts again at 0."""
    pretrain_teacher: str | None = None
    """An agent spec (a heuristic's name, a checkpoint) the learner imitates before PPO starts, in a new run
    (behaviour cloning, ``revolution_training.pretrain``); None: no imitation."""
    pretrain_steps: int = 50_000
    """Teacher decisions recorded for the imitation (whole games; from the learner's seat against ``heuristics``, or
    every seat with ``pretrain_selfplay``)."""
    pretrain_selfplay: bool = False
    """Record the teacher in every seat of games it plays against itself (``selfplay_vector_env``) instead of in the
    learner's seat against ``heuristics``: every decision at the table is one of its own, so a recording costs
    about half the time (the bid mode on the batched engine only)."""
    pretrain_epochs: int = 10
    """Passes over the recorded decisions (minibatches of ``pretrain_batch_size``)."""
    pretrain_batch_size: int | None = None
    """Minibatch of the imitation (None: PPO's ``batch_size``)."""
    pretrain_learning_rate: float | None = None
    """Learning rate of the imitation (None: PPO's ``learning_rate``); PPO's is set back after it."""
    seed: int = 0
    """Seeds torch, numpy, every environment's games and seats, and the league's opponent sampling."""
    device: str = "cpu"
    """Torch device for training (``cpu``, ``cuda``, ``auto``); opponents and checkpoints always run on the CPU."""
    torch_threads: int | None = None
    """Torch CPU threads of PPO's updates (and of the imitation); None: the user's own choice for torch where there
    is one (``OMP_NUM_THREADS``, ``MKL_NUM_THREADS``, or ``torch.set_num_threads`` before the run), else one. A
    minibatch of this network is thousands of small operations, each an OpenMP region whose threads spin at its
    end until all have finished: on two quiet cores two threads are about 10% faster than one, but beside one
    busy process the thread that waits spins while the other waits for a core, and an update took 480 ms instead
    of 6 (``scripts/benchmark.py --train ... --load 1``). The rollouts' forward passes run on one thread whatever
    this is (the opponents' threads need the cores then). The updates' sums depend on the thread count."""

    # --- the league ----------------------------------------------------------------------------------------------
    selfplay: bool = False
    """Pure self-play instead of a league: every seat of every game is the learner, decided in one forward pass
    (``revolution_env.selfplay_vector_env``), so every decision is a learner step. The ``n_envs`` games make
    ``n_envs * players`` rows, each an environment of PPO's whose steps count, a row that waits while another seat
    decides (Guy, Spy, Apothecary) stepping with the no-op. The league's opponents are then unused: a config that
    also sets ``p_latest``, ``p_past``, ``p_heuristics``, ``opponent_sampling``, ``pfsp_*``,
    ``opponents_deterministic`` or ``exploiter_every`` is refused; ``heuristics`` are only the evaluation's baselines
    (without ``eval_opponents``) and the imitation's opponents, and snapshots are still saved but never played.
    Needs the batched engine."""
    snapshot_every: int = 10_000
    """Add a frozen copy of the learner to the league every this many steps."""
    max_snapshots: int = 10
    """Snapshots kept in the league: past the cap the oldest goes, except the first, which always stays."""
    p_latest: float = 0.4
    """Per opponent seat, the chance of the latest snapshot (once one exists)."""
    p_past: float = 0.3
    """Per opponent seat, the chance of a uniformly drawn older snapshot (the latest when it is the only one)."""
    p_heuristics: float = 0.3
    """Per opponent seat, the chance of a uniformly drawn agent of ``heuristics``; the three chances sum to 1."""
    heuristics: list[str] = field(default_factory=lambda: ["random"])
    """Agent specs (``random``, a heuristic's name, a checkpoint file) that fill the league besides snapshots;
    until the first snapshot exists, every opponent comes from here."""
    heuristics_weights: list[float] | None = None
    """The chances of the ``heuristics`` when one is drawn (``opponent_sampling: uniform``), one per entry; None:
    uniform. ``revolution psro`` sets them to its meta-strategy."""
    opponents_deterministic: bool = False
    """Whether snapshot opponents take their most likely action (False: they sample, as the learner does)."""
    opponent_sampling: str = "uniform"
    """How opponent seats are drawn (``revolution_training.league``): ``uniform`` (the ``p_*`` chances above) or ``pfsp``
    (prioritized fictitious self-play: ``p_latest`` self-play, the rest over the whole league weighted towards the
    members the learner loses to)."""
    pfsp_weighting: str = "hard"
    """PFSP's priority of a member the learner wins against at rate p: ``hard`` (1-p)^2, ``linear`` 1-p,
    ``variance`` p(1-p), ``even`` 1."""
    pfsp_window: int = 100
    """The learner's last games against a member that its PFSP win rate counts."""
    exploiter_every: int = 0
    """Every this many steps, pause and train an exploiter: a fresh best response to the learner's latest
    snapshot (``revolution exploit``'s method, ``exploiter_steps`` steps, in ``<out>/exploiters/``), then add it to
    the league, where PFSP weighs it like every member (AlphaStar's main exploiters: they find the learner's
    weaknesses, and the learner then trains against them). 0: no exploiters. Needs ``opponent_sampling: pfsp``."""
    exploiter_steps: int = 50_000
    """Training steps of each exploiter."""
    max_exploiters: int = 3
    """Exploiters kept in the league: past the cap the oldest goes."""

    # --- evaluation and saving -----------------------------------------------------------------------------------
    eval_every: int = 20_000
    """Evaluate the learner against each baseline every this many steps (0: never)."""
    eval_games: int = 30
    """Games per baseline in each evaluation (rotated over the seats)."""
    eval_opponents: list[str] | None = None
    """Baselines, evaluated one at a time (None: the ``heuristics`` list). ``self`` is a mirror table: the learner,
    a copy of it, and ``eval_fill`` in the other seats (two copies of one policy fight over the same characters; a
    policy that only ever met other bots can lose nearly every game there, even beside ``random``)."""
    eval_fill: str | None = "random"
    """Who takes the seats beyond the learner and the baseline with 3 or 4 players (None: more copies of the
    baseline; identical bots tend to tie each other's bids, which flatters the learner). With ``random`` the
    evaluation is in effect a duel with a weak third party: 0.5 is parity."""
    eval_start: bool = True
    """With ``pretrain_teacher``, evaluate the imitation too, at step 0, so that ``best.pt`` is never a policy that
    scored below the run's start (off in a best response of ``revolution exploit``: its protocol measures what the
    training found)."""
    eval_sample: bool = False
    """Evaluate the policy sampling its actions (the spec ``PATH:sample``) instead of its argmax: for a policy meant
    to mix (an equilibrium is a mixed strategy; a token-mode policy's argmax is taken token by token, not over
    whole bids). ``best.pt`` is picked by these evaluations either way, and the run's checkpoints say so: their
    plain spec plays them sampling (``PATH:argmax`` takes the argmax)."""
    eval_workers: int = 1
    """Processes the evaluation plays its games in."""
    best_by: str = "mean"
    """Which evaluation ``best.pt`` keeps: the highest ``mean`` win rate over the baselines, or the highest
    ``worst`` one (the lowest of its win rates: a robust bot's measure, as the gauntlet's headline is); with
    ``eval_start``, the imitation's evaluation at step 0 among them."""
    save_every: int = 10_000
    """Save the model, the policy, the league and the run state every this many steps."""
    out: str = "runs/default"
    """Output folder (checkpoints, league, TensorBoard logs); ``--out`` overrides it."""

    # --- a recipe ------------------------------------------------------------------------------------------------
    stages: list[dict[str, Any]] | None = None
    """A recipe's stages, trained one after another (``revolution_training.recipe``): each a mapping with a
    ``name``, its ``total_steps``, ``start`` (after the first: ``run``, ``best`` or ``latest``, what it takes of
    the previous stage) and the keys it changes; the other keys of the config are every stage's base. None: one
    run."""

    def __post_init__(self) -> None:
        check(self)

    def env_options(self) -> dict[str, Any]:
        """The environment options of the run (what ``revolution_env.raw_env`` and every agent take)."""
        return {
            "players": self.players,
            "bid_refunds": self.bid_refunds,
            "area_control_bonus": self.area_control_bonus,
            "first_edition": self.first_edition,
            "max_rounds": self.max_rounds,
            "board": self.board,
            "reward": self.reward,
        }

    def backend(self) -> str:
        """The environment backend this run uses (``env_backend`` with ``auto`` decided)."""
        return "vector" if self.env_backend == "auto" else self.env_backend

    def update_threads(self) -> int:
        """Torch threads for PPO's updates (``torch_threads``, None decided as its docstring says: call it before
        the run changes torch's threads)."""
        if self.torch_threads:
            return self.torch_threads
        import torch

        from revolution_env.common.workers import thread_setting, usable_cores

        now = torch.get_num_threads()  # torch's default is one thread per usable core
        chosen = thread_setting("OMP_NUM_THREADS") or thread_setting("MKL_NUM_THREADS") or now != usable_cores()
        return now if chosen else 1

    def baselines(self) -> list[str]:
        return list(self.eval_opponents if self.eval_opponents is not None else self.heuristics)

    def plays_heuristic_bots(self) -> bool:
        """Whether the run's teacher, league or evaluations name a heuristic bot (value, bargain, area: the
        compiled bots of ``revolution_env.agents.compiled``)."""
        from revolution_env.agents.compiled import STYLES

        specs = [self.pretrain_teacher, *self.heuristics, *self.baselines(), self.eval_fill]
        return any(style in str(spec) for spec in specs if spec for style in STYLES)

    def compiled_bot(self) -> Any | None:
        """A heuristic bot of the run's game whose compiled code is what the run waits for (one build compiles every
        style; ``compiled.ready(bot)`` starts it where Numba's cache lacks it), or None where the run plays no
        heuristic bot or Numba is missing."""
        from revolution_env.agents.compiled import COMPILED
        from revolution_env.agents.loading import load_agent

        if not COMPILED or not self.plays_heuristic_bots():
            return None
        return load_agent("value", **self.env_options())

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    def replace(self, **changes: Any) -> TrainConfig:
        return dataclasses.replace(self, **changes)


# --- checking ----------------------------------------------------------------------------------------------------


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _is_number(v: Any) -> bool:
    return (isinstance(v, (int, float)) and not isinstance(v, bool)) and math.isfinite(v)


MAX_INT = 10**12  # larger counts are no training run (and a 400-digit number would only fail deep inside)


def _positive_int(v: Any) -> str | None:
    return None if _is_int(v) and 0 < v <= MAX_INT else f"a positive integer up to {MAX_INT:.0e}"


def _non_negative_int(v: Any) -> str | None:
    return None if _is_int(v) and 0 <= v <= MAX_INT else f"a non-negative integer up to {MAX_INT:.0e}"


def _probability(v: Any) -> str | None:
    return None if _is_number(v) and 0.0 <= v <= 1.0 else "a number between 0 and 1"


def _positive_number(v: Any) -> str | None:
    return None if _is_number(v) and v > 0 else "a positive number"


def _fraction(v: Any) -> str | None:
    return None if _is_number(v) and 0.0 < v <= 1.0 else "a number in (0, 1]"


def _bool(v: Any) -> str | None:
    return None if isinstance(v, bool) else "true or false"


def _optional_bool(v: Any) -> str | None:
    return None if v is None or isinstance(v, bool) else "true, false or null"


def _string(v: Any) -> str | None:
    return None if isinstance(v, str) and v else "a non-empty string"


def _spec(v: Any) -> str | None:
    """An agent spec that ``load_agent`` will know: random, a heuristic's name, an existing checkpoint file, or a
    mixture of those (``mix:SPEC@W,...``), or a checkpoint played with search (``search:PATH``)."""
    from revolution_env.agents.loading import known_specs, spec_problem
    from revolution_env.agents.mixture import is_mixture
    from revolution_env.agents.search import is_search

    problem = spec_problem(v)
    if problem is None:
        return None
    known = f"an agent spec ({', '.join(known_specs())}, a checkpoint file that exists, mix:SPEC@W,... or search:PATH)"
    return f"{known}: {problem}" if is_mixture(v) or is_search(v) else known


def _specs(v: Any) -> str | None:
    if not (isinstance(v, list) and v):
        return "a non-empty list of agent specs"
    return next((f"{expected}; {s!r} is not one" for s in v if (expected := _spec(s))), None)


def _optional_specs(v: Any) -> str | None:
    return None if v is None else _specs(v)


def _baselines(v: Any) -> str | None:
    """``eval_opponents``: agent specs, or ``self`` (a mirror table: ``TrainConfig.eval_opponents``)."""
    if isinstance(v, list) and MIRROR in v:
        v = [s for s in v if s != MIRROR] or None
    return _optional_specs(v)


def _device(v: Any) -> str | None:
    ok = isinstance(v, str) and re.fullmatch(r"cpu|auto|mps|cuda(:\d+)?", v) is not None
    return None if ok else "cpu, cuda, cuda:N, mps or auto"


def _board(v: Any) -> str | None:
    from revolution_env.engine.components import BoardError, load_components

    if not isinstance(v, str) or not v:
        return "a board name or a path to a board JSON file"
    try:
        load_components(v)
    except BoardError as exc:
        return f"a board that loads ({exc})"
    return None


def _net_arch(v: Any) -> str | None:
    return None if isinstance(v, list) and all(_is_int(n) and n > 0 for n in v) else "a list of positive integers"


MAGNETS = ("uniform", "imitation", "latest")  # or a policy checkpoint (revolution_training.mmd)


def _magnet(v: Any) -> str | None:
    if isinstance(v, str) and (v in MAGNETS or (v.endswith(".pt") and Path(v).is_file())):
        return None
    return f"one of {', '.join(MAGNETS)}, or a policy checkpoint file (.pt) that exists"


def _one_of(*choices: Any):
    def check_choice(v: Any) -> str | None:
        return None if v in choices else "one of " + ", ".join(map(str, choices))

    return check_choice


CHECKS = {
    "players": _one_of(2, 3, 4),
    "bid_refunds": _optional_bool,
    "area_control_bonus": _bool,
    "first_edition": _bool,
    "max_rounds": _positive_int,
    "board": _board,
    "reward": _one_of(*REWARDS),
    "truncated_reward": lambda v: None if v is None or _is_number(v) else "a number, or null (the game's own reward)",
    "action_mode": _one_of(*ACTION_MODES),
    "bid_head": _one_of("factorised", "autoregressive"),
    "algorithm": _one_of("ppo", "mmd"),
    "magnet": _magnet,
    "magnet_coef": lambda v: None if _is_number(v) and v >= 0 else "a non-negative number",
    "kl_coef": lambda v: None if _is_number(v) and v >= 0 else "a non-negative number",
    "magnet_every": _non_negative_int,
    "lr_schedule": _one_of("constant", "linear"),
    "total_steps": _positive_int,
    "n_envs": _positive_int,
    "env_backend": _one_of("auto", "vector", "subprocess"),
    "n_steps": _positive_int,
    "batch_size": _positive_int,
    "n_epochs": _positive_int,
    "learning_rate": _positive_number,
    "gamma": _fraction,
    "gae_lambda": _fraction,
    "ent_coef": lambda v: None if _is_number(v) and v >= 0 else "a non-negative number",
    "vf_coef": _positive_number,
    "clip_range": _positive_number,
    "max_grad_norm": _positive_number,
    "net_arch": _net_arch,
    "activation": _one_of(*ACTIVATIONS),
    "init_from": lambda v: None if v is None else _string(v),
    "pretrain_teacher": lambda v: None if v is None else _spec(v),
    "pretrain_steps": _positive_int,
    "pretrain_epochs": _positive_int,
    "pretrain_batch_size": lambda v: None if v is None else _positive_int(v),
    "pretrain_learning_rate": lambda v: None if v is None else _positive_number(v),
    "pretrain_selfplay": _bool,
    "seed": _non_negative_int,
    "device": _device,
    "torch_threads": lambda v: None if v is None else _positive_int(v),
    "selfplay": _bool,
    "snapshot_every": _positive_int,
    "max_snapshots": _positive_int,
    "p_latest": _probability,
    "p_past": _probability,
    "p_heuristics": _probability,
    "heuristics": _specs,
    "heuristics_weights": lambda v: (
        None
        if v is None or (isinstance(v, list) and v and all(_is_number(w) and w >= 0 for w in v) and sum(v) > 0)
        else "null or a list of non-negative numbers, not all 0"
    ),
    "opponents_deterministic": _bool,
    "opponent_sampling": _one_of("uniform", "pfsp"),
    "pfsp_weighting": _one_of("hard", "linear", "variance", "even"),
    "pfsp_window": _positive_int,
    "exploiter_every": _non_negative_int,
    "exploiter_steps": _positive_int,
    "max_exploiters": _positive_int,
    "eval_every": _non_negative_int,
    "eval_games": _positive_int,
    "eval_opponents": _baselines,
    "eval_fill": lambda v: None if v is None else _spec(v),
    "eval_start": _bool,
    "eval_sample": _bool,
    "eval_workers": _positive_int,
    "best_by": _one_of("mean", "worst"),
    "save_every": _positive_int,
    "out": _string,
    "stages": lambda v: (
        None
        if v is None or (isinstance(v, list) and v and all(isinstance(x, dict) for x in v))
        else "a non-empty list of stages (mappings)"
    ),
}
FIELDS = tuple(f.name for f in dataclasses.fields(TrainConfig))
assert set(CHECKS) == set(FIELDS), "every field has a check"
# what picks the league's opponents, with its defaults: unused in pure self-play, which refuses another value
LEAGUE_OPPONENTS = {
    f.name: f.default
    for f in dataclasses.fields(TrainConfig)
    if f.name in ("p_latest", "p_past", "p_heuristics", "opponent_sampling", "pfsp_weighting", "pfsp_window",
                  "opponents_deterministic", "exploiter_every")
}  # fmt: skip


def _refuse_held_out(config: TrainConfig) -> None:
    """No field may name a held-out opponent (a variant of the heuristics, a checkpoint in ``checkpoints/heldout/``):
    strength is measured on opponents nobody trained against (docs/heldout.md)."""
    from revolution_env.agents.heldout import FOR_EVALUATION_ONLY, held_out_specs

    for name in FIELDS:  # every field, so that one added later (a population, stages) is checked too
        if name != "out" and (named := held_out_specs(getattr(config, name))):  # out: where the run writes
            raise ValueError(f"{name}: {named[0]!r} is held out: {FOR_EVALUATION_ONLY}")


def check(config: TrainConfig) -> None:
    """Raise ``ValueError`` naming the first bad field."""
    for name in FIELDS:
        value = getattr(config, name)
        expected = CHECKS[name](value)
        if expected is not None:
            shown = repr(value) if len(repr(value)) <= 60 else repr(value)[:57] + "..."
            raise ValueError(f"{name}: expected {expected}, got {shown}")
    _refuse_held_out(config)
    total = config.p_latest + config.p_past + config.p_heuristics
    if abs(total - 1.0) > 1e-6:
        raise ValueError(f"p_latest, p_past, p_heuristics: expected to sum to 1, got {total:g}")
    if config.exploiter_every and config.opponent_sampling != "pfsp":
        raise ValueError("exploiter_every: exploiters join the league under opponent_sampling: pfsp only")
    if config.players == 2 and config.bid_refunds is False:
        raise ValueError("bid_refunds: the two-player variant always plays with Bid Refunds")
    if config.action_mode == "tokens" and config.backend() != "vector":
        raise ValueError("action_mode: tokens trains on the batched engine only (env_backend: auto or vector)")
    if config.bid_head == "autoregressive" and config.action_mode != "bid":
        raise ValueError("bid_head: autoregressive is a head of the bid mode (the token mode builds a bid token by "
                         "token already)")  # fmt: skip
    if config.pretrain_selfplay and (config.action_mode != "bid" or config.backend() != "vector"):
        raise ValueError("pretrain_selfplay: records the bid mode on the batched engine only (action_mode: bid, "
                         "env_backend: auto or vector)")  # fmt: skip
    if config.first_edition and config.bid_refunds is False:
        raise ValueError("bid_refunds: the first edition always plays with Bid Refunds (D14)")
    if config.heuristics_weights is not None:
        if len(config.heuristics_weights) != len(config.heuristics):
            raise ValueError(f"heuristics_weights: expected one weight per heuristic ({len(config.heuristics)}), got "
                             f"{len(config.heuristics_weights)}")  # fmt: skip
        if config.opponent_sampling != "uniform":
            raise ValueError("heuristics_weights: they weigh the heuristics under opponent_sampling: uniform only")
    if config.stages is not None:
        stage_configs(config)  # each stage checked as a config of its own
    if config.algorithm == "mmd" and config.magnet == "imitation" and not config.pretrain_teacher:
        raise ValueError("magnet: imitation needs a pretrain_teacher (the magnet is the policy after imitating it)")
    if config.algorithm == "mmd" and config.magnet == "latest" and config.magnet_every == 0 and not config.init_from:
        raise ValueError(
            "magnet: latest needs magnet_every (or init_from: a fixed magnet of random weights is no magnet)"
        )
    if config.selfplay:
        if config.backend() != "vector":
            raise ValueError("selfplay: pure self-play runs on the batched engine only (env_backend: auto or vector)")
        league = [k for k, default in LEAGUE_OPPONENTS.items() if getattr(config, k) != default]
        if league:
            raise ValueError(
                f"selfplay: every seat is the learner, so the league's opponents are unused; drop {', '.join(league)} "
                "from the config, or set selfplay: false"
            )


STAGE_KEYS = ("name", "start")  # beside the fields a stage changes
PREVIOUS_STAGE = "<the previous stage>"  # a later stage's init_from until revolution_training.recipe runs it
STARTS = ("run", "best", "latest")  # what a stage takes of the one before (revolution_training.recipe)
NOT_IN_STAGES = ("stages", "out", "init_from")  # the recipe's own: init_from is the previous stage


def stage_configs(config: TrainConfig) -> list[tuple[str, str, TrainConfig]]:
    """``(name, start, config)`` of each stage of a recipe, checked (``ValueError`` naming the stage and key). A
    stage is the recipe's base with the stage's keys over it; a stage with ``selfplay: true`` leaves out the base's
    league settings (``LEAGUE_OPPONENTS``) it does not set itself."""
    out, names = [], set()
    base = {k: v for k, v in config.to_dict().items() if k != "stages"}
    for k, stage in enumerate(config.stages or []):
        name = stage.get("name")
        where = f"stages[{k}]" + (f" ({name})" if isinstance(name, str) else "")
        if not isinstance(name, str) or not re.fullmatch(r"[A-Za-z0-9_-]+", name):
            raise ValueError(f"{where}: name: expected letters, digits, - or _ (it names the stage's folder)")
        if name in names:
            raise ValueError(f"{where}: name: given to two stages")
        names.add(name)
        for key in stage:
            if key in NOT_IN_STAGES:
                raise ValueError(f"{where}: {key}: not a stage's to set (a recipe's stages start from each other)")
            if key not in FIELDS and key not in STAGE_KEYS:
                raise ValueError(f"{where}: {key}: unknown option")
        if "total_steps" not in stage:
            raise ValueError(f"{where}: total_steps: every stage says how long it trains")
        start = stage.get("start", "run")
        if k == 0 and "start" in stage:
            raise ValueError(f"{where}: start: the first stage starts from the recipe's init_from (or from scratch)")
        if start not in STARTS:
            raise ValueError(f"{where}: start: expected one of {', '.join(STARTS)}, got {start!r}")
        changes = {key: _yaml_float(v) if key in FLOAT_FIELDS else v for key, v in stage.items() if key in FIELDS}
        inherited = dict(base)
        if changes.get("selfplay"):  # a self-play stage has no league: the base's league settings are not its own
            inherited.update({key: default for key, default in LEAGUE_OPPONENTS.items() if key not in changes})
        if k > 0:  # starts from the stage before (the recipe writes the path when it runs it)
            inherited["init_from"] = f"{PREVIOUS_STAGE} ({out[-1][0]}, {start})"
        try:
            out.append((name, start, TrainConfig(**{**inherited, **changes})))
        except ValueError as exc:
            raise ValueError(f"{where}: {exc}") from None
    return out


FLOAT_FIELDS = tuple(f.name for f in dataclasses.fields(TrainConfig) if f.type == "float")


def _yaml_float(value: Any) -> Any:
    """YAML 1.1 reads ``3e-4`` (no dot) as a string: take it as the number it means."""
    if isinstance(value, str):
        try:
            return float(value)
        except ValueError:
            return value
    return value


def from_dict(data: dict[str, Any], source: str = "config") -> TrainConfig:
    """A config from a mapping; unknown keys or bad values raise ``ValueError`` starting with ``source``."""
    if not isinstance(data, dict):
        raise ValueError(f"{source}: expected a mapping of options, got {type(data).__name__}")
    for key in data:
        if key not in FIELDS:
            raise ValueError(f"{source}: {key}: unknown option (options: {', '.join(FIELDS)})")
    data = {k: _yaml_float(v) if k in FLOAT_FIELDS else v for k, v in data.items()}
    try:
        return TrainConfig(**data)
    except ValueError as exc:
        raise ValueError(f"{source}: {exc}") from None


class _UniqueKeyLoader(yaml.SafeLoader):
    """YAML's safe loader, refusing a key given twice (YAML would silently keep the last)."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen: dict[Any, int] = {}
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=deep)
            if key in seen:
                raise yaml.constructor.ConstructorError(
                    None, None, f"{key}: given twice (lines {seen[key] + 1} and {key_node.start_mark.line + 1})",
                    key_node.start_mark,
                )  # fmt: skip
            seen[key] = key_node.start_mark.line
        return super().construct_mapping(node, deep=deep)


def load_config(path: str | Path) -> TrainConfig:
    """Read a YAML config; every key is a :class:`TrainConfig` field, and missing keys take the defaults."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ValueError(f"{path}: cannot read the config: {exc.strerror or exc}") from None
    try:
        data = yaml.load(text, Loader=_UniqueKeyLoader)  # noqa: S506 - a SafeLoader that refuses duplicate keys
    except yaml.YAMLError as exc:
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        mark = getattr(exc, "problem_mark", None)
        where = f" (line {mark.line + 1}, column {mark.column + 1})" if mark is not None else ""
        raise ValueError(f"{path}: not valid YAML: {problem}{where}") from None
    if data is None:  # an empty file is a mistake (a failed edit, a wrong path), not "all defaults"
        raise ValueError(f"{path}: the config is empty (give at least one key, e.g. players: 3)")
    return from_dict(data, str(path))


def dump_config(config: TrainConfig) -> str:
    """The config as YAML (``load_config`` reads it back to an equal config)."""
    return yaml.safe_dump(config.to_dict(), sort_keys=False)
