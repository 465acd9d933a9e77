"""``revolution_env.gym_env``: one seat of a game for a single learner, the other seats played by agents
(:func:`gym_env` says what it takes and gives).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import gymnasium
import numpy as np

from revolution_env.agents.base import Agent
from revolution_env.arena.opponents import Opponents
from revolution_env.engine.game import Decision, check_seed
from revolution_env.env import raw_env
from revolution_env.env.core import ILLEGAL_REWARD, check_illegal
from revolution_env.env.encoding import IllegalActionError


class SingleAgentEnv(gymnasium.Env):
    """One seat of a Revolution! game for a learner (:func:`gym_env` documents it)."""

    metadata = {"render_modes": ["ansi", "rgb_array"], "render_fps": 1}

    def __init__(
        self,
        players: int = 3,
        opponents: Any = None,
        seat: int | None = None,
        mask_in_obs: bool = False,
        action_mode: str = "bid",
        **options: Any,
    ) -> None:
        super().__init__()
        if not isinstance(mask_in_obs, bool):
            raise ValueError(f"mask_in_obs: expected true or false, got {mask_in_obs!r}")
        self.illegal = options.pop("illegal", "terminate")
        # checks every option; raises on illegal actions
        self.game_env = raw_env(players=players, action_mode=action_mode, **options)
        self.illegal = check_illegal(self.illegal)
        self.render_mode = self.game_env.render_mode
        self.players = len(self.game_env.possible_agents)
        if seat is not None and (isinstance(seat, bool) or not isinstance(seat, (int, np.integer))
                                 or not 0 <= seat < self.players):  # fmt: skip
            raise ValueError(f"seat: expected None or a seat from 0 to {self.players - 1}, got {seat!r}")
        self.fixed_seat = None if seat is None else int(seat)
        self.league = Opponents(opponents, players, options)  # each seat's own agent: reseeded every game
        core = self.game_env.core
        self.layout = core.obs_layout
        self.mask_in_obs = mask_in_obs
        self.observation_space = core.mode.observation_space(with_mask=mask_in_obs)
        self.action_space = core.action_space()
        self.learner: str = self.game_env.possible_agents[0]
        self.opponents: dict[str, tuple[str, Agent]] = {}
        self._reward = 0.0
        self._illegal = 0

    # --- the gymnasium API -------------------------------------------------------------------------------------

    def reset(self, seed: int | None = None, options: dict | None = None) -> tuple[Any, dict[str, Any]]:
        super().reset(seed=check_seed(seed))
        rng = self.np_random
        agents = self.game_env.possible_agents
        me = self.fixed_seat if self.fixed_seat is not None else int(rng.integers(self.players))
        self.learner = agents[me]
        others = [a for a in agents if a != self.learner]
        self.opponents = {a: self.league.sample(rng, slot) for slot, a in enumerate(others)}
        game_seed = int(rng.integers(2**31))
        for i, (_, agent) in enumerate(self.opponents.values()):
            if hasattr(agent, "reset"):  # an agent may be anything with act()
                agent.reset(game_seed + 1 + i)
        self.game_env.reset(seed=game_seed)
        self._reward, self._illegal = 0.0, 0
        self._play_opponents()
        return self._observation(), self._info()

    def step(self, action: Any) -> tuple[Any, float, bool, bool, dict[str, Any]]:
        env = self.game_env
        if self._over() or env.agent_selection != self.learner:
            raise RuntimeError("step() called when the learner has no decision (call reset() after the end)")
        try:
            self._step(action)
        except IllegalActionError:
            if self.illegal == "raise":
                raise
            self._illegal = 1  # PettingZoo classic's convention: the game ends, the offender gets -1
            self._reward = 0.0
            return self._observation(), ILLEGAL_REWARD, True, False, {**self._info(), **self._final_info()}
        self._play_opponents()
        reward, self._reward = self._reward, 0.0
        terminated = bool(env.terminations[self.learner])
        truncated = bool(env.truncations[self.learner])
        info = self._info()
        if terminated or truncated:
            info.update(self._final_info())
        return self._observation(), float(reward), terminated, truncated, info

    def action_masks(self) -> np.ndarray:
        """The learner's mask (flat bool, the form MaskablePPO takes); all of it after the end."""
        if self._over():
            return np.ones(self.game_env.core.mask_size, dtype=bool)
        return self.game_env.core.mask(self.game_env.core.seat_of[self.learner]).astype(bool)

    def render(self) -> Any:
        return self.game_env.render()

    def learner_view(self) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
        """The learner's observation and info as the environment gives them to an agent: what a teacher acting
        for the learner reads."""
        return self.game_env.observe(self.learner), self.game_env.infos[self.learner]

    # --- inside a game -----------------------------------------------------------------------------------------

    def _over(self) -> bool:
        env = self.game_env
        return self._illegal or bool(env.terminations[self.learner] or env.truncations[self.learner])

    def _step(self, action: Any) -> None:
        """One AEC step; the learner's share of its rewards is all the learner is paid (never an opponent's)."""
        self.game_env.step(action)
        self._reward += self.game_env.rewards[self.learner]

    def _play_opponents(self) -> None:
        env = self.game_env
        core = env.core
        while not self._over() and env.agent_selection != self.learner:
            name = env.agent_selection
            agent = self.opponents[name][1]
            # the agent decides as in the bid mode; in the token mode its bid is placed token by token
            seat = core.seat_of[name]
            for a in core.token_actions(seat, agent.act(core.bid_mode_view(seat), env.infos[name])):
                self._step(a)

    def _observation(self) -> Any:
        vector = self.game_env.observe(self.learner)["observation"]
        if self.mask_in_obs:
            return {"observation": vector, "action_mask": self.action_masks().astype(np.int8)}
        return vector

    def _info(self) -> dict[str, Any]:
        infos = self.game_env.infos.get(self.learner, {})
        return {
            "decision": infos.get("decision", Decision.NONE) if not self._illegal else Decision.NONE,
            "illegal_action": self._illegal,
            "action_mask": self.action_masks(),
        }

    def _final_info(self) -> dict[str, Any]:
        game = self.game_env.game
        seat = self.game_env.core.seat_of[self.learner]
        final = game.final
        return {
            "seat": seat,
            "opponents": [self.opponents[a][0] for a in self.game_env.possible_agents if a != self.learner],
            "won": final is not None and seat in final["winners"],
            "support": int(final["support"][seat]) if final is not None else 0,
            "rounds": int(game.round),
        }


