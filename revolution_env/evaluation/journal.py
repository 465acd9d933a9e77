"""An evaluation's ``--out`` folder while it plays, so that an interruption loses no game that was played, and the
same command continues it.

- ``evaluation.json``, the manifest, written before the first game: what the evaluation is (its mode, agents,
  players, games, seed and rules, and the content of every checkpoint it plays: :func:`files_of`) and the command.
  The same command again continues the evaluation in the folder; another is refused with one line naming the
  difference, rather than mixing the games of two evaluations.
- ``games.jsonl``: each finished game on a line of its own, ``{"game": INDEX, ...}``, appended as the games finish
  (in whatever order) and flushed whole. A kill in the middle of a write leaves a torn last line: it is dropped on
  reading (that game is played again), and the file is repaired before anything is appended to it.
- a lock on the folder while it plays (``flock``), so that two evaluations never write one folder at once.

A game's seed and seating are a function of the evaluation's seed and the game's index (:class:`.Tournament`), so
the games read back and the games played after them make the evaluation that one uninterrupted run makes.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import IO, Any

from revolution_env.agents.equilibrium import is_equilibrium
from revolution_env.agents.equilibrium import parse_spec as equilibrium_spec
from revolution_env.agents.loading import checkpoint_path, is_checkpoint
from revolution_env.agents.mixture import META, is_meta, is_mixture, meta_members, rename_components
from revolution_env.agents.search import PREFIX as SEARCH
from revolution_env.agents.search import is_search, searched_spec
from revolution_env.arena.runner import GameResult
from revolution_env.common.files import atomic_write
from revolution_env.common.workers import stop_signals_deferred
from revolution_env.evaluation.report import GAMES, INDEX, MANIFEST, OUTPUTS, game_line, remove_outputs
from revolution_env.evaluation.runner import GameTask, Tournament

FORMAT = "revolution-eval/1"
MODES = {"lineup": "a lineup (--agents)", "pool": "a round robin (--pool)", "gauntlet": "a gauntlet (--gauntlet)"}


def _files_renamed(spec: str, rename: Callable[[str], str]) -> str:
    """``spec`` with every file it plays from passed through ``rename``, in the order they are read: a checkpoint's
    (its ``:sample`` kept), a population file and then its members', a mixture's parts', the policy of a search."""
    if is_mixture(spec) or (is_meta(spec) and spec.startswith(META)):
        return rename_components(spec, lambda part: _files_renamed(part, rename))
    if is_meta(spec):  # a population file: the file, then its members (their paths are relative to it)
        own = rename(spec)  # first: the order files are read in
        members = ",".join(f"{_files_renamed(name, rename)}@{weight:g}" for name, weight in meta_members(spec))
        return f"{own}[{members}]"
    if is_search(spec):
        return SEARCH + _files_renamed(searched_spec(spec), rename)
    if is_equilibrium(spec):
        policy = equilibrium_spec(spec)[1]
        return spec[: len(spec) - len(policy)] + _files_renamed(policy, rename)
    if is_checkpoint(spec):
        path = checkpoint_path(spec)
        return rename(path) + spec[len(path) :]
    return spec


def files_of(spec: str) -> list[str]:
    """Every file an agent spec plays from: a checkpoint's, a population file and its members', a mixture's parts',
    the policy of a search (``search:``, ``equilibrium:``)."""
    files: list[str] = []
    _files_renamed(spec, lambda path: files.append(path) or path)
    return files


def file_digest(path: str | Path) -> str:
    """A file's content as the records name it: the first 16 hex digits of its sha256."""
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()[:16]


def identity(spec: str) -> str:
    """An agent as records compare it: ``spec`` with every file it plays from (:func:`files_of`) named by its content
    (``sha256:`` and :func:`file_digest`), so that a file retrained at the same path is another agent and a copy of
    it elsewhere the same one (an exploitability benchmark's agent, its common start and known agents)."""
    return _files_renamed(spec, lambda path: "sha256:" + file_digest(path))


def fingerprints(agents: dict[str, str]) -> dict[str, str]:
    """The content (sha256) of every file the agents play from, by path: a checkpoint retrained at the same path
    is another agent, whose games must not be mixed with the first one's."""
    out = {}
    for spec in agents.values():
        for path in files_of(spec):
            if path not in out:
                out[path] = file_digest(path)
    return out


