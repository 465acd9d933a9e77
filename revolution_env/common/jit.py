"""Numba where it is installed: ``jit`` compiles a function (``numba.njit(cache=True, nogil=True)``), or leaves it
as plain Python when Numba is missing (``pip install revolution-env[fast]`` installs it) or when the environment
variable ``REVOLUTION_NO_NUMBA`` is set. ``COMPILED`` says which.
``@jit(inline=True)`` has Numba inline the function into its callers (``inline="always"``), for a function called
from one place: every compiled callee is optimised and turned into machine code once for itself and again inside
each of its callers up the tree, so a deep tree of them compiles in time that grows faster than its code (the
heuristic bots' build took a quarter less with their single-caller functions inlined, and decided as fast).
``@jit(refcounts=False)`` compiles a function without Numba's reference counting (``_nrt=False``): compiled code
calls the runtime twice, through a pointer, for every array it binds to a name or passes on, even a
:func:`borrowed` one, and a loop over games that runs the batched engine's rules made some 250 such calls a game
(a quarter of its time). Such a function must not allocate an array (Numba refuses to compile an allocation in it
or in what it inlines) nor return one, and a function it calls without inlining it must be compiled the same way
(Numba would compile an allocation there, and nothing would free it): the caller allocates and owns what it works
on, as with :func:`borrowed`.

The batched engine (``revolution_env.engine.kernels``) and the compiled heuristic bots
(``revolution_env.agents.compiled``) are written as loops for it. Ctrl-C and SIGTERM wait while Numba compiles a
function or loads it from its cache (``workers.stop_signals_deferred``): interrupted there, it kept half-built
machine code that a later call ran.
"""

from __future__ import annotations

import contextlib
import functools
import os
import threading
from collections.abc import Callable, Iterator
from typing import TypeVar

from revolution_env.common.workers import in_thread_pool, opponent_threads, side_by_side, stop_signals_deferred

R = TypeVar("R")
# The fewest rows of a part of in_parts by default (observations and masks: two parts of 1,024 rows no faster than
# one call, 2 cores, interleaved A/B); the engine's game steps, four times as costly a row, pass their own
# (engine.batched.GAME_ROWS).
PARALLEL_ROWS = 2048

# Whether Ctrl-C and SIGTERM wait for a compilation to end. A process that only compiles (the background build
# of agents/build_bots.py) turns it off: killed there, it leaves nothing behind that would run.
DEFER_SIGNALS = True

try:  # pragma: no cover - which branch runs depends on the install
    if os.environ.get("REVOLUTION_NO_NUMBA"):
        raise ImportError
    import numba

    def jit(f=None, *, inline=False, refcounts=True):
        if f is None:
            return lambda g: jit(g, inline=inline, refcounts=refcounts)
        options = {} if refcounts else {"_nrt": False}
        dispatcher = numba.njit(cache=True, nogil=True, inline="always" if inline else "never", **options)(f)
        compile_now = dispatcher.compile  # every compilation or cache load of a signature, from Python or from
        folder = os.path.dirname(os.path.abspath(dispatcher.py_func.__code__.co_filename))  # another's typing

        def compile(signature):
            with (
                _COMPILING,
                _cache_lock(folder),
                stop_signals_deferred() if DEFER_SIGNALS else contextlib.nullcontext(),
            ):
                return compile_now(signature)

        dispatcher.compile = compile
        return dispatcher

    # Numba's cache is not safe between processes (numba/numba#4807, open): two processes that save two signatures of
    # one function at once can both read its index before either writes it and both pick the same data file, so that
    # the index left names one signature's machine code for the other, and a process that loads it runs code compiled
    # for other argument types. Here the background build of the compiled bots fills the cache while the main job
    # compiles what it needs, and test workers start on an empty cache together (tests/test_jit.py forces the race).
    # So every compilation or cache load of a signature (``Dispatcher.compile``, Numba's public method) holds an
    # exclusive lock between processes on its module's folder: a second process waits, then loads what the first
    # saved. A function's typing compiles the functions it calls, which lie in its own layer or lower ones, so the
    # locks are taken in the order of the layers and two processes never wait on each other. Within a process one
    # lock, taken before Numba's own, keeps threads from waiting on each other in the opposite order.
    _COMPILING = threading.RLock()

    from numba.core import cgutils, types
    from numba.extending import intrinsic

    def _unowned(context, builder, ty, value):
        array = context.make_array(ty)(context, builder, value=value)
        array.meminfo = cgutils.get_null_value(array.meminfo.type)
        return array._getvalue()

    @intrinsic
    def borrowed(typingctx, arrays):
        """An array, or the arrays of a tuple (its other members as they are), as views that hold no reference:
        Numba counts a reference (an atomic increment, later a decrement) each time compiled code binds an array to a
        name or passes it to a function, inlined or not, and a view without a memory record skips both (``perf`` had
        those two instructions at 45% of the batched engine's compiled time). Only for arrays that the caller owns
        for the whole call, such as a compiled entry point's arguments: a borrowed view must not be returned, stored
        or outlive them."""
        if not isinstance(arrays, (types.Array, types.BaseTuple)):
            return None

        def codegen(context, builder, signature, args):
            ty, value = signature.args[0], args[0]
            if isinstance(ty, types.Array):
                return _unowned(context, builder, ty, value)
            for i, member in enumerate(ty):
                if isinstance(member, types.Array):
                    unowned = _unowned(context, builder, member, builder.extract_value(value, i))
                    value = builder.insert_value(value, unowned, i)
            return value

        return arrays(arrays), codegen

    COMPILED = True
