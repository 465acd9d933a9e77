"""The training configuration: ``TrainConfig``, a dataclass in sections, one docstring per field, read from YAML::

    from revolution_training.config import load_config
    config = load_config("configs/default.yaml")   # unknown keys and bad values raise ValueError naming the key
    config.env_options()                          # the options every environment and agent of the run is built with
    config.league.p_latest                        # a section's field
    config.replace(total_steps=10_000, league={"p_latest": 0.0})   # a checked copy; a section changes key by key

A config has the run's own keys at the top (:class:`TrainConfig`'s fields: ``total_steps``, ``seed``, ``out``,
...) and a mapping per section, each a dataclass of its own::

    total_steps: 125_000
    game:
      players: 3
    ppo:
      learning_rate: 2.5e-4
    league:
      heuristics: [random, value]

==============  ===========================  ==================================================================
section         dataclass                    what it sets
==============  ===========================  ==================================================================
``game``        :class:`GameConfig`          the game the learner plays and the reward it is paid
``policy``      :class:`PolicyConfig`        the learner's network and its action (a new policy head goes here)
``ppo``         :class:`PPOConfig`           PPO's rollouts and updates
``imitation``   :class:`ImitationConfig`     behaviour cloning of a teacher before PPO
``league``      :class:`LeagueConfig`        the opponents: snapshots, heuristics, how seats are drawn (PFSP)
``selfplay``    :class:`SelfPlayConfig`      pure self-play, every seat the learner, instead of a league
``mmd``         :class:`MMDConfig`           Magnetic Mirror Descent's regularisers (``algorithm: mmd``)
``exploiters``  :class:`ExploitersConfig`    best responses to the learner trained during the run, then played
``evaluation``  :class:`EvaluationConfig`    the evaluations during the run, and which one ``best.pt`` keeps
==============  ===========================  ==================================================================

A PSRO config adds a ``psro:`` section of its own (``revolution_training.psro.PsroConfig``).

**A new field** goes into the section of the part of training it changes, with a docstring (the line below it) and
a check in :data:`CHECKS` under ``section.field``; a test fails on a field without either. Code reads it as
``config.section.field``; a key at the top that belongs to a section is refused with its place. A new section is a
dataclass like these, an entry in :data:`SECTIONS` and a field of :class:`TrainConfig`.

**The flat form.** Configs were once one flat mapping (``magnet_coef: 0.1`` where ``mmd: {magnet_coef: 0.1}`` is
now); run folders (``state.json``, a recipe's ``recipe.yaml``), PSRO folders and checkpoints written then store it.
``from_dict(..., stored=True)`` and ``load_config(..., stored=True)`` read those as they were written
(:func:`sectioned`, :data:`FLAT`); a config file in that form is refused in one line naming the new place of its
first key (``magnet_coef is now mmd.magnet_coef``).
"""

from __future__ import annotations

import dataclasses
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from revolution_env.env.core import REWARDS
from revolution_env.env.modes import ACTION_MODES

ACTIVATIONS = ("tanh", "relu")
MIRROR = "self"  # in evaluation.opponents: a table of the learner, a copy of it and evaluation.fill


# --- the sections ------------------------------------------------------------------------------------------------


@dataclass
class GameConfig:
    """``game:``: the game the learner plays (the environment's options) and the reward it is paid."""

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


@dataclass
class PolicyConfig:
    """``policy:``: the learner's network and the form of its action. A new policy head's settings go here."""

    action_mode: str = "bid"
    """The learner's action: ``bid`` (a whole bid a step, the masked MultiDiscrete, independent per token) or
    ``tokens`` (one token of the bid a step, a Discrete action: the policy is autoregressive over a bid, so it can
    mix over whole bids; a bid takes as many steps as the tokens held). Opponents always bid whole bids; a
    token-mode checkpoint plays in any game. ``tokens`` needs the vector backend."""
    bid_head: str = "factorised"
    """The bid mode's action head: ``factorised`` (each token's target drawn independently: a product distribution)
    or ``autoregressive`` (each token's target conditioned on the tokens already placed, in one step of the env:
    the policy can put its mass on a few whole bids; ``revolution_training.distributions.AutoregressiveBidHead``).
    ``init_from`` or an ``mmd.magnet`` may name a factorised policy for an autoregressive run (it starts as that
    policy); not the other way round."""
    net_arch: list[int] = field(default_factory=lambda: [128, 128])
    """Hidden layer sizes of the policy and of the value network (separate networks of the same shape)."""
    activation: str = "tanh"
    """Activation of the hidden layers: ``tanh`` or ``relu``."""


@dataclass
class PPOConfig:
    """``ppo:``: PPO's rollouts and updates (MaskablePPO's arguments; MMD's too, beside its own in ``mmd``)."""

    n_steps: int = 256
    """Steps per environment per rollout (a PPO update sees ``n_envs * n_steps`` steps)."""
    batch_size: int = 128
    """Minibatch size of the PPO updates."""
    n_epochs: int = 4
    """Passes over each rollout."""
    learning_rate: float = 3e-4
    """Adam's step size (at the start, with ``lr_schedule: linear``)."""
    lr_schedule: str = "constant"
    """``constant`` or ``linear``: the learning rate falls linearly to 0 at ``total_steps`` (annealed, as the MMD
    papers train)."""
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


