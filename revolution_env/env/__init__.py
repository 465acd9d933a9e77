"""The PettingZoo environments of Revolution! (AEC and Parallel) and what they are made of: options, spaces,
the action codec, observations, the token mode, rendering.

The interface is documented once: the options in the docstring of :func:`env` (``help(revolution_env.env)``), the
rest (decisions, the action encoding, masks, observations, rewards, versions) in docs/environment.md.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from revolution_env.env.aec import TerminateIllegalWrapper, env, raw_env
from revolution_env.env.core import ENV_NAME, EnvConfig
from revolution_env.env.encoding import IllegalActionError
from revolution_env.env.observation import ObservationLayout, ObservationView
from revolution_env.env.parallel import parallel_env
from revolution_env.env.spaces import MaskedMultiDiscrete, flat_mask, split_mask


def replaced_v1(**options: Any) -> Any:
    """``revolution_v1`` in PettingZoo's registry: it was replaced by ``revolution_v2``."""
    raise ValueError(
        "revolution_v1 is replaced by revolution_v2: pettingzoo.make('aec', 'revolution_v2') or revolution_env.env()."
        " v2 changes Guy's beat (D11 revised), infos hold numbers (revolution_env.Decision), and illegal actions"
        " follow the `illegal` option (see docs/environment.md §5)"
    )


def _core(environment: Any):
    return environment.unwrapped.core if hasattr(environment, "unwrapped") else environment.core


def observation_layout(**options: Any) -> ObservationLayout:
    """The observation layout for these options (``.describe()``, ``.decode(vector)``, ``.scale``)."""
    from revolution_env.env.core import Core

    return Core(EnvConfig.from_options(options)).obs_layout


def describe_action(environment: Any, agent: str, action: Any) -> str:
    """A readable form of ``action`` for ``agent`` in the environment's current state."""
    core = _core(environment)
    seat = core.seat_of[agent]
    return core.codec.describe(action, core.game, seat, core.kind(seat))


def bid_action(environment: Any, bid: Any) -> np.ndarray:
    """The action for a bid written as text (``"3 gold printer, 1 force priest"``) or as (T, 3) counts."""
    codec = _core(environment).codec
    counts = codec.parse_bid(bid) if isinstance(bid, str) else np.asarray(bid)
    return codec.action_from_bid(counts)


__all__ = [
    "ENV_NAME",
    "IllegalActionError",
    "MaskedMultiDiscrete",
    "ObservationLayout",
    "ObservationView",
    "TerminateIllegalWrapper",
    "bid_action",
    "describe_action",
    "env",
    "flat_mask",
    "observation_layout",
    "parallel_env",
    "raw_env",
    "replaced_v1",
    "split_mask",
]
