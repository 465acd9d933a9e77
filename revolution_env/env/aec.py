"""The AEC environment and its wrapper stack."""

from __future__ import annotations

from typing import Any

import numpy as np
from pettingzoo import AECEnv
from pettingzoo.utils import wrappers
from pettingzoo.utils.env_logger import EnvLogger

from revolution_env.engine.game import OVER, check_seed
from revolution_env.env.core import ENV_NAME, ILLEGAL_REWARD, RENDER_MODES, Core, CoreAccess, EnvConfig
from revolution_env.env.encoding import IllegalActionError


class raw_env(CoreAccess, AECEnv):
    """Revolution! as an AEC environment without wrappers. It takes the options of :func:`env`, ``illegal`` only as
    ``"raise"``: an illegal action raises :class:`IllegalActionError` before anything changes."""

    metadata = {"name": ENV_NAME, "render_modes": list(RENDER_MODES), "is_parallelizable": False, "render_fps": 1}

    def __init__(self, **options: Any) -> None:
        super().__init__()
        if options.get("illegal", "raise") != "raise":
            raise ValueError(f"illegal: raw_env always raises, got {options['illegal']!r} (env() takes 'terminate')")
        self.config = EnvConfig.from_options({**options, "illegal": "raise"})
        self.render_mode = self.config.render_mode
        self.core = Core(self.config)
        self.possible_agents = list(self.core.agents)
        self.agents = []
        self.observation_spaces = {a: self.core.observation_space() for a in self.possible_agents}
        self.action_spaces = {a: self.core.action_space() for a in self.possible_agents}
        self._seat = self.core.seat_of

    def reset(self, seed: int | None = None, options: dict | None = None) -> None:
        seed = check_seed(seed)  # before anything changes
        if seed is not None:  # None: the game draws a fresh seed (and records it, so the game can be exported)
            for i, agent in enumerate(self.possible_agents):
                self.action_spaces[agent].seed(seed + 1 + i)
        self.core.reset(seed)
        self.agents = list(self.possible_agents)
        self.rewards = dict.fromkeys(self.agents, 0.0)
        self._cumulative_rewards = dict.fromkeys(self.agents, 0.0)
        self.terminations = dict.fromkeys(self.agents, False)
        self.truncations = dict.fromkeys(self.agents, False)
        self.infos = {a: {} for a in self.agents}
        self._update_infos()
        self.agent_selection = self.agents[self.core.next_seat()]

    def observe(self, agent: str) -> dict[str, np.ndarray]:
        return self.core.observe(self._seat[agent])

    def step(self, action: Any) -> None:
        if not self.agents:
            raise RuntimeError("step: the game is over and every agent is done; call reset() to start a new one")
        agent = self.agent_selection
        if self.terminations[agent] or self.truncations[agent]:
            if action is not None:
                raise ValueError(
                    f"step: the game is over and {agent} is done; step(None) for each agent ends it, reset() starts "
                    f"a new game, got the action {type(action).__name__}"
                )
            self._was_dead_step(action)
            return
        self.core.act(self._seat[agent], action, agent)  # raises IllegalActionError before changing anything
        self._cumulative_rewards[agent] = 0.0
        self._clear_rewards()
        game = self.core.game
        if game.phase == OVER:
            rewards = self.core.rewards()
            for a in self.agents:
                self.rewards[a] = rewards[self._seat[a]]
            flags = self.truncations if game.truncated else self.terminations
            for a in self.agents:
                flags[a] = True
        self._update_infos()
        self.agent_selection = self.agents[self.core.next_seat()] if game.phase != OVER else self.agents[0]
        self._accumulate_rewards()
        if self.render_mode == "human":
            self.render()

    def _update_infos(self) -> None:
        infos = self.core.infos()
        for a in self.agents:
            self.infos[a] = infos[self._seat[a]]


