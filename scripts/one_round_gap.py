"""The one-round gap of agents on real bid states (``revolution_env.evaluation.round_gap``): how much the best bid of
an enlarged pool gains against the agent's own mixture over what the agent's own bid gets, each joint bid played for
one round and scored by a value (the agent's critic where it has one, else the stand-in the report names).

    .venv/bin/python scripts/one_round_gap.py --players 2 --games 20 --states 40 checkpoints/two_players.pt
    .venv/bin/python scripts/one_round_gap.py --players 3 --value margin checkpoints/three_players.pt:sample value \\
        --json gap.json

The states are every seat's bid decisions in ``--games`` games of ``--states-from`` (one spec per seat; the
heuristics ``value``, ``bargain``, ``area`` and ``random`` by default, as many as there are seats), of which
``--states`` are drawn at random, the same for every agent measured.
"""

from __future__ import annotations

import argparse
import json
import shlex
import sys

from revolution_env.evaluation.mixing import STATES_FROM, collect_bid_states
from revolution_env.evaluation.round_gap import VALUES, one_round_gap


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("agents", nargs="+", help="agent specs to measure")
    parser.add_argument("--players", type=int, default=3)
    parser.add_argument("--states-from", nargs="+", default=None, help="the lineup whose games give the states")
    parser.add_argument("--games", type=int, default=20, help="games of --states-from that give the states")
    parser.add_argument("--states", type=int, default=40, help="states drawn from those games")
    parser.add_argument("--pool", type=int, default=64, help="the pool of bids for the agent's seat")
    parser.add_argument("--draws", type=int, default=8, help="draws of the agent for the other seats")
    parser.add_argument("--own", type=int, default=8, help="draws of the agent for its own seat")
    parser.add_argument("--value", choices=VALUES, default="auto", help="what scores the next state")
    parser.add_argument("--critic", default=None, help="a critic file (revolution fit-critic) to score the states")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", default=None, help="write the reports here")
    args = parser.parse_args()
    lineup = args.states_from or list(STATES_FROM[: args.players])
    try:
        states = collect_bid_states(lineup, args.games, args.seed, players=args.players)
    except ValueError as exc:
        parser.error(str(exc))
    print(f"{len(states)} bid decisions from {args.games} games of {', '.join(lineup)} ({args.players} players)")
    reports = []
    for spec in args.agents:
        try:
            report = one_round_gap(spec, states, args.states, args.pool, args.draws, args.own, args.value,
                                   args.critic, args.seed)  # fmt: skip
        except ValueError as exc:
            parser.error(f"{spec}: {exc}")
        reports.append(report.to_dict())
        low, high = report.gap_ci95
        print(f"\n{spec}: one-round gap {report.gap:.3f} [{low:.3f}, {high:.3f}] (median {report.gap_median:.3f}, "
              f"max {report.gap_max:.3f}) on {report.states} states; its own bid {report.own_worth:+.3f}, the "
              f"pool's best {report.best_worth:+.3f}; scored by {report.value}")  # fmt: skip
        print("  the best bid came from: " + ", ".join(f"{k} {v}" for k, v in report.best_from.items()))
        print(f"  {report.seconds:.0f} s")
    if args.json:
        with open(args.json, "w", encoding="utf-8") as fh:
            json.dump({"lineup": lineup, "games": args.games, "seed": args.seed, "players": args.players,
                       "command": shlex.join(["python", *sys.argv]), "reports": reports}, fh, indent=2)  # fmt: skip


if __name__ == "__main__":
    main()
