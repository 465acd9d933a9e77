"""``revolution_env.selfplay_vector_env``: pure self-play in batch, every seat of every game a row of one learner.

| property        | value                                                                                          |
|-----------------|------------------------------------------------------------------------------------------------|
| class           | :class:`SelfPlayVectorEnv`, a ``gymnasium.vector.VectorEnv`` of ``num_envs = num_games * players`` rows |
| rows            | row ``r`` is seat ``r % players`` of game ``r // players`` (``row_game``, ``row_seat``); the two-player variant's puppet has no row (the rules play it) |
| observation     | each row its seat's own observation, the scalar env's for that seat (float32 ``Box``), or with ``mask_in_obs=True`` a ``Dict`` of ``"observation"`` and ``"action_mask"`` |
| action          | one per row: ``MultiDiscrete(nvec)`` (``single_action_space``); with ``action_mode="tokens"`` ``Discrete(n)``, one token of the seat's bid per step (``revolution_env.env.tokens``) |
| decisions       | a bid is one step for every player seat at once; a Guy, Spy or Apothecary decision a step of its seat's row alone; a row with nothing to decide gets ``Decision.NONE`` (its mask allows only the no-op) and its action is ignored. ``info["decision"]`` says which rows decide |
| masks           | ``action_masks()``: bool ``(num_envs, sum(nvec))`` (token mode: ``(num_envs, n)``); also ``info["action_mask"]`` |
| reward          | each row its seat's: 0 until the end, then ``win_loss`` (+1 / -1) or ``margin``, as the scalar env |
| autoreset       | ``SAME_STEP``, per game: the step that ends a game returns the next game's first observations in all its rows; their last ones are in ``info["final_obs"]`` (an object array, ``None`` in other rows) and ``info["final_info"]`` (``seat``, ``won``, ``support``, ``rounds``, ``illegal_action``) |
| illegal actions | ``illegal="terminate"`` (default): the game ends, -1 to each offending row and 0 to its other rows, as the Parallel env; ``illegal="raise"``: :class:`IllegalActionError` before anything changes |
| finished games  | ``pop_finished()``: ``(scenario, final_state)`` pairs that ``revolution scenario`` replays        |

In the token mode every seat builds its bid one token a step, all at once; a seat whose bid is complete waits
with ``NONE`` (its observation still shows its bid) until every bid of its game is complete, and then the game's
bids go in together, as in the Parallel env. Throughput: a step is ``num_envs`` learner steps (rows), of which
``info["decision"] != 0`` are real decisions; ``decisions_made`` counts them since construction.

Every game is held by one :class:`revolution_env.engine.batched.BatchedGame`; observations and masks are built in
batch by :class:`revolution_env.env.batched.BatchedView`. Not supported: rendering.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from gymnasium.utils import seeding
from gymnasium.vector import VectorEnv
from gymnasium.vector.utils import batch_space

from revolution_env.arena.vector import KEEP_FINISHED, SAME_STEP, RevolutionVectorEnv, vector_spaces
from revolution_env.engine import kernels as K
from revolution_env.engine.batched import BatchedGame
from revolution_env.engine.components import BoardError
from revolution_env.engine.game import Decision, RulesError, check_seed, make_layout
from revolution_env.env.batched import BatchedView, seat_rewards
from revolution_env.env.core import EnvConfig
from revolution_env.env.encoding import Codec, IllegalActionError
from revolution_env.env.observation import ObservationLayout
from revolution_env.env.tokens import TokenCodec


class SelfPlayVectorEnv(VectorEnv):
    """Every seat of ``num_games`` games of Revolution! as the rows of one VectorEnv. See the module
    documentation."""

    metadata = {"autoreset_mode": SAME_STEP, "render_modes": []}

    def __init__(
        self,
        num_games: int,
        players: int = 3,
        mask_in_obs: bool = False,
        keep_finished: int = KEEP_FINISHED,
        **options: Any,
    ) -> None:
        if isinstance(num_games, bool) or not isinstance(num_games, (int, np.integer)) or num_games < 1:
            raise ValueError(f"num_games: expected a positive integer, got {num_games!r}")
        options = dict(options, players=players)
        if options.get("render_mode") is not None:
            raise ValueError("render_mode: the self-play vector env does not render (use revolution_env.env)")
        self.config = config = EnvConfig.from_options(options)
        try:
            self.layout = L = make_layout(config.rules)
        except (BoardError, RulesError) as exc:
            raise ValueError(f"board: {exc}") from None
        if not isinstance(mask_in_obs, bool):
            raise ValueError(f"mask_in_obs: expected true or false, got {mask_in_obs!r}")
        if isinstance(keep_finished, bool) or not isinstance(keep_finished, int) or keep_finished < 0:
            raise ValueError(f"keep_finished: expected a non-negative integer, got {keep_finished!r}")
        self._np_random, self._np_random_seed = seeding.np_random(None)
        self.game = BatchedGame(L, int(num_games), rng=self._np_random)  # refuses what the engine cannot play
        self.num_games = G = int(num_games)
        self.players = P = L.players
        self.num_envs = n = G * P
        self.row_game = np.repeat(np.arange(G), P)
        self.row_seat = np.tile(np.arange(P), G)
        self.mask_in_obs = mask_in_obs
        self.keep_finished = keep_finished
        self.codec = Codec(L)
        self.tokens = TokenCodec(self.codec) if config.action_mode == "tokens" else None
        self.view = BatchedView(self.codec, ObservationLayout(self.codec))
        self.obs_layout = ObservationLayout(self.codec, building=self.tokens is not None)
        self.single_observation_space, self.single_action_space = vector_spaces(
            self.codec, self.obs_layout, mask_in_obs, self.tokens
        )
        self.observation_space = batch_space(self.single_observation_space, n)
        self.action_space = batch_space(self.single_action_space, n)
        self.decisions_made = 0  # rows stepped with a real decision (not NONE), since construction
        self._warned: set[str] = set()
        self._finished: list[Any] = []
        self._finished_count = 0
        self._started = False
        self._kinds = np.zeros(n, dtype=np.int64)
        self._masks = np.zeros((n, self.tokens.n if self.tokens else self.codec.size), dtype=bool)
        # the token mode: each row's bid so far, the last token it placed, and whether its bid is complete
        self._building = np.zeros((n, self.codec.T, 3), dtype=np.int64)
        self._last = np.full(n, -1, dtype=np.int64)
        self._complete = np.zeros(n, dtype=bool)

    # --- the VectorEnv API -------------------------------------------------------------------------------------

    def reset(self, *, seed: int | None = None, options: dict | None = None) -> tuple[Any, dict[str, Any]]:
        """Start every game afresh (later games start by themselves when one ends: autoreset). The same seed
        gives the same games for the same actions."""
        seed = check_seed(seed)
        if seed is not None:
            self._np_random, self._np_random_seed = seeding.np_random(seed)
            self.game.rng = self._np_random
        self._start_games(np.arange(self.num_games))
        self._started = True
        obs = self._observe()
        return obs, self._infos(np.zeros(self.num_envs, dtype=np.int8))

    def step(self, actions: Any) -> tuple[Any, np.ndarray, np.ndarray, np.ndarray, dict[str, Any]]:
        """One decision of every row that has one (the others' actions are ignored); each game then waits for
        its next decision."""
        if not self._started:
            raise RuntimeError("step() before reset(): call reset() first")
        actions = self._check_actions(actions)
        kinds = self._kinds
        deciding = kinds != K.K_NONE
        if self.tokens:
            legal = (actions >= 0) & (actions < self.tokens.n)
            legal[legal] = self._masks[np.flatnonzero(legal), actions[legal]]
        else:
            legal = self.view.legal(actions, self._masks)
        illegal = deciding & ~legal
        if illegal.any():
            self._illegal(np.flatnonzero(illegal), actions)
        self.decisions_made += int(deciding.sum())
        ended_badly = np.zeros(self.num_games, dtype=bool)  # games ended by an illegal action
        ended_badly[self.row_game[illegal]] = True
        playing = ~ended_badly
        pending = self.game.kind.copy()  # read before the bids go in: they may lead to a Guy decision at once
        if self.tokens:
            self._place_tokens(np.flatnonzero(deciding & (kinds == K.K_BID) & playing[self.row_game]), actions)
        self._submit_bids(np.flatnonzero(playing & (pending == K.K_BID)), actions)
        self._choose(np.flatnonzero(playing & (pending >= K.K_GUY)), actions)
        game, rows = self.game, self.row_game
        over = game.over.copy()
        done = over | ended_badly
        rewards = np.zeros(self.num_envs, dtype=np.float64)
        finished = np.flatnonzero(over[rows])
        rewards[finished] = seat_rewards(game, rows[finished], self.row_seat[finished], self.config.reward)
        rewards[illegal] = -1.0
        truncated = (over & game.truncated)[rows]
        terminated = done[rows] & ~truncated
        infos: dict[str, Any] = {}
        if done.any():
            infos = self._final(np.flatnonzero(done), np.flatnonzero(over), illegal)
            self._start_games(np.flatnonzero(done))
        obs = self._observe()
        infos.update(self._infos(illegal.astype(np.int8)))
        return obs, rewards, terminated, truncated, infos

    def action_masks(self) -> np.ndarray:
        """Every row's flat mask, bool ``(num_envs, sum(nvec))`` (MaskablePPO's form; read-only), or in the token
        mode ``(num_envs, n)``. A row with nothing to decide allows only the no-op."""
        return self._masks

    @property
    def decisions(self) -> np.ndarray:
        """The :class:`Decision` of every row now (``NONE``, 0, where its seat has nothing to decide)."""
        return self._kinds.copy()

    # The vector env's own, on attributes of the same names and meanings (per row here, per game there):
    # finished games, warnings, infos, the bid under construction after the observation.
    pop_finished = RevolutionVectorEnv.pop_finished
    close_extras = RevolutionVectorEnv.close_extras
    _warn_once = RevolutionVectorEnv._warn_once
    _infos = RevolutionVectorEnv._infos
    _with_building = RevolutionVectorEnv._learner_obs

    # --- inside ------------------------------------------------------------------------------------------------

    def _rows(self, games: np.ndarray) -> np.ndarray:
        """(len(games), players): the rows of ``games``, in seat order."""
        return games[:, None] * self.players + np.arange(self.players)

    def _start_games(self, games: np.ndarray) -> None:
        if len(games) == 0:
            return
        self.game.reset(games, self.np_random.integers(2**63 - 1, size=len(games)))
        rows = self._rows(games).ravel()
        self._building[rows] = 0
        self._last[rows] = -1
        self._complete[rows] = False

    def _check_actions(self, actions: Any) -> np.ndarray:
        """The actions as int64, (num_envs, D) in the bid mode, (num_envs,) in the token mode; a clear error for
        another shape."""
        a = np.asarray(actions)
        n = self.num_envs
        if self.tokens:
            if a.shape == (n, 1):
                a = a.reshape(n)
            if a.shape != (n,) or a.dtype.kind not in "iu":
                raise ValueError(
                    f"actions: expected integers of shape ({n},) (one Discrete({self.tokens.n}) action per row, "
                    f"{self.num_games} games x {self.players} seats, action_mode='tokens'), got {a.dtype} {a.shape}"
                )
        elif a.shape != (n, len(self.codec.nvec)) or a.dtype.kind not in "iu":
            raise ValueError(
                f"actions: expected integers of shape ({n}, {len(self.codec.nvec)}) (one row per seat, "
                f"{self.num_games} games x {self.players} seats), got {a.dtype} {a.shape}"
            )
        return a.astype(np.int64, copy=False)

    def _illegal(self, rows: np.ndarray, actions: np.ndarray) -> None:
        r = int(rows[0])
        kind = Decision(int(self._kinds[r]))
        if self.tokens:
            why = self.tokens._why(int(actions[r]), self._masks[r], kind)
        else:
            why = self.codec._why(actions[r], self._masks[r], kind)
        where = f"row {r} (game {int(self.row_game[r])}, seat {int(self.row_seat[r])})"
        if self.config.illegal == "raise":
            raise IllegalActionError(f"{where}: illegal action for decision {kind!r}: {why}")
        self._warn_once("illegal", f"{where}: illegal action for decision {kind!r} ({why}); the game ends, reward -1")

    def _place_tokens(self, rows: np.ndarray, actions: np.ndarray) -> None:
        """Token mode: one token placed by each of ``rows`` (none where the seat holds none); a row whose bid is
        now complete waits for the others of its game."""
        held = self.game.tokens[self.row_game[rows], self.row_seat[rows]]
        placing = rows[held.any(1)]
        self.tokens.place(self._building, placing, actions[placing])
        self._last[placing] = actions[placing]
        self._complete[rows] = (self._building[rows].sum(1) == held).all(1)

    def _submit_bids(self, games: np.ndarray, actions: np.ndarray) -> None:
        """The bids of ``games`` (waiting for bids) whose every bid is in: this step's actions in the bid mode,
        the bids built token by token once all are complete in the token mode."""
        if self.tokens:
            games = games[self._complete[self._rows(games)].all(1)]
        if len(games) == 0:
            return
        rows = self._rows(games)
        if self.tokens:
            bids = self._building[rows]
            self._building[rows] = 0
            self._last[rows] = -1
            self._complete[rows] = False
        else:
            held = self.game.tokens[games][:, : self.players].reshape(-1, 3)
            bids = self.view.bid_counts(actions[rows.ravel()], held).reshape(*rows.shape, self.codec.T, 3)
        self.game.submit_bids(games, bids)

    def _choose(self, games: np.ndarray, actions: np.ndarray) -> None:
        """The Guy, Spy or Apothecary decision of ``games``, from the deciding seat's row."""
        if len(games) == 0:
            return
        seats = self.game.decider[games]
        rows = games * self.players + seats
        choices = actions[rows] if self.tokens else actions[rows, 0]
        self.game.choose(games, self.view.engine_choices(choices, seats, self.game.kind[games]))

    def _observe(self) -> Any:
        games, seats = self.row_game, self.row_seat
        kinds = self.view.kinds(self.game, games, seats)
        if self.tokens:
            kinds[self._complete] = K.K_NONE  # a complete bid waits for the others
            self._masks = self.view.token_masks(self.tokens, self.game, games, seats, kinds, self._building, self._last)
        else:
            self._masks = self.view.masks(self.game, games, seats, kinds)
        self._masks.flags.writeable = False  # handed out as it is (action_masks, info): built anew every step
        self._kinds = kinds
        obs = self._with_building(self.view.observe(self.game, games, seats, kinds), self._building)
        if self.mask_in_obs:
            return {"observation": obs, "action_mask": self._masks.view(np.int8)}
        return obs

    def _final(self, ended: np.ndarray, over: np.ndarray, illegal: np.ndarray) -> dict[str, Any]:
        """The last observations and infos of the rows of the games that ended, and the records of those that
        are over (not ended by an illegal action) for pop_finished()."""
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
        games, seats = self.row_game[rows], self.row_seat[rows]
        nothing = np.zeros(len(rows), dtype=np.int64)  # the game is over: no one decides, no bid is being built
        last = self._with_building(
            self.view.observe(game, games, seats, nothing), np.zeros((len(rows), self.codec.T, 3), np.int64)
        )
        final_obs = np.full(self.num_envs, None, dtype=object)
        if self.mask_in_obs:
            mask = np.zeros(self._masks.shape[1], dtype=np.int8)
            mask[0 if self.tokens else self.codec.offsets] = 1  # what nothing to decide allows: the no-op
            for j, r in enumerate(rows.tolist()):
                final_obs[r] = {"observation": last[j], "action_mask": mask.copy()}
        else:
            for j, r in enumerate(rows.tolist()):
                final_obs[r] = last[j]
        ending = np.zeros(self.num_envs, dtype=bool)
        ending[rows] = True
        all_games, all_seats = self.row_game, self.row_seat
        gone = game.over[all_games]
        final_info = {
            "seat": all_seats.copy(),
            "won": game.final_win[all_games, all_seats] & gone,
            "support": np.where(gone, game.final_support[all_games, all_seats], 0),
            "rounds": game.round[all_games],
            "illegal_action": illegal.astype(np.int8),
        }
        final_info.update({f"_{k}": ending for k in list(final_info)})
        return {"final_obs": final_obs, "_final_obs": ending, "final_info": final_info, "_final_info": ending}


def selfplay_vector_env(num_games: int, players: int = 3, **options: Any) -> SelfPlayVectorEnv:
    """Every seat of ``num_games`` games as the rows of one VectorEnv (``num_envs = num_games * players``), for
    pure self-play: one forward pass of the policy decides for every seat. Options: ``mask_in_obs``,
    ``keep_finished`` (finished games kept for :meth:`~SelfPlayVectorEnv.pop_finished`, 0 for none),
    ``action_mode``, ``illegal`` and the rule and reward options of :func:`revolution_env.env`. Bad input raises
    ``ValueError`` naming the option."""
    return SelfPlayVectorEnv(num_games, players=players, **options)
