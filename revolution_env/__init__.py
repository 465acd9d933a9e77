"""Revolution!: a rules engine and a PettingZoo environment for the board game of secret bidding.

Entry points: :func:`env` (AEC with the usual wrappers), :func:`raw_env`, :func:`parallel_env`; also registered
with PettingZoo as ``revolution_v2`` (``pettingzoo.make("aec", "revolution_v2")``). For a single learner:
:func:`gym_env` (Gymnasium, registered as ``Revolution-v2``) and :func:`vector_env` (many games in batch). See
``revolution_env.env`` for the documentation of spaces, masks, observations and rewards.
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

__version__ = "0.1.0"


def vector_env(num_envs: int, players: int = 3, opponents=None, seat=None, **options):
    """``num_envs`` single-agent games stepped in batch (docs/environment.md §5 "Vectorised"); see
    :func:`revolution_env.arena.vector.vector_env`. Imported on first use, so that ``import revolution_env`` does
    not load the batched engine (and numba)."""
    from revolution_env.arena.vector import vector_env as make

    return make(num_envs, players=players, opponents=opponents, seat=seat, **options)


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
    "split_mask",
    "state_dict",
    "vector_env",
]
