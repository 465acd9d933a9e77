"""Speed of random legal play, beside PettingZoo's connect_four and OpenSpiel's goofspiel in the same run.

    python scripts/benchmark.py                 # 3 players through the AEC API, ~10 s per measurement
    python scripts/benchmark.py --seconds 3 --players 2 3 4 --engine

Every measurement plays whole games with uniformly random legal moves (sampled from the action mask) for a
fixed time on one core and reports decisions per second (one agent decision = one AEC step; in goofspiel one
player's card choice) and games per second. The ratios compare Revolution! with the reference games measured in
the same process. OpenSpiel is optional (``pip install -e .[bench]``).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import time
import warnings

import numpy as np


def measure(play_game, seconds: float) -> dict[str, float]:
    """Run ``play_game(i) -> decisions`` until ``seconds`` have passed (after one warm-up game)."""
    play_game(-1)
    decisions = games = 0
    start = time.perf_counter()
    while time.perf_counter() - start < seconds:
        decisions += play_game(games)
        games += 1
    elapsed = time.perf_counter() - start
    return {"decisions_per_s": decisions / elapsed, "games_per_s": games / elapsed, "games": games}


def aec_random_play(make_env):
    """Random legal play through the AEC API, the way PettingZoo's docs show it."""
    env = make_env()

    def play(i: int) -> int:
        env.reset(seed=i + 1000)
        n = 0
        for agent in env.agent_iter():
            obs, _, term, trunc, _ = env.last()
            action = None if term or trunc else env.action_space(agent).sample(obs["action_mask"])
            env.step(action)
            n += action is not None
        return n

    return play


def engine_random_play(rules):
    from revolution_env.engine import BID, Game, random_bids, random_choice

    def play(i: int) -> int:
        game = Game.new(rules, i + 1000)
        rng = np.random.default_rng(i + 1000)
        n = 0
        while game.decision is not None:
            if game.decision.kind == BID:
                n += len(game.decision.seats)
                game.submit_bids(random_bids(game, rng))
            else:
                n += 1
                game.choose(random_choice(game, rng))
        return n

    return play


def goofspiel_random_play():
    import pyspiel

    game = pyspiel.load_game("goofspiel")
    rng = np.random.default_rng(0)

    def play(i: int) -> int:
        state = game.new_initial_state()
        n = 0
        while not state.is_terminal():
            if state.is_chance_node():
                outcomes, probs = zip(*state.chance_outcomes())
                state.apply_action(outcomes[rng.choice(len(outcomes), p=probs)])
            else:
                actions = [int(rng.choice(state.legal_actions(p))) for p in range(game.num_players())]
                n += len(actions)
                state.apply_actions(actions)
        return n

    return play


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seconds", type=float, default=10.0, help="time per measurement")
    parser.add_argument("--players", type=int, nargs="+", default=[3])
    parser.add_argument("--engine", action="store_true", help="also measure the bare engine (no environment)")
    parser.add_argument("--json", metavar="FILE", help="also write the figures as JSON")
    args = parser.parse_args()
    warnings.simplefilter("ignore")
    os.environ.setdefault("OMP_NUM_THREADS", "1")

    from pettingzoo.classic import connect_four_v3

    import revolution_env
    from revolution_env.engine import Rules

    results: dict[str, dict[str, float]] = {}
    for p in args.players:
        results[f"revolution_v1 AEC, {p} players"] = measure(
            aec_random_play(lambda p=p: revolution_env.env(players=p)), args.seconds
        )
        if args.engine:
            results[f"revolution engine, {p} players"] = measure(engine_random_play(Rules(players=p)), args.seconds)
    results["connect_four_v3 AEC"] = measure(aec_random_play(connect_four_v3.env), args.seconds)
    try:
        results["open_spiel goofspiel"] = measure(goofspiel_random_play(), args.seconds)
    except ImportError:
        print("(open_spiel not installed: pip install -e .[bench] to compare with goofspiel)")

    print(f"random legal play, one core, {args.seconds:.0f} s each ({platform.processor() or platform.machine()})")
    print(f"{'':34} {'decisions/s':>12} {'games/s':>9}  {'vs connect_four':>15} {'vs goofspiel':>12}")
    c4 = results["connect_four_v3 AEC"]["decisions_per_s"]
    goof = results.get("open_spiel goofspiel", {}).get("decisions_per_s")
    for name, r in results.items():
        ratio_c4 = r["decisions_per_s"] / c4
        ratio_goof = f"{r['decisions_per_s'] / goof:12.2f}" if goof else f"{'-':>12}"
        print(f"{name:34} {r['decisions_per_s']:12,.0f} {r['games_per_s']:9,.1f}  {ratio_c4:15.2f} {ratio_goof}")
    if args.json:
        with open(args.json, "w", encoding="utf-8") as fh:
            json.dump(results, fh, indent=2)


if __name__ == "__main__":
    main()
