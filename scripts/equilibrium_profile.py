"""Milliseconds per bid decision of the ``equilibrium:`` search (batched engine or scalar reference) and where they go.

Real positions: the bid decisions of games of ``value`` against itself. At each, the search runs for one seat as
an agent would (the game rebuilt from its observation); the time is split as the search records it (candidates,
the rounds played on the engine, the values, the solver, the double oracle's pool), and ``--profile`` adds
cProfile's top functions. Run it on one core for the figures of the target (``taskset -c 0``, one thread), the
scalar reference beside the batched engine:

    NUMBA_NUM_THREADS=1 OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 taskset -c 0 \\
        .venv/bin/python scripts/equilibrium_profile.py --players 2 3 --k 4 6 8 --positions 20 \\
        --options "engine=scalar:" ""
"""

from __future__ import annotations

import argparse
import cProfile
import itertools
import pstats
import sys
import time
from pathlib import Path

import numpy as np

from revolution_env.agents.loading import load_agent
from revolution_env.arena.runner import GameRunner
from revolution_env.engine.game import Decision

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))  # the tests' helpers
from recording import Recording  # noqa: E402


def positions(players: int, count: int, seed: int) -> list[dict]:
    out: list[dict] = []
    game = 0
    while len(out) < count:
        me = Recording(load_agent("value", players=players))
        GameRunner(
            [me] + [load_agent("value", players=players) for _ in range(players - 1)], {"players": players}
        ).play(seed + game)
        seen = [d.observation for d in me.bids()]
        out += seen[:: max(1, len(seen) // 8)]
        game += 1
    return out[:count]


def ties(spec: str, players: int, observations: list[dict]) -> None:
    """How often two draws at the same state are the same bid: two searches with different seeds (each drawing
    its bid), and two draws from one search's strategy (sum of squares); ``value``'s two draws beside them."""
    search, value = load_agent(spec, players=players), load_agent("value", players=players)
    info = {"decision": Decision.BID}
    same, within, value_same = [], [], []
    for i, o in enumerate(observations):
        held = search.layout.decode(o["observation"]).tokens[0]
        bids = []
        for seed in (2 * i, 2 * i + 1):
            search.reset(seed)
            bids.append(search.codec.bid_counts(search.act(o, info), held))
            within.append(float((search.last.solution.strategies[0] ** 2).sum()))
        same.append((bids[0] == bids[1]).all())
        drawn = []
        for seed in (2 * i, 2 * i + 1):
            value.reset(seed)
            drawn.append(value.codec.bid_counts(value.act(o, info), held))
        value_same.append((drawn[0] == drawn[1]).all())
    print(
        f"  ties: two searches at one state bid the same {np.mean(same):.1%} of {len(same)} states; two draws "
        f"from one search's strategy {np.mean(within):.1%}; value's two draws {np.mean(value_same):.1%}",
        flush=True,
    )


def many(players: int, k: int, observations: list[dict], policy: str, options: str, blocks: int = 3) -> None:
    """The rounds alone (``BatchedRounds``), every position's joint bids (a search's ``k`` candidates a seat, no
    double oracle; the options of the last ``--options``) played one position at a time against all positions in one
    batch (``payoffs_many``), in
    alternating blocks: joint bids a second, and positions (bid decisions' rounds) a second."""
    from revolution_env.agents.equilibrium import BatchedRounds
    from revolution_env.env.reconstruct import game_from_observation

    agent = load_agent(f"equilibrium:k={k}:{options}oracle=0:engine=batched:{policy}", players=players)
    searcher, rng = agent.searcher, np.random.default_rng(0)
    games, joints = [], []
    for o in observations:
        game = game_from_observation(o["observation"][: agent.layout.size], agent.layout, 0, rng)
        bids = searcher.search(game, rng).bids
        games.append(game)
        joints.append(np.array([np.stack(j) for j in itertools.product(*bids)]))
    rounds, chooser, value = BatchedRounds(agent.layout), searcher.chooser, searcher.value
    rows = sum(len(j) for j in joints)
    rounds.payoffs_many(games, joints, chooser, value)  # warm (compiled code, the batch's size)
    seconds: dict[str, list[float]] = {"one at a time": [], "all in one batch": []}
    for _ in range(blocks):
        start = time.perf_counter()
        for game, joint in zip(games, joints):
            rounds.payoffs(game, joint, chooser, value)
        seconds["one at a time"].append(time.perf_counter() - start)
        start = time.perf_counter()
        rounds.payoffs_many(games, joints, chooser, value)
        seconds["all in one batch"].append(time.perf_counter() - start)
    for how, s in seconds.items():
        best = float(np.median(s))
        print(f"  rounds of {len(games)} positions ({rows} joint bids), {how}: {rows / best:,.0f} joint bids/s, "
              f"{len(games) / best:,.1f} positions/s (median of {blocks} blocks)", flush=True)  # fmt: skip
    # the whole search with the options given (the double oracle's included): one position at a time, and all of
    # them at once (search_many)
    searcher = load_agent(f"equilibrium:k={k}:{options}engine=batched:{policy}", players=players).searcher
    searcher.search_many(games, [np.random.default_rng(i) for i in range(len(games))])  # warm
    seconds = {"one at a time": [], "all at once": []}
    for _ in range(blocks):
        start = time.perf_counter()
        for i, game in enumerate(games):
            searcher.search(game, np.random.default_rng(i))
        seconds["one at a time"].append(time.perf_counter() - start)
        start = time.perf_counter()
        searcher.search_many(games, [np.random.default_rng(i) for i in range(len(games))])
        seconds["all at once"].append(time.perf_counter() - start)
    for how, s in seconds.items():
        print(
            f"  searches of {len(games)} positions (options {options or 'defaults'}), {how}: "
            f"{len(games) / float(np.median(s)):,.1f} bid decisions/s (median of {blocks} blocks)",
            flush=True,
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--players", type=int, nargs="+", default=[2, 3])
    parser.add_argument("--k", type=int, nargs="+", default=[4, 6, 8])
    parser.add_argument("--positions", type=int, default=20)
    parser.add_argument("--options", nargs="+", default=["oracle=0:"],
                        help="spec options before the policy, e.g. 'oracle=1:'; several: each in turn at every k, "
                        "on the same positions (engine=scalar: against the default batched engine)")  # fmt: skip
    parser.add_argument("--policy", default="value", help="the blueprint: a heuristic, or PATH with value=margin")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--profile", action="store_true", help="cProfile's top functions for each setting")
    parser.add_argument("--ties", action="store_true", help="also: how often two draws at one state are one bid")
    parser.add_argument("--many", action="store_true",
                        help="also: the rounds, and the searches, of all positions in one batch")  # fmt: skip
    args = parser.parse_args()
    for players in args.players:
        obs = positions(players, args.positions, args.seed)
        for k, options in [(k, o) for k in args.k for o in args.options]:
            spec = f"equilibrium:k={k}:{options}{args.policy}"
            agent = load_agent(spec, players=players)
            agent.reset(0)
            info = {"decision": Decision.BID}
            agent.act(obs[0], info)  # warm (compiled code, caches)
            split: dict[str, float] = {}
            rollouts, gaps, added = [], [], []
            profiler = cProfile.Profile() if args.profile else None
            start = time.perf_counter()
            if profiler:
                profiler.enable()
            for o in obs:
                agent.act(o, info)
                for what, s in agent.last.seconds.items():
                    split[what] = split.get(what, 0.0) + s
                rollouts.append(agent.last.rollouts)
                gaps.append(agent.last.solution.nash_conv)
                added.append(sum(agent.last.added))
            if profiler:
                profiler.disable()
            total = (time.perf_counter() - start) / len(obs) * 1e3
            parts = ", ".join(f"{w} {s / len(obs) * 1e3:.1f}" for w, s in sorted(split.items(), key=lambda p: -p[1]))
            print(
                f"{players} players {spec}: {total:.1f} ms a bid decision, {np.mean(rollouts):.1f} joint bids "
                f"played ({total / np.mean(rollouts):.2f} ms each), NashConv mean {np.mean(gaps):.4f} max "
                f"{np.max(gaps):.4f}, {np.mean(added):.2f} best responses added; ms: {parts}",
                flush=True,
            )
            if profiler:
                pstats.Stats(profiler).sort_stats("cumulative").print_stats(25)
            if args.ties:
                ties(spec, players, obs)
        if args.many:
            for k in args.k:
                many(players, k, obs, args.policy, args.options[-1])


if __name__ == "__main__":
    main()
