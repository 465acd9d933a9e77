"""Self-play training with MaskablePPO: the whole loop, top to bottom.

```python
from revolution_training.config import load_config
from revolution_training.train import train
train(load_config("configs/default.yaml"), out="runs/default")            # or resume=True to continue
```

**The run folder** (``out``):

| file                     | what                                                                                     |
|--------------------------|------------------------------------------------------------------------------------------|
| `state.json`             | the run state: step, wall time, the model file to resume from, evaluations, the config   |
| `config.yaml`            | the config the run was started with                                                      |
| `saves/model_<step>.zip` | SB3's model with its optimizer (what ``--resume`` continues from)                        |
| `latest.pt`, `best.pt`   | policy checkpoints (``revolution eval`` takes them): the last save, the best evaluation  |
| `imitation.pt`           | with ``imitation.teacher``: the policy after imitating it, before PPO (the run's start)  |
| `league/`                | the league: `league.json`, `snapshot_<step>.pt`, `exploiter_<step>.pt` (``.league``)     |
| `exploiters/<step>/`     | each exploiter's run (``exploiters.every``): `target.pt`, the learner it exploits, `run/` |
| `league.png`             | the league's win-rate matrix: the learner against each opponent, per snapshot            |
| `tb/`                    | TensorBoard logs (``tensorboard --logdir <out>/tb``)                                     |

**Saving** every ``save_every`` steps (and at the end, and on Ctrl-C or SIGTERM): the model zip, then
``latest.pt``, then ``state.json``, which names the zip and so commits the save; only then is the previous zip
deleted. Every file is written to a temporary name and renamed, so a kill at any moment leaves the last complete
save intact, and ``--resume`` loses at most one save interval. A resumed run forgets league snapshots taken after
its save (and exploiters), so that the league matches the model it continues from.
"""

from __future__ import annotations

import contextlib
import json
import re
import shutil
import signal
import threading
import time
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch
from revolution_training.checkpoint import (
    action_mode,
    atomic_write,
    atomic_write_json,
    check_compatible,
    make_checkpoint,
    read_checkpoint,
    save_checkpoint,
)
from revolution_training.config import MIRROR, TrainConfig, dotted, dump_config, from_dict, sectioned
from revolution_training.distributions import AutoregressiveBidPolicy, MaskableMultiDiscretePolicy
from revolution_training.exploit import ExploitResult, default_folder, exploit_config, final_games_seed, measure
from revolution_training.league import League, LeagueReader, plot_matrix
from revolution_training.mmd import MagnetPPO
from revolution_training.policy import load_actor, policy_from_sb3
from revolution_training.pretrain import clone, collect
from revolution_training.selfplay import SelfPlayEnv
from revolution_training.vec_env import SB3VecEnv, TruncatedReward
from sb3_contrib import MaskablePPO
from stable_baselines3.common.callbacks import BaseCallback
from stable_baselines3.common.logger import configure
from stable_baselines3.common.save_util import load_from_zip_file
from stable_baselines3.common.vec_env import DummyVecEnv, SubprocVecEnv, VecEnv, VecEnvWrapper, VecMonitor

from revolution_env.agents.loading import SAMPLING
from revolution_env.common.workers import (
    Terminated,
    ignore_stop_signals,
    kill_workers,
    start_workers,
    stop_signals_blocked,
)
from revolution_env.env.core import Core, EnvConfig

STATE_FILE = "state.json"
CONFIG_FILE = "config.yaml"
LATEST = "latest.pt"
BEST = "best.pt"
IMITATION = "imitation.pt"  # the policy right after imitating imitation.teacher, before PPO
LEAGUE_PLOT = "league.png"
RUN_FORMAT = "revolution-train-run"


# --- the run folder ----------------------------------------------------------------------------------------------


SAVE_NAME = re.compile(r"saves/model_\d{12}\.zip")


