"""Worker processes and the stop signals (Ctrl-C, SIGTERM).

``timeout``, systemd, Slurm and Ray stop a job by sending SIGTERM to its whole process group, and Ctrl-C sends
SIGINT to the terminal's group: every worker process gets the signal at the same moment as the parent. A worker
killed by it mid-task leaves the parent waiting for an answer that never comes (a pool's ``imap`` hangs, a vector
env's ``step_wait`` dies with ``EOFError``) before the parent has had the chance to save. So here the parent alone
decides when its workers stop. Workers are started while the parent holds the signals back (:func:`start_workers`,
so that not even the moments before a worker has set itself up are open); then a vector env's workers ignore both
signals (:func:`ignore_stop_signals`) and are closed by the parent, or killed with SIGKILL when they no longer
answer, and a pool's workers leave the process group (:func:`worker_pool`).

The ``revolution`` command turns SIGTERM into :class:`Terminated`, a kind of ``KeyboardInterrupt``, so that the
clean-up of Ctrl-C runs for it too (:func:`raise_on_sigterm`); the command then exits 143 instead of 130.
"""

from __future__ import annotations

import collections
import contextlib
import functools
import importlib.util
import multiprocessing
import os
import signal
import statistics
import threading
import time
import traceback
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from multiprocessing.connection import wait
from typing import Any, TypeVar

T = TypeVar("T")
R = TypeVar("R")

STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised like Ctrl-C's ``KeyboardInterrupt`` so that the same clean-up runs."""


class ProcessDied(RuntimeError):
    """A job's process ended without an answer (killed with SIGKILL, out of memory): :func:`run_in_processes`."""


def usable_cores() -> int:
    """The CPU cores this process may run on (its affinity mask where the OS has one, e.g. under ``taskset`` or
    a container's CPU set), at least 1."""
    if hasattr(os, "sched_getaffinity"):
        return max(1, len(os.sched_getaffinity(0)))
    return os.cpu_count() or 1


def exit_status(interrupt: BaseException) -> int:
    """The conventional exit status of a command stopped by a signal: 128 + the signal's number."""
    return 128 + (signal.SIGTERM if isinstance(interrupt, Terminated) else signal.SIGINT)


def _terminated(signum: int, frame: Any) -> None:
    raise Terminated


def raise_on_sigterm() -> None:
    """SIGTERM raises :class:`Terminated` in the main thread (unless a handler is already set)."""
    if threading.current_thread() is threading.main_thread() and signal.getsignal(signal.SIGTERM) == signal.SIG_DFL:
        signal.signal(signal.SIGTERM, _terminated)


def ignore_stop_signals() -> None:
    """For a worker process: Ctrl-C and SIGTERM are for the parent, which stops its workers itself."""
    for s in STOP_SIGNALS:
        signal.signal(s, signal.SIG_IGN)


class stop_signals_blocked:
    """Hold Ctrl-C and SIGTERM back (in the main thread) while worker processes start: blocked signals are
    inherited, so a worker never sees them, even before it ignores them; the parent gets them on leaving."""

    def __enter__(self) -> None:
        self._block = hasattr(signal, "pthread_sigmask") and threading.current_thread() is threading.main_thread()
        if self._block:
            self._old = signal.pthread_sigmask(signal.SIG_BLOCK, STOP_SIGNALS)

    def __exit__(self, *exc: Any) -> None:
        if self._block:
            signal.pthread_sigmask(signal.SIG_SETMASK, self._old)


