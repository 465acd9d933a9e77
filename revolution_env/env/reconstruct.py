"""A game state rebuilt from one player's observation at a bid decision: what a search plays its rounds on.

At a bid decision the observation holds everything public (tests/test_env_hiding.py: it decodes back to the
engine's public state, in seats relative to the observer). Hidden are only the other players' bids of this round,
which the search chooses itself, and the order of the first edition's draw pile (docs/rules.md §7, D15), which
:func:`game_from_observation` draws uniformly from the cards the observation says are left (``deck_left``).

**Seats.** The observation is relative: the observer is seat 0 of it, the next seat 1, the puppet last. The engine
wants absolute seats, and the observation does not say which one the observer holds. The rules are the same from
every seat but for two orders that start at seat 0: Patronage when the bank cannot top everyone up (D17), and the
first edition's cards, drawn seat by seat from seat 0 (§7). Everything else is symmetric in the seats: the
contests, scoring and its ties (D7), D9's priority (Scheming Gold, then the strongest and the earliest bid, then a
coin), Guy's turns (which alternate from the seat with priority, §6), and the puppet is always the last seat
(seat 2) whoever observes. Where the caller knows the observer's seat (an environment's own agent ``player_i``),
``seat=i`` rebuilds the game exactly; an agent, which sees only its observation, gives ``seat=0``, and the two
orders above may then differ from the real game's in the rounds where they matter. D9's coin and the reshuffles
of D15 are drawn from the rebuilt game's own seed.
"""

from __future__ import annotations

import numpy as np

from revolution_env.engine.game import BID, BIDDING, Game
from revolution_env.env.observation import ObservationLayout

SEED_BOUND = 2**63  # a rebuilt game's seed is drawn below this (the engine's seeds are non-negative integers)


def game_from_observation(
    observation: np.ndarray, layout: ObservationLayout, seat: int = 0, rng: np.random.Generator | None = None
) -> Game:
    """The engine's game as the observer of ``observation`` (the bid mode's vector, ``layout.size`` long; a bid
    decision) sees it, the observer in absolute seat ``seat`` (the module's documentation), the draw pile of the
    first edition shuffled with ``rng`` and the game seeded from it (a fresh generator where None). ``ValueError``
    for an observation that is not at a bid decision or does not add up to a game position."""
    rng = np.random.default_rng() if rng is None else rng
    codec = layout.codec
    L = codec.layout
    if isinstance(seat, bool) or not isinstance(seat, (int, np.integer)) or not 0 <= seat < L.players:
        raise ValueError(f"seat: expected the observer's seat, 0 to {L.players - 1}, got {seat!r}")
    view = layout.decode(observation)
    if view.decision != BID or view.phase != BIDDING:
        raise ValueError(
            f"observation: a game is rebuilt at a bid decision, this one is at {view.decision} in {view.phase}"
        )
    perm = codec.perm[int(seat)]  # relative seat -> absolute seat
    game = Game(L, int(rng.integers(SEED_BOUND)))
    game.round = view.round
    game.tokens[perm] = view.tokens
    game.support[perm] = view.support
    game.supply[perm] = view.supply
    game.bank[:] = view.bank
    game.cubes[:, perm] = view.cubes
    cubes_held = game.cubes.sum(0) + game.supply
    if (game.tokens.sum(0) + game.bank != L.totals).any() or (cubes_held != L.components.cubes_per_seat).any():
        raise ValueError("observation: its tokens or cubes do not add up to the game's (not an observation of it?)")
    # the last round's story (public once revealed), which the observations of the rebuilt game show as the real one's
    game.revealed_round = view.round - 1
    game.revealed[perm] = view.bids
    game.winners[:] = np.where(view.winners >= 0, perm[np.maximum(view.winners, 0)], view.winners)
    if L.puppet >= 0:
        game.scheming_gold[perm] = view.scheming_gold
        game.guy_last_placer = -1 if view.guy_last_placer < 0 else int(perm[view.guy_last_placer])
    if L.card_space >= 0:
        _cards(game, layout, view.deck_left, view.cards_drawn, perm, rng)
    return game


def _cards(game: Game, layout: ObservationLayout, left: np.ndarray, drawn: np.ndarray, perm: np.ndarray,
           rng: np.random.Generator) -> None:  # fmt: skip
    """The first edition's draw pile, shuffled (cards of one type are alike: any of their deck indices serves), and
    the cards drawn last round per seat, seat by seat from seat 0 as they were drawn (§7)."""
    deck = game.layout.components.deck
    of_type = [[i for i, card in enumerate(deck) if card.name == name] for name in layout.card_names]
    if (left > [len(ids) for ids in of_type]).any():
        raise ValueError("observation: deck_left counts more cards of a type than the deck holds")
    pile = [i for ids, n in zip(of_type, left) for i in ids[:n]]
    game._draw_pile = [int(i) for i in rng.permutation(pile)]
    absolute = np.zeros_like(drawn)
    absolute[perm] = drawn
    game.cards_drawn = [(s, of_type[k][0]) for s in range(len(absolute)) for k in range(len(of_type))
                        for _ in range(int(absolute[s, k]))]  # fmt: skip
