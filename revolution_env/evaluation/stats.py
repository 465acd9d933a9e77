"""From game results to per-agent statistics: win rates with Wilson intervals, support, margins, ratings."""

from __future__ import annotations

import math
import random
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from revolution_env.arena.runner import GameResult

Z95 = 1.959963984540054  # the 97.5th percentile of the standard normal


def wilson_interval(successes: float, n: int, z: float = Z95) -> tuple[float, float]:
    """The Wilson score interval for a proportion (``successes`` may be fractional: shared wins)."""
    if n <= 0:
        return (0.0, 1.0)
    p = successes / n
    z2 = z * z
    denominator = 1.0 + z2 / n
    centre = (p + z2 / (2 * n)) / denominator
    half = z * math.sqrt(p * (1.0 - p) / n + z2 / (4 * n * n)) / denominator
    low = 0.0 if successes <= 0 else max(0.0, min(p, centre - half))  # exact at the ends, despite rounding
    high = 1.0 if successes >= n else min(1.0, max(p, centre + half))
    return (low, high)


@dataclass
class AgentStats:
    """What one agent did over the games it played."""

    name: str
    games: int = 0
    wins: float = 0.0  # a win shared among k winners counts 1/k
    support_total: float = 0.0
    margin_total: float = 0.0
    mu: float = 0.0
    sigma: float = 0.0
    by_seat: dict[int, list[float]] = field(default_factory=dict)  # seat -> [games, wins]

    @property
    def win_rate(self) -> float:
        return self.wins / self.games if self.games else 0.0

    @property
    def win_rate_ci95(self) -> tuple[float, float]:
        return wilson_interval(self.wins, self.games)

    @property
    def mean_support(self) -> float:
        return self.support_total / self.games if self.games else 0.0

    @property
    def mean_margin(self) -> float:
        return self.margin_total / self.games if self.games else 0.0

    @property
    def ordinal(self) -> float:
        """The conservative rating mu - 3 sigma (openskill's ordinal)."""
        return self.mu - 3.0 * self.sigma

    def to_dict(self) -> dict[str, Any]:
        low, high = self.win_rate_ci95
        return {
            "games": self.games,
            "wins": self.wins,
            "win_rate": self.win_rate,
            "win_rate_ci95": [low, high],
            "mean_support": self.mean_support,
            "mean_margin": self.mean_margin,
            "rating": {"mu": self.mu, "sigma": self.sigma, "ordinal": self.ordinal},
            "by_seat": {
                str(seat): {"games": int(g), "win_rate": w / g if g else 0.0}
                for seat, (g, w) in sorted(self.by_seat.items())
            },
        }


def agent_names(results: Sequence[GameResult]) -> list[str]:
    """Every agent that played, in order of first appearance."""
    return list(dict.fromkeys(name for r in results for name in r.agents))


def aggregate(results: Sequence[GameResult], names: Sequence[str] | None = None) -> dict[str, AgentStats]:
    """Per-agent statistics over ``results`` (taken in order: the ratings depend on it)."""
    names = list(names) if names is not None else agent_names(results)
    stats = {name: AgentStats(name) for name in names}
    for r in results:
        margins = r.margins()
        for seat, name in enumerate(r.agents):
            s = stats.setdefault(name, AgentStats(name))
            share = r.win_share(seat)
            s.games += 1
            s.wins += share
            s.support_total += r.support[seat]
            s.margin_total += margins[seat]
            seat_games = s.by_seat.setdefault(seat, [0, 0.0])
            seat_games[0] += 1
            seat_games[1] += share
    for name, (mu, sigma) in rate(results, list(stats)).items():
        stats[name].mu, stats[name].sigma = mu, sigma
    return stats


RATING_ORDERS = 32  # seeded random orders of the games that the ratings are averaged over
RATING_SEED = 0


