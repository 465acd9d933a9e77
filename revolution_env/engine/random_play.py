"""Uniformly random legal play on the engine: each token to a uniform legal target, each other decision
uniform over its legal options (declining included where allowed). Used by the main job, the benchmarks and
the property tests; it plays by the same rule of thumb as sampling the environment's action mask.

The same rule over the games of a ``BatchedGame`` (``BatchedGame.random_bids`` and ``play_random``, compiled loops in
``kernels``, each game drawing from its own generator) plays the vector envs' ``random`` opponents."""

from __future__ import annotations

import numpy as np

from revolution_env.engine.game import BID, GUY, Game, Rules


def random_bids(game: Game, rng: np.random.Generator) -> np.ndarray:
    L = game.layout
    bids = np.zeros((L.players, L.n_targets, 3), dtype=np.int64)
    for seat in range(L.players):
        for t in range(3):
            n = int(game.tokens[seat, t])
            if n:
                targets = L.legal_targets[t]
                bids[seat, :, t] = np.bincount(targets[rng.integers(len(targets), size=n)], minlength=L.n_targets)
    return bids


def random_choice(game: Game, rng: np.random.Generator) -> tuple[int, ...] | None:
    options = np.argwhere(game.guy_targets() if game.decision.kind == GUY else game.cube_targets())
    k = int(rng.integers(len(options) + game.can_decline()))
    return None if k == len(options) else tuple(int(x) for x in options[k])


def play_random(game: Game, rng: np.random.Generator) -> Game:
    """Play random legal decisions until the game is over (or truncated)."""
    while game.decision is not None:
        if game.decision.kind == BID:
            game.submit_bids(random_bids(game, rng))
        else:
            game.choose(random_choice(game, rng))
    return game


def random_game(rules: Rules | None = None, seed: int = 0) -> Game:
    """A complete random game; the same rules and seed give the same game."""
    game = Game.new(rules, seed)
    return play_random(game, np.random.default_rng([seed, 1]))
