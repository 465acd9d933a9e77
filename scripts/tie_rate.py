"""How much agents mix at a round's bid, on real states: the tie rate of two draws at one state and the entropy of
the bid, overall and round by round (``revolution_env.evaluation.mixing``).

    .venv/bin/python scripts/tie_rate.py --players 3 --games 60 checkpoints/three_players.pt:sample value
    .venv/bin/python scripts/tie_rate.py --players 2 --states-from checkpoints/two_players.pt:sample \\
        checkpoints/two_players.pt:sample --games 60 checkpoints/two_players.pt:sample --json tie.json

The states are every seat's bid decisions in ``--games`` games of ``--states-from`` (one spec per seat; the
heuristics ``value``, ``bargain``, ``area`` and ``random`` by default, as many as there are seats), the same for
every agent measured. A checkpoint plays as its spec says: ``PATH:sample`` draws its bids, ``PATH`` may be its
argmax (whose two draws always tie).
"""

from __future__ import annotations

import argparse
import json
import shlex
import sys

from revolution_env.evaluation.mixing import STATES_FROM, bid_mixing, collect_bid_states


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("agents", nargs="+", help="agent specs to measure")
    parser.add_argument("--players", type=int, default=3)
    parser.add_argument("--states-from", nargs="+", default=None, help="the lineup whose games give the states")
    parser.add_argument("--games", type=int, default=60)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--last-round", type=int, default=12, help="the rounds from this one are pooled in one row")
    parser.add_argument("--json", default=None, help="write the reports here")
    args = parser.parse_args()
    lineup = args.states_from or list(STATES_FROM[: args.players])
    states = collect_bid_states(lineup, args.games, args.seed, players=args.players)
    print(f"{len(states)} bid decisions from {args.games} games of {', '.join(lineup)} ({args.players} players)")
    reports = []
    for spec in args.agents:
        report = bid_mixing(spec, states, seed=args.seed, last_round=args.last_round)
        reports.append(report.to_dict())
        low, high = report.tie_rate_ci95
        exact = (
            ""
            if report.entropy is None
            else (f", P(two draws tie) {report.tie_probability:.3f}, bid entropy {report.entropy:.2f} nats")
        )
        print(f"\n{spec}: two draws the same bid {report.tie_rate:.1%} [{low:.1%}, {high:.1%}]{exact}")
        print("  round  states  tie rate  P(tie)  entropy")
        for row in report.rounds:
            p = "" if row["tie_probability"] is None else f"{row['tie_probability']:6.3f}  {row['entropy']:7.2f}"
            print(f"  {row['round']:>5}  {row['states']:6d}  {row['tie_rate']:8.1%}  {p}")
    if args.json:
        with open(args.json, "w", encoding="utf-8") as fh:
            json.dump({"lineup": lineup, "games": args.games, "seed": args.seed, "players": args.players,
                       "states": len(states), "command": shlex.join(["python", *sys.argv]), "reports": reports}, fh,
                      indent=2)  # fmt: skip


if __name__ == "__main__":
    main()
