"""Schedule games (every seat order of a lineup; every lineup of a pool), play them over processes, and
gather the results in game order so that an evaluation depends on its seed alone, not on the workers."""

from __future__ import annotations

import itertools
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from revolution_env.agents.base import Agent
from revolution_env.agents.loading import checkpoint_path, display_name, load_agent
from revolution_env.agents.mixture import is_mixture, parse_mixture
from revolution_env.agents.search import is_search, searched_spec
from revolution_env.arena.runner import GameResult, play_game
from revolution_env.common.workers import ray_session, worker_pool
from revolution_env.evaluation.stats import (
    AgentStats,
    aggregate,
    head_to_head,
    lineup_summaries,
    summary,
    wilson_interval,
)


@dataclass(frozen=True)
class GameTask:
    """One game to play: its index in the evaluation, its seed, and who sits where."""

    index: int
    seed: int
    names: tuple[str, ...]
    specs: tuple[str, ...]


@dataclass
class Evaluation:
    """An evaluation and its results: ``stats`` per agent name, ``head_to_head`` for pools."""

    mode: str  # "lineup" or "pool"
    specs: dict[str, str]  # agent name -> spec
    players: int
    games: int  # per lineup
    seed: int
    env_options: dict[str, Any]
    results: list[GameResult]
    stats: dict[str, AgentStats] = field(default_factory=dict)
    head_to_head: dict[str, dict[str, Any]] | None = None
    gauntlet: dict[str, Any] | None = None  # mode "gauntlet": the agent's result at every table
    held_out: HeldOut | None = None  # a gauntlet's held-out opponents, kept apart (docs/heldout.md)

    def config(self) -> dict[str, Any]:
        return {
            "mode": self.mode,
            "specs": list(self.specs.values()),
            "agents": dict(self.specs),
            "players": self.players,
            "games": self.games,
            "games_total": len(self.results),
            "seed": self.seed,
            "options": dict(self.env_options),
        }

    def to_dict(self) -> dict[str, Any]:
        """What results.json holds (nothing that depends on the machine, the clock or the workers)."""
        out: dict[str, Any] = {
            "config": self.config(),
            "agents": {name: s.to_dict() for name, s in self.stats.items()},
            "summary": summary(self.results),
            "lineups": lineup_summaries(self.results, list(self.specs)),
        }
        if self.head_to_head is not None:
            out["head_to_head"] = self.head_to_head
        if self.gauntlet is not None:
            out["gauntlet"] = self.gauntlet
        if self.held_out is not None:
            out["held_out"] = self.held_out.to_dict()
        return out

    def all_results(self) -> list[GameResult]:
        """Every game played, in game order: the held-out opponents' after the rest (games.jsonl)."""
        return self.results + (self.held_out.results if self.held_out is not None else [])


@dataclass
class HeldOut:
    """A gauntlet's games against its held-out opponents (docs/heldout.md): their own statistics and tables, with
    their own worst table, never merged with the training opponents' (``Evaluation.stats``, ``.gauntlet``)."""

    specs: dict[str, str]  # held-out opponent name -> spec
    results: list[GameResult]
    stats: dict[str, AgentStats]
    gauntlet: dict[str, Any]  # as Evaluation.gauntlet: agent, chance, tables, worst

    def to_dict(self) -> dict[str, Any]:
        return {
            **self.gauntlet,
            "opponents": dict(self.specs),
            "games_total": len(self.results),
            "agents": {name: s.to_dict() for name, s in self.stats.items()},
            "summary": summary(self.results),
        }


# --- names and seeds ---------------------------------------------------------------------------------------


def name_agents(specs: Sequence[str]) -> dict[str, str]:
    """Agents are named by their spec (a path by its last folder and stem); a name given again gets a suffix
    (``random``, ``random#2``, ...)."""
    names: dict[str, str] = {}
    counts: dict[str, int] = {}
    for spec in specs:
        base = display_name(spec)
        counts[base] = counts.get(base, 0) + 1
        names[base if counts[base] == 1 else f"{base}#{counts[base]}"] = spec
    return names


def game_seed(seed: int, index: int) -> int:
    """The seed of game ``index`` of an evaluation seeded with ``seed``."""
    return int(np.random.SeedSequence([seed, index]).generate_state(2, np.uint64)[0] >> np.uint64(1))


def seat_orders(players: int) -> list[tuple[int, ...]]:
    """Every order of the lineup around the table (``order[seat]`` = lineup member)."""
    return list(itertools.permutations(range(players)))