def rate(
    results: Sequence[GameResult], names: Sequence[str], orders: int = RATING_ORDERS
) -> dict[str, tuple[float, float]]:
    """Openskill Plackett-Luce ratings (mu, sigma) from each game's finishing order (ties share a place), averaged
    over ``orders`` seeded random orders of the games.

    Openskill updates one game at a time, so one pass rates the same games differently in a different order; and a
    tournament plays its lineups one after another, so rating games in the order they were played favours whoever
    played last (an agent whose games all came first was rated against opponents whose ratings had not settled;
    in a pool, that put the better of two agents second). Averaging over random orders, as Chatbot Arena's bootstrap
    of online Elo does, leaves the ratings a function of the set of games alone: of neither the order they were
    played in nor where (locally or on Ray)."""
    from openskill.models import PlackettLuce

    if isinstance(orders, bool) or not isinstance(orders, int) or orders < 1:
        raise ValueError(f"orders: expected a positive integer, got {orders!r}")
    model = PlackettLuce()
    canonical = sorted(
        results, key=lambda r: (r.agents, r.support, r.winners, r.rounds, r.seed if r.seed is not None else -1)
    )
    rng = random.Random(RATING_SEED)
    totals = {name: [0.0, 0.0] for name in names}
    for _ in range(orders):
        for name, rating in one_pass(model, rng.sample(canonical, len(canonical)), names).items():
            totals[name][0] += rating.mu
            totals[name][1] += rating.sigma
    return {name: (mu / orders, sigma / orders) for name, (mu, sigma) in totals.items()}


def one_pass(model: Any, results: Sequence[GameResult], names: Sequence[str]) -> dict[str, Any]:
    """The ratings of one openskill ``model`` updated game by game, in the order given (``rate`` averages orders)."""
    ratings = {name: model.rating(name=name) for name in names}
    for r in results:
        updated = model.rate([[ratings[name]] for name in r.agents], ranks=r.ranks())
        for name, (rating,) in zip(r.agents, updated):
            ratings[name] = rating
    return ratings


def head_to_head(results: Sequence[GameResult], names: Sequence[str] | None = None) -> dict[str, dict[str, Any]]:
    """``[row][column]``: the row agent's win rate in the games the column agent also played (None on the
    diagonal and where they never met)."""
    names = list(names) if names is not None else agent_names(results)
    games = {a: dict.fromkeys(names, 0) for a in names}
    wins = {a: dict.fromkeys(names, 0.0) for a in names}
    for r in results:
        for seat, row in enumerate(r.agents):
            share = r.win_share(seat)
            for column in r.agents:
                if column != row:
                    games[row][column] += 1
                    wins[row][column] += share
    return {
        row: {col: (wins[row][col] / games[row][col] if games[row][col] and col != row else None) for col in names}
        for row in names
    }


def summary(results: Sequence[GameResult]) -> dict[str, Any]:
    """What the games were like, whoever played them."""
    n = len(results)
    seats = max((r.players for r in results), default=0)
    by_seat = [0.0] * seats
    for r in results:
        for seat in range(r.players):
            by_seat[seat] += r.win_share(seat)
    return {
        "games": n,
        "mean_rounds": sum(r.rounds for r in results) / n if n else 0.0,
        "truncated": sum(r.truncated for r in results),
        "no_winner": sum(not r.winners for r in results),
        "shared_wins": sum(len(r.winners) > 1 for r in results),
        "win_rate_by_seat": [w / n if n else 0.0 for w in by_seat],
    }


def lineup_summaries(results: Sequence[GameResult], names: Sequence[str] | None = None) -> list[dict[str, Any]]:
    """Per lineup (who sat at the table, whatever the seats): games, mean length in rounds, the games truncated at
    ``max_rounds`` (D8: scored as they stand) and each agent's wins among those. A bot that wins by stalling shows
    here: its lineups end at max_rounds, and it wins those games. Lineups in order of first appearance, each
    listed in the order of ``names`` (default: first appearance)."""
    order = {name: i for i, name in enumerate(names if names is not None else agent_names(results))}
    groups: dict[tuple[str, ...], list[GameResult]] = {}
    for r in results:
        lineup = tuple(sorted(r.agents, key=lambda name: (order.get(name, len(order)), name)))
        groups.setdefault(lineup, []).append(r)
    rows = []
    for lineup, games in groups.items():
        truncated = [r for r in games if r.truncated]
        won = dict.fromkeys(lineup, 0.0)
        for r in truncated:
            for seat, name in enumerate(r.agents):
                won[name] += r.win_share(seat)
        rows.append(
            {
                "agents": list(lineup),
                "games": len(games),
                "mean_rounds": sum(r.rounds for r in games) / len(games),
                "truncated": len(truncated),
                "truncated_rate": len(truncated) / len(games),
                "truncated_wins": won,
            }
        )
    return rows
