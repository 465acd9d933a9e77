"""``revolution train``: self-play training from a YAML config (also ``python -m training train``)."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from .config import load_config


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Register the ``train`` subcommand on an argparse ``subparsers`` object."""
    p = subparsers.add_parser(
        "train",
        help="train a policy by self-play with MaskablePPO",
        description="Train a policy by self-play against a league of its own snapshots and the heuristic bots. "
        "Checkpoints go to the run folder (latest.pt, best.pt); TensorBoard logs to <out>/tb.",
    )
    p.add_argument("--config", required=True, help="a YAML config (configs/default.yaml, ...)")
    p.add_argument("--out", help="the run folder (default: the config's `out`)")
    p.add_argument(
        "--resume", action="store_true", help="continue the run in the folder from its last save (its own config)"
    )
    p.add_argument("--total-steps", type=int, help="train to this many steps in all (overrides the config)")
    bar = p.add_mutually_exclusive_group()
    bar.add_argument("--progress", dest="progress", action="store_true", default=None, help="show a progress bar")
    bar.add_argument("--no-progress", dest="progress", action="store_false", help="no progress bar")
    p.set_defaults(func=cmd_train)
    return p


def cmd_train(args: argparse.Namespace) -> int:
    try:
        from .train import train  # torch and SB3 load only when training
    except ModuleNotFoundError as exc:
        print(
            f"error: training needs the `train` extra ({exc.name} is missing): pip install -e '.[train]'",
            file=sys.stderr,
        )
        return 2

    config = None
    try:
        config = load_config(args.config)
        if args.total_steps is not None:
            if args.total_steps < 1:
                raise ValueError(f"--total-steps: expected a positive integer, got {args.total_steps}")
            config = config.replace(total_steps=args.total_steps)
        progress = sys.stderr.isatty() if args.progress is None else args.progress
        result = train(config, out=args.out, resume=args.resume, progress=progress)
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        from .train import read_state

        out = args.out or (config.out if config is not None else None)
        if out is not None and read_state(out) is None:  # e.g. stopped while imitating its teacher
            print("aborted before the first save: nothing to resume, start the run again", file=sys.stderr)
        else:
            print("aborted: the last save is intact (continue with --resume)", file=sys.stderr)
        return 130
    best = f", best mean win rate {result.best_win_rate:.2f}" if result.best_win_rate is not None else ""
    if result.interrupted:
        print(f"stopped at step {result.step}: saved in {result.out} (continue with --resume)")
        return 130
    print(f"done: {result.step} steps at {result.steps_per_second:.0f} steps/s{best}; policy: {result.out}/latest.pt")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m training", description="Self-play training for Revolution!")
    add_parser(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(argv)
    return args.func(args)
