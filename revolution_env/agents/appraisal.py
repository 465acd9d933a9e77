"""What a position is worth to each seat, read from an observation only: the heuristic bots' shared judgement.

Every seat's *projected points* are its support; its expected area points (each area's free spaces are filled
at random, one cube to a uniformly chosen seat per space, and the seat with strictly the most cubes at the end
scores the area, plus the Area Control Bonus where it is on), counted less while many rounds remain (Spies and
Apothecaries move cubes until the end); the support it will still earn (its income per round so far, over the
rounds the free spaces need); and, under Bid Refunds, its tokens at their end-game points. A seat's *margin* is
its projected points minus its rivals' (a blend of the best rival and their mean), plus what its lead gains from
an earlier end. Every decision is judged by how it changes the margins: a character won (its support, its tokens
at their bidding power or, in what may be the last round, their points, its cube), a Spy move, an Apothecary
swap, a Remove card. Seats are relative, as in the observation (0 = the observer, the puppet last).
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from math import factorial

import numpy as np

from revolution_env.agents.base import Agent
from revolution_env.env.observation import ObservationView

BONUS = 10  # Area Control Bonus (docs/rules.md §5)
MIN_ROUNDS = 0.3  # the rounds left once the board is full (the round being played)
VEHICLE = 0.8  # two players: the chance that we get to make Guy beat one of our own bids


@dataclass(frozen=True)
class Judgement:
    """The weights of the appraisal; each bot has its own."""

    rival_weight: float = 0.5  # the margin is taken over w * best rival + (1 - w) * mean rival
    prior_income: float = 8.0  # support per round expected of a seat before it has shown its own ...
    prior_rounds: float = 2.0  # ... counted as this many rounds of play
    fill_rate: float = 0.7  # how often an area's character is won in a round
    unsettled: float = 0.1  # area points count 1 / (1 + unsettled * rounds left): cubes move until the end
    power: tuple[float, float, float] = (4.0, 2.5, 0.3)  # a token's bidding power next round
    refund_power: float = 1.0  # under Bid Refunds tokens stay until spent: their power, as a share of ``power`` ...
    hoard: float = 6.0  # ... shrinking as hoard / tokens held once a seat holds more than ``hoard``
    special_scale: float = 1.0  # the Spy's and the Apothecary's worth, as a share of their best move now
    lock: float = 1.0  # how much a lead gains from an earlier end (0: margins in points only) ...
    trailing: float = 1.0  # ... and, as a share of that, how much a seat behind gains from a later one


_COMPOSITIONS: dict[tuple[int, int], tuple[np.ndarray, np.ndarray]] = {}
_AREA_POINTS: dict[tuple, np.ndarray] = {}


def _compositions(free: int, seats: int) -> tuple[np.ndarray, np.ndarray]:
    """Every way ``free`` cubes fall to ``seats`` seats, with its multinomial probability (uniform seats)."""
    key = (free, seats)
    if key not in _COMPOSITIONS:
        comps = np.array([c for c in itertools.product(range(free + 1), repeat=seats) if sum(c) == free])
        ways = np.array([factorial(free) / np.prod([factorial(int(x)) for x in c]) for c in comps])
        _COMPOSITIONS[key] = (comps, ways / seats**free)
    return _COMPOSITIONS[key]


def dot3(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``a @ b`` over a last axis of three (token types), as ``a0 b0 + a1 b1 + a2 b2`` in that order. A float ``@``
    goes through BLAS, whose rounding (fused multiply-adds or not) depends on the CPU; this is the same on every
    machine, and the compiled bots (:mod:`.compiled`) compute it the same way."""
    return a[..., 0] * b[..., 0] + a[..., 1] * b[..., 1] + a[..., 2] * b[..., 2]


