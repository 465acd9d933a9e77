"""Schedule games (every seat order of a lineup; every lineup of a pool), play them over processes, and
gather the results in game order so that an evaluation depends on its seed alone, not on the workers.

Every game's seed and seating are a function of the evaluation's seed and the game's index alone
(:func:`game_seed`, :func:`lineup_tasks`): a :class:`Tournament` played in pieces, in any order, by any number of
runs (``revolution eval`` resumes an interrupted one, :mod:`.journal`), gives the evaluation it gives in one go."""

from __future__ import annotations

import contextlib
import inspect
import itertools
import os
from collections.abc import Callable, Mapping, Sequence
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
    indices: list[int] | None = None  # each game's index in the evaluation (all_results' order); None: 0, 1, ...
    planned: int | None = None  # the games of the whole evaluation; None: those played (it is complete)

    @property
    def complete(self) -> bool:
        """Whether every game of the evaluation was played (not one interrupted: a partial evaluation)."""
        return self.planned is None or len(self.all_results()) == self.planned

    def all_indices(self) -> list[int]:
        """The index of each game of :meth:`all_results` in the evaluation (its seed and seating come from it)."""
        return list(range(len(self.all_results()))) if self.indices is None else list(self.indices)

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
        played = len(self.all_results())
        out: dict[str, Any] = {
            "complete": self.complete,  # false: interrupted, the statistics are those of the games played so far
            "progress": {"games_played": played, "games_total": played if self.planned is None else self.planned},
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


def _play_numbered(packed: tuple[int, Sequence[GameTask], dict[str, Any]]) -> tuple[int, list[GameResult]]:
    number, tasks, options = packed
    return number, _play_chunk(tasks, options)


def _chunks(tasks: Sequence[GameTask], parts: int) -> list[Sequence[GameTask]]:
    """The tasks in order, cut into pieces of at most MAX_CHUNK, at least ``parts`` of them where there are enough."""
    size = max(1, min(MAX_CHUNK, -(-len(tasks) // max(1, parts))))
    return [tasks[i : i + size] for i in range(0, len(tasks), size)]


Record = Callable[[Sequence[GameTask], Sequence[GameResult]], None]  # told of some tasks' games as they finish


def _play_on_ray(tasks: Sequence[GameTask], options: dict[str, Any], address: str, workers: int | None,
                 finished: Record) -> None:  # fmt: skip
    """The tasks as Ray tasks, in chunks, each chunk's games to ``finished`` as it ends, whatever node played it.
    ``address``: ``""`` starts a local Ray instance (or joins the cluster named by ``RAY_ADDRESS``); else a cluster
    address (``auto``, ``HOST:6379``, ``ray://HOST:10001``). Checkpoint paths must be readable on every node. Ctrl-C
    cancels the chunks not yet done."""
    with ray_session(address, workers) as ray:
        remote = ray.remote(_play_chunk)
        chunk = max(1, min(32, len(tasks) // (8 * max(1, int(ray.cluster_resources().get("CPU", 1))))))
        chunks = [tasks[i : i + chunk] for i in range(0, len(tasks), chunk)]
        refs = [remote.remote(part, options) for part in chunks]
        order = {ref: i for i, ref in enumerate(refs)}
        pending = list(refs)
        try:
            while pending:
                done, pending = ray.wait(pending, num_returns=1)
                for ref in done:
                    finished(chunks[order[ref]], ray.get(ref))
        except KeyboardInterrupt:
            for ref in pending:
                with contextlib.suppress(Exception):
                    ray.cancel(ref)
            raise


def play_tasks(
    tasks: Sequence[GameTask],
    env_options: Mapping[str, Any],
    workers: int | None = None,
    progress: bool | None = None,
    description: str = "games",
    ray_address: str | None = None,
    record: Record | None = None,
    already: int = 0,
) -> list[GameResult]:
    """Play every task, over ``workers`` processes (or on a Ray cluster: ``ray_address``, see
    :func:`_play_on_ray`); the results come back in task order, the same wherever they were played.
    ``progress``: show a bar (None: only on a terminal), counting ``already`` games played before. ``record``:
    called with each piece of tasks and their games as soon as they are played, in the order they finish (so
    that an interrupted evaluation keeps them: :mod:`.journal`)."""
    from tqdm import tqdm

    if workers is not None and workers < 1:
        raise ValueError(f"workers: expected a positive integer, got {workers}")
    options = dict(env_options)
    played: dict[int, GameResult] = {}

    def finished(part: Sequence[GameTask], results: Sequence[GameResult]) -> None:
        played.update(zip((t.index for t in part), results))
        if record is not None:
            record(part, results)
        bar.update(len(part))

    disable = None if progress is None else not progress
    with tqdm(total=already + len(tasks), initial=already, desc=description, unit="game", disable=disable) as bar:
        if not tasks:
            pass  # every game was played before: no workers to start
        elif ray_address is not None:
            _play_on_ray(tasks, options, ray_address, workers, finished)
        elif (workers := default_workers() if workers is None else workers) == 1 or len(tasks) <= 1:
            for part in _chunks(tasks, 4):
                finished(part, _play_chunk(part, options))
        else:
            chunks = _chunks(tasks, workers * 4)
            # workers ignore Ctrl-C and SIGTERM: one killed by a signal to the process group would hang imap
            with worker_pool(min(workers, len(tasks))) as pool:
                for number, results in pool.imap_unordered(
                    _play_numbered, ((i, c, options) for i, c in enumerate(chunks))
                ):
                    finished(chunks[number], results)
    return [played[t.index] for t in tasks]


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


DESCRIPTIONS = {"lineup": "lineup", "pool": "round robin", "gauntlet": "gauntlet"}  # the progress bar's


@dataclass
class Tournament:
    """An evaluation before its games are played: its agents and every game's task, and how their results are
    gathered (:meth:`evaluation`). Each task is a function of the seed and its index alone, so the games may be
    played in any order and in several runs (:meth:`play` leaves out those given as done)."""

    mode: str  # "lineup", "pool" or "gauntlet"
    names: dict[str, str]  # every agent: name -> spec (a gauntlet's held-out opponents last)
    players: int
    games: int  # per lineup or table
    seed: int
    options: dict[str, Any]
    tasks: list[GameTask]
    tables: list[tuple[tuple[str, ...], int, int]] = field(default_factory=list)  # a gauntlet's: opponents, span
    held_tables: list[tuple[tuple[str, ...], int, int]] = field(default_factory=list)  # its held-out opponents'
    held_out: list[str] = field(default_factory=list)  # the names of a gauntlet's held-out opponents

    def manifest(self) -> dict[str, Any]:
        """What the evaluation is: every field that decides its games (the workers, Ray and the bar do not)."""
        return {
            "mode": self.mode,
            "agents": dict(self.names),
            "held_out": list(self.held_out),
            "players": self.players,
            "games": self.games,
            "seed": self.seed,
            "options": dict(self.options),
            "games_total": len(self.tasks),
        }

    def play(
        self,
        workers: int | None = None,
        progress: bool | None = None,
        ray_address: str | None = None,
        done: Mapping[int, GameResult] | None = None,
        record: Record | None = None,
    ) -> Evaluation:
        """Play the games not in ``done`` (game index -> result, those of an earlier run), each piece to ``record``
        as it finishes (:func:`play_tasks`); the evaluation of them all."""
        done = dict(done or {})
        todo = [t for t in self.tasks if t.index not in done]
        results = play_tasks(todo, self.options, workers, progress, DESCRIPTIONS[self.mode], ray_address, record,
                             already=len(self.tasks) - len(todo))  # fmt: skip
        done.update(zip((t.index for t in todo), results))
        return self.evaluation(done)

    def evaluation(self, done: Mapping[int, GameResult]) -> Evaluation:
        """The evaluation of the games in ``done`` (game index -> result): all of them, or those played before an
        interruption (a partial evaluation, :attr:`Evaluation.complete` false), gathered in game order."""
        indices = [t.index for t in self.tasks if t.index in done]
        n = len(self.tasks) if not self.tables else self.tables[-1][2]  # a gauntlet's held-out games come last
        results = [done[i] for i in indices if i < n]
        training = {name: self.names[name] for name in list(self.names)[: len(self.names) - len(self.held_out)]}
        names = list(training)
        evaluation = Evaluation(self.mode, training, self.players, self.games, self.seed, dict(self.options), results,
                                aggregate(results, names if self.mode != "gauntlet" else None),
                                indices=indices, planned=len(self.tasks))  # fmt: skip
        if self.mode == "pool":
            evaluation.head_to_head = head_to_head(results, names)
        if self.mode == "gauntlet":
            evaluation.gauntlet = _gauntlet_tables(names[0], self.players, done, self.tables)
        if self.held_out:
            held_results = [done[i] for i in indices if i >= n]
            evaluation.held_out = HeldOut(
                {name: self.names[name] for name in self.held_out},
                held_results,
                aggregate(held_results),
                _gauntlet_tables(names[0], self.players, done, self.held_tables),
            )
        return evaluation


def lineup_tournament(
    specs: Sequence[str], games: int, seed: int = 0, env_options: Mapping[str, Any] | None = None
) -> Tournament:
    """``games`` games of one lineup (one spec per player), rotated over every seat order."""
    _check(games, seed)
    options = _options(env_options, len(specs))
    names = name_agents(specs)
    _validate_specs(names, options)
    tasks = lineup_tasks(list(names), list(names.values()), games, seed)
    return Tournament("lineup", names, len(specs), games, seed, options, tasks)


def pool_lineups(names: Sequence[str], players: int) -> list[tuple[str, ...]]:
    """The round robin: every lineup of ``players`` distinct pool members."""
    return list(itertools.combinations(names, players))


def pool_tournament(
    specs: Sequence[str], players: int, games: int, seed: int = 0, env_options: Mapping[str, Any] | None = None
) -> Tournament:
    """A round robin: ``games`` games for every lineup of ``players`` distinct pool members, each rotated over
    every seat order."""
    _check(games, seed)
    options = _options(env_options, players)
    names = name_agents(specs)
    if len(names) < players:
        raise ValueError(f"pool: {players}-player games need at least {players} agents, got {len(names)}")
    _validate_specs(names, options)
    tasks: list[GameTask] = []
    for lineup in pool_lineups(list(names), players):
        tasks += lineup_tasks(lineup, [names[n] for n in lineup], games, seed, start=len(tasks))
    return Tournament("pool", names, players, games, seed, options, tasks)


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


def _gauntlet_tables(agent: str, players: int, done: Mapping[int, GameResult], spans: Sequence[tuple]) -> dict:
    """The agent's win rate at every table (``done``: game index -> result) and its worst table. A table none of
    whose games were played yet (a partial evaluation) has no win rate, and is no one's worst."""
    rows = []
    for table, start, stop in spans:
        part = [done[i] for i in range(start, stop) if i in done]
        wins = sum(r.win_share(r.agents.index(agent)) for r in part)
        low, high = wilson_interval(wins, len(part))
        rate = wins / len(part) if part else None
        rows.append({"opponents": list(table), "games": len(part), "win_rate": rate, "win_rate_ci95": [low, high]})
    played = [row for row in rows if row["games"]]
    worst = min(played, key=lambda row: (row["win_rate"], row["opponents"])) if played else None
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


def gauntlet_tournament(
    agent: str,
    opponents: Sequence[str],
    players: int,
    games: int,
    seed: int = 0,
    env_options: Mapping[str, Any] | None = None,
    held_out: Sequence[str] = (),
) -> Tournament:
    """``agent`` against every table of ``opponents`` (:func:`gauntlet_tables`), ``games`` games per table, each
    rotated over every seat order; ``held_out`` opponents' tables after the others' (:func:`evaluate_gauntlet`)."""
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
    return Tournament("gauntlet", names, players, games, seed, options, tasks + held_tasks, spans, held_spans,
                      held_out_names)  # fmt: skip


# --- the tournaments played -----------------------------------------------------------------------------------

# Tournament.play's parameters, with their annotations: how many processes, a progress bar, a Ray cluster
PLAYED_BY = {"workers": "int | None", "progress": "bool | None", "ray_address": "str | None"}


def _played(tournament: Callable[..., Tournament], name: str, doc: str) -> Callable[..., Evaluation]:
    """The function ``name`` that plays the games of ``tournament(...)`` (:meth:`Tournament.play`): it takes the
    tournament's parameters, with ``workers``, ``progress`` and ``ray_address`` after ``env_options``."""
    made = inspect.signature(tournament)
    params = list(made.parameters.values())
    at = list(made.parameters).index("env_options") + 1
    kind = inspect.Parameter.POSITIONAL_OR_KEYWORD
    where = [inspect.Parameter(p, kind, default=None, annotation=a) for p, a in PLAYED_BY.items()]
    signature = made.replace(parameters=params[:at] + where + params[at:], return_annotation="Evaluation")

    def evaluate(*args: Any, **kwargs: Any) -> Evaluation:
        arguments = signature.bind(*args, **kwargs).arguments
        by = [arguments.pop(p, None) for p in PLAYED_BY]
        return tournament(**arguments).play(*by)

    evaluate.__name__ = evaluate.__qualname__ = name
    evaluate.__doc__, evaluate.__signature__ = doc, signature  # type: ignore[attr-defined]
    return evaluate


evaluate_lineup = _played(
    lineup_tournament,
    "evaluate_lineup",
    """``games`` games of one lineup (one spec per player), rotated over every seat order.""",
)
evaluate_pool = _played(
    pool_tournament,
    "evaluate_pool",
    """A round robin (:func:`pool_tournament`): statistics per agent and a head-to-head matrix.""",
)
evaluate_gauntlet = _played(
    gauntlet_tournament,
    "evaluate_gauntlet",
    """``agent`` against every table of ``opponents`` (:func:`gauntlet_tables`), ``games`` games per table, each
    rotated over every seat order. The headline is the agent's worst table: robustness, not an average.

    ``held_out``: opponents no training run may use (docs/heldout.md), whose tables are played the same way after
    the others' (so that the others' games are those of a gauntlet without them) and reported apart, with their
    own worst table (``Evaluation.held_out``).""",
)
