"""Worker processes and the stop signals (Ctrl-C, SIGTERM).

``timeout``, systemd, Slurm and Ray stop a job by sending SIGTERM to its whole process group, and Ctrl-C sends
SIGINT to the terminal's group: every worker process gets the signal at the same moment as the parent. A worker
killed by it mid-task leaves the parent waiting for an answer that never comes (a pool's ``imap`` hangs, a vector
env's ``step_wait`` dies with ``EOFError``) before the parent has had the chance to save. So here the parent alone
decides when its workers stop: workers ignore both signals (:func:`ignore_stop_signals`), are started while the
parent holds the signals back (:class:`stop_signals_blocked`, so that not even the moments before a worker ignores
them are open), and are closed by the parent, or killed with SIGKILL when the parent gives up on them.

The ``revolution`` command turns SIGTERM into :class:`Terminated`, a kind of ``KeyboardInterrupt``, so that the
clean-up of Ctrl-C runs for it too (:func:`raise_on_sigterm`); the command then exits 143 instead of 130.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import signal
import threading
from collections.abc import Callable, Iterator
from typing import Any

STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised like Ctrl-C's ``KeyboardInterrupt`` so that the same clean-up runs."""


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
def worker_pool(processes: int, initializer: Callable[[], None] | None = None) -> Iterator[Any]:
    """A ``spawn`` pool of workers that ignore the stop signals. Leaving the block normally lets the workers
    finish and exit; leaving it by an exception (Ctrl-C, SIGTERM) kills them (``Pool.terminate`` alone sends
    SIGTERM, which they ignore)."""

    with stop_signals_blocked():
        pool = multiprocessing.get_context("spawn").Pool(processes, initializer=_init_worker, initargs=(initializer,))
    try:
        yield pool
    except BaseException:
        kill_workers(pool._pool)
        pool.terminate()
        raise
    else:
        pool.close()
        pool.join()


def _init_worker(initializer: Callable[[], None] | None) -> None:
    ignore_stop_signals()
    if initializer is not None:
        initializer()


def kill_workers(processes: list[Any]) -> None:
    """SIGKILL every process still alive (they ignore SIGTERM), and reap it."""
    for p in processes:
        if p.exitcode is None:
            with contextlib.suppress(OSError, ValueError, AttributeError):
                p.kill()
    for p in processes:
        with contextlib.suppress(OSError, ValueError, AttributeError, AssertionError):
            p.join(timeout=10)
