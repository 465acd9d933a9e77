"""``revolution eval``: play a lineup (``--agents``) or a round robin (``--pool``) and report on it."""

from __future__ import annotations

import argparse
import contextlib
import shlex
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

from revolution_env.engine.game import RULE_SWITCHES
from revolution_env.evaluation.runner import (
    Tournament,
    default_workers,
    gauntlet_tournament,
    lineup_tournament,
    pool_tournament,
)

if TYPE_CHECKING:
    from revolution_env.evaluation.journal import Journal

DESCRIPTION = """Evaluate agents: a lineup (--agents, one spec per seat) or a round robin (--pool). Every lineup is
rotated over all seat orders; the evaluation is reproducible from --seed whatever --workers is, and an interrupted
one continues (the same command, the same --out) to the results it would have had. Agent specs:
random, a heuristic's name, a checkpoint file (.zip/.pt; PATH:sample plays it sampling its policy), a mixture
mix:SPEC@W,SPEC@W,... (each decision by one of them, drawn with the weights), or search:PATH (a checkpoint whose
bids are chosen by regret matching over its candidate bids)."""


GAUNTLET_OPPONENTS = ("value", "bargain", "area")


class UsageError(ValueError):
    """Bad input on the command line."""


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Register ``eval`` with the ``revolution`` command line."""
    from revolution_env.frontends.options import add_rule_options

    p = subparsers.add_parser("eval", help="evaluate agents: a lineup or a round robin", description=DESCRIPTION)
    add_rule_options(p)
    p.add_argument("--agents", nargs="+", metavar="SPEC", help="a lineup: one agent spec per player")
    p.add_argument("--pool", nargs="+", metavar="SPEC", help="a round robin over every lineup of these agents")
    p.add_argument(
        "--gauntlet",
        metavar="SPEC",
        help="one agent against every table of --opponents; the worst table is the headline",
    )
    p.add_argument(
        "--opponents",
        nargs="+",
        metavar="SPEC",
        default=list(GAUNTLET_OPPONENTS),
        help=f"the gauntlet's opponents (default: {' '.join(GAUNTLET_OPPONENTS)})",
    )
    p.add_argument(
        "--held-out",
        nargs="+",
        metavar="SPEC",
        help="the gauntlet's held-out opponents, which no training run may use: their tables are played like the"
        " others' and reported apart, with their own worst table; 'default' is the variants of the heuristics and"
        " checkpoints/heldout/'s previous bot of this player count, unless it is the --gauntlet agent's file"
        " (docs/heldout.md)",
    )
    p.add_argument("--games", type=int, default=100, help="games per lineup (default 100)")
    p.add_argument("--seed", type=int, default=0, help="the seed of the whole evaluation (default 0)")
    p.add_argument(
        "--out",
        metavar="DIR",
        help="write results.json, games.jsonl (each game as it finishes), report.md and plots here; interrupted"
        " (Ctrl-C, SIGTERM, a kill), the same command continues where it stopped",
    )
    p.add_argument(
        "--force", action="store_true", help="replace another evaluation in --out (refused without it) and start anew"
    )
    p.add_argument(
        "--workers", type=int, default=None, help=f"processes that play the games (default {default_workers()})"
    )
    p.add_argument(
        "--ray",
        nargs="?",
        const="",
        metavar="ADDRESS",
        help="play the games on Ray: alone, a local instance (or RAY_ADDRESS); with an address, that cluster"
        " (auto, HOST:6379, ray://HOST:10001). The same seeds give the same results as a local run",
    )
    p.add_argument("--quiet", action="store_true", help="no progress bar and no table")
    p.set_defaults(func=cmd_eval)
    p.error = _one_line_error  # a bad flag is one line, like every other input error here
    return p


def _one_line_error(message: str) -> NoReturn:
    print(f"error: {message} (see revolution eval --help)", file=sys.stderr)
    sys.exit(2)


def env_options(args: argparse.Namespace) -> dict[str, Any]:
    options = {
        "players": args.players,
        "area_control_bonus": args.area_control_bonus,
        "first_edition": args.first_edition,
        "max_rounds": args.max_rounds,
    }
    if args.bid_refunds is not None:
        options["bid_refunds"] = args.bid_refunds
    if args.board != "standard":
        options["board"] = args.board
    return options


def check_args(args: argparse.Namespace) -> None:
    """Raise UsageError (one line) for input that cannot be evaluated."""
    from revolution_env.frontends.options import rules_from_args

    if sum(x is not None for x in (args.agents, args.pool, args.gauntlet)) != 1:
        raise UsageError("give exactly one of --agents (a lineup), --pool (a round robin) and --gauntlet (one agent)")
    rules_from_args(args)  # the rule options checked by the rules themselves, worded as for every other command
    if args.held_out is not None and args.gauntlet is None:
        raise UsageError("--held-out: held-out opponents are played in a gauntlet (give --gauntlet)")
    if args.agents is not None and len(args.agents) != args.players:
        raise UsageError(f"--agents: {args.players} players need {args.players} specs, got {len(args.agents)}")
    if args.pool is not None and len(args.pool) < args.players:
        raise UsageError(
            f"--pool: {args.players}-player games need at least {args.players} specs, got {len(args.pool)}"
        )
    if args.games < 1:
        raise UsageError(f"--games: expected a positive integer, got {args.games}")
    if args.seed < 0:
        raise UsageError(f"--seed: expected a non-negative integer, got {args.seed}")
    if args.workers is not None and args.workers < 1:
        raise UsageError(f"--workers: expected a positive integer, got {args.workers}")


def command_line(args: argparse.Namespace) -> str:
    """The command that reproduces this evaluation, every option spelled out."""
    words = ["revolution", "eval", "--players", str(args.players)]
    if args.agents is not None:
        words += ["--agents", *args.agents]
    elif args.pool is not None:
        words += ["--pool", *args.pool]
    else:
        words += ["--gauntlet", args.gauntlet, "--opponents", *args.opponents]
        if args.held_out is not None:
            words += ["--held-out", *held_out(args)]
    words += ["--games", str(args.games), "--seed", str(args.seed)]
    for flag in RULE_SWITCHES:
        if getattr(args, flag):
            words.append("--" + flag.replace("_", "-"))
    words += ["--max-rounds", str(args.max_rounds)]
    if args.board != "standard":
        words += ["--board", args.board]
    if args.out:
        words += ["--out", args.out]
    return shlex.join(words)


def held_out(args: argparse.Namespace) -> list[str]:
    """The held-out opponents ``--held-out`` names, ``default`` spelled out for this player count and agent."""
    from revolution_env.agents.heldout import expand_held_out

    return expand_held_out(args.held_out or [], args.players, args.gauntlet)


def tournament(args: argparse.Namespace) -> Tournament:
    """The evaluation the arguments ask for, its agents loaded (a bad spec fails here, before any game)."""
    options = env_options(args)
    if args.agents is not None:
        return lineup_tournament(args.agents, args.games, args.seed, options)
    if args.pool is not None:
        return pool_tournament(args.pool, args.players, args.games, args.seed, options)
    return gauntlet_tournament(args.gauntlet, args.opponents, args.players, args.games, args.seed, options,
                               held_out(args))  # fmt: skip


def cmd_eval(args: argparse.Namespace) -> int:
    """Play the evaluation; with --out, each game into games.jsonl as it finishes, so that an interruption (Ctrl-C,
    SIGTERM) writes the results so far, marked partial, and the same command continues (:mod:`.journal`)."""
    from revolution_env.evaluation.journal import open_journal

    try:
        check_args(args)
        plan = tournament(args)
    except (ValueError, NotImplementedError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    command = command_line(args)
    journal = open_journal(args.out, plan, command, args.force) if args.out else None
    with journal if journal is not None else contextlib.nullcontext():  # the folder locked until it is written
        return _play(args, plan, command, journal)


def _play(args: argparse.Namespace, plan: Tournament, command: str, journal: Journal | None) -> int:
    from revolution_env.common.workers import exit_status
    from revolution_env.evaluation.report import GAMES, partial, print_gauntlet, print_table, write_all

    done = journal.done if journal is not None else {}
    if journal is not None and journal.resumed and not args.quiet:
        print(f"continuing the evaluation in {args.out}: {journal.resumed:,} of {len(plan.tasks):,} games already "
              "played", file=sys.stderr)  # fmt: skip

    def record(tasks: Any, results: Any) -> None:
        if journal is not None:
            journal.record(tasks, results)  # adds them to done
        else:
            done.update(zip((t.index for t in tasks), results))

    try:
        try:
            evaluation = plan.play(args.workers, False if args.quiet else None, args.ray, dict(done), record)
        finally:
            if journal is not None:
                journal.stop()
        if journal is not None:
            journal.finish()  # games.jsonl in game order
    except KeyboardInterrupt as exc:
        evaluation = plan.evaluation(done)
        if not args.quiet:
            print_table(evaluation)
        if args.out:
            write_all(evaluation, args.out, command, games=False)  # the journal holds the games, whole lines
            print(f"{partial(evaluation).removeprefix('partial: ')}: the results so far are in {args.out} "
                  f"(results.json and report.md, marked partial); to continue, the same command: {command}",
                  file=sys.stderr)  # fmt: skip
        else:
            print(f"{partial(evaluation).removeprefix('partial: ')} (give --out to keep them and continue)",
                  file=sys.stderr)  # fmt: skip
        return exit_status(exc)
    if not args.quiet:
        print_table(evaluation)
        if evaluation.gauntlet is not None:
            print_gauntlet(evaluation)
    if args.out:
        written = [Path(args.out) / GAMES, *write_all(evaluation, args.out, command, games=False)]
        if not args.quiet:
            print(f"written: {', '.join(str(p) for p in written)}")
    return 0


def main(argv: list[str] | None = None) -> int:
    """``python -m revolution_env.evaluation ...`` (the same as ``revolution eval ...``)."""
    from revolution_env.frontends.options import OneLineParser, run_command

    parser = OneLineParser(prog="revolution")
    add_parser(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(["eval", *(sys.argv[1:] if argv is None else argv)])
    return run_command(args)