@contextlib.contextmanager
def stop_signals_deferred() -> Iterator[None]:
    """Ctrl-C and SIGTERM held until the block ends, then delivered (in the main thread; elsewhere, where no
    handler runs, nothing changes). For code that an exception must not cut in the middle: Numba's compiler,
    where a ``KeyboardInterrupt`` raised inside it (or inside llvmlite's ``__del__``, which swallows it) left
    half-built machine code that a later call ran, a segmentation fault. Unlike :class:`stop_signals_blocked`,
    this holds the signal whichever thread the OS hands it to."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    caught: list[int] = []
    old = {s: signal.getsignal(s) for s in STOP_SIGNALS}
    if any(handler is None for handler in old.values()):  # a handler set outside Python: leave it be
        yield
        return
    for s in STOP_SIGNALS:
        signal.signal(s, lambda signum, frame: caught.append(signum))
    try:
        yield
    finally:
        for s, handler in old.items():
            signal.signal(s, handler)
        for s in dict.fromkeys(caught):
            signal.raise_signal(s)


def start_workers(start: Callable[[], T], kill: Callable[[T], None]) -> T:
    """``start()`` with the stop signals held back, so that the workers it starts inherit them blocked. A signal
    that came meanwhile is delivered afterwards; if its handler raises (Ctrl-C, :class:`Terminated`), ``kill``
    gets the workers first: they ignore SIGTERM, so nobody else could stop them."""
    blocked = stop_signals_blocked()
    blocked.__enter__()
    try:
        started = start()
    except BaseException:
        blocked.__exit__()
        raise
    try:
        blocked.__exit__()
    except BaseException:
        kill(started)
        raise
    return started


@contextlib.contextmanager
def worker_pool(processes: int) -> Iterator[Any]:
    """A ``spawn`` pool whose workers leave the parent's process group (:func:`leave_process_group`): a signal to
    the group reaches the parent alone, which stops the pool (``terminate``) if the signal stops it. A pool's
    worker cannot simply ignore SIGTERM: ``Pool.terminate`` stops workers with it (and killing them with SIGKILL
    instead can leave the pool's task lock held for ever). Each worker's math libraries get their share of the
    cores (:func:`worker_threads`)."""
    context = multiprocessing.get_context("spawn")
    with environment(worker_threads(processes)):
        pool = start_workers(
            lambda: context.Pool(processes, initializer=leave_process_group, initargs=(os.getpid(),)),
            lambda p: p.terminate(),
        )
    try:
        yield pool
    except BaseException:
        pool.terminate()
        raise
    else:
        pool.close()
        pool.join()


# The variables that size the thread pools of OpenBLAS (NumPy's matrix products), OpenMP (torch), MKL and Numba.
# Unset, each library takes the cores this process may use (its affinity mask), as usable_cores() counts them.
THREAD_VARIABLES = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "NUMBA_NUM_THREADS")
# Ours: the threads in which the opponents of a vector env decide (arena/vector.py), at most.
OPPONENT_THREADS = "REVOLUTION_THREADS"


def thread_setting(name: str) -> int | None:
    """The thread count a user set in the environment variable ``name`` (None if unset or empty). Anything but a
    positive integer is a ``ValueError`` naming the variable: the libraries would otherwise each ignore it in
    their own way (libgomp with a warning, OpenBLAS silently)."""
    text = os.environ.get(name, "").strip()
    if not text:
        return None
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise ValueError(f"{name}: expected a positive integer (a number of threads), got {text!r}")
    return value


def check_thread_settings() -> None:
    """Every thread variable the user set holds a positive integer (else ``ValueError`` naming it)."""
    for name in (*THREAD_VARIABLES, OPPONENT_THREADS):
        thread_setting(name)


def opponent_threads() -> int:
    """Threads for work that releases the GIL (the vector env's opponents' decisions, the batched engine's loops
    over many games): ``REVOLUTION_THREADS``, else the cores this process may use."""
    return thread_setting(OPPONENT_THREADS) or usable_cores()


_POOL: dict[int, ThreadPoolExecutor] = {}  # by process id: a forked child has none of its parent's threads
_POOL_THREAD = threading.local()


def _in_pool_thread() -> None:
    _POOL_THREAD.member = True


def thread_pool() -> ThreadPoolExecutor:
    """The process's threads for work that releases the GIL (:func:`opponent_threads` of them, started on first
    use): the vector env's opponents and the batched engine's loops (``common.jit.in_parts``)."""
    pid = os.getpid()
    if pid not in _POOL:
        _POOL.clear()
        _POOL[pid] = ThreadPoolExecutor(
            opponent_threads(), thread_name_prefix="revolution", initializer=_in_pool_thread
        )
    return _POOL[pid]


def in_thread_pool() -> bool:
    """Whether the calling thread is one of :func:`thread_pool`'s (which must not wait on the pool it occupies)."""
    return getattr(_POOL_THREAD, "member", False)


