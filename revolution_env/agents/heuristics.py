"""Heuristic bots: ``value``, ``bargain`` and ``area``, three styles of play read off the observation alone.

Each bot answers every decision of every variant (``bid``, ``guy``, ``spy``, ``apothecary_first``,
``apothecary_second``, ``remove``, ``none``) from the observation and the action mask; none touches the environment
or the engine's game. They share one judgement (projected points and margins), one model of the rivals' bids and
one way of planning a bid against it, and one way of placing cubes and Guy's bids; they differ in how they bid,
which is where the game is won. The classes here hold each bot's idea and parameters; :mod:`.decisions` computes
their decisions, compiled where Numba is installed (:mod:`.compiled`), as plain Python where it is not.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from revolution_env.agents.base import Agent
from revolution_env.agents.compiled import decide, values_against_samples
from revolution_env.agents.decisions import STYLES, Judgement, tables


class HeuristicBot(Agent):
    """What the three bots share: their parameters, and a check that every action fits the mask (a bot that
    would break it counts a ``fallback`` and plays a legal default instead; the tests require none). A subclass
    sets parameters (class attributes, as the held-out variants of :mod:`.variants` do); its decisions are its
    ``style``'s."""

    name = "heuristic"
    style: str | None = None  # "value", "bargain" or "area": whose bid it plays
    judgement = Judgement()
    # how the rivals' bids are sampled (decisions.model_rivals)
    samples, habit, sharpness, spread, clumping, persistence = 48, 0.5, 1.5, 0.3, 2.0, 2.0
    mirror, inner_samples = 0.0, 8  # the share of samples in which a rival plans its bid as we plan ours ...
    mirror_rivals = 3  # ... for this many rivals at most (the best armed; fewer is faster, and weaker)
    spend = 1.0  # under Bid Refunds, what winning costs: the tokens spent, as a share of their worth
    max_group, improve = 5, 6  # a bid's plan: at most this many tokens of a type at once, then this many moves
    decline_below = 0.05  # a Spy or Apothecary move must gain at least this much margin, or it is declined

    def __init__(self, **env_options: Any) -> None:
        super().__init__(**env_options)
        if self.style not in STYLES:
            raise TypeError(f"{type(self).__name__}: style must be one of {', '.join(STYLES)}, got {self.style!r}")
        self.t, starts = tables(self)
        self.static = (tuple(self.t), tuple(starts))  # as the compiled code takes them (.compiled)
        self.fallbacks = 0

    def act(self, observation: dict[str, np.ndarray], info: dict[str, Any]) -> np.ndarray:
        actions, fallbacks = decide(self, observation["observation"][None], observation["action_mask"][None])
        self.fallbacks += fallbacks
        return actions[0]

    def act_batch(self, observations: np.ndarray, masks: np.ndarray, kinds: np.ndarray | None = None) -> np.ndarray:
        """Actions (n, D) for the rows of ``observations`` (n, size) and ``masks`` (n, sum(nvec)): the same as
        ``act`` on each row in turn (the vector env plays a heuristic opponent of many games this way). The rows'
        decisions are read from the observations (``kinds`` is not needed)."""
        actions, fallbacks = decide(self, observations, masks)
        self.fallbacks += fallbacks
        return actions


class ValueBot(HeuristicBot):
    """``value``: bids where its margin gains most against what the opponents can bid.

    Every character is worth the change in its projected margin if it wins it (:mod:`.decisions`: support,
    tokens at their end-game points or their bidding power, the cube's effect on the area majorities and on how
    soon the game ends, the best Spy move or Apothecary swap on the board as it stands), and the opponents'
    characters are valued the same way from their seats. Their public holdings are sampled into likely bids, a
    third of them as the opponent would plan its bid if it thought as we do; every token then goes, strongest
    first, where it adds the most expected value (denying an opponent counts), and single tokens are moved while
    that helps. Never on a character that refuses the token, never past six characters. Two players: bids Guy
    could tie or beat are discounted, Gold goes on Scheming when priority over Guy's strong tokens is worth it,
    and a bid Guy can beat may serve to hand him a character (to end a game we lead when we have no cube left).
    The weights were tuned by play against the other bots and against itself (``scripts/heuristic_duel.py``)."""

    name = style = "value"
    judgement = Judgement(special_scale=0.5, power=(20.0, 12.0, 4.0), hoard=10.0)
    habit, mirror, sharpness = 0.0, 0.34, 2.5
    spend = 0.5
    guy_risk = 0.4  # two players: a bid Guy could tie or beat is worth this share less
    priority = 1.0  # two players: the worth of placing Guy's first bid, in units of Guy's strongest tokens

    def __init__(self, **env_options: Any) -> None:
        super().__init__(**env_options)
        if self.t.puppet >= 0:  # two players (measured in self-play): a lighter time term, for the leader only;
            # a cheaper Spy and Apothecary; a broader guess of the opponent's bid
            self.judgement = self.judgement._replace(lock=0.3, trailing=0.0, special_scale=0.3)
            self.sharpness = 1.5

    def bid_values(self, observation: dict[str, np.ndarray], bids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """What each bid of ``bids`` (n, T, 3 token counts) is worth to us in a bid decision's ``observation``
        against each of this bot's samples of the rivals' bids (n, ``samples``), drawn from ``self.rng`` as its
        own bid would draw them; and what it expects of each bid (n,), the same averaged over the samples.
        Play-time search judges its candidate bids so (:mod:`.search`)."""
        return values_against_samples(self, observation["observation"], bids)


class BargainBot(HeuristicBot):
    """``bargain``: buys what it can be fairly sure of, cheapest first, and what nobody else wants.

    Reads the opponents' public holdings (sampled into likely bids, as ``value`` does) to price every character:
    the cheapest bid of its own (in token points) that wins it at least ``sure`` of the time. It buys characters
    by value per point spent, the Printer valued half again (popular support is the key to victory), and avoids
    the contests it cannot win at any price it can pay; then it puts one Gold on each neglected character it
    can still afford, up to six, and piles any Gold left on the Printer or its best bid."""

    name = style = "bargain"
    judgement = Judgement(power=(12.0, 7.0, 2.0), special_scale=0.5)
    printer_bonus = 1.5
    sure = 0.7


class AreaBot(HeuristicBot):
    """``area``: plays for the majorities.

    Values a character mostly by its cube: the change in its expected area points plus the area it keeps a rival
    from taking, more the fuller the area is (big areas near the end count most); support and tokens count for
    little. The Spy and the Apothecary are worth their best move on the board, weighted up as the board fills.
    It concentrates its bid on its few most valuable targets (against the same sampled opponent bids as
    ``value``) and judges Spy and Apothecary moves against the leader alone, to swing areas and force ties
    against the leader."""

    name = style = "area"
    judgement = Judgement(rival_weight=1.0, power=(12.0, 7.0, 2.0))
    focus = 4  # characters it bids on, at most (Gold-only spaces take what is left)
    max_group, improve = 8, 3
    guy_risk = 0.4  # two players: a bid Guy could tie or beat is worth this share less


HEURISTICS: dict[str, type[HeuristicBot]] = {"value": ValueBot, "bargain": BargainBot, "area": AreaBot}
