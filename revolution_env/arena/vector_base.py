"""The step of the learner vector env on the batched engine, ``vector_env`` (``arena.vector``: the learner in one or
more seats of each game, opponents in the others), apart from what goes into the games; ``selfplay_vector_env``
(``arena.selfplay``: every seat of every game the learner) is that env with every seat the learner's.

It is a ``gymnasium.vector.VectorEnv`` whose rows are seats of the games of one
:class:`~revolution_env.engine.batched.BatchedGame`: row ``r`` is seat ``row_seat[r]`` of game ``row_game[r]``.
:class:`BatchedVectorEnv` holds the game, the learner's action mode (``env.modes``, in its batched form, one row
per learner seat), the batched observations (``env.batched.BatchedView``), and the step around what differs: the
checks of the options and of the actions, illegal actions (``illegal="terminate"`` or ``"raise"``), the rewards
at the end (``env.core.final_rewards``), ``SAME_STEP`` autoreset with ``final_obs`` and ``final_info``, the
finished games for ``pop_finished()``, and the infos. A subclass says how a step's decisions go in
(:meth:`~BatchedVectorEnv._decide`) and how new games start (:meth:`~BatchedVectorEnv._start_games`), and may take a
step's actions, decisions and observations in one pass where it can (:meth:`~BatchedVectorEnv._decide_and_observe`:
the games that end are then observed again once they start anew).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import gymnasium
import numpy as np
from gymnasium.utils import seeding
from gymnasium.vector import VectorEnv
from gymnasium.vector.utils import batch_space

from revolution_env.engine import kernels as K
from revolution_env.engine.batched import BatchedGame
from revolution_env.engine.components import BoardError
from revolution_env.engine.game import Decision, RulesError, check_seed, make_layout
from revolution_env.env.batched import BatchedView
from revolution_env.env.core import ILLEGAL_REWARD, EnvConfig, final_rewards
from revolution_env.env.encoding import Codec, IllegalActionError
from revolution_env.env.modes import action_mode
from revolution_env.env.observation import ObservationLayout

try:
    from gymnasium.vector import AutoresetMode

    SAME_STEP: Any = AutoresetMode.SAME_STEP
except ImportError:  # gymnasium 1.0 names no autoreset modes (its own vector envs reset on the next step)
    SAME_STEP = "SameStep"

KEEP_FINISHED = 100_000  # finished games kept for pop_finished() before the oldest are dropped


@dataclass
class Observed:
    """A step's rows checked, decided and observed in one pass (:meth:`BatchedVectorEnv._decide_and_observe`):
    whether each row's action was illegal (its game left as it was), then every row's observation, mask and decision
    as the games are after the step (those of games that ended are the last of their game)."""

    illegal: np.ndarray
    obs: np.ndarray
    masks: np.ndarray
    kinds: np.ndarray


class BatchedVectorEnv(VectorEnv):
    """Rows that are seats of batched games, stepped together (see the module documentation). A subclass sets
    ``every_seat`` (True: a row for every player seat of every game; False: ``per_game`` rows per game, one by
    default, their seats in ``row_seat`` set by the subclass as each game starts) and ``title`` (its name in
    messages)."""

    metadata = {"autoreset_mode": SAME_STEP, "render_modes": []}
    every_seat: bool
    title: str  # "vector env"
    renders: str  # where rendering is to be had instead

    def __init__(
        self,
        num_games: int,
        count: str,
        options: dict[str, Any],
        mask_in_obs: bool,
        keep_finished: int,
        per_game: int | None = None,
    ) -> None:
        """``num_games`` games (the option named ``count``) of ``options`` (the rule, reward, action mode and
        illegal options), ``per_game`` rows each (None: every seat's with ``every_seat``, else one; where it is
        neither, the subclass sets each game's rows' seats in ``row_seat`` as the game starts). Bad input raises
        ``ValueError`` naming the option."""
        if isinstance(num_games, bool) or not isinstance(num_games, (int, np.integer)) or num_games < 1:
            raise ValueError(f"{count}: expected a positive integer, got {num_games!r}")
        if options.get("render_mode") is not None:
            raise ValueError(f"render_mode: the {self.title} does not render (use {self.renders})")
        self.config = config = EnvConfig.from_options(options)
        try:
            self.layout = L = make_layout(config.rules)
        except (BoardError, RulesError) as exc:
            raise ValueError(f"board: {exc}") from None
        if not isinstance(mask_in_obs, bool):
            raise ValueError(f"mask_in_obs: expected true or false, got {mask_in_obs!r}")
        if isinstance(keep_finished, bool) or not isinstance(keep_finished, int) or keep_finished < 0:
            raise ValueError(f"keep_finished: expected a non-negative integer, got {keep_finished!r}")
        self.num_games = G = int(num_games)
        self.players = P = L.players
        self.per_game = k = (P if self.every_seat else 1) if per_game is None else int(per_game)  # rows per game
        self.num_envs = n = G * k
        self.row_game = np.repeat(np.arange(G), k)
        self.row_seat = np.tile(np.arange(P), G) if self.every_seat else np.zeros(n, dtype=np.int64)
        self.mask_in_obs = mask_in_obs
        self.keep_finished = keep_finished
        self.codec = Codec(L)
        # the learner's action mode (env/modes.py), one row per learner seat; anything else reads the bid mode's
        # observations and masks through the view
        self.mode = action_mode(config.action_mode, self.codec, n)
        self.tokens = self.mode.tokens  # the token mode's sequences (None in the bid mode)
        self.view = BatchedView(self.codec, ObservationLayout(self.codec))
        self.obs_layout = self.mode.layout  # the learner's
        self.single_observation_space = self.mode.observation_space(with_mask=mask_in_obs)
        self.single_action_space = self.mode.space()
        self.observation_space = batch_space(self.single_observation_space, n)
        self.action_space = batch_space(self.single_action_space, n)
        self._np_random, self._np_random_seed = seeding.np_random(None)
        self.game = BatchedGame(L, G, rng=self._np_random)  # refuses what the engine cannot play
        self._warned: set[str] = set()
        self._finished: list[Any] = []
        self._finished_count = 0
        self._started = False
        self._kinds = np.zeros(n, dtype=np.int64)
        self._masks = np.zeros((n, self.mode.n), dtype=bool)

    # --- what a subclass says ----------------------------------------------------------------------------------

    def _start_games(self, games: np.ndarray) -> None:
        """New games in ``games`` (their bids under construction forgotten)."""
        raise NotImplementedError

    def _check(self, actions: np.ndarray, kinds: np.ndarray) -> np.ndarray:
        """(num_envs,) bool: whether each row's action is legal (a row with nothing to decide passes whatever its
        action), before anything changes a game."""
        return (kinds == K.K_NONE) | self.mode.legal_many(self.view, actions, self._masks)

    def _decide(self, actions: np.ndarray, kinds: np.ndarray, playing: np.ndarray) -> None:
        """The rows' decisions ``actions`` (``kinds`` their :class:`Decision`) into the games, for the rows of
        ``playing`` (bool per row: legal, and its game not ended by another row's illegal action); each game then
        waits for its learner's next decision or is over."""
        raise NotImplementedError

    def _decide_and_observe(self, actions: np.ndarray, kinds: np.ndarray) -> Observed | None:
        """:meth:`_check`, :meth:`_decide` and the observations in one pass over the rows, where a subclass can (each
        thread reads its rows' actions, steps their games and observes them, while they are in its core's cache):
        the :class:`Observed` rows, the games left as :meth:`_decide` leaves them. None: the three passes apart.
        Only where illegal actions do not raise (an illegal action must leave every game as it was)."""
        return None

    def _seeded(self) -> None:
        """``reset(seed)`` drew a new generator: seed what else draws from one."""

    def _where(self, row: int) -> str:
        """A row in messages: ``"env 3 (seat 1)"``."""
        raise NotImplementedError

    def _rows_are(self) -> str:
        """What a row is, in the message on actions of the wrong shape."""
        raise NotImplementedError

    def _final_extras(self) -> dict[str, np.ndarray]:
        """Entries of ``final_info`` beyond the shared ones (one value per row)."""
        return {}

    def _decision_kinds(self) -> np.ndarray:
        """The :class:`Decision` every row faces now."""
        return self.view.kinds(self.game, self.row_game, self.row_seat)

    # --- the VectorEnv API -------------------------------------------------------------------------------------

    def reset(self, *, seed: int | None = None, options: dict | None = None) -> tuple[Any, dict[str, Any]]:
        """Start every game afresh (later games start by themselves when one ends: autoreset). The same seed gives
        the same games for the same actions."""
        seed = check_seed(seed)
        if seed is not None:
            self._np_random, self._np_random_seed = seeding.np_random(seed)
            self.game.rng = self._np_random
            self._seeded()
        self._start_games(np.arange(self.num_games))
        self._started = True
        obs = self._observe()
        return obs, self._infos(np.zeros(self.num_envs, dtype=np.int8))

    def step(self, actions: Any) -> tuple[Any, np.ndarray, np.ndarray, np.ndarray, dict[str, Any]]:
        """One decision of every row that has one (the others' actions are ignored); each game then waits for its
        learner's next decision."""
        if not self._started:
            raise RuntimeError("step() before reset(): call reset() first")
        actions = self.mode.check_many(actions, self._rows_are())
        kinds = self._kinds
        observed = self._decide_and_observe(actions, kinds)
        if observed is None:  # checked, decided, then observed below, each in its own pass
            illegal = ~self._check(actions, kinds)
        else:
            illegal = observed.illegal
        if illegal.any():
            self._illegal(np.flatnonzero(illegal), actions)
        ended_badly = np.zeros(self.num_games, dtype=bool)  # games ended by an illegal action
        ended_badly[self.row_game[illegal]] = True
        if observed is None:
            self._decide(actions, kinds, ~self._per_row(ended_badly))
        game = self.game
        over = game.over  # a new array, as the games are now
        done = over | ended_badly
        rewards = np.zeros(self.num_envs, dtype=np.float64)
        finished = np.flatnonzero(self._per_row(over))
        rewards[finished] = self._rewards(finished)
        rewards[illegal] = ILLEGAL_REWARD
        truncated = self._per_row(over & game.truncated)
        terminated = self._per_row(done) & ~truncated
        infos: dict[str, Any] = {}
        ended = np.flatnonzero(done)
        if len(ended):
            infos = self._final(ended, np.flatnonzero(over), illegal, observed)
            self._start_games(ended)
        if observed is None:
            obs = self._observe()
        else:  # the rows of the games that ended observed again, in their new games
            obs = self._observe(observed, self._rows(ended).ravel())
        infos.update(self._infos(illegal.astype(np.int8)))
        return obs, rewards, terminated, truncated, infos

    def action_masks(self) -> np.ndarray:
        """Every row's flat mask, bool ``(num_envs, sum(nvec))`` (MaskablePPO's form; read-only), or in the token
        mode ``(num_envs, n)``. A row with nothing to decide allows only the no-op."""
        return self._masks

    def pop_finished(self) -> list[tuple[dict[str, Any], dict[str, Any]]]:
        """The games finished since the last call, as ``(scenario, final_state)`` pairs: the scenario
        (docs/scenarios.md §3, with ``seed`` and, with two players, ``priority`` in every round) replays to the
        final state. Games ended by an illegal action are not among them."""
        out = []
        for records in self._finished:
            for i in range(len(records)):
                out.append((records.export(i), records.state_dict(i)))
        self._finished = []
        self._finished_count = 0
        return out

    def close_extras(self, **kwargs: Any) -> None:
        pass

    # --- inside ------------------------------------------------------------------------------------------------

    def _deciding(self, bidding: np.ndarray, choosing: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The games that decide this step (``bidding`` and ``choosing``, distinct), in order, as
        ``BatchedGame.step`` takes them (mixed, so that its parts side by side get as many bids each), and per game
        index its place among them (``row[game]``)."""
        deciding = np.zeros(self.num_games, dtype=bool)
        deciding[bidding] = deciding[choosing] = True
        return np.flatnonzero(deciding), np.cumsum(deciding) - 1

    def _per_row(self, per_game: np.ndarray) -> np.ndarray:
        """An array over the games as one over the rows (the array itself where row g is game g)."""
        return per_game if self.per_game == 1 else per_game[self.row_game]

    def _rows(self, games: np.ndarray) -> np.ndarray:
        """(len(games), per_game): the rows of ``games``, in seat order."""
        return games[:, None] * self.per_game + np.arange(self.per_game)

    def _observe(self, observed: Observed | None = None, rows: np.ndarray | None = None) -> Any:
        """Every row's observation and mask, or ``observed``'s (from :meth:`_decide_and_observe`) with ``rows``
        observed anew."""
        games, seats = self.row_game, self.row_seat
        if observed is None:
            everyone = np.arange(self.num_envs)
            self._kinds = kinds = self._decision_kinds()
            obs, self._masks = self.mode.observe_many(self.view, self.game, everyone, games, seats, kinds)
        else:
            obs, self._masks, self._kinds = observed.obs, observed.masks, observed.kinds
            if len(rows):
                kinds = self.view.kinds(self.game, games[rows], seats[rows])
                self._kinds[rows] = kinds
                obs[rows], self._masks[rows] = self.mode.observe_many(
                    self.view, self.game, rows, games[rows], seats[rows], kinds
                )
        self._masks.flags.writeable = False  # handed out as it is (action_masks, info): built anew every step
        if self.mask_in_obs:
            return {"observation": obs, "action_mask": self._masks.view(np.int8)}
        return obs

    def _infos(self, illegal: np.ndarray) -> dict[str, Any]:
        ones = np.ones(self.num_envs, dtype=bool)
        return {
            "decision": self._kinds.copy(),
            "_decision": ones,
            "illegal_action": illegal,
            "_illegal_action": ones,
            "action_mask": self.action_masks(),
            "_action_mask": ones,
        }

    def _rewards(self, rows: np.ndarray) -> np.ndarray:
        """The rewards of ``rows``, whose games are over."""
        games, seats = self.row_game[rows], self.row_seat[rows]
        return final_rewards(
            self.config.reward, self.game.final_win[games, seats], self.game.final_support[games], seats
        )

    def _final(
        self, ended: np.ndarray, over: np.ndarray, illegal: np.ndarray, observed: Observed | None
    ) -> dict[str, Any]:
        """The last observations and infos of the rows of the games that ended (taken from ``observed`` where the
        step observed every row), and the records of those that are over (not ended by an illegal action) for
        pop_finished()."""
        game = self.game
        if self.keep_finished and len(over):
            self._finished.append(game.snapshot(over))
            self._finished_count += len(over)
            while self._finished_count > self.keep_finished and len(self._finished) > 1:
                self._finished_count -= len(self._finished.pop(0))
                self._warn_once(
                    "keep_finished",
                    f"pop_finished(): more than {self.keep_finished} finished games kept; the oldest are dropped",
                )
        rows = self._rows(ended).ravel()
        self.mode.clear(rows)  # the bid under construction: none (the game is over, or ended by an illegal action)
        nothing = np.zeros(len(rows), dtype=np.int64)  # no one decides
        if observed is None:
            last = self.mode.observations_many(
                self.view.observe(game, self.row_game[rows], self.row_seat[rows], nothing), rows
            )
        else:  # those of the games that are over, as observed (no one decides there); the others' observed again
            last = observed.obs[rows]
            again = np.flatnonzero(~game.over[self.row_game[rows]])
            if len(again):
                r = rows[again]
                last[again] = self.mode.observations_many(
                    self.view.observe(game, self.row_game[r], self.row_seat[r], nothing[again]), r
                )
        final_obs = np.full(self.num_envs, None, dtype=object)
        if self.mask_in_obs:  # what nothing to decide allows: the no-op
            for j, r in enumerate(rows.tolist()):
                final_obs[r] = {"observation": last[j], "action_mask": self.mode.none_mask()}
        else:
            each = np.empty(len(rows), dtype=object)
            each[:] = list(last)  # each row of ``last`` as an array (a loop of Python assignments took twice as long)
            final_obs[rows] = each
        ending = np.zeros(self.num_envs, dtype=bool)
        ending[rows] = True
        games, seats = self.row_game, self.row_seat
        gone = game.over[games]
        final_info = {
            "seat": seats.copy(),
            "won": game.final_win[games, seats] & gone,
            "support": np.where(gone, game.final_support[games, seats], 0),
            "rounds": game.round[games],
            "illegal_action": illegal.astype(np.int8),
            **self._final_extras(),
        }
        final_info.update({f"_{k}": ending for k in list(final_info)})
        return {"final_obs": final_obs, "_final_obs": ending, "final_info": final_info, "_final_info": ending}

    def _illegal(self, rows: np.ndarray, actions: np.ndarray) -> None:
        r = int(rows[0])
        kind = Decision(int(self._kinds[r]))
        why = self.mode.why(actions[r], self._masks[r], kind)
        where = self._where(r)
        if self.config.illegal == "raise":
            raise IllegalActionError(f"{where}: illegal action for decision {kind!r}: {why}")
        self._warn_once(
            "illegal",
            f"{where}: illegal action for decision {kind!r} ({why}); the game ends, reward {ILLEGAL_REWARD:g}",
        )

    def _warn_once(self, key: str, message: str) -> None:
        if key not in self._warned:
            self._warned.add(key)
            gymnasium.logger.warn(message)
