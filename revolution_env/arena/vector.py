"""``revolution_env.vector_env``: many single-agent games stepped in batch (ENVIRONMENT.md, "Vectorised").

| property        | value                                                                                          |
|-----------------|------------------------------------------------------------------------------------------------|
| class           | :class:`RevolutionVectorEnv`, a ``gymnasium.vector.VectorEnv`` of ``num_envs`` games            |
| one game        | like ``gym_env``: the learner plays one seat (``seat``, or drawn per episode), ``opponents`` the others |
| observation     | the learner's observation vector (float32 ``Box`` with declared bounds), or with ``mask_in_obs=True`` a ``Dict`` of ``"observation"`` and ``"action_mask"`` |
| action          | ``MultiDiscrete(nvec)`` per game (``single_action_space``), one row per game; with ``action_mode="tokens"`` ``Discrete(n)``, one token of the bid per step (``revolution_env.env.tokens``) |
| masks           | ``action_masks()``: bool ``(num_envs, sum(nvec))`` (token mode: ``(num_envs, n)``); also ``info["action_mask"]`` |
| reward          | the learner's: 0 until the end, then ``win_loss`` (+1 / -1) or ``margin``, as the scalar env     |
| autoreset       | ``SAME_STEP`` (Gymnasium 1.x ``AutoresetMode.SAME_STEP``): the step that ends a game returns the next game's first observation; the last one is in ``info["final_obs"]`` (an object array, ``None`` where no game ended) and ``info["final_info"]`` |
| finished games  | ``pop_finished()``: ``(scenario, final_state)`` pairs that ``revolution scenario`` replays        |

Every game is held by one :class:`revolution_env.engine.batched.BatchedGame`. Opponents: ``"random"`` is played in batch
(a uniform legal action drawn from the masks of all games at once). Any agent with ``act_batch(observations, masks,
decisions) -> actions`` is called once per step for all the games it plays in: a policy checkpoint in one forward
pass (``PolicyAgent.act_batch``), a heuristic bot through its compiled code
(``revolution_env.agents.compiled``: the same decisions as its ``act`` on each row in turn, about 0.2 ms a bid).
Other agents are called per game through their scalar ``act(observation, info)`` on observations built in batch.

Not supported: the first edition (``ValueError`` at construction) and rendering.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import gymnasium
import numpy as np
from gymnasium import spaces
from gymnasium.utils import seeding
from gymnasium.vector import VectorEnv
from gymnasium.vector.utils import batch_space

from revolution_env.agents.base import act_batch
from revolution_env.common.workers import opponent_threads
from revolution_env.engine import kernels as K
from revolution_env.engine.batched import BatchedGame
from revolution_env.engine.components import BoardError
from revolution_env.engine.game import Decision, RulesError, check_seed, make_layout
from revolution_env.env.batched import BatchedView
from revolution_env.env.core import MARGIN_SCALE, EnvConfig
from revolution_env.env.encoding import Codec, IllegalActionError
from revolution_env.env.observation import ObservationLayout
from revolution_env.env.spaces import MaskedMultiDiscrete
from revolution_env.env.tokens import TokenCodec, check_action_mode

try:
    from gymnasium.vector import AutoresetMode

    SAME_STEP: Any = AutoresetMode.SAME_STEP
except ImportError:  # gymnasium 1.0 names no autoreset modes (its own vector envs reset on the next step)
    SAME_STEP = "SameStep"

DEFAULT_OPPONENT = "value"  # the strongest heuristic, as gym_env's default (ENVIRONMENT.md, "Single agent")
_POOL: list[ThreadPoolExecutor] = []


def _threads() -> int:
    """Threads for opponents' decisions (``common.workers.opponent_threads``)."""
    return opponent_threads()


def _pool() -> ThreadPoolExecutor:
    if not _POOL:
        _POOL.append(ThreadPoolExecutor(max_workers=_threads(), thread_name_prefix="opponents"))
    return _POOL[0]


KEEP_FINISHED = 100_000  # finished games kept for pop_finished() before the oldest are dropped


# --- spaces ----------------------------------------------------------------------------------------------------


