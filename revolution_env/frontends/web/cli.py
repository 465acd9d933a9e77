"""``revolution serve``: the replay viewer and games against the bots, in a browser."""

from __future__ import annotations

import argparse
import importlib.util
import sys
from typing import Any

INSTALL_HINT = "revolution serve needs the web extra: pip install -e '.[web]'"
NEEDS = ("starlette", "uvicorn", "orjson")  # the web extra (pyproject.toml)


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Register ``serve`` with the ``revolution`` command line."""
    p = subparsers.add_parser(
        "serve",
        help="watch replays and play against the bots in a browser",
        description="A local web app: a replay viewer for the games under --replays, and games against the bots.",
    )
    p.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1: this machine only)")
    p.add_argument("--port", type=int, default=8000, help="port (default 8000)")
    p.add_argument(
        "--replays",
        nargs="+",
        default=[],
        metavar="DIR",
        help="folders of games to watch: games.jsonl from revolution eval/main, scenario and exported game files",
    )
    p.add_argument(
        "--agents",
        nargs="+",
        default=[],
        metavar="SPEC",
        help="more opponents to offer besides random, value, bargain and area (checkpoint files)",
    )
    p.add_argument(
        "--max-games",
        type=int,
        default=256,
        metavar="N",
        help="games at once (default 256); when every place is taken by a game being played, a new game is refused"
        " (503) rather than ending someone else's",
    )
    p.add_argument(
        "--idle-timeout",
        type=float,
        default=1800.0,
        metavar="SECONDS",
        help="a game whose player has not come back for this long ends, a finished one saved first (default 1800:"
        " 30 minutes)",
    )
    p.set_defaults(func=cmd_serve)
    return p


def check_agents(specs: list[str]) -> None:
    from revolution_env.agents.loading import spec_problem

    for spec in specs:
        if problem := spec_problem(spec):
            raise ValueError(f"--agents: {problem}")


def cmd_serve(args: argparse.Namespace) -> int:
    if any(importlib.util.find_spec(m) is None for m in NEEDS):
        print(f"error: {INSTALL_HINT}", file=sys.stderr)
        return 2
    import uvicorn

    from revolution_env.frontends.web.app import create_app

    if not 0 < args.port < 65536:
        print(f"error: --port: expected 1 to 65535, got {args.port}", file=sys.stderr)
        return 2
    if args.max_games < 1:
        print(f"error: --max-games: expected a positive integer, got {args.max_games}", file=sys.stderr)
        return 2
    if not 0 < args.idle_timeout < 10**9:  # NaN and inf fail too
        print(f"error: --idle-timeout: expected a positive number of seconds, got {args.idle_timeout}", file=sys.stderr)
        return 2
    host = f"[{args.host}]" if ":" in args.host else args.host

    def ready() -> None:
        print(f"revolution serve: open http://{host}:{args.port}/ (Ctrl+C stops)", flush=True)

    try:
        check_agents(args.agents)
        app = create_app(
            args.replays, args.agents, max_games=args.max_games, idle_timeout=args.idle_timeout, on_ready=ready
        )
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print("revolution serve: starting (the bots warm up first)", flush=True)
    # uvicorn.Server rather than uvicorn.run, which would swallow the Ctrl-C or SIGTERM that the server hands on
    # after its graceful stop: the command then exits 130 or 143, as every command does
    uvicorn.Server(uvicorn.Config(app, host=args.host, port=args.port, log_level="warning")).run()
    return 0
