"""Code run as plain Python, as where Numba is missing: a fresh interpreter with ``REVOLUTION_NO_NUMBA=1``, for the
tests that hold the compiled loops (the batched engine's kernels, the compiled bots) to the same results without it."""

from __future__ import annotations

import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def run_without_numba(code: str) -> None:
    """Run ``code`` in a fresh interpreter without Numba, with the repository's root and ``tests/`` importable as
    under pytest (``from tests.test_x import ...``, whose own ``from plain_python import ...`` then works); fails
    the calling test with the end of its stderr if it does not exit 0."""
    env = dict(os.environ, REVOLUTION_NO_NUMBA="1")
    env["PYTHONPATH"] = os.pathsep.join([ROOT, os.path.join(ROOT, "tests"), env.get("PYTHONPATH", "")])
    done = subprocess.run([sys.executable, "-c", code], env=env, cwd=ROOT, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-2000:]
