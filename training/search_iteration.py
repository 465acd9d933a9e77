"""Policy iteration with the equilibrium search in the loop (DNVI / DORA: Bakhtin et al., "No-Press Diplomacy
from Scratch", NeurIPS 2021; issue 51, item 4).

```
revolution iterate --config configs/iterate_two_players.yaml --out runs/iterate_two_players
revolution iterate --config configs/iterate_two_players.yaml --out runs/iterate_two_players --resume
```

The config is a training config (``revolution_training.config.TrainConfig``: the game, the network, the
evaluations) with one more section, ``iterate:`` (:class:`IterateConfig`). The run starts from a policy checkpoint
that carries a critic (``iterate.start``: a run's ``best.pt``, a shipped bot with a critic attached by ``revolution
fit-critic CHECKPOINT --out ...``). Each iteration ``k``:

1. **Games.** ``iterate.games`` games in which every seat plays the round's equilibrium: at each bid decision one
   search on the game itself (:class:`~revolution_env.agents.equilibrium.RoundSearcher`, on the batched engine:
   every seat's candidates as ``iterate.search`` says (``policy_k``'s own samples by default), every joint bid
   played one round, the next states scored by ``policy_k``'s critic, regret matching or the two-player LP for
   every seat at once), each seat's bid drawn from its own strategy; every other decision as ``policy_k`` plays
   (``play=``). In a share of the games (``iterate.opponent_share``) one seat is a league's agent
   (``iterate.opponents``: heuristics, checkpoints), which bids and decides as it does. Games are played in chunks
   by worker processes (``iterate.workers``) or as Ray tasks (``--ray ADDRESS``); each chunk is saved when it is
   done.
2. **Fit.** ``policy_k``'s network is fitted to what the search found (``pretrain.clone``, the imitation's fit):
   the actor to ``iterate.samples`` bids drawn from each seat's average strategy at each of its bid decisions, and
   to its own choices at the other decisions (which keeps them where they were); the critic to each seat's
   equilibrium value at its bid decisions (the payoffs' expectation under the strategies) and to its final reward
   at the others. A league's seat is not fitted. With ``iterate.magnet_coef`` the fit adds MMD's anchor,
   ``magnet_coef * KL(pi || magnet)`` on every row, the magnet the run's first policy or ``policy_k``
   (``iterate.magnet``). The result is ``policy_{k+1}.pt``.
3. **Evaluation.** ``policy_{k+1}`` against the config's ``evaluation.opponents`` (``self`` a mirror table), as a
   training run evaluates (the start too, before the first iteration); ``best.pt`` keeps the best iteration by
   ``evaluation.best_by``. A policy fitted to mixed strategies is meant to be sampled: with a factorised bid head
   its argmax takes each token's likeliest target on its own, which can be a bid no strategy played
   (``evaluation.sample: true`` evaluates it sampling).

``iterate.json`` records every iteration (games, rows, the search's time, how often two seats' strategies are
pure, the fit, the evaluation) and is written atomically after each step: ``--resume`` continues where a kill
stopped the run, the chunks of games already saved read back.

What the runs gave: ``docs/experiments.md`` ("Policy iteration with the search in the loop").
"""

from __future__ import annotations

import dataclasses
import json
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from revolution_env.agents.base import act_batch
from revolution_env.agents.equilibrium import EquilibriumAgent, parse_spec
from revolution_env.agents.loading import load_agent, spec_problem
from revolution_env.common.files import atomic_write
from revolution_env.engine.game import BID, Game
from revolution_env.env import observation_layout
from revolution_env.env.core import final_rewards

STATE = "iterate.json"
STATE_FORMAT = "revolution-iterate"
MAGNETS = ("start", "previous")


