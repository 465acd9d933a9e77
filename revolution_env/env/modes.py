"""The action modes of an environment (option ``action_mode``, docs/environment.md §5 "Token mode"): everything
that differs between the bid mode (a whole bid in one masked ``MultiDiscrete`` action, ``encoding.py``) and the
token mode (a ``Discrete`` action, the bid placed one token at a time, ``tokens.py``), in one object that the
scalar :class:`~revolution_env.env.core.Core` and the vector env compose, built by :func:`action_mode`.

A mode serves ``rows`` deciders: the seats of one game (``Core``), or the rows of a batch (the learner's seat in each
game of the vector env, every seat of every game in the self-play vector env). It owns the action space and the mask
size; checking an action (its shape and type, its legality against the mask, and the text that says why it is illegal);
the mask of a decision; turning an action into an engine move (a whole bid, or one token placed into the bid under
construction, complete or not, and a choice); the observation features it adds (the bid under construction); the mask of
a seat with nothing to decide, which is also that of a finished game. Each has a scalar form (one row) and a batched
form (``*_many``: many rows at once, from a :class:`~revolution_env.env.batched.BatchedView` and its ``BatchedGame``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
from gymnasium import spaces

from revolution_env.engine.game import BID, GUY, Decision, Game
from revolution_env.env.encoding import NONE, Codec
from revolution_env.env.observation import ObservationLayout
from revolution_env.env.spaces import MaskedMultiDiscrete
from revolution_env.env.tokens import TokenCodec

if TYPE_CHECKING:
    from revolution_env.engine.batched import BatchedGame
    from revolution_env.env.batched import BatchedView


class ActionMode:
    """What an action mode answers (the module documentation); :class:`BidMode` and :class:`TokenMode` are the two.
    A row is a seat of ``game`` in the scalar form, a row of the batch (one seat of one of its games) in the batched
    form."""

    name: str
    tokens: TokenCodec | None  # the token mode's sequences (a bid as the actions that place it); None in the bid mode

    def __init__(self, codec: Codec, rows: int, layout: ObservationLayout, n: int) -> None:
        self.codec = codec
        self.rows = rows
        self.n = n  # the flat mask's length
        self.layout = layout  # the observation of a seat in this mode
        self.base_size = layout.size  # the bid mode's vector, a prefix of this mode's observation

    def space(self, seed: int | None = None) -> spaces.Space:
        """The action space of one decider."""
        raise NotImplementedError

    def observation_space(self, with_mask: bool) -> spaces.Space:
        """The observation vector's ``Box`` (declared bounds), or with the mask a ``Dict`` of both."""
        low, high = self.layout.bounds()
        box = spaces.Box(low, high, (self.layout.size,), np.float32)
        if not with_mask:
            return box
        return spaces.Dict({"observation": box, "action_mask": spaces.Box(0, 1, (self.n,), np.int8)})

    def none_mask(self) -> np.ndarray:
        """The ``int8`` mask of nothing to decide (only the no-op), also that of a finished game."""
        return self.mask(None, 0, NONE)

    def clear(self, rows: Any = slice(None)) -> None:
        """Forget the bids under construction of ``rows`` (after they went in, or when their game ends)."""

    # --- one row -----------------------------------------------------------------------------------------------

    def mask(self, game: Game | None, row: int, kind: Decision) -> np.ndarray:
        """The ``int8`` mask of ``row`` (a seat of ``game``) facing ``kind``."""
        raise NotImplementedError

    def check(self, action: Any, mask: np.ndarray, agent: str, kind: Decision) -> Any:
        """The action in the form :meth:`place` takes, or ``IllegalActionError`` naming ``agent`` and saying why;
        nothing changes."""
        raise NotImplementedError

    def why(self, action: Any, mask: np.ndarray, kind: Decision) -> str:
        """Why an action of the right shape breaks ``mask``."""
        raise NotImplementedError

    def place(self, row: int, action: Any, held: np.ndarray) -> bool:
        """Play a checked bid action of ``row``, which holds ``held`` (3,) tokens; True when its bid is complete."""
        raise NotImplementedError

    def counts(self, row: int, action: Any, held: np.ndarray) -> np.ndarray:
        """The complete bid of ``row`` (its last action ``action``) as (T, 3) counts per target and token type."""
        raise NotImplementedError

    def choice(self, action: Any) -> int:
        """The choice of a non-bid action: dimension 0 of the bid mode's."""
        raise NotImplementedError

    def features(self, row: int) -> np.ndarray:
        """The observation features this mode adds after the bid mode's vector (``base_size`` on)."""
        raise NotImplementedError

    def from_bid_mode(self, kind: Decision, action: Any, held: np.ndarray) -> list[Any]:
        """The actions of this mode that play a bid mode action (an agent written for the bid mode playing here)."""
        raise NotImplementedError

    # --- many rows ---------------------------------------------------------------------------------------------

    def check_many(self, actions: Any, rows_are: str) -> np.ndarray:
        """One action per row as int64; ``ValueError`` naming ``actions`` for another shape or type, where
        ``rows_are`` says what a row is (``"one row per game"``)."""
        raise NotImplementedError

    def legal_many(self, view: BatchedView, actions: np.ndarray, masks: np.ndarray) -> np.ndarray:
        """(m,) bool: each action of :meth:`check_many`'s form satisfies its mask."""
        raise NotImplementedError

    def masks_many(
        self,
        view: BatchedView,
        game: BatchedGame,
        rows: np.ndarray,
        games: np.ndarray,
        seats: np.ndarray,
        kinds: np.ndarray,
    ) -> np.ndarray:
        """(m, n) bool: the masks of ``rows``, which are ``seats`` facing ``kinds`` in ``games``."""
        raise NotImplementedError

    def observe_many(
        self,
        view: BatchedView,
        game: BatchedGame,
        rows: np.ndarray,
        games: np.ndarray,
        seats: np.ndarray,
        kinds: np.ndarray,
    ) -> tuple[np.ndarray, np.ndarray]:
        """The observations and the masks of ``rows`` (:meth:`observations_many` of the bid mode's, and
        :meth:`masks_many`)."""
        obs = self.observations_many(view.observe(game, games, seats, kinds), rows)
        return obs, self.masks_many(view, game, rows, games, seats, kinds)

    def place_many(self, rows: np.ndarray, actions: np.ndarray, held: np.ndarray) -> np.ndarray:
        """:meth:`place` for each of ``rows`` (distinct), holding ``held`` (m, 3): (m,) bool, the bids complete."""
        raise NotImplementedError

    def counts_many(self, view: BatchedView, rows: np.ndarray, actions: np.ndarray, held: np.ndarray) -> np.ndarray:
        """:meth:`counts` of complete bids: (m, T, 3)."""
        raise NotImplementedError

    def counts_into(
        self,
        view: BatchedView,
        rows: np.ndarray,
        actions: np.ndarray,
        held: np.ndarray,
        out: np.ndarray,
        at: np.ndarray,
        seats: np.ndarray,
    ) -> None:
        """:meth:`counts_many` written into ``out[at[i], seats[i]]`` (``out``: the bids of games, (m, players, T,
        3), as ``BatchedGame.step`` takes them)."""
        out[at, seats] = self.counts_many(view, rows, actions, held)

    def choices_many(self, actions: np.ndarray) -> np.ndarray:
        """:meth:`choice` of each action: (m,)."""
        raise NotImplementedError

    def observations_many(self, obs: np.ndarray, rows: np.ndarray) -> np.ndarray:
        """The observations of ``rows`` from their bid mode's ``obs`` (m, base_size), this mode's features added."""
        raise NotImplementedError


