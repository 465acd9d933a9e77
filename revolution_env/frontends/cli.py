"""The `revolution` command line (also `python -m revolution_env`)."""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

from revolution_env.engine import BID, ScenarioError, dumps_state, export_game, state_dict
from revolution_env.engine.game import Game
from revolution_env.engine.random_play import random_bids, random_choice
from revolution_env.engine.scenario import load_json, run_scenario
from revolution_env.env.text import render
from revolution_env.frontends.evaluate import add_parser as add_eval_parser
from revolution_env.frontends.options import (
    OneLineParser,
    add_rule_options,
    non_negative_int,
    plugin_commands,
    positive_int,
    rules_from_args,
    run_command,
)
from revolution_env.frontends.terminal import add_parser as add_play_parser
from revolution_env.frontends.web import add_parser as add_serve_parser


def cmd_scenario(args: argparse.Namespace) -> int:
    data = load_json(args.file)
    game = run_scenario(data, draws="seed" if args.draws_from_seed else "record")
    state = state_dict(game)
    print(dumps_state(state))
    if args.check:
        if not isinstance(data, dict) or "expect" not in data:
            raise ScenarioError('--check needs an "expect" state in the scenario', field="expect")
        if state != data["expect"]:
            diffs = [k for k in sorted(set(state) | set(data["expect"])) if state.get(k) != data["expect"].get(k)]
            print(f'scenario {args.file}: the state differs from "expect" in: {", ".join(diffs)}', file=sys.stderr)
            return 1
    return 0


def cmd_random(args: argparse.Namespace) -> int:
    """Play a seeded random game and print it round by round."""
    game = Game.new(rules_from_args(args), args.seed)
    rng = np.random.default_rng([game.seed, 1])
    while game.decision is not None:
        if game.decision.kind == BID:
            game.submit_bids(random_bids(game, rng))
            if not args.quiet:
                print(render(game) + "\n")
        else:
            game.choose(random_choice(game, rng))
    print(render(game))
    if args.export:
        if Path(args.export).is_dir():
            raise ValueError(f"--export: {args.export} is a folder; give a file name (game.json)")
        with open(args.export, "w", encoding="utf-8") as fh:
            json.dump(export_game(game), fh, indent=1)
            fh.write("\n")
        print(f"\nexported as a scenario: {args.export}")
    return 0


REPO = Path(__file__).resolve().parents[2]  # the clone this package was installed from (editable install)
SHIPPED_3P = REPO / "checkpoints" / "three_players.pt"


def cmd_main(args: argparse.Namespace) -> int:
    """The README's main job: a short self-play training run, then a round robin of its best checkpoint, its
    imitation start (so that the table shows what training added), the shipped 3-player bot and the heuristics.
    The round robin is ``revolution eval``'s: stopped, it keeps its games and prints the command that continues it."""
    config = REPO / "configs" / "default.yaml"
    if not config.exists():
        print(f"error: {config} not found: run the main job from a clone of the repository", file=sys.stderr)
        return 2
    out = Path(args.out) / time.strftime("%Y%m%d-%H%M%S")
    print(f"== 1/2 self-play training ({config.relative_to(REPO)}) into {out}")
    code = main(
        ["train", "--config", str(config), "--out", str(out)]
        + (["--total-steps", str(args.steps)] if args.steps else [])
    )
    if code != 0:
        return code
    best = out / "best.pt" if (out / "best.pt").exists() else out / "latest.pt"  # best.pt: kept by its evaluations
    pool = [str(best), *([str(out / "imitation.pt")] if (out / "imitation.pt").exists() else [])]
    pool += ["value", "area", "bargain", "random"]
    if SHIPPED_3P.exists():
        pool.insert(2, str(SHIPPED_3P))
    else:
        print(f"(no shipped bot at {SHIPPED_3P}: evaluating the new bot only)")
    print(f"\n== 2/2 evaluation: a 3-player round robin of {', '.join(Path(p).name for p in pool)}")
    return main(["eval", "--players", "3", "--pool", *pool, "--games", str(args.games), "--seed", str(args.seed),
                 "--out", str(out / "eval")])  # fmt: skip


def build_parser() -> argparse.ArgumentParser:
    parser = OneLineParser(prog="revolution", description="Revolution!: rules engine, environment and bots.")
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser(
        "scenario",
        help="play a scenario file and print the resulting state as canonical JSON",
        description="Play a scenario (a start position and the rounds to play from it, as JSON: docs/scenarios.md)"
        " and print the resulting state as canonical JSON. A scenario that cannot be played exits 2 with one line"
        " naming the round, seat and field.",
    )
    p.add_argument("file", help="the scenario, a JSON file")
    p.add_argument(
        "--check", action="store_true", help='also compare with the scenario\'s "expect" state (exit 1 if not equal)'
    )
    p.add_argument(
        "--draws-from-seed",
        action="store_true",
        help="draw the chance outcomes the scenario does not record (the first edition's deck and reshuffles) from "
        "its seed, as for games saved before saved games recorded them (docs/scenarios.md)",
    )
    p.set_defaults(func=cmd_scenario)

    p = sub.add_parser(
        "random",
        help="play a seeded random game and print it",
        description="Play a seeded game in which every decision is a uniformly drawn legal one, and print it round by"
        " round. --export saves it as a scenario that `revolution scenario` replays to the same state.",
    )
    add_rule_options(p)
    p.add_argument("--seed", type=non_negative_int, default=0)
    p.add_argument("--quiet", action="store_true", help="print only the final state")
    p.add_argument("--export", metavar="FILE", help="also save the game as a scenario file that replays it")
    p.set_defaults(func=cmd_random)
    add_eval_parser(sub)
    add_play_parser(sub)
    add_serve_parser(sub)
    for add_parser in plugin_commands():
        add_parser(sub)

    p = sub.add_parser(
        "main",
        help="the README's main job: a short self-play training run, then an evaluation",
        description="The README's main job (about 4 minutes on 2 cores, the first time on a machine included):"
        " train configs/default.yaml (imitation of value, then magnet-regularised PPO against a league of its"
        " snapshots and the heuristics), then a 3-player round robin of its best checkpoint, its imitation start, the"
        " shipped 3-player bot and the heuristics, with the table printed. Needs a clone of the repository and the"
        " train extra.",
    )
    p.add_argument("--out", default="runs/main", help="runs go to OUT/<date-time> (default runs/main)")
    p.add_argument("--steps", type=positive_int, help="training steps (default: configs/default.yaml's)")
    p.add_argument("--games", type=positive_int, default=12, help="evaluation games per lineup (default 12)")
    p.add_argument("--seed", type=non_negative_int, default=0, help="the evaluation's seed")
    p.set_defaults(func=cmd_main)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    return run_command(args)  # every clean error of every subcommand: one line, exit 2
