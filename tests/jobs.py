"""Jobs for the tests of ``run_in_processes`` (tests/test_exploit.py): a module of their own, small, so that each
spawned process imports it quickly."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path


def square(x: int) -> int:
    if x < 0:
        raise ValueError("no negative numbers")
    return x * x


def marked(job: tuple[str, str]) -> None:
    """Write ``done`` in a file named after the job (at once for ``quick``, after a minute otherwise), or
    ``stopped`` when told to stop first."""
    name, folder = job
    path = Path(folder) / name
    try:
        if name != "quick":
            path.write_text("started")
            time.sleep(60)
        path.write_text("done")
    except KeyboardInterrupt:  # Terminated: the parent's SIGTERM
        path.write_text("stopped")
        raise


def killed(job: None) -> None:
    """Die without a word, as a process killed for its memory does."""
    os.kill(os.getpid(), signal.SIGKILL)