def gym_env(
    players: int = 3,
    opponents: Any = None,
    seat: int | None = None,
    mask_in_obs: bool = False,
    **options: Any,
) -> SingleAgentEnv:
    """One seat of a game for a single learner, the other seats played by agents: a ``gymnasium.Env``, also
    ``gymnasium.make("revolution_env:Revolution-v2", players=3, opponents=[...])``.

    ``opponents``: one agent spec (``"random"``, a heuristic's name, a checkpoint path, a ``mix:`` mixture, a
    ``search:PATH``; :func:`~revolution_env.load_agent`) or ``Agent`` for every other seat, a list of them (one per
    other seat, in seat order), or a league, whose ``sample(rng, slot) -> (name, agent)`` picks each new game's
    opponents (``revolution_env.arena.opponents``); default: ``value``, the strongest heuristic, in every other
    seat. ``seat=None`` draws the learner's seat each episode. Every other option is :func:`~revolution_env.env`'s.

    observation
        The learner's observation vector, raw counts: a float32 ``Box`` whose bounds hold every observation
        (``ObservationLayout.bounds``); with ``mask_in_obs=True`` a ``Dict`` of ``"observation"`` and
        ``"action_mask"``.
    action
        ``MultiDiscrete(nvec)`` (``MaskedMultiDiscrete``, whose ``sample`` takes the flat mask), or ``Discrete(n)``
        with ``action_mode="tokens"`` (a bid placed token by token, ``revolution_env.env.tokens``).
    mask
        ``action_masks()`` (flat bool, MaskablePPO's form; through ``gymnasium.make``,
        ``env.unwrapped.action_masks()``) and ``info["action_mask"]``.
    step
        One decision of the learner's: the opponents act until the learner is asked again. The step that ends the
        game carries ``seat``, ``opponents`` (their names), ``won``, ``support`` and ``rounds`` in its info.
    reward
        The learner seat's own: 0 until the end, then ``win_loss`` (+1 / -1) or ``margin``.
    episode
        One game: ``terminated`` when it is over (or ended by an illegal action: -1 and
        ``info["illegal_action"] == 1`` with ``illegal="terminate"``, the default; ``IllegalActionError`` with
        ``illegal="raise"``), ``truncated`` at ``max_rounds``.
    """
    return SingleAgentEnv(players, opponents, seat, mask_in_obs, **options)


__all__: Sequence[str] = ("SingleAgentEnv", "gym_env")