def side_by_side(calls: Sequence[Callable[[], R]], parallel: bool = True) -> list[R]:
    """Run ``calls`` (each without arguments) and return their results in order: the first in the calling thread and
    the others in :func:`thread_pool` at the same time where ``parallel`` and the caller is not a thread of that
    pool (which must not wait on the pool it occupies), else one after the other here. For work that releases the
    GIL (compiled loops, torch's kernels). An error, or a Ctrl-C in the first, is raised once every call has
    finished, so that no thread still runs one as the process exits."""
    if not parallel or len(calls) < 2 or in_thread_pool():
        return [call() for call in calls]
    futures = [thread_pool().submit(call) for call in calls[1:]]
    try:
        first = calls[0]()
    finally:
        errors = [future.exception() for future in futures]  # waits for every call, whatever the first did
    for error in errors:
        if error is not None:
            raise error
    return [first, *(future.result() for future in futures)]


class Pace:
    """Whether the next piece of work runs side by side in threads or one after the other, where two cores are
    usable: the faster by the median of each way's last ``keep`` timings (robust to a piece that something else
    made slow, such as a PPO update between two steps of an env). The slower way is timed again for ``probe`` pieces
    at the start of every ``every + probe``, since the load of a shared machine changes: beside a busy process,
    threads that hand work to each other can lose to one thread. ``with pace as parallel:`` times the piece in
    it; :meth:`next` and :meth:`took` do the same for pieces timed from one start to the next (an env's steps)."""

    def __init__(self, usable: bool, every: int = 64, probe: int = 4, keep: int = 9) -> None:
        self.usable, self.every, self.probe = usable, every, probe
        self.seconds: dict[bool, collections.deque] = {True: collections.deque(maxlen=keep),
                                                        False: collections.deque(maxlen=keep)}  # fmt: skip
        self.count = 0
        self.mode = usable

    def faster(self) -> bool:
        """Whether side by side is the faster way by the timings so far (True until both ways have some)."""
        side_by_side, alone = self.seconds[True], self.seconds[False]
        if not side_by_side or not alone:
            return True
        return statistics.median(side_by_side) <= statistics.median(alone)

    def next(self) -> bool:
        """The way of the next piece: True for side by side."""
        if self.usable:
            probing = self.count % (self.every + self.probe) < self.probe
            self.mode = self.faster() != probing
        self.count += 1
        return self.mode

    def took(self, seconds: float) -> None:
        """The piece run the way :meth:`next` gave took ``seconds``."""
        self.seconds[self.mode].append(seconds)

    def __enter__(self) -> bool:
        self.start = time.perf_counter()
        return self.next()

    def __exit__(self, *exc: Any) -> None:
        self.took(time.perf_counter() - self.start)