@dataclass
class IterateConfig:
    """The ``iterate:`` section of a policy-iteration config."""

    start: str = ""
    """The policy checkpoint of the first iteration; it must carry a critic (``revolution fit-critic CHECKPOINT
    --out FILE`` attaches one)."""
    iterations: int = 3
    """Iterations: games with the search, then the fit."""
    games: int = 40
    """Games per iteration, every seat playing the search."""
    search: str = "k=4:oracle=0:iterations=300"
    """The search's options, as ``equilibrium:OPTIONS:POLICY`` takes them (``k``, ``iterations``, ``pool``,
    ``oracle``, ``gain``, ``method``)."""
    samples: int = 8
    """Bids drawn from a seat's average strategy at each of its bid decisions, as the actor's targets."""
    chunk: int = 4
    """Games per job (a job's games are saved together when it is done)."""
    workers: int = 1
    """Processes that play the games."""
    epochs: int = 4
    """Passes of the fit over an iteration's rows."""
    batch_size: int = 256
    """Minibatch of the fit."""
    learning_rate: float = 3e-4
    """Learning rate of the fit."""
    magnet_coef: float = 0.0
    """Weight of ``KL(pi || magnet)`` in the fit, on every row: MMD's anchor (piKL's, Jacob et al. 2022), which
    keeps the fitted policy near the magnet where the search's targets say little. 0: plain maximum likelihood."""
    magnet: str = "start"
    """The magnet: ``start`` (the run's first policy, fixed) or ``previous`` (the policy the iteration searched
    with: a moving magnet)."""
    opponents: list[str] = dataclasses.field(default_factory=list)
    """A league's agents (heuristics, checkpoints: agent specs) mixed into the games (``opponent_share``)."""
    opponent_share: float = 0.0
    """Share of each iteration's games in which one seat, drawn at random, is played by an agent drawn from
    ``opponents``. The search still solves each round for every seat (that seat's candidates the policy's), that
    seat bids and decides as its agent does, and its rows are not fitted: the other seats learn from games against
    it."""

    def check(self) -> None:
        if not isinstance(self.start, str) or not self.start:
            raise ValueError("iterate: start: expected a policy checkpoint file (with a critic)")
        for name in ("iterations", "games", "samples", "chunk", "workers", "epochs", "batch_size"):
            value = getattr(self, name)
            least = 0 if name == "iterations" else 1
            if isinstance(value, bool) or not isinstance(value, int) or value < least:
                raise ValueError(f"iterate: {name}: expected an integer at least {least}, got {value!r}")
        rate = self.learning_rate
        if isinstance(rate, bool) or not isinstance(rate, (int, float)) or not rate > 0:
            raise ValueError(f"iterate: learning_rate: expected a positive number, got {rate!r}")
        coef, share = self.magnet_coef, self.opponent_share
        if isinstance(coef, bool) or not isinstance(coef, (int, float)) or not coef >= 0:
            raise ValueError(f"iterate: magnet_coef: expected a number at least 0, got {coef!r}")
        if self.magnet not in MAGNETS:
            raise ValueError(f"iterate: magnet: expected one of {', '.join(MAGNETS)}, got {self.magnet!r}")
        if isinstance(share, bool) or not isinstance(share, (int, float)) or not 0 <= share <= 1:
            raise ValueError(f"iterate: opponent_share: expected a number from 0 to 1, got {share!r}")
        if not isinstance(self.opponents, list):
            raise ValueError(f"iterate: opponents: expected a list of agent specs, got {self.opponents!r}")
        for spec in self.opponents:
            if (problem := spec_problem(spec)) is not None:
                raise ValueError(f"iterate: opponents: {problem}")
        if share > 0 and not self.opponents:
            raise ValueError("iterate: opponent_share: above 0 with no opponents to draw from (give opponents: [...])")
        if not isinstance(self.search, str):
            raise ValueError(f"iterate: search: expected the search's options as a string, got {self.search!r}")
        try:
            options, _ = parse_spec(f"equilibrium:{self.search}{':' if self.search else ''}POLICY")
        except ValueError as exc:
            raise ValueError(f"iterate: search: {exc}") from None
        if {"value", "critic", "seed"} & set(options):
            raise ValueError("iterate: search: value=, critic= and seed= are the run's own (the policy's critic, the "
                             "run's seed)")  # fmt: skip


def load_iterate_config(path: str | Path) -> tuple[Any, IterateConfig]:
    """The training config and the ``iterate:`` section of a policy-iteration config file."""
    from revolution_training.config import load_config_with

    missing = "a policy-iteration config needs an iterate: section (start, iterations, games)"
    config, section = load_config_with(path, "iterate", missing, "policy iteration is one run, not a recipe")
    return config, iterate_section(section, str(path))


