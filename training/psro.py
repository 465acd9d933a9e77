"""PSRO: a population of policies, a Nash meta-strategy over it, and a best response to that meta-strategy added
each iteration (Lanctot et al., "A Unified Game-Theoretic Approach to Multiagent Reinforcement Learning", 2017;
OpenSpiel's ``psro_v2``).

```
revolution psro --config experiments/psro_two_players.yaml --out runs/psro_two_players
revolution eval --players 2 --gauntlet runs/psro_two_players/population.json --opponents value bargain area
```

The config is a training config (``revolution_training.config.TrainConfig``: the oracle, the run each best
response is) with one more section, ``psro:`` (:class:`PsroConfig`): the first ``population`` (agent specs), the
``iterations``, the ``payoff_games`` per table and the meta-solver's ``meta_tolerance``. Each iteration:

1. **payoffs**: every table of the meta-game (each multiset of ``players`` members) plays ``payoff_games`` seat-
   rotated games on the batched evaluator (``revolution_env.evaluation``); a table already played is not replayed;
2. **meta-strategy**: ``revolution_training.meta.solve``: the zero-sum Nash by linear programming with two
   players, replicator dynamics with three and four;
3. **best response**: a training run (``<out>/br_<k>/``) whose opponents are the members drawn per game and per
   seat with the meta-strategy's weights (the league's ``heuristics`` with ``heuristics_weights``), starting from
   the heaviest checkpoint member (or imitating the heaviest member where none is a checkpoint); its ``best.pt``
   (its ``latest.pt`` where the oracle never evaluates) joins the population.

After the last iteration the final population's payoffs and meta-strategy are computed once more and written to
``<out>/population.json``: the members and their weights. That file is an agent spec: every game, the agent draws
one member with the weights and plays it for the whole game (``revolution_env.agents.mixture.MetaAgent``; a
``mix:`` draws per decision instead). ``population.json`` also records every iteration (its table, meta-strategy,
meta-game regret and best response), is written atomically after each step, and ``--resume`` continues from it.
"""

from __future__ import annotations

import dataclasses
import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from revolution_training.config import TrainConfig, command_section, from_dict, load_config_with
from revolution_training.meta import opponent_sets, regret, solve

from revolution_env.agents.loading import is_checkpoint
from revolution_env.agents.mixture import POPULATION_FORMAT
from revolution_env.common.files import atomic_write

STATE = "population.json"


