"""``revolution train``: self-play training from a YAML config (also ``python -m revolution_training train``)."""

from __future__ import annotations

import argparse
import functools
import signal
import sys
from pathlib import Path
from typing import Any

from revolution_training.config import TrainConfig, load_config
from revolution_training.exploit import (
    CALIBRATION,
    CALIBRATION_DIR,
    CURVE_STEPS,
    EVAL_GAMES,
    GAMES,
    KNOWN_GAMES,
    N_ENVS,
    REWARD,
    SEEDS,
    STEPS,
)

from revolution_env.common.workers import ProcessDied, exit_status
from revolution_env.frontends.options import OneLineParser, non_negative_int, one_line, positive_int, run_command


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


def missing_train_extra(command: str, exc: ModuleNotFoundError) -> int:
    """One line for a command run without the ``train`` extra (torch, SB3: imported only when a command needs them);
    the exit status 2."""
    print(
        f"error: {command} needs the `train` extra ({exc.name} is missing): pip install -e '.[train]'", file=sys.stderr
    )
    return 2


def start_compiling(config: TrainConfig) -> None:
    """Start the background build of the heuristic bots (``revolution_training.train.compile_ahead``) where the run
    plays them and Numba's cache lacks them, before torch loads and the run builds its games and model, so that the
    build overlaps them on a fresh install."""
    from revolution_env.agents.compiled import ready

    bot = config.compiled_bot()
    if bot is not None:
        ready(bot)


def cmd_train(args: argparse.Namespace) -> int:
    try:
        config = load_config(args.config)
        if args.total_steps is not None:
            if args.total_steps < 1:
                raise ValueError(f"--total-steps: expected a positive integer, got {args.total_steps}")
            if config.stages:
                raise ValueError("--total-steps: a recipe's stages give their own total_steps (edit the recipe)")
            config = config.replace(total_steps=args.total_steps)
        start_compiling(config)
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    try:
        from revolution_training.train import WorkerDied, train  # torch and SB3 load only when training
    except ModuleNotFoundError as exc:
        return missing_train_extra("training", exc)

    try:
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

        out = args.out or config.out
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
    """Register the ``exploit`` subcommand (the exploitability benchmark, ``revolution_training.exploit``)."""
    p = subparsers.add_parser(
        "exploit",
        help="approximate exploitability: the most that best responses or known agents win against a frozen agent",
        description="Approximate exploitability of AGENT: the most that any of three sources wins against it, each "
        "named: (a) --seeds best responses started from a copy of AGENT's policy (where it has weights) and (b) as "
        "many started from --common-start, each trained against AGENT (in every other seat) for --steps learner "
        "steps and measured on --games fresh seat-rotated games; (c) the best known response, --known-games "
        "seat-rotated games of each --known agent against AGENT. Every seed and known agent is shown with its 95% "
        "interval, beside calibration rows (the same protocol against random and value). With --curve, the same for "
        "every snapshot of a training run, plotted against its steps. Run the same command again to continue an "
        "interrupted benchmark (see training/exploit.py, docs/exploitability.md).",
    )
    p.add_argument(
        "agent",
        nargs="?",
        metavar="AGENT",
        help="a checkpoint (.pt; PATH.pt:sample samples its policy), a heuristic (value, ...), a mixture "
        "(mix:SPEC@W,SPEC@W,...) or a checkpoint played with search over its bids (search:PATH)",
    )
    p.add_argument("--curve", metavar="RUN_FOLDER", help="measure every league snapshot (and latest.pt) of a run")
    p.add_argument("--players", type=int, help="players (a checkpoint's own by default; else 3)")
    p.add_argument(
        "--steps",
        type=positive_int,
        help=f"learner steps of each best response: the budget (default {STEPS:,}; {CURVE_STEPS:,} with --curve)",
    )
    p.add_argument("--seeds", type=positive_int, default=SEEDS, help=f"best responses (default {SEEDS})")
    p.add_argument("--seed", type=non_negative_int, default=0, help="the first best response's seed (default 0)")
    p.add_argument(
        "--games",
        "--final-games",
        type=positive_int,
        default=GAMES,
        help=f"fresh games of each best response at the end (default {GAMES:,})",
    )
    p.add_argument("--eval-games", type=positive_int, default=EVAL_GAMES, help="games per evaluation during training")
    p.add_argument("--n-envs", type=positive_int, default=N_ENVS, help="games stepped together by the batched engine")
    p.add_argument("--reward", choices=("win_loss", "margin"), default=REWARD, help="the best responses' reward")
    p.add_argument(
        "--calibration",
        nargs="+",
        metavar="SPEC",
        default=list(CALIBRATION),
        help=f"calibration rows: the same protocol against these agents (default {' '.join(CALIBRATION)})",
    )
    p.add_argument("--no-calibration", action="store_true", help="no calibration rows")
    p.add_argument(
        "--calibration-dir",
        default=CALIBRATION_DIR,
        help=f"where calibration rows are cached, by protocol (default {CALIBRATION_DIR})",
    )
    p.add_argument(
        "--common-start",
        metavar="CHECKPOINT",
        help="source (b): the policy checkpoint every agent's best responses also start from (default the shipped "
        "bot of the players' count, checkpoints/two_players.pt, three_players.pt, four_players.pt)",
    )
    p.add_argument(
        "--known",
        nargs="+",
        metavar="SPEC",
        help="source (c): the known agents played against the agent (default value, bargain, area, the held-out "
        "set, the shipped bot, random)",
    )
    p.add_argument(
        "--known-games",
        type=positive_int,
        default=KNOWN_GAMES,
        help=f"seat-rotated games of each known agent against the agent (default {KNOWN_GAMES:,})",
    )
    p.add_argument("--out", help="the benchmark's folder (default runs/exploit/<agent>, or runs/exploit/curve-<run>)")
    p.add_argument(
        "--ray",
        nargs="?",
        const="",
        metavar="ADDRESS",
        help="run the best responses as Ray tasks: alone, a local instance (or RAY_ADDRESS); with an address, that "
        "cluster (its nodes must see the folders); the same seeds give the same results",
    )
    p.set_defaults(func=cmd_exploit)
    return p