def iterate_section(section: dict[str, Any], where: str) -> IterateConfig:
    from revolution_training.config import command_section

    return command_section(IterateConfig, "iterate", section, where)


# --- games with the search in every seat --------------------------------------------------------------------------


@dataclass(frozen=True)
class GameJob:
    """A chunk of games: the policy searched with, the search's options, the rules, the games' seeds, the file
    the chunk is saved to, and the league's agents with the share of games in which one of them takes a seat."""

    policy: str
    search: str
    env_options: dict[str, Any]
    seeds: tuple[int, ...]
    out: str
    opponents: tuple[str, ...] = ()
    opponent_share: float = 0.0


def equilibrium_agent(policy: str, search: str, env_options: dict[str, Any]) -> EquilibriumAgent:
    """The search over ``policy`` (a checkpoint with a critic), scored by that critic."""
    options = f"{search}:" if search else ""
    return load_agent(f"equilibrium:{options}{policy}", **env_options)


def expected_payoffs(payoffs: np.ndarray, strategies: tuple[np.ndarray, ...]) -> np.ndarray:
    """(n,) each seat's expected payoff when every seat plays its strategy (``payoffs`` (K_1, ..., K_n, n))."""
    out = payoffs
    for x in strategies:  # contract the first seat's axis each time
        out = np.tensordot(x, out, axes=(0, 0))
    return np.asarray(out, dtype=np.float64)


def play_games(job: GameJob) -> dict[str, Any]:
    """Every game of ``job`` with the search in every seat (the module's documentation); writes the rows to
    ``job.out`` (an ``.npz``) and returns what the chunk measured."""
    agent = equilibrium_agent(job.policy, job.search, job.env_options)
    searcher, chooser = agent.searcher, agent.chooser
    layout, codec = searcher.layout, searcher.codec
    players = codec.P
    rows: dict[str, list] = {k: [] for k in ("obs", "mask", "kind", "seat", "game", "value", "first", "count")}
    candidates: list[np.ndarray] = []
    probs: list[np.ndarray] = []
    held = 0  # candidates recorded so far: where the next row's start
    searched = pure = rounds = 0
    seconds = 0.0

    def observe(s: int, kind: int) -> tuple[np.ndarray, np.ndarray]:
        return layout.build(game, s, kind), codec.mask(game, s, kind)

    def record(g: int, s: int, kind: int, seen: tuple, value: float, actions: np.ndarray, p: np.ndarray) -> None:
        nonlocal held
        for key, item in (("obs", seen[0]), ("mask", seen[1]), ("kind", kind), ("seat", s), ("game", g),
                          ("value", value), ("first", held), ("count", len(p))):  # fmt: skip
            rows[key].append(item)
        candidates.append(np.asarray(actions, dtype=np.int64).reshape(len(p), -1))
        probs.append(p)
        held += len(p)

    league: dict[str, Any] = {}  # the opponents' agents, loaded once a chunk

    def act(agent: Any, seen: tuple, kind: int) -> np.ndarray:
        return act_batch(agent, seen[0][None], seen[1][None], np.array([kind]))[0]

    for g, seed in enumerate(job.seeds):
        rng = np.random.default_rng(seed)
        guest, visitor = -1, None  # the seat a league's agent plays in this game, and that agent
        if job.opponent_share > 0 and rng.random() < job.opponent_share:  # drawn only then: old runs replay
            guest, spec = int(rng.integers(players)), job.opponents[int(rng.integers(len(job.opponents)))]
            if spec not in league:
                league[spec] = load_agent(spec, **job.env_options)
            visitor = league[spec]
            visitor.reset(int(rng.integers(2**31)))
        chooser.reset(int(rng.integers(2**31)))
        game = Game(codec.layout, int(rng.integers(2**62)))
        own = []  # this game's rows whose value is the final reward
        while not game.over:
            d = game.decision
            if d.kind == BID:
                start = time.perf_counter()
                found = searcher.search(game, rng)
                seconds += time.perf_counter() - start
                x = found.solution.strategies
                values = expected_payoffs(found.payoffs, x)
                bids = []
                for s in range(players):
                    p = np.asarray(x[s], dtype=np.float64) / float(np.sum(x[s]))
                    pick = int(rng.choice(len(p), p=p))  # drawn for every seat: the game's stream as before
                    if s == guest:  # the league's agent bids as it would; its strategy is not a target
                        bids.append(codec.bid_counts(act(visitor, observe(s, int(BID)), int(BID)), game.tokens[s]))
                        continue
                    record(g, s, int(BID), observe(s, int(BID)), float(values[s]), found.actions[s], p)
                    pure += int(p.max() >= 0.99)
                    searched += 1
                    bids.append(found.bids[s][pick])
                rounds += 1
                game.submit_bids(np.stack(bids))
            else:
                s, kind = d.seat, int(d.kind)
                seen = observe(s, kind)
                if s == guest:
                    action = act(visitor, seen, kind)
                else:
                    own.append(len(rows["obs"]))
                    action = act(chooser, seen, kind)
                    record(g, s, kind, seen, 0.0, action, np.ones(1))
                game.choose(codec.choice(int(action[0]), s, kind))
        seats = np.arange(players)
        support = np.broadcast_to(np.asarray(game.final["support"]), (players, len(game.final["support"])))
        reward = final_rewards("win_loss", np.isin(seats, game.final["winners"]), support, seats)
        for i in own:
            rows["value"][i] = float(reward[rows["seat"][i]])
    arrays = {
        "obs": np.asarray(rows["obs"], dtype=np.float32),
        "mask": np.asarray(rows["mask"], dtype=bool),
        "kind": np.asarray(rows["kind"], dtype=np.int64),
        "seat": np.asarray(rows["seat"], dtype=np.int64),
        "game": np.asarray(rows["game"], dtype=np.int64),
        "value": np.asarray(rows["value"], dtype=np.float32),
        "first": np.asarray(rows["first"], dtype=np.int64),
        "count": np.asarray(rows["count"], dtype=np.int64),
        "candidates": np.concatenate(candidates).astype(np.int64),
        "probs": np.concatenate(probs).astype(np.float64),
    }
    atomic_write(job.out, lambda fh: np.savez(fh, **arrays), binary=True)
    return {"games": len(job.seeds), "rows": len(arrays["obs"]), "searches": rounds, "seat_decisions": searched,
            "pure": pure, "search_seconds": seconds}  # fmt: skip


