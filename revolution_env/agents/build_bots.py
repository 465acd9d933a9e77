"""``python -m revolution_env.agents.build_bots [--lock PATH]``: compile the heuristic bots into Numba's cache
(:mod:`.compiled`). The first heuristic decision of a process that finds the cache empty runs this in the
background, with the lock it took (released here when done); run by hand, it compiles under the lock itself."""

from __future__ import annotations

import sys
from pathlib import Path

from revolution_env.agents.compiled import build
from revolution_env.agents.heuristics import ValueBot
from revolution_env.common import jit


def main(argv: list[str]) -> int:
    jit.DEFER_SIGNALS = False  # SIGTERM stops a build at once (it only compiles: it leaves nothing half-built to run)
    lock = Path(argv[argv.index("--lock") + 1]) if "--lock" in argv else None
    build(ValueBot(players=3), lock=lock)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