@dataclass
class PsroConfig:
    """The ``psro:`` section of a PSRO config."""

    population: list[str] = field(default_factory=lambda: ["random"])
    """The first members: agent specs (``random``, heuristics, checkpoint files)."""
    iterations: int = 3
    """Best responses to train, one per iteration."""
    payoff_games: int = 60
    """Games per table of the payoff table, rotated over the seats (a multiple of the seat orders is fairest)."""
    meta_tolerance: float = 0.01
    """Three or four players: the regret at which replicator dynamics stop (an approximate Nash equilibrium)."""
    meta_iterations: int = 100_000
    """Three or four players: the most replicator steps before the meta-solver gives up with a clear error."""
    eval_workers: int | None = None
    """Processes that play the payoff games (None: every core)."""

    def check(self) -> None:
        from revolution_training.config import _spec

        if not isinstance(self.population, list) or not self.population:
            raise ValueError("psro: population: expected a non-empty list of agent specs")
        for spec in self.population:
            if (problem := _spec(spec)) is not None:
                raise ValueError(f"psro: population: expected {problem}; {spec!r} is not one")
        for name in ("iterations", "payoff_games", "meta_iterations"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < (0 if name == "iterations" else 1):
                raise ValueError(f"psro: {name}: expected a {'non-negative' if name == 'iterations' else 'positive'} "
                                 f"integer, got {value!r}")  # fmt: skip
        tol = self.meta_tolerance
        if isinstance(tol, bool) or not isinstance(tol, (int, float)) or not 0 < tol < 1:
            raise ValueError(f"psro: meta_tolerance: expected a number in (0, 1), got {tol!r}")
        w = self.eval_workers
        if w is not None and (isinstance(w, bool) or not isinstance(w, int) or w < 1):
            raise ValueError(f"psro: eval_workers: expected a positive integer or null, got {w!r}")


def load_psro_config(path: str | Path) -> tuple[TrainConfig, PsroConfig]:
    """The oracle's training config and the ``psro:`` section of a PSRO config file."""
    missing = "a PSRO config needs a psro: section (population, iterations, payoff_games)"
    staged = "a PSRO oracle is one run per best response, not a recipe"
    oracle, section = load_config_with(path, "psro", missing, staged)
    return oracle, command_section(PsroConfig, "psro", section, str(path))


# --- the payoff table ------------------------------------------------------------------------------------------


def table_key(specs: list[str]) -> str:
    return json.dumps(sorted(specs))


def play_table(specs: list[str], oracle: TrainConfig, psro: PsroConfig, seed: int) -> dict[str, float]:
    """Each distinct member's mean win share at one table (its copies averaged: the seats are symmetric)."""
    from revolution_env.evaluation import evaluate_lineup

    options = {k: v for k, v in oracle.env_options().items() if k != "reward"}
    ev = evaluate_lineup(specs, psro.payoff_games, seed, options, psro.eval_workers, progress=False)
    shares: dict[str, list[float]] = {}
    for result in ev.results:
        for seat, name in enumerate(result.agents):
            shares.setdefault(ev.specs[name], []).append(result.win_share(seat))
    return {spec: float(np.mean(v)) for spec, v in shares.items()}


def payoff_table(members: list[str], played: dict[str, dict[str, float]], oracle: TrainConfig, psro: PsroConfig,
                 save: Any) -> list[dict[tuple[int, ...], float]]:  # fmt: skip
    """``table[i][m]`` (``revolution_training.meta``) for the members, playing the tables not in ``played``."""
    players = oracle.game.players
    table: list[dict[tuple[int, ...], float]] = [{} for _ in members]
    for i, spec in enumerate(members):
        for m in opponent_sets(len(members), players):
            lineup = [spec, *(members[j] for j in m)]
            key = table_key(lineup)
            if key not in played:
                played[key] = play_table(lineup, oracle, psro, oracle.seed + len(played))
                save()
            table[i][m] = played[key][spec]
    return table


# --- the loop ----------------------------------------------------------------------------------------------------


def best_response_config(oracle: TrainConfig, members: list[str], meta: np.ndarray, k: int) -> TrainConfig:
    """The training run of iteration ``k``'s best response: the members as its opponents, drawn with ``meta``."""
    keep = [i for i, w in enumerate(meta) if w > 0]
    heaviest = max(keep, key=lambda i: meta[i])
    checkpoints = [i for i in keep if is_checkpoint(members[i])]
    league = {"heuristics": [members[i] for i in keep], "heuristics_weights": [float(meta[i]) for i in keep],
              "opponent_sampling": "uniform", "p_latest": 0.0, "p_past": 0.0, "p_heuristics": 1.0}  # fmt: skip
    changes: dict[str, Any] = {
        "league": league,
        "selfplay": {"enabled": False},  # an oracle of pure self-play still answers the population, not itself
        "seed": oracle.seed + k,
    }
    if not oracle.init_from:
        if checkpoints:
            changes["init_from"] = members[max(checkpoints, key=lambda i: meta[i])].removesuffix(":sample")
        elif not oracle.imitation.teacher:
            changes["imitation"] = {"teacher": members[heaviest]}
    if oracle.evaluation.opponents is None:
        changes["evaluation"] = {"opponents": [members[i] for i in keep]}
    return oracle.replace(**changes)


def _relative(spec: str, out: Path) -> str:
    """A member as the population file names it: a checkpoint inside the run folder relative to it."""
    path = Path(spec.removesuffix(":sample"))
    if is_checkpoint(spec) and path.resolve().is_relative_to(out.resolve()):
        return os.path.relpath(path.resolve(), out.resolve()) + spec[len(str(path)) :]
    return spec


def run_psro(oracle: TrainConfig, psro: PsroConfig, out: str | Path, resume: bool = False,
             progress: bool = False) -> dict[str, Any]:  # fmt: skip
    """Run (or continue) PSRO into ``out``; returns the final ``population.json`` content."""
    from revolution_training.train import BEST, LATEST, command_state, read_state, train

    out = Path(out)
    state_file = out / STATE
    state = command_state(state_file, resume, "PSRO")
    if state is not None:
        oracle = from_dict(state["oracle"], str(state_file), stored=True)  # perhaps from before the sections
        psro = PsroConfig(**state["psro"])
    else:
        state = {"format": POPULATION_FORMAT, "players": oracle.game.players, "oracle": oracle.to_dict(),
                 "psro": dataclasses.asdict(psro), "members": list(psro.population), "played": {},
                 "iterations": []}  # fmt: skip
    out.mkdir(parents=True, exist_ok=True)

    def save() -> None:
        atomic_write(state_file, lambda fh: fh.write(json.dumps(state, indent=1) + "\n"))

    save()
    members: list[str] = state["members"]
    while True:
        k = len(state["iterations"])
        table = payoff_table(members, state["played"], oracle, psro, save)
        meta = solve(table, oracle.game.players, psro.meta_tolerance, psro.meta_iterations)
        gap = regret(table, meta)
        weights = [float(w) for w in meta]
        print(f"psro: {len(members)} members, meta-strategy " + ", ".join(
            f"{m} {w:.2f}" for m, w in zip(members, weights) if w > 0.005) + f" (meta-game regret {gap:.4f})",
            flush=True)  # fmt: skip
        if k >= psro.iterations:
            state["weights"] = weights
            state["regret"] = gap
            state["population"] = [{"spec": _relative(m, out), "weight": w} for m, w in zip(members, weights)]
            save()
            return state
        folder = out / f"br_{k + 1}"
        config = best_response_config(oracle, members, meta, k + 1)
        print(f"psro: iteration {k + 1}/{psro.iterations}: training a best response into {folder}", flush=True)
        result = train(config, out=folder, resume=read_state(folder) is not None, progress=progress)
        if result.interrupted:
            raise KeyboardInterrupt
        best = str(folder / BEST) if (folder / BEST).exists() else str(folder / LATEST)  # no evaluations: its last
        state["iterations"].append({"members": list(members), "weights": weights, "regret": gap,
                                    "best_response": best, "best_response_win_rate": result.best_win_rate})  # fmt: skip
        members.append(best)
        save()