def read_chunk(path: str | Path) -> dict[str, np.ndarray]:
    try:
        with np.load(path) as data:
            return {k: data[k] for k in data.files}
    except (OSError, ValueError, KeyError) as exc:
        raise ValueError(f"{path}: not a chunk of games this run saved ({exc})") from None


# --- the fit -------------------------------------------------------------------------------------------------------


def demonstrations(chunks: list[dict[str, np.ndarray]], scale: np.ndarray, samples: int, seed: int) -> Any:
    """The fit's rows (``pretrain.Demonstrations``): at a bid decision ``samples`` bids drawn from the seat's
    strategy, each with the seat's equilibrium value; at any other decision the choice made, with the final
    reward."""
    from revolution_training.pretrain import Demonstrations

    rng = np.random.default_rng(seed)
    obs, masks, actions, values, kinds, games = [], [], [], [], [], []
    first_game = 0
    for chunk in chunks:
        for i in range(len(chunk["obs"])):
            lo, n = int(chunk["first"][i]), int(chunk["count"][i])
            p = chunk["probs"][lo : lo + n]
            picks = rng.choice(n, size=samples, p=p / p.sum()) if chunk["kind"][i] == BID else np.zeros(1, int)
            for j in picks:
                obs.append(chunk["obs"][i] / scale)
                masks.append(chunk["mask"][i])
                actions.append(chunk["candidates"][lo + j])
                values.append(chunk["value"][i])
                kinds.append(chunk["kind"][i])
                games.append(first_game + chunk["game"][i])
        first_game += int(chunk["game"].max()) + 1 if len(chunk["game"]) else 0
    return Demonstrations(
        np.asarray(obs, dtype=np.float32),
        np.asarray(masks, dtype=bool),
        np.asarray(actions, dtype=np.int64),
        np.asarray(values, dtype=np.float32),
        np.asarray(kinds, dtype=np.int64),
        np.asarray(games, dtype=np.int64),
        first_game,
    )


