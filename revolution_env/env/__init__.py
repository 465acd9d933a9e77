"""
# Revolution!

| Import             | `import revolution_env; revolution_env.env(players=3)`            |
|--------------------|-------------------------------------------------------------------|
| Environment id     | `revolution_v2` (AEC and Parallel, `pettingzoo.make`)             |
| Actions            | MultiDiscrete, masked                                             |
| Parallel API       | Yes (`revolution_env.parallel_env`)                               |
| Manual control     | `revolution play`                                                 |
| Agents             | `agents = ['player_0', 'player_1', ...]` (2 to 4)                 |
| Number of agents   | 2 (with the puppet Guy Fawkes, not an agent), 3 or 4              |
| Action shape       | `(57,)`: `[C] + [T] * 56`                                         |
| Action values      | dimension 0 in `[0, C)`, dimensions 1..56 in `[0, T)`             |
| Observation shape  | `Dict(observation: Box(float32, (N,)), action_mask: Box(int8, (C + 56 T,)))` |

Revolution! (Philip duBarry, Steve Jackson Games 2009) is a game of secret simultaneous bidding and area
control. Every round each player hides all of their tokens (Force, Blackmail, Gold) on up to six characters;
the characters are resolved in order, the strictly highest bid winning support, tokens, influence cubes in
the town's seven areas, or the Spy's and Apothecary's cube tricks. The game ends when every space of the board
is full; areas are scored by the player with strictly the most cubes. The rules implemented are those of
`docs/rules.md` (decisions D1–D18), with the two-player puppet variant and the first edition's Card space.

## Options
`players` (2, 3, 4; default 3), `bid_refunds` (default: on for 2 players and the first edition, else off),
`area_control_bonus` (False), `first_edition` (False), `max_rounds` (100, at most 2**24), `reward` (`"win_loss"` or
`"margin"`), `board` (`"standard"` or a path to a board JSON file), `render_mode` (`"ansi"`, `"human"`,
`"rgb_array"`), `illegal` (`"terminate"` or `"raise"`, see "Illegal actions"; `raw_env` always raises),
`action_mode` (`"bid"`, the masked MultiDiscrete below, or `"tokens"`, see "Token mode"). An unknown option or a
bad value raises `ValueError` naming it.

## Token mode
`action_mode="tokens"`: a `Discrete(n)` action, `n = max(C, 3 * T)`, for libraries that mask only Discrete
actions. A bid is placed one token at a time: action `type * T + target` (types 0 Force, 1 Blackmail, 2 Gold),
in canonical order, non-decreasing in `(type, target)`, so that every bid has exactly one sequence; the bid is
complete when every token held is placed (a player holding none sends 0 once). Other decisions take the choice
of dimension 0 below. The mask is exact. The observation gains `bid_building` (the observer's own bid so far; no
one else sees it), after every other feature. In the Parallel API a player whose bid is complete waits (decision
`NONE`, the no-op 0) until every bid is complete. `revolution_env/env/tokens.py` has the details. `gym_env` and
`vector_env` take it too (the learner's bid token by token; the opponents bid whole bids).

## Decisions
An agent is asked one decision at a time; `infos[agent]["decision"]` is a `revolution_env.Decision` (an `IntEnum`:
infos hold numbers only, so that libraries can turn them into tensors; `str()` gives the lower-case name) and
`infos[agent]["illegal_action"]` is 0, or 1 for the agent whose illegal action ended the game. Decisions: `BID`
(every round, every player; in the AEC API players bid one after another but see nothing of the others' bids
until all have bid), `GUY` (two-player Scheming phase: place one bid for the puppet), `SPY`, `APOTHECARY_FIRST`,
`APOTHECARY_SECOND` (the winner, or for the puppet the player who placed its last bid), `REMOVE` (first
edition's "Remove 1 Influence" card), or `NONE`.

## Action space
`MultiDiscrete([C] + [T] * K)`, a subclass whose `sample` also takes the flat mask.
- Dimension 0, the **choice**, for every decision but `bid` (0 there). Seats are relative to the decider (0 =
  itself, 1 = next, ..., the puppet last; `S` seats counting the puppet). For `spy`, `apothecary_*`, `remove`:
  `1 + area * S + seat` picks a cube (areas in board order: Fortress, Town Hall, Harbor, Cathedral, Plantation,
  Market, Tavern); 0 declines where allowed (`spy`, `apothecary_first`). For `guy`:
  `1 + (character * 2 + answered) * 2 + mode` (`answered` 0 = own bid, 1 = the opponent's; `mode` 0 = tie,
  1 = beat); 0 passes where allowed (from Guy's third bid). `C = 1 + max(7 * S, 48 if two players)`.
- Dimensions 1..K, the **token orders**, for `bid` only: one dimension per token of the game (12 Force, then 12
  Blackmail, then 32 Gold); dimension `1 + j` of a block is the agent's j-th token of that type and its value the
  bid target it goes to: the characters in resolution order (0 = General ... 11 = Mercenary, or the Card space in
  the first edition), then 12 = the Scheming space with two players. Tokens the agent does not hold are 0.

`revolution_env.describe_action(env, agent, action)` writes any action readably, and
`revolution_env.bid_action(env, "3 gold printer, 1 force priest")` (or a `(T, 3)` count array) builds a bid.

## Action mask
`observation["action_mask"]` is the flat `int8` concatenation of the per-dimension masks (length `sum(nvec)`),
the form `sb3_contrib.MaskablePPO` takes; `revolution_env.split_mask(mask, nvec)` gives Gymnasium's tuple form.
The mask is exact: a token may go only to targets that accept its type; a choice is unmasked if and only if the
rules allow it. The only limits a per-dimension mask cannot express are settled by the rules: characters past
the sixth, and Gold past the third on the Card space, go to the bank with no effect. The unwrapped env raises
`IllegalActionError` (a `ValueError`) naming the agent, the decision and the offending dimension, before
anything changes.

## Illegal actions
Option `illegal` of `env()` and `parallel_env()`: `"terminate"` (default; PettingZoo classic's convention) ends
the game at once: the offender gets -1, every other player 0, all are terminated, the offender's
`infos[agent]["illegal_action"]` is 1, and PettingZoo logs one warning. `"raise"` raises `IllegalActionError`
instead, and nothing changes. A Parallel step checks every agent's action before applying any.

## Observation space
A seat-relative float32 vector of what the player may know: round, phase, the decision asked, everyone's
holdings (public), support, supply, the bank, cubes per area and seat, the revealed bids of the round (or of the
last round while bidding) with the winner of each target, the first Apothecary pick, the puppet's Scheming
state, and in the first edition the cards drawn and the composition (never the order) of the draw pile. It
never holds another player's unrevealed bid. The layout, feature by feature, is
`revolution_env.observation_layout(**options).describe()`; `.decode(vector)` gives an `ObservationView`.
Counts are raw; `.scale` is a per-feature divisor for learners.

## Rewards
`win_loss` (default): at the end, +1 to every winner (ties share the win, D7) and -1 to every other player; in
the two-player variant, both players get -1 if the puppet is not beaten (D13). `margin`: at the end, the
player's final support minus the best other seat's (the puppet included), divided by 100. Rewards are 0
before the end. A game not over at the end of round `max_rounds` is truncated and scored (D8).

## Version history
- v2: Guy's beat is the answered bid plus one token of his lowest-value type available (D11 revised); infos hold
  numbers only (`Decision`, `illegal_action`); option `illegal`; a scenario round gives `priority` where D9 comes
  to the coin flip, and exported games give it in every round. v1 checkpoints load with a warning.
- v1: first release.
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

# `revolution_env.env` is also the name of this package's AEC constructor: give it the documentation page, so
# that `help(revolution_env.env)` shows it.
env.__doc__ = f"{env.__doc__}\n{__doc__}"


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
