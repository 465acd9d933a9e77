"""How differently each held-out variant bids from its style, on the same positions (docs/heldout.md).

    .venv/bin/python scripts/heldout_variants.py --players 3 --games 8

Games of the three styles (value, bargain, area, seats rotated) are played; at every bid of a seat, that style
again (its own random draws) and each of its variants bid from the same observation, and the share of tokens they
place elsewhere than the bid played is counted. The style against itself is the floor: the bots sample their
rivals' bids, so two draws of one bot already differ; a variant plays differently by what it adds to that.
Also printed: the characters bid on, and the share of a bid's token points on its strongest target.
"""

from __future__ import annotations

import argparse

import numpy as np

import revolution_env
from revolution_env.agents.heuristics import HEURISTICS
from revolution_env.agents.loading import load_agent
from revolution_env.agents.variants import VARIANTS
from revolution_env.engine.game import Decision


def measure(players: int, games: int) -> dict[str, np.ndarray]:
    """Per bot, rows of (characters bid on, top target's share of the points, share of tokens moved)."""
    options = {"players": players}
    styles = list(HEURISTICS)
    bots = {name: load_agent(name, **options) for name in [*styles, *VARIANTS]}
    for i, bot in enumerate(bots.values()):
        bot.reset(1000 + i)  # other draws than the seats'
    rows: dict[str, list] = {name: [] for name in bots}
    for g in range(games):
        env = revolution_env.env(**options)
        env.reset(seed=1000 + g)
        seats = [load_agent(styles[(g + i) % len(styles)], **options) for i in range(players)]
        for i, seat in enumerate(seats):
            seat.reset(10 * g + i)
        for agent in env.agent_iter():
            obs, _, term, trunc, info = env.last()
            if term or trunc:
                env.step(None)
                continue
            seat = seats[int(agent.split("_")[1])]
            action = seat.act(obs, info)
            if info["decision"] == Decision.BID:
                held = seat.view(obs).tokens[0]
                played = seat.codec.bid_counts(action, held)
                for name, bot in bots.items():
                    if bot.style == seat.style:
                        bid = bot.codec.bid_counts(bot.act(obs, info), held)
                        points = bid @ bot.t.token_points
                        rows[name].append(
                            (
                                (bid.sum(1) > 0).sum(),
                                points.max() / max(points.sum(), 1e-9),
                                np.abs(bid - played).sum() / 2 / max(bid.sum(), 1),
                            )
                        )
            env.step(action)
    return {name: np.array(r) for name, r in rows.items()}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--players", type=int, default=3)
    p.add_argument("--games", type=int, default=8)
    args = p.parse_args()
    print(f"{args.players} players, {args.games} games: bids, characters bid on, top target's share, tokens moved")
    for name, r in measure(args.players, args.games).items():
        print(f"  {name:<17} {len(r):4d}  {r[:, 0].mean():.2f}  {r[:, 1].mean():.2f}  {r[:, 2].mean():.2f}")


if __name__ == "__main__":
    main()
