"""Milliseconds per decision of agents, one decision at a time on one core: bid decisions and the others apart.

    .venv/bin/python scripts/decision_time.py --players 2 --games 4 checkpoints/two_players.pt value
    .venv/bin/python scripts/decision_time.py --players 3 checkpoints/three_players.pt --json time.json

Each agent plays ``--games`` games (seeded ``--seed``, ``--seed`` + 1, ...) in seat 0 against ``--opponent`` in every
other seat; every call of its ``act`` is timed, as a person's game or ``revolution serve`` calls it. Two clocks: the
CPU time of the calling thread (what one core spends, the figure to cite on a shared machine, where other processes
stretch the wall clock) and the wall time (its median). BLAS and Numba are held to one thread.
"""

from __future__ import annotations

import os

for _name in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "NUMBA_NUM_THREADS"):
    os.environ[_name] = "1"  # one core: set before NumPy and Numba start their thread pools

import argparse  # noqa: E402
import json  # noqa: E402
import shlex  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402

from revolution_env.agents.loading import load_agent  # noqa: E402
from revolution_env.arena.runner import GameRunner  # noqa: E402
from revolution_env.engine.game import Decision  # noqa: E402


class Timed:
    """An agent whose ``act`` calls are timed by decision kind (``bid`` and ``other``)."""

    def __init__(self, agent) -> None:
        self.agent, self.name = agent, agent.name
        self.cpu: dict[str, list[float]] = {"bid": [], "other": []}
        self.wall: dict[str, list[float]] = {"bid": [], "other": []}

    def reset(self, seed=None) -> None:
        self.agent.reset(seed)

    def act(self, observation, info):
        kind = "bid" if Decision(int(info["decision"])) == Decision.BID else "other"
        cpu, wall = time.thread_time(), time.perf_counter()
        action = self.agent.act(observation, info)
        self.cpu[kind].append(time.thread_time() - cpu)
        self.wall[kind].append(time.perf_counter() - wall)
        return action


def measure(spec: str, opponent: str, games: int, seed: int, players: int) -> dict:
    options = {"players": players}
    timed = Timed(load_agent(spec, **options))
    others = [load_agent(opponent, **options) for _ in range(players - 1)]
    timed.reset(seed)
    runner = GameRunner([timed, *others], options)
    runner.play(seed=seed + games)  # a game unmeasured first: compiled code and caches warm up
    timed.cpu, timed.wall = {"bid": [], "other": []}, {"bid": [], "other": []}
    for game in range(games):
        runner.play(seed=seed + game)
    out = {"agent": spec, "opponent": opponent, "games": games}
    for kind in ("bid", "other"):
        cpu, wall = np.array(timed.cpu[kind]), np.array(timed.wall[kind])
        out[kind] = {"decisions": len(cpu), "cpu_ms_mean": 1000 * float(cpu.mean()) if len(cpu) else None,
                     "wall_ms_median": 1000 * float(np.median(wall)) if len(wall) else None}  # fmt: skip
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("agents", nargs="+", help="agent specs to time")
    parser.add_argument("--players", type=int, default=3)
    parser.add_argument("--opponent", default="value", help="the agent in every other seat")
    parser.add_argument("--games", type=int, default=4)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", default=None, help="write the figures here")
    args = parser.parse_args()
    rows = []
    for spec in args.agents:
        row = measure(spec, args.opponent, args.games, args.seed, args.players)
        rows.append(row)
        print(f"{spec}: " + "; ".join(
            f"{kind} {row[kind]['cpu_ms_mean']:.2f} ms CPU (wall median {row[kind]['wall_ms_median']:.2f} ms, "
            f"{row[kind]['decisions']} decisions)" for kind in ("bid", "other") if row[kind]["decisions"]))  # fmt: skip
    if args.json:
        with open(args.json, "w", encoding="utf-8") as fh:
            json.dump({"players": args.players, "command": shlex.join(["python", *sys.argv]), "agents": rows}, fh,
                      indent=2)  # fmt: skip


if __name__ == "__main__":
    main()