@dataclass
class ImitationConfig:
    """``imitation:``: behaviour cloning of a teacher before PPO starts, in a new run (``revolution_training.pretrain``;
    the fields were ``pretrain_*``)."""

    teacher: str | None = None
    """An agent spec (a heuristic's name, a checkpoint) the learner imitates before PPO starts; None: no
    imitation."""
    steps: int = 50_000
    """Teacher decisions recorded for the imitation (whole games; from the learner's seat against the league's
    ``heuristics``, or every seat with ``selfplay``)."""
    selfplay: bool = False
    """Record the teacher in every seat of games it plays against itself (``selfplay_vector_env``) instead of in the
    learner's seat against the league's ``heuristics``: every decision at the table is one of its own, so a
    recording of as many decisions takes fewer games (the bid mode on the batched engine only)."""
    epochs: int = 10
    """Passes over the recorded decisions (minibatches of ``batch_size``)."""
    batch_size: int | None = None
    """Minibatch of the imitation (None: ``ppo.batch_size``)."""
    learning_rate: float | None = None
    """Learning rate of the imitation (None: ``ppo.learning_rate``); PPO's is set back after it."""


@dataclass
class LeagueConfig:
    """``league:``: the learner's opponents, frozen snapshots of it and ``heuristics``, and how each opponent seat is
    drawn from them (``revolution_training.league``)."""

    heuristics: list[str] = field(default_factory=lambda: ["random"])
    """Agent specs (``random``, a heuristic's name, a checkpoint file) that fill the league besides snapshots;
    until the first snapshot exists, every opponent comes from here."""
    heuristics_weights: list[float] | None = None
    """The chances of the ``heuristics`` when one is drawn (``opponent_sampling: uniform``), one per entry; None:
    uniform. ``revolution psro`` sets them to its meta-strategy."""
    snapshot_every: int = 10_000
    """Add a frozen copy of the learner to the league every this many steps."""
    max_snapshots: int = 10
    """Snapshots kept in the league: past the cap the oldest goes, except the first, which always stays."""
    opponent_sampling: str = "uniform"
    """How opponent seats are drawn: ``uniform`` (the ``p_*`` chances below) or ``pfsp`` (prioritized fictitious
    self-play: ``p_latest`` self-play, the rest over the whole league weighted towards the members the learner loses
    to)."""
    p_latest: float = 0.4
    """Per opponent seat, the chance of the latest snapshot (once one exists)."""
    p_past: float = 0.3
    """Per opponent seat, the chance of a uniformly drawn older snapshot (the latest when it is the only one)."""
    p_heuristics: float = 0.3
    """Per opponent seat, the chance of a uniformly drawn agent of ``heuristics``; the three chances sum to 1."""
    pfsp_weighting: str = "hard"
    """PFSP's priority of a member the learner wins against at rate p: ``hard`` (1-p)^2, ``linear`` 1-p,
    ``variance`` p(1-p), ``even`` 1."""
    pfsp_window: int = 100
    """The learner's last games against a member that its PFSP win rate counts."""
    opponents_deterministic: bool = False
    """Whether snapshot opponents take their most likely action (False: they sample, as the learner does)."""
    learner_seats: int = 1
    """Seats of every game the learner itself takes, drawn per game, from 1 to ``game.players`` - 1: each a row of
    PPO's env, all decided in one forward pass (``vector_env``'s ``learner_seats``), a row that waits while another
    of its game's learner seats decides stepping with the no-op; the league draws the other seats (``slot`` 0 to
    ``players - learner_seats - 1``). 2 or more puts copies of the current policy at every table, which a bot
    trained beside other bots alone never meets and can lose nearly every game of. The ``n_envs`` games make
    ``n_envs * learner_seats`` rows, whose steps all count. Every seat the learner: ``selfplay.enabled``. More than
    1 needs the batched engine."""


@dataclass
class SelfPlayConfig:
    """``selfplay:``: pure self-play, every seat of every game the learner, instead of a league."""

    enabled: bool = False
    """Every seat of every game is the learner, decided in one forward pass (``revolution_env.selfplay_vector_env``),
    so every decision is a learner step. The ``n_envs`` games make ``n_envs * players`` rows, each an environment
    of PPO's whose steps count, a row that waits while another seat decides (Guy, Spy, Apothecary) stepping with
    the no-op. The league's opponents are then unused: a config that also sets the league's ``p_latest``,
    ``p_past``, ``p_heuristics``, ``opponent_sampling``, ``pfsp_*``, ``opponents_deterministic``,
    ``learner_seats`` or ``exploiters.every`` is refused (:data:`LEAGUE_OPPONENTS`); the league's ``heuristics``
    are only the evaluation's baselines (without ``evaluation.opponents``) and the imitation's opponents, and
    snapshots are still saved but never played. Needs the batched engine."""


