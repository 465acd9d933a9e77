"""Evaluation games on the batched engine: a chunk of the schedule played side by side, the same games as one by one.

:func:`play_batched` plays the games of many :class:`~.runner.GameTask` at once on a
:class:`revolution_env.engine.batched.BatchedGame`, and gives the same :class:`GameResult` for each as
``runner.play_task`` does alone: the same game seed, each seat's agent a :meth:`Agent.fork` reset with the seed
``GameRunner`` would give it (so its random draws are the ones it would make alone), observations and masks built by
:class:`revolution_env.env.batched.BatchedView` (identical to the environment's), and, in two-player games, D9's coin
flip drawn from the game's own coin stream, as the scalar engine draws it (the first edition's deck is shuffled
from the game's deck stream by the batched engine itself). ``tests/test_evaluation.py`` compares both paths game by
game, scenarios included.

What is batched: the engine's steps, the observations and masks of all waiting seats, and a checkpoint policy's
forward pass (one per step for every game it plays in, also where it is the component a mixture, ``mix:``, drew for
a game's decision, or the member a per-game mixture, ``meta:`` or a population file, drew for the game); a sampling
policy then draws each game's action from that game's own stream, as it would alone. Random agents and the
heuristic bots decide seat by seat, as does the draw of a mixture's component (each with its own random stream;
the bots are compiled, :mod:`revolution_env.agents.compiled`).

The scalar path remains for what the batched path does not play: the token action mode, and agents other than
``random``, the heuristics, checkpoint policies and their mixtures (:func:`can_batch`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple

import numpy as np

from revolution_env.agents.base import Agent, RandomAgent
from revolution_env.agents.checkpoint import PolicyAgent
from revolution_env.agents.heuristics import HeuristicBot
from revolution_env.agents.mixture import MetaAgent, MixtureAgent
from revolution_env.arena.runner import GameResult, IllegalMoveError, agent_seed
from revolution_env.engine import kernels as K
from revolution_env.engine.batched import BatchedGame, clean_bids_batch, priority_by_rule_batch
from revolution_env.engine.game import COIN_STREAM, Decision, make_layout, seed_stream
from revolution_env.env.batched import BatchedView
from revolution_env.env.core import EnvConfig
from revolution_env.env.encoding import Codec
from revolution_env.env.observation import ObservationLayout

BATCHABLE = (RandomAgent, HeuristicBot, PolicyAgent)


class Players(NamedTuple):
    """Who plays each seat of each game of a batch."""

    tasks: Sequence[Any]  # each game's GameTask: its seed, its agents' names
    agents: list[list[Agent]]  # [game][seat]: the seat's loaded agent
    forks: list[list[Agent]]  # [game][seat]: its copy for the game, reset as GameRunner resets it


def _batchable(agent: Agent) -> bool:
    """One of the agents the batched path plays, or a mixture of them (each game's fork draws the component, whose
    decision is then played as that agent's)."""
    if isinstance(agent, (MixtureAgent, MetaAgent)):
        return all(_batchable(a) for a in agent.agents)
    return isinstance(agent, BATCHABLE)


def can_batch(agents: Sequence[Agent], env_options: Mapping[str, Any]) -> bool:
    """Whether games of these agents in this variant can be played on the batched engine."""
    if env_options.get("action_mode", "bid") != "bid":
        return False
    return all(_batchable(a) for a in agents)


def play_batched(
    tasks: Sequence[Any], agents: Mapping[tuple[str, str], Agent], env_options: Mapping[str, Any]
) -> list[GameResult]:
    """The results of ``tasks`` (``GameTask``: index, seed, names, specs), in order, each game recorded as a
    scenario; ``agents[(name, spec)]`` is the loaded agent of a seat."""
    options = {k: v for k, v in env_options.items() if k not in ("illegal", "render_mode")}
    layout = make_layout(EnvConfig.from_options(options).rules)
    codec = Codec(layout)
    view = BatchedView(codec, ObservationLayout(codec))
    n, P = len(tasks), layout.players
    seeds = np.array([t.seed for t in tasks], dtype=np.int64)
    game = BatchedGame(layout, n, seeds=seeds)
    base = [[agents[(name, spec)] for name, spec in zip(t.names, t.specs)] for t in tasks]
    forks = [[a.fork(agent_seed(int(t.seed), s)) for s, a in enumerate(row)] for t, row in zip(tasks, base)]
    players = Players(tasks, base, forks)
    coins = None
    if layout.scheming >= 0:  # D9's coin: the scalar engine's first stream of the game's seed
        coins = [seed_stream(int(s), COIN_STREAM) for s in seeds]
    everyone = np.arange(n)
    while not game.over.all():
        kind = game.kind
        bidding = everyone[(kind == K.K_BID) & ~game.over]
        if len(bidding):
            bids = np.zeros((len(bidding), P, codec.T, 3), dtype=np.int64)
            for seat in range(P):
                seats = np.full(len(bidding), seat)
                actions = _actions(view, game, bidding, seats, K.K_BID, players)
                bids[:, seat] = view.bid_counts(actions, game.tokens[bidding, seat])
            priority = None
            if coins is not None:
                ruled = priority_by_rule_batch(clean_bids_batch(bids, layout)[0], layout)
                priority = np.array([-1 if r >= 0 else int(coins[g].integers(2)) for g, r in zip(bidding, ruled)])
            game.submit_bids(bidding, bids, priority=priority)
        choosing = everyone[(game.kind >= K.K_GUY) & ~game.over]
        if len(choosing):
            seats = game.decider[choosing].copy()
            kinds = game.kind[choosing].copy()
            values = np.zeros(len(choosing), dtype=np.int64)
            for k in np.unique(kinds).tolist():
                rows = np.flatnonzero(kinds == k)
                actions = _actions(view, game, choosing[rows], seats[rows], k, players)
                values[rows] = view.engine_choices(actions[:, 0], seats[rows], kinds[rows])
            game.choose(choosing, values)
    records = game.snapshot(everyone)
    results = []
    for i, task in enumerate(tasks):
        support = game.final_support[i]
        results.append(
            GameResult(
                agents=tuple(task.names),
                support=tuple(int(x) for x in support[:P]),
                winners=tuple(int(w) for w in np.flatnonzero(game.final_win[i])),
                rounds=int(game.round[i]),
                truncated=bool(game.truncated[i]),
                puppet_support=int(support[P]) if layout.puppet >= 0 else None,
                seed=int(task.seed),
                scenario=records.export(i),
            )
        )
    return results


def _actions(view, game, games, seats, kind, players: Players) -> np.ndarray:
    """The actions (n, D) of the ``players`` in ``seats`` of ``games``, all facing decision ``kind``: a policy's in one
    forward pass per agent (a mixture's too, where its draw picks the policy; a sampling policy then draws each
    game's action from that game's stream), every other agent's game by game (its own random stream)."""
    kinds = np.full(len(games), kind, dtype=np.int64)
    obs, masks = view.observe_and_mask(game, games, seats, kinds)
    actions = np.zeros((len(games), len(view.codec.nvec)), dtype=np.int64)
    info = {"decision": Decision(int(kind)), "illegal_action": 0}
    shared: dict[int, tuple[PolicyAgent, list[int], list[PolicyAgent]]] = {}
    for j, (g, s) in enumerate(zip(games.tolist(), seats.tolist())):
        agent, fork = players.agents[g][s], players.forks[g][s]
        if isinstance(agent, MetaAgent):  # the member this game's fork drew for the whole game
            agent, fork = agent.agents[fork.current], fork.agents[fork.current]
        if isinstance(agent, MixtureAgent):  # the component that decides here, drawn from this game's stream
            pick = fork.pick()
            agent, fork = agent.agents[pick], fork.agents[pick]
        if isinstance(agent, PolicyAgent) and (agent.deterministic or agent.tokens is None):
            _, rows, agent_forks = shared.setdefault(id(agent), (agent, [], []))
            rows.append(j)
            agent_forks.append(fork)
        else:
            actions[j] = fork.act({"observation": obs[j], "action_mask": masks[j].view(np.int8)}, info)
    for agent, rows, agent_forks in shared.values():
        if agent.deterministic:
            actions[rows] = agent.act_batch(obs[rows], masks[rows], kinds[rows])
            continue
        # one pass (the logits that the masks leave a choice in); each game's draw from its own stream
        logits = agent.net.logits(obs[rows] / agent.scale, agent.chooser.needed(masks[rows]))
        for r, (j, fork) in enumerate(zip(rows, agent_forks)):
            actions[j] = fork.chooser.choose(logits[r], masks[j], fork.rng)
    legal = view.legal(actions, masks)
    if not legal.all():
        j = int(np.flatnonzero(~legal)[0])
        task, s = players.tasks[int(games[j])], int(seats[j])
        why = view.codec._why(actions[j], masks[j].view(np.int8), Decision(int(kind)))
        raise IllegalMoveError(
            f"agent {task.names[s]!r} (seat {s}) played an illegal action (game seed {task.seed}): {why}"
        )
    return actions