def cmd_exploit(args: argparse.Namespace) -> int:
    try:
        from revolution_training.exploitability import benchmark, curve, print_report
    except ModuleNotFoundError as exc:
        return missing_train_extra("exploit", exc)
    if (args.agent is None) == (args.curve is None):
        print("error: give an AGENT or --curve RUN_FOLDER (one of them)", file=sys.stderr)
        return 2
    common = {
        "players": args.players, "seeds": args.seeds, "seed": args.seed, "games": args.games,
        "eval_games": args.eval_games, "n_envs": args.n_envs, "reward": args.reward, "out": args.out,
        "calibration": [] if args.no_calibration else args.calibration, "calibration_dir": args.calibration_dir,
        "ray_address": args.ray, "common_start": args.common_start, "known": args.known,
        "known_games": args.known_games,
    }  # fmt: skip
    say = functools.partial(print, flush=True)
    try:
        if args.curve is not None:
            data = curve(args.curve, steps=args.steps or CURVE_STEPS, say=say, **common)
        else:
            data = benchmark(args.agent, steps=args.steps or STEPS, say=say, **common)
    except ValueError as exc:
        print(f"error: {one_line(exc)}", file=sys.stderr)
        return 2
    except ProcessDied as exc:  # killed, out of memory: the others stopped cleanly
        print(f"error: {one_line(exc)}; run the same command again to continue", file=sys.stderr)
        return 1
    except KeyboardInterrupt as exc:
        print("aborted: every best response keeps its last save (run the same command again to continue)",
              file=sys.stderr)  # fmt: skip
        return exit_status(exc)
    print()
    print_report(data)
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
    p.add_argument(
        "--config", required=True, help="a training config with a psro: section (experiments/psro_two_players.yaml)"
    )
    p.add_argument("--out", required=True, help="the run folder")
    p.add_argument("--resume", action="store_true", help="continue the run in the folder")
    p.set_defaults(func=cmd_psro)
    return p


