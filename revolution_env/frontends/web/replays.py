"""The replay library of ``revolution serve``: the games found in the folders given with ``--replays``.

What counts as a game, by file:

* ``games.jsonl`` from ``revolution eval`` (and ``revolution main``): one result per line (agents, seed, final
  support). The moves are not stored, so a game is *played again* with the same agents, options and seeds (the
  ``results.json`` beside it names the agents' specs and the options) and checked against the recorded result.
* A scenario file (docs/scenarios.md), which is also what ``export_game`` and ``revolution random --export`` write.
* A list of scenarios (``.json``) or one per line (``.jsonl``), each possibly wrapped as
  ``{"scenario": ..., "final_state": ...}`` or ``[scenario, final_state]``, as the vector environment's
  ``pop_finished()`` gives them. A given final state is checked against the replay.

Only files under the given folders can be read: a file is named by its folder's index and its path relative to
that folder, and a path that leaves the folder (``..``, an absolute path, a symbolic link pointing outside) is
refused. A file that cannot be read or played gives a :class:`ReplayError` with one line saying why.
"""

from __future__ import annotations

import json
import os
import threading
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

from revolution_env.agents.loading import display_name
from revolution_env.common.files import atomic_write
from revolution_env.engine.scenario import ScenarioError, UnrecordedDrawError, export_game, state_dict
from revolution_env.frontends.web.trace import replay_scenario

MAX_FILE_BYTES = 64 * 1024 * 1024
SUFFIXES = (".json", ".jsonl")
SKIP_DIRS = {".git", ".venv", "node_modules", "__pycache__"}


class ReplayError(ValueError):
    """A replay that cannot be found, read or played; ``status`` is the HTTP status that fits."""

    def __init__(self, message: str, status: int = 422) -> None:
        super().__init__(message)
        self.status = status


@dataclass
class Entry:
    """One file of games: ``kind`` is ``eval`` (a games.jsonl), ``scenario`` (one game) or ``scenarios``."""

    file: str
    kind: str
    items: list[Any]
    specs: dict[str, str] | None = None  # eval: agent name -> spec
    options: dict[str, Any] | None = None  # eval: the environment options
    note: str = ""
    version: tuple = ()  # the file's modification time and size when read


def _replay(scenario: Any, where: str) -> tuple[Any, dict[str, Any], list[str]]:
    """A scenario replayed from its record; one saved before saved games recorded their draws (the first
    edition's deck), from its seed, with a warning."""
    try:
        game, replay = replay_scenario(scenario)
        return game, replay, []
    except UnrecordedDrawError:
        pass
    except ScenarioError as exc:
        raise ReplayError(f"{where}: cannot be replayed: {exc}") from None
    try:
        game, replay = replay_scenario(scenario, draws="seed")
    except ScenarioError as exc:
        raise ReplayError(f"{where}: cannot be replayed: {exc}") from None
    return game, replay, ["this game does not record its card draws (saved before games recorded them): they are "
                         "drawn again from its seed by this version of the engine"]  # fmt: skip


def _scenario_of(item: Any) -> tuple[Any, Any]:
    """(scenario, expected final state or None) from one stored game."""
    if isinstance(item, dict) and "scenario" in item:
        return item["scenario"], item.get("final_state", item.get("final"))
    if isinstance(item, list) and len(item) == 2 and isinstance(item[0], dict):
        return item[0], item[1]
    return item, None


def _looks_like_scenario(item: Any) -> bool:
    scenario, _ = _scenario_of(item)
    return isinstance(scenario, dict) and ("rounds" in scenario or "rules" in scenario)


def _is_eval_line(item: Any) -> bool:
    return isinstance(item, dict) and "agents" in item and "seed" in item and "support" in item


def _shown(file_id: str) -> str:
    """A file id as people read it: its path inside the replay folder."""
    return file_id.split("/", 1)[1] if file_id[:1].isdigit() else file_id


