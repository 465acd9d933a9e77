"""Heuristic bots: ``value``, ``bargain`` and ``area``, three styles of play read off the observation alone.

Each bot answers every decision of every variant (``bid``, ``guy``, ``spy``, ``apothecary_first``,
``apothecary_second``, ``remove``, ``none``) from ``self.view(observation)`` and the action mask; none touches the
environment or the engine's game. They share one judgement (:mod:`.appraisal`: projected points and margins) and
one way of placing cubes and Guy's bids; they differ in how they bid, which is where the game is won.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np

from revolution_env.agents.appraisal import VEHICLE, Judgement, Position, Tables, dot3
from revolution_env.agents.base import Agent
from revolution_env.common.jit import COMPILED
from revolution_env.engine.components import BLACKMAIL, FORCE, GOLD
from revolution_env.engine.game import MAX_GUY_BIDS, Decision, guy_beats
from revolution_env.env.observation import ObservationView

SPAN = 1 << 20  # larger than any bid's key (docs/rules.md §3 order as one integer)


class HeuristicBot(Agent):
    """What the three bots share: decoding, the cube decisions (Spy, Apothecary, Remove), Guy's bids, and a
    check that every action fits the mask (a bot that would break it counts a ``fallback`` and plays a legal
    default instead; the tests require none)."""

    name = "heuristic"
    style: str | None = None  # "value", "bargain" or "area": whose code decides (the compiled bots' STYLES)
    judgement = Judgement()
    # how the opponents' bids are sampled (BidModel)
    samples, habit, sharpness, spread, clumping, persistence = 48, 0.5, 1.5, 0.3, 2.0, 2.0
    mirror, inner_samples = 0.0, 8  # the share of samples in which a rival plans its bid as we plan ours ...
    mirror_rivals = 3  # ... for this many rivals at most (the best armed; fewer is faster, and weaker)
    spend = 1.0  # under Bid Refunds, what winning costs: the tokens spent, as a share of their worth
    decline_below = 0.05  # a Spy or Apothecary move must gain at least this much margin, or it is declined

    def __init__(self, **env_options: Any) -> None:
        super().__init__(**env_options)
        self.t = Tables(self)
        self.fallbacks = 0
        # The three styles below also exist compiled (.compiled: the same decisions, 5 to 50 times sooner), and so
        # do their variants that change parameters only (.variants); a subclass that changes how a bot decides
        # plays this module's code. False forces the reference.
        self.compiled = COMPILED and sets_parameters_only(type(self))
        self._tables: tuple | None = None

    @property
    def _compiled_tables(self) -> tuple:
        if self._tables is None:
            from revolution_env.agents.compiled import tables

            self._tables = tables(self)
        return self._tables

    def _compiled_ready(self) -> bool:
        if not self.compiled:
            return False
        from revolution_env.agents.compiled import ready

        return ready(self)

    def act(self, observation: dict[str, np.ndarray], info: dict[str, Any]) -> np.ndarray:
        if self._compiled_ready():
            from revolution_env.agents.compiled import decide

            actions, fallbacks = decide(self, observation["observation"][None], observation["action_mask"][None])
            self.fallbacks += fallbacks
            return actions[0]
        return self.act_reference(observation, info)

    def act_batch(self, observations: np.ndarray, masks: np.ndarray, kinds: np.ndarray) -> np.ndarray:
        """Actions (n, D) for the rows of ``observations`` (n, size) and ``masks`` (n, sum(nvec)): the same as
        ``act`` on each row in turn (the vector env plays a heuristic opponent of many games this way)."""
        if self._compiled_ready():
            from revolution_env.agents.compiled import decide

            actions, fallbacks = decide(self, observations, masks)
            self.fallbacks += fallbacks
            return actions
        actions = np.zeros((len(observations), len(self.codec.nvec)), dtype=np.int64)
        for i, (obs, mask, kind) in enumerate(zip(observations, np.asarray(masks, dtype=np.int8), kinds)):
            actions[i] = self.act_reference(
                {"observation": obs, "action_mask": mask}, {"decision": Decision(int(kind))}
            )
        return actions

    def act_reference(self, observation: dict[str, np.ndarray], info: dict[str, Any]) -> np.ndarray:
        """The decision as this module computes it (NumPy): what the compiled bots are tested against."""
        mask = observation["action_mask"]
        view = self.view(observation)
        kind = view.decision
        if kind == Decision.NONE:
            return self.choice_action(0)
        pos = Position(self.t, view, self.judgement)
        if kind == Decision.BID:
            action = self.bid_action(self.bid(view, mask, pos))
        elif kind == Decision.GUY:
            action = self.choice_action(self.guy(view, mask, pos))
        else:
            action = self.choice_action(self.cube(kind, view, mask, pos))
        if not mask[self.codec.offsets + action].all():  # never expected: a safe legal default
            self.fallbacks += 1
            action = self._legal_default(mask)
        return action

    def _legal_default(self, mask: np.ndarray) -> np.ndarray:
        a = np.zeros(len(self.codec.nvec), dtype=np.int64)
        for d in range(len(a)):
            row = mask[self.codec.offsets[d] : self.codec.offsets[d] + self.codec.nvec[d]]
            a[d] = int(np.argmax(row))
        return a

    # --- to be written by each style -------------------------------------------------------------------------

    def bid(self, view: ObservationView, mask: np.ndarray, pos: Position) -> np.ndarray:
        """(T, 3) counts of every held token per bid target."""
        raise NotImplementedError

    # --- cube decisions: the change in projected margin, best first ------------------------------------------

    def cube(self, kind: Decision, view: ObservationView, mask: np.ndarray, pos: Position) -> int:
        """Spy, Apothecary (both picks) and Remove: the legal choice that raises our margin most; decline where
        allowed when nothing helps."""
        S, A = self.t.seats, self.t.areas
        legal = mask[1 : 1 + A * S].reshape(A, S).astype(bool)
        can_decline = bool(mask[0])
        if kind == Decision.SPY:
            owner = self.t.puppet if view.for_puppet else 0
            gain = pos.gain(pos.move[:, :, owner])  # (A, S) over the replaced cube
        elif kind == Decision.REMOVE:
            gain = np.full((A, S), -np.inf)
            for a, v in zip(*np.nonzero(legal)):
                gain[a, v] = pos.gain(pos.removal(a, v))
        elif kind == Decision.APOTHECARY_FIRST:
            ok, delta = pos.swap_options()
            g = np.where(ok & legal[:, :, None, None], pos.gain(delta), -np.inf)
            gain = g.max((2, 3))
        else:  # apothecary_second
            a1, s1 = view.apothecary_first
            m = pos.move
            gain = pos.gain(m[a1, s1][None, :, :] + m[:, :, s1])  # (A, S) over the second cube
        gain = np.where(legal, gain, -np.inf)
        gain = gain + self.rng.random(gain.shape) * 1e-9
        a, v = np.unravel_index(int(np.argmax(gain)), gain.shape)
        if can_decline and gain[a, v] <= self.decline_below:
            return 0
        return self.cube_choice(int(a), int(v))

    # --- the puppet's bids (two players) ---------------------------------------------------------------------

    def guy(self, view: ObservationView, mask: np.ndarray, pos: Position) -> int:
        """Place one bid for Guy: the option with the best change in our margin once the opponent has answered
        with its own best placement (two plies); pass where allowed if nothing beats passing."""
        t = self.t
        C = t.n_characters
        G = pos.gains(pos.character_deltas())[:C]  # (C, winner, judge)
        guy = view.tokens[t.puppet]
        tokens, value = self._guy_options(view.bids[:, :C], guy, G)  # (C, 2, 2, 3), (C, 2, 2, S)
        legal = mask[1 : 1 + 4 * C].reshape(C, 2, 2).astype(bool)  # ours, as the mask offers them
        # The opponent's answers: its options are ours seen from its seat (answered 0 = its own bid).
        theirs = np.broadcast_to(self._guy_open(view.bids[:, :C])[:, ::-1, None], legal.shape)
        tok_o = tokens.reshape(-1, 3)
        mine = value[..., 0].reshape(-1)
        val_r = value[:, ::-1].reshape(-1, value.shape[-1])
        char = np.repeat(np.arange(C), 4)
        left = guy[None, :] - tok_o  # Guy's tokens after each of our options
        # which of the opponent's placements Guy can still pay after each of ours (a beat's added token depends on
        # what Guy has left, D11; its value is taken as with the token of the beat Guy could place now)
        answered_r = view.bids[:2, :C][::-1].transpose(1, 0, 2)  # (C, 2, 3): their own bid first
        can_tie = (answered_r[None] <= left[:, None, None, :]).all(-1)  # (4C, C, 2)
        can_beat = guy_beats(answered_r.transpose(1, 0, 2), left[:, None, :], t.guy_legal[:C])[1].transpose(0, 2, 1)
        payable = np.stack([can_tie, can_beat], axis=-1).reshape(len(left), -1)  # (4C, 4C)
        fits = payable & theirs.reshape(-1)[None, :]
        fits &= char[None, :] != char[:, None]
        reply = np.where(fits, val_r[None, :, 1], -np.inf)
        best = reply.argmax(1)
        can_pass = view.guy_bids + 1 >= 2  # D12: from the third Guy bid on, the opponent may pass
        answered = fits.any(1) & ~(can_pass & (reply.max(1, initial=-np.inf) <= 0))
        answered &= view.guy_bids + 1 < MAX_GUY_BIDS
        score = mine + np.where(answered, val_r[best, 0], 0.0)
        score = np.where(legal.reshape(-1), score, -np.inf) + self.rng.random(score.shape) * 1e-9
        i = int(np.argmax(score))
        if mask[0] and score[i] <= 0.0:
            return 0
        character, rest = divmod(i, 4)
        return self.guy_choice(character, *divmod(rest, 2))

    def _guy_open(self, bids: np.ndarray) -> np.ndarray:
        """(C, 2) bool: D10, a player's bid that Guy may answer (Guy has not bid there; not the Card space)."""
        t = self.t
        open_ = ~bids[t.puppet].any(1)
        if t.card >= 0:
            open_[t.card] = False
        return bids[:2].any(2).T & open_[:, None]

    def _guy_options(self, bids: np.ndarray, guy: np.ndarray, G: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Every Guy placement (character, answered player seat, tie/beat): its tokens (D11) and every seat's
        change in margin once that character is resolved with it (against the outcome without it)."""
        t = self.t
        C = t.n_characters
        answered = bids[:2].transpose(1, 0, 2)  # (C, 2, 3)
        beat = guy_beats(bids[:2], guy, t.guy_legal[:C])[0].transpose(1, 0, 2)  # (C, 2, 3)
        tokens = np.stack([answered, beat], axis=2)  # (C, 2, 2, 3)
        keys = bids @ t.strength  # (S, C)
        guy_key = tokens @ t.strength  # (C, 2, 2)
        k0, k1 = keys[0][:, None, None], keys[1][:, None, None]
        top = np.maximum(np.maximum(k0, k1), guy_key)
        count = (k0 == top).astype(int) + (k1 == top) + (guy_key == top)
        winner = np.where(guy_key == top, t.puppet, np.where(k1 == top, 1, 0))
        winner = np.where((count == 1) & (top > 0), winner, -1)  # (C, 2, 2)
        outcome = np.where((winner >= 0)[..., None], G[np.arange(C)[:, None, None], np.maximum(winner, 0)], 0.0)
        before = self._outcome(G, self._winners(bids))  # (C, S)
        return tokens, outcome - before[:, None, None, :]

    def _winners(self, bids: np.ndarray) -> np.ndarray:
        keys = bids @ self.t.strength  # (S, T)
        top = keys.max(0)
        sole = ((keys == top).sum(0) == 1) & (top > 0)
        return np.where(sole, keys.argmax(0), -1)

    def _outcome(self, G: np.ndarray, winners: np.ndarray) -> np.ndarray:
        """(T, judge): every seat's change in margin from each target's winner (0 where nobody wins)."""
        out = G[np.arange(len(winners)), np.maximum(winners, 0)]
        return np.where((winners >= 0)[:, None], out, 0.0)


class BidModel:
    """The rivals' bids as samples, and what a bid of ours on each target is worth against them.

    Seen from ``seat`` (0: us). A share ``mirror`` of the samples is level one: each rival plans its bid as we
    plan ours (:func:`plan_bid`), against rivals that play by their interests; the rest come from its interests
    and habits. Of those, a share ``habit`` repeats its bid of last round (public once revealed): its tokens of
    each type spread over the targets in the same proportions. The others place each token at random on a
    target it may take, more likely where that rival's own margin gains most (``sharpness``) and where it bid
    last round (``persistence``), partly at random (``spread``); tokens of one type stack as much as they did
    last round (a Dirichlet-multinomial).

    A bid of ours on a target is worth its value times the chance it is strictly highest, plus the (negative)
    value of the rival who would otherwise win, minus the tokens it spends under Bid Refunds (``spend``). Two
    players: a bid Guy could tie or beat is discounted (``guy_risk``), one Guy could beat is a way to hand him a
    character we would rather he won (the last space of an area we cannot fill ourselves, say); Scheming Gold
    buys priority."""

    def __init__(self, bot: HeuristicBot, view: ObservationView, pos: Position, G: np.ndarray, seat: int = 0,
                 samples: int | None = None, mirror: float | None = None) -> None:  # fmt: skip
        t = bot.t
        self.t, self.view, self.pos, self.seat = t, view, pos, seat
        K = samples or bot.samples
        T = t.targets
        self.value = G[:, seat, seat].copy()
        self.card_value = pos.card_value(seat) if t.card >= 0 else 0.0
        rivals = [j for j in range(t.players) if j != seat]
        keys = np.zeros((len(rivals), K, T), dtype=np.int64)
        mirror = bot.mirror if mirror is None else mirror
        levelled = self._mirrored(bot, view, rivals) if mirror else []
        for i, j in enumerate(rivals):
            mirrored = int(round(K * mirror)) if j in levelled else 0
            habit = int(round((K - mirrored) * bot.habit)) if view.round > 1 else 0
            want = np.maximum(G[:, j, j], 0.0)
            if t.card >= 0:
                want[t.card] = self.card_value
            weight = (want + 1.0) ** bot.sharpness
            last = view.bids[j] if view.round > 1 else np.zeros((T, 3), dtype=np.int64)
            if last.any():  # opponents tend to bid again where they bid last round
                weight = weight * (1.0 + bot.persistence * (last.sum(1) > 0))
            for k in range(3):
                n = int(view.tokens[j, k])
                if n:
                    keys[i, mirrored:] += self._sample(bot, n, k, weight, last, habit, K - mirrored) * t.strength[k]
            if mirrored:  # level one: the rival plans its bid as we do, against rivals that bid by interest
                inner = BidModel(bot, view, pos, G, seat=j, samples=bot.inner_samples, mirror=0.0)
                keys[i, :mirrored] = plan_bid(bot, inner, view.tokens[j], improve=0) @ t.strength
        top = keys.max(0)  # (K, T)
        who = np.asarray(rivals)[keys.argmax(0)]
        sole = ((keys == top[None]).sum(0) == 1) & (top > 0)
        loss = G[:, :, seat]  # (T, winner): our change in margin if that seat wins
        lost = np.where(sole, loss[np.arange(T)[None, :], who], 0.0)  # (K, T)
        self.top, self.lost = top, lost
        # Each target's strongest opposing bids, sorted, as one array (target c's block offset by c * SPAN) so
        # that one searchsorted answers every target at once; and the losses above each rank, summed.
        order = np.argsort(top, axis=0, kind="stable")
        self._offset = np.arange(T) * SPAN
        self._sorted = (np.take_along_axis(top, order, 0) + self._offset).T.ravel()
        above = np.take_along_axis(lost, order, 0)[::-1].cumsum(0)[::-1] / K  # (K, T): losses of ranks >= i
        self._above = np.vstack([above, np.zeros((1, T))]).T.ravel()  # (T * (K + 1),): target c from c * (K + 1)
        self._base = np.arange(T) * K
        self._step = np.arange(T)  # a rank in _sorted (from c * K) plus c is the same rank in _above
        self._share = 1.0 / K
        self._K = K
        self.refunds = t.refunds
        self.guy_risk = 0.0
        self.guy_tokens = view.tokens[t.puppet] if t.puppet >= 0 else None
        # Two players: a bid of ours that Guy can beat lets us hand him a character we would rather he won
        self.vehicle = np.maximum(G[:, t.puppet, seat], 0.0) * VEHICLE if t.puppet >= 0 else None
        self.cost = pos.worth[seat] * bot.spend if t.refunds else np.zeros(3)
        self.scheming_worth = 0.0
        self.rival_scheming = 0

    @staticmethod
    def _mirrored(bot: HeuristicBot, view: ObservationView, rivals: list[int]) -> list[int]:
        """The rivals (at most ``bot.mirror_rivals``, the best armed) whose bids are also planned as ours are."""
        if len(rivals) <= bot.mirror_rivals:
            return rivals
        armed = view.tokens[rivals] @ bot.t.token_points
        return [rivals[i] for i in np.argsort(-armed, kind="stable")[: bot.mirror_rivals]]

    def _sample(self, bot: HeuristicBot, n: int, k: int, weight: np.ndarray, last: np.ndarray, habit: int,
                K: int) -> np.ndarray:  # fmt: skip
        """(K, T) counts of one opponent's ``n`` tokens of type ``k`` per sample; ``weight`` is its interest in
        each target."""
        t, rng = self.t, bot.rng
        legal = t.bid_targets[k]
        counts = np.zeros((K, t.targets), dtype=np.int64)
        if habit:
            used = last[:, k] * legal
            if used.any():
                counts[:habit] = rng.multinomial(n, used / used.sum(), size=habit)
            else:
                habit = 0
        rest = K - habit
        w = legal * weight
        p = (1 - bot.spread) * w / w.sum() + bot.spread * legal / t.bid_count[k]
        if n > 1 and bot.inner_samples < K:  # Dirichlet-multinomial: opponents stack their tokens
            on = t.bid_on[k]
            kappa = self._clumping(last[:, k]) if last[:, k].sum() > 1 else bot.clumping
            p_k = rng.dirichlet(kappa * p[on], size=rest)
            p_k /= p_k.sum(1, keepdims=True)
            counts[habit:, on] = rng.multinomial(n, p_k)
        else:
            counts[habit:] = rng.multinomial(n, p, size=rest)
        return counts

    @staticmethod
    def _clumping(last: np.ndarray) -> float:
        """Dirichlet concentration that matches how an opponent spread one token type last round: small when it
        stacked, large when it spread one token per target."""
        n = last.sum()
        if n <= 1:
            return 2.0
        h = float(((last / n) ** 2).sum())
        return float(np.clip(1.5 * (1 - h) / max(h, 1e-3), 0.3, 8.0))

    def values(self, bid: np.ndarray) -> np.ndarray:
        """(..., T, 3) bids -> (..., T) what each target's bid is worth (targets are independent)."""
        t = self.t
        query = bid @ t.strength + self._offset  # (..., T)
        # opposing bids strictly weaker, and the losses to those stronger (weaker or equal ones do not win)
        win = (np.searchsorted(self._sorted, query, "left") - self._base) * self._share
        lost = self._above[np.searchsorted(self._sorted, query, "right") + self._step]
        out = self._prize(bid) * win + lost
        if self.refunds:
            out -= win * dot3(bid, self.cost)
        handed = self._handed(bid)
        if handed is not None:
            out = out + handed
        for c, worth in self._fixed(bid).items():
            out[..., c] = worth
        return out

    def sample_values(self, bids: np.ndarray) -> np.ndarray:
        """(n, T, 3) bids -> (n, samples): what each whole bid is worth against each sample of the rivals' bids
        (``values`` summed over the targets is this averaged over the samples). Play-time search scores its
        candidate bids with it (:mod:`.search`)."""
        q = bids @ self.t.strength  # (n, T)
        win = q[:, None, :] > self.top[None]  # (n, samples, T): strictly above every rival
        lose = self.top[None] > q[:, None, :]
        prize = np.broadcast_to(self._prize(bids), q.shape)
        out = prize[:, None, :] * win + self.lost[None] * lose
        if self.refunds:
            out = out - win * dot3(bids, self.cost)[:, None, :]
        handed = self._handed(bids)
        if handed is not None:
            out = out + handed[:, None, :]
        fixed = self._fixed(bids)  # the same against every sample
        out[..., list(fixed)] = 0.0
        return out.sum(-1) + sum(fixed.values(), np.zeros(len(bids)))[:, None]

    def _prize(self, bid: np.ndarray) -> np.ndarray:
        """(..., T) what winning each target with ``bid`` is worth: its value, less (two players) the risk that Guy
        ties or beats a bid his tokens can reach."""
        if self.guy_tokens is not None and self.guy_risk:
            exposed = (bid <= self.guy_tokens).all(-1) & bid.any(-1)
            return self.value * (1 - self.guy_risk * exposed)
        return self.value

    def _handed(self, bid: np.ndarray) -> np.ndarray | None:
        """(..., T) two players: what a bid that Guy can beat is worth as a way to hand him the character; None
        with more players."""
        if self.vehicle is None:
            return None
        beatable = guy_beats(bid, self.guy_tokens, self.t.guy_legal)[1] & bid.any(-1)
        return self.vehicle * beatable

    def _fixed(self, bid: np.ndarray) -> dict[int, np.ndarray]:
        """The targets whose worth does not hang on the rivals' bids, with that worth (...,): the Card space (its
        Gold at the card's value) and Scheming (priority over Guy's bid), where the game has them."""
        t, out = self.t, {}
        if t.card >= 0:
            gold = bid[..., t.card, GOLD]
            out[t.card] = self.card_value * np.minimum(gold, t.card_max_gold) - gold * self.cost[GOLD]
        if t.scheming >= 0:
            gold = bid[..., t.scheming, GOLD]
            first = np.where(gold > self.rival_scheming, 1.0, np.where(gold == self.rival_scheming, 0.5, 0.0))
            out[t.scheming] = self.scheming_worth * first - gold * self.pos.worth[self.seat, GOLD]
        return out


def plan_bid(bot: HeuristicBot, model: BidModel, tokens: np.ndarray, max_group: int = 5,
             improve: int = 6) -> np.ndarray:  # fmt: skip
    """Place every token, strongest first, each time on the target (and in the number) that adds most value per
    token; then move single tokens while that helps. At most six characters carry tokens (docs/rules.md §3)."""
    t = bot.t
    T = t.targets
    bid = np.zeros((T, 3), dtype=np.int64)
    current = model.values(bid)
    counted = np.ones(T, dtype=bool)
    if t.scheming >= 0:
        counted[t.scheming] = False  # the Scheming space is not one of the six
    for k in (FORCE, BLACKMAIL, GOLD):
        left = int(tokens[k])
        while left > 0:
            groups = np.arange(1, min(left, max_group) + 1)
            trial = np.repeat(bid[None], len(groups), axis=0)
            trial[:, :, k] += groups[:, None]
            noise = bot.rng.random((len(groups), T)) * 1e-6  # ties broken at random
            per_token = (model.values(trial) - current) / groups[:, None] + noise
            open_ = t.legal[:, k] & _room(t, bid, counted)
            per_token[:, ~open_] = -np.inf
            m, c = np.unravel_index(int(np.argmax(per_token)), per_token.shape)
            bid[c, k] += groups[m]
            left -= int(groups[m])
            current = model.values(bid)
    for _ in range(improve):
        if not _improve_once(t, model, bid, counted):
            break
    return bid


def _room(t: Tables, bid: np.ndarray, counted: np.ndarray) -> np.ndarray:
    """Targets a token may still join: any while fewer than six characters carry tokens, else those that do."""
    used = bid.any(1) & counted
    if used.sum() < t.max_characters:
        return np.ones(len(bid), dtype=bool)
    return used | ~counted


def _improve_once(t: Tables, model: BidModel, bid: np.ndarray, counted: np.ndarray) -> bool:
    """Move the one token whose move adds most value, if any does."""
    current = model.values(bid)
    best, move = 1e-6, None
    for k in (FORCE, BLACKMAIL, GOLD):
        held = bid[:, k] > 0
        if not held.any():
            continue
        plus, minus = bid.copy(), bid.copy()
        plus[:, k] += 1
        minus[held, k] -= 1
        gain_add = model.values(plus) - current
        gain_take = np.where(held, model.values(minus) - current, -np.inf)
        for c1 in np.flatnonzero(held):
            after = bid.copy()
            after[c1, k] -= 1
            open_ = t.legal[:, k] & _room(t, after, counted)
            open_[c1] = False
            if not open_.any():
                continue
            g = np.where(open_, gain_add, -np.inf) + gain_take[c1]
            c2 = int(np.argmax(g))
            if g[c2] > best:
                best, move = g[c2], (c1, c2, k)
    if move is None:
        return False
    c1, c2, k = move
    bid[c1, k] -= 1
    bid[c2, k] += 1
    return True


class ValueBot(HeuristicBot):
    """``value``: bids where its margin gains most against what the opponents can bid.

    Every character is worth the change in its projected margin if it wins it (:mod:`.appraisal`: support,
    tokens at their end-game points or their bidding power, the cube's effect on the area majorities and on how
    soon the game ends, the best Spy move or Apothecary swap on the board as it stands), and the opponents'
    characters are valued the same way from their seats. Their public holdings are sampled into likely bids, a
    third of them as the opponent would plan its bid if it thought as we do; every token then goes, strongest
    first, where it adds the most expected value (denying an opponent counts), and single tokens are moved while
    that helps. Never on a character that refuses the token, never past six characters. Two players: bids Guy
    could tie or beat are discounted, Gold goes on Scheming when priority over Guy's strong tokens is worth it,
    and a bid Guy can beat may serve to hand him a character (to end a game we lead when we have no cube left).
    The weights were tuned by play against the other bots and against itself (``scripts/heuristic_duel.py``)."""

    name = style = "value"
    judgement = Judgement(special_scale=0.5, power=(20.0, 12.0, 4.0), hoard=10.0)
    habit, mirror, sharpness = 0.0, 0.34, 2.5
    spend = 0.5
    guy_risk = 0.4
    priority = 1.0  # two players: the worth of placing Guy's first bid, in units of Guy's strongest tokens

    def __init__(self, **env_options: Any) -> None:
        super().__init__(**env_options)
        if self.t.puppet >= 0:  # two players (measured in self-play): a lighter time term, for the leader only;
            # a cheaper Spy and Apothecary; a broader guess of the opponent's bid
            self.judgement = dataclasses.replace(self.judgement, lock=0.3, trailing=0.0, special_scale=0.3)
            self.sharpness = 1.5

    def bid(self, view: ObservationView, mask: np.ndarray, pos: Position) -> np.ndarray:
        return plan_bid(self, self.bid_model(view, pos), view.tokens[0])

    def bid_model(self, view: ObservationView, pos: Position) -> BidModel:
        """The rivals' bids as this bot samples them, and what our bids are worth against them."""
        G = pos.gains(pos.character_deltas())
        model = BidModel(self, view, pos, G)
        if self.t.puppet >= 0:
            self._two_player(model, view)
        return model

    def _two_player(self, model: BidModel, view: ObservationView) -> None:
        guy = view.tokens[self.t.puppet]
        model.guy_risk = self.guy_risk
        model.scheming_worth = self.priority * (4.0 * guy[FORCE] + 2.0 * guy[BLACKMAIL] + 1.0)
        model.rival_scheming = int(view.scheming_gold[1]) if view.round > 1 else 0


class BargainBot(HeuristicBot):
    """``bargain``: buys what it can be fairly sure of, cheapest first, and what nobody else wants.

    Reads the opponents' public holdings (sampled into likely bids, as ``value`` does) to price every character:
    the cheapest bid of its own (in token points) that wins it at least ``sure`` of the time. It buys characters
    by value per point spent, the Printer valued half again (popular support is the key to victory), and avoids
    the contests it cannot win at any price it can pay; then it puts one Gold on each neglected character it
    can still afford, up to six, and piles any Gold left on the Printer or its best bid."""

    name = style = "bargain"
    judgement = Judgement(power=(12.0, 7.0, 2.0), special_scale=0.5)
    printer_bonus = 1.5
    sure = 0.7

    def bid(self, view: ObservationView, mask: np.ndarray, pos: Position) -> np.ndarray:
        t = self.t
        T, C = t.targets, t.n_characters
        G = pos.gains(pos.character_deltas())
        model = BidModel(self, view, pos, G)
        value = np.maximum(model.value, 0.0)
        printer = t.printer
        if printer >= 0:
            value[printer] = value[printer] * self.printer_bonus + 2.0
        if t.card >= 0:
            value[t.card] = model.card_value
        left = view.tokens[0].copy()
        bid = np.zeros((T, 3), dtype=np.int64)
        noise = self.rng.random(T) * 1e-6
        bids, win = self._prices(model, left)  # (N, 3) bids we could make, (C, N) how often each wins
        cost = bids @ t.token_points
        sure = (win >= self.sure) & (value[:C, None] > 0)
        sure[:, ~bids.any(1)] = False
        if t.card >= 0:
            sure[t.card] = False
        while True:  # buy the best bargain that is still affordable
            open_ = ~bid[:C].any(1) & np.array([self._room(bid, c) for c in range(C)])
            ok = sure & (bids <= left).all(1)[None, :] & open_[:, None]
            if not ok.any():
                break
            cheapest = np.where(ok, cost[None, :], np.inf).argmin(1)  # (C,)
            rows = np.arange(C)
            ratio = (
                np.where(ok.any(1), value[:C] * win[rows, cheapest] / np.maximum(cost[cheapest], 1.0), -np.inf)
                + noise[:C]
            )
            c = int(np.argmax(ratio))
            bid[c] += bids[cheapest[c]]
            left -= bids[cheapest[c]]
        neglected = -(value * (model.top == 0).mean(0)) - noise
        for c in np.argsort(neglected, kind="stable"):  # one Gold on each neglected character
            if left[GOLD] == 0 or value[c] <= 0 or c >= C:
                break
            if t.legal[c, GOLD] and not bid[c].any() and self._room(bid, c):
                bid[c, GOLD] += 1
                left[GOLD] -= 1
        for k in (FORCE, BLACKMAIL, GOLD):  # what is left strengthens the bids already made, the Printer first
            if left[k] == 0:
                continue
            score = value * (1 + bid.any(1)) + noise
            if printer >= 0:
                score[printer] += 100.0
            open_ = t.legal[:, k] & np.array([self._room(bid, c) for c in range(T)])
            if t.scheming >= 0:
                open_[t.scheming] = False
            c = int(np.argmax(np.where(open_, score, -np.inf)))
            bid[c, k] += left[k]
            left[k] = 0
        return bid

    def _prices(self, model: BidModel, held: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Every bid we could place on one character (up to six Gold), and per character how often it would be
        strictly highest against the sampled opposing bids (0 where a token type is not allowed)."""
        t = self.t
        C = t.n_characters
        f, b, g = (np.arange(n + 1) for n in (int(held[FORCE]), int(held[BLACKMAIL]), min(int(held[GOLD]), 6)))
        bids = np.stack(np.meshgrid(f, b, g, indexing="ij"), -1).reshape(-1, 3)
        query = (bids @ t.strength)[None, :] + model._offset[:C, None]  # (C, N)
        win = (np.searchsorted(model._sorted, query, "left") - model._base[:C, None]) / model._K
        allowed = ((bids[None, :, :] == 0) | t.legal[:C, None, :]).all(-1)
        return bids, np.where(allowed, win, 0.0)

    def _room(self, bid: np.ndarray, c: int) -> bool:
        t = self.t
        if c == t.scheming or bid[c].any():
            return True
        return bid[: t.n_characters].any(1).sum() < t.max_characters


class AreaBot(HeuristicBot):
    """``area``: plays for the majorities.

    Values a character mostly by its cube: the change in its expected area points plus the area it keeps a rival
    from taking, more the fuller the area is (big areas near the end count most); support and tokens count for
    little. The Spy and the Apothecary are worth their best move on the board, weighted up as the board fills.
    It concentrates its bid on its few most valuable targets (against the same sampled opponent bids as
    ``value``) and judges Spy and Apothecary moves against the leader alone, to swing areas and force ties
    against the leader."""

    name = style = "area"
    judgement = Judgement(rival_weight=1.0, power=(12.0, 7.0, 2.0))
    focus = 4  # characters it bids on, at most (Gold-only spaces take what is left)

    def bid(self, view: ObservationView, mask: np.ndarray, pos: Position) -> np.ndarray:
        t = self.t
        D = pos.character_deltas()
        G = pos.gains(D)
        own = G[:, 0, 0]
        area_part = np.zeros(t.targets)
        fill = 1.0 - view.free / t.spaces  # (A,)
        for c in range(t.n_characters):
            a = t.char_area[c]
            if a >= 0 and view.free[a] > 0:
                mine = pos.gain(pos.add[a, 0])
                rivals = [pos.gain(pos.add[a, j]) for j in range(1, t.seats)]
                area_part[c] = (mine - min(rivals)) * (1.0 + fill[a])
        late = 0.5 + float(fill.mean())
        for c in (t.spy, t.apothecary):
            if c >= 0:
                area_part[c] = max(own[c], 0.0) * late
        value = 0.5 * np.maximum(own, 0.0) + area_part
        G = G.copy()
        G[:, 0, 0] = value
        model = BidModel(self, view, pos, G)
        keep = np.argsort(-value, kind="stable")[: self.focus]  # ties in target order, on every CPU
        blocked = np.ones(t.targets, dtype=bool)
        blocked[keep] = False
        blocked[~t.legal[:, FORCE] & ~t.legal[:, BLACKMAIL]] = False  # Gold-only spaces stay open
        model.value = np.where(blocked, 0.0, model.value)
        if t.puppet >= 0:
            model.guy_risk = 0.4
        return plan_bid(self, model, view.tokens[0], max_group=8, improve=3)


HEURISTICS: dict[str, type[HeuristicBot]] = {"value": ValueBot, "bargain": BargainBot, "area": AreaBot}


def sets_parameters_only(bot: type) -> bool:
    """Whether a bot class decides with one of the three styles' code: a style itself, or a subclass of one that
    sets parameters (class attributes) and no method of its own. Such a bot plays compiled: the compiled bots
    read every parameter at each call (``compiled.params``) and know each style's code by ``style``."""
    for cls in bot.__mro__:
        if cls in HEURISTICS.values():
            return True
        if any(callable(v) or isinstance(v, (classmethod, staticmethod, property)) for v in vars(cls).values()):
            return False
    return False