def lineup_tasks(names: Sequence[str], specs: Sequence[str], games: int, seed: int, start: int = 0) -> list[GameTask]:
    """``games`` games of one lineup, dealt over its seat orders in turn (each order within one game of the
    others'), numbered from ``start``."""
    orders = seat_orders(len(names))
    tasks = []
    for i in range(games):
        order = orders[i % len(orders)]
        index = start + i
        tasks.append(
            GameTask(index, game_seed(seed, index), tuple(names[m] for m in order), tuple(specs[m] for m in order))
        )
    return tasks


# --- playing -----------------------------------------------------------------------------------------------

_AGENTS: dict[tuple, Agent] = {}  # per process: (name, spec, file version, options) -> agent, loaded once
_MAX_AGENTS = 32


def _version(spec: str) -> tuple:
    """The file version of a checkpoint spec (and of every checkpoint in a mixture): one rewritten at the same path
    is a new agent."""
    if is_mixture(spec):
        try:
            return tuple(_version(name) for name, _ in parse_mixture(spec))
        except ValueError:
            return ()
    if is_search(spec):
        return _version(searched_spec(spec))
    try:
        st = os.stat(checkpoint_path(spec))
    except OSError:
        return ()
    return (st.st_mtime_ns, st.st_size)


def _agent(name: str, spec: str, env_options: Mapping[str, Any]) -> Agent:
    key = (name, spec, _version(spec), tuple(sorted(env_options.items())))
    if key not in _AGENTS:
        if len(_AGENTS) >= _MAX_AGENTS:
            _AGENTS.clear()
        _AGENTS[key] = load_agent(spec, **env_options)
    return _AGENTS[key]


def play_task(task: GameTask, env_options: Mapping[str, Any]) -> GameResult:
    """Play one scheduled game (a top-level function, so that spawned workers can run it)."""
    agents = [_agent(n, s, env_options) for n, s in zip(task.names, task.specs)]
    return play_game(agents, env_options, task.seed, names=task.names, record=True)  # games.jsonl replays each game


def default_workers() -> int:
    return min(2, os.cpu_count() or 1)


MAX_CHUNK = 256  # games played side by side on the batched engine


def _play_chunk(tasks: Sequence[GameTask], env_options: Mapping[str, Any]) -> list[GameResult]:
    """Some tasks' games: side by side on the batched engine where every agent and the variant allow it
    (:mod:`.batched`), else one by one; the same results either way."""
    from revolution_env.arena.batched import can_batch, play_batched

    agents = {(n, s): _agent(n, s, env_options) for t in tasks for n, s in zip(t.names, t.specs)}
    if len(tasks) > 1 and can_batch(list(agents.values()), env_options):
        return play_batched(tasks, agents, env_options)
    return [play_task(task, env_options) for task in tasks]


def _play_packed(packed: tuple[Sequence[GameTask], dict[str, Any]]) -> list[GameResult]:
    return _play_chunk(*packed)