def manifest(tournament: Tournament, command: str) -> dict[str, Any]:
    """What ``evaluation.json`` holds: the format, the tournament's manifest, the agents' files and the command."""
    return {
        "format": FORMAT,
        **tournament.manifest(),
        "files": fingerprints(tournament.names),
        "command": command,
    }


def _flag(option: str) -> str:
    return "--" + option.replace("_", "-")


def difference(theirs: dict[str, Any], ours: dict[str, Any]) -> str | None:
    """How the evaluation in a folder differs from this one (None: the same; the command may differ in what does
    not change the games: --workers, --ray, --quiet)."""
    if theirs.get("mode") != ours["mode"]:
        return f"{MODES.get(theirs.get('mode'), repr(theirs.get('mode')))}, not {MODES[ours['mode']]}"
    if _in_order(theirs.get("agents")) != _in_order(ours["agents"]):  # the order names the seats and lineups
        return f"the agents {_specs(theirs.get('agents'))}, not {_specs(ours['agents'])}"
    if theirs.get("held_out") != ours["held_out"]:
        return f"the held-out opponents {_specs(theirs.get('held_out'))}, not {_specs(ours['held_out'])}"
    for key in ("players", "games", "seed"):
        if theirs.get(key) != ours[key]:
            return f"--{key} {theirs.get(key)}, not {ours[key]}"
    options = theirs.get("options") if isinstance(theirs.get("options"), dict) else {}
    for key in sorted(set(options) | set(ours["options"])):
        if options.get(key) != ours["options"].get(key):
            return f"{_flag(key)} {_show(options.get(key))}, not {_show(ours['options'].get(key))}"
    files = theirs.get("files") if isinstance(theirs.get("files"), dict) else {}
    for path, digest in ours["files"].items():
        if files.get(path) != digest:
            return f"another {path} (the file has changed since)"
    if theirs.get("games_total") != ours["games_total"]:
        return f"{theirs.get('games_total')} games in all, not {ours['games_total']}"
    return None


def _in_order(agents: Any) -> list[Any]:
    return list(agents.items()) if isinstance(agents, dict) else [agents]


def _specs(specs: Any) -> str:
    values = specs.values() if isinstance(specs, dict) else specs if isinstance(specs, list) else [specs]
    return " ".join(str(v) for v in values) or "(none)"


def _show(value: Any) -> str:
    return "(not given)" if value is None else str(value).lower() if isinstance(value, bool) else str(value)


class Journal:
    """An evaluation's folder, opened to play (:func:`open_journal`): ``done`` holds the games played so far
    (game index -> result), those read back and those :meth:`record`-ed since."""

    def __init__(self, out: Path, tournament: Tournament, lock: int) -> None:
        self.out = out
        self.tasks = {t.index: t for t in tournament.tasks}
        self.done: dict[int, GameResult] = {}
        self.lines: dict[int, bytes] = {}  # each game's line as written, so that it is serialised once
        self.resumed = 0  # games read back from an earlier run
        self._lock = lock
        self._file: IO[bytes] | None = None

    def record(self, tasks: Sequence[GameTask], results: Sequence[GameResult]) -> None:
        """Append finished games to games.jsonl, whole lines flushed to the OS (a signal waits until they are
        written: a Ctrl-C never tears a line; a SIGKILL can, which reading undoes)."""
        if self._file is None:
            raise ValueError(f"{self.out}: the evaluation's folder is closed")
        lines = {t.index: (game_line(t.index, r) + "\n").encode("utf-8") for t, r in zip(tasks, results)}
        with stop_signals_deferred():
            self._file.write(b"".join(lines.values()))
            self._file.flush()
            os.fsync(self._file.fileno())
            self.done.update(zip((t.index for t in tasks), results))
            self.lines.update(lines)

    def finish(self) -> None:
        """Every game played: games.jsonl rewritten in game order (atomically), the file an uninterrupted run
        writes (:func:`.report.write_games`), from the lines as they were written."""
        self.stop()
        atomic_write(self.out / GAMES, self._write_in_order, binary=True)

    def _write_in_order(self, fh: IO[bytes]) -> None:
        fh.writelines(self.lines[i] for i in sorted(self.lines))

    def stop(self) -> None:
        """No more games to append (the folder stays locked until :meth:`close`)."""
        if self._file is not None:
            self._file.close()
            self._file = None

    def close(self) -> None:
        self.stop()
        if self._lock >= 0:
            os.close(self._lock)  # releases the lock
            self._lock = -1

    def __enter__(self) -> Journal:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


