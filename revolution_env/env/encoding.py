"""Actions and masks of the environment (docs/environment.md §3).

``nvec = [C] + [T] * K``: dimension 0 is the choice of every non-bid decision; dimensions 1..K are the agent's
tokens (Force block, Blackmail block, Gold block), each set to the bid target it goes to. Seats in choices are
relative to the deciding agent (0 = itself, 1 = the next seat, ...; the puppet is always last).
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np

from revolution_env.engine.components import TOKEN_TYPES
from revolution_env.engine.game import BID, GUY, Decision, Game, IllegalAction, Layout
from revolution_env.engine.scenario import MODES

NONE = Decision.NONE
KINDS = tuple(Decision)  # NONE, BID, GUY, SPY, APOTHECARY_FIRST, APOTHECARY_SECOND, REMOVE: value = index


class IllegalActionError(IllegalAction):
    """An action that breaks the mask, given to the unwrapped environment."""


class Codec:
    """Encodes and decodes actions and masks for one game layout."""

    def __init__(self, layout: Layout) -> None:
        L = layout
        self.layout = L
        self.S = L.seats
        self.A = len(L.spaces)
        self.T = L.n_targets
        self.P = L.players
        self.n_tokens = tuple(int(n) for n in L.totals)  # 12, 12, 32
        self.K = sum(self.n_tokens)
        guy_choices = 4 * L.n_characters if L.puppet >= 0 else 0
        self.C = 1 + max(self.A * self.S, guy_choices)
        self.nvec = np.array([self.C] + [self.T] * self.K, dtype=np.int64)
        self.size = int(self.nvec.sum())
        self._nvec_u = self.nvec.astype(np.uint64)
        self.offsets = np.concatenate([[0], np.cumsum(self.nvec)[:-1]])  # start of each dimension in the flat mask
        self.block = np.concatenate([[0], np.cumsum(self.n_tokens)]) + 1  # first dimension of each token block
        # Seat order of each agent: relative seat -> absolute seat (the puppet stays last).
        self.perm = []
        for me in range(self.P):
            order = [(me + i) % self.P for i in range(self.P)]
            if L.puppet >= 0:
                order.append(L.puppet)
            self.perm.append(np.array(order, dtype=np.int64))
        self.inv = [np.argsort(p) for p in self.perm]  # absolute seat -> relative seat
        # The mask of "nothing to decide": only the all-zero action.
        self._none_mask = np.zeros(self.size, dtype=np.int8)
        self._none_mask[self.offsets] = 1
        self._token_rows = [L.legal[:, t].astype(np.int8) for t in range(3)]

    # --- masks -------------------------------------------------------------------------------------------------

    def mask(self, game: Game, seat: int, kind: str) -> np.ndarray:
        """The flat int8 mask of length ``sum(nvec)`` for ``seat`` facing decision ``kind``."""
        m = self._none_mask.copy()
        if kind == NONE:
            return m
        if kind == BID:
            tokens = self.T
            grid = m[self.C :].reshape(self.K, tokens)
            held = game.tokens[seat]
            for t in range(3):
                n = int(held[t])
                if n:
                    start = self.block[t] - 1
                    grid[start : start + n] = self._token_rows[t]
            return m
        m[0] = game.can_decline()
        if kind == GUY:
            ok = game.guy_targets()  # (C, 2 absolute player seats, 2 modes)
            if seat == 1:
                ok = ok[:, ::-1]
            m[1 : 1 + ok.size] = ok.ravel()
        else:
            ok = game.cube_targets()[:, self.perm[seat]]  # (A, S) in relative seats
            m[1 : 1 + ok.size] = ok.ravel()
        return m

    def check(self, action: Any, mask: np.ndarray, agent: str, kind: str) -> np.ndarray:
        """The action as an int64 array, or :class:`IllegalActionError` saying which dimension breaks the mask."""
        try:
            a = np.asarray(action)
        except Exception:  # pragma: no cover - numpy accepts nearly anything
            a = None
        if a is None or a.shape != self.nvec.shape or a.dtype.kind not in "iu":
            shape, dtype = getattr(a, "shape", None), getattr(a, "dtype", None)
            raise IllegalActionError(
                f"{agent}: expected an integer array of shape {tuple(self.nvec.shape)} "
                f"(MultiDiscrete {self.nvec[:2].tolist()} + ...), got {type(action).__name__} of dtype {dtype} "
                f"and shape {shape}"
            )
        a = a.astype(np.int64, copy=False)
        # one unsigned comparison catches values below 0 and past the dimension's size
        if (a.view(np.uint64) >= self._nvec_u).any() or not mask[self.offsets + a].all():
            raise IllegalActionError(f"{agent}: illegal action for decision {kind}: {self._why(a, mask, kind)}")
        return a

    def _why(self, a: np.ndarray, mask: np.ndarray, kind: str) -> str:
        bad = int(
            np.flatnonzero(
                (a < 0) | (a >= self.nvec) | ~mask[self.offsets + np.clip(a, 0, self.nvec - 1)].astype(bool)
            )[0]
        )
        value = int(a[bad])
        if bad == 0:
            allowed = np.flatnonzero(mask[: self.C]).tolist()
            return f"choice {value} is not allowed (allowed: {allowed[:12]}{' ...' if len(allowed) > 12 else ''})"
        t = int(np.searchsorted(self.block, bad, side="right")) - 1
        j = bad - int(self.block[t])
        name = self.layout.target_names[value] if 0 <= value < self.T else str(value)
        if kind != BID:
            return f"token dimension {bad} must be 0 outside bidding"
        return f"{TOKEN_TYPES[t]} token #{j + 1} (dimension {bad}) may not go to {name} (value {value})"

    # --- decoding ----------------------------------------------------------------------------------------------

    def bid_counts(self, action: np.ndarray, held: np.ndarray) -> np.ndarray:
        """(T, 3) token counts per target from a bid action."""
        out = np.empty((self.T, 3), dtype=np.int64)
        for t in range(3):
            start = self.block[t]
            out[:, t] = np.bincount(action[start : start + held[t]], minlength=self.T)
        return out

    def choice(self, value: int, seat: int, kind: str) -> tuple[int, ...] | None:
        """The engine's choice for dimension 0 (``None`` = decline / pass)."""
        if value == 0:
            return None
        i = value - 1
        if kind == GUY:
            character, rest = divmod(i, 4)
            answered_rel, mode = divmod(rest, 2)
            return (character, seat if answered_rel == 0 else 1 - seat, mode)
        area, rel = divmod(i, self.S)
        return (area, int(self.perm[seat][rel]))

    # --- encoding ----------------------------------------------------------------------------------------------

    def action_from_bid(self, counts: Any) -> np.ndarray:
        """The action for a bid given as (T, 3) counts per target (the inverse of :meth:`bid_counts`)."""
        counts = np.asarray(counts, dtype=np.int64)
        a = np.zeros(len(self.nvec), dtype=np.int64)
        for t in range(3):
            targets = np.repeat(np.arange(self.T), counts[:, t])
            if len(targets) > self.n_tokens[t]:
                raise ValueError(f"{len(targets)} {TOKEN_TYPES[t]} is more than the game holds")
            a[self.block[t] : self.block[t] + len(targets)] = targets
        return a

    def action_from_choice(self, choice: tuple[int, ...] | None, seat: int, kind: str) -> np.ndarray:
        """The action for an engine choice (absolute seats)."""
        a = np.zeros(len(self.nvec), dtype=np.int64)
        if choice is None:
            return a
        if kind == GUY:
            character, answered, mode = choice
            a[0] = 1 + (character * 2 + (0 if answered == seat else 1)) * 2 + mode
        else:
            area, target = choice
            rel = int(np.flatnonzero(self.perm[seat] == target)[0])
            a[0] = 1 + area * self.S + rel
        return a

    # --- people ------------------------------------------------------------------------------------------------

    def describe(self, action: Any, game: Game, seat: int, kind: str) -> str:
        """A readable form of an action, e.g. ``bid: 1 force Printer, 3 gold Priest`` or ``spy: P1's cube in
        Tavern``."""
        a = np.asarray(action, dtype=np.int64)
        if kind == NONE:
            return "none"
        if kind == BID:
            counts = self.bid_counts(a, game.tokens[seat])
            return "bid: " + format_bid(counts, self.layout.target_names)
        choice = self.choice(int(a[0]), seat, kind)
        who = _seat_name(self.layout)
        if kind == GUY:
            if choice is None:
                return "guy: pass"
            c, answered, mode = choice
            return f"guy: {MODES[mode]} {who(answered)}'s bid on {self.layout.target_names[c]}"
        if choice is None:
            return f"{kind}: decline"
        area, target = choice
        return f"{kind}: {who(target)}'s cube in {self.layout.components.areas[area].name}"

    def parse_bid(self, text: str) -> np.ndarray:
        """(T, 3) counts from a bid written as ``3 gold printer, 1 force priest`` (case and plurals ignored)."""
        names = {n.lower(): i for i, n in enumerate(self.layout.target_names)}
        counts = np.zeros((self.T, 3), dtype=np.int64)
        text = text.strip()
        if not text:
            return counts
        for part in re.split(r"\s*[,;]\s*", text):
            m = re.fullmatch(r"(\d+)\s+([a-zA-Z]+?)s?\s+(?:on\s+)?([a-zA-Z ]+)", part.strip())
            if not m:
                raise ValueError(f"cannot read {part!r}: write it like '3 gold printer'")
            n, token, target = int(m.group(1)), m.group(2).lower(), m.group(3).strip().lower()
            token = {"f": "force", "b": "blackmail", "g": "gold"}.get(token, token)
            if token not in TOKEN_TYPES:
                raise ValueError(f"unknown token {m.group(2)!r} (force, blackmail or gold)")
            if target not in names and target.endswith("s") and target[:-1] in names:
                target = target[:-1]  # "3 gold rogues"
            if target not in names:
                raise ValueError(f"unknown target {m.group(3)!r} (one of: {', '.join(self.layout.target_names)})")
            counts[names[target], TOKEN_TYPES.index(token)] += n
        return counts


def format_bid(counts: np.ndarray, names: tuple[str, ...]) -> str:
    parts = []
    for c, name in enumerate(names):
        for t, token in enumerate(TOKEN_TYPES):
            if counts[c, t]:
                parts.append(f"{int(counts[c, t])} {token} {name}")
    return ", ".join(parts) if parts else "nothing"


def _seat_name(layout: Layout):
    return lambda s: "Guy" if s == layout.puppet else f"P{s}"