def worker_threads(processes: int) -> dict[str, str]:
    """The thread variables for ``processes`` workers that share this machine (the evaluation's pool, the
    imitation's): each its share of the usable cores (at least one), as joblib's loky backend sizes its workers.
    Without this, every worker's OpenBLAS starts a thread per core: two workers on two cores playing checkpoints
    (batched forward passes) took 2.8 times as long. Each variable the user has set is left as it is, one by one
    (``OMP_NUM_THREADS=4`` alone leaves OpenBLAS, which reads its own variable first, at the share). The workers
    get them when the pool starts them; one that a pool starts later in place of a dead one gets the user's."""
    share = str(max(1, usable_cores() // max(1, processes)))
    return {name: share for name in THREAD_VARIABLES if name not in os.environ}


@contextlib.contextmanager
def environment(variables: dict[str, str]) -> Iterator[None]:
    """``os.environ`` with ``variables`` set while the block runs (processes started then inherit them)."""
    old = {name: os.environ.get(name) for name in variables}
    os.environ.update(variables)
    try:
        yield
    finally:
        for name, value in old.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def leave_process_group(parent: int, on_sigterm: Any = signal.SIG_DFL) -> None:
    """For a pool worker, started with the stop signals blocked: a process group of its own, Ctrl-C ignored,
    SIGTERM back to its default (for ``Pool.terminate``; one sent to the old group while it started ends it now,
    before it has taken a task) or to ``on_sigterm``, and an exit of its own when the parent is gone (killed with
    SIGKILL)."""
    if hasattr(os, "setpgrp"):
        os.setpgrp()
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, on_sigterm)
    if hasattr(signal, "pthread_sigmask"):
        signal.pthread_sigmask(signal.SIG_UNBLOCK, STOP_SIGNALS)
    threading.Thread(target=_exit_with, args=(parent,), daemon=True).start()


def _exit_with(parent: int) -> None:
    while os.getppid() == parent:
        time.sleep(1.0)
    os._exit(1)


def kill_workers(processes: list[Any]) -> None:
    """SIGKILL every process still alive (they ignore SIGTERM), and reap it."""
    for p in processes:
        if p.exitcode is None:
            with contextlib.suppress(OSError, ValueError, AttributeError):
                p.kill()
    for p in processes:
        with contextlib.suppress(OSError, ValueError, AttributeError, AssertionError):
            p.join(timeout=10)


# --- long jobs side by side: processes of their own, or Ray tasks -------------------------------------------------


def run_in_processes(
    function: Callable[[T], R], jobs: Sequence[T], processes: int, done: Callable[[int, R], None] | None = None
) -> list[R]:
    """``function(job)`` for every job, each in a spawned process of its own, at most ``processes`` at a time (each
    with its share of the cores: :func:`worker_threads`); the results in job order, and each to ``done(index,
    result)`` as it comes. ``function`` must be a module-level function, and jobs and results picklable.

    For long jobs that must stop cleanly, which a pool cannot give them: ``Pool.terminate`` sends its workers
    SIGTERM, and one that handled it (a training run saves first) would then wait for ever on the task lock the
    pool keeps. Here each process leaves the process group (:func:`leave_process_group`) and turns SIGTERM into
    :class:`Terminated`; on Ctrl-C or SIGTERM the parent sends SIGTERM to every running job, waits for them to stop
    (a second Ctrl-C kills them) and starts no more. A job that fails stops the others the same way, and its
    exception is raised in the parent."""
    context = multiprocessing.get_context("spawn")
    results: list[Any] = [None] * len(jobs)
    waiting = list(range(len(jobs)))
    running: dict[int, tuple[Any, Any]] = {}  # job -> (process, the end of its pipe we read)
    failure: BaseException | None = None
    try:
        while running or (waiting and failure is None):
            while waiting and failure is None and len(running) < processes:
                i = waiting.pop(0)
                receive, send = context.Pipe(duplex=False)
                process = context.Process(target=_job_process, args=(function, jobs[i], send, os.getpid()))
                with environment(worker_threads(processes)):
                    start_workers(functools.partial(_started, process), lambda p: kill_workers([p]))
                send.close()  # the child's copy is the only one left: its exit reads as end of file
                running[i] = (process, receive)
            wait([receive for _, receive in running.values()])
            for i, (process, receive) in list(running.items()):
                if not receive.poll():
                    continue
                outcome, value = _receive(receive, process)
                del running[i]
                if outcome == "done":
                    results[i] = value
                    if done is not None:
                        done(i, value)
                elif failure is None:
                    failure = value
                    _stop(running)
    except BaseException:
        _stop(running)
        _wait_for(running)
        raise
    if failure is not None:
        raise failure
    return results


def _started(process: Any) -> Any:
    process.start()
    return process


def _job_process(function: Callable[[Any], Any], job: Any, send: Any, parent: int) -> None:
    try:
        leave_process_group(parent, _terminated)  # a SIGTERM held back while it started is Terminated here
        outcome: tuple[str, Any] = ("done", function(job))
    except (KeyboardInterrupt, Exception) as exc:  # KeyboardInterrupt: Terminated, the parent stopped the job
        exc.add_note("in the job's process:\n" + traceback.format_exc().rstrip())  # where it came from
        outcome = ("failed", exc)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)  # the job is over: its answer goes out whatever comes now
    try:
        send.send(outcome)
    except Exception:  # an exception that does not pickle: its message
        send.send(("failed", RuntimeError(f"{type(outcome[1]).__name__}: {outcome[1]}")))
    send.close()