def fit_policy(config: Any, iterate: IterateConfig, policy: str, demos: Any, folder: Path) -> tuple[dict, dict]:
    """``policy``'s network (actor and critic) fitted to ``demos``; the new checkpoint and the fit's held-out
    score."""
    from revolution_training.checkpoint import make_checkpoint, read_checkpoint
    from revolution_training.policy import load_actor, load_critic, policy_from_sb3
    from revolution_training.pretrain import clone
    from revolution_training.train import close_vec_env, make_vec_env, new_model

    checkpoint = read_checkpoint(policy)
    model_config = config.replace(algorithm="ppo", n_envs=1, env_backend="vector", selfplay={"enabled": False})
    venv = make_vec_env(model_config, folder / "league")
    try:
        model = new_model(model_config, venv)
    finally:
        close_vec_env(venv)
    sb3 = model.policy
    load_actor(checkpoint["policy"], sb3.mlp_extractor.policy_net, sb3.action_net, policy)
    load_critic(checkpoint["policy"], sb3, policy)
    fit_config = model_config.replace(
        imitation={"epochs": iterate.epochs, "batch_size": iterate.batch_size, "learning_rate": iterate.learning_rate}
    )
    magnet = None
    if iterate.magnet_coef > 0:  # MMD's anchor: the start's actor, or the one searched with (a moving magnet)
        from revolution_training.mmd import MagnetActor

        magnet = MagnetActor(sb3)  # a frozen copy of the actor just loaded: the moving magnet as it is
        if iterate.magnet == "start":
            start = str(Path(policy).with_name("policy_000.pt"))
            magnet.load_checkpoint(read_checkpoint(start), start)
    score = clone(model, demos, fit_config, magnet, iterate.magnet_coef)
    fitted = policy_from_sb3(sb3, config.policy.activation)
    if config.evaluation.sample:  # as a training run's checkpoints: a policy meant to mix plays sampling
        fitted["play"] = "sample"
    new = make_checkpoint(fitted, config.env_options(), config.to_dict(),
                          step=int(checkpoint.get("step", 0)) + len(demos), wall_time=0.0,
                          origin={"path": policy, "step": int(checkpoint.get("step", 0))})  # fmt: skip
    return new, score


# --- the run -------------------------------------------------------------------------------------------------------


def chunk_jobs(config: Any, iterate: IterateConfig, policy: str, k: int, folder: Path) -> list[GameJob]:
    """Iteration ``k``'s chunks of games: seeds from the run's seed and ``k``, so that a resumed run replays none."""
    seeds = np.random.SeedSequence([config.seed, k]).generate_state(iterate.games, dtype=np.uint64) >> np.uint64(2)
    options = {k2: v for k2, v in config.env_options().items() if k2 != "reward"}
    jobs = []
    for c, start in enumerate(range(0, iterate.games, iterate.chunk)):
        chunk = tuple(int(s) for s in seeds[start : start + iterate.chunk])
        out = str(folder / f"games_{k:03d}_{c:04d}.npz")
        jobs.append(GameJob(policy, iterate.search, options, chunk, out, tuple(iterate.opponents),
                            float(iterate.opponent_share)))  # fmt: skip
    return jobs


def play_iteration(jobs: list[GameJob], workers: int, ray_address: str | None, say: Any) -> list[dict[str, Any]]:
    """The games of every job not saved yet, and what each of those measured (a chunk saved before a kill is read
    back by the caller; its measures were not kept, so an iteration's search time covers the chunks played here)."""
    from revolution_env.common.workers import run_in_processes, run_on_ray

    todo = [j for j in jobs if not Path(j.out).exists()]
    if len(todo) < len(jobs):
        say(f"{len(jobs) - len(todo)} chunk(s) of games already played: read back")
    if not todo:
        return []
    if ray_address is not None:
        return run_on_ray(play_games, todo, ray_address)
    if workers == 1:
        return [play_games(j) for j in todo]
    return run_in_processes(play_games, todo, workers)


