"""Play the heuristic bots against each other (or ``random``) and print win rates.

    .venv/bin/python scripts/heuristic_duel.py --players 3 --games 200 value random random
    .venv/bin/python scripts/heuristic_duel.py --players 2 --games 200 value bargain --first-edition

The bots named fill the seats in order; the line-up is rotated game by game so that every bot plays every seat
equally often. A win is a seat among the game's winners (ties share the win, D7; in two players both lose when
Guy is not beaten, D13). Games are played by the package's GameRunner, which raises on any illegal action.
"""

from __future__ import annotations

import argparse
import multiprocessing
import time
from collections import defaultdict

import numpy as np

import revolution_env
from revolution_env.agents.base import Agent, RandomAgent
from revolution_env.agents.heuristics import HEURISTICS
from revolution_env.arena.runner import GameRunner


def make_agent(spec: str, options: dict) -> Agent:
    """``name`` or ``name:field=value,...`` (a tuning experiment: fields of the bot or of its Judgement)."""
    name, _, params = spec.partition(":")
    if name == "random":
        return RandomAgent(**options)
    agent = HEURISTICS[name](**options)
    for item in filter(None, params.split(",")):
        key, value = item.split("=")
        value = tuple(float(x) for x in value.split("/")) if "/" in value else float(value)
        if key in agent.judgement._fields:
            agent.judgement = agent.judgement._replace(**{key: value})
        elif hasattr(agent, key):
            setattr(agent, key, type(getattr(agent, key))(value))
        else:
            raise SystemExit(f"{name}: no parameter {key!r}")
    agent.name = spec
    return agent


class Timed:
    """An agent whose decisions are timed into ``timing[name] = [seconds, decisions]``."""

    def __init__(self, agent: Agent, timing: dict) -> None:
        self.agent, self.timing, self.name = agent, timing, agent.name

    def reset(self, seed: int | None = None) -> None:
        self.agent.reset(seed)

    def act(self, observation, info):
        start = time.perf_counter()
        action = self.agent.act(observation, info)
        self.timing[self.name][0] += time.perf_counter() - start
        self.timing[self.name][1] += 1
        return action


def _games(names: list[str], options: dict, seeds: list[int]) -> list[tuple[list[str], dict, dict]]:
    n = len(revolution_env.raw_env(**options).possible_agents)
    out = []
    for g in seeds:
        shift = g % n
        lineup = names[shift:] + names[:shift]
        agents = [make_agent(name, options) for name in lineup]
        timing = defaultdict(lambda: [0.0, 0])
        runner = GameRunner([Timed(a, timing) for a in agents], options)
        runner.play(seed=g)  # the runner's env raises on any illegal action
        game = runner.game
        final = {**game.final, "rounds": game.round, "truncated": game.truncated}
        final["fallbacks"] = sum(getattr(a, "fallbacks", 0) for a in agents)
        out.append((lineup, final, dict(timing)))
    return out


def duel(names: list[str], games: int, options: dict, seed: int = 0, jobs: int = 1) -> dict:
    n = len(revolution_env.raw_env(**options).possible_agents)
    if len(names) != n:
        raise SystemExit(f"{n} seats: name {n} bots (got {len(names)})")
    seeds = list(range(seed, seed + games))
    if jobs > 1:
        with multiprocessing.Pool(jobs) as pool:
            parts = pool.starmap(_games, [(names, options, seeds[i::jobs]) for i in range(jobs)])
        results = [r for part in parts for r in part]
    else:
        results = _games(names, options, seeds)
    wins, margins, played = defaultdict(float), defaultdict(list), defaultdict(int)
    timing = defaultdict(lambda: [0.0, 0])
    rounds, truncated, guy_wins = [], 0, 0
    for g, (lineup, final, times) in enumerate(results):
        for name, (sec, count) in times.items():
            timing[name][0] += sec
            timing[name][1] += count
        support = np.asarray(final["support"])
        rounds.append(final["rounds"])
        truncated += final["truncated"]
        guy_wins += not final["winners"]
        for seat, name in enumerate(lineup):
            played[name] += 1
            wins[name] += seat in final["winners"]
            others = np.delete(support, seat)
            margins[name].append(support[seat] - others.max())
        if final["fallbacks"]:
            print(f"game {g}: {final['fallbacks']} fallback actions")
    return {
        "wins": {k: wins[k] / played[k] for k in played},
        "margin": {k: float(np.mean(margins[k])) for k in played},
        "ms": {k: 1000 * v[0] / max(v[1], 1) for k, v in timing.items()},
        "rounds": float(np.mean(rounds)),
        "truncated": truncated,
        "guy_wins": guy_wins,
    }


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("bots", nargs="+", help="one name per seat: value, bargain, area, random")
    p.add_argument("--players", type=int, default=3)
    p.add_argument("--games", type=int, default=100)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--jobs", type=int, default=1, help="worker processes")
    p.add_argument("--first-edition", action="store_true")
    p.add_argument("--area-control-bonus", action="store_true")
    p.add_argument("--bid-refunds", action="store_true")
    args = p.parse_args()
    options = {"players": args.players}
    if args.first_edition:
        options["first_edition"] = True
    if args.area_control_bonus:
        options["area_control_bonus"] = True
    if args.bid_refunds:
        options["bid_refunds"] = True
    start = time.perf_counter()
    result = duel(args.bots, args.games, options, args.seed, args.jobs)
    elapsed = time.perf_counter() - start
    print(
        f"{options} {args.games} games, {elapsed:.1f} s, mean rounds {result['rounds']:.1f}, "
        f"truncated {result['truncated']}" + (f", Guy not beaten {result['guy_wins']}" if args.players == 2 else "")
    )
    for name in dict.fromkeys(args.bots):
        print(f"  {name:<8} win {100 * result['wins'][name]:5.1f}%  margin {result['margin'][name]:+6.1f}  "
              f"{result['ms'].get(name, 0):.2f} ms/decision")  # fmt: skip


if __name__ == "__main__":
    main()
