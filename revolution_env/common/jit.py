"""Numba where it is installed: ``jit`` compiles a function (``numba.njit(cache=True, nogil=True)``), or leaves it
as plain Python when Numba is missing (``pip install revolution-env[fast]`` installs it) or when the environment
variable ``REVOLUTION_NO_NUMBA`` is set. ``COMPILED`` says which.

The batched engine (``revolution_env.engine.kernels``) and the compiled heuristic bots
(``revolution_env.agents.compiled``) are written as loops for it.
"""

from __future__ import annotations

import os

try:  # pragma: no cover - which branch runs depends on the install
    if os.environ.get("REVOLUTION_NO_NUMBA"):
        raise ImportError
    import numba

    def jit(f):
        return numba.njit(cache=True, nogil=True)(f)

    COMPILED = True
except ImportError:  # pragma: no cover

    def jit(f):
        return f

    COMPILED = False