def _chunks(tasks: Sequence[GameTask], parts: int) -> list[Sequence[GameTask]]:
    """The tasks in order, cut into pieces of at most MAX_CHUNK, at least ``parts`` of them where there are enough."""
    size = max(1, min(MAX_CHUNK, -(-len(tasks) // max(1, parts))))
    return [tasks[i : i + size] for i in range(0, len(tasks), size)]


def _play_on_ray(tasks: Sequence[GameTask], options: dict[str, Any], address: str, workers: int | None, bar: Any):
    """The tasks as Ray tasks, in chunks; results in task order, whatever node played them. ``address``: ``""``
    starts a local Ray instance (or joins the cluster named by ``RAY_ADDRESS``); else a cluster address
    (``auto``, ``HOST:6379``, ``ray://HOST:10001``). Checkpoint paths must be readable on every node."""
    with ray_session(address, workers) as ray:
        remote = ray.remote(_play_chunk)
        chunk = max(1, min(32, len(tasks) // (8 * max(1, int(ray.cluster_resources().get("CPU", 1))))))
        refs = [remote.remote(tasks[i : i + chunk], options) for i in range(0, len(tasks), chunk)]
        order = {ref: i for i, ref in enumerate(refs)}
        parts: list[list[GameResult] | None] = [None] * len(refs)
        pending = list(refs)
        while pending:
            done, pending = ray.wait(pending, num_returns=1)
            for ref in done:
                parts[order[ref]] = ray.get(ref)
                bar.update(len(parts[order[ref]]))
        return [r for part in parts for r in part]


def play_tasks(
    tasks: Sequence[GameTask],
    env_options: Mapping[str, Any],
    workers: int | None = None,
    progress: bool | None = None,
    description: str = "games",
    ray_address: str | None = None,
) -> list[GameResult]:
    """Play every task, over ``workers`` processes (or on a Ray cluster: ``ray_address``, see
    :func:`_play_on_ray`); the results come back in task order, the same wherever they were played.
    ``progress``: show a bar (None: only on a terminal)."""
    from tqdm import tqdm

    if workers is not None and workers < 1:
        raise ValueError(f"workers: expected a positive integer, got {workers}")
    options = dict(env_options)
    bar = tqdm(total=len(tasks), desc=description, unit="game", disable=None if progress is None else not progress)
    if ray_address is not None:
        with bar:
            return _play_on_ray(tasks, options, ray_address, workers, bar)
    workers = default_workers() if workers is None else workers
    results: list[GameResult] = []
    with bar:
        if workers == 1 or len(tasks) <= 1:
            for part in _chunks(tasks, 4):
                results += _play_chunk(part, options)
                bar.update(len(part))
        else:
            # workers ignore Ctrl-C and SIGTERM: one killed by a signal to the process group would hang imap
            with worker_pool(min(workers, len(tasks))) as pool:
                for part in pool.imap(_play_packed, ((c, options) for c in _chunks(tasks, workers * 4))):
                    results += part
                    bar.update(len(part))
    return results


# --- evaluations -------------------------------------------------------------------------------------------


def _check(games: int, seed: int) -> None:
    if isinstance(games, bool) or not isinstance(games, int) or games < 1:
        raise ValueError(f"games: expected a positive integer, got {games!r}")
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise ValueError(f"seed: expected a non-negative integer, got {seed!r}")


def _validate_specs(names: Mapping[str, str], env_options: Mapping[str, Any]) -> None:
    """Load every agent once here, so that a bad spec fails before any game is played."""
    for name, spec in names.items():
        _agent(name, spec, env_options)


def _options(env_options: Mapping[str, Any] | None, players: int) -> dict[str, Any]:
    options = {k: v for k, v in dict(env_options or {}).items() if k not in ("render_mode", "reward")}
    if "players" in options and options["players"] != players:
        raise ValueError(f"players: the options say {options['players']} but the lineup has {players} agents")
    options["players"] = players
    return options


def evaluate_lineup(
    specs: Sequence[str],
    games: int,
    seed: int = 0,
    env_options: Mapping[str, Any] | None = None,
    workers: int | None = None,
    progress: bool | None = None,
    ray_address: str | None = None,
) -> Evaluation:
    """``games`` games of one lineup (one spec per player), rotated over every seat order."""
    _check(games, seed)
    options = _options(env_options, len(specs))
    names = name_agents(specs)
    _validate_specs(names, options)
    tasks = lineup_tasks(list(names), list(names.values()), games, seed)
    results = play_tasks(tasks, options, workers, progress, "lineup", ray_address)
    return Evaluation("lineup", names, len(specs), games, seed, options, results, aggregate(results, list(names)))


def pool_lineups(names: Sequence[str], players: int) -> list[tuple[str, ...]]:
    """The round robin: every lineup of ``players`` distinct pool members."""
    return list(itertools.combinations(names, players))


def evaluate_pool(
    specs: Sequence[str],
    players: int,
    games: int,
    seed: int = 0,
    env_options: Mapping[str, Any] | None = None,
    workers: int | None = None,
    progress: bool | None = None,
    ray_address: str | None = None,
) -> Evaluation:
    """A round robin: ``games`` games for every lineup of ``players`` distinct pool members, each rotated over
    every seat order; statistics per agent and a head-to-head matrix."""
    _check(games, seed)
    options = _options(env_options, players)
    names = name_agents(specs)
    if len(names) < players:
        raise ValueError(f"pool: {players}-player games need at least {players} agents, got {len(names)}")
    _validate_specs(names, options)
    tasks: list[GameTask] = []
    for lineup in pool_lineups(list(names), players):
        tasks += lineup_tasks(lineup, [names[n] for n in lineup], games, seed, start=len(tasks))
    results = play_tasks(tasks, options, workers, progress, "round robin", ray_address)
    evaluation = Evaluation("pool", names, players, games, seed, options, results, aggregate(results, list(names)))
    evaluation.head_to_head = head_to_head(results, list(names))
    return evaluation


def gauntlet_tables(opponents: Sequence[str], players: int) -> list[tuple[str, ...]]:
    """Every table the gauntlet's agent meets: each opponent in two players; every multiset of ``players - 1``
    opponents in three and four (copies of one opponent included)."""
    return list(itertools.combinations_with_replacement(opponents, players - 1))


def _gauntlet_tasks(
    agent: str, opponents: Sequence[str], names: Mapping[str, str], players: int, games: int, seed: int, start: int
) -> tuple[list[GameTask], list[tuple[tuple[str, ...], int, int]]]:
    """The games of every table of ``opponents`` (names), numbered from ``start``; and each table's span of them."""
    tasks: list[GameTask] = []
    spans = []
    for table in gauntlet_tables(opponents, players):
        seats = name_agents([names[n] for n in (agent, *table)])  # a repeated opponent is "value#2"
        lineup = [agent] + list(seats)[1:]
        first = start + len(tasks)
        tasks += lineup_tasks(lineup, [names[agent]] + [names[n] for n in table], games, seed, start=first)
        spans.append((table, first, start + len(tasks)))
    return tasks, spans


def _gauntlet_tables(agent: str, players: int, results: Sequence[GameResult], spans: Sequence[tuple]) -> dict:
    """The agent's win rate at every table (``results`` indexed as the spans are) and its worst table."""
    rows = []
    for table, start, stop in spans:
        part = results[start:stop]
        wins = sum(r.win_share(r.agents.index(agent)) for r in part)
        low, high = wilson_interval(wins, len(part))
        rows.append(
            {"opponents": list(table), "games": len(part), "win_rate": wins / len(part), "win_rate_ci95": [low, high]}
        )
    worst = min(rows, key=lambda row: (row["win_rate"], row["opponents"]))
    return {"agent": agent, "chance": 1 / players, "tables": rows, "worst": worst}


def _check_held_out(opponents: Sequence[str], held_out: Sequence[str]) -> None:
    from revolution_env.agents.heldout import is_held_out

    if len(set(held_out)) != len(held_out):
        raise ValueError(f"gauntlet: each held-out opponent once, got {list(held_out)}")
    both = [spec for spec in held_out if spec in opponents]
    if both:
        raise ValueError(f"gauntlet: {both[0]!r} is both a training opponent and a held-out one; give it once")
    named = [spec for spec in opponents if is_held_out(spec)]
    if named:
        raise ValueError(
            f"gauntlet: {named[0]!r} is held out (docs/heldout.md): give it with the held-out opponents, never "
            "among the training ones"
        )


def evaluate_gauntlet(
    agent: str,
    opponents: Sequence[str],
    players: int,
    games: int,
    seed: int = 0,
    env_options: Mapping[str, Any] | None = None,
    workers: int | None = None,
    progress: bool | None = None,
    ray_address: str | None = None,
    held_out: Sequence[str] = (),
) -> Evaluation:
    """``agent`` against every table of ``opponents`` (:func:`gauntlet_tables`), ``games`` games per table, each
    rotated over every seat order. The headline is the agent's worst table: robustness, not an average.

    ``held_out``: opponents no training run may use (docs/heldout.md), whose tables are played the same way after
    the others' (so that the others' games are those of a gauntlet without them) and reported apart, with their
    own worst table (``Evaluation.held_out``)."""
    _check(games, seed)
    options = _options(env_options, players)
    if not opponents:
        raise ValueError("gauntlet: give at least one opponent")
    if len(set(opponents)) != len(opponents):
        raise ValueError(f"gauntlet: each opponent once (tables repeat them as needed), got {list(opponents)}")
    _check_held_out(opponents, held_out)
    names = name_agents([agent, *opponents, *held_out])  # one naming: no held-out name is a training one's
    agent_name, *others = names
    opponent_names, held_out_names = others[: len(opponents)], others[len(opponents) :]
    _validate_specs(names, options)
    tasks, spans = _gauntlet_tasks(agent_name, opponent_names, names, players, games, seed, 0)
    held_tasks, held_spans = _gauntlet_tasks(agent_name, held_out_names, names, players, games, seed, len(tasks))
    results = play_tasks(tasks + held_tasks, options, workers, progress, "gauntlet", ray_address)
    results, held_results = results[: len(tasks)], results[len(tasks) :]
    training = {n: names[n] for n in (agent_name, *opponent_names)}
    evaluation = Evaluation("gauntlet", training, players, games, seed, options, results, aggregate(results))
    evaluation.gauntlet = _gauntlet_tables(agent_name, players, results, spans)
    if held_out:
        evaluation.held_out = HeldOut(
            {n: names[n] for n in held_out_names},
            held_results,
            aggregate(held_results),
            _gauntlet_tables(agent_name, players, results + held_results, held_spans),
        )
    return evaluation