class TerminateIllegalWrapper(wrappers.BaseWrapper):
    """PettingZoo's TerminateIllegalWrapper for a MultiDiscrete mask: an action that breaks the mask ends the
    game (terminated), the offender gets ``illegal_reward`` and everyone else 0, and the offender's info says
    ``illegal_action: 1``."""

    def __init__(self, env: AECEnv, illegal_reward: float = ILLEGAL_REWARD) -> None:
        super().__init__(env)
        self._illegal_reward = illegal_reward

    # The attributes every step reads, forwarded directly (PettingZoo's __getattr__ fallback is slow).
    agent_selection = property(lambda self: self.env.agent_selection)
    agents = property(lambda self: self.env.agents)
    terminations = property(lambda self: self.env.terminations)
    truncations = property(lambda self: self.env.truncations)
    infos = property(lambda self: self.env.infos)
    rewards = property(lambda self: self.env.rewards)
    _cumulative_rewards = property(lambda self: self.env._cumulative_rewards)
    num_agents = property(lambda self: len(self.env.agents))

    def last(self, observe: bool = True):
        return self.env.last(observe)

    def step(self, action: Any) -> None:
        raw = self.env.unwrapped
        agent = self.agent_selection
        if raw.agents and not (raw.terminations[agent] or raw.truncations[agent]):
            try:
                self.env.step(action)  # the raw env checks the action before it changes anything
            except IllegalActionError:
                EnvLogger.warn_on_illegal_move()
                raw._cumulative_rewards[agent] = 0.0
                raw.terminations = dict.fromkeys(raw.agents, True)
                raw.truncations = dict.fromkeys(raw.agents, False)
                raw.rewards = dict.fromkeys(raw.agents, 0.0)
                raw.rewards[agent] = float(self._illegal_reward)
                raw.infos[agent] = {**raw.infos[agent], "illegal_action": 1}
                raw._accumulate_rewards()
                raw._deads_step_first()
            return
        super().step(action)


class OrderEnforcingWrapper(wrappers.OrderEnforcingWrapper):
    """PettingZoo's OrderEnforcingWrapper with ``last()`` answered by the wrapped env in one call (the same
    checks, without a chain of attribute look-ups on every step)."""

    def last(self, observe: bool = True):
        if not self._has_reset:
            EnvLogger.error_observe_before_reset()
        return self.env.last(observe)


def env(**options: Any) -> AECEnv:
    """Revolution! as a PettingZoo AEC environment, with PettingZoo's usual safety wrappers (calls out of order
    raise).

    Also ``pettingzoo.make("aec", "revolution_v2", **options)`` once ``revolution_env`` is imported. Agents are
    ``player_0`` ... ``player_{n-1}``; each is asked one decision at a time (``infos[agent]["decision"]``, a
    :class:`~revolution_env.Decision`), acts with a masked ``MultiDiscrete`` (the flat mask is
    ``observation["action_mask"]``) and observes a ``Dict`` of a float32 vector and that mask. The interface in
    full (decisions, the action encoding, masks, observations, rewards, versions) is docs/environment.md.

    Options, taken by :func:`~revolution_env.parallel_env`, :func:`~revolution_env.gym_env`,
    :func:`~revolution_env.vector_env` and :func:`~revolution_env.selfplay_vector_env` too; all are keywords with
    defaults, and an unknown option or a bad value raises ``ValueError`` naming it:

    ``players``
        2 (the puppet variant: Guy Fawkes is a seat that the rules play, not an agent), 3 (default) or 4.
    ``bid_refunds``
        ``True`` or ``False``. Always on with 2 players and in the first edition (``False`` is refused there);
        off by default otherwise.
    ``area_control_bonus``
        ``True`` or ``False`` (default).
    ``first_edition``
        ``True`` or ``False`` (default): the first edition's Card space and its deck.
    ``max_rounds``
        1 to 2**24 (a float32 observation holds the round exactly up to there); default 100. A game not over at
        the end of that round is truncated and scored as it stands (D8).
    ``reward``
        ``"win_loss"`` (default: at the end, +1 to every winner and -1 to the others) or ``"margin"`` (at the end,
        the player's final support minus the best other seat's, divided by 100).
    ``board``
        ``"standard"`` (default), another name in ``revolution_env/data/boards/``, or the path of a board JSON file.
    ``render_mode``
        ``None`` (default), ``"ansi"`` (text), ``"human"`` (prints the text) or ``"rgb_array"`` (a picture of the
        town, the support track, the holdings and the round's bids).
    ``illegal``
        ``"terminate"`` (default, PettingZoo classic's convention: an illegal action ends the game, -1 to the
        offender and 0 to the others, ``infos[offender]["illegal_action"] == 1``) or ``"raise"``
        (:class:`~revolution_env.IllegalActionError` before anything changes). :func:`raw_env` always raises.
    ``action_mode``
        ``"bid"`` (default: the masked ``MultiDiscrete``, a whole bid in one action) or ``"tokens"`` (a masked
        ``Discrete`` action that places a bid one token at a time, for libraries that mask only ``Discrete``
        actions: Tianshou, DQN-style learners, tree search).
    """
    illegal = EnvConfig.from_options(options).illegal  # checks every option before anything is built
    raw = raw_env(**{k: v for k, v in options.items() if k != "illegal"})
    inner = TerminateIllegalWrapper(raw) if illegal == "terminate" else raw
    return OrderEnforcingWrapper(inner)
