"""What every subcommand of the ``revolution`` command line shares: the rule options, and the subcommands that
other packages register (the training package's ``train``).

Subcommands import this module; this module imports none of them, so the command line has no import cycle.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from importlib.metadata import entry_points
from typing import Any, NoReturn

from revolution_env.common.workers import check_thread_settings, exit_status, raise_on_sigterm
from revolution_env.engine import Rules

COMMANDS_GROUP = "revolution.commands"  # entry points: name = "module:add_parser"


def add_rule_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--players", type=int, default=3, help="2 (with the puppet Guy Fawkes), 3 or 4")
    p.add_argument("--bid-refunds", action="store_true", default=None, help="optional rule: losing bids come back")
    p.add_argument(
        "--area-control-bonus", action="store_true", help="optional rule: +10 and protection for a whole area"
    )
    p.add_argument("--first-edition", action="store_true", help="the first edition's Card space and deck")
    p.add_argument("--max-rounds", type=int, default=100, help="truncate the game after this round (D8)")
    p.add_argument("--board", default="standard", help="a board name or a path to a board JSON file")


class OneLineParser(argparse.ArgumentParser):
    """An argument parser whose usage errors are one line (the usage itself is for --help), exit status 2. Its
    subparsers are of the same class."""

    def error(self, message: str) -> NoReturn:
        print(f"error: {message} (see {self.prog} --help)", file=sys.stderr)
        sys.exit(2)


def one_line(exc: BaseException) -> str:
    """An exception's message on one line."""
    return " ".join(str(exc).split()) or type(exc).__name__


def run_command(args: argparse.Namespace) -> int:
    """Run a parsed subcommand (``args.func``) through the one error path of the command line: bad input
    (``ValueError``, ``OSError``) is one line and exit status 2; Ctrl-C exits 130, SIGTERM 143, after the
    command's own clean-up."""
    raise_on_sigterm()
    try:
        check_thread_settings()  # before a command loads the libraries that would each read them their own way
        return args.func(args)
    except (ValueError, OSError) as exc:
        print(f"error: {one_line(exc)}", file=sys.stderr)
        return 2
    except KeyboardInterrupt as exc:
        print("\ninterrupted", file=sys.stderr)
        return exit_status(exc)


def _int_at_least(text: str, low: int, what: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected {what}, got {text!r}") from None
    if value < low:
        raise argparse.ArgumentTypeError(f"expected {what}, got {text}")
    return value


def non_negative_int(text: str) -> int:
    """An argparse type: a non-negative integer (a seed), or a one-line usage error."""
    return _int_at_least(text, 0, "a non-negative integer")


def positive_int(text: str) -> int:
    """An argparse type: a positive integer, or a one-line usage error."""
    return _int_at_least(text, 1, "a positive integer")


def rules_from_args(args: argparse.Namespace) -> Rules:
    return Rules(
        players=args.players,
        bid_refunds=args.bid_refunds,
        area_control_bonus=args.area_control_bonus,
        first_edition=args.first_edition,
        max_rounds=args.max_rounds,
        board=args.board,
    )


def plugin_commands() -> list[Callable[[Any], Any]]:
    """``add_parser(subparsers)`` of every subcommand registered by another package under the entry-point group
    ``revolution.commands`` (``pyproject.toml``). A package that is not installed registers nothing."""
    out = []
    for entry in sorted(entry_points(group=COMMANDS_GROUP), key=lambda e: e.name):
        try:
            out.append(entry.load())
        except (ImportError, AttributeError):  # its package is gone, misses a dependency, or its installed metadata
            continue  # names a function that this checkout does not have: the command is simply not offered
    return out
