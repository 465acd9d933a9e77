"""The heuristic bots' code compiled, and what they play until it is: :func:`decide` runs
:func:`.decisions.decide_rows` as machine code from Numba's cache, or as plain Python where Numba is missing
(``REVOLUTION_NO_NUMBA=1``, or not installed: ``pip install revolution-env[fast]``) or has not built it yet.
Both are the same functions, with the same decisions and the same random draws (``tests/golden/bots/``); the
machine code is the faster by far (``scripts/benchmark.py --bots``; docs/experiments.md, "One implementation of the
heuristic bots").

**Compiling without waiting.** Numba compiles the bots once per machine and keeps the machine code in its cache.
The first decision of a process that finds the cache empty starts one background process that compiles and fills
it (``python -m revolution_env.agents.build_bots``; a lock file in the cache folder keeps sibling processes from
starting their own), and the bots play as plain Python until it is done (:func:`ready`): a first decision comes at
once, at the speed of plain Python. A caller that is about to make thousands of decisions (training's imitation)
waits for the build instead, with progress (:func:`wait_until_ready`); :func:`build` compiles in the calling
process.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
import types
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from revolution_env.agents import decisions
from revolution_env.agents.decisions import STYLES, decide_rows, margins_now, settings, value_per_sample
from revolution_env.common.jit import COMPILED, read_only

# --- the same functions as plain Python ----------------------------------------------------------------------------

_PYTHON: dict[str, Callable] = {}


def as_python(name: str) -> Callable:
    """The function ``name`` of :mod:`.decisions` as plain Python, calling the module's other functions as plain
    Python too: what the bots play while Numba builds their machine code. Without Numba, the function itself.
    Each compiled function's Python source (Numba's ``py_func``) runs in a copy of the module's namespace in which
    the compiled functions are their plain twins (or their stand-ins of ``decisions.AS_PYTHON``) and ``borrowed``
    lends nothing."""
    if not COMPILED:
        return getattr(decisions, name)
    if not _PYTHON:
        space = dict(vars(decisions), borrowed=lambda arrays: arrays)
        for key, value in vars(decisions).items():
            f = getattr(value, "py_func", None)
            if f is not None and f.__module__ == decisions.__name__:
                twin = decisions.AS_PYTHON.get(key)
                space[key] = twin or types.FunctionType(f.__code__, space, f.__name__, f.__defaults__)
        _PYTHON.update(space)
    return _PYTHON[name]


# --- the calls -----------------------------------------------------------------------------------------------------


def _plain_bot(bot: Any) -> tuple[tuple, tuple, tuple, tuple]:
    """The bot's tables, feature starts, settings and judgement as the entry points take them
    (:class:`.decisions.Bot`, as plain tuples, whose types Numba reads from Python much sooner than those of named
    tuples: a call's fixed cost)."""
    return bot.static + (tuple(settings(bot)), tuple(bot.judgement.as_floats()))


def _masks(masks: np.ndarray) -> np.ndarray:
    """The masks as int8, read-only: one type whoever hands them over (the envs' are read-only), so that the one
    compilation in the cache serves every caller."""
    m = np.ascontiguousarray(masks).view(np.int8) if masks.dtype == np.bool_ else np.ascontiguousarray(masks, np.int8)
    return read_only(m)


def decide(bot: Any, observations: np.ndarray, masks: np.ndarray) -> tuple[np.ndarray, int]:
    """The bot's actions for ``observations`` (n, size) with ``masks`` (n, sum(nvec)), in row order, drawing from
    ``bot.rng``; and how many were fallbacks (a legal default played for an action that broke the mask)."""
    obs = np.ascontiguousarray(observations, dtype=np.float32)
    actions = np.zeros((len(obs), len(bot.codec.nvec)), dtype=np.int64)
    rows = decide_rows if ready(bot) else as_python("decide_rows")
    fallbacks = rows(bot.rng, obs, _masks(masks), _plain_bot(bot), actions)
    return actions, int(fallbacks)


def values_against_samples(bot: Any, observation: np.ndarray, bids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """What each bid of ``bids`` (n, T, 3) is worth against each of ``value``'s samples of the rivals' bids in
    ``observation`` (n, samples), drawing from ``bot.rng``, and what its model expects of each (n,)."""
    out = np.zeros((len(bids), int(bot.samples)))
    obs = np.array(observation, dtype=np.float32)  # writable: Numba types a read-only array apart
    entry = value_per_sample if ready(bot, "value_per_sample") else as_python("value_per_sample")
    expected = entry(bot.rng, obs, np.ascontiguousarray(bids, dtype=np.int64), _plain_bot(bot), out)
    return out, expected


def observers_margins(bot: Any, observations: np.ndarray) -> np.ndarray:
    """The observer's margin in each row of ``observations`` (n, size) as ``bot``'s judgement appraises it (n,)."""
    obs = np.array(observations, dtype=np.float32).reshape(len(observations), -1)  # writable, as the build's
    out = np.zeros(len(obs))
    entry = margins_now if ready(bot, "margins_now") else as_python("margins_now")
    entry(obs, *bot.static, tuple(bot.judgement.as_floats()), out)
    return out


# --- the machine code: in Numba's cache, built in the background --------------------------------------------------

STALE_BUILD = 1800.0  # seconds after which a build lock is taken for abandoned
LOCK_NAME = "revolution-bots.build"


# the build's order: the bots' decisions, the search's judge, the equilibrium's stand-in for a critic
ENTRIES = {"decide_rows": decide_rows, "value_per_sample": value_per_sample, "margins_now": margins_now}


class _Build:
    ready: frozenset[str] = frozenset()  # the entry points this process may call compiled (compiled or cached)
    failed = False  # the bots play as plain Python for good
    next_check = 0.0
    proc: subprocess.Popen | None = None
    proc_owner = -1
    started: float | None = None  # time.monotonic() when this process started the build
    signatures: dict[str, tuple] | None = None


def _entries(bot: Any) -> dict[str, tuple]:
    """The arguments of the types each entry point is compiled for (an empty observation, one bid; a generator of
    their own, so that building draws nothing from the bot's)."""
    plain, rng = _plain_bot(bot), np.random.default_rng(0)
    size, dims = bot.layout.size, len(bot.codec.nvec)
    rows = (rng, np.zeros((1, size), np.float32), _masks(np.zeros((1, bot.codec.size), np.int8)), plain,
            np.zeros((1, dims), np.int64))  # fmt: skip
    bids = (rng, np.zeros(size, np.float32), np.zeros((1, bot.t.targets, 3), np.int64), plain,
            np.zeros((1, int(bot.samples))))  # fmt: skip
    margins = (np.zeros((1, size), np.float32), *bot.static, plain[-1], np.zeros(1))
    return {"decide_rows": rows, "value_per_sample": bids, "margins_now": margins}


def _cache_folder(dispatcher: Any = decide_rows) -> Path | None:
    """The folder of Numba's cache of ``dispatcher`` (a compiled function of :mod:`.decisions`)."""
    try:
        return Path(dispatcher.stats.cache_path)
    except Exception:  # pragma: no cover - Numba without a cache
        return None


def in_numbas_cache(dispatcher: Any, signature: tuple) -> bool:
    """Whether Numba's cache holds ``dispatcher``'s machine code for these argument types, so that a call loads it
    rather than compiling it. Numba has no public API for this: its cache's index is read through private names
    (``Dispatcher._cache``), which is why numba is pinned below its next release in pyproject.toml and why
    tests/test_dependencies.py checks this function against a function it compiles. A surprise answers False."""
    try:
        cache = dispatcher._cache
        return cache._index_key(signature, dispatcher.targetctx.codegen()) in cache._cache_file._load_index()
    except Exception:  # pragma: no cover
        return False


def _in_cache(entry: str, signature: tuple) -> bool:
    """Whether Numba's cache holds the entry point ``entry`` for these argument types."""
    return in_numbas_cache(ENTRIES[entry], signature)


def _loaded(entry: str) -> bool:
    """Whether this process has the entry point's machine code already (compiled or loaded)."""
    return bool(ENTRIES[entry].signatures)


def _lock_is_live(lock: Path) -> bool:
    try:
        pid, started = lock.read_text().split()
        if time.time() - float(started) > STALE_BUILD:
            return False
        os.kill(int(pid), 0)
        return True
    except (OSError, ValueError):
        return False


def _take_lock(lock: Path) -> bool:
    """Create the build lock (pid and time) unless a live build holds it; a stale one is replaced."""
    lock.parent.mkdir(parents=True, exist_ok=True)
    for _ in range(2):
        try:
            fd = os.open(lock, os.O_CREAT | os.O_EXCL | os.O_WRONLY)
        except FileExistsError:
            if _lock_is_live(lock):
                return False
            lock.unlink(missing_ok=True)
            continue
        with os.fdopen(fd, "w") as fh:
            fh.write(f"{os.getpid()} {time.time()}")
        return True
    return False


def _give_up(why: str) -> None:
    _Build.failed = True
    warnings.warn(f"heuristic bots: {why}; they play as plain Python (the same decisions, slower)", stacklevel=3)


def _reap() -> int | None:
    """The exit status of this process's background build once it has ended (it is then forgotten), else None."""
    if _Build.proc is None or _Build.proc_owner != os.getpid():
        return None
    code = _Build.proc.poll()
    if code is not None:
        _Build.proc = None
    return code


def ready(bot: Any, entry: str = "decide_rows") -> bool:
    """Whether the compiled bots can decide now without compiling in this process (``entry``: one of
    :data:`ENTRIES`): compiled already, or in Numba's cache. If not, starts (once per machine at
    a time) the background process that compiles them, and answers False until it is done; checks again at most
    once a second. The background build compiles the bots' decisions first: they are ready before it ends."""
    now = time.monotonic()
    if entry in _Build.ready:
        if _Build.proc is not None and now >= _Build.next_check:  # a build that goes on: reaped once it ends
            _Build.next_check = now + 1.0
            _reap()
        return True
    if _Build.failed or not COMPILED or now < _Build.next_check:
        return False
    _Build.next_check = now + 1.0
    if _Build.signatures is None:
        _Build.signatures = {
            name: tuple(map(ENTRIES[name].typeof_pyval, arguments)) for name, arguments in _entries(bot).items()
        }
    mine = _Build.proc is not None and _Build.proc_owner == os.getpid()
    code = _reap()
    if _loaded(entry) or _in_cache(entry, _Build.signatures[entry]):
        _Build.ready = _Build.ready | {entry}
        return True
    folder = _cache_folder()
    if mine:  # our build: still under way, or ended without it
        if code is None:
            return False
        if code != 0:
            _give_up(f"compiling them failed (exit status {code}; see {folder / 'revolution-bots.log'})")
        else:
            _give_up(f"Numba could not cache them in {folder} (set NUMBA_CACHE_DIR to a writable folder)")
        return False
    if folder is None:  # pragma: no cover
        _give_up("Numba has no cache folder here")
        return False
    if _take_lock(folder / LOCK_NAME):
        env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
        with open(folder / "revolution-bots.log", "wb") as log:
            _Build.proc = subprocess.Popen(
                [sys.executable, "-m", "revolution_env.agents.build_bots", "--lock", str(folder / LOCK_NAME)],
                stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True,
            )  # fmt: skip
        _Build.proc_owner, _Build.started = os.getpid(), time.monotonic()
    return False


def building_since() -> float | None:
    """``time.monotonic()`` when this process started the background build that is still under way, else None."""
    mine = _Build.proc is not None and _Build.proc_owner == os.getpid()
    return _Build.started if mine else None


COMPILING = "compiling the heuristic bots into Numba's cache (once per machine)"


def wait_until_ready(bot: Any, report: Any = print, every: float = 10.0, since: float | None = None) -> bool:
    """Have the compiled bots' decisions before their first: :func:`ready`, which starts the background build where
    Numba's cache lacks them (or finds a sibling's build under way), then wait for it, with a line through
    ``report`` every ``every`` seconds, the times counted from ``since`` (``time.monotonic()`` when the caller
    started the build and said so; else from now, and :data:`COMPILING` first). Returns whether they are ready
    (False: they play as plain Python). Ctrl-C stops the wait; the build goes on, in its own session, and fills
    the cache for the next run."""
    if ready(bot) or _Build.failed or not COMPILED:
        return ready(bot)
    start = time.monotonic() if since is None else since
    last = time.monotonic()
    if since is None:
        report(COMPILING + " ...")
    while not ready(bot) and not _Build.failed:
        time.sleep(0.2)
        _Build.next_check = 0.0  # ready() looks again at once
        now = time.monotonic()
        if now - last >= every:
            last = now
            report(f"  ... still compiling the heuristic bots, {now - start:.0f} s")
    if ready(bot):
        report(f"compiled the heuristic bots in {time.monotonic() - start:.0f} s")
    return ready(bot)


def build(bot: Any, lock: Path | None = None, timeout: float = STALE_BUILD) -> None:
    """Compile the bots in this process (``bot``: any of the three styles, for the argument types), so that they
    are in Numba's cache: under the build lock, waiting first for a build that holds it; or under ``lock``, a lock
    already taken for this build (the background build's, which its parent took). Raises ``RuntimeError`` without
    Numba."""
    if not COMPILED:
        raise RuntimeError("the compiled bots need Numba (pip install revolution-env[fast])")
    if lock is None:
        folder = _cache_folder()
        lock = folder / LOCK_NAME if folder is not None else None
        deadline = time.monotonic() + timeout
        while lock is not None and not _take_lock(lock):  # someone else builds: wait for it
            if time.monotonic() > deadline:
                raise RuntimeError(f"a build of the compiled bots holds {lock} for longer than {timeout} s")
            time.sleep(1.0)
    try:
        for name, arguments in _entries(bot).items():
            ENTRIES[name](*arguments)
    finally:
        if lock is not None:
            lock.unlink(missing_ok=True)
    _Build.ready = frozenset(ENTRIES)


__all__ = [
    "COMPILED",
    "COMPILING",
    "STYLES",
    "as_python",
    "build",
    "building_since",
    "decide",
    "observers_margins",
    "ready",
    "values_against_samples",
    "wait_until_ready",
]
