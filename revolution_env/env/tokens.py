"""The token action mode (``action_mode="tokens"``, docs/environment.md §5 "Token mode"): one ``Discrete(n)`` action.

A bid is built one token at a time. Action ``type * T + target`` places one token of ``type`` (0 Force,
1 Blackmail, 2 Gold) on bid ``target``. Tokens go in canonical order, non-decreasing in ``(type, target)``: all
Force first, then Blackmail, then Gold, each type's targets in increasing order, so that every bid has exactly
one sequence. The bid is complete when every token held is placed (a player holding none places nothing and
sends action 0 once). Every other decision takes the bid mode's choice, dimension 0. ``n = max(C, 3 * T)``.

The mask is exact: while building, the only type allowed is the lowest one with tokens left to place (a higher
type could never be followed by it), on the targets that accept it and are not before the last token placed.
Any such prefix completes to a legal bid (the remaining tokens of the type may stay on the same target), so
every unmasked action leads to a bid the bid mode allows, and every bid the bid mode allows is reachable.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from revolution_env.engine.components import TOKEN_TYPES
from revolution_env.engine.game import BID, Decision, Game
from revolution_env.env.encoding import NONE, Codec, IllegalActionError


class TokenCodec:
    """Masks, checks and the canonical sequences of the token mode, on top of the bid mode's :class:`Codec`
    (which keeps the one definition of which token may go where)."""

    def __init__(self, codec: Codec) -> None:
        self.codec = codec
        self.T = codec.T
        self.n = max(codec.C, 3 * codec.T)
        self._legal = codec.layout.legal  # (T, 3): target accepts type

    def mask(self, game: Game, seat: int, kind: Decision, building: np.ndarray, last: int) -> np.ndarray:
        """The ``int8`` mask of length ``n``. ``building`` is the seat's (T, 3) bid so far, ``last`` the last
        token action it placed (-1 for none)."""
        m = np.zeros(self.n, dtype=np.int8)
        if kind == NONE:
            m[0] = 1
            return m
        if kind != BID:
            m[: self.codec.C] = self.codec.mask(game, seat, kind)[: self.codec.C]
            return m
        left = game.tokens[seat] - building.sum(0)
        return self.bid_masks(left[None], np.array([last]))[0].astype(np.int8)

    def bid_masks(self, left: np.ndarray, last: np.ndarray) -> np.ndarray:
        """(m, n) bool: the masks of m seats building a bid, with ``left`` (m, 3) tokens still to place per type
        and ``last`` (m,) the last token action each placed (-1 for none). With nothing left, only action 0 (the
        empty bid, or the bid complete). The one definition of the bid masks: the scalar env, the vector env and a
        token-mode policy playing a bid all call it."""
        left = np.asarray(left, dtype=np.int64).reshape(-1, 3)
        last = np.asarray(last, dtype=np.int64).reshape(-1)
        T = self.T
        out = np.zeros((len(left), self.n), dtype=bool)
        building = left.any(1)
        out[~building, 0] = True
        rows = np.flatnonzero(building)
        if len(rows) == 0:
            return out
        t = np.argmax(left[rows] > 0, axis=1)  # the lowest type with tokens left
        before = last[rows]
        floor = np.where((before >= 0) & (before // T == t), before % T, 0)  # not before the last token of t
        ok = self._legal[:, t].T & (np.arange(T)[None, :] >= floor[:, None])
        out[rows[:, None], t[:, None] * T + np.arange(T)[None, :]] = ok
        return out

    def check(self, action: Any, mask: np.ndarray, agent: str, kind: Decision) -> int:
        """The action as an ``int``, or :class:`IllegalActionError` saying why; nothing changes."""
        a = np.asarray(action) if not isinstance(action, (int, np.integer)) else None
        if a is not None and (a.shape not in ((), (1,)) or a.dtype.kind not in "iu"):
            raise IllegalActionError(
                f"{agent}: expected an integer in [0, {self.n}) (Discrete({self.n}), action_mode='tokens'), got "
                f"{type(action).__name__} of dtype {a.dtype} and shape {a.shape}"
            )
        if isinstance(action, bool):
            raise IllegalActionError(f"{agent}: expected an integer in [0, {self.n}), got {action!r}")
        value = int(action) if a is None else int(a.reshape(-1)[0])
        if not 0 <= value < self.n or not mask[value]:
            raise IllegalActionError(f"{agent}: illegal action for decision {kind}: {self._why(value, mask, kind)}")
        return value

    def _why(self, value: int, mask: np.ndarray, kind: Decision) -> str:
        allowed = np.flatnonzero(mask).tolist()
        shown = f"{allowed[:12]}{' ...' if len(allowed) > 12 else ''}"
        if kind == BID and 0 <= value < 3 * self.T and len(allowed) > 0 and allowed != [0]:
            t, c = divmod(value, self.T)
            name = self.codec.layout.target_names[c]
            return f"{TOKEN_TYPES[t]} on {name} (action {value}) is not next in the canonical order (allowed: {shown})"
        return f"action {value} is not allowed (allowed: {shown})"

    def place(self, building: np.ndarray, rows: Any, actions: Any) -> None:
        """Add to ``building`` ((m, T, 3) bids under construction) the token that each of ``actions`` places in its
        row of ``rows`` (distinct): action ``t * T + c`` is a token of type ``t`` on target ``c``, as ``sequence``
        writes it. The one decoding of a token action: the scalar env, the vector env and a token-mode policy
        playing a bid all call it."""
        t, c = np.divmod(np.asarray(actions, dtype=np.int64), self.T)
        building[rows, c, t] += 1

    def sequence(self, counts: Any) -> list[int]:
        """The one token sequence that builds the bid ``counts`` ((T, 3) per target and type); the empty bid is
        ``[0]``."""
        counts = np.asarray(counts, dtype=np.int64)
        seq = [t * self.T + c for t in range(3) for c in range(self.T) for _ in range(int(counts[c, t]))]
        return seq or [0]