def read_state(out: str | Path) -> dict[str, Any] | None:
    """The run state of the last complete save in ``out`` (None if there is none), checked: a damaged or
    hand-edited state.json is a ``ValueError`` naming the file, and the model it names is a save in the run's own
    ``saves/`` folder (a run deletes its previous save: a path elsewhere would delete someone else's file)."""
    path = Path(out) / STATE_FILE
    if path.is_dir() or not path.exists():
        return None
    try:
        state = json.loads(path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ValueError(f"{path}: not a training run state, the file is damaged ({exc})") from None
    if not isinstance(state, dict) or state.get("format") != RUN_FORMAT:
        raise ValueError(f"{path}: not a training run state")
    expected = {"step": int, "wall_time": (int, float), "config": dict, "evaluations": list}
    for key, kind in expected.items():
        if not isinstance(state.get(key), kind) or isinstance(state.get(key), bool):
            raise ValueError(f"{path}: not a training run state ({key}: got {state.get(key)!r})")
    model = state.get("model")
    if model is not None and not (isinstance(model, str) and SAVE_NAME.fullmatch(model)):
        raise ValueError(f"{path}: model: expected saves/model_<12 digits>.zip, got {model!r}")
    return state


def command_state(state_file: Path, resume: bool, what: str) -> dict[str, Any] | None:
    """The saved state of a command's run (``psro``, ``iterate``) to ``resume``, or None for a new run; a folder that
    already holds one run without ``resume``, or ``resume`` without one, raises ``ValueError`` naming ``what``."""
    out = state_file.parent
    if state_file.exists() and not resume:
        raise ValueError(f"{out}: already holds a {what} run; pass --resume to continue it, or another --out")
    if resume and not state_file.exists():
        raise ValueError(f"{out}: no {what} run to resume (no {state_file.name})")
    return json.loads(state_file.read_text(encoding="utf-8")) if resume else None


def remove_temporaries(out: Path) -> None:
    """Temporary files left by a killed save (``.<name>.<random>.tmp``) or evaluation (``learner_<step>.pt``)."""
    for folder in (out, out / "saves", out / "league"):
        if folder.is_dir():
            for tmp in [*folder.glob(".*.tmp"), *folder.glob("learner_*.pt")]:
                tmp.unlink(missing_ok=True)


# --- environments ------------------------------------------------------------------------------------------------


def env_factory(config: TrainConfig, league_folder: Path, in_subprocess: bool):
    options = config.env_options()

    def make() -> Any:
        if in_subprocess:  # Ctrl-C and SIGTERM are for the trainer: it stops and saves, then closes the workers
            ignore_stop_signals()
            torch.set_num_threads(1)
        return SelfPlayEnv(options, LeagueReader.from_section(league_folder, config.league, options))

    return make


def make_vec_env(config: TrainConfig, league_folder: Path, keep_finished: int = 0) -> VecEnv:
    """``n_envs`` self-play games with episode statistics (VecMonitor): one batched vector env (the ``vector``
    backend; ``league.learner_seats`` rows per game), or one scalar env per subprocess (DummyVecEnv for one); with
    ``selfplay.enabled``, every seat of the ``n_envs`` batched games a row (``revolution_env.selfplay_vector_env``)
    and no league. With ``game.truncated_reward``, a game cut at ``max_rounds`` ends with that reward
    (:class:`TruncatedReward`).
    ``keep_finished``: the batched env's finished games kept for ``pop_finished()``; a run never reads them, so
    none by default (the env's own default keeps 100,000 game records, which a long run would hold in memory for
    nobody, and warns when it drops the oldest)."""
    venv = _games(config, league_folder, keep_finished)
    if config.game.truncated_reward is not None:
        venv = TruncatedReward(venv, config.game.truncated_reward)
    return VecMonitor(venv)


def _games(config: TrainConfig, league_folder: Path, keep_finished: int) -> VecEnv:
    if config.selfplay.enabled:
        from revolution_env import selfplay_vector_env

        options = config.env_options()
        return SB3VecEnv(
            selfplay_vector_env(
                config.n_envs, action_mode=config.policy.action_mode, keep_finished=keep_finished, **options
            )
        )
    if config.backend() == "vector":
        from revolution_env import vector_env

        options = config.env_options()
        league = LeagueReader.from_section(league_folder, config.league, options)
        return SB3VecEnv(
            vector_env(
                config.n_envs,
                opponents=league,
                learner_seats=config.league.learner_seats,  # each a row: its seats decided in one forward pass
                action_mode=config.policy.action_mode,
                keep_finished=keep_finished,
                **options,
            )
        )
    if config.n_envs == 1:
        return DummyVecEnv([env_factory(config, league_folder, False)])
    # the workers (and SB3's forkserver) start deaf to a signal to the group
    factories = [env_factory(config, league_folder, True) for _ in range(config.n_envs)]
    return start_workers(lambda: SubprocVecEnv(factories), lambda v: kill_workers(v.processes))


def close_vec_env(venv: VecEnv) -> None:
    """Close the envs. Subprocess workers are told to close and given 10 s; any that died, or no longer answer,
    are killed rather than waited for. (SB3's own ``close`` first reads the answers of a step that was cut short:
    after a dead worker or a second Ctrl-C, some were already read, and it would wait for ever.)"""
    inner = venv
    while isinstance(inner, VecEnvWrapper):  # VecMonitor, TruncatedReward
        inner = inner.venv
    if not isinstance(inner, SubprocVecEnv):
        venv.close()
        return
    if inner.closed:
        return
    for remote in inner.remotes:  # a worker reads its commands in order: an unread answer does not matter
        with contextlib.suppress(OSError):  # BrokenPipeError, ConnectionResetError: that worker is gone
            remote.send(("close", None))
    for process in inner.processes:
        process.join(timeout=10)
    kill_workers(inner.processes)  # those still alive
    inner.closed = True


def new_model(config: TrainConfig, venv: VecEnv) -> MaskablePPO:
    """MaskablePPO, or with ``algorithm: mmd`` its magnet-regularised form (``revolution_training.mmd``)."""
    activation = {"tanh": torch.nn.Tanh, "relu": torch.nn.ReLU}[config.policy.activation]
    algorithm: Any = MaskablePPO
    extra: dict[str, Any] = {}
    if config.algorithm == "mmd":
        algorithm = MagnetPPO
        extra = {"magnet": "checkpoint" if config.mmd.magnet.endswith(".pt") else config.mmd.magnet,
                 "magnet_coef": config.mmd.magnet_coef, "kl_coef": config.mmd.kl_coef,
                 "magnet_every": config.mmd.magnet_every}  # fmt: skip
    rate = config.ppo.learning_rate
    # "MlpPolicy" with a faster masked distribution (training/distributions.py), or the autoregressive bid head;
    # the token mode's Discrete action is one categorical, MlpPolicy's own
    policy: Any = "MlpPolicy" if config.policy.action_mode == "tokens" else MaskableMultiDiscretePolicy
    head: dict[str, Any] = {}
    if config.policy.bid_head == "autoregressive":
        policy = AutoregressiveBidPolicy
        head = {"token_blocks": list(Core(EnvConfig.from_options(config.env_options())).codec.n_tokens)}
    return algorithm(
        policy,
        venv,
        # SB3 calls a schedule with the fraction of the run left (1 at the start, 0 at total_steps)
        learning_rate=(lambda left: rate * left) if config.ppo.lr_schedule == "linear" else rate,
        n_steps=config.ppo.n_steps,
        batch_size=config.ppo.batch_size,
        n_epochs=config.ppo.n_epochs,
        gamma=config.ppo.gamma,
        gae_lambda=config.ppo.gae_lambda,
        clip_range=config.ppo.clip_range,
        ent_coef=config.ppo.ent_coef,
        vf_coef=config.ppo.vf_coef,
        max_grad_norm=config.ppo.max_grad_norm,
        # fused Adam (on CPU since torch 2.4): one kernel per tensor instead of a dozen, the same update
        policy_kwargs={
            "net_arch": list(config.policy.net_arch),
            "activation_fn": activation,
            "optimizer_kwargs": {"fused": True},
            **head,
        },
        seed=config.seed,
        device=config.device,
        verbose=0,
        **extra,
    )


def fix_magnet(model: MaskablePPO, config: TrainConfig) -> str | None:
    """MMD's magnet at the start of a new run (a resumed run reads it from its save): the policy as it is now
    (``imitation``, after imitating; ``latest``), or a checkpoint's actor. Returns it in words."""
    if not isinstance(model, MagnetPPO) or config.mmd.magnet == "uniform":
        return None
    if config.mmd.magnet.endswith(".pt"):
        checkpoint = read_checkpoint(config.mmd.magnet)
        check_compatible(checkpoint, config.env_options(), f"mmd.magnet: {config.mmd.magnet}")
        if action_mode(checkpoint) != config.policy.action_mode:
            raise ValueError(f"mmd.magnet: {config.mmd.magnet}: a policy of the {action_mode(checkpoint)!r} action "
                             f"mode; this config trains policy.action_mode {config.policy.action_mode!r}")  # fmt: skip
        model.set_magnet(checkpoint, config.mmd.magnet)
        return f"the policy of {config.mmd.magnet}"
    model.set_magnet()
    return "the policy after imitation" if config.mmd.magnet == "imitation" else "the policy at the start"


def load_initial_weights(model: MaskablePPO, config: TrainConfig) -> tuple[str, dict[str, Any]]:
    """Copy ``config.init_from``'s weights into a new model (see ``TrainConfig.init_from``); returns what was
    loaded, in words, and the checkpoints' ``origin`` entry for it. Anything that does not fit raises
    ``ValueError`` naming it."""
    source = Path(config.init_from)
    if source.is_dir():
        return _load_run(model, config, source)
    if not source.is_file():
        raise ValueError(f"init_from: {source}: no such run folder or checkpoint file")
    checkpoint = read_checkpoint(source)
    _check_source(checkpoint, config, str(source))
    policy = model.policy
    load_actor(checkpoint["policy"], policy.mlp_extractor.policy_net, policy.action_net, f"init_from: {source}")
    origin = _origin(config, checkpoint["step"], checkpoint.get("wall_time", 0.0), checkpoint.get("origin"))
    return f"policy of {source} at step {checkpoint['step']:,} (the value network starts fresh)", origin


def _load_run(model: MaskablePPO, config: TrainConfig, source: Path) -> tuple[str, dict[str, Any]]:
    """The last save of a run folder: its model zip (policy and value network), described by its state.json."""
    state = read_state(source)
    if state is None or not state.get("model"):
        raise ValueError(f"init_from: {source}: not a training run folder (no {STATE_FILE} with a saved model)")
    # latest.pt tells the environment the run was trained for (the same for all its saves)
    _check_source(read_checkpoint(source / LATEST), config, str(source / LATEST))
    trained = sectioned(state["config"]).get("game", {}).get("reward", "win_loss")  # a run's, sections or not
    if trained != config.game.reward:
        raise ValueError(
            f"init_from: {source}: trained with reward {trained!r}, this config uses {config.game.reward!r} (its "
            f"value network would predict the wrong returns; start from {source / LATEST} to take the policy only)"
        )
    load_weights(model, source / state["model"], f"init_from: {source}", with_optimizer=False)
    origin = _origin(config, state["step"], state["wall_time"], state.get("origin"))
    return f"policy and value network of {source} at step {state['step']:,}", origin


def load_weights(model: MaskablePPO, path: Path, where: str, with_optimizer: bool) -> None:
    """The network weights (and the optimizer's state) of an SB3 model zip, and nothing else: its ``data`` entry,
    which may hold cloudpickled objects, is never read (``load_data=False``), and torch reads the weights with
    ``weights_only``. A run folder is therefore no way to run code."""
    try:
        _, params, _ = load_from_zip_file(path, device="cpu", load_data=False)
    except FileNotFoundError:
        raise ValueError(f"{where}: the save {path.name} is gone (is the run still training?)") from None
    except Exception as exc:  # a damaged or foreign zip
        raise ValueError(f"{where}: cannot read the save {path}: {exc}") from None
    if not params or "policy" not in params:
        raise ValueError(f"{where}: {path} holds no policy weights")
    weights = params["policy"]
    if not with_optimizer:  # init_from: the run's own magnet (MMD) is set after, from its own config
        weights = {k: v for k, v in weights.items() if not k.startswith("magnet.")}
        weights.update({k: v for k, v in model.policy.state_dict().items() if k.startswith("magnet.")})
    try:
        model.policy.load_state_dict(weights)
        if with_optimizer and "policy.optimizer" in params:
            model.policy.optimizer.load_state_dict(params["policy.optimizer"])
    except (RuntimeError, ValueError) as exc:
        first = str(exc).strip().splitlines()[0]
        raise ValueError(f"{where}: the weights in {path} do not fit this run's network ({first})") from None


def _check_source(checkpoint: dict[str, Any], config: TrainConfig, where: str) -> None:
    check_compatible(checkpoint, config.env_options(), f"init_from: {where}")
    mode = action_mode(checkpoint)
    if mode != config.policy.action_mode:
        raise ValueError(
            f"init_from: {where}: a policy of the {mode!r} action mode; this config trains policy.action_mode "
            f"{config.policy.action_mode!r}"
        )
    policy = checkpoint["policy"]
    if list(policy["hidden"]) != list(config.policy.net_arch) or policy["activation"] != config.policy.activation:
        raise ValueError(
            f"init_from: {where}: its network is {policy['hidden']} {policy['activation']}, this config "
            f"asks for policy.net_arch {list(config.policy.net_arch)} {config.policy.activation}"
        )


def _origin(config: TrainConfig, step: int, wall_time: float, origin: dict[str, Any] | None) -> dict[str, Any]:
    return {"path": str(config.init_from), "step": int(step), "wall_time": float(wall_time), "origin": origin}


def compile_ahead(config: TrainConfig) -> None:
    """Numba's machine code for this run before its first decision, where the cache lacks it (a fresh clone): the
    heuristic bots in a background process (started here, unless ``revolution train`` started it before loading
    torch) while this process compiles the batched engine by playing a few random games, then a wait for the bots
    with a line of progress. Without it the imitation would start on the bots' uncompiled code, which is much
    slower."""
    from revolution_env.agents.compiled import COMPILING, building_since, ready, wait_until_ready

    bot = config.compiled_bot()
    if bot is None or ready(bot):
        return
    print(f"{COMPILING}, in the background ...", flush=True)
    start = time.monotonic()
    if config.backend() == "vector":
        _play_random_games(config)
        if time.monotonic() - start > 2.0:
            print(f"  ... and the batched engine, here, in {time.monotonic() - start:.0f} s", flush=True)
    wait_until_ready(bot, since=building_since() or start)


def _play_random_games(config: TrainConfig, games: int = 16, steps: int = 150) -> None:
    """A few random games on the batched engine, so that Numba compiles (or loads) its loops now."""
    from revolution_env import MaskedMultiDiscrete, vector_env

    env = vector_env(games, opponents="random", keep_finished=0, **config.env_options())
    space = MaskedMultiDiscrete(env.codec.nvec, seed=config.seed)
    env.reset(seed=config.seed)
    for _ in range(steps):
        env.step(np.stack([space.sample(mask) for mask in env.action_masks().view(np.int8)]))
    env.close()


def imitate(model: MaskablePPO, config: TrainConfig, threads: int = 1, progress: bool | None = None) -> float:
    """Behaviour cloning of ``imitation.teacher`` before PPO (``revolution_training.pretrain``), fitted on torch
    ``threads``, the recording's ``progress`` shown as ``pretrain.Progress`` has it; returns the seconds spent."""
    start = time.time()
    teacher = config.imitation.teacher
    print(f"imitating {teacher}: recording {config.imitation.steps:,} of its decisions ...", flush=True)
    demos = collect(config, config.imitation.steps, config.seed, progress)
    with torch_threads(threads):
        report = clone(model, demos, config)
    for key, value in report.items():
        model.logger.record(f"pretrain/{key}", value)
    model.logger.dump(0)
    elapsed = time.time() - start
    print(  # what the figures are, in the line itself: a reader of the log has nothing else
        f"imitated {teacher} on {len(demos):,} decisions of {demos.games:,} games in {elapsed:.0f} s;"
        f" on the tenth held out, the policy's likeliest action is the teacher's in {report['accuracy']:.1%} of"
        f" decisions ({report['bid_accuracy']:.1%} of bids, where every token must go to the same target as the"
        f" teacher's) and in {report['dim_accuracy']:.1%} of single choices that had options; value mse"
        f" {report['value_mse']:.4f}",
        flush=True,
    )
    return elapsed


# --- evaluation --------------------------------------------------------------------------------------------------


def evaluate(config: TrainConfig, checkpoint: dict[str, Any], step: int, scratch: Path) -> dict[str, float]:
    """Win rate of the policy (greedy, or sampling with ``evaluation.sample``) against each baseline, over every
    seat order; seats beyond the learner and the baseline go to ``evaluation.fill``. Every evaluation plays the same
    seeds, so that they compare like with like."""
    options = {k: v for k, v in config.env_options().items() if k != "reward"}
    # a new file name each time: the harness caches agents by spec within a process
    path = scratch / f"learner_{step:012d}.pt"
    save_checkpoint(checkpoint, path)
    try:
        with stop_signals_blocked():  # delivered after the evaluation, which then stops the run at the next step
            return _win_rates(config, path, step, options)
    finally:
        path.unlink(missing_ok=True)


def _win_rates(config: TrainConfig, path: Path, step: int, options: dict[str, Any]) -> dict[str, float]:
    from revolution_env.evaluation import evaluate_lineup

    rates = {}
    spec = str(path) + (SAMPLING if config.evaluation.sample else "")
    for baseline in config.baselines():
        other = spec if baseline == MIRROR else baseline  # a mirror table: the learner beside a copy of itself
        lineup = [spec, other] + [config.evaluation.fill or other] * (config.game.players - 2)
        ev = evaluate_lineup(lineup, config.evaluation.games, config.seed, options, config.evaluation.workers,
                             progress=False)  # fmt: skip
        learner = next(name for name, s in ev.specs.items() if s == spec)
        rates[baseline] = ev.stats[learner].win_rate
    return rates


# --- the callback: league, evaluation, saving, logging ------------------------------------------------------------


@dataclass
class RunState:
    """What a save records beside the model (``state.json``)."""

    step: int = 0
    wall_time: float = 0.0
    model: str | None = None
    best_win_rate: float | None = None
    best_step: int | None = None
    evaluations: list[dict[str, Any]] = field(default_factory=list)
    origin: dict[str, Any] | None = None


class SelfPlayCallback(BaseCallback):
    """Adds snapshots to the league, evaluates, saves, logs custom scalars, and stops when asked to."""

    def __init__(self, config: TrainConfig, out: Path, league: League, run: RunState, threads: int = 1) -> None:
        super().__init__()
        self.config, self.out, self.league, self.run = config, out, league, run
        self.threads = threads  # torch's, for PPO's updates (TrainConfig.update_threads)
        self.stop_requested = False
        self.stop_signal: int | None = None
        self.wins: deque[float] = deque(maxlen=100)
        self._session_start = time.time()
        self._wall_at_start = run.wall_time
        self._window = (time.time(), 0)

    def _on_training_start(self) -> None:
        step = self.model.num_timesteps
        self._next = {
            "snapshot": _next_multiple(step, self.config.league.snapshot_every),
            "eval": _next_multiple(step, self.config.evaluation.every) if self.config.evaluation.every else None,
            "save": _next_multiple(step, self.config.save_every),
            "exploiter": _next_multiple(step, self.config.exploiters.every) if self.config.exploiters.every else None,
        }
        self._window = (time.time(), step)

    def wall_time(self) -> float:
        return self._wall_at_start + (time.time() - self._session_start)

    def _on_step(self) -> bool:
        for info, done in zip(self.locals["infos"], self.locals["dones"]):
            if done and "won" in info:
                self.wins.append(float(info["won"]))
                self.league.record(info["opponents"], float(info["won"]))
        step = self.model.num_timesteps
        if step >= self._next["snapshot"]:
            self.league.add(self.checkpoint(), step)
            plot_matrix(self.league.history, self.out / LEAGUE_PLOT)
            self._next["snapshot"] = _next_multiple(step, self.config.league.snapshot_every)
        if self._next["exploiter"] is not None and step >= self._next["exploiter"]:
            self.train_exploiter()
            self._next["exploiter"] = _next_multiple(step, self.config.exploiters.every)
        if self._next["eval"] is not None and step >= self._next["eval"]:
            self.evaluate()
            self._next["eval"] = _next_multiple(step, self.config.evaluation.every)
        if step >= self._next["save"]:
            self.save()
            self._next["save"] = _next_multiple(step, self.config.save_every)
        return not self.stop_requested

    def _on_rollout_start(self) -> None:
        torch.set_num_threads(1)  # the rollout's forward passes: one thread, the opponents' threads take the cores

    def _on_rollout_end(self) -> None:
        torch.set_num_threads(self.threads)  # PPO's update, next
        now, step = time.time(), self.model.num_timesteps
        then, before = self._window
        if now > then:
            self.logger.record("time/steps_per_second", (step - before) / (now - then))
        self._window = (now, step)
        if self.wins:
            self.logger.record("rollout/win_rate", float(np.mean(self.wins)))
        self.logger.record("league/snapshots", len(self.league.snapshots))
        for name, rate in self.league.win_rates().items():  # a row of the league's win-rate matrix
            self.logger.record(f"league/win_rate/{name.removesuffix('.pt')}", rate)
        self.league.publish()  # the readers' PFSP weights follow the learner's results

    # --- the pieces --------------------------------------------------------------------------------------------

    def checkpoint(self) -> dict[str, Any]:
        policy = policy_from_sb3(self.model.policy, self.config.policy.activation)
        if self.config.evaluation.sample:  # a policy meant to mix: its spec plays it sampling (PATH:argmax does not)
            policy["play"] = "sample"
        return make_checkpoint(
            policy,
            self.config.env_options(),
            self.config.to_dict(),
            self.model.num_timesteps,
            self.wall_time(),
            self.run.origin,
        )

    def train_exploiter(self) -> None:
        """A fresh best response to the learner as it is now (``revolution_training.exploit``), added to the league. An
        exploiter stopped by Ctrl-C or SIGTERM is dropped and the run stops (it saves first); the next one is
        trained at the next multiple of ``exploiters.every``."""
        step, config = self.model.num_timesteps, self.config
        folder = self.out / "exploiters" / f"{step:012d}"
        shutil.rmtree(folder, ignore_errors=True)  # a run rolled back past this step left it: the learner differs
        folder.mkdir(parents=True)
        target = folder / "target.pt"
        save_checkpoint(self.checkpoint(), target)
        games = config.evaluation.games
        print(f"step {step}: training an exploiter ({config.exploiters.steps} steps)", flush=True)
        try:
            result = train_best_response(
                str(target), steps=config.exploiters.steps, out=folder / "run", seed=config.seed + step,
                eval_games=games, final_games=games, n_envs=config.n_envs, device=config.device,
                torch_threads=self.threads, env_backend=config.env_backend,
                ppo={"n_steps": config.ppo.n_steps, "batch_size": config.ppo.batch_size},
                policy={"net_arch": list(config.policy.net_arch)},
            )  # fmt: skip
        except KeyboardInterrupt as exc:  # the exploiter's run took the signal (it saved, but is dropped)
            shutil.rmtree(folder, ignore_errors=True)
            self.stop_requested = True
            self.stop_signal = self.stop_signal or (signal.SIGTERM if isinstance(exc, Terminated) else signal.SIGINT)
            print(f"step {step}: exploiter interrupted and dropped", flush=True)
            return
        self.league.add_exploiter(folder / "run" / BEST, step, config.exploiters.keep)
        rate = result.final["win_rate"]
        self.logger.record("league/exploiter_win_rate", rate)
        print(f"step {step}: exploiter trained ({config.exploiters.steps} steps), wins {rate:.2f} against the learner "
              f"over {result.final['games']} games; added to the league", flush=True)  # fmt: skip

    def evaluate(self) -> None:
        step = self.model.num_timesteps
        checkpoint = self.checkpoint()
        rates = evaluate(self.config, checkpoint, step, self.out / "saves")
        mean, worst = float(np.mean(list(rates.values()))), min(rates.values())
        for baseline, rate in rates.items():
            self.logger.record(f"eval/win_rate_vs_{baseline}", rate)
        self.logger.record("eval/win_rate_mean", mean)
        self.logger.record("eval/win_rate_worst", worst)
        self.run.evaluations.append({"step": step, "win_rates": rates, "mean": mean})
        score = mean if self.config.evaluation.best_by == "mean" else worst
        if self.run.best_win_rate is None or score > self.run.best_win_rate:
            self.run.best_win_rate, self.run.best_step = score, step
            save_checkpoint(checkpoint, self.out / BEST)
        self.logger.dump(step)  # now, at the step evaluated (SB3 would write them at the end of the rollout)
        shown = ", ".join(f"{b} {r:.2f}" for b, r in rates.items())
        best = f"best {self.config.evaluation.best_by} {self.run.best_win_rate:.2f} at step {self.run.best_step}"
        print(f"step {step}: win rate vs {shown} ({best})")

    def save(self) -> None:
        """Model zip, then latest.pt, then state.json (the commit), then the previous zip goes."""
        step = self.model.num_timesteps
        name = f"saves/model_{step:012d}.zip"
        atomic_write(self.out / name, self.model.save)
        save_checkpoint(self.checkpoint(), self.out / LATEST)
        previous = self.run.model
        self.run.step, self.run.wall_time, self.run.model = step, self.wall_time(), name
        write_state(self.out, self.config, self.run, self.league)
        if previous and previous != name:
            (self.out / previous).unlink(missing_ok=True)


def _next_multiple(step: int, every: int) -> int:
    return (step // every + 1) * every


def write_state(out: Path, config: TrainConfig, run: RunState, league: League) -> None:
    atomic_write_json(
        out / STATE_FILE,
        {
            "format": RUN_FORMAT,
            "version": 1,
            "step": run.step,
            "wall_time": run.wall_time,
            "model": run.model,
            "best_win_rate": run.best_win_rate,
            "best_step": run.best_step,
            "evaluations": run.evaluations,
            "origin": run.origin,
            "league": [s["file"] for s in league.snapshots],
            "config": config.to_dict(),
        },
    )


# --- training ----------------------------------------------------------------------------------------------------


@dataclass
class TrainResult:
    step: int
    interrupted: bool
    steps_per_second: float
    best_win_rate: float | None
    out: Path
    signal: int | None = None  # the signal that stopped the run (SIGINT, SIGTERM), if one did
    best_by: str = "mean"  # what best_win_rate is (the run's own config's best_by)


class WorkerDied(RuntimeError):
    """An environment worker process died under the trainer (killed, out of memory); the run saved first."""


def prepare_run(config: TrainConfig, out: str | Path | None, resume: bool) -> tuple[TrainConfig, Path, dict | None]:
    """The config and folder of the run, and its saved state when resuming. A resumed run keeps the config it
    was started with, apart from ``total_steps``."""
    folder = Path(out if out is not None else config.out)
    if folder.exists() and not folder.is_dir():
        raise ValueError(f"--out: {folder} is a file, not a run folder")
    state = read_state(folder)
    if resume:
        if state is None:
            raise ValueError(f"{folder}: no saved run to resume (no {STATE_FILE})")
        saved = from_dict(state["config"], str(folder / STATE_FILE), stored=True)  # perhaps from before the sections
        keys = ("game.players", "n_envs", "ppo.n_steps", "ppo.learning_rate", "policy.net_arch", "league.heuristics",
                "seed", "init_from", "imitation.teacher", "imitation.steps")  # fmt: skip
        theirs, given = dotted(saved.to_dict()), dotted(config.to_dict())
        ignored = [k for k in keys if theirs[k] != given[k]]
        if ignored:
            print(f"note: resuming with the run's own config; the given config's {', '.join(ignored)} are ignored")
        config = saved.replace(total_steps=config.total_steps)
    elif state is not None:
        raise ValueError(
            f"{folder}: already holds a run (step {state['step']}); pass --resume to continue it, or another --out"
        )
    return config.replace(out=str(folder)), folder, state


def train(
    config: TrainConfig, out: str | Path | None = None, resume: bool = False, progress: bool = False
) -> TrainResult:
    """Train (or, with ``resume``, continue) a self-play run, or every stage of a recipe (``config.stages``,
    ``revolution_training.recipe``); Ctrl-C or SIGTERM stops it after a save."""
    if config.stages:
        from revolution_training.recipe import run_recipe

        return run_recipe(config, out, resume, train, read_state, progress)
    config, out, state = prepare_run(config, out, resume)
    out.mkdir(parents=True, exist_ok=True)
    remove_temporaries(out)
    if state is None:
        atomic_write(out / CONFIG_FILE, lambda fh: fh.write(dump_config(config).encode("utf-8")))
    league = League(out / "league", config.league.max_snapshots, config.league.pfsp_window)
    # the league as of the last save; a new run (perhaps in the folder of one aborted before its first save) empty
    league.rollback(state["step"] if state is not None else 0)
    run = RunState()
    if state is not None:
        run = RunState(
            state["step"],
            state["wall_time"],
            state["model"],
            state.get("best_win_rate"),
            state.get("best_step"),
            state["evaluations"],
            state.get("origin"),
        )
        if run.step >= config.total_steps:  # nothing left to train
            return TrainResult(run.step, False, 0.0, run.best_win_rate, out, best_by=config.evaluation.best_by)

    threads = config.update_threads()  # before the run sets torch's threads: a user's setting is kept
    with torch_threads(1):  # the rollouts; PPO's updates take `threads` (SelfPlayCallback)
        venv = model = None
        try:
            venv = make_vec_env(config, out / "league")
            if state is None:
                model = new_model(config, venv)
                if config.init_from:
                    loaded, run.origin = load_initial_weights(model, config)
                    print(f"starting from the {loaded}")
            else:
                model = new_model(config, venv)  # from the run's own config: nothing pickled in the zip is loaded
                load_weights(model, out / state["model"], "--resume", with_optimizer=True)
                model.num_timesteps = int(state["step"])
                model.set_random_seed(config.seed + state["step"])  # fresh games, not a replay of the first ones
            model.set_logger(configure(str(out / "tb"), ["tensorboard"]))
            compile_ahead(config)
            if state is None and config.imitation.teacher:
                run.wall_time += imitate(model, config, threads, progress)
            if state is None and (magnet := fix_magnet(model, config)):
                print(f"magnet: {magnet}")
            callback = SelfPlayCallback(config, out, league, run, threads)
            callback.init_callback(model)  # learn() does it too, but a run already at total_steps never calls learn()
            if state is None and config.imitation.teacher:  # the run's start, to compare its bot with (imitation.pt)
                save_checkpoint(callback.checkpoint(), out / IMITATION)
                if config.evaluation.every and config.evaluation.start:
                    callback.evaluate()  # the imitation evaluated too: best.pt never scores below the run's start
            start_step, start_time = model.num_timesteps, time.time()
            remaining = max(0, config.total_steps - model.num_timesteps)
            with _stop_on_signals(callback):
                if remaining > 0:
                    try:
                        model.learn(remaining, callback=callback, reset_num_timesteps=state is None,
                                    progress_bar=progress)  # fmt: skip
                    except (EOFError, ConnectionError) as exc:  # a SubprocVecEnv worker is gone: keep what was learnt
                        callback.save()
                        raise WorkerDied(
                            f"an environment worker process died ({type(exc).__name__}); saved at step "
                            f"{model.num_timesteps} in {out} (continue with --resume)"
                        ) from None
                interrupted = callback.stop_requested
                last_eval = run.evaluations[-1]["step"] if run.evaluations else -1
                if (
                    not interrupted
                    and config.evaluation.every
                    and model.num_timesteps - last_eval >= model.n_envs * config.ppo.n_steps  # a rollout's steps
                ):
                    callback.evaluate()  # a final evaluation, unless the last one was in the last rollout
                if run.model is None or run.step != model.num_timesteps:
                    callback.save()
            elapsed = time.time() - start_time
            sps = (model.num_timesteps - start_step) / elapsed if elapsed > 0 else 0.0
            return TrainResult(
                model.num_timesteps,
                interrupted,
                sps,
                run.best_win_rate,
                out,
                callback.stop_signal,
                config.evaluation.best_by,
            )
        finally:
            if getattr(model, "_logger", None) is not None:  # its TensorBoard writer's thread ends with it
                model.logger.close()
            if venv is not None:
                close_vec_env(venv)


def train_best_response(
    target: str,
    players: int | None = None,
    steps: int = 200_000,
    out: str | Path | None = None,
    seed: int = 0,
    eval_games: int = 60,
    final_games: int = 600,
    ray_address: str | None = None,
    progress: bool = False,
    workers: int | None = None,
    **changes: Any,
) -> ExploitResult:
    """One best response: train it against ``target`` for ``steps`` learner steps (in ``out``; an existing run there
    is resumed), then measure it on ``final_games`` fresh games (played by ``workers`` processes, or on Ray)
    (``revolution_training.exploit`` documents the method and its limits; ``revolution_training.exploitability``
    runs the benchmark of several). An interrupted run has saved: the same call continues it."""
    config = exploit_config(target, players, steps, seed, eval_games, **changes)
    folder = Path(out) if out is not None else default_folder(target)
    result = train(config, out=folder, resume=read_state(folder) is not None, progress=progress)
    if result.interrupted:
        raise Terminated if result.signal == signal.SIGTERM else KeyboardInterrupt
    state = read_state(folder)
    return measure(target, config, folder, state, folder / BEST, final_games_seed(seed), final_games, ray_address,
                   progress, workers)  # fmt: skip


@contextlib.contextmanager
def torch_threads(n: int) -> Iterator[None]:
    """Torch's CPU threads set to ``n`` for the block, then back to what they were."""
    before = torch.get_num_threads()
    torch.set_num_threads(n)
    try:
        yield
    finally:
        torch.set_num_threads(before)


class _stop_on_signals:
    """Ctrl-C or SIGTERM asks the callback to stop at the next step (the run then saves); a second Ctrl-C
    raises KeyboardInterrupt at once."""

    def __init__(self, callback: SelfPlayCallback) -> None:
        self.callback = callback

    def __enter__(self) -> _stop_on_signals:
        main = threading.current_thread() is threading.main_thread()  # only the main thread may set handlers
        self._old = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)} if main else {}
        for s in self._old:
            signal.signal(s, self._handle)
        return self

    def _handle(self, signum: int, frame: Any) -> None:
        if self.callback.stop_requested:
            if signum == signal.SIGINT:
                raise KeyboardInterrupt
            return  # a second SIGTERM: already stopping
        self.callback.stop_requested, self.callback.stop_signal = True, signum
        print(f"\n{signal.Signals(signum).name}: stopping after this step and saving (Ctrl-C again to abort)",
              flush=True)  # fmt: skip

    def __exit__(self, *exc: Any) -> None:
        for s, handler in self._old.items():
            signal.signal(s, handler)