def cmd_psro(args: argparse.Namespace) -> int:
    try:
        from revolution_training.psro import load_psro_config, run_psro
    except ModuleNotFoundError as exc:
        return missing_train_extra("psro", exc)
    try:
        oracle, psro = load_psro_config(args.config)
        state = run_psro(oracle, psro, args.out, args.resume, progress=sys.stderr.isatty())
    except ValueError as exc:
        print(f"error: {one_line(exc)}", file=sys.stderr)
        return 2
    except KeyboardInterrupt as exc:
        print(f"aborted: continue with revolution psro --config {args.config} --out {args.out} --resume",
              file=sys.stderr)  # fmt: skip
        return exit_status(exc)
    print(f"population: {Path(args.out) / 'population.json'} (an agent spec; meta-game regret {state['regret']:.4f})")
    return 0


def add_fit_critic_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Register the ``fit-critic`` subcommand (a value network fitted from games, ``revolution_training.value_fit``)."""
    p = subparsers.add_parser(
        "fit-critic",
        help="fit a critic (value network) to the final rewards of games; attach it to a checkpoint or save it alone",
        description="Play --games seeded games of every lineup of the agents (each over every seat order, as "
        "revolution eval --pool does; CHECKPOINT plays among them), record every seat's observation at every bid "
        "decision with its final reward, and fit a value network to them by squared error, a tenth of the games "
        "held out. With CHECKPOINT, --out is a copy of it carrying the critic (its actor unchanged); without, a "
        "critic file that equilibrium:critic=FILE:POLICY scores states by. See training/value_fit.py.",
    )
    p.add_argument("checkpoint", nargs="?", metavar="CHECKPOINT", help="the policy checkpoint that gets the critic")
    p.add_argument("--agents", nargs="+", metavar="SPEC", help="the agents whose games are recorded")
    p.add_argument("--players", type=positive_int, help="players (a checkpoint's own by default)")
    p.add_argument("--games", type=positive_int, default=100, help="games per lineup (default 100)")
    p.add_argument("--seed", type=non_negative_int, default=0, help="the games' seed, and the fit's (default 0)")
    p.add_argument("--out", help="the checkpoint (or critic file) to write; without it, --save-games records only")
    p.add_argument("--workers", type=positive_int, help="processes playing games (default: up to 2)")
    p.add_argument("--target", choices=("win_loss", "margin"), default="win_loss",
                   help="the final reward fitted (default win_loss, the search's payoff)")  # fmt: skip
    p.add_argument("--hidden", type=positive_int, nargs="+", help="hidden layer sizes (default: the policy's; 256 256)")
    p.add_argument("--activation", choices=("tanh", "relu"), help="(default: the policy's; tanh)")
    p.add_argument("--epochs", type=positive_int, default=40, help="epochs at most (early stopping; default 40)")
    p.add_argument("--save-games", metavar="NPZ", help="also write the recorded games here (for --games-from)")
    p.add_argument("--games-from", nargs="+", metavar="NPZ", help="games recorded before (--save-games), fitted too")
    p.set_defaults(func=cmd_fit_critic)
    return p


def cmd_fit_critic(args: argparse.Namespace) -> int:
    try:
        from revolution_training.checkpoint import read_checkpoint, rule_options, save_checkpoint
        from revolution_training.value_fit import (
            HIDDEN,
            GameRows,
            attach,
            check_policy,
            critic_file,
            fit,
            fit_info,
            generate,
            schedule,
        )
    except ModuleNotFoundError as exc:
        return missing_train_extra("fit-critic", exc)
    checkpoint = read_checkpoint(args.checkpoint) if args.checkpoint else None
    if checkpoint is not None:
        options = rule_options(checkpoint["env_options"])
        if args.players is not None and args.players != options["players"]:
            raise ValueError(f"{args.checkpoint} is a {options['players']}-player policy; --players {args.players} "
                             "asks for other games")  # fmt: skip
        check_policy(checkpoint, options, args.checkpoint)
        policy = checkpoint["policy"]
        hidden, activation = args.hidden or policy["hidden"], args.activation or policy["activation"]
    else:
        if args.players is None:
            raise ValueError("give --players (or a CHECKPOINT, whose players the games take)")
        options = rule_options({"players": args.players})
        hidden, activation = args.hidden or list(HIDDEN), args.activation or "tanh"
    if not args.agents and not args.games_from:
        raise ValueError("no games: give --agents to play them (or --games-from, games recorded before)")
    if args.out is None and not (args.save_games and args.agents):
        raise ValueError("give --out, the file to write (or --agents and --save-games to record games only)")
    parts = [GameRows.load(path) for path in args.games_from or []]
    if args.agents:
        pool = list(dict.fromkeys(([args.checkpoint] if args.checkpoint else []) + args.agents))
        tasks, names = schedule(pool, options["players"], args.games, args.seed, options)
        print(f"playing {len(tasks):,} games ({options['players']} players: {', '.join(names)})", flush=True)
        rows = generate(tasks, names, options, args.workers, progress=None)
        if args.save_games:
            rows.save(args.save_games)
        print(f"recorded {len(rows):,} bid decisions of {rows.games:,} games", flush=True)
        parts.append(rows)
    if args.out is None:
        print(f"games: {args.save_games} (fit them with --games-from)")
        return 0
    rows = GameRows.concatenate(parts)
    if rule_options(rows.env_options) != options:
        raise ValueError(f"the games are of {rule_options(rows.env_options)}, the critic is for {options}")
    target = args.target
    print(f"fitting a critic {hidden} ({activation}) to {target} on {len(rows):,} bid decisions of {rows.games:,} "
          "games", flush=True)  # fmt: skip
    fitted = fit(rows, target, hidden, activation, args.seed, args.epochs, say=functools.partial(print, flush=True))
    for line in fitted.report.lines():
        print(line)
    info = fit_info(rows, fitted.report, args.seed)
    if checkpoint is not None:
        save_checkpoint(attach(args.checkpoint, fitted.entry, info, options), args.out)
        print(f"policy with its critic: {args.out} (load_agent({args.out!r}).value(observations))")
    else:
        save_checkpoint(critic_file(fitted.entry, info, options, target), args.out)
        print(f"critic: {args.out} (for example equilibrium:critic={args.out}:value)")
    return 0


def add_iterate_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Register the ``iterate`` subcommand (policy iteration with the equilibrium search in the loop,
    ``revolution_training.search_iteration``)."""
    p = subparsers.add_parser(
        "iterate",
        help="policy iteration with the equilibrium search in the loop: games where every seat plays the search, "
        "the policy fitted to its strategies and the critic to its values, repeat",
        description="DNVI-style policy iteration: each iteration plays games in which every seat plays the round's "
        "equilibrium found by the search over the current policy (scored by its critic), then fits the policy to "
        "the search's strategies and its critic to the search's values, and evaluates the result. Writes "
        "<out>/policy_NNN.pt, <out>/best.pt and <out>/iterate.json. See training/search_iteration.py.",
    )
    p.add_argument("--config", required=True, help="a training config with an iterate: section "
                   "(configs/iterate_two_players.yaml)")  # fmt: skip
    p.add_argument("--out", required=True, help="the run folder")
    p.add_argument("--resume", action="store_true", help="continue the run in the folder")
    p.add_argument("--ray", metavar="ADDRESS", help="play the games as Ray tasks (auto, or a cluster's address)")
    p.set_defaults(func=cmd_iterate)
    return p