except ImportError:  # pragma: no cover

    def jit(f=None, *, inline=False, refcounts=True):
        return f if f is not None else (lambda g: g)

    def borrowed(arrays):
        return arrays

    COMPILED = False


def read_only(a):
    """A read-only view of the array ``a``. Numba types a read-only array apart from a writable one and compiles a
    function once for each (a minute for the heuristic bots); an argument that may come either way (the envs hand
    out read-only masks) crosses as this view, so that one compilation, the one in the cache, serves."""
    view = a.view()
    view.flags.writeable = False
    return view


def in_parts(n: int, call: Callable[[int, int], R], minimum: int | None = None) -> list[R]:
    """``call(lo, hi)`` over consecutive parts of the rows ``range(n)``, side by side: one part for each of
    ``opponent_threads()`` threads (the first in the calling thread, the others in ``workers.thread_pool``), each of
    at least ``minimum`` rows (default ``PARALLEL_ROWS``), where Numba compiles and the caller is not a thread of
    that pool (which must not wait on the pool it occupies); else ``call(0, n)`` alone. For compiled loops that
    release the GIL (every ``jit`` function does: ``nogil``) and write only their rows, so that the parts give what
    one call over every row gives (the batched engine's steps, observations and masks: faster on two cores from a
    few thousand rows on, as measured in ``docs/experiments.md``). Returns each part's result, in order; a part's
    error is raised once every part has finished."""
    most = n // max(1, PARALLEL_ROWS if minimum is None else minimum)  # parts of at least `minimum` rows
    # the threads counted only where the rows make two parts (a small batch's every step asks: a system call)
    parts = min(opponent_threads(), most) if most >= 2 and COMPILED and not in_thread_pool() else 1
    if parts < 2:
        return [call(0, n)]
    bounds = [n * k // parts for k in range(parts + 1)]
    return side_by_side([functools.partial(call, lo, hi) for lo, hi in zip(bounds[:-1], bounds[1:])])


_HELD: dict[str, int] = {}  # folder -> how many compilations of this process are inside its lock


@contextlib.contextmanager
def _cache_lock(folder: str) -> Iterator[None]:
    """An exclusive advisory lock (``flock``) between processes on the folder of a module whose functions compile,
    for the block; taken once by a process however deep its compilations nest (under ``_COMPILING``, so one thread
    at a time). None where the platform or the file system has no such lock: as Numba does on its own."""
    if _HELD.get(folder):
        _HELD[folder] += 1
        try:
            yield
        finally:
            _HELD[folder] -= 1
        return
    try:
        import fcntl

        fd = os.open(folder, os.O_RDONLY)
    except (ImportError, OSError):
        yield
        return
    try:
        with contextlib.suppress(OSError):
            fcntl.flock(fd, fcntl.LOCK_EX)
        _HELD[folder] = 1
        yield
    finally:
        _HELD.pop(folder, None)
        os.close(fd)  # releases the lock
