"""What the AEC and the Parallel environments share: options, spaces, per-seat decisions, observations,
applying actions, and rewards. Both are thin shells around one :class:`Core`."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import gymnasium
import numpy as np
from gymnasium import spaces

from revolution_env.engine.components import BoardError
from revolution_env.engine.game import BID, Decision, Game, Rules, RulesError, check_seed, make_layout
from revolution_env.env.encoding import NONE, Codec
from revolution_env.env.modes import action_mode, check_action_mode
from revolution_env.env.spaces import MaskedMultiDiscrete

ENV_NAME = "revolution_v2"
REWARDS = ("win_loss", "margin")
RENDER_MODES = ("ansi", "human", "rgb_array")
ILLEGAL = ("terminate", "raise")
OPTIONS = (
    "players",
    "bid_refunds",
    "area_control_bonus",
    "first_edition",
    "max_rounds",
    "reward",
    "board",
    "render_mode",
    "illegal",
    "action_mode",
)
ENV_OPTIONS = ("reward", "render_mode", "illegal", "action_mode")  # the options that are not rules of the game
MARGIN_SCALE = 100.0
ILLEGAL_REWARD = -1.0  # to the player whose illegal action ended the game (illegal="terminate"); 0 to the others


def final_rewards(reward: str, won: np.ndarray, support: np.ndarray, seats: np.ndarray) -> np.ndarray:
    """(m,) the rewards at the end of a game of ``seats`` (m,), which ``won`` (m,) it or not, the games' final
    support being ``support`` (m, S): ``win_loss`` +1 to a winner, -1 to the others; ``margin`` the seat's final
    support minus the best other seat's (the puppet included), divided by ``MARGIN_SCALE``. The scalar and the
    vector envs both pay these."""
    if reward == "win_loss":
        return np.where(won, 1.0, -1.0)
    support = np.array(support, dtype=np.float64)
    rows = np.arange(len(seats))
    mine = support[rows, seats]
    support[rows, seats] = -np.inf
    return (mine - support.max(1)) / MARGIN_SCALE


def check_illegal(value: Any) -> str:
    """The ``illegal`` option, or ``ValueError`` naming it."""
    if value not in ILLEGAL:
        raise ValueError(f"illegal: expected one of {', '.join(ILLEGAL)}, got {value!r}")
    return value


@dataclass(frozen=True)
class EnvConfig:
    rules: Rules
    reward: str = "win_loss"
    render_mode: str | None = None
    illegal: str = "terminate"
    action_mode: str = "bid"

    @classmethod
    def from_options(cls, options: dict[str, Any]) -> EnvConfig:
        unknown = [k for k in options if k not in OPTIONS]
        if unknown:
            raise ValueError(f"{unknown[0]}: unknown option (options: {', '.join(OPTIONS)})")
        reward = options.get("reward", "win_loss")
        if reward not in REWARDS:
            raise ValueError(f"reward: expected one of {', '.join(REWARDS)}, got {reward!r}")
        render_mode = options.get("render_mode")
        if render_mode is not None and render_mode not in RENDER_MODES:
            raise ValueError(f"render_mode: expected one of {', '.join(RENDER_MODES)} or None, got {render_mode!r}")
        illegal = check_illegal(options.get("illegal", "terminate"))
        action_mode = check_action_mode(options.get("action_mode", "bid"))
        rule_options = {k: v for k, v in options.items() if k not in ENV_OPTIONS}
        try:
            rules = Rules(**rule_options)
        except RulesError as exc:
            raise ValueError(str(exc)) from None
        return cls(rules, reward, render_mode, illegal, action_mode)


class Core:
    """One game as the agents see it."""

    def __init__(self, config: EnvConfig) -> None:
        self.config = config
        try:
            self.layout = make_layout(config.rules)
        except (BoardError, RulesError) as exc:
            raise ValueError(f"board: {exc}") from None
        self.codec = Codec(self.layout)
        # what differs between the action modes (modes.py), one row per seat
        self.mode = action_mode(config.action_mode, self.codec, self.layout.players)
        self.tokens = self.mode.tokens  # the token mode's sequences (None in the bid mode)
        self.obs_layout = self.mode.layout
        self.agents = [f"player_{i}" for i in range(self.layout.players)]
        self.seat_of = {a: i for i, a in enumerate(self.agents)}
        self.game: Game | None = None
        self._bid_spent = [False] * self.layout.players  # who has bid this round (AEC)
        self._pending = np.zeros((self.layout.players, self.layout.n_targets, 3), dtype=np.int64)
        self._seeder: np.random.Generator | None = None  # the seeds of games reset without one, after a seeded reset

    def observation_space(self) -> spaces.Dict:
        return self.mode.observation_space(with_mask=True)

    @property
    def mask_size(self) -> int:
        return self.mode.n

    def action_space(self, seed: int | None = None) -> MaskedMultiDiscrete | spaces.Discrete:
        return self.mode.space(seed)

    # the token mode's bids under construction and last tokens placed, per seat
    _building = property(lambda self: self.mode.building)
    _last = property(lambda self: self.mode.last)

    def reset(self, seed: int | None) -> None:
        """A new game. A seed also seeds the games after it that are reset without one (Gymnasium's convention:
        ``reset(seed=s)`` then ``reset()``, ``reset()``... is one reproducible sequence); with no seed ever given,
        each game draws its own."""
        if seed is not None:
            self._seeder = np.random.default_rng(check_seed(seed))
        elif self._seeder is not None:
            seed = int(self._seeder.integers(2**63))
        self.game = Game(self.layout, seed)
        self._bid_spent = [False] * self.layout.players
        self.mode.clear()
        self._masks: list[np.ndarray | None] = [None] * self.layout.players

    # --- per seat ----------------------------------------------------------------------------------------------

    def kind(self, seat: int) -> Decision:
        """The decision ``seat`` faces now (``Decision.NONE`` if nothing)."""
        d = self.game.decision
        if d is None:
            return NONE
        if d.kind == BID:
            return NONE if self._bid_spent[seat] else BID
        return d.kind if d.seats[0] == seat else NONE

    def observe(self, seat: int) -> dict[str, np.ndarray]:
        kind = self.kind(seat)
        v = self.obs_layout.build(self.game, seat, kind)
        v[self.mode.base_size :] = self.mode.features(seat)
        return {"observation": v, "action_mask": self.mask(seat).copy()}

    def bid_mode_view(self, seat: int) -> dict[str, np.ndarray]:
        """What an agent written for the bid mode reads (a heuristic or a checkpoint playing in a token-mode
        game): the observation without the bid under construction and the bid mode's mask."""
        kind = self.kind(seat)
        return {
            "observation": self.obs_layout.build(self.game, seat, kind)[: self.mode.base_size],
            "action_mask": self.codec.mask(self.game, seat, kind),
        }

    def token_actions(self, seat: int, action: Any) -> list[Any]:
        """A bid mode action of ``seat``'s, as this mode's actions that play it: itself in the bid mode; in the
        token mode, a bid's canonical sequence, any other decision its choice."""
        return self.mode.from_bid_mode(self.kind(seat), action, self.game.tokens[seat])

    def mask(self, seat: int) -> np.ndarray:
        """The seat's mask, computed once per state (read-only: copy before changing it)."""
        m = self._masks[seat]
        if m is None:
            m = self.mode.mask(self.game, seat, self.kind(seat))
            self._masks[seat] = m
            m.flags.writeable = False
        return m

    # --- acting ------------------------------------------------------------------------------------------------

    def act(self, seat: int, action: Any, agent: str) -> None:
        """Check and apply one agent's action (a bid is held until every player has bid)."""
        self.apply(seat, self.check(seat, action, agent))

    def check(self, seat: int, action: Any, agent: str) -> np.ndarray | int:
        """The action as an int64 array (an ``int`` in the token mode), or :class:`IllegalActionError` naming the
        agent, the decision and what breaks the mask; nothing changes."""
        return self.mode.check(action, self.mask(seat), agent, self.kind(seat))

    def check_idle(self, seat: int, action: Any, agent: str) -> None:
        """Check the action of a seat with nothing to decide (Parallel API): only the no-op is legal."""
        self.mode.check(action, self.mode.none_mask(), agent, NONE)

    def apply(self, seat: int, a: np.ndarray | int) -> None:
        """Apply an action that :meth:`check` has accepted."""
        kind = self.kind(seat)
        self._masks = [None] * self.layout.players  # every action changes what someone may do
        if kind == BID:
            if not self._place(seat, a):
                return
            self._pending[seat] = self.mode.counts(seat, a, self.game.tokens[seat])
            self._bid_spent[seat] = True
            if all(self._bid_spent):
                self._bid_spent = [False] * self.layout.players
                self.game.submit_bids(self._pending)
                self.mode.clear()
        elif kind != NONE:
            self.game.choose(self.codec.choice(self.mode.choice(a), seat, kind))

    def _place(self, seat: int, a: np.ndarray | int) -> bool:
        """Play a checked bid action of ``seat``'s (in the token mode, one token); True when its bid is complete."""
        return self.mode.place(seat, a, self.game.tokens[seat])

    def next_seat(self) -> int:
        """Who acts next in the AEC order: the first player yet to bid, or the one deciding."""
        d = self.game.decision
        if d is None:
            return 0
        if d.kind == BID:
            return self._bid_spent.index(False)
        return d.seats[0]

    # --- the end -----------------------------------------------------------------------------------------------

    def infos(self) -> list[dict[str, int]]:
        """Per player: numbers only, so that libraries can turn infos into tensors (``revolution_v2``)."""
        return [{"decision": self.kind(s), "illegal_action": 0} for s in range(self.layout.players)]

    def rewards(self) -> list[float]:
        """Final rewards per player (:func:`final_rewards`)."""
        final = self.game.final
        seats = np.arange(self.layout.players)
        won = np.isin(seats, list(final["winners"]))
        support = np.broadcast_to(np.asarray(final["support"]), (len(seats), len(final["support"])))
        return final_rewards(self.config.reward, won, support, seats).tolist()


class CoreAccess:
    """What the AEC and the Parallel environment expose of their :class:`Core` in the same way."""

    core: Core
    render_mode: str | None
    observation_spaces: dict
    action_spaces: dict

    def observation_space(self, agent: str) -> spaces.Dict:
        return self.observation_spaces[agent]

    def action_space(self, agent: str) -> MaskedMultiDiscrete:
        return self.action_spaces[agent]

    @property
    def game(self) -> Game:
        """The engine's game (hidden information included)."""
        return self.core.game

    def state_dict(self) -> dict[str, Any]:
        """The whole game state as canonical JSON (docs/scenarios.md §2); includes hidden information."""
        from revolution_env.engine.scenario import state_dict

        return state_dict(self.core.game)

    def render(self) -> Any:
        if self.render_mode is None:
            gymnasium.logger.warn("You are calling render method without specifying any render mode.")
            return None
        from revolution_env.env.render import render_frame

        return render_frame(self.core, self.render_mode)

    def close(self) -> None:
        pass