class ReplayLibrary:
    """The games under some folders, found, summarised and replayed on demand (replays are cached)."""

    def __init__(
        self,
        roots: list[str | os.PathLike],
        load_agent: Callable[..., Any] | None = None,
        save_dir: str | os.PathLike | None = None,
        cache_size: int = 16,
    ) -> None:
        self.roots = []
        for root in roots:
            path = Path(root).expanduser()
            if not path.is_dir():
                raise ValueError(f"--replays: {root!r} is not a folder")
            self.roots.append(path.resolve())
        self._load_agent = load_agent
        self._agents: dict[tuple, Any] = {}
        self._cache: OrderedDict[tuple, Any] = OrderedDict()
        self._cache_size = cache_size
        self._lock = threading.Lock()
        self.saved: dict[str, Any] = {}  # games saved in this session when there is no folder to save them to
        self.save_dir = Path(save_dir) if save_dir is not None else None

    # --- files ---

    def resolve(self, file_id: str) -> Path:
        """The path of a file named ``ROOT/RELATIVE/PATH``, refused unless it lies under that replay folder."""
        if not isinstance(file_id, str) or "/" not in file_id or "\x00" in file_id:
            raise ReplayError(f"no such replay file {file_id!r}", 404)
        head, rel = file_id.split("/", 1)
        if not head.isdigit() or int(head) >= len(self.roots):
            raise ReplayError(f"no such replay file {file_id!r}", 404)
        root = self.roots[int(head)]
        parts = PurePosixPath(rel).parts
        if not parts or rel.startswith("/") or "\\" in rel or any(p in ("..", ".", "") for p in parts):
            raise ReplayError(f"refused: {file_id!r} is not a path inside a replay folder", 403)
        path = (root / Path(*parts)).resolve()
        if not path.is_relative_to(root):
            raise ReplayError(f"refused: {file_id!r} leads outside the replay folder", 403)
        if not path.is_file() or path.suffix not in SUFFIXES:
            raise ReplayError(f"no such replay file {file_id!r}", 404)
        return path

    def files(self) -> list[dict[str, Any]]:
        """Every file of games under the replay folders, with how many games it holds (or why it is broken)."""
        out = []
        for i, root in enumerate(self.roots):
            for dirpath, dirnames, filenames in os.walk(root):
                dirnames[:] = sorted(d for d in dirnames if d not in SKIP_DIRS and not d.startswith("."))
                for name in sorted(filenames):
                    if not name.endswith(SUFFIXES):
                        continue
                    rel = Path(dirpath, name).relative_to(root).as_posix()
                    file_id = f"{i}/{rel}"
                    try:
                        self.resolve(file_id)  # a link leading outside is not listed
                        entry = self.entry(file_id)
                    except ReplayError as exc:
                        if exc.status in (403, 404):
                            continue
                        out.append({"id": file_id, "root": str(root), "path": rel, "error": str(exc)})
                        continue
                    if entry is None:
                        continue  # JSON that is not a game (results.json, a board, a config)
                    out.append({"id": file_id, "root": str(root), "path": rel, "kind": entry.kind,
                                "games": len(entry.items), "note": entry.note})  # fmt: skip
        for key in self.saved:
            out.append({"id": key, "root": "", "path": f"{key} (this session)", "kind": "scenario", "games": 1,
                        "note": "saved in this session"})  # fmt: skip
        return out

    def entry(self, file_id: str) -> Entry | None:
        """The file's games (None for JSON that holds no game); cached while the file is unchanged."""
        if file_id in self.saved:
            return Entry(file_id, "scenario", [self.saved[file_id]])
        path = self.resolve(file_id)
        stat = path.stat()
        key = ("entry", file_id, stat.st_mtime_ns, stat.st_size)
        with self._lock:
            if key in self._cache:
                return self._cache[key]
        if stat.st_size > MAX_FILE_BYTES:
            raise ReplayError(f"{file_id}: too large to read ({stat.st_size} bytes)")
        entry = self._read(file_id, path)
        if entry is not None:
            entry.version = key[2:]
        self._remember(key, entry)
        return entry

    def _read(self, file_id: str, path: Path) -> Entry | None:
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise ReplayError(f"{file_id}: cannot read the file ({exc})") from None
        if path.suffix == ".jsonl":
            items, torn = [], False
            lines = text.split("\n")
            for n, line in enumerate(lines, start=1):
                if not line.strip():
                    continue
                try:
                    items.append(json.loads(line))
                except json.JSONDecodeError as exc:
                    if n == len(lines):  # after the last newline: a line still being written, or cut by a kill
                        torn = True
                        continue
                    raise ReplayError(
                        f"{file_id}: line {n} is not valid JSON ({exc.msg}, column {exc.colno})"
                    ) from None
            if not items:
                return None
            if all(_is_eval_line(x) for x in items):
                # an evaluation still playing (or stopped) appends its games as they finish: list them by index
                if all(isinstance(x.get("game"), int) for x in items):
                    items.sort(key=lambda x: x["game"])
                entry = self._eval_entry(file_id, path, items)
                if torn:
                    entry.note = "; ".join(filter(None, [entry.note, "its last line, cut short, is left out"]))
                return entry
            if all(_looks_like_scenario(x) for x in items):
                return Entry(file_id, "scenarios", items)
            bad = next(n for n, x in enumerate(items, 1) if not (_is_eval_line(x) or _looks_like_scenario(x)))
            raise ReplayError(f"{file_id}: line {bad} is neither an evaluation result nor a scenario")
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise ReplayError(f"{file_id}: not valid JSON ({exc.msg}, line {exc.lineno}, column {exc.colno})") from None
        if _looks_like_scenario(data) and not isinstance(data, list):
            return Entry(file_id, "scenario", [data])
        if isinstance(data, list) and data and all(_looks_like_scenario(x) for x in data):
            return Entry(file_id, "scenarios", data)
        return None

    def _eval_entry(self, file_id: str, path: Path, items: list[Any]) -> Entry:
        specs, options, note = None, None, ""
        results = path.with_name("results.json")
        if results.is_file():
            try:
                config = json.loads(results.read_text(encoding="utf-8"))["config"]
                specs, options = dict(config["agents"]), dict(config["options"])
            except (OSError, ValueError, KeyError, TypeError):
                note = "results.json beside it is unreadable: agents are taken by name"
        else:
            note = "no results.json beside it: agents are taken by name, rules by default"
        return Entry(file_id, "eval", items, specs, options, note)

    def _remember(self, key: tuple, value: Any) -> None:
        """Keep a file's games (many) or a replay (few: they are large), dropping the oldest of its kind."""
        limit = self._cache_size if key[0] == "replay" else 16 * self._cache_size
        with self._lock:
            self._cache[key] = value
            self._cache.move_to_end(key)
            kept = [k for k in self._cache if k[0] == key[0]]
            for old in kept[: max(0, len(kept) - limit)]:
                del self._cache[old]

    # --- games ---

    def games(self, file_id: str, offset: int = 0, limit: int = 100) -> dict[str, Any]:
        """A page of the file's games, summarised for a list."""
        entry = self.entry(file_id)
        if entry is None:
            raise ReplayError(f"{file_id}: holds no game", 404)
        rows = []
        for index in range(max(0, offset), min(len(entry.items), max(0, offset) + max(1, limit))):
            item = entry.items[index]
            if entry.kind == "eval":
                rows.append({"index": index, "agents": item.get("agents"), "support": item.get("support"),
                             "winners": item.get("winners"), "rounds": item.get("rounds")})  # fmt: skip
            else:
                scenario, _ = _scenario_of(item)
                rules = scenario.get("rules", {}) if isinstance(scenario, dict) else {}
                rounds = scenario.get("rounds", []) if isinstance(scenario, dict) else []
                rows.append(
                    {
                        "index": index,
                        "players": rules.get("players", 3) if isinstance(rules, dict) else None,
                        "rounds": len(rounds) if isinstance(rounds, list) else None,
                        "description": scenario.get("description", "") if isinstance(scenario, dict) else "",
                    }
                )
        return {"file": file_id, "kind": entry.kind, "total": len(entry.items), "offset": offset, "games": rows,
                "note": entry.note}  # fmt: skip

    def replay(self, file_id: str, index: int) -> dict[str, Any]:
        """Game ``index`` of a file as a replay (see :func:`~.trace.replay_json`), with ``title`` and ``warnings``."""
        entry = self.entry(file_id)
        if entry is None:
            raise ReplayError(f"{file_id}: holds no game", 404)
        if isinstance(index, bool) or not isinstance(index, int) or not 0 <= index < len(entry.items):
            raise ReplayError(f"{file_id}: no game {index!r} (it holds {len(entry.items)})", 404)
        key = ("replay", file_id, index, entry.version)
        with self._lock:
            if key in self._cache:
                return self._cache[key]
        if entry.kind == "eval":
            replay = self._replay_eval(entry, index)
        else:
            replay = self._replay_scenario(entry, index)
        replay["file"], replay["index"] = file_id, index
        self._remember(key, replay)
        return replay

    def _replay_scenario(self, entry: Entry, index: int) -> dict[str, Any]:
        scenario, expected = _scenario_of(entry.items[index])
        where = _shown(entry.file) + (f", game {index}" if len(entry.items) > 1 else "")
        game, replay, warnings = _replay(scenario, where)
        if expected is not None and expected != replay["state"]:
            warnings.append("the final state stored with this game differs from its replay")
        description = scenario.get("description") if isinstance(scenario, dict) else None
        replay["title"] = description or f"{where} ({game.rules.players} players, seed {game.seed})"
        replay["names"] = list(replay["layout"]["seat_names"])
        replay["warnings"] = warnings
        return replay

    def _replay_eval(self, entry: Entry, index: int) -> dict[str, Any]:
        """An evaluation game: its recorded scenario (``revolution eval`` records every game), or for a file
        written before that, the game played again with the same agents, options and seeds."""
        from revolution_env.arena.runner import GameRunner, IllegalMoveError

        item = entry.items[index]
        names = list(item["agents"])
        options = dict(entry.options or {"players": len(names)})
        where = f"{_shown(entry.file)}, game {index}"
        scenario = item.get("scenario")
        if scenario is None:
            try:
                runner = GameRunner([self._agent(entry, name, options) for name in names], options, names)
                scenario = runner.play(item["seed"], record=True).scenario
            except (ValueError, IllegalMoveError) as exc:
                raise ReplayError(f"{where}: the game could not be played again: {exc}") from None
        game, replay, warnings = _replay(scenario, where)
        players = len(names)
        support = game.final["support"]
        if list(support[:players]) != list(item["support"]) or list(game.final["winners"]) != list(item["winners"]):
            warnings.append(
                f"played again, this game ends {support[:players]} (winners {game.final['winners']}), not as"
                f" recorded {item['support']} (winners {item['winners']}): it was recorded with other rules or"
                " other versions of the agents"
            )
        replay["title"] = f"{where}: " + " vs ".join(names)
        replay["names"] = [f"P{s} {display_name(n, folder=False)}" for s, n in enumerate(names)]
        replay["names"] += ["Guy"] if game.layout.puppet >= 0 else []
        replay["warnings"] = warnings
        replay["scenario"] = export_game(game)
        replay["state"] = state_dict(game)
        return replay

    def _agent(self, entry: Entry, name: str, options: dict[str, Any]) -> Any:
        spec = (entry.specs or {}).get(name, name.split("#")[0])
        if self._load_agent is None:
            raise ReplayError(f"{entry.file}: no agent loader to play {spec!r} again")
        base = self.resolve(entry.file).parent
        candidates = [spec]
        if spec.endswith((".pt", ".zip")) and not os.path.isabs(spec):
            candidates += [str(parent / spec) for parent in [base, *base.parents][:5]]
        error = None
        for candidate in candidates:
            if candidate != spec and not os.path.isfile(candidate):
                continue
            key = ("agent", candidate, json.dumps(options, sort_keys=True))
            with self._lock:
                agent = self._agents.get(key)
            if agent is not None:
                return agent  # agents are reset before every game, as revolution eval reuses them
            try:
                agent = self._load_agent(candidate, **options)
            except (ValueError, ImportError, OSError) as exc:
                error = error or exc
                continue
            with self._lock:
                self._agents[key] = agent
            return agent
        raise ReplayError(f"{entry.file}: cannot load agent {name!r} (spec {spec!r}): {error}")

    # --- saving ---

    def save(self, scenario: dict[str, Any], name: str) -> str:
        """Keep a played game as a replay: in ``save_dir`` when there is one (under the first replay folder),
        else in memory for this session. Returns its file id."""
        if self.save_dir is not None and self.roots:
            path = self.save_dir / f"{name}.json"
            atomic_write(path, lambda f: f.write(json.dumps(scenario, indent=1) + "\n"))  # never half a file
            for i, root in enumerate(self.roots):
                if path.resolve().is_relative_to(root):
                    return f"{i}/{path.resolve().relative_to(root).as_posix()}"
        key = f"saved/{name}"
        self.saved[key] = scenario
        return key