def cmd_iterate(args: argparse.Namespace) -> int:
    try:
        from revolution_training.search_iteration import load_iterate_config, run_iterate
    except ModuleNotFoundError as exc:
        return missing_train_extra("iterate", exc)
    try:
        config, iterate = load_iterate_config(args.config)
        state = run_iterate(config, iterate, args.out, args.resume, args.ray, say=functools.partial(print, flush=True))
    except ValueError as exc:
        print(f"error: {one_line(exc)}", file=sys.stderr)
        return 2
    except KeyboardInterrupt as exc:
        print(f"aborted: continue with revolution iterate --config {args.config} --out {args.out} --resume",
              file=sys.stderr)  # fmt: skip
        return exit_status(exc)
    best = f"{Path(args.out) / state['best']}" if state["best"] else "none (no evaluation)"
    print(f"iterate: {len(state['iterations'])} iteration(s) in {args.out}; best: {best}")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = OneLineParser(prog="python -m revolution_training", description="Self-play training for Revolution!")
    sub = parser.add_subparsers(dest="command", required=True)
    add_parser(sub)
    add_exploit_parser(sub)
    add_psro_parser(sub)
    add_fit_critic_parser(sub)
    add_iterate_parser(sub)
    args = parser.parse_args(argv)
    return run_command(args)