def _receive(receive: Any, process: Any) -> tuple[str, Any]:
    try:
        outcome = receive.recv()
    except EOFError:  # killed without a word (SIGKILL, out of memory)
        process.join(timeout=10)
        outcome = ("failed", ProcessDied(f"a worker process died (exit code {process.exitcode})"))
    receive.close()
    process.join(timeout=60)
    kill_workers([process])  # one that did not exit after answering
    return outcome


def _stop(running: dict[int, tuple[Any, Any]]) -> None:
    """Ask every running job to stop (SIGTERM: :class:`Terminated` in the job, a clean stop)."""
    for process, _ in running.values():
        if process.exitcode is None:
            with contextlib.suppress(OSError):
                os.kill(process.pid, signal.SIGTERM)


def _wait_for(running: dict[int, tuple[Any, Any]]) -> None:
    """Wait for the stopped jobs to end; a second Ctrl-C kills them."""
    try:
        for process, receive in running.values():
            process.join()
            receive.close()
    except BaseException:
        kill_workers([process for process, _ in running.values()])
        raise


def require_ray() -> None:
    """A ``ValueError`` saying how to install Ray where it is not (checked before any work is done)."""
    if importlib.util.find_spec("ray") is None:
        raise ValueError("--ray needs Ray: pip install -e '.[ray]'")


@contextlib.contextmanager
def ray_session(address: str, cpus: int | None = None) -> Iterator[Any]:
    """The ``ray`` module, connected for the block. ``address``: ``""`` starts a local Ray instance (of ``cpus``
    CPUs, or all) or joins the cluster named by ``RAY_ADDRESS``; else a cluster address (``auto``, ``HOST:6379``,
    ``ray://HOST:10001``). A connection this process already has is used as it is, and left open."""
    require_ray()
    import ray

    started = not ray.is_initialized()
    if started:
        local = {"num_cpus": cpus} if not address and cpus else {}
        ray.init(address=address or None, include_dashboard=False, log_to_driver=False, **local)
    try:
        yield ray
    finally:
        if started:
            ray.shutdown()


def run_on_ray(function: Callable[[T], R], jobs: Sequence[T], address: str) -> list[R]:
    """``function(job)`` for every job as a Ray task of one CPU (:func:`ray_session` says what ``address`` is); the
    results in job order. A job's exception is raised here as it was raised there; Ctrl-C cancels the tasks."""
    with ray_session(address) as ray:
        remote = ray.remote(num_cpus=1)(function)
        refs = [remote.remote(job) for job in jobs]
        try:
            return ray.get(refs)
        except ray.exceptions.RayTaskError as exc:
            cause = getattr(exc, "cause", None)
            raise (cause if isinstance(cause, Exception) else RuntimeError(str(exc).splitlines()[0])) from None
        except KeyboardInterrupt:
            for ref in refs:
                with contextlib.suppress(Exception):
                    ray.cancel(ref)
            raise
