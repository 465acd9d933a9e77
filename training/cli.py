"""``revolution train``: self-play training from a YAML config (also ``python -m revolution_training train``)."""

from __future__ import annotations

import argparse
import signal
import sys
from pathlib import Path
from typing import Any

from revolution_training.config import load_config

from revolution_env.common.workers import exit_status
from revolution_env.frontends.options import OneLineParser, non_negative_int, positive_int, run_command


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
        from revolution_training.train import WorkerDied, train  # torch and SB3 load only when training
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
            if config.stages:
                raise ValueError("--total-steps: a recipe's stages give their own total_steps (edit the recipe)")
            config = config.replace(total_steps=args.total_steps)
        progress = sys.stderr.isatty() if args.progress is None else args.progress
        result = train(config, out=args.out, resume=args.resume, progress=progress)
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except WorkerDied as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt as exc:  # a second Ctrl-C, or a signal before training started
        from revolution_training.train import read_state

        out = args.out or (config.out if config is not None else None)
        try:
            saved = out is not None and (read_state(out) is not None or (Path(out) / "recipe.yaml").exists())
        except ValueError:
            saved = False
        if not saved:  # e.g. stopped while imitating its teacher
            print("aborted before the first save: nothing to resume, start the run again", file=sys.stderr)
        else:
            print("aborted: the last save is intact (continue with --resume)", file=sys.stderr)
        return exit_status(exc)
    best = ""
    if result.best_win_rate is not None:
        best = f", best {result.best_by} win rate {result.best_win_rate:.2f}"
    if result.interrupted:
        print(f"stopped at step {result.step}: saved in {result.out} (continue with --resume)")
        return 128 + (result.signal or signal.SIGINT)  # 130 for Ctrl-C, 143 for SIGTERM
    print(f"done: {result.step} steps at {result.steps_per_second:.0f} steps/s{best}; policy: {result.out}/latest.pt")
    return 0


def add_exploit_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Register the ``exploit`` subcommand (approximate exploitability, ``revolution_training.exploit``)."""
    p = subparsers.add_parser(
        "exploit",
        help="train a best response against a frozen agent: its win rate is the agent's approximate exploitability",
        description="Train a fresh policy against AGENT (a checkpoint or a heuristic) in every other seat and "
        "report its win rate over training and at the end, with 95% intervals (see training/exploit.py).",
    )
    p.add_argument(
        "agent",
        metavar="AGENT",
        help="a checkpoint (.pt; PATH.pt:sample samples its policy), a heuristic (value, ...) or a mixture "
        "(mix:SPEC@W,SPEC@W,...)",
    )
    p.add_argument("--players", type=int, help="players (a checkpoint's own by default; else 3)")
    p.add_argument("--steps", type=positive_int, default=200_000, help="learner steps of the best response")
    p.add_argument("--out", help="the run folder (default runs/exploit/<agent>); an existing one is resumed")
    p.add_argument("--seed", type=non_negative_int, default=0)
    p.add_argument("--eval-games", type=positive_int, default=60, help="games per evaluation during training")
    p.add_argument(
        "--final-games", type=positive_int, default=600, help="fresh games of the best checkpoint at the end"
    )
    p.add_argument("--n-envs", type=positive_int, default=64, help="games stepped together by the batched engine")
    p.add_argument("--reward", choices=("win_loss", "margin"), default="margin", help="the best response's reward")
    p.add_argument("--ray", nargs="?", const="", metavar="ADDRESS", help="play the final games on Ray")
    p.set_defaults(func=cmd_exploit)
    return p


def cmd_exploit(args: argparse.Namespace) -> int:
    try:
        from revolution_training.train import train_best_response
    except ModuleNotFoundError as exc:
        print(f"error: exploit needs the `train` extra ({exc.name} is missing): pip install -e '.[train]'",
              file=sys.stderr)  # fmt: skip
        return 2
    try:
        result = train_best_response(
            args.agent, args.players, args.steps, args.out, args.seed, args.eval_games, args.final_games,
            args.ray, progress=sys.stderr.isatty(), n_envs=args.n_envs, reward=args.reward,
        )  # fmt: skip
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt as exc:
        print("aborted: the last save is intact (run the same command again to continue)", file=sys.stderr)
        return exit_status(exc)
    print("| step | games | best response win rate | 95% CI |\n|--:|--:|--:|--:|")
    for c in result.curve:
        print(f"| {c['step']:,} | {c['games']} | {c['win_rate']:.3f} | "
              f"[{c['win_rate_ci95'][0]:.3f}, {c['win_rate_ci95'][1]:.3f}] |")  # fmt: skip
    f = result.final
    lo, hi = f["win_rate_ci95"]
    print(f"\napproximate exploitability of {result.target} ({result.players} players, {result.steps:,} steps): "
          f"the best response wins {f['win_rate']:.3f} [{lo:.3f}, {hi:.3f}] of {f['games']} fresh games "
          f"(chance {1 / result.players:.3f}); written: {result.out / 'exploit.json'}, {result.out / 'exploit.png'}")  # fmt: skip
    return 0


def add_psro_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Register the ``psro`` subcommand (a population with a Nash meta-strategy, ``revolution_training.psro``)."""
    p = subparsers.add_parser(
        "psro",
        help="grow a population of policies by best responses to its Nash meta-strategy (PSRO)",
        description="PSRO: play the population's payoff table, solve its meta-game (the zero-sum Nash with two "
        "players, replicator dynamics with more), train a best response to the meta-strategy, add it, repeat. "
        "Writes <out>/population.json, an agent spec that plays one member per game.",
    )
    p.add_argument("--config", required=True, help="a training config with a psro: section (configs/psro_*.yaml)")
    p.add_argument("--out", required=True, help="the run folder")
    p.add_argument("--resume", action="store_true", help="continue the run in the folder")
    p.set_defaults(func=cmd_psro)
    return p


def cmd_psro(args: argparse.Namespace) -> int:
    try:
        from revolution_training.psro import load_psro_config, run_psro
    except ModuleNotFoundError as exc:
        print(f"error: psro needs the `train` extra ({exc.name} is missing): pip install -e '.[train]'",
              file=sys.stderr)  # fmt: skip
        return 2
    try:
        oracle, psro = load_psro_config(args.config)
        state = run_psro(oracle, psro, args.out, args.resume, progress=sys.stderr.isatty())
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt as exc:
        print(f"aborted: continue with revolution psro --config {args.config} --out {args.out} --resume",
              file=sys.stderr)  # fmt: skip
        return exit_status(exc)
    print(f"population: {Path(args.out) / 'population.json'} (an agent spec; meta-game regret {state['regret']:.4f})")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = OneLineParser(prog="python -m revolution_training", description="Self-play training for Revolution!")
    sub = parser.add_subparsers(dest="command", required=True)
    add_parser(sub)
    add_exploit_parser(sub)
    add_psro_parser(sub)
    args = parser.parse_args(argv)
    return run_command(args)