def vector_spaces(
    codec: Codec, obs_layout: ObservationLayout, mask_in_obs: bool, tokens: TokenCodec | None = None
) -> tuple[spaces.Space, spaces.Space]:
    """One game's observation and action spaces (``single_observation_space``, ``single_action_space``): the bid
    mode's ``MultiDiscrete``, or with ``tokens`` the token mode's ``Discrete``."""
    low, high = obs_layout.bounds()
    box = spaces.Box(low, high, (obs_layout.size,), np.float32)
    obs = box
    size = tokens.n if tokens else codec.size
    if mask_in_obs:
        obs = spaces.Dict({"observation": box, "action_mask": spaces.Box(0, 1, (size,), np.int8)})
    return obs, spaces.Discrete(tokens.n) if tokens else MaskedMultiDiscrete(codec.nvec)


# --- opponents -------------------------------------------------------------------------------------------------


class _Opponent:
    """One distinct opponent: ``random`` (played in batch) or an agent called per game (or by ``act_batch``)."""

    def __init__(self, name: str, agent: Any = None) -> None:
        self.name = name
        self.agent = agent
        self.batched = agent is None


def _is_random(agent: Any) -> bool:
    from revolution_env.agents.base import RandomAgent

    return type(agent) is RandomAgent


class RevolutionVectorEnv(VectorEnv):
    """``num_envs`` single-agent games of Revolution! stepped in batch. See the module documentation."""

    metadata = {"autoreset_mode": SAME_STEP, "render_modes": []}

    def __init__(
        self,
        num_envs: int,
        players: int = 3,
        opponents: Any = None,
        seat: int | None = None,
        mask_in_obs: bool = False,
        keep_finished: int = KEEP_FINISHED,
        **options: Any,
    ) -> None:
        if isinstance(num_envs, bool) or not isinstance(num_envs, (int, np.integer)) or num_envs < 1:
            raise ValueError(f"num_envs: expected a positive integer, got {num_envs!r}")
        options = dict(options, players=players)
        action_mode = check_action_mode(options.get("action_mode", "bid"))
        if options.get("render_mode") is not None:
            raise ValueError("render_mode: the vector env does not render (use revolution_env.env or gym_env)")
        self.config = config = EnvConfig.from_options(options)
        # what opponents are built for: they play whole bids whatever the learner's action mode
        self.options = {k: v for k, v in options.items() if k not in ("render_mode", "action_mode")}
        if config.rules.first_edition:
            raise ValueError(
                "first_edition: the batched engine does not support the first edition (Card space and deck); "
                "use revolution_env.env or gym_env for it"
            )
        try:
            self.layout = make_layout(config.rules)
        except (BoardError, RulesError) as exc:
            raise ValueError(f"board: {exc}") from None
        if not isinstance(mask_in_obs, bool):
            raise ValueError(f"mask_in_obs: expected true or false, got {mask_in_obs!r}")
        _threads()  # a REVOLUTION_THREADS that is no number of threads fails here, named
        if isinstance(keep_finished, bool) or not isinstance(keep_finished, int) or keep_finished < 0:
            raise ValueError(f"keep_finished: expected a non-negative integer, got {keep_finished!r}")
        L = self.layout
        self.num_envs = n = int(num_envs)
        self.players = P = L.players
        if seat is not None and (
            isinstance(seat, bool) or not isinstance(seat, (int, np.integer)) or not 0 <= seat < P
        ):
            raise ValueError(f"seat: expected None or a seat from 0 to {P - 1}, got {seat!r}")
        self.fixed_seat = None if seat is None else int(seat)
        self.mask_in_obs = mask_in_obs
        self.keep_finished = keep_finished
        self.codec = Codec(L)
        # the token mode: the learner's bid is built in _building, one token a step (env/tokens.py); opponents
        # always play whole bids, through the bid mode's view
        self.tokens = TokenCodec(self.codec) if action_mode == "tokens" else None
        self.view = BatchedView(self.codec, ObservationLayout(self.codec))
        self.obs_layout = ObservationLayout(self.codec, building=self.tokens is not None)  # the learner's
        self.single_observation_space, self.single_action_space = vector_spaces(
            self.codec, self.obs_layout, mask_in_obs, self.tokens
        )
        self.observation_space = batch_space(self.single_observation_space, n)
        self.action_space = batch_space(self.single_action_space, n)
        self._np_random, self._np_random_seed = seeding.np_random(None)
        self.game = BatchedGame(L, n, rng=self._np_random)
        # opponents: a table of distinct opponents, and per game and absolute seat an index into it (-1: learner)
        self._warned: set[str] = set()
        self._table: list[_Opponent] = [_Opponent("random")]
        self._index: dict[int, int] = {}
        self.league = None
        self._fixed: list[int] = []
        self._parse_opponents(opponents)
        self.seat = np.zeros(n, dtype=np.int64)
        self.opponent_of = np.full((n, P), -1, dtype=np.int64)
        self._finished: list[Any] = []
        self._finished_count = 0
        self._started = False
        self._kinds = np.zeros(n, dtype=np.int64)
        self._masks = np.zeros((n, self.tokens.n if self.tokens else self.codec.size), dtype=bool)
        self._building = np.zeros((n, self.codec.T, 3), dtype=np.int64)
        self._last = np.full(n, -1, dtype=np.int64)

    # --- opponents ---------------------------------------------------------------------------------------------

    def _parse_opponents(self, opponents: Any) -> None:
        others = self.players - 1
        if (
            opponents is not None
            and not isinstance(opponents, (str, list, tuple))
            and callable(getattr(opponents, "sample", None))
        ):
            self.league = opponents  # picks the opponents of each new game: league.sample(rng, slot)
            return
        if opponents is None:
            specs: Sequence[Any] = [DEFAULT_OPPONENT] * others
        elif isinstance(opponents, str) or not isinstance(opponents, (list, tuple)):
            specs = [opponents] * others
        else:
            specs = list(opponents)
            if len(specs) != others:
                raise ValueError(
                    f"opponents: expected {others} opponent(s) for {self.players} players (one per other seat), "
                    f"got {len(specs)}"
                )
        self._fixed = [self._register(spec) for spec in specs]

    def _register(self, spec: Any) -> int:
        """The table index of an opponent spec (a name, a checkpoint path, a mixture, or an Agent)."""
        from revolution_env.agents.base import Agent
        from revolution_env.agents.loading import is_checkpoint, load_agent

        name = None
        if isinstance(spec, tuple) and len(spec) == 2 and isinstance(spec[0], str):
            name, spec = spec  # a league's (name, agent): the league's name is what its results are kept under
        if isinstance(spec, str):
            if spec == "random":
                return 0
            key = hash(("spec", spec))
            if key not in self._index:
                try:
                    agent = load_agent(spec, **self.options)
                except ValueError as exc:
                    raise ValueError(f"opponents: {exc}") from None
                if is_checkpoint(spec) and not hasattr(agent, "act_batch"):
                    warnings.warn(
                        f"opponents: checkpoint {spec!r} is played game by game (no batched policy yet); "
                        "expect the vector env to run at the speed of its forward passes",
                        stacklevel=3,
                    )
                self._index[key] = self._add(_Opponent(spec, agent))
            return self._index[key]
        if isinstance(spec, Agent) or callable(getattr(spec, "act", None)):
            if _is_random(spec):
                return 0
            key = id(spec)
            if key not in self._index:
                label = name or getattr(spec, "name", type(spec).__name__)
                if not hasattr(spec, "act_batch"):
                    self._warn_once(
                        f"per-game {label}",
                        f"opponents: {label!r} has no act_batch(observations, masks, decisions): it is played game "
                        "by game through act(), at its own speed",
                    )
                self._index[key] = self._add(_Opponent(label, spec))
            return self._index[key]
        raise ValueError(
            f"opponents: expected an agent spec (a name, a checkpoint path or mix:SPEC@W,...) or an Agent, got {spec!r}"
        )

    def _add(self, opponent: _Opponent) -> int:
        """Put a new opponent in the table, its generator seeded from the env's: one that a league brings in after
        ``reset(seed)`` plays the same games for the same seed (``reset`` reseeds those already there)."""
        if hasattr(opponent.agent, "reset"):
            opponent.agent.reset(int(self.np_random.integers(2**31)))
        self._table.append(opponent)
        return len(self._table) - 1

    def _start_games(self, games: np.ndarray) -> None:
        """New games in ``games``: seeds, the learner's seat, the opponents of the other seats."""
        rng = self.np_random
        k = len(games)
        if k == 0:
            return
        self.game.reset(games, rng.integers(2**63 - 1, size=k))
        self._building[games] = 0
        self._last[games] = -1
        if self.fixed_seat is None:
            self.seat[games] = rng.integers(self.players, size=k)
        else:
            self.seat[games] = self.fixed_seat
        seats = self.seat[games]
        for slot in range(self.players - 1):
            absolute = np.where(slot < seats, slot, slot + 1)  # the other seats in order
            if self.league is None:
                self.opponent_of[games, absolute] = self._fixed[slot]
            else:
                picks = [self._register(self.league.sample(rng, slot)) for _ in range(k)]
                self.opponent_of[games, absolute] = picks
        self.opponent_of[games, seats] = -1

    def opponent_names(self) -> list[str]:
        """The names of the opponents met so far (a spec, an agent's name, or a league's name for its member);
        ``info["final_info"]["opponents"]`` indexes this list."""
        return [o.name for o in self._table]

    # --- the VectorEnv API -------------------------------------------------------------------------------------

    def reset(self, *, seed: int | None = None, options: dict | None = None) -> tuple[Any, dict[str, Any]]:
        """Start every game afresh (later games start by themselves when one ends: autoreset)."""
        seed = check_seed(seed)
        if seed is not None:
            self._np_random, self._np_random_seed = seeding.np_random(seed)
            self.game.rng = self._np_random
            for opponent in self._table[1:]:  # stochastic bots draw from their own generators: seed them too
                if hasattr(opponent.agent, "reset"):
                    opponent.agent.reset(int(self._np_random.integers(2**31)))
        everything = np.arange(self.num_envs)
        self._start_games(everything)
        self._started = True
        obs = self._observe()
        return obs, self._infos(np.zeros(self.num_envs, dtype=np.int8))

    def step(self, actions: Any) -> tuple[Any, np.ndarray, np.ndarray, np.ndarray, dict[str, Any]]:
        """One decision of the learner in every game; opponents play until the learner is asked again."""
        if not self._started:
            raise RuntimeError("step() before reset(): call reset() first")
        n, game, view = self.num_envs, self.game, self.view
        actions = self._check_actions(actions)
        if self.tokens:
            legal = (actions >= 0) & (actions < self.tokens.n)
            legal[legal] = self._masks[np.flatnonzero(legal), actions[legal]]
        else:
            legal = view.legal(actions, self._masks)
        illegal = ~legal
        if illegal.any():
            self._illegal(np.flatnonzero(illegal), actions)
        kinds = self._kinds
        everyone = np.arange(n)
        bidding = everyone[legal & (kinds == K.K_BID)]
        choosing = everyone[legal & (kinds >= K.K_GUY)]
        if self.tokens:
            bidding = self._place(bidding, actions[bidding])  # the games whose bid is complete
        if len(bidding):
            bids = np.zeros((len(bidding), self.players, self.codec.T, 3), dtype=np.int64)
            seats = self.seat[bidding]
            if self.tokens:
                bids[np.arange(len(bidding)), seats] = self._building[bidding]
                self._building[bidding] = 0
                self._last[bidding] = -1
            else:
                bids[np.arange(len(bidding)), seats] = view.bid_counts(actions[bidding], game.tokens[bidding, seats])
            self._opponent_bids(bidding, bids)
            game.submit_bids(bidding, bids)
        if len(choosing):
            choices = actions[choosing] if self.tokens else actions[choosing, 0]
            values = view.engine_choices(choices, self.seat[choosing], kinds[choosing])
            game.choose(choosing, values)
        self._play_opponents()
        over = game.over.copy()
        done = over | illegal
        rewards = np.zeros(n, dtype=np.float64)
        rewards[over] = self._rewards(everyone[over])
        rewards[illegal] = -1.0
        truncated = over & game.truncated
        terminated = done & ~truncated
        infos: dict[str, Any] = {}
        if done.any():
            ended = everyone[done]
            infos = self._final(ended, everyone[over], illegal)
            self._start_games(ended)
        obs = self._observe()
        infos.update(self._infos(illegal.astype(np.int8)))
        return obs, rewards, terminated, truncated, infos

    def action_masks(self) -> np.ndarray:
        """The learner's flat masks, bool ``(num_envs, sum(nvec))`` (MaskablePPO's form; read-only), or in the token
        mode ``(num_envs, n)``."""
        return self._masks

    def bid_mode_view(self, games: Any = None) -> tuple[np.ndarray, np.ndarray]:
        """What an agent written for the bid mode reads in the learner's seat of ``games`` (default: every game):
        observations (without the bid under construction, in the token mode) and the bid mode's flat masks
        (``Core.bid_mode_view``'s batch form; the teacher of behaviour cloning reads them)."""
        g = np.arange(self.num_envs) if games is None else np.asarray(games, dtype=np.int64)
        seats, kinds = self.seat[g], self._kinds[g]
        return self.view.observe(self.game, g, seats, kinds), self.view.masks(self.game, g, seats, kinds)

    def pop_finished(self) -> list[tuple[dict[str, Any], dict[str, Any]]]:
        """The games finished since the last call, as ``(scenario, final_state)`` pairs: the scenario (SCENARIOS.md,
        with ``seed`` and, with two players, ``priority`` in every round) replays to the final state. Games ended
        by an illegal action are not among them."""
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

    def _check_actions(self, actions: Any) -> np.ndarray:
        """The actions as int64, (n, D) in the bid mode, (n,) in the token mode; a clear error for another shape."""
        a = np.asarray(actions)
        n = self.num_envs
        if self.tokens:
            if a.shape in ((n, 1),):
                a = a.reshape(n)
            if a.shape != (n,) or a.dtype.kind not in "iu":
                raise ValueError(
                    f"actions: expected integers of shape ({n},) (one Discrete({self.tokens.n}) action per game, "
                    f"action_mode='tokens'), got {a.dtype} {a.shape}"
                )
        elif a.shape != (n, len(self.codec.nvec)) or a.dtype.kind not in "iu":
            raise ValueError(
                f"actions: expected integers of shape ({n}, {len(self.codec.nvec)}), got {a.dtype} {a.shape}"
            )
        return a.astype(np.int64, copy=False)

    def _place(self, games: np.ndarray, actions: np.ndarray) -> np.ndarray:
        """Token mode: one token placed in each of ``games`` (none where the learner holds none); returns the games
        whose bid is now complete."""
        seats = self.seat[games]
        held = self.game.tokens[games, seats]
        placing = held.any(1)
        g, a = games[placing], actions[placing]
        self.tokens.place(self._building, g, a)
        self._last[g] = a
        complete = (self._building[games].sum(1) == held).all(1)
        return games[complete]

    def _observe(self) -> Any:
        everyone = np.arange(self.num_envs)
        self._kinds = kinds = self.view.kinds(self.game, everyone, self.seat)
        obs = self._learner_obs(self.view.observe(self.game, everyone, self.seat, kinds), self._building)
        if self.tokens:
            self._masks = self._token_masks(everyone, kinds)
        else:
            self._masks = self.view.masks(self.game, everyone, self.seat, kinds)
        self._masks.flags.writeable = False  # handed out as it is (action_masks, info): built anew every step
        if self.mask_in_obs:
            return {"observation": obs, "action_mask": self._masks.view(np.int8)}
        return obs

    def _learner_obs(self, obs: np.ndarray, building: np.ndarray) -> np.ndarray:
        """The learner's observations from the bid mode's: in the token mode, with the bids under construction
        ``building`` (one (T, 3) per row) after them."""
        if not self.tokens:
            return obs
        return np.concatenate([obs, building.reshape(len(obs), -1).astype(np.float32)], axis=1)

    def _token_masks(self, games: np.ndarray, kinds: np.ndarray) -> np.ndarray:
        """The learner's token-mode masks (n, tokens.n): ``TokenCodec.mask`` for every game."""
        tokens, seats = self.tokens, self.seat[games]
        m = np.zeros((len(games), tokens.n), dtype=bool)
        m[kinds == K.K_NONE, 0] = True
        bid = np.flatnonzero(kinds == K.K_BID)
        if len(bid):
            g = games[bid]
            left = self.game.tokens[g, seats[bid]] - self._building[g].sum(1)
            m[bid] = tokens.bid_masks(left, self._last[g])
        special = np.flatnonzero(kinds >= K.K_GUY)
        if len(special):
            m[special, : self.codec.C] = self.view.choice_masks(
                self.game, games[special], seats[special], kinds[special]
            )
        return m

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

    def _rewards(self, games: np.ndarray) -> np.ndarray:
        seats = self.seat[games]
        if self.config.reward == "win_loss":
            return np.where(self.game.final_win[games, seats], 1.0, -1.0)
        support = self.game.final_support[games].astype(np.float64)
        mine = support[np.arange(len(games)), seats]
        support[np.arange(len(games)), seats] = -np.inf
        return (mine - support.max(1)) / MARGIN_SCALE

    def _final(self, ended: np.ndarray, over: np.ndarray, illegal: np.ndarray) -> dict[str, Any]:
        """The last observation and info of the games that ended, and their records for pop_finished()."""
        n = self.num_envs
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
        kinds = np.zeros(len(ended), dtype=np.int64)
        # the bid under construction: none (the game is over, or ended by an illegal action)
        none = np.zeros((len(ended), self.codec.T, 3), dtype=np.int64)
        last = self._learner_obs(self.view.observe(game, ended, self.seat[ended], kinds), none)
        final_obs = np.full(n, None, dtype=object)
        for j, i in enumerate(ended.tolist()):
            if self.mask_in_obs:  # what nothing to decide allows: 0 in every dimension
                mask = np.zeros(self._masks.shape[1], dtype=np.int8)
                mask[0 if self.tokens else self.codec.offsets] = 1
                final_obs[i] = {"observation": last[j], "action_mask": mask}
            else:
                final_obs[i] = last[j]
        mask = np.zeros(n, dtype=bool)
        mask[ended] = True
        seats = self.seat
        final_info = {
            "seat": seats.copy(),
            "won": game.final_win[np.arange(n), seats] & game.over,
            "support": np.where(game.over, game.final_support[np.arange(n), seats], 0),
            "rounds": game.round.copy(),
            "illegal_action": illegal.astype(np.int8),
            # the other seats' opponents, in seat order, as indices into opponent_names()
            "opponents": self.opponent_of[self.opponent_of >= 0].reshape(n, self.players - 1).copy(),
        }
        final_info.update({f"_{k}": mask for k in list(final_info)})
        return {"final_obs": final_obs, "_final_obs": mask, "final_info": final_info, "_final_info": mask}

    def _illegal(self, envs: np.ndarray, actions: np.ndarray) -> None:
        i = int(envs[0])
        kind = Decision(int(self._kinds[i]))
        if self.tokens:
            why = self.tokens._why(int(actions[i]), self._masks[i], kind)
        else:
            why = self.codec._why(actions[i], self._masks[i], kind)
        if self.config.illegal == "raise":
            raise IllegalActionError(f"env {i} (seat {int(self.seat[i])}): illegal action for decision {kind!r}: {why}")
        self._warn_once("illegal", f"env {i}: illegal action for decision {kind!r} ({why}); the game ends, reward -1")

    def _warn_once(self, key: str, message: str) -> None:
        if key not in self._warned:
            self._warned.add(key)
            gymnasium.logger.warn(message)

    def _opponent_bids(self, games: np.ndarray, bids: np.ndarray) -> None:
        """Every opponent's bid in ``games`` (all waiting for bids), written into ``bids`` (n, players, T, 3)."""
        opp = self.opponent_of[games]  # (n, players)
        jobs = []
        for index in np.unique(opp[opp >= 0]).tolist():
            rows, seats = np.nonzero(opp == index)
            g = games[rows]
            opponent = self._table[index]
            if opponent.batched:
                bids[rows, seats] = self._random_bids(self.game.tokens[g, seats])
            else:
                jobs.append((opponent, g, seats, np.full(len(g), K.K_BID, dtype=np.int64), (rows, seats)))
        for (rows, seats), actions in zip([j[4] for j in jobs], self._agents_act(jobs)):
            bids[rows, seats] = self.view.bid_counts(actions, self.game.tokens[games[rows], seats])

    def _agents_act(self, jobs: list[tuple]) -> list[np.ndarray]:
        """The actions of several agents, each for its games (``_agent_actions``): in threads where there are
        several, since each agent decides from its own state alone (the compiled bots and NumPy release the GIL);
        the results are those of one after the other."""
        if len(jobs) < 2 or _threads() < 2:
            return [self._agent_actions(*job[:4]) for job in jobs]
        return list(_pool().map(lambda job: self._agent_actions(*job[:4]), jobs))

    def _play_opponents(self) -> None:
        """Opponents' non-bid decisions (Guy, Spy, Apothecary) until every game waits for the learner or is over."""
        game = self.game
        while True:
            kind = game.meta[:, K.KIND]
            waiting = np.flatnonzero((kind >= K.K_GUY) & (game.meta[:, K.DSEAT] != self.seat))
            if len(waiting) == 0:
                return
            seats = game.meta[waiting, K.DSEAT]
            kinds = kind[waiting]
            values = np.zeros(len(waiting), dtype=np.int64)
            which = self.opponent_of[waiting, seats]
            jobs = []
            for index in np.unique(which).tolist():
                rows = np.flatnonzero(which == index)
                opponent = self._table[index]
                g, s, k = waiting[rows], seats[rows], kinds[rows]
                if opponent.batched:
                    allowed = self.view.choice_masks(game, g, s, k)
                    score = self.np_random.random((len(g), self.codec.C)) + allowed
                    values[rows] = self.view.engine_choices(score.argmax(1), s, k)
                else:
                    jobs.append((opponent, g, s, k, rows))
            for (_, _, s, k, rows), actions in zip(jobs, self._agents_act(jobs)):
                values[rows] = self.view.engine_choices(actions[:, 0], s, k)
            game.choose(waiting, values)

    def _random_bids(self, held: np.ndarray) -> np.ndarray:
        """Uniform random legal bids (each token to a uniformly drawn legal target) for tokens ``held`` (m, 3)."""
        L, T = self.layout, self.codec.T
        m = len(held)
        out = np.zeros((m, T, 3), dtype=np.int64)
        for t in range(3):
            top = int(held[:, t].max()) if m else 0
            if top == 0:
                continue
            targets = L.legal_targets[t]
            draw = targets[self.np_random.integers(len(targets), size=(m, top))]
            valid = np.arange(top)[None, :] < held[:, t : t + 1]
            flat = np.arange(m)[:, None] * T + draw
            out[:, :, t] = np.bincount(flat[valid], minlength=m * T).reshape(m, T)
        return out

    def _agent_actions(
        self, opponent: _Opponent, games: np.ndarray, seats: np.ndarray, kinds: np.ndarray
    ) -> np.ndarray:
        """An agent's actions (n, D) for ``games``, from observations and masks built in batch. Per game through
        ``act`` (the heuristics), or once through ``act_batch`` where the agent has it."""
        obs = self.view.observe(self.game, games, seats, kinds)
        masks = self.view.masks(self.game, games, seats, kinds)
        actions = act_batch(opponent.agent, obs, masks, kinds)
        if not self.view.legal(actions, masks).all():
            j = int(np.flatnonzero(~self.view.legal(actions, masks))[0])
            raise RuntimeError(
                f"opponent {opponent.name!r} broke the mask in env {int(games[j])} "
                f"({Decision(int(kinds[j]))}: {self.codec._why(actions[j], masks[j], Decision(int(kinds[j])))})"
            )
        return actions


def vector_env(
    num_envs: int, players: int = 3, opponents: Any = None, seat: int | None = None, **options: Any
) -> RevolutionVectorEnv:
    """``num_envs`` single-agent games stepped in batch by the batched engine (ENVIRONMENT.md, "Vectorised").

    ``opponents``: one agent spec (``"random"``, a heuristic's name, a checkpoint path, a ``mix:`` mixture) or
    ``Agent`` for every other seat, a list of one per other seat, or a league object whose ``sample(rng, slot)``
    picks the opponent of each slot of every new game (default: ``"value"``, the strongest heuristic, in every
    other seat). ``seat``: the learner's seat, or None to draw it per game. Other options: ``mask_in_obs``,
    ``keep_finished`` (finished games kept for :meth:`~RevolutionVectorEnv.pop_finished`, 0 for none) and the rule
    and reward options of :func:`revolution_env.env`. Bad input raises ``ValueError`` naming the option.
    """
    return RevolutionVectorEnv(num_envs, players=players, opponents=opponents, seat=seat, **options)
