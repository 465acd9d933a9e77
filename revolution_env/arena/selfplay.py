"""``revolution_env.selfplay_vector_env``: pure self-play in batch, every seat of every game a row of one learner.

class
    :class:`SelfPlayVectorEnv`, a ``gymnasium.vector.VectorEnv`` of ``num_envs = num_games * players`` rows
rows
    row ``r`` is seat ``r % players`` of game ``r // players`` (``row_game``, ``row_seat``); the two-player
    variant's puppet has no row (the rules play it)
observation
    each row its seat's own observation, the scalar env's for that seat (float32 ``Box``), or with
    ``mask_in_obs=True`` a ``Dict`` of ``"observation"`` and ``"action_mask"``
action
    one per row: ``MultiDiscrete(nvec)`` (``single_action_space``); with ``action_mode="tokens"`` ``Discrete(n)``,
    one token of the seat's bid per step (``revolution_env.env.tokens``)
decisions
    a bid is one step for every player seat at once; a Guy, Spy or Apothecary decision a step of its seat's row
    alone; a row with nothing to decide gets ``Decision.NONE`` (its mask allows only the no-op) and its action is
    ignored. ``info["decision"]`` says which rows decide
masks
    ``action_masks()``: bool ``(num_envs, sum(nvec))`` (token mode: ``(num_envs, n)``); also ``info["action_mask"]``
reward
    each row its seat's: 0 until the end, then ``win_loss`` (+1 / -1) or ``margin``, as the scalar env
autoreset
    ``SAME_STEP``, per game: the step that ends a game returns the next game's first observations in all its rows;
    their last ones are in ``info["final_obs"]`` (an object array, ``None`` in other rows) and
    ``info["final_info"]`` (``seat``, ``won``, ``support``, ``rounds``, ``illegal_action``)
illegal actions
    ``illegal="terminate"`` (default): the game ends, -1 to each offending row and 0 to its other rows, as the
    Parallel env; ``illegal="raise"``: :class:`IllegalActionError` before anything changes
finished games
    ``pop_finished()``: ``(scenario, final_state)`` pairs that ``revolution scenario`` replays

In the token mode every seat builds its bid one token a step, all at once; a seat whose bid is complete waits
with ``NONE`` (its observation still shows its bid) until every bid of its game is complete, and then the game's
bids go in together, as in the Parallel env. Throughput: a step is ``num_envs`` learner steps (rows), of which
``info["decision"] != 0`` are real decisions; ``decisions_made`` counts them since construction.

It is ``vector_env``'s env with every seat the learner's (:class:`~revolution_env.arena.vector.RevolutionVectorEnv`
with ``learner_seats = players``: the same rows, the same waits, the same games), without opponents (no
``opponents`` in ``final_info``). Not supported: rendering.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from revolution_env.arena.vector import RevolutionVectorEnv
from revolution_env.arena.vector_base import KEEP_FINISHED


class SelfPlayVectorEnv(RevolutionVectorEnv):
    """Every seat of ``num_games`` games of Revolution! as the rows of one VectorEnv. See the module
    documentation."""

    every_seat = True
    count = "num_games"
    title = "self-play vector env"
    renders = "revolution_env.env"

    def __init__(
        self,
        num_games: int,
        players: int = 3,
        mask_in_obs: bool = False,
        keep_finished: int = KEEP_FINISHED,
        **options: Any,
    ) -> None:
        for name in ("opponents", "seat", "learner_seats"):
            if name in options:
                raise ValueError(f"{name}: unknown option (every seat of the {self.title} is the learner's)")
        super().__init__(num_games, players, mask_in_obs=mask_in_obs, keep_finished=keep_finished, **options)

    def _rows_are(self) -> str:
        return f"one row per seat, {self.num_games} games x {self.players} seats"

    def _final_extras(self) -> dict[str, np.ndarray]:
        return {}  # no opponents


def selfplay_vector_env(num_games: int, players: int = 3, **options: Any) -> SelfPlayVectorEnv:
    """Every seat of ``num_games`` games as the rows of one VectorEnv (``num_envs = num_games * players``), for
    pure self-play: one forward pass of the policy decides for every seat. Options: ``mask_in_obs``,
    ``keep_finished`` (finished games kept for :meth:`~SelfPlayVectorEnv.pop_finished`, 0 for none),
    ``action_mode``, ``illegal`` and the rule and reward options of :func:`revolution_env.env`. Bad input raises
    ``ValueError`` naming the option."""
    return SelfPlayVectorEnv(num_games, players=players, **options)