@dataclass
class MMDConfig:
    """``mmd:``: Magnetic Mirror Descent (``algorithm: mmd``, ``revolution_training.mmd``): PPO regularised towards a
    magnet policy and towards its previous self, which converges towards an equilibrium in self-play instead of
    chasing its last opponent."""

    magnet: str = "uniform"
    """The magnet: ``uniform`` (over the legal actions of each head: a per-head entropy bonus), ``imitation`` (the
    policy right after imitating ``imitation.teacher``), ``latest`` (a frozen copy of the policy, refreshed every
    ``magnet_every`` steps) or a policy checkpoint ``.pt``."""
    magnet_coef: float = 0.05
    """Weight of ``KL(policy || magnet)`` (the papers' tuned settings: 0.05 to 0.1)."""
    kl_coef: float = 0.05
    """Weight of ``KL(policy || policy before the update)``, the mirror-descent step (0.025 to 0.1)."""
    magnet_every: int = 0
    """With ``magnet: latest``: learner steps between two refreshes of the magnet (0: it stays the policy the run
    started with)."""


@dataclass
class ExploitersConfig:
    """``exploiters:``: AlphaStar's main exploiters, best responses to the learner trained during the run and added
    to the league, where PFSP weighs them like every member (they find the learner's weaknesses, and the learner
    then trains against them)."""

    every: int = 0
    """Every this many steps, pause and train an exploiter: a fresh best response to the learner's latest snapshot
    (``revolution exploit``'s method, ``steps`` steps, in ``<out>/exploiters/``), then add it to the league. 0: no
    exploiters. Needs the league's ``opponent_sampling: pfsp``."""
    steps: int = 50_000
    """Training steps of each exploiter."""
    keep: int = 3
    """Exploiters kept in the league: past the cap the oldest goes."""


@dataclass
class EvaluationConfig:
    """``evaluation:``: the learner against each baseline during the run, and which evaluation ``best.pt`` keeps."""

    every: int = 20_000
    """Evaluate the learner against each baseline every this many steps (0: never)."""
    games: int = 30
    """Games per baseline in each evaluation (rotated over the seats)."""
    opponents: list[str] | None = None
    """Baselines, evaluated one at a time (None: the league's ``heuristics``). ``self`` is a mirror table: the
    learner, a copy of it, and ``fill`` in the other seats (two copies of one policy fight over the same
    characters; a policy that only ever met other bots can lose nearly every game there, even beside ``random``)."""
    fill: str | None = "random"
    """Who takes the seats beyond the learner and the baseline with 3 or 4 players (None: more copies of the
    baseline; identical bots tend to tie each other's bids, which flatters the learner). With ``random`` the
    evaluation is in effect a duel with a weak third party: 0.5 is parity."""
    start: bool = True
    """With ``imitation.teacher``, evaluate the imitation too, at step 0, so that ``best.pt`` is never a policy that
    scored below the run's start (off in a best response of ``revolution exploit``: its protocol measures what the
    training found)."""
    sample: bool = False
    """Evaluate the policy sampling its actions (the spec ``PATH:sample``) instead of its argmax: for a policy meant
    to mix (an equilibrium is a mixed strategy; a token-mode policy's argmax is taken token by token, not over
    whole bids). ``best.pt`` is picked by these evaluations either way, and the run's checkpoints say so: their
    plain spec plays them sampling (``PATH:argmax`` takes the argmax)."""
    workers: int = 1
    """Processes the evaluation plays its games in."""
    best_by: str = "mean"
    """Which evaluation ``best.pt`` keeps: the highest ``mean`` win rate over the baselines, or the highest
    ``worst`` one (the lowest of its win rates: a robust bot's measure, as the gauntlet's headline is); with
    ``start``, the imitation's evaluation at step 0 among them."""


# --- the config --------------------------------------------------------------------------------------------------


