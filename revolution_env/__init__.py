"""Revolution!: a rules engine and a PettingZoo environment for the board game of secret bidding.

Entry points: :func:`env` (AEC with the usual wrappers), :func:`raw_env`, :func:`parallel_env`; also registered
with PettingZoo as ``revolution_v2`` (``pettingzoo.make("aec", "revolution_v2")``). For a single learner:
:func:`gym_env` (Gymnasium, registered as ``Revolution-v2``) and :func:`vector_env` (many games in batch); for pure
self-play, :func:`selfplay_vector_env` (every seat of many games a row of one learner). Agents:
:func:`load_agent` and :class:`Agent`. The options of every environment are in :func:`env`'s docstring; spaces,
masks, observations and rewards in docs/environment.md.
"""

import warnings

from revolution_env.agents import Agent, load_agent
from revolution_env.arena.single import gym_env
from revolution_env.engine import Decision, Game, Rules, run_scenario, state_dict
from revolution_env.env import (
    ENV_NAME,
    IllegalActionError,
    MaskedMultiDiscrete,
    ObservationView,
    bid_action,
    describe_action,
    env,
    flat_mask,
    observation_layout,
    parallel_env,
    raw_env,
    split_mask,
)

__version__ = "0.1.0"  # the one version: pyproject.toml reads it from here (setuptools, without importing)


def vector_env(num_envs: int, players: int = 3, opponents=None, seat=None, **options):
    """``num_envs`` games stepped in batch, the learner at one seat of each (or more): a
    ``gymnasium.vector.VectorEnv`` on the batched engine (its loops compiled by Numba where it is installed, the
    ``fast`` extra).

    ``opponents`` are what :func:`gym_env` takes, played in batch: ``random``, the heuristics (compiled),
    checkpoints (one forward pass a step), or a league object choosing each new game's opponents. ``seat`` is the
    learner's seat, or ``None`` to draw it per game. ``learner_seats=k``: the learner at k seats of each game (drawn
    per game), each a row (``num_envs * k`` rows), the opponents at the others. Other options: ``mask_in_obs``,
    ``keep_finished`` (finished games kept for ``pop_finished()``, which hands them back as scenarios that
    ``revolution scenario`` replays) and the options of :func:`env`. Finished games reset themselves in the same
    step (``info["final_obs"]``); ``action_masks()`` is a bool array of shape ``(num_envs, sum(nvec))``.
    docs/environment.md §5 "Vectorised" says more.

    Imported on first use, so that ``import revolution_env`` does not load the batched engine (and Numba).
    """
    from revolution_env.arena.vector import vector_env as make

    return make(num_envs, players=players, opponents=opponents, seat=seat, **options)


def selfplay_vector_env(num_games: int, players: int = 3, **options):
    """Pure self-play in batch: every seat of ``num_games`` games is a row of one ``gymnasium.vector.VectorEnv``
    (``num_envs = num_games * players``; row ``r`` is seat ``r % players`` of game ``r // players``, and the
    puppet of two players has none), so that one forward pass of the policy decides for every seat.

    Each row observes, acts and is rewarded as its seat would in :func:`env`. A bid is a step of every row at
    once; a Guy, Spy or Apothecary decision a step of the deciding row alone, while the others get
    ``Decision.NONE`` (``info["decision"] == 0``), a mask that allows only the no-op, and their action ignored.
    Games reset themselves in the same step (``info["final_obs"]``, ``info["final_info"]``); ``pop_finished()``
    hands finished games back as scenarios. Options: ``mask_in_obs``, ``keep_finished`` and the options of
    :func:`env`; bad input raises ``ValueError`` naming the option. :mod:`revolution_env.arena.selfplay` has the
    details; imported on first use, as :func:`vector_env`.
    """
    from revolution_env.arena.selfplay import selfplay_vector_env as make

    return make(num_games, players=players, **options)


def _register() -> None:
    """Register ``revolution_v2`` with PettingZoo's ``make`` (PettingZoo 1.27 and later; older versions have no
    registry, and the entry points above work without it). ``revolution_v1`` is registered only to say that it
    was replaced."""
    try:
        from pettingzoo import register
        from pettingzoo.env_registry.registration import aec_registry
    except ImportError:
        return
    if "revolution-v2" in aec_registry:
        return
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for kind, entry in (("aec", "env"), ("parallel", "parallel_env")):
            register(kind, ENV_NAME, entry_point=f"revolution_env.env:{entry}")
            register(kind, "revolution_v1", entry_point="revolution_env.env:replaced_v1")


_register()


def _register_gymnasium() -> None:
    """``gymnasium.make("revolution_env:Revolution-v2", players=3, opponents=[...])``."""
    import gymnasium

    if "Revolution-v2" not in gymnasium.registry:
        gymnasium.register(id="Revolution-v2", entry_point="revolution_env.arena.single:SingleAgentEnv")


_register_gymnasium()

__all__ = [
    "ENV_NAME",
    "Agent",
    "Decision",
    "Game",
    "IllegalActionError",
    "MaskedMultiDiscrete",
    "ObservationView",
    "Rules",
    "__version__",
    "bid_action",
    "describe_action",
    "env",
    "flat_mask",
    "gym_env",
    "load_agent",
    "observation_layout",
    "parallel_env",
    "raw_env",
    "run_scenario",
    "selfplay_vector_env",
    "split_mask",
    "state_dict",
    "vector_env",
]