def open_journal(out: str | Path, tournament: Tournament, command: str, force: bool = False) -> Journal:
    """The folder ``out`` opened to play ``tournament`` in, locked: a new evaluation (its manifest written), or the
    same evaluation interrupted earlier (its games read back, a torn last line dropped and the file repaired).
    Refused with one line: a file; a folder another evaluation is playing in; one holding another evaluation, or
    one from before evaluations resumed, unless ``force`` (which removes it first)."""
    out = Path(out)
    if out.exists() and not out.is_dir():
        raise ValueError(f"--out: {out} is a file, not a folder")
    out.mkdir(parents=True, exist_ok=True)
    lock = _lock(out)
    try:
        journal = Journal(out, tournament, lock)
        ours = manifest(tournament, command)
        theirs = None if force else _read_manifest(out)
        if force:
            remove_outputs(out)
        elif theirs is None:
            previous = [name for name in OUTPUTS if (out / name).exists()]
            if previous:
                raise ValueError(f"--out: {out} holds a previous evaluation ({', '.join(previous)}); pass --force to "
                                 "replace it, or give another folder")  # fmt: skip
        else:
            change = difference(theirs, ours)
            if change is not None:
                raise ValueError(f"--out: {out} holds an evaluation with {change}: give the same command to continue "
                                 "it, --force to replace it, or another folder")  # fmt: skip
        if theirs != ours:
            atomic_write(out / MANIFEST, lambda fh: (json.dump(ours, fh, indent=2), fh.write("\n")))
        journal.done, journal.lines, torn = read_games(out / GAMES, journal.tasks)
        journal.resumed = len(journal.done)
        if torn:  # a kill mid-line: the whole lines kept, so that appending starts on a line of its own
            atomic_write(out / GAMES, journal._write_in_order, binary=True)
        journal._file = open(out / GAMES, "ab")  # noqa: SIM115 - closed by Journal.close
        return journal
    except BaseException:
        if lock >= 0:
            os.close(lock)
        raise


def _lock(out: Path) -> int:
    """An exclusive ``flock`` on the folder, or a ValueError if another process holds it."""
    try:
        import fcntl
    except ImportError:  # no flock on this platform: unlocked
        return -1
    fd = os.open(out, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        raise ValueError(
            f"--out: {out} is in use by another evaluation; wait for it to end, or give another folder"
        ) from None
    except OSError:  # a file system without flock: unlocked, as on one without it anywhere else
        pass
    return fd


def _read_manifest(out: Path) -> dict[str, Any] | None:
    path = out / MANIFEST
    if not path.exists():
        return None
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ValueError(
            f"--out: {path} is damaged ({exc}): pass --force to start again, or give another folder"
        ) from None
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise ValueError(f"--out: {path} is not an evaluation's manifest ({FORMAT}): pass --force to start again, "
                         "or give another folder")  # fmt: skip
    return data


def read_games(path: Path, tasks: dict[int, GameTask]) -> tuple[dict[int, GameResult], dict[int, bytes], bool]:
    """The games in a games.jsonl (game index -> result, and -> its line), each checked against its task (its seed
    and seats), and whether its last line was torn (dropped). Any other damage is a ValueError naming the line."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return {}, {}, False
    lines = data.split(b"\n")
    torn = lines.pop() != b""  # whole lines end with a newline: what follows the last one was cut short
    games: dict[int, GameResult] = {}
    raw: dict[int, bytes] = {}
    for n, line in enumerate(lines, start=1):
        try:
            item = json.loads(line)
            index = item[INDEX]
            result = GameResult.from_dict(item)
        except (UnicodeDecodeError, json.JSONDecodeError, KeyError, TypeError, ValueError) as exc:
            raise ValueError(f"--out: {path}: line {n} is not a game ({type(exc).__name__}: {exc}); pass --force "
                             "to start again, or give another folder") from None  # fmt: skip
        task = tasks.get(index) if isinstance(index, int) else None
        if task is None or result.seed != task.seed or result.agents != task.names or index in games:
            raise ValueError(f"--out: {path}: line {n} is not a game of this evaluation (game {index!r}); pass "
                             "--force to start again, or give another folder")  # fmt: skip
        games[index] = result
        raw[index] = line + b"\n"
    return games, raw, torn