def run_iterate(config: Any, iterate: IterateConfig, out: str | Path, resume: bool = False,
                ray_address: str | None = None, say: Any = print) -> dict[str, Any]:  # fmt: skip
    """Run (or continue) policy iteration into ``out``; returns the final ``iterate.json`` content."""
    from revolution_training.checkpoint import read_checkpoint, save_checkpoint
    from revolution_training.config import from_dict
    from revolution_training.train import BEST, command_state, evaluate

    out = Path(out)
    state_file = out / STATE
    state = command_state(state_file, resume, "policy-iteration")
    if state is not None:
        if state.get("format") != STATE_FORMAT:
            raise ValueError(f"{state_file}: not a policy-iteration state")
        config = from_dict(state["config"], str(state_file), stored=True)
        iterate = iterate_section(state["iterate"], str(state_file))
    else:
        checkpoint = read_checkpoint(iterate.start)
        if checkpoint["policy"].get("critic") is None:
            raise ValueError(f"iterate: start: {iterate.start} carries no critic to score the search's states (attach "
                             f"one: revolution fit-critic {iterate.start} --agents ... --out FILE)")  # fmt: skip
        out.mkdir(parents=True, exist_ok=True)
        save_checkpoint(checkpoint, out / "policy_000.pt")
        state = {
            "format": STATE_FORMAT,
            "version": 1,
            "config": config.to_dict(),
            "iterate": dataclasses.asdict(iterate),
            "iterations": [],
            "best": None,
            "best_score": None,
        }

    def save() -> None:
        atomic_write(state_file, lambda fh: fh.write(json.dumps(state, indent=1) + "\n"))

    save()
    (out / "scratch").mkdir(exist_ok=True)
    if config.evaluation.every and "start" not in state:  # the start's figures, to compare the iterations with
        state["start"] = evaluate(config, read_checkpoint(out / "policy_000.pt"), 0, out / "scratch")
        shown = ", ".join(f"{b} {r:.2f}" for b, r in state["start"].items())
        say(f"iterate: the start: win rate vs {shown}")
        save()
    while len(state["iterations"]) < iterate.iterations:
        k = len(state["iterations"])
        policy = str(out / f"policy_{k:03d}.pt")
        jobs = chunk_jobs(config, iterate, policy, k, out)
        say(f"iterate: iteration {k + 1}/{iterate.iterations}: {iterate.games} games with the search over {policy}")
        start = time.monotonic()
        measured = play_iteration(jobs, iterate.workers, ray_address, say)
        played = time.monotonic() - start
        chunks = [read_chunk(j.out) for j in jobs]
        scale = observation_layout(**jobs[0].env_options).scale
        demos = demonstrations(chunks, scale, iterate.samples, config.seed + k)
        new, score = fit_policy(config, iterate, policy, demos, out)
        rates = evaluate(config, new, k + 1, out / "scratch") if config.evaluation.every else {}
        save_checkpoint(new, out / f"policy_{k + 1:03d}.pt")
        entry = {
            "policy": f"policy_{k + 1:03d}.pt",
            "games": iterate.games,
            "rows": len(demos),
            "play_seconds": played,
            "search_ms": _mean_ms(measured),
            "pure_share": _share(measured, "pure", "seat_decisions"),
            "fit": score,
            "evaluation": rates,
        }
        mark = _score(rates, config.evaluation.best_by)
        if mark is not None and (state["best_score"] is None or mark > state["best_score"]):
            save_checkpoint(new, out / BEST)
            state["best"], state["best_score"] = entry["policy"], mark
        state["iterations"].append(entry)
        save()
        for j in jobs:  # the games are in the fit; their files are big
            Path(j.out).unlink(missing_ok=True)
        shown = ", ".join(f"{b} {r:.2f}" for b, r in rates.items())
        say(f"iterate: iteration {k + 1}: {len(demos):,} rows, fit {score.get('bid_accuracy', 0):.2f} bid accuracy"
            + (f"; win rate vs {shown}" if shown else ""))  # fmt: skip
    return state


def _mean_ms(measured: list[dict[str, Any]]) -> float | None:
    searches = sum(m["searches"] for m in measured)
    return 1000 * sum(m["search_seconds"] for m in measured) / searches if searches else None


def _share(measured: list[dict[str, Any]], part: str, whole: str) -> float | None:
    total = sum(m[whole] for m in measured)
    return sum(m[part] for m in measured) / total if total else None


def _score(rates: dict[str, float], best_by: str) -> float | None:
    if not rates:
        return None
    values = list(rates.values())
    return min(values) if best_by == "worst" else float(np.mean(values))
