"""Play one game between agents through the AEC environment, and record how it ended."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from ..agents.base import Agent
from ..env import env as make_env


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
        )


def agent_seed(game_seed: int, seat: int) -> int:
    """The seed an agent is reset with: distinct per seat (identical random agents would bid identically)."""
    return int(np.random.SeedSequence([game_seed, 1 + seat]).generate_state(1)[0])


class IllegalMoveError(RuntimeError):
    """An agent played an action its mask forbids: a bug in the agent, not a result."""


def play_game(
    agents_by_seat: Sequence[Agent] | Mapping[str, Agent],
    env_options: Mapping[str, Any] | None = None,
    seed: int = 0,
    names: Sequence[str] | None = None,
) -> GameResult:
    """Play one game: ``agents_by_seat[i]`` plays ``player_i``; each agent is reset with a seed derived from
    ``seed``. ``names`` label the seats in the result (default: each agent's ``name``)."""
    options = dict(env_options or {})
    environment = make_env(**options)
    possible = environment.possible_agents
    if isinstance(agents_by_seat, Mapping):
        seats = [agents_by_seat[a] for a in possible]
    else:
        seats = list(agents_by_seat)
    if len(seats) != len(possible):
        raise ValueError(f"expected {len(possible)} agents (one per player), got {len(seats)}")
    labels = tuple(names) if names is not None else tuple(a.name for a in seats)
    by_agent = dict(zip(possible, seats))
    environment.reset(seed=seed)
    for i, agent in enumerate(seats):
        agent.reset(agent_seed(seed, i))
    game = environment.unwrapped.game
    for name in environment.agent_iter():
        observation, _, termination, truncation, info = environment.last()
        if termination or truncation:
            environment.step(None)
            continue
        environment.step(by_agent[name].act(observation, info))
        if game.final is None and environment.unwrapped.terminations[name]:  # TerminateIllegalWrapper ended it
            seat = possible.index(name)
            raise IllegalMoveError(f"agent {labels[seat]!r} (seat {seat}) played an illegal action (game seed {seed})")
    support = [int(s) for s in game.final["support"]]
    players = len(possible)
    return GameResult(
        agents=labels,
        support=tuple(support[:players]),
        winners=tuple(int(w) for w in game.final["winners"]),
        rounds=int(game.round),
        truncated=bool(game.truncated),
        puppet_support=support[players] if len(support) > players else None,
        seed=int(seed),
    )