def area_points(support: int, spaces: int, bonus: bool, counts: tuple[int, ...]) -> np.ndarray:
    """Expected points per seat of one area holding ``counts`` cubes per seat once its free spaces are filled."""
    key = (support, spaces, bonus, counts)
    out = _AREA_POINTS.get(key)
    if out is None:
        comps, probs = _compositions(max(spaces - sum(counts), 0), len(counts))
        final = np.asarray(counts) + comps
        top = final == final.max(1, keepdims=True)
        sole = top & (top.sum(1, keepdims=True) == 1) & (final > 0)
        out = support * (probs @ sole)
        if bonus:
            out = out + BONUS * (probs @ (final == spaces))
        out.flags.writeable = False
        _AREA_POINTS[key] = out
    return out


class Tables:
    """The static data of one variant that the bots read: the bid card, the areas, the token values."""

    def __init__(self, agent: Agent) -> None:
        L = agent.codec.layout
        self.seats = L.seats
        self.players = L.players
        self.puppet = L.seats - 1 if L.puppet >= 0 else -1
        self.areas = len(L.spaces)
        self.targets = L.n_targets
        self.n_characters = L.n_characters
        self.spy, self.apothecary, self.card, self.scheming = L.spy, L.apothecary, L.card_space, L.scheming
        self.legal = L.legal.copy()
        self.bid_targets = L.legal.T.astype(float)  # (3, T): where each token type may go to contest a character
        if L.scheming >= 0:
            self.bid_targets[:, L.scheming] = 0.0
        self.bid_count = self.bid_targets.sum(1)
        self.bid_on = [np.flatnonzero(row) for row in self.bid_targets]
        self.support = np.array([ch.support for ch in L.card] + [0] * (L.n_targets - L.n_characters), float)
        self.char_tokens = np.zeros((L.n_targets, 3), dtype=np.int64)
        self.char_tokens[: L.n_characters] = [ch.tokens for ch in L.card]
        self.char_area = np.array([ch.area for ch in L.card] + [-1] * (L.n_targets - L.n_characters))
        self.spaces = L.spaces.copy()
        self.area_support = L.area_support.copy()
        self.token_points = L.token_points.astype(float)
        self.bonus = bool(L.rules.area_control_bonus)
        self.refunds = bool(L.rules.bid_refunds)
        # a bid as one comparable integer (docs/rules.md §3)
        self.strength = np.array([64 * 64, 64, 1], dtype=np.int64)
        self.guy_legal = L.legal.copy()  # D10, D11: the types a Guy bid may hold, per target (characters only)
        self.guy_legal[L.n_characters :] = False
        if L.card_space >= 0:
            self.guy_legal[L.card_space] = False
        self.max_characters = L.components.max_characters_per_bid
        self.card_max_gold = L.components.card_max_gold
        names = agent.layout.card_names
        self.cards = [next(c for c in L.components.deck if c.name == n) for n in names]
        deck = [c.name for c in L.components.deck]
        self.deck_full = np.array([deck.count(n) for n in names], dtype=float)
        others = [[q for q in range(self.seats) if q != p] for p in range(self.seats)]
        self.others = np.array(others, dtype=np.int64)
        # the character that gives the most support and nothing else (the Printer on the standard card), or -1
        plain = [c for c in range(self.n_characters) if self.char_area[c] < 0 and not self.char_tokens[c].any()
                 and c not in (self.spy, self.apothecary, self.card)]  # fmt: skip
        self.printer = max(plain, key=lambda c: self.support[c]) if plain else -1


def token_worth(tables: Tables, view: ObservationView, judgement: Judgement) -> np.ndarray:
    """(S, 3): what one Force, Blackmail, Gold won now is worth to each seat: its end-game points if this round
    may well be the last, else its bidding power in the rounds to come. Under Bid Refunds tokens are kept until
    spent, so a seat's power per token shrinks as its hoard grows."""
    open_areas = int((view.free > 0).sum())
    if (view.free > 1).any() or open_areas == 0:
        last = 0.0
    else:
        last = (0.85, 0.7, 0.55, 0.4)[min(open_areas, 4) - 1]
    power = np.tile(np.array(judgement.power), (tables.seats, 1))
    if tables.refunds:
        held = view.tokens.sum(1).astype(float)
        power *= judgement.refund_power * np.minimum(1.0, judgement.hoard / np.maximum(held, 1.0))[:, None]
    return last * tables.token_points + (1 - last) * power


