"""Revolution!: a rules engine and a PettingZoo environment for the board game of secret bidding.

Entry points: :func:`env` (AEC with the usual wrappers), :func:`raw_env`, :func:`parallel_env`; also registered
with PettingZoo as ``revolution_v1`` (``pettingzoo.make("aec", "revolution_v1")``). See
``revolution_env.env`` for the documentation of spaces, masks, observations and rewards.
"""

import warnings

from .agents import Agent, load_agent
from .engine import Game, Rules, run_scenario, state_dict
from .env import (
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


def _register() -> None:
    from pettingzoo import register
    from pettingzoo.env_registry.registration import aec_registry

    if "revolution-v1" in aec_registry:
        return
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        register("aec", "revolution_v1", entry_point="revolution_env.env:env")
        register("parallel", "revolution_v1", entry_point="revolution_env.env:parallel_env")


_register()

__all__ = [
    "Agent",
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
    "load_agent",
    "observation_layout",
    "parallel_env",
    "raw_env",
    "run_scenario",
    "split_mask",
    "state_dict",
]
