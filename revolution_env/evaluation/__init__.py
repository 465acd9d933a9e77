"""Evaluation: play agents against each other over every seat order, and report win rates with their
intervals, support, margins, openskill ratings and head-to-head results (``revolution eval``).

::

    from revolution_env.evaluation import evaluate_lineup, evaluate_pool, write_all
    ev = evaluate_lineup(["random", "random", "random"], games=60, seed=0, workers=2)
    ev.stats["random"].win_rate, ev.stats["random"].win_rate_ci95
    write_all(ev, "runs/eval")  # results.json, games.jsonl, report.md, win_rates.png

Every game's seed comes from (seed, game index), games are gathered in game order, and agents are reset with
seeds derived from the game's: an evaluation depends on its seed alone, not on the number of workers, nor on how
often it was stopped and continued (a ``Tournament`` plays the games not yet played: ``revolution eval --out``
resumes through :mod:`.journal`).
"""

from revolution_env.arena.runner import GameResult, IllegalMoveError, play_game
from revolution_env.evaluation.report import print_table, write_all
from revolution_env.evaluation.runner import (
    Evaluation,
    Tournament,
    evaluate_gauntlet,
    evaluate_lineup,
    evaluate_pool,
    game_seed,
    gauntlet_tournament,
    lineup_tournament,
    name_agents,
    pool_tournament,
    seat_orders,
)
from revolution_env.evaluation.stats import AgentStats, aggregate, head_to_head, wilson_interval

__all__ = [
    "AgentStats",
    "Evaluation",
    "GameResult",
    "IllegalMoveError",
    "Tournament",
    "aggregate",
    "evaluate_gauntlet",
    "evaluate_lineup",
    "evaluate_pool",
    "game_seed",
    "gauntlet_tournament",
    "head_to_head",
    "lineup_tournament",
    "name_agents",
    "play_game",
    "pool_tournament",
    "print_table",
    "seat_orders",
    "wilson_interval",
    "write_all",
]
