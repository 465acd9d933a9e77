"""The one game loop: seat agents, step the AEC environment, collect how the game ended.

Evaluation, the terminal game, the browser game, the main job, the scripts and the tests all play games through
:class:`GameRunner` (or its shortcut :func:`play_game`); nothing else writes the loop again. A runner can record
the game as a scenario (``docs/scenarios.md``) that replays it exactly, and calls ``on_step`` after every decision
so that a front end can show the game as it goes. A seat may be left to decisions from outside (``None`` in place of
its agent: a person at a web page): :meth:`GameRunner.advance` plays the seated agents until such a seat must
decide, and :meth:`GameRunner.apply_outside` applies its action.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from revolution_env.agents.base import Agent, RandomAgent
from revolution_env.engine.scenario import export_game
from revolution_env.env import env as make_env

# on_step(env, agent, observation, info, action): after each decision, with what the agent saw before it
OnStep = Callable[[Any, str, dict[str, np.ndarray], dict[str, Any], np.ndarray], None]


@dataclass(frozen=True)
class GameResult:
    """How one game ended, seat by seat (seat 0 first).

    ``support`` is each player's final support (tokens and areas scored); ``puppet_support`` the puppet's in the
    two-player variant (None otherwise). ``winners`` are seats; ties share the win (D7) and in the two-player
    variant nobody wins if the puppet is not beaten (D13).
    """

    agents: tuple[str, ...]
    support: tuple[int, ...]
    winners: tuple[int, ...]
    rounds: int = 0
    truncated: bool = False
    puppet_support: int | None = None
    seed: int | None = None
    scenario: dict[str, Any] | None = None  # the whole game as a scenario, when recorded

    @property
    def players(self) -> int:
        return len(self.agents)

    def ranks(self) -> list[int]:
        """Finishing places by final support (1 = first; equal support shares the place). The puppet is not an
        agent and takes no place: when it beats both players, they are still ordered by their support."""
        return [1 + sum(other > mine for other in self.support) for mine in self.support]

    def margins(self) -> list[int]:
        """Each seat's final support minus the best other seat's, the puppet included."""
        everyone = list(self.support) + ([self.puppet_support] if self.puppet_support is not None else [])
        out = []
        for seat, mine in enumerate(self.support):
            others = everyone[:seat] + everyone[seat + 1 :]
            out.append(mine - max(others))
        return out

    def win_share(self, seat: int) -> float:
        """1 for a sole winner, 1/k for one of k tied winners, else 0."""
        return 1.0 / len(self.winners) if seat in self.winners else 0.0

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        for key in ("agents", "support", "winners"):
            d[key] = list(d[key])
        if d["scenario"] is None:
            del d["scenario"]
        return d

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> GameResult:
        return cls(
            agents=tuple(d["agents"]),
            support=tuple(d["support"]),
            winners=tuple(d["winners"]),
            rounds=d.get("rounds", 0),
            truncated=d.get("truncated", False),
            puppet_support=d.get("puppet_support"),
            seed=d.get("seed"),
            scenario=d.get("scenario"),
        )


def agent_seed(game_seed: int, seat: int) -> int:
    """The seed an agent is reset with: distinct per seat (identical random agents would bid identically)."""
    return int(np.random.SeedSequence([game_seed, 1 + seat]).generate_state(1)[0])


OUTSIDE = "outside"  # the name of a seat whose decisions come from outside, unless ``names`` say otherwise


class IllegalMoveError(RuntimeError):
    """An agent played an action its mask forbids: a bug in the agent, not a result."""


class GameRunner:
    """Agents seated in one AEC environment (``agents[i]`` plays ``player_i``), ready to play games.

    ``names`` label the seats in results (default: each agent's ``name``). The environment raises on an illegal
    action, which the runner reports as :class:`IllegalMoveError` naming the agent: a bug in an agent is never a
    result. An agent ``None`` leaves its seat's decisions to the caller (:meth:`advance`, :meth:`apply_outside`).
    """

    def __init__(
        self,
        agents: Sequence[Agent | None] | Mapping[str, Agent | None],
        env_options: Mapping[str, Any] | None = None,
        names: Sequence[str] | None = None,
    ) -> None:
        options = {k: v for k, v in (env_options or {}).items() if k != "illegal"}
        self.env = make_env(**options, illegal="raise")
        possible = self.env.possible_agents
        seats = [agents[a] for a in possible] if isinstance(agents, Mapping) else list(agents)
        if len(seats) != len(possible):
            raise ValueError(f"expected {len(possible)} agents (one per player), got {len(seats)}")
        self.agents = seats
        self.names = tuple(names) if names is not None else tuple(OUTSIDE if a is None else a.name for a in seats)
        self._by_agent = dict(zip(possible, seats))

    @property
    def game(self) -> Any:
        """The engine's game being played (or last played)."""
        return self.env.unwrapped.game

    def reset(self, seed: int | None, agent_seeds: Sequence[int | None] | None = None) -> None:
        """Start a game; each agent is reset with a seed derived from ``seed`` (None: fresh, unseeded), or with
        its seat's entry of ``agent_seeds``."""
        self.env.reset(seed=seed)
        for i, agent in enumerate(self.agents):
            if agent is not None:
                agent.reset(
                    agent_seeds[i] if agent_seeds is not None else None if seed is None else agent_seed(seed, i)
                )

    def play(self, seed: int | None = 0, record: bool = False, on_step: OnStep | None = None) -> GameResult:
        """Play one game to its end. ``record`` keeps the whole game as a scenario in the result."""
        self.reset(seed)
        return self.run(record, on_step)

    def run(self, record: bool = False, on_step: OnStep | None = None) -> GameResult:
        """Play the game started by :meth:`reset` to its end (every seat played by its agent)."""
        waiting = self.advance(on_step)
        if waiting is not None:
            raise RuntimeError(f"run: {waiting} decides from outside; play the game with advance() and apply_outside()")
        for _ in self.env.agent_iter():  # every agent is done: PettingZoo's last steps empty env.agents
            self.env.step(None)
        return self.result(record)

    def advance(self, on_step: OnStep | None = None) -> str | None:
        """Play the seated agents until a seat whose decisions come from outside must decide (its agent name,
        ``player_i``, is returned) or the game is over (None)."""
        env, possible = self.env, self.env.possible_agents
        while not self.game.over:
            name = env.agent_selection
            agent = self._by_agent[name]
            if agent is None:
                return name
            observation, info = env.observe(name), env.infos[name]
            action = agent.act(observation, info)
            try:
                env.step(action)
            except ValueError as exc:  # IllegalActionError: the raw env refused it and changed nothing
                seat = possible.index(name)
                raise IllegalMoveError(
                    f"agent {self.names[seat]!r} (seat {seat}) played an illegal action (game seed {self.game.seed}):"
                    f" {exc}"
                ) from None
            if on_step is not None:
                on_step(env, name, observation, info, action)
        return None

    def apply_outside(self, action: Any, on_step: OnStep | None = None) -> None:
        """Apply the action of the outside seat that :meth:`advance` returned; an illegal one raises
        ``IllegalActionError`` and changes nothing. The seated agents are not played: call :meth:`advance`."""
        env = self.env
        name = env.agent_selection
        if self.game.over or self._by_agent[name] is not None:
            raise RuntimeError(f"apply_outside: {'the game is over' if self.game.over else name + ' has an agent'}")
        observation, info = (env.observe(name), env.infos[name]) if on_step is not None else (None, None)
        env.step(action)
        if on_step is not None:
            on_step(env, name, observation, info, action)

    def result(self, record: bool = False) -> GameResult:
        """How the finished game ended."""
        game = self.game
        support = [int(s) for s in game.final["support"]]
        players = len(self.env.possible_agents)
        return GameResult(
            agents=self.names,
            support=tuple(support[:players]),
            winners=tuple(int(w) for w in game.final["winners"]),
            rounds=int(game.round),
            truncated=bool(game.truncated),
            puppet_support=support[players] if len(support) > players else None,
            seed=int(game.seed),
            scenario=export_game(game) if record else None,
        )


def play_game(
    agents_by_seat: Sequence[Agent] | Mapping[str, Agent],
    env_options: Mapping[str, Any] | None = None,
    seed: int = 0,
    names: Sequence[str] | None = None,
    record: bool = False,
) -> GameResult:
    """Play one game: ``agents_by_seat[i]`` plays ``player_i``; each agent is reset with a seed derived from
    ``seed``. ``names`` label the seats in the result (default: each agent's ``name``); ``record`` keeps the game
    as a scenario in the result."""
    return GameRunner(agents_by_seat, env_options, names).play(seed, record=record)


def win_share(
    agent: Agent,
    env_options: Mapping[str, Any],
    games: int,
    opponent: Callable[[], Agent] | None = None,
    seed: int = 0,
) -> float:
    """``agent``'s mean win share (:meth:`GameResult.win_share`) over ``games`` games, its seat rotating game by
    game, every other seat held by ``opponent()`` (default: a random bot); game ``i`` is played with seed
    ``seed + i``. For a quick figure from a script; tournaments with intervals are
    :mod:`revolution_env.evaluation`'s."""
    if games < 1:
        raise ValueError(f"games: expected at least 1, got {games}")
    options = dict(env_options)
    players = options.get("players", 3)
    make = opponent or (lambda: RandomAgent(**options))
    total = 0.0
    for game in range(games):
        seat = game % players
        seats = [agent if s == seat else make() for s in range(players)]
        total += play_game(seats, options, seed=seed + game).win_share(seat)
    return total / games
