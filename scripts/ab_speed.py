"""The vector env's speed in two trees side by side, fresh processes each round (a process's speed is a lottery of
its own on a shared machine: one process per tree measured in turn can keep a few percent either way for its life).

    python scripts/ab_speed.py --before ../old --after . --rounds 12 --batches 1 64 1024

Each tree is run by its own ``.venv/bin/python`` where it has one (a checkout of the code before, with its
environment installed), else by the Python that runs this script.
Each round starts one process per tree (which starts first alternates), holds ``scripts/benchmark.py``'s
``vector_runner`` for each batch size, measures ``--pairs`` pairs of ``--seconds`` (the order alternating within
the round) and keeps the median of the pairs' ratios, after / before, of learner steps per second of process CPU
time. Prints each round and, per batch size, the median and mean over the rounds. Give the same tree twice to see
what the harness itself gives."""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from pathlib import Path


def worker(players: int, batches: list[int]) -> None:
    """Reads ``N SECONDS`` lines; answers learner steps and CPU seconds."""
    sys.path.insert(0, "scripts")
    import benchmark

    runs = {n: benchmark.vector_runner(players, n) for n in batches}
    for run in runs.values():
        run(1.0)
    print("ready", flush=True)
    for line in sys.stdin:
        n, seconds = line.split()
        start = time.process_time()
        steps, _, _ = runs[int(n)](float(seconds))
        print(steps, time.process_time() - start, flush=True)


def rate(proc: subprocess.Popen, n: int, seconds: float) -> float:
    """Learner steps per CPU second of ``n`` games, measured by the worker ``proc`` for ``seconds``."""
    proc.stdin.write(f"{n} {seconds}\n")
    proc.stdin.flush()
    steps, cpu = map(float, proc.stdout.readline().split())
    return steps / cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--before", type=Path, help="the tree measured against (required)")
    parser.add_argument("--after", type=Path, default=Path("."))
    parser.add_argument("--rounds", type=int, default=12)
    parser.add_argument("--pairs", type=int, default=3)
    parser.add_argument("--seconds", type=float, default=1.0)
    parser.add_argument("--players", type=int, default=3)
    parser.add_argument("--batches", type=int, nargs="+", default=[1, 64, 1024])
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        return worker(args.players, args.batches)
    if args.before is None:
        parser.error("--before: the tree to measure against is required")
    trees = {"before": args.before.resolve(), "after": args.after.resolve()}
    for tree in trees.values():
        if not (tree / "scripts/benchmark.py").exists():
            parser.error(f"{tree}: not a checkout of this repository (no scripts/benchmark.py)")
    python = {k: tree / ".venv/bin/python" if (tree / ".venv/bin/python").exists() else Path(sys.executable)
              for k, tree in trees.items()}  # fmt: skip
    ratios: dict[int, list[float]] = {n: [] for n in args.batches}
    here = str(Path(__file__).resolve())
    for r in range(args.rounds):
        order = ("before", "after") if r % 2 == 0 else ("after", "before")
        command = ["--worker", "--players", str(args.players), "--batches", *map(str, args.batches)]
        procs = {
            k: subprocess.Popen(
                [str(python[k]), here, *command],
                cwd=trees[k],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                text=True,
            )  # fmt: skip
            for k in order
        }
        for k, proc in procs.items():
            if proc.stdout.readline().strip() != "ready":
                sys.exit(f"{trees[k]}: the worker did not start")

        for n in args.batches:
            pairs = []
            for i in range(args.pairs):
                rates = {k: rate(procs[k], n, args.seconds) for k in (order if i % 2 == 0 else order[::-1])}
                pairs.append(rates["after"] / rates["before"])
            ratios[n].append(statistics.median(pairs))
        for proc in procs.values():
            proc.stdin.close()
            proc.wait()
        print(f"round {r}: " + "  ".join(f"N={n} {ratios[n][-1]:.3f}" for n in args.batches), flush=True)
    for n, values in ratios.items():
        print(f"N={n}: median {statistics.median(values):.3f}, mean {statistics.mean(values):.3f}, "
              f"from {min(values):.3f} to {max(values):.3f} over {len(values)} rounds")  # fmt: skip


if __name__ == "__main__":
    main()