class BidMode(ActionMode):
    """``action_mode="bid"``: a ``MultiDiscrete(nvec)`` action, a whole bid at once (:class:`Codec`)."""

    name = "bid"
    tokens = None

    def __init__(self, codec: Codec, rows: int) -> None:
        layout = ObservationLayout(codec)
        super().__init__(codec, rows, layout, codec.size)

    def space(self, seed: int | None = None) -> spaces.Space:
        return MaskedMultiDiscrete(self.codec.nvec, seed=seed)

    def mask(self, game: Game | None, row: int, kind: Decision) -> np.ndarray:
        return self.codec.mask(game, row, kind)

    def check(self, action: Any, mask: np.ndarray, agent: str, kind: Decision) -> Any:
        return self.codec.check(action, mask, agent, kind)

    def why(self, action: Any, mask: np.ndarray, kind: Decision) -> str:
        return self.codec._why(action, mask, kind)

    def place(self, row: int, action: Any, held: np.ndarray) -> bool:
        return True

    def counts(self, row: int, action: Any, held: np.ndarray) -> np.ndarray:
        return self.codec.bid_counts(action, held)

    def choice(self, action: Any) -> int:
        return int(action[0])

    def features(self, row: int) -> np.ndarray:
        return np.zeros(0, dtype=np.float32)

    def from_bid_mode(self, kind: Decision, action: Any, held: np.ndarray) -> list[Any]:
        return [action]

    def check_many(self, actions: Any, rows_are: str) -> np.ndarray:
        a = np.asarray(actions)
        D = len(self.codec.nvec)
        if a.shape != (self.rows, D) or a.dtype.kind not in "iu":
            raise ValueError(
                f"actions: expected integers of shape ({self.rows}, {D}) ({rows_are}), got {a.dtype} {a.shape}"
            )
        return a.astype(np.int64, copy=False)

    def legal_many(self, view: BatchedView, actions: np.ndarray, masks: np.ndarray) -> np.ndarray:
        return view.legal(actions, masks)

    def masks_many(
        self,
        view: BatchedView,
        game: BatchedGame,
        rows: np.ndarray,
        games: np.ndarray,
        seats: np.ndarray,
        kinds: np.ndarray,
    ) -> np.ndarray:
        return view.masks(game, games, seats, kinds)

    def observe_many(
        self,
        view: BatchedView,
        game: BatchedGame,
        rows: np.ndarray,
        games: np.ndarray,
        seats: np.ndarray,
        kinds: np.ndarray,
    ) -> tuple[np.ndarray, np.ndarray]:
        return view.observe_and_mask(game, games, seats, kinds)

    def place_many(self, rows: np.ndarray, actions: np.ndarray, held: np.ndarray) -> np.ndarray:
        return np.ones(len(rows), dtype=bool)

    def counts_many(self, view: BatchedView, rows: np.ndarray, actions: np.ndarray, held: np.ndarray) -> np.ndarray:
        return view.bid_counts(actions, held)

    def counts_into(
        self,
        view: BatchedView,
        rows: np.ndarray,
        actions: np.ndarray,
        held: np.ndarray,
        out: np.ndarray,
        at: np.ndarray,
        seats: np.ndarray,
    ) -> None:
        view.bid_counts_into(out, at, seats, actions, held)

    def choices_many(self, actions: np.ndarray) -> np.ndarray:
        return actions[:, 0]

    def observations_many(self, obs: np.ndarray, rows: np.ndarray) -> np.ndarray:
        return obs