@dataclass
class TrainConfig:
    """Everything a self-play run depends on: the run's own fields, then one field per section. Steps count the
    learner's own decisions (environment steps of the vectorised self-play env), summed over all parallel
    environments. A section may be given as a mapping of its fields (``league={"p_latest": 0.2}``); every value is
    checked (``ValueError`` naming the first bad field as ``section.field``)."""

    algorithm: str = "ppo"
    """``ppo``: sb3-contrib's MaskablePPO; ``mmd``: Magnetic Mirror Descent, PPO regularised towards a magnet policy
    and towards its previous self (the ``mmd`` section)."""
    total_steps: int = 200_000
    """Learner steps to train for in all (a resumed run continues to this count)."""
    n_envs: int = 2
    """Parallel self-play games: the games of one batched vector env (``env_backend: vector``) or subprocesses
    (``subprocess``; one runs in the main process)."""
    env_backend: str = "auto"
    """``vector``: the batched engine (``revolution_env.vector_env``) steps all games in one process, random and
    snapshot opponents in batch, heuristics game by game; ``subprocess``: one scalar self-play env per process;
    ``auto``: ``vector`` (the batched engine plays every variant, the first edition included)."""
    seed: int = 0
    """Seeds torch, numpy, every environment's games and seats, and the league's opponent sampling."""
    device: str = "cpu"
    """Torch device for training (``cpu``, ``cuda``, ``auto``); opponents and checkpoints always run on the CPU."""
    torch_threads: int | None = None
    """Torch CPU threads of PPO's updates (and of the imitation); None: the user's own choice for torch where there
    is one (``OMP_NUM_THREADS``, ``MKL_NUM_THREADS``, or ``torch.set_num_threads`` before the run), else one. A
    minibatch of this network is thousands of small operations, each an OpenMP region whose threads spin at its
    end until all have finished: on quiet cores more threads are a little faster, but beside a busy process the
    thread that waits spins while the other waits for a core, and one thread is much faster (``scripts/benchmark.py
    --train ... --load 1`` measures both; the figures are in the commit that made one thread the default). The
    rollouts' forward passes run on one thread whatever this is (the opponents' threads need the cores then). The
    updates' sums depend on the thread count."""
    init_from: str | None = None
    """Start from trained weights instead of random ones: a run folder (its last save: the policy and the value
    network) or a policy checkpoint ``.pt`` (the policy only; the value network starts fresh). The game options
    must match the run's, and so must the policy's ``net_arch`` and ``activation``; the step count starts again at
    0."""
    save_every: int = 10_000
    """Save the model, the policy, the league and the run state every this many steps."""
    out: str = "runs/default"
    """Output folder (checkpoints, league, TensorBoard logs); ``--out`` overrides it."""

    game: GameConfig = field(default_factory=GameConfig)
    """The game and the reward (:class:`GameConfig`)."""
    policy: PolicyConfig = field(default_factory=PolicyConfig)
    """The learner's network and action (:class:`PolicyConfig`)."""
    ppo: PPOConfig = field(default_factory=PPOConfig)
    """PPO's rollouts and updates (:class:`PPOConfig`)."""
    imitation: ImitationConfig = field(default_factory=ImitationConfig)
    """Imitating a teacher before PPO (:class:`ImitationConfig`)."""
    league: LeagueConfig = field(default_factory=LeagueConfig)
    """The opponents (:class:`LeagueConfig`)."""
    selfplay: SelfPlayConfig = field(default_factory=SelfPlayConfig)
    """Pure self-play instead of a league (:class:`SelfPlayConfig`)."""
    mmd: MMDConfig = field(default_factory=MMDConfig)
    """MMD's magnet and regularisers (:class:`MMDConfig`)."""
    exploiters: ExploitersConfig = field(default_factory=ExploitersConfig)
    """Exploiters trained during the run (:class:`ExploitersConfig`)."""
    evaluation: EvaluationConfig = field(default_factory=EvaluationConfig)
    """Evaluations during the run (:class:`EvaluationConfig`)."""

    stages: list[dict[str, Any]] | None = None
    """A recipe's stages, trained one after another (``revolution_training.recipe``): each a mapping with a
    ``name``, its ``total_steps``, ``start`` (after the first: ``run``, ``best`` or ``latest``, what it takes of
    the previous stage) and the keys it changes, in the same form (``ppo: {learning_rate: 1.0e-4}`` changes that
    key alone); the rest of the config is every stage's base. None: one run."""

    def __post_init__(self) -> None:
        for name, kind in SECTIONS.items():
            value = getattr(self, name)
            if isinstance(value, Mapping):
                setattr(self, name, _section(name, value))
            elif not isinstance(value, kind):
                keys = ", ".join(f.name for f in dataclasses.fields(kind))
                raise ValueError(f"{name}: expected a section, a mapping of its options ({keys}), got {_shown(value)}")
        check(self)

    def env_options(self) -> dict[str, Any]:
        """The environment options of the run (what ``revolution_env.raw_env`` and every agent take)."""
        game = self.game
        return {
            "players": game.players,
            "bid_refunds": game.bid_refunds,
            "area_control_bonus": game.area_control_bonus,
            "first_edition": game.first_edition,
            "max_rounds": game.max_rounds,
            "board": game.board,
            "reward": game.reward,
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
        """The evaluation's baselines: ``evaluation.opponents``, else the league's ``heuristics``."""
        opponents = self.evaluation.opponents
        return list(opponents if opponents is not None else self.league.heuristics)

    def plays_heuristic_bots(self) -> bool:
        """Whether the run's teacher, league or evaluations name a heuristic bot (value, bargain, area: the
        compiled bots of ``revolution_env.agents.compiled``)."""
        from revolution_env.agents.compiled import STYLES

        specs = [self.imitation.teacher, *self.league.heuristics, *self.baselines(), self.evaluation.fill]
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
        """The config as the YAML's mapping: the run's fields, then one mapping per section."""
        return dataclasses.asdict(self)

    def replace(self, **changes: Any) -> TrainConfig:
        """A checked copy with ``changes``: the run's fields by name, a section as a mapping of the fields it changes
        (``replace(seed=1, league={"p_latest": 0.0})``) or as a whole section."""
        changes = {k: dataclasses.asdict(v) if k in SECTIONS and dataclasses.is_dataclass(v) else v
                   for k, v in changes.items()}  # fmt: skip
        return _build(merge(self.to_dict(), changes))


SECTIONS: dict[str, type] = {
    "game": GameConfig,
    "policy": PolicyConfig,
    "ppo": PPOConfig,
    "imitation": ImitationConfig,
    "league": LeagueConfig,
    "selfplay": SelfPlayConfig,
    "mmd": MMDConfig,
    "exploiters": ExploitersConfig,
    "evaluation": EvaluationConfig,
}
RUN_FIELDS = tuple(f.name for f in dataclasses.fields(TrainConfig) if f.name not in SECTIONS)  # the top's own
FIELDS = (*RUN_FIELDS, *(f"{s}.{f.name}" for s, kind in SECTIONS.items() for f in dataclasses.fields(kind)))
"""Every field as the YAML places it: ``total_steps``, ``game.players``, ..."""
# The flat form: every key of a section in the one mapping configs were before the sections, and its place now.
# Fixed (nothing writes that form any more): a field added to a section has no flat key.
FLAT = {
    **{k: f"game.{k}" for k in ("players", "bid_refunds", "area_control_bonus", "first_edition", "max_rounds", "board",
                                "reward", "truncated_reward")},
    **{k: f"policy.{k}" for k in ("action_mode", "bid_head", "net_arch", "activation")},
    **{k: f"ppo.{k}" for k in ("n_steps", "batch_size", "n_epochs", "learning_rate", "lr_schedule", "gamma",
                               "gae_lambda", "ent_coef", "vf_coef", "clip_range", "max_grad_norm")},
    **{f"pretrain_{k}": f"imitation.{k}" for k in ("teacher", "steps", "selfplay", "epochs", "batch_size",
                                                   "learning_rate")},
    **{k: f"league.{k}" for k in ("heuristics", "heuristics_weights", "snapshot_every", "max_snapshots",
                                  "opponent_sampling", "p_latest", "p_past", "p_heuristics", "pfsp_weighting",
                                  "pfsp_window", "opponents_deterministic")},
    "selfplay": "selfplay.enabled",
    **{k: f"mmd.{k}" for k in ("magnet", "magnet_coef", "kl_coef", "magnet_every")},
    "exploiter_every": "exploiters.every",
    "exploiter_steps": "exploiters.steps",
    "max_exploiters": "exploiters.keep",
    **{f"eval_{k}": f"evaluation.{k}" for k in ("every", "games", "opponents", "fill", "start", "sample", "workers")},
    "best_by": "evaluation.best_by",
}  # fmt: skip


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


def _non_negative_number(v: Any) -> str | None:
    return None if _is_number(v) and v >= 0 else "a non-negative number"


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


def _optional(check_value: Any) -> Any:
    def check_optional(v: Any) -> str | None:
        return None if v is None else check_value(v)

    return check_optional


def _baselines(v: Any) -> str | None:
    """``evaluation.opponents``: agent specs, or ``self`` (a mirror table: ``EvaluationConfig.opponents``)."""
    if isinstance(v, list) and MIRROR in v:
        v = [s for s in v if s != MIRROR] or None
    return _optional(_specs)(v)


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


def _weights(v: Any) -> str | None:
    if v is None or (isinstance(v, list) and v and all(_is_number(w) and w >= 0 for w in v) and sum(v) > 0):
        return None
    return "null or a list of non-negative numbers, not all 0"


def _stages(v: Any) -> str | None:
    if v is None or (isinstance(v, list) and v and all(isinstance(x, dict) for x in v)):
        return None
    return "a non-empty list of stages (mappings)"


CHECKS = {
    "algorithm": _one_of("ppo", "mmd"),
    "total_steps": _positive_int,
    "n_envs": _positive_int,
    "env_backend": _one_of("auto", "vector", "subprocess"),
    "seed": _non_negative_int,
    "device": _device,
    "torch_threads": _optional(_positive_int),
    "init_from": _optional(_string),
    "save_every": _positive_int,
    "out": _string,
    "stages": _stages,
    "game.players": _one_of(2, 3, 4),
    "game.bid_refunds": _optional_bool,
    "game.area_control_bonus": _bool,
    "game.first_edition": _bool,
    "game.max_rounds": _positive_int,
    "game.board": _board,
    "game.reward": _one_of(*REWARDS),
    "game.truncated_reward": lambda v: None if v is None or _is_number(v) else "a number, or null (the game's own)",
    "policy.action_mode": _one_of(*ACTION_MODES),
    "policy.bid_head": _one_of("factorised", "autoregressive"),
    "policy.net_arch": _net_arch,
    "policy.activation": _one_of(*ACTIVATIONS),
    "ppo.n_steps": _positive_int,
    "ppo.batch_size": _positive_int,
    "ppo.n_epochs": _positive_int,
    "ppo.learning_rate": _positive_number,
    "ppo.lr_schedule": _one_of("constant", "linear"),
    "ppo.gamma": _fraction,
    "ppo.gae_lambda": _fraction,
    "ppo.ent_coef": _non_negative_number,
    "ppo.vf_coef": _positive_number,
    "ppo.clip_range": _positive_number,
    "ppo.max_grad_norm": _positive_number,
    "imitation.teacher": _optional(_spec),
    "imitation.steps": _positive_int,
    "imitation.selfplay": _bool,
    "imitation.epochs": _positive_int,
    "imitation.batch_size": _optional(_positive_int),
    "imitation.learning_rate": _optional(_positive_number),
    "league.heuristics": _specs,
    "league.heuristics_weights": _weights,
    "league.snapshot_every": _positive_int,
    "league.max_snapshots": _positive_int,
    "league.opponent_sampling": _one_of("uniform", "pfsp"),
    "league.p_latest": _probability,
    "league.p_past": _probability,
    "league.p_heuristics": _probability,
    "league.pfsp_weighting": _one_of("hard", "linear", "variance", "even"),
    "league.pfsp_window": _positive_int,
    "league.opponents_deterministic": _bool,
    "league.learner_seats": _positive_int,
    "selfplay.enabled": _bool,
    "mmd.magnet": _magnet,
    "mmd.magnet_coef": _non_negative_number,
    "mmd.kl_coef": _non_negative_number,
    "mmd.magnet_every": _non_negative_int,
    "exploiters.every": _non_negative_int,
    "exploiters.steps": _positive_int,
    "exploiters.keep": _positive_int,
    "evaluation.every": _non_negative_int,
    "evaluation.games": _positive_int,
    "evaluation.opponents": _baselines,
    "evaluation.fill": _optional(_spec),
    "evaluation.start": _bool,
    "evaluation.sample": _bool,
    "evaluation.workers": _positive_int,
    "evaluation.best_by": _one_of("mean", "worst"),
}
"""The check of every field (``section.field``): None for a good value, else what was expected."""
assert set(CHECKS) == set(FIELDS), "every field has a check"
LEAGUE_OPPONENTS = {
    "league": {k: getattr(LeagueConfig(), k) for k in ("opponent_sampling", "p_latest", "p_past", "p_heuristics",
                                                       "pfsp_weighting", "pfsp_window", "opponents_deterministic",
                                                       "learner_seats")},
    "exploiters": {"every": ExploitersConfig().every},
}  # fmt: skip
"""What picks the league's opponents, with its defaults (a config's form: ``config.replace(**LEAGUE_OPPONENTS)``
sets them back): unused in pure self-play, which refuses another value."""


def _shown(value: Any) -> str:
    return repr(value) if len(repr(value)) <= 60 else repr(value)[:57] + "..."


def _refuse_held_out(config: TrainConfig) -> None:
    """No field may name a held-out opponent (a variant of the heuristics, a checkpoint in ``checkpoints/heldout/``):
    strength is measured on opponents nobody trained against (docs/heldout.md)."""
    from revolution_env.agents.heldout import FOR_EVALUATION_ONLY, held_out_specs

    for name, value in dotted(config.to_dict()).items():  # every field, so that one added later is checked too
        if name != "out" and (named := held_out_specs(value)):  # out: where the run writes
            raise ValueError(f"{name}: {named[0]!r} is held out: {FOR_EVALUATION_ONLY}")


def check(config: TrainConfig) -> None:
    """Raise ``ValueError`` naming the first bad field (``section.field``)."""
    for name, value in dotted(config.to_dict()).items():
        expected = CHECKS[name](value)
        if expected is not None:
            raise ValueError(f"{name}: expected {expected}, got {_shown(value)}")
    _refuse_held_out(config)
    game, league, imitation, mmd = config.game, config.league, config.imitation, config.mmd
    total = league.p_latest + league.p_past + league.p_heuristics
    if abs(total - 1.0) > 1e-6:
        raise ValueError(f"league.p_latest, league.p_past, league.p_heuristics: expected to sum to 1, got {total:g}")
    if league.learner_seats >= game.players:
        raise ValueError(f"league.learner_seats: expected 1 to {game.players - 1}, the seats of a "
                         f"{game.players}-player game less one for the league, got {league.learner_seats} (every "
                         "seat the learner: selfplay.enabled: true)")  # fmt: skip
    if league.learner_seats > 1 and config.backend() != "vector":
        raise ValueError("league.learner_seats: more than one learner seat runs on the batched engine only "
                         "(env_backend: auto or vector)")  # fmt: skip
    if config.exploiters.every and league.opponent_sampling != "pfsp":
        raise ValueError("exploiters.every: exploiters join the league under league.opponent_sampling: pfsp only")
    if game.players == 2 and game.bid_refunds is False:
        raise ValueError("game.bid_refunds: the two-player variant always plays with Bid Refunds")
    if config.policy.action_mode == "tokens" and config.backend() != "vector":
        raise ValueError("policy.action_mode: tokens trains on the batched engine only (env_backend: auto or vector)")
    if config.policy.bid_head == "autoregressive" and config.policy.action_mode != "bid":
        raise ValueError("policy.bid_head: autoregressive is a head of the bid mode (the token mode builds a bid token "
                         "by token already)")  # fmt: skip
    if imitation.selfplay and (config.policy.action_mode != "bid" or config.backend() != "vector"):
        raise ValueError("imitation.selfplay: records the bid mode on the batched engine only (policy.action_mode: "
                         "bid, env_backend: auto or vector)")  # fmt: skip
    if game.first_edition and game.bid_refunds is False:
        raise ValueError("game.bid_refunds: the first edition always plays with Bid Refunds (D14)")
    if league.heuristics_weights is not None:
        if len(league.heuristics_weights) != len(league.heuristics):
            raise ValueError(f"league.heuristics_weights: expected one weight per heuristic "
                             f"({len(league.heuristics)}), got {len(league.heuristics_weights)}")  # fmt: skip
        if league.opponent_sampling != "uniform":
            raise ValueError("league.heuristics_weights: they weigh the heuristics under league.opponent_sampling: "
                             "uniform only")  # fmt: skip
    if config.stages is not None:
        stage_configs(config)  # each stage checked as a config of its own
    if config.algorithm == "mmd" and mmd.magnet == "imitation" and not imitation.teacher:
        raise ValueError(
            "mmd.magnet: imitation needs an imitation.teacher (the magnet is the policy after imitating it)"
        )
    if config.algorithm == "mmd" and mmd.magnet == "latest" and mmd.magnet_every == 0 and not config.init_from:
        raise ValueError(
            "mmd.magnet: latest needs mmd.magnet_every (or init_from: a fixed magnet of random weights is no magnet)"
        )
    if config.selfplay.enabled:
        if config.backend() != "vector":
            raise ValueError(
                "selfplay.enabled: pure self-play runs on the batched engine only (env_backend: auto or vector)"
            )
        fields = dotted(config.to_dict())
        league_set = [k for k, default in dotted(LEAGUE_OPPONENTS).items() if fields[k] != default]
        if league_set:
            raise ValueError(
                f"selfplay.enabled: every seat is the learner, so the league's opponents are unused; drop "
                f"{', '.join(league_set)} from the config, or set selfplay.enabled: false"
            )


# --- the form: sections, the flat form, stages -------------------------------------------------------------------


def dotted(data: Mapping[str, Any]) -> dict[str, Any]:
    """A config's mapping with each section's fields as ``section.field`` (``{"game": {"players": 3}}`` ->
    ``{"game.players": 3}``); other values (stages' lists among them) as they are."""
    out: dict[str, Any] = {}
    for key, value in data.items():
        if key in SECTIONS and isinstance(value, Mapping):
            out.update({f"{key}.{k}": v for k, v in value.items()})
        else:
            out[key] = value
    return out


def merge(base: Mapping[str, Any], changes: Mapping[str, Any]) -> dict[str, Any]:
    """``base`` with ``changes`` over it, a section's mapping merged key by key (a config's or a stage's form)."""
    out = dict(base)
    for key, value in changes.items():
        if isinstance(value, Mapping) and isinstance(out.get(key), Mapping):
            out[key] = merge(out[key], value)
        else:
            out[key] = value
    return out


def _is_flat(data: Mapping[str, Any]) -> bool:
    """A mapping in the flat form: a key of it and no section as a mapping."""
    return any(k in FLAT for k in data) and not any(isinstance(data.get(s), Mapping) for s in SECTIONS)


def _from_flat(data: Mapping[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in data.items():
        if key in FLAT:
            section, _, name = FLAT[key].partition(".")
            out.setdefault(section, {})[name] = value
        else:
            out[key] = value
    return out


def sectioned(data: Mapping[str, Any]) -> dict[str, Any]:
    """A config's mapping as stored before the sections (one flat mapping, its stages flat too) in the form of today;
    one already in sections as it is. Nothing is checked (:func:`from_dict` checks)."""
    if not isinstance(data, Mapping) or not _is_flat(data):
        return dict(data) if isinstance(data, Mapping) else data
    out = _from_flat(data)
    if isinstance(out.get("stages"), list):
        out["stages"] = [_from_flat(s) if isinstance(s, Mapping) else s for s in out["stages"]]
    return out


def _misplaced(key: str, value: Any) -> str:
    """Why ``key`` is refused at the top of a config (or of a stage): a key of the flat form names its place."""
    if key in FLAT and not (key in SECTIONS and isinstance(value, Mapping)):
        return f"{key} is now {FLAT[key]}"
    places = [f"{s}.{key}" for s, kind in SECTIONS.items() if key in {f.name for f in dataclasses.fields(kind)}]
    if places:
        return f"{key}: not a key at the top; a field of {' and '.join(places)}"
    return f"{key}: unknown option (at the top: {', '.join(RUN_FIELDS)}; the sections: {', '.join(SECTIONS)})"


FLOAT_TYPES = ("float", "float | None")  # the annotations, as strings (annotations are postponed)
FLOAT_FIELDS = tuple(
    f"{s}.{f.name}" for s, kind in SECTIONS.items() for f in dataclasses.fields(kind) if f.type in FLOAT_TYPES
)


def _yaml_float(value: Any) -> Any:
    """YAML 1.1 reads ``3e-4`` (no dot) as a string: take it as the number it means."""
    if isinstance(value, str):
        try:
            return float(value)
        except ValueError:
            return value
    return value


def _section(name: str, data: Mapping[str, Any]) -> Any:
    """The section ``name`` from a mapping of its fields; an unknown key is a ``ValueError`` naming the section's."""
    kind = SECTIONS[name]
    names = [f.name for f in dataclasses.fields(kind)]
    for key in data:
        if key not in names:
            raise ValueError(f"{name}.{key}: unknown option (the {name} section's: {', '.join(names)})")
    return kind(**{k: _yaml_float(v) if f"{name}.{k}" in FLOAT_FIELDS else v for k, v in data.items()})


def _build(data: Mapping[str, Any]) -> TrainConfig:
    """A config from its mapping, every key at the top a run field or a section (``ValueError`` otherwise)."""
    misplaced = [
        key
        for key, value in data.items()
        if key not in RUN_FIELDS and not (key in SECTIONS and (isinstance(value, Mapping) or key not in FLAT))
    ]  # a section's name with a value that is no mapping: selfplay: true, of the flat form
    if misplaced:
        more = len([k for k in misplaced[1:] if k in FLAT])
        also = (
            f" (and {more} more {'key' if more == 1 else 'keys'} of the flat form: each in its section)" if more else ""
        )
        raise ValueError(_misplaced(misplaced[0], data[misplaced[0]]) + also)
    return TrainConfig(**data)


STAGE_KEYS = ("name", "start")  # beside the fields a stage changes
PREVIOUS_STAGE = "<the previous stage>"  # a later stage's init_from until revolution_training.recipe runs it
STARTS = ("run", "best", "latest")  # what a stage takes of the one before (revolution_training.recipe)
NOT_IN_STAGES = ("stages", "out", "init_from")  # the recipe's own: init_from is the previous stage


def stage_configs(config: TrainConfig) -> list[tuple[str, str, TrainConfig]]:
    """``(name, start, config)`` of each stage of a recipe, checked (``ValueError`` naming the stage and key). A
    stage is the recipe's base with the stage's keys over it (a section's key by key); a stage with ``selfplay:
    {enabled: true}`` leaves out the base's league settings (:data:`LEAGUE_OPPONENTS`) it does not set itself."""
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
        if "total_steps" not in stage:
            raise ValueError(f"{where}: total_steps: every stage says how long it trains")
        start = stage.get("start", "run")
        if k == 0 and "start" in stage:
            raise ValueError(f"{where}: start: the first stage starts from the recipe's init_from (or from scratch)")
        if start not in STARTS:
            raise ValueError(f"{where}: start: expected one of {', '.join(STARTS)}, got {start!r}")
        changes = {key: v for key, v in stage.items() if key not in STAGE_KEYS}
        inherited = dict(base)
        selfplay = changes.get("selfplay")
        if isinstance(selfplay, Mapping) and selfplay.get("enabled"):  # no league: the base's settings not its own
            inherited = merge(inherited, LEAGUE_OPPONENTS)
        if k > 0:  # starts from the stage before (the recipe writes the path when it runs it)
            inherited["init_from"] = f"{PREVIOUS_STAGE} ({out[-1][0]}, {start})"
        try:
            out.append((name, start, _build(merge(inherited, changes))))
        except ValueError as exc:
            raise ValueError(f"{where}: {exc}") from None
    return out


def from_dict(data: Any, source: str = "config", stored: bool = False) -> TrainConfig:
    """A config from its mapping; unknown keys or bad values raise ``ValueError`` starting with ``source``. A key
    of the flat form is refused with its new place, unless ``stored``: a run folder's, a recipe folder's or a PSRO
    folder's own record of its config, which may predate the sections (:func:`sectioned` reads it)."""
    if not isinstance(data, Mapping):
        raise ValueError(f"{source}: expected a mapping of options, got {type(data).__name__}")
    if stored:
        data = sectioned(data)
    try:
        return _build(data)
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


def _read_yaml(path: Path) -> Any:
    """The YAML document in ``path`` (None where it is empty), or ``ValueError`` in one line saying why not."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ValueError(f"{path}: cannot read the config: {exc.strerror or exc}") from None
    try:
        return yaml.load(text, Loader=_UniqueKeyLoader)  # noqa: S506 - a SafeLoader that refuses duplicate keys
    except yaml.YAMLError as exc:
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        mark = getattr(exc, "problem_mark", None)
        where = f" (line {mark.line + 1}, column {mark.column + 1})" if mark is not None else ""
        raise ValueError(f"{path}: not valid YAML: {problem}{where}") from None


def load_config_with(path: str | Path, section: str, missing: str, staged: str) -> tuple[TrainConfig, dict[str, Any]]:
    """A training config with one more section of a command's own (``psro:``, ``iterate:``): the config, and that
    section as written (its command checks it). ``missing``: the error where the section is not there; ``staged``:
    where the config is a recipe's stages, which such a command does not run."""
    path = Path(path)
    data = _read_yaml(path)
    if not isinstance(data, dict) or not isinstance(data.get(section), dict):
        raise ValueError(f"{path}: {missing}")
    mine = data.pop(section)
    config = from_dict(data, str(path))
    if config.stages:
        raise ValueError(f"{path}: stages: {staged}")
    return config, mine


def command_section(kind: type, name: str, mapping: Mapping[str, Any], where: str) -> Any:
    """A command's own section (``kind``, a dataclass with a ``check()`` method) from its ``mapping``: an unknown key,
    or what ``check()`` refuses, raises ``ValueError`` in one line that starts with ``where``."""
    names = {f.name for f in dataclasses.fields(kind)}
    for key in mapping:
        if key not in names:
            raise ValueError(f"{where}: {name}: {key}: unknown option (options: {', '.join(sorted(names))})")
    section = kind(**mapping)
    try:
        section.check()
    except ValueError as exc:
        raise ValueError(f"{where}: {exc}") from None
    return section


def load_config(path: str | Path, stored: bool = False) -> TrainConfig:
    """Read a YAML config: the run's keys at the top and one mapping per section (missing keys take the defaults).
    ``stored``: a recipe folder's own ``recipe.yaml``, which may predate the sections (:func:`from_dict`)."""
    path = Path(path)
    data = _read_yaml(path)
    if data is None:  # an empty file is a mistake (a failed edit, a wrong path), not "all defaults"
        raise ValueError(f"{path}: the config is empty (give at least one key, e.g. game: {{players: 3}})")
    return from_dict(data, str(path), stored)


def dump_config(config: TrainConfig) -> str:
    """The config as YAML (``load_config`` reads it back to an equal config)."""
    return yaml.safe_dump(config.to_dict(), sort_keys=False)
