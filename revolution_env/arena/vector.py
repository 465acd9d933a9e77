"""``revolution_env.vector_env``: many single-agent games stepped in batch (docs/environment.md §5 "Vectorised").

class
    :class:`RevolutionVectorEnv`, a ``gymnasium.vector.VectorEnv`` of ``num_envs`` games (rows: one per game and
    learner seat)
one game
    like ``gym_env``: the learner plays one seat (``seat``, or drawn per episode), ``opponents`` the others; with
    ``learner_seats=k``, the learner plays k seats of every game (drawn per game), each a row of its own (row ``r``
    a seat of game ``r // k``, ``row_game``, ``seat``), all decided in one step: a row whose seat has nothing to
    decide while another of its game's learner seats decides (Guy, Spy, Apothecary, Remove), or whose bid is
    complete in the token mode while the others' are not, gets ``Decision.NONE`` (its mask allows only the no-op)
    and its action is ignored, as in ``selfplay_vector_env``
observation
    the learner's observation vector (float32 ``Box`` with declared bounds), or with ``mask_in_obs=True`` a ``Dict``
    of ``"observation"`` and ``"action_mask"``
action
    ``MultiDiscrete(nvec)`` per row (``single_action_space``), one row per game and learner seat; with
    ``action_mode="tokens"`` ``Discrete(n)``, one token of the bid per step (``revolution_env.env.tokens``)
masks
    ``action_masks()``: bool ``(num_envs, sum(nvec))`` (token mode: ``(num_envs, n)``); also ``info["action_mask"]``
reward
    each row its seat's: 0 until the end, then ``win_loss`` (+1 / -1) or ``margin``, as the scalar env
autoreset
    ``SAME_STEP`` (Gymnasium 1.x ``AutoresetMode.SAME_STEP``): the step that ends a game returns the next game's
    first observation; the last one is in ``info["final_obs"]`` (an object array, ``None`` where no game ended) and
    ``info["final_info"]``
finished games
    ``pop_finished()``: ``(scenario, final_state)`` pairs that ``revolution scenario`` replays

Every game is held by one :class:`revolution_env.engine.batched.BatchedGame`. Opponents: ``"random"`` is played by the
engine's compiled random play (``random_bids`` and ``play_random``'s rule: each token to a uniform legal target, each
other decision uniform over its options) inside the step that takes the learner's decisions (``BatchedGame.step``: one
compiled pass over the games, side by side), each game drawing from its own generator seeded from the game's seed;
where every opponent is random, in the bid mode, a step is one pass over the games in parts side by side, each
thread reading its games' actions, stepping them and observing them in turn
(:meth:`~RevolutionVectorEnv._decide_and_observe`).
Any agent with ``act_batch(observations, masks, decisions) -> actions`` is called once per step for all the games it
plays in: a policy checkpoint in one forward pass (``PolicyAgent.act_batch``), a heuristic bot through its compiled code
(``revolution_env.agents.compiled``: the same decisions as its ``act`` on each row in turn).
Other agents are called per game through their scalar ``act(observation, info)`` on observations built in batch.
An agent's bids of a round are decided when the round begins, in the opponents' threads while the learner decides
(a bid reads only the round's state, which the learner's secret bid does not change); the games are the same on
one core as on several.

Every variant plays here, the first edition included (its Remove decisions are the learner's, or an opponent's,
like Spy and Apothecary). Not supported: rendering.
"""

from __future__ import annotations

import time
from concurrent.futures import Future
from typing import Any

import numpy as np

from revolution_env.agents.base import act_batch
from revolution_env.arena.opponents import Opponents
from revolution_env.arena.vector_base import KEEP_FINISHED, BatchedVectorEnv, Observed
from revolution_env.common.jit import in_parts
from revolution_env.common.workers import Pace, opponent_threads, thread_pool
from revolution_env.engine import batched
from revolution_env.engine import kernels as K
from revolution_env.engine.game import Decision
from revolution_env.env.batched import Rows

# --- opponents -------------------------------------------------------------------------------------------------


class _Opponent:
    """One distinct opponent: ``random`` (played in batch) or an agent called per game (or by ``act_batch``)."""

    def __init__(self, name: str, agent: Any = None) -> None:
        self.name = name
        self.agent = agent
        self.batched = agent is None


