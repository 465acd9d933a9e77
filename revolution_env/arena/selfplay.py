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

Every game is held by one :class:`revolution_env.engine.batched.BatchedGame`; observations and masks are built in
batch by :class:`revolution_env.env.batched.BatchedView`, the action mode is ``env.modes``' (one row per seat), and
what this env shares with ``vector_env`` (the step around the decisions, illegal actions, rewards, autoreset,
finished games) is :class:`revolution_env.arena.vector_base.BatchedVectorEnv`. Not supported: rendering.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from revolution_env.arena.vector_base import KEEP_FINISHED, BatchedVectorEnv
from revolution_env.engine import kernels as K


class SelfPlayVectorEnv(BatchedVectorEnv):
    """Every seat of ``num_games`` games of Revolution! as the rows of one VectorEnv. See the module
    documentation."""

    every_seat = True
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
        super().__init__(num_games, "num_games", dict(options, players=players), mask_in_obs, keep_finished)
        self.decisions_made = 0  # rows stepped with a real decision (not NONE), since construction
        # the token mode: whether a row's bid is complete (it waits for the others of its game)
        self._complete = np.zeros(self.num_envs, dtype=bool)
        # no seat is random (BatchedGame.step's random seats and their generators, unused)
        self._no_random = np.zeros((self.num_games, self.players), dtype=bool)
        self._no_states = np.zeros(self.num_games, dtype=np.int64)

    @property
    def decisions(self) -> np.ndarray:
        """The :class:`Decision` of every row now (``NONE``, 0, where its seat has nothing to decide)."""
        return self._kinds.copy()

    # --- inside ------------------------------------------------------------------------------------------------

    def _start_games(self, games: np.ndarray) -> None:
        if len(games) == 0:
            return
        self.game.reset(games, self.np_random.integers(2**63 - 1, size=len(games)))
        rows = self._rows(games).ravel()
        self.mode.clear(rows)
        self._complete[rows] = False

    def _where(self, row: int) -> str:
        return f"row {row} (game {int(self.row_game[row])}, seat {int(self.row_seat[row])})"

    def _rows_are(self) -> str:
        return f"one row per seat, {self.num_games} games x {self.players} seats"

    def _decision_kinds(self) -> np.ndarray:
        kinds = super()._decision_kinds()
        kinds[self._complete] = K.K_NONE  # a complete bid waits for the others
        return kinds

    def _decide(self, actions: np.ndarray, kinds: np.ndarray, playing: np.ndarray) -> None:
        """Each bidding row's bid (in the token mode, one token of it), the bids of a game going in once all are
        complete; the Guy, Spy, Apothecary or Remove decision of a game from its deciding seat's row."""
        self.decisions_made += int((kinds != K.K_NONE).sum())
        game = self.game
        pending = game.kind.copy()  # read before the bids go in: they may lead to a Guy decision at once
        pending[~playing.reshape(self.num_games, self.players)[:, 0]] = K.K_NONE  # ended by an illegal action
        bidding = np.flatnonzero(playing & (kinds == K.K_BID))
        held = game.tokens[self.row_game[bidding], self.row_seat[bidding]]
        self._complete[bidding] = self.mode.place_many(bidding, actions[bidding], held)
        waiting = np.flatnonzero(pending == K.K_BID)
        bidding = waiting[self._complete[self._rows(waiting)].all(1)]
        choosing = np.flatnonzero(pending >= K.K_GUY)
        games, row = self._deciding(bidding, choosing)  # the games that decide, in one step of the engine
        # the bids of the games (the rows of choosing games unread), of the engine's integer type
        bids = np.empty((len(games), self.players, self.codec.T, 3), dtype=game.count_type)
        values = np.zeros(len(games), dtype=np.int64)
        if len(bidding):
            rows = self._rows(bidding).ravel()
            held = game.tokens[self.row_game[rows], self.row_seat[rows]]
            at = np.repeat(row[bidding], self.players)  # each row's game in games, seat by seat
            self.mode.counts_into(self.view, rows, actions[rows], held, bids, at, self.row_seat[rows])
            self.mode.clear(rows)
            self._complete[rows] = False
        if len(choosing):
            seats = game.decider[choosing]
            rows = choosing * self.players + seats
            choices = self.mode.choices_many(actions[rows])
            values[row[choosing]] = self.view.engine_choices(choices, seats, game.kind[choosing])
        game.step(games, bids, values, self._no_random, self._no_states)


def selfplay_vector_env(num_games: int, players: int = 3, **options: Any) -> SelfPlayVectorEnv:
    """Every seat of ``num_games`` games as the rows of one VectorEnv (``num_envs = num_games * players``), for
    pure self-play: one forward pass of the policy decides for every seat. Options: ``mask_in_obs``,
    ``keep_finished`` (finished games kept for :meth:`~SelfPlayVectorEnv.pop_finished`, 0 for none),
    ``action_mode``, ``illegal`` and the rule and reward options of :func:`revolution_env.env`. Bad input raises
    ``ValueError`` naming the option."""
    return SelfPlayVectorEnv(num_games, players=players, **options)
