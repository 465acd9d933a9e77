"""Seat-relative observations: the layout of the vector, its builder and its decoder.

The vector holds only what the observing player may know. Seats are relative (0 = the observer, 1 = the next
seat, ...; the puppet always last). Counts are raw (not scaled): ``ObservationLayout.scale`` gives a per-feature
divisor for learners that want inputs near [0, 1]. :func:`decode` turns a vector back into an
:class:`ObservationView`, which is what the heuristic bots read, so they see exactly what a learner sees.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from revolution_env.engine.game import BIDDING, Decision, Game, Phase
from revolution_env.env.encoding import KINDS, Codec


@dataclass(frozen=True)
class Feature:
    name: str
    start: int
    shape: tuple[int, ...]
    scale: float
    doc: str

    @property
    def size(self) -> int:
        return int(np.prod(self.shape))

    @property
    def stop(self) -> int:
        return self.start + self.size


class ObservationLayout:
    """The features of the observation vector, in order. ``layout.features`` documents each one."""

    def __init__(self, codec: Codec, building: bool = False) -> None:
        L = codec.layout
        S, A, T = codec.S, codec.A, codec.T
        self.codec = codec
        self.seats, self.areas, self.targets = S, A, T
        self.n_characters = L.n_characters
        self.puppet = L.puppet >= 0
        self.first_edition = L.card_space >= 0
        self.card_names = tuple(dict.fromkeys(c.name for c in L.components.deck)) if self.first_edition else ()
        self._card_type = (
            np.array([self.card_names.index(c.name) for c in L.components.deck]) if self.first_edition else None
        )
        spec: list[tuple[str, tuple[int, ...], float, str]] = [
            ("round", (1,), 20.0, "the round being played (1, 2, ...)"),
            ("rounds_left", (1,), float(L.rules.max_rounds), "max_rounds minus round"),
            ("phase", (4,), 1.0, "one-hot: bidding, scheming, resolution, over"),
            ("decision", (len(KINDS),), 1.0, "one-hot of what the observer is asked: " + ", ".join(map(str, KINDS))),
            ("for_puppet", (1,), 1.0, "1 when the observer decides for the puppet (Guy's Spy or Apothecary)"),
            ("can_decline", (1,), 1.0, "1 when the pending decision may be declined or passed"),
            ("tokens", (S, 3), 10.0, "tokens held per seat: force, blackmail, gold (public, docs/rules.md §2)"),
            ("support", (S,), 100.0, "support track per seat"),
            ("supply", (S,), 25.0, "cubes not on the board, per seat"),
            ("bank", (3,), 32.0, "tokens in the bank: force, blackmail, gold"),
            ("cubes", (A, S), 8.0, "cubes per area (board order) and seat"),
            ("bids", (S, T, 3), 10.0, "revealed bids of `bids_round` per seat, target, token (puppet's too)"),
            ("free", (A,), 8.0, "empty spaces per area"),
            ("bids_current", (1,), 1.0, "1 when `bids` are this round's (revealed), 0 when they are the last round's"),
            ("winners", (T, S + 2), 1.0, "per target, one-hot: unresolved, nobody, then the winning seat"),
            ("apothecary_first", (A, S), 1.0, "one-hot: the cube picked first for the Apothecary swap"),
        ]
        if self.puppet:
            spec += [
                ("scheming_gold", (S,), 10.0, "Gold each seat put on the Scheming space in `bids_round`"),
                ("guy_bids", (1,), 6.0, "Guy bids placed this round"),
                ("guy_last_placer", (S + 1,), 1.0, "one-hot: nobody yet, then the seat that placed Guy's last bid"),
            ]
        if self.first_edition:
            n = len(self.card_names)
            spec += [
                (
                    "cards_drawn",
                    (S, n),
                    3.0,
                    "cards drawn in `bids_round` per seat and card type: " + ", ".join(self.card_names),
                ),
                ("deck_left", (n,), 4.0, "cards of each type left in the draw pile (its order stays hidden)"),
            ]
        spec.append(("final_support", (S,), 100.0, "final support (track + tokens + areas) once the game is over"))
        if building:  # action_mode="tokens": last, so that the bid mode's vector is this one's prefix
            spec.append(
                ("bid_building", (T, 3), 10.0, "the observer's own bid so far, per target and token (tokens mode)")
            )
        self.features: dict[str, Feature] = {}
        start = 0
        for name, shape, scale, doc in spec:
            f = Feature(name, start, shape, scale, doc)
            self.features[name] = f
            start = f.stop
        self.size = start
        self.scale = np.ones(self.size, dtype=np.float32)
        for f in self.features.values():
            self.scale[f.start : f.stop] = f.scale
        self._slices = {name: slice(f.start, f.stop) for name, f in self.features.items()}
        self._at = {name: f.start for name, f in self.features.items()}
        self._sl_free = self._slices["free"]
        # tokens, support, supply, bank, cubes and bids are one gather from the engine's public arrays
        # (concatenated in that order, absolute seats) into a contiguous run of features
        self._public = slice(self._at["tokens"], self._slices["bids"].stop)
        self._gather = []
        for perm in codec.perm:
            base = np.cumsum([0, S * 3, S, S, 3, A * S])
            self._gather.append(
                np.concatenate(
                    [
                        (base[0] + perm[:, None] * 3 + np.arange(3)).ravel(),
                        base[1] + perm,
                        base[2] + perm,
                        base[3] + np.arange(3),
                        (base[4] + np.arange(A)[:, None] * S + perm[None, :]).ravel(),
                        (base[5] + perm[:, None, None] * (T * 3) + np.arange(T * 3).reshape(1, T, 3)).ravel(),
                    ]
                )
            )
        assert len(self._gather[0]) == self._public.stop - self._public.start
        # winners one-hot: index of (target, column) where column 0 = unresolved, 1 = nobody, 2 + relative seat
        self._winner_base = self._at["winners"] + np.arange(T) * (S + 2)
        self._winner_col = [np.concatenate([[0, 1], 2 + inv]) for inv in codec.inv]

    def describe(self) -> str:
        """The layout as a table (name, index range, shape, meaning)."""
        rows = [f"{'feature':<17} {'indices':<11} {'shape':<12} meaning"]
        for f in self.features.values():
            rows.append(f"{f.name:<17} {f'{f.start}:{f.stop}':<11} {str(f.shape):<12} {f.doc}")
        return "\n".join(rows)

    def bounds(self) -> tuple[np.ndarray, np.ndarray]:
        """Lower and upper bounds that hold every observation vector of this variant (raw counts, not scaled): from
        the components (token totals, spaces, cubes) and ``max_rounds`` (the support a game can gather in that
        many rounds). The observation spaces declare them, so that ``space.contains`` means something."""
        obs_layout, layout = self, self.codec.layout
        comp = layout.components
        rounds = layout.rules.max_rounds
        per_round = sum(ch.support for ch in layout.card) + max((c.support for c in comp.deck), default=0) * 3
        support = per_round * rounds * layout.seats
        score = (
            support
            + int(np.dot(layout.totals, layout.token_points))
            + int(layout.area_support.sum())
            + 10 * len(layout.spaces)
        )
        totals = layout.totals.astype(np.float64)
        high = np.ones(obs_layout.size, dtype=np.float64)
        limits = {
            "round": rounds,
            "rounds_left": rounds,
            "tokens": np.tile(totals, obs_layout.seats),
            "support": support,
            "supply": comp.cubes_per_seat,
            "bank": totals,
            "cubes": np.repeat(layout.spaces, obs_layout.seats),
            "bids": np.tile(totals, obs_layout.seats * obs_layout.targets),
            "free": layout.spaces,
            "scheming_gold": totals[2],
            "guy_bids": 6,
            "cards_drawn": 3,
            "deck_left": len(comp.deck),
            "final_support": score,
            "bid_building": np.tile(totals, obs_layout.targets),
        }
        for name, f in obs_layout.features.items():
            if name in limits:
                high[f.start : f.stop] = limits[name]
        return np.zeros(obs_layout.size, dtype=np.float32), high.astype(np.float32)

    # --- building ----------------------------------------------------------------------------------------------

    def build(self, game: Game, seat: int, kind: Decision) -> np.ndarray:
        """The observation vector of ``seat``, who faces decision ``kind``."""
        c = self.codec
        perm, inv = c.perm[seat], c.inv[seat]
        f = self._at
        v = np.zeros(self.size, dtype=np.float32)
        v[f["round"]] = game.round
        v[f["rounds_left"]] = game.rules.max_rounds - game.round
        v[f["phase"] + int(game.phase)] = 1
        v[f["decision"] + kind] = 1
        L = game.layout
        if kind not in (Decision.NONE, Decision.BID):
            v[f["can_decline"]] = game.can_decline()
            if L.puppet >= 0 and kind in (Decision.SPY, Decision.APOTHECARY_FIRST, Decision.APOTHECARY_SECOND):
                v[f["for_puppet"]] = game.winners[L.spy if kind == Decision.SPY else L.apothecary] == L.puppet
        public = np.concatenate(
            (game.tokens.ravel(), game.support, game.supply, game.bank, game.cubes.ravel(), game.revealed.ravel())
        )
        v[self._public] = public[self._gather[seat]]
        v[self._sl_free] = L.spaces - game.cubes.sum(1)
        if game.revealed_round:
            v[f["bids_current"]] = game.revealed_round == game.round and game.phase != BIDDING
            v[self._winner_base + self._winner_col[seat][game.winners + 2]] = 1
        else:
            v[self._winner_base] = 1  # unresolved
        if kind == Decision.APOTHECARY_SECOND:
            area, s = game._apothecary_first
            v[f["apothecary_first"] + area * self.seats + inv[s]] = 1
        if self.puppet:
            v[self._slices["scheming_gold"]] = game.scheming_gold[perm]
            if game.revealed_round == game.round and game.phase != BIDDING:
                v[f["guy_bids"]] = game._guy_count
            last = game.guy_last_placer
            v[f["guy_last_placer"] + (0 if last < 0 else 1 + inv[last])] = 1
        if self.first_edition:
            if game.cards_drawn:
                drawn = np.zeros((self.seats, len(self.card_names)), dtype=np.float32)
                for s, i in game.cards_drawn:
                    drawn[inv[s], self._card_type[i]] += 1
                v[self._slices["cards_drawn"]] = drawn.ravel()
            v[self._slices["deck_left"]] = np.bincount(self._card_type[game._draw_pile], minlength=len(self.card_names))
        if game.final is not None:
            v[self._slices["final_support"]] = np.asarray(game.final["support"])[perm]
        return v

    # --- decoding ----------------------------------------------------------------------------------------------

    def decode(self, vector: np.ndarray) -> ObservationView:
        v = np.asarray(vector, dtype=np.float32)
        if v.shape != (self.size,):
            raise ValueError(f"observation: expected a vector of length {self.size}, got shape {v.shape}")

        def get(name: str) -> np.ndarray:
            return np.rint(v[self._slices[name]]).astype(np.int64).reshape(self.features[name].shape)

        winners = get("winners").argmax(1) - 2  # -2 unresolved, -1 nobody, else relative seat
        first = get("apothecary_first")
        last = int(get("guy_last_placer").argmax()) - 1 if self.puppet else -1
        return ObservationView(
            round=int(get("round")[0]),
            rounds_left=int(get("rounds_left")[0]),
            phase=Phase(int(get("phase").argmax())),
            decision=KINDS[int(get("decision").argmax())],
            for_puppet=bool(get("for_puppet")[0]),
            can_decline=bool(get("can_decline")[0]),
            tokens=get("tokens"),
            support=get("support"),
            supply=get("supply"),
            bank=get("bank"),
            cubes=get("cubes"),
            free=get("free"),
            bids=get("bids"),
            bids_current=bool(get("bids_current")[0]),
            winners=winners,
            apothecary_first=tuple(int(x) for x in np.argwhere(first)[0]) if first.any() else None,
            scheming_gold=get("scheming_gold") if self.puppet else np.zeros(self.seats, dtype=np.int64),
            guy_bids=int(get("guy_bids")[0]) if self.puppet else 0,
            guy_last_placer=last,
            cards_drawn=get("cards_drawn") if self.first_edition else None,
            deck_left=get("deck_left") if self.first_edition else None,
            final_support=get("final_support") if v[self._slices["phase"]][Phase.OVER] else None,
            puppet=self.seats - 1 if self.puppet else -1,
        )


@dataclass
class ObservationView:
    """A readable observation. Seats are relative: 0 is the observer; ``puppet`` is the puppet's seat or -1.
    Arrays are indexed as in the feature table (``ObservationLayout.describe()``)."""

    round: int
    rounds_left: int
    phase: Phase
    decision: Decision
    for_puppet: bool
    can_decline: bool
    tokens: np.ndarray  # (S, 3)
    support: np.ndarray  # (S,)
    supply: np.ndarray  # (S,)
    bank: np.ndarray  # (3,)
    cubes: np.ndarray  # (A, S)
    free: np.ndarray  # (A,)
    bids: np.ndarray  # (S, T, 3)
    bids_current: bool
    winners: np.ndarray  # (T,): -2 unresolved, -1 nobody, else the winning seat
    apothecary_first: tuple[int, int] | None
    scheming_gold: np.ndarray
    guy_bids: int
    guy_last_placer: int
    cards_drawn: np.ndarray | None
    deck_left: np.ndarray | None
    final_support: np.ndarray | None
    puppet: int
