"""Revolution!: a rules engine and a PettingZoo environment for the board game of secret bidding.

Entry points: :func:`env` (AEC with the usual wrappers), :func:`raw_env`, :func:`parallel_env`; also registered
with PettingZoo as ``revolution_v2`` (``pettingzoo.make("aec", "revolution_v2")``). For a single learner:
:func:`gym_env` (Gymnasium, registered as ``Revolution-v2``) and :func:`vector_env` (many games in batch); for pure
self-play, :func:`selfplay_vector_env` (every seat of many games a row of one learner). See
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


def selfplay_vector_env(num_games: int, players: int = 3, **options):
    """Pure self-play in batch: every seat of ``num_games`` games is a row of one ``gymnasium.vector.VectorEnv``,
    so that one forward pass of the policy decides for every seat; see
    :mod:`revolution_env.arena.selfplay`. Imported on first use, as :func:`vector_env`.

    | property    | value                                                                                         |
    |-------------|-----------------------------------------------------------------------------------------------|
    | rows        | ``num_envs = num_games * players``: row ``r`` is seat ``r % players`` of game ``r // players`` (the puppet has none) |
    | observation | each row its seat's own observation, the scalar env's (float32 ``Box``; a ``Dict`` with ``mask_in_obs=True``) |
    | action      | one ``MultiDiscrete(nvec)`` per row; ``action_mode="tokens"``: one ``Discrete(n)`` token of the seat's bid |
    | decisions   | bids: every player's row in the same step; Guy, Spy, Apothecary: the deciding seat's row alone. Other rows get ``Decision.NONE`` (``info["decision"] == 0``), their action ignored |
    | masks       | ``action_masks()``: bool ``(num_envs, sum(nvec))`` (token mode ``(num_envs, n)``); a waiting row allows only the no-op |
    | reward      | each row its seat's: 0 until the end, then ``win_loss`` (+1 / -1) or ``margin``                 |
    | autoreset   | ``SAME_STEP`` per game: ``info["final_obs"]``, ``info["final_info"]`` (``seat``, ``won``, ``support``, ``rounds``, ``illegal_action``) in the rows of games that ended |
    | illegal     | ``illegal="terminate"``: the game ends, -1 to the offending row, 0 to its others; ``"raise"``: ``IllegalActionError`` |
    | finished    | ``pop_finished()``: ``(scenario, final_state)`` pairs that ``revolution scenario`` replays        |

    Other options: ``mask_in_obs``, ``keep_finished`` and the rule and reward options of :func:`env`. Bad input
    raises ``ValueError`` naming the option.
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