def _present(indices: np.ndarray) -> list[int]:
    """The distinct values of ``indices`` (non-negative table indices), in order: ``np.unique``'s, counted rather
    than sorted (a tenth of its time over a 4,096-game step's seats)."""
    return np.flatnonzero(np.bincount(indices.ravel())).tolist()


def _is_random(agent: Any) -> bool:
    from revolution_env.agents.base import RandomAgent

    return type(agent) is RandomAgent


class RevolutionVectorEnv(BatchedVectorEnv):
    """``num_envs`` single-agent games of Revolution! stepped in batch. See the module documentation."""

    every_seat = False  # a row per learner seat: learner_seats of each game (True: every seat, the self-play env)
    count = "num_envs"  # the number of games, in messages
    title = "vector env"
    renders = "revolution_env.env or gym_env"

    def __init__(
        self,
        num_envs: int,
        players: int = 3,
        opponents: Any = None,
        seat: int | None = None,
        mask_in_obs: bool = False,
        keep_finished: int = KEEP_FINISHED,
        learner_seats: int = 1,
        **options: Any,
    ) -> None:
        options = dict(options, players=players)
        if isinstance(learner_seats, bool) or not isinstance(learner_seats, (int, np.integer)) or learner_seats < 1:
            raise ValueError(f"learner_seats: expected a positive integer, got {learner_seats!r}")
        per_game = None if self.every_seat else int(learner_seats)  # None: every seat
        super().__init__(num_envs, self.count, options, mask_in_obs, keep_finished, per_game=per_game)
        opponent_threads()  # a REVOLUTION_THREADS that is no number of threads fails here, named
        G, P, k = self.num_games, self.players, self.per_game
        if k > P:
            raise ValueError(f"learner_seats: expected 1 to {P} (the seats of a {P}-player game), got {k}")
        if seat is not None and (
            isinstance(seat, bool) or not isinstance(seat, (int, np.integer)) or not 0 <= seat < P
        ):
            raise ValueError(f"seat: expected None or a seat from 0 to {P - 1}, got {seat!r}")
        if seat is not None and k > 1:
            raise ValueError(f"seat: the {k} learner seats of each game are drawn per game; give seat=None")
        self.fixed_seat = None if seat is None else int(seat)
        self.learner_seats = k
        self.seat = self.row_seat  # each row's seat: row r is one of the learner's seats of game r // learner_seats
        self.decisions_made = 0  # rows stepped with a real decision (not NONE), since construction
        # the token mode: whether a row's bid is complete (with several learner seats, it waits for the others')
        self._complete = np.zeros(self.num_envs, dtype=bool)
        # opponents: a table of distinct opponents, and per game and absolute seat an index into it (-1: learner)
        self._table: list[_Opponent] = [_Opponent("random")]
        self._index: dict[int, int] = {}
        # one agent per distinct spec, asked for all its games at once
        self.opponents = Opponents(opponents, P, options, shared=True, others=P - k)
        self._fixed = [] if self.opponents.per_game else [self._register(*pair) for pair in self.opponents.fixed]
        self.opponent_of = np.full((G, P), -1, dtype=np.int64)
        self._everyone = np.arange(G)  # every game
        # opponents' bids decided while the learner decides (_decide_bids_early): per game and seat the action, whether
        # the game has them, and the jobs still running
        self._early = np.zeros((G, P, len(self.codec.nvec)), dtype=np.int64)
        self._has_early = np.zeros(G, dtype=bool)
        self._pending: list[tuple[np.ndarray, np.ndarray, Future]] = []
        # the random opponents' generators, one per game, seeded from the game's seed (kernels.random_states)
        self._random_states = np.zeros(G, dtype=np.int64)
        # whether the agents decide in the opponents' threads this step: the faster way from one step to the next
        # (Pace), since beside a busy process the hand-offs can cost more than the threads give
        self._pace = Pace(opponent_threads() >= 2)
        self._threads = self._pace.mode
        self._step_start: float | None = None

    # --- opponents ---------------------------------------------------------------------------------------------

    def _register(self, name: str, agent: Any) -> int:
        """The table index of an opponent (``Opponents.sample``'s pair): 0 for the random agent, played in batch."""
        if _is_random(agent):
            return 0
        key = id(agent)
        if key not in self._index:
            if not hasattr(agent, "act_batch"):
                self._warn_once(
                    f"per-game {name}",
                    f"opponents: {name!r} has no act_batch(observations, masks, decisions): it is played game "
                    "by game through act(), at its own speed",
                )
            self._index[key] = self._add(_Opponent(name, agent))
        return self._index[key]

    def _add(self, opponent: _Opponent) -> int:
        """Put a new opponent in the table, its generator seeded from the env's: one that a league brings in after
        ``reset(seed)`` plays the same games for the same seed (``reset`` reseeds those already there)."""
        if hasattr(opponent.agent, "reset"):
            opponent.agent.reset(int(self.np_random.integers(2**31)))
        self._table.append(opponent)
        return len(self._table) - 1

    def _start_games(self, games: np.ndarray) -> None:
        """New games in ``games``: seeds, the learner's seats, the opponents of the other seats."""
        rng = self.np_random
        k = len(games)
        if k == 0:
            return
        seeds = rng.integers(2**63 - 1, size=k)
        self.game.reset(games, seeds)
        self._random_states[games] = K.random_states(seeds)
        rows = self._rows(games)
        self.mode.clear(rows.ravel())
        self._complete[rows.ravel()] = False
        self._has_early[games] = False
        P, mine = self.players, self.learner_seats
        if mine == 1:
            if self.fixed_seat is None:
                self.seat[games] = rng.integers(P, size=k)
            else:
                self.seat[games] = self.fixed_seat
            learner = np.zeros((k, P), dtype=bool)
            learner[np.arange(k), self.seat[games]] = True
        elif mine == P:  # every seat: nothing to draw
            learner = np.ones((k, P), dtype=bool)
        else:  # a uniform draw of the seats, each game's rows in seat order
            learner = np.zeros((k, P), dtype=bool)
            learner[np.arange(k)[:, None], np.argsort(rng.random((k, P)), axis=1)[:, :mine]] = True
        self.seat[rows.ravel()] = np.nonzero(learner)[1]
        others = np.nonzero(~learner)[1].reshape(k, P - mine)  # the other seats of each game, in order
        for slot in range(P - mine):
            absolute = others[:, slot]
            if not self.opponents.per_game:
                self.opponent_of[games, absolute] = self._fixed[slot]
            else:
                picks = [self._register(*self.opponents.sample(rng, slot)) for _ in range(k)]
                self.opponent_of[games, absolute] = picks
        self.opponent_of[games[:, None], np.nonzero(learner)[1].reshape(k, mine)] = -1

    def opponent_names(self) -> list[str]:
        """The names of the opponents met so far (a spec, an agent's name, or a league's name for its member);
        ``info["final_info"]["opponents"]`` indexes this list."""
        return [o.name for o in self._table]

    # --- the VectorEnv API (the rest in BatchedVectorEnv) ------------------------------------------------------

    def bid_mode_view(self, rows: Any = None) -> tuple[np.ndarray, np.ndarray]:
        """What an agent written for the bid mode reads in the learner's seats of ``rows`` (default: every row; row g
        is game g with one learner seat): observations (without the bid under construction, in the token mode) and
        the bid mode's flat masks (``Core.bid_mode_view``'s batch form; the teacher of behaviour cloning reads
        them)."""
        r = np.arange(self.num_envs) if rows is None else np.asarray(rows, dtype=np.int64)
        seats, kinds = self.seat[r], self._kinds[r]
        return self.view.observe_and_mask(self.game, self.row_game[r], seats, kinds)

    @property
    def decisions(self) -> np.ndarray:
        """The :class:`Decision` of every row now (``NONE``, 0, where its seat has nothing to decide: another of the
        learner's seats decides, or its bid is complete and waits for theirs)."""
        return self._kinds.copy()

    # --- inside ------------------------------------------------------------------------------------------------

    def _seeded(self) -> None:
        for opponent in self._table[1:]:  # stochastic bots draw from their own generators: seed them too
            if hasattr(opponent.agent, "reset"):
                opponent.agent.reset(int(self._np_random.integers(2**31)))

    def _where(self, row: int) -> str:
        if self.learner_seats == 1:
            return f"env {row} (seat {int(self.seat[row])})"
        return f"row {row} (game {int(self.row_game[row])}, seat {int(self.seat[row])})"

    def _rows_are(self) -> str:
        if self.learner_seats == 1:
            return "one row per game"
        return f"one row per learner seat, {self.num_games} games x {self.learner_seats} seats"

    def _decision_kinds(self) -> np.ndarray:
        kinds = super()._decision_kinds()
        kinds[self._complete] = K.K_NONE  # a complete bid waits for the other learner seats' of its game
        return kinds

    def reset(self, *, seed: int | None = None, options: dict | None = None) -> tuple[Any, dict[str, Any]]:
        """``BatchedVectorEnv.reset``; opponents' bids decided for the games before are dropped."""
        self._drop_early()  # before the opponents are reseeded: bids decided from the old draws are dropped
        self._step_start = None  # the time to the first step is not a step's
        return super().reset(seed=seed, options=options)

    def step(self, actions: Any) -> tuple[Any, np.ndarray, np.ndarray, np.ndarray, dict[str, Any]]:
        """``BatchedVectorEnv.step``. The agents among the opponents decide in the opponents' threads, while the
        learner decides, or one after the other here, whichever makes the faster steps now (``workers.Pace``, timed
        from one step's start to the next, the learner's own work included): the same games either way."""
        now = time.perf_counter()
        if self._step_start is not None:
            self._pace.took(now - self._step_start)
        self._step_start = now
        self._threads = self._pace.next()
        kinds = self._kinds  # the decisions of this step (the step observes the next ones into a new array)
        out = super().step(actions)
        self.decisions_made += int(np.count_nonzero(kinds))  # K_NONE is 0
        return out

    def close_extras(self, **kwargs: Any) -> None:
        self._drop_early()

    def _observe(self, observed: Observed | None = None, rows: np.ndarray | None = None) -> Any:
        obs = super()._observe(observed, rows)
        self._decide_bids_early()
        return obs

    def __getstate__(self) -> dict[str, Any]:
        """A pickled or copied env holds the opponents' bids decided early, not the threads deciding them."""
        self._collect_early()
        return self.__dict__.copy()

    def _check(self, actions: np.ndarray, kinds: np.ndarray) -> np.ndarray:
        """In the bid mode, the actions checked and read in one pass (``BatchedView.decider``): each legal bid counted
        into the step's bids, each legal choice into its values, for :meth:`_decide`."""
        if self.tokens is not None:
            return super()._check(actions, kinds)
        count = self.game.count_type
        self._bids = np.empty((self.num_games, self.players, self.codec.T, 3), dtype=count)  # rows unread but those
        self._values = np.zeros(self.num_games, dtype=np.int64)  # of deciding games and seats
        rows = Rows(self.row_game, self.seat, kinds)
        ok, part = self.view.decider(actions, self._masks, rows, self.game.tokens, (self._bids, self._values))
        in_parts(self.num_envs, part)
        return ok

    def _decide_and_observe(self, actions: np.ndarray, kinds: np.ndarray) -> Observed | None:
        """Where every opponent is random and bids are whole actions (the bid mode; not the first edition, whose deck
        is drawn between a step's choices; illegal actions that end the game, not raise): the actions checked and
        read, the games stepped and observed in one pass over the games, in parts side by side (one hand-off
        between threads a step instead of three, and each part's games stepped and observed while in its core's
        cache). The same games as the passes apart, but for D9's coin: with two players, the game of an illegal bid
        flips it too (its flip is drawn before the bids are read, for every game waiting for bids)."""
        all_random = len(self._table) == 1  # the table's first opponent is "random"
        if not all_random or self.tokens is not None or self.layout.card_space >= 0 or self.config.illegal == "raise":
            return None
        if self.learner_seats > 1:  # one row per game here
            return None
        game, view, everyone, seat = self.game, self.view, self._everyone, self.seat
        n = self.num_envs
        bids = np.empty((n, self.players, self.codec.T, 3), dtype=game.count_type)  # rows unread but the bidders'
        values = np.zeros(n, dtype=np.int64)
        outcome = np.full(n, int(K.Outcome.DECIDED), dtype=np.int64)
        obs = np.empty((n, view.ol.size), dtype=np.float32)  # each row zeroed by the loop that fills it
        masks = np.empty((n, self.codec.size), dtype=bool)
        now = np.empty(n, dtype=np.int64)  # the decisions faced after the step
        ok, decide = view.decider(actions, self._masks, Rows(everyone, seat, kinds), game.tokens, (bids, values))
        run, refused = game.step_parts(kinds == K.K_BID, self.opponent_of == 0, self._random_states)
        observe = view.observer(game, Rows(everyone, seat, now), obs, masks, fresh=True)

        def part(lo: int, hi: int) -> None:
            decide(lo, hi)
            deciding = ok[lo:hi] & (kinds[lo:hi] != K.K_NONE)
            if deciding.all():
                run(everyone[lo:hi], bids[lo:hi], values[lo:hi], outcome[lo:hi])
            else:  # a row with an illegal action: its game is left as it was
                g = lo + np.flatnonzero(deciding)
                done = np.empty(len(g), dtype=np.int64)
                run(g, bids[g], values[g], done)
                outcome[g] = done
            observe(lo, hi)

        in_parts(n, part, batched.GAME_ROWS)
        refused(everyone, outcome, kinds, values)
        return Observed(~ok, obs, masks, now)

    def _decide(self, actions: np.ndarray, kinds: np.ndarray, playing: np.ndarray) -> None:
        """The learner's bids (with its opponents', once the learner's bids of the game are complete) and other
        decisions; opponents then play until the learner is asked again."""
        self._collect_early()  # the opponents' early bids, before anything changes a game
        if self.tokens is None:
            games, bids, values = self._read(kinds, playing)
        else:
            games, bids, values = self._place_tokens(actions, kinds, playing)
        random_seat = self.opponent_of == 0
        self.game.step(games, bids, values, random_seat, self._random_states)  # random opponents' decisions there
        self._play_opponents(random_seat)

    def _read(self, kinds: np.ndarray, playing: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The bid mode: the games that decide, their bids and their choices as ``BatchedGame.step`` takes them, from
        those :meth:`_check` read (per game), the agents' bids added."""
        deciding = playing & (kinds != K.K_NONE)
        every = bool(deciding.all())
        if every and self.learner_seats == 1:
            games = self._everyone
        else:  # a game decides where a row of it does (all its learner seats bid at once; one of them chooses)
            every = False
            games = np.flatnonzero(np.bincount(self.row_game[deciding], minlength=self.num_games))
        bids, values = self._bids, self._values
        if len(self._table) > 1:  # agents among the opponents: their bids of the round, decided early
            bidding = games[self.game.kind[games] == K.K_BID]
            self._opponent_bids(bidding, bids, bidding)
        if not every:
            bids, values = bids[games], values[games]
        return games, bids, values

    def _place_tokens(
        self, actions: np.ndarray, kinds: np.ndarray, playing: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The token mode: each bidding row's token placed, and the games whose bids are complete or that choose,
        with their bids (the agents' added) and their choices as ``BatchedGame.step`` takes them."""
        game, view = self.game, self.view
        rows = np.arange(self.num_envs)
        bidding = rows[playing & (kinds == K.K_BID)]
        choosing = rows[playing & (kinds >= K.K_GUY)]  # one row per game at most: its deciding seat's
        held = game.tokens[self.row_game[bidding], self.seat[bidding]]
        self._complete[bidding] = self.mode.place_many(bidding, actions[bidding], held)  # one token placed
        # the games whose learner seats' bids are all complete now
        bid_games = np.unique(self.row_game[bidding])
        bid_games = bid_games[self._complete[self._rows(bid_games)].all(1)]
        choose_games = self.row_game[choosing]
        # the games that decide, with one array of bids (the rows of the games that choose unread) and one of choices
        games, row = self._deciding(bid_games, choose_games)
        bids = np.empty((len(games), self.players, self.codec.T, 3), dtype=game.count_type)
        values = np.zeros(len(games), dtype=np.int64)
        if len(bid_games):
            complete = self._rows(bid_games).ravel()
            held = game.tokens[self.row_game[complete], self.seat[complete]]
            at = row[self.row_game[complete]]
            self.mode.counts_into(view, complete, actions[complete], held, bids, at, self.seat[complete])
            self.mode.clear(complete)
            self._complete[complete] = False
            self._opponent_bids(bid_games, bids, row[bid_games])
        if len(choosing):
            choices = self.mode.choices_many(actions[choosing])
            values[row[choose_games]] = view.engine_choices(choices, self.seat[choosing], kinds[choosing])
        return games, bids, values

    def _final_extras(self) -> dict[str, np.ndarray]:
        # the other seats' opponents, in seat order, as indices into opponent_names(): the fixed ones for every game
        # alike (slot k is the k-th other seat), else those drawn for each game
        if not self.opponents.per_game:
            return {"opponents": np.tile(np.array(self._fixed, dtype=np.int64), (self.num_envs, 1))}
        others = self.players - self.learner_seats
        if self.learner_seats == 1:
            return {"opponents": self.opponent_of[self.opponent_of >= 0].reshape(self.num_envs, others).copy()}
        opp = self.opponent_of[self.row_game]  # each row its game's
        return {"opponents": opp[opp >= 0].reshape(self.num_envs, others)}

    def _opponent_bids(self, games: np.ndarray, bids: np.ndarray, at: np.ndarray) -> None:
        """The agents' bids in ``games`` (all waiting for bids), written into the rows ``at`` of ``bids`` (players, T,
        3 each): decided when the round began (:meth:`_decide_bids_early`). The random opponents' rows are drawn by
        the engine (``BatchedGame.step``)."""
        if not self._has_early[games].all():  # never expected: every game that bids waited for it at _observe
            raise RuntimeError(f"vector env: no early bids for games {games[~self._has_early[games]].tolist()}")
        opp = self.opponent_of[games]  # (n, players)
        for index in _present(opp[opp > 0]):
            rows, seats = np.nonzero(opp == index)
            g = games[rows]
            self.view.bid_counts_into(bids, at[rows], seats, self._early[g, seats], self.game.tokens[g, seats])
        self._has_early[games] = False

    def _decide_bids_early(self) -> None:
        """The agents' bids in the games that now wait for the learner's bid (and have none yet): started in the
        opponents' threads, so that they are decided while the learner decides (on one usable core, decided here
        and now); :meth:`_decide` collects them before it changes a game. Bids are secret and simultaneous: an
        opponent's bid reads the state of the bid round, which the learner's bid does not change. Deciding them
        when the round begins, whatever the threads, keeps the games independent of the cores (the token mode's
        games finish their bids at different steps; each agent decides its games of a round in one batch)."""
        bidding = self._kinds == K.K_BID
        if self.learner_seats > 1:  # per game: one of its rows bids (the others' bids may be complete)
            bidding = bidding.reshape(self.num_games, self.learner_seats).any(1)
        waiting = np.flatnonzero(bidding & ~self._has_early)
        if len(waiting) == 0:
            return
        self._has_early[waiting] = True
        opp = self.opponent_of[waiting]
        for index in _present(opp[opp >= 0]):
            opponent = self._table[index]
            if opponent.batched:  # random: drawn from its game's generator when the bids are in
                continue
            rows, seats = np.nonzero(opp == index)
            g = waiting[rows]
            job = (opponent, g, seats, np.full(len(g), K.K_BID, dtype=np.int64))
            self._pending.append((g, seats, self._start(job)))

    def _collect_early(self) -> None:
        """Wait for the bids :meth:`_decide_bids_early` started and keep them (an opponent's error is raised here)."""
        pending, self._pending = self._pending, []
        for g, seats, future in pending:
            self._early[g, seats] = future.result()

    def _drop_early(self) -> None:
        """Wait for the bids under way and forget every early bid (a reset, a close)."""
        pending, self._pending = self._pending, []
        for _, _, future in pending:
            future.exception()  # waits; an error of a dropped bid is dropped with it
        self._has_early[:] = False

    def _agents_act(self, jobs: list[tuple]) -> list[np.ndarray]:
        """The actions of several agents, each for its games (``_agent_actions``): in threads where there are
        several (:meth:`_start`); the results are those of one after the other."""
        if len(jobs) < 2:
            return [self._agent_actions(*job[:4]) for job in jobs]
        return [future.result() for future in [self._start(job) for job in jobs]]

    def _start(self, job: tuple) -> Future:
        """An agent's actions for its games (``_agent_actions(*job[:4])``): in the opponents' threads where two
        cores or more are usable and they make the faster steps now (:meth:`step`), since each agent decides from
        its own state alone (the compiled bots and NumPy release the GIL); else decided now. The result, or the
        agent's error, is the future's."""
        if self._threads and opponent_threads() >= 2:
            return thread_pool().submit(self._agent_actions, *job[:4])
        future: Future = Future()
        try:
            future.set_result(self._agent_actions(*job[:4]))
        except Exception as exc:
            future.set_exception(exc)
        return future

    def _play_opponents(self, random_seat: np.ndarray) -> None:
        """Opponents' non-bid decisions (Guy, Spy, Apothecary, Remove) until every game waits for the learner or is
        over: the agents' in one batch per agent and pass, the random opponents' that follow them in compiled loops
        (``BatchedGame.play_random``, game by game until another seat decides; those that follow the learner's
        decision were played in ``BatchedGame.step``)."""
        game = self.game
        everyone = self._everyone
        while True:
            choosing = everyone[game.kind >= K.K_GUY]
            waiting = choosing[self.opponent_of[choosing, game.decider[choosing]] >= 0]  # an opponent decides
            if len(waiting) == 0:
                return
            seats = game.decider[waiting]
            which = self.opponent_of[waiting, seats]
            if (which == 0).any():
                game.play_random(waiting[which == 0], random_seat, self._random_states)
                if (which == 0).all():
                    continue
                waiting, seats, which = waiting[which != 0], seats[which != 0], which[which != 0]
            kinds = game.kind[waiting]
            values = np.zeros(len(waiting), dtype=np.int64)
            jobs = []
            for index in _present(which):
                rows = np.flatnonzero(which == index)
                jobs.append((self._table[index], waiting[rows], seats[rows], kinds[rows], rows))
            for (_, _, s, k, rows), actions in zip(jobs, self._agents_act(jobs)):
                values[rows] = self.view.engine_choices(actions[:, 0], s, k)
            game.choose(waiting, values)

    def _agent_actions(
        self, opponent: _Opponent, games: np.ndarray, seats: np.ndarray, kinds: np.ndarray
    ) -> np.ndarray:
        """An agent's actions (n, D) for ``games``, from observations and masks built in batch. Per game through
        ``act`` (the heuristics), or once through ``act_batch`` where the agent has it."""
        obs, masks = self.view.observe_and_mask(self.game, games, seats, kinds)
        actions = act_batch(opponent.agent, obs, masks, kinds)
        if not self.view.legal(actions, masks).all():
            j = int(np.flatnonzero(~self.view.legal(actions, masks))[0])
            raise RuntimeError(
                f"opponent {opponent.name!r} broke the mask in env {int(games[j])} "
                f"({Decision(int(kinds[j]))}: {self.codec._why(actions[j], masks[j], Decision(int(kinds[j])))})"
            )
        return actions


def vector_env(
    num_envs: int,
    players: int = 3,
    opponents: Any = None,
    seat: int | None = None,
    learner_seats: int = 1,
    **options: Any,
) -> RevolutionVectorEnv:
    """``num_envs`` single-agent games stepped in batch by the batched engine (docs/environment.md §5 "Vectorised").

    ``opponents``: one agent spec (``"random"``, a heuristic's name, a checkpoint path, a ``mix:`` mixture) or
    ``Agent`` for every other seat, a list of one per other seat, or a league object whose ``sample(rng, slot)``
    picks the opponent of each slot of every new game (default: ``"value"``, the strongest heuristic, in every
    other seat). ``seat``: the learner's seat, or None to draw it per game. ``learner_seats``: the seats of each
    game the learner takes, drawn per game, each a row (``num_envs * learner_seats`` rows, row ``r`` a seat of game
    ``r // learner_seats``), all decided in one call; ``opponents`` then fill the ``players - learner_seats`` others
    (``players``: every seat the learner, as ``selfplay_vector_env``). Other options: ``mask_in_obs``,
    ``keep_finished`` (finished games kept for :meth:`~RevolutionVectorEnv.pop_finished`, 0 for none) and the rule
    and reward options of :func:`revolution_env.env`. Bad input raises ``ValueError`` naming the option.
    """
    return RevolutionVectorEnv(
        num_envs, players=players, opponents=opponents, seat=seat, learner_seats=learner_seats, **options
    )