class TokenMode(ActionMode):
    """``action_mode="tokens"``: a ``Discrete(n)`` action, a bid built one token at a time (``tokens.py``). Each
    row's bid under construction is ``building[row]`` (T, 3) and the last token action it placed ``last[row]``
    (-1 for none); every other decision takes the bid mode's choice."""

    name = "tokens"

    def __init__(self, codec: Codec, rows: int) -> None:
        self.tokens = TokenCodec(codec)
        # the bid under construction last, so that the bid mode's vector is a prefix
        super().__init__(codec, rows, ObservationLayout(codec, building=True), self.tokens.n)
        self.base_size = self.layout.features["bid_building"].start
        self.building = np.zeros((rows, codec.T, 3), dtype=np.int64)
        self.last = np.full(rows, -1, dtype=np.int64)

    def space(self, seed: int | None = None) -> spaces.Space:
        return spaces.Discrete(self.n, seed=seed)

    def clear(self, rows: Any = slice(None)) -> None:
        self.building[rows] = 0
        self.last[rows] = -1

    # --- one row -----------------------------------------------------------------------------------------------

    def mask(self, game: Game, row: int, kind: Decision) -> np.ndarray:
        return self.tokens.mask(game, row, kind, self.building[row], int(self.last[row]))

    def check(self, action: Any, mask: np.ndarray, agent: str, kind: Decision) -> Any:
        return self.tokens.check(action, mask, agent, kind)

    def why(self, action: Any, mask: np.ndarray, kind: Decision) -> str:
        return self.tokens._why(int(action), mask, kind)

    def place(self, row: int, action: Any, held: np.ndarray) -> bool:
        """One token placed in the row's bid (none if it holds no token): ``place_many`` for one row, without its
        arrays (the scalar env places a token a step)."""
        if held.any():
            self.tokens.place(self.building, row, action)
            self.last[row] = action
        return bool((self.building[row].sum(0) == held).all())

    def counts(self, row: int, action: Any, held: np.ndarray) -> np.ndarray:
        return self.building[row]

    def choice(self, action: Any) -> int:
        return int(action)

    def features(self, row: int) -> np.ndarray:
        """The row's own bid under construction, seen by no one else."""
        return self.building[row].ravel()

    def from_bid_mode(self, kind: Decision, action: Any, held: np.ndarray) -> list[Any]:
        """A bid as its canonical token sequence; any other decision as its choice."""
        a = np.asarray(action, dtype=np.int64)
        if kind == BID:
            return self.tokens.sequence(self.codec.bid_counts(a, held))
        return [int(a[0])]

    # --- many rows ---------------------------------------------------------------------------------------------

    def check_many(self, actions: Any, rows_are: str) -> np.ndarray:
        a = np.asarray(actions)
        n = self.rows
        if a.shape == (n, 1):
            a = a.reshape(n)
        if a.shape != (n,) or a.dtype.kind not in "iu":
            raise ValueError(
                f"actions: expected integers of shape ({n},) (one Discrete({self.n}) action a row, {rows_are}, "
                f"action_mode='tokens'), got {a.dtype} {a.shape}"
            )
        return a.astype(np.int64, copy=False)

    def legal_many(self, view: BatchedView, actions: np.ndarray, masks: np.ndarray) -> np.ndarray:
        legal = (actions >= 0) & (actions < self.n)
        legal[legal] = masks[np.flatnonzero(legal), actions[legal]]
        return legal

    def masks_many(
        self,
        view: BatchedView,
        game: BatchedGame,
        rows: np.ndarray,
        games: np.ndarray,
        seats: np.ndarray,
        kinds: np.ndarray,
    ) -> np.ndarray:
        """``TokenCodec.mask`` for every row; the bids' from ``TokenCodec.bid_masks`` in one call."""
        m = np.zeros((len(games), self.n), dtype=bool)
        m[kinds == NONE, 0] = True
        bid = np.flatnonzero(kinds == BID)
        if len(bid):
            r = rows[bid]
            left = game.tokens[games[bid], seats[bid]] - self.building[r].sum(1)
            m[bid] = self.tokens.bid_masks(left, self.last[r])
        special = np.flatnonzero(kinds >= GUY)
        if len(special):
            m[special, : self.codec.C] = view.choice_masks(game, games[special], seats[special], kinds[special])
        return m

    def place_many(self, rows: np.ndarray, actions: np.ndarray, held: np.ndarray) -> np.ndarray:
        """One token placed in each row's bid (none where the row holds no token)."""
        placing = held.any(1)
        g, a = rows[placing], actions[placing]
        self.tokens.place(self.building, g, a)
        self.last[g] = a
        return (self.building[rows].sum(1) == held).all(1)

    def counts_many(self, view: BatchedView, rows: np.ndarray, actions: np.ndarray, held: np.ndarray) -> np.ndarray:
        return self.building[rows]

    def choices_many(self, actions: np.ndarray) -> np.ndarray:
        return actions

    def observations_many(self, obs: np.ndarray, rows: np.ndarray) -> np.ndarray:
        """The bid mode's observations with each row's bid under construction after them."""
        return np.concatenate([obs, self.building[rows].reshape(len(obs), -1).astype(np.float32)], axis=1)


_CLASSES: dict[str, type[ActionMode]] = {mode.name: mode for mode in (BidMode, TokenMode)}
ACTION_MODES = tuple(_CLASSES)  # ("bid", "tokens")


def check_action_mode(value: Any) -> str:
    if value not in ACTION_MODES:
        raise ValueError(f"action_mode: expected one of {', '.join(ACTION_MODES)}, got {value!r}")
    return value


def action_mode(name: str, codec: Codec, rows: int) -> ActionMode:
    """The mode ``name`` (``action_mode``) for ``rows`` deciders of ``codec``'s layout."""
    return _CLASSES[check_action_mode(name)](codec, rows)