class Position:
    """One observation appraised: projected points per seat, and what every change does to every seat's margin.

    A *change* is an array whose last axis holds each seat's change in projected points and, last, the change in
    the rounds left (filling a space may bring the end nearer). ``add[a, w]``: seat ``w`` adds a cube in area
    ``a``; ``move[a, v, w]``: one cube of ``v`` in ``a`` becomes ``w``'s (the Spy; half of an Apothecary swap);
    ``removal(a, v)``: one cube of ``v`` in ``a`` goes back to its owner. ``movable[a, v]`` says which cubes the Spy
    and the Apothecary may touch.

    A seat's margin counts its lead twice over: as projected points, and as time. A leader gains from an earlier
    end (fewer rounds for the others to catch up: a lead ``m`` is worth ``m / 2 * ln(R / R')`` more when the rounds
    left go from ``R`` to ``R'``, as for a normal spread of outcomes growing as the square root of the rounds left);
    a seat behind gains from a longer game."""

    def __init__(self, tables: Tables, view: ObservationView, judgement: Judgement = Judgement()) -> None:
        self.t = t = tables
        self.view = view
        self.j = j = judgement
        S, A = t.seats, t.areas
        self.S = S
        cubes = view.cubes
        self.counts = [tuple(int(x) for x in row) for row in cubes]
        played = max(view.round - 1, 0)
        self.income = (view.support + j.prior_income * j.prior_rounds) / (played + j.prior_rounds)
        self.rounds = self._rounds_left(view.free)
        self.settled = 1.0 / (1.0 + j.unsettled * self.rounds)  # cubes move until the end: count them less early
        self.area = np.array([self._points(a, self.counts[a]) for a in range(A)])  # (A, S)
        # The support still to come: each seat's income so far, over the rounds the free spaces need.
        self.X = view.support + self.area.sum(0) + self.income * self.rounds
        if t.refunds:
            self.X = self.X + view.tokens @ t.token_points
        self.lead = self._margins(self.X)  # (S,) every seat's margin now
        self.lead = np.where(self.lead > 0, self.lead, j.trailing * self.lead)
        self.U0 = self.margins(self.none())
        protected = (cubes.max(1) == t.spaces) if t.bonus else np.zeros(A, dtype=bool)
        self.movable = (cubes > 0) & ~protected[:, None]
        self.add = np.zeros((A, S, S + 1))
        for a in range(A):
            if view.free[a] > 0:
                sooner = self._sooner(a, -1)
                for w in range(S):
                    if view.supply[w] > 0:
                        self.add[a, w, :S] = self._points(a, self._bump(self.counts[a], w, +1)) - self.area[a]
                        self.add[a, w, :S] += self.income * sooner
                        self.add[a, w, S] = sooner
        self._move: np.ndarray | None = None
        self.worth = token_worth(t, view, j)

    def none(self) -> np.ndarray:
        """The change that changes nothing."""
        return np.zeros(self.S + 1)

    def _rounds_left(self, free: np.ndarray) -> float:
        """Rounds the game may still last: the free spaces of the fullest-to-be areas, one cube per area and
        round, each character won some of the time."""
        rounds = float((free.astype(float) ** 4).sum() ** 0.25) / self.j.fill_rate
        return min(rounds, float(max(self.view.rounds_left, 0)))

    def _sooner(self, a: int, by: int) -> float:
        """The change in rounds left when area ``a`` gets ``by`` more free spaces."""
        free = self.view.free.copy()
        free[a] += by
        return self._rounds_left(free) - self.rounds

    def _points(self, a: int, counts: tuple[int, ...]) -> np.ndarray:
        t = self.t
        return self.settled * area_points(int(t.area_support[a]), int(t.spaces[a]), t.bonus, counts)

    @staticmethod
    def _bump(counts: tuple[int, ...], seat: int, by: int) -> tuple[int, ...]:
        c = list(counts)
        c[seat] += by
        return tuple(c)

    @property
    def move(self) -> np.ndarray:
        """(A, S, S, S + 1): the change when a cube of ``v`` in ``a`` becomes ``w``'s (0 where no such cube may be
        touched)."""
        if self._move is None:
            S, A = self.t.seats, self.t.areas
            move = np.zeros((A, S, S, S + 1))
            for a, v in zip(*np.nonzero(self.movable)):
                taken = self._bump(self.counts[a], v, -1)
                for w in range(S):
                    if w != v:
                        move[a, v, w, :S] = self._points(a, self._bump(taken, w, +1)) - self.area[a]
            self._move = move
        return self._move

    def removal(self, a: int, v: int) -> np.ndarray:
        """The change when one cube of ``v`` in ``a`` returns to its owner's supply."""
        later = self._sooner(a, +1)
        out = self.none()
        out[: self.S] = self._points(a, self._bump(self.counts[a], v, -1)) - self.area[a] + self.income * later
        out[self.S] = later
        return out

    # --- margins ---------------------------------------------------------------------------------------------

    def _margins(self, X: np.ndarray) -> np.ndarray:
        rivals = X[..., self.t.others]  # (..., S, S-1)
        w = self.j.rival_weight
        return X - (w * rivals.max(-1) + (1 - w) * rivals.mean(-1))

    def margins(self, change: np.ndarray) -> np.ndarray:
        """(..., S + 1) changes -> (..., S) every seat's margin over its rivals, the time its lead has to hold
        included."""
        S = self.S
        out = self._margins(self.X + change[..., :S])
        if self.j.lock:
            now = max(self.rounds, MIN_ROUNDS)
            after = np.maximum(self.rounds + change[..., S], MIN_ROUNDS)
            out = out + self.j.lock * 0.5 * self.lead * np.log(now / after)[..., None]
        return out

    def gain(self, change: np.ndarray, seat: int = 0) -> np.ndarray:
        """(..., S + 1) changes -> (...,) the change in ``seat``'s margin."""
        return self.margins(change)[..., seat] - self.U0[seat]

    def gains(self, change: np.ndarray) -> np.ndarray:
        """(..., S + 1) -> (..., S): the change in every seat's margin."""
        return self.margins(change) - self.U0

    # --- the Spy and the Apothecary --------------------------------------------------------------------------

    def spy_options(self, owner: int) -> tuple[np.ndarray, np.ndarray]:
        """(A, S) bool: the cubes ``owner``'s Spy may replace, and (A, S, S + 1) the change each makes."""
        ok = self.movable.copy()
        ok[:, owner] = False
        if self.view.supply[owner] <= 0:
            ok[:] = False
        return ok, self.move[:, :, owner]

    def swap_options(self) -> tuple[np.ndarray, np.ndarray]:
        """(A, S, S, A) bool over (area 1, seat 1, seat 2, area 2): the swaps of seat 1's cube in area 1 with
        seat 2's cube in area 2, and (A, S, S, A, S + 1) the change each makes."""
        S, A = self.t.seats, self.t.areas
        m = self.move
        delta = m[:, :, :, None, :] + m.transpose(2, 1, 0, 3)[None]
        ok = self.movable[:, :, None, None] & self.movable.T[None, None, :, :]
        ok &= ~np.eye(S, dtype=bool)[None, :, :, None]
        ok &= ~np.eye(A, dtype=bool)[:, None, None, :]
        return ok, delta

    def best_spy(self, owner: int, judge: int) -> tuple[float, np.ndarray]:
        """The best gain for ``judge`` of ``owner``'s Spy move, and its change (nothing if none)."""
        ok, delta = self.spy_options(owner)
        if not ok.any():
            return 0.0, self.none()
        g = np.where(ok, self.gain(delta, judge), -np.inf)
        a, v = np.unravel_index(int(np.argmax(g)), g.shape)
        return float(g[a, v]), delta[a, v]

    def best_swap(self, judge: int) -> tuple[float, np.ndarray]:
        """The best gain for ``judge`` of an Apothecary swap, and its change (nothing if none)."""
        ok, delta = self.swap_options()
        if not ok.any():
            return 0.0, self.none()
        g = np.where(ok, self.gain(delta, judge), -np.inf)
        i = np.unravel_index(int(np.argmax(g)), g.shape)
        return float(g[i]), delta[i]

    # --- characters ------------------------------------------------------------------------------------------

    def character_deltas(self) -> np.ndarray:
        """(T, S, S + 1): the change if seat ``w`` wins target ``c`` now (``[c, w]``). The Spy and the Apothecary
        are played to the winner's best (scaled by ``special_scale``); the puppet's are worth nothing to anyone
        (someone else decides them). The Card and Scheming spaces are not contests (zero)."""
        t, view = self.t, self.view
        S = t.seats
        D = np.zeros((t.targets, S, S + 1))
        idx = np.arange(S)
        for c in range(t.n_characters):
            if c in (t.spy, t.apothecary, t.card):
                continue
            D[c, idx, idx] += t.support[c] + dot3(self.worth, np.minimum(t.char_tokens[c], view.bank))
            a = t.char_area[c]
            if a >= 0:
                D[c] += self.add[a]
        players = [w for w in range(S) if w != t.puppet]
        if t.spy >= 0:
            D[t.spy, players] = self._best_spies(players) * self.j.special_scale
        if t.apothecary >= 0:
            D[t.apothecary, players] = self._best_swaps(players) * self.j.special_scale
        return D

    def _best_spies(self, owners: list[int]) -> np.ndarray:
        """(len(owners), S + 1): each owner's best Spy move by its own margin (nothing if none)."""
        S = self.S
        g = self.gains(self.move)  # (A, v, w, judge)
        out = np.zeros((len(owners), S + 1))
        for i, w in enumerate(owners):
            ok, _ = self.spy_options(w)
            if ok.any():
                gw = np.where(ok, g[:, :, w, w], -np.inf)
                a, v = np.unravel_index(int(np.argmax(gw)), gw.shape)
                out[i] = self.move[a, v, w]
        return out

    def _best_swaps(self, judges: list[int]) -> np.ndarray:
        """(len(judges), S + 1): each judge's best Apothecary swap by its own margin (nothing if none)."""
        ok, delta = self.swap_options()
        out = np.zeros((len(judges), self.S + 1))
        if not ok.any():
            return out
        flat = delta[ok]  # (n, S + 1)
        g = self.gains(flat)  # (n, S)
        for i, w in enumerate(judges):
            out[i] = flat[int(np.argmax(g[:, w]))]
        return out

    def card_value(self, seat: int = 0) -> float:
        """The expected gain in ``seat``'s margin of one card from the first edition's deck."""
        t, view = self.t, self.view
        if t.card < 0:
            return 0.0
        left = view.deck_left.astype(float) if view.deck_left is not None and view.deck_left.sum() else t.deck_full
        values = []
        for card in t.cards:
            if card.remove:
                ok = self.movable.copy()
                ok[:, seat] = False
                best = 0.0
                for a, v in zip(*np.nonzero(ok)):
                    best = max(best, float(self.gain(self.removal(a, v), seat)))
                values.append(best)
            else:
                values.append(card.support + dot3(np.asarray(card.tokens, float), self.worth[seat]))
        return float(sum(v * p for v, p in zip(values, left / left.sum())))  # in order, as the compiled bots
