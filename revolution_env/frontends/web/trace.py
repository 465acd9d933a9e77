"""A game that keeps its own story: the state after every step of every round, for people to watch.

:class:`TracedGame` is the engine's :class:`~revolution_env.engine.game.Game` with hooks on the steps the rules
take on their own (revealing the bids, each Guy placement, each character resolved, each Spy, Apothecary and
Remove decision, each batch of cards drawn, the end of the round). After each step it records an *event* with
a snapshot of the public state, so that a viewer can show the resolution character by character without
knowing the rules. The hooks only read; the rules stay the engine's.

A replay is a scenario (docs/scenarios.md) played on a traced game: :func:`replay_scenario`.
"""

from __future__ import annotations

from typing import Any

from revolution_env.engine.components import TOKEN_TYPES
from revolution_env.engine.game import APOTHECARY_FIRST, APOTHECARY_SECOND, GUY, REMOVE, SPY, Game, Layout
from revolution_env.engine.scenario import MODES, new_game, play_rounds, state_dict
from revolution_env.env.text import gains_text, layout_seat_names


def snapshot(game: Game) -> dict[str, Any]:
    """The public state at one moment: what a viewer draws (no hidden bid, no deck order), its arrays as tuples.

    A game keeps a snapshot for every step it has taken, and a server keeps hundreds of games: tuples of numbers
    are read-only, so the garbage collector stops looking at them after its first pass, where it would walk every
    list of every snapshot at each full collection. For the same reason a traced game's snapshots share the
    revealed bids while they stay the same (most of a snapshot's objects, and a round has a snapshot per step).
    """
    return {
        "round": int(game.round),
        "phase": str(game.phase),
        "support": tuple(game.support.tolist()),
        "tokens": _rows(game.tokens),
        "bank": tuple(game.bank.tolist()),
        "board": _rows(game.cubes),
        "supply": tuple(game.supply.tolist()),
        "bids_round": int(game.revealed_round),  # the bids shown: this round's once revealed, else the last round's
        "bids": _revealed(game) if game.revealed_round else None,
        "winners": tuple(game.winners.tolist()) if game.revealed_round else None,
        "final": None if game.final is None else {k: tuple(v) for k, v in game.final.items()},
    }


def _rows(array: Any) -> tuple:
    """A 2-D array as a tuple of tuples."""
    return tuple(map(tuple, array.tolist()))


def _revealed(game: Game) -> tuple:
    memo = getattr(game, "_revealed_memo", None)
    if memo is not None and memo[0] == game.revealed.tobytes():
        return memo[1]
    bids = tuple(tuple(map(tuple, seat)) for seat in game.revealed.tolist())
    if isinstance(game, TracedGame):
        game._revealed_memo = (game.revealed.tobytes(), bids)
    return bids


def tokens_words(row: Any) -> str:
    parts = [f"{int(n)} {t}" for n, t in zip(row, TOKEN_TYPES) if n]
    return ", ".join(parts) if parts else "nothing"


class TracedGame(Game):
    """A :class:`Game` that records ``trace``: one record per round played, each with its ``events``."""

    trace: list[dict[str, Any]]

    @classmethod
    def adopt(cls, game: Game) -> TracedGame:
        """Trace a game made elsewhere (the environment's, a scenario's) from now on."""
        if not isinstance(game, TracedGame):
            game.__class__ = cls  # only methods are added: the state stays the engine's
            game.trace = []
        return game

    # --- recording ---

    def _name(self, seat: int) -> str:
        return layout_seat_names(self.layout)[seat]

    def _event(self, kind: str, text: str, **fields: Any) -> None:
        self.trace[-1]["events"].append({"kind": kind, "text": text, **fields, "state": snapshot(self)})

    def _cube_words(self, area: int, seat: int) -> str:
        return f"{self._name(seat)}'s cube in {self.layout.components.areas[area].name}"

    # --- hooks on the engine's steps ---

    def submit_bids(self, bids: Any, priority: int | None = None) -> None:
        self.trace.append({"round": int(self.round), "start": snapshot(self), "events": []})
        try:
            super().submit_bids(bids, priority)
        except Exception:
            self.trace.pop()  # the engine checks before it changes anything
            raise

    def _start_scheming(self, priority: int | None) -> None:
        self._event("reveal", f"Round {self.round}: the bids are revealed; Scheming: Guy's bids are placed next")
        super()._start_scheming(priority)

    def _contest(self) -> None:
        if self.layout.puppet < 0:
            self._event("reveal", f"Round {self.round}: the bids are revealed")
        super()._contest()

    def _next_guy_turn(self) -> None:
        if self._guy_count:  # a placement was just made
            c, answered, mode = self.history[-1]["guy"][-1]
            tokens = tuple(self.bids[self.layout.puppet, c].tolist())
            who = self._name(self.guy_last_placer)
            self._event(
                "guy",
                f"{who} has Guy {MODES[mode]} {self._name(answered)}'s bid on {self.layout.target_names[c]}"
                f" ({tokens_words(tokens)})",
                seat=int(self.guy_last_placer), target=int(c), answer=int(answered), mode=MODES[mode], tokens=tokens,
            )  # fmt: skip
        super()._next_guy_turn()

    def _record(self, value: Any) -> None:
        kind = self.decision.kind
        seat = self.decision.seat
        super()._record(value)
        if value is None:
            if kind == GUY:
                text = f"{self._name(seat)} passes: Guy places no more bids this round"
            else:
                text = f"{self._name(seat)} declines the {'Spy' if kind == SPY else 'Apothecary'}"
            self._event(str(kind), text, seat=int(seat), area=None, cube=None)

    def _resolve_character(self, c: int) -> None:
        super()._resolve_character(c)
        L = self.layout
        winner = int(self.winners[c])
        name = L.target_names[c]
        if not self._contested[c]:
            text = f"{name}: no bids"
        elif winner < 0:
            text = f"{name}: tied, nobody wins"
        else:
            text = f"{self._name(winner)} wins the {name}: {gains_text(L, c)}"
        self._event("character", text, target=int(c), winner=winner, contested=bool(self._contested[c]))

    def _start_cards(self, c: int) -> None:
        super()._start_cards(c)
        self._event("character", "Card space: cards are drawn for the Gold placed there", target=int(c), winner=-1,
                    contested=False)  # fmt: skip

    def _draw_cards(self) -> None:
        n = len(self.cards_drawn)
        super()._draw_cards()
        deck = self.layout.components.deck
        draws = [[int(s), deck[i].name] for s, i in self.cards_drawn[n:]]
        if draws:
            text = "; ".join(f"{self._name(s)} draws {name}" for s, name in draws)
            self._event("cards", text, draws=draws)

    def _apply_cube_choice(self, d: Any, area: int, seat: int) -> None:
        super()._apply_cube_choice(d, area, seat)
        who = self._name(d.seat)
        cube = self._cube_words(area, seat)
        text = {
            SPY: f"Spy: {who} replaces {cube}",
            APOTHECARY_FIRST: f"Apothecary: {who} picks {cube}",
            APOTHECARY_SECOND: f"Apothecary: {who} swaps it with {cube}",
            REMOVE: f"Remove 1 Influence: {who} removes {cube}",
        }[d.kind]
        self._event(str(d.kind), text, seat=int(d.seat), area=int(area), cube=int(seat))

    def _end_round(self) -> None:
        record = self.trace[-1]
        held = self.tokens.sum(1).copy()
        super()._end_round()
        record["priority"] = self.history[-1].get("priority")
        record["bids"] = _revealed(self)  # tuples, shared with the snapshots (see snapshot)
        record["winners"] = tuple(self.winners.tolist())
        if self.final is not None:
            winners = ", ".join(self._name(s) for s in self.final["winners"]) or "nobody (Guy was not beaten)"
            how = "truncated at max_rounds" if self.truncated else "over: the board is full"
            text = f"Game {how}. Winner: {winners}"
        else:
            topped = [self._name(s) for s in range(self.layout.seats) if self.tokens[s].sum() > held[s]]
            text = f"End of round {record['round']}" + (f"; Patronage: Gold for {', '.join(topped)}" if topped else "")
        self._event("end", text)
        record["end"] = snapshot(self)


# --- what a viewer needs to draw a kind of game --------------------------------------------------------------


def describe_layout(layout: Layout) -> dict[str, Any]:
    """The board, the bid card and the seats of a kind of game, as JSON for the page."""
    comp = layout.components
    return {
        "rules": layout.rules.to_dict(),
        "seats": layout.seats,
        "players": layout.players,
        "puppet": layout.puppet,
        "seat_names": layout_seat_names(layout),
        "token_types": list(TOKEN_TYPES),
        "areas": [{"name": a.name, "spaces": int(a.spaces), "support": int(a.support)} for a in comp.areas],
        "targets": [
            {
                "name": name,
                "legal": [bool(x) for x in layout.legal[t]],
                "gains": gains_text(layout, t)
                if t < layout.n_characters and t != layout.card_space
                else ("priority in the Scheming phase" if t == layout.scheming else "one card per Gold"),
                "area": (int(layout.card[t].area) if t < layout.n_characters else -1),
            }
            for t, name in enumerate(layout.target_names)
        ],  # fmt: skip
        "n_characters": layout.n_characters,
        "scheming": layout.scheming,
        "card_space": layout.card_space,
        "max_characters_per_bid": int(comp.max_characters_per_bid),
    }


def replay_scenario(data: dict[str, Any], draws: str = "record") -> tuple[TracedGame, dict[str, Any]]:
    """Play a scenario on a traced game (``draws``: where its chance outcomes come from, as in
    :func:`~revolution_env.engine.scenario.play_rounds`). Returns the game and the replay as JSON: the layout, one
    record per round (``start`` state, ``events`` with their states, ``end`` state, the revealed ``bids`` and
    ``winners``) and the final canonical state. Raises :class:`~revolution_env.engine.ScenarioError` for a
    scenario that cannot be played."""
    game = TracedGame.adopt(new_game(data))
    play_rounds(game, data, draws)
    return game, replay_json(game)


def replay_json(game: TracedGame) -> dict[str, Any]:
    """The replay of a traced game so far (rounds still being played are left out)."""
    rounds = [r for r in game.trace if "end" in r]
    return {
        "layout": describe_layout(game.layout),
        "seed": game.seed,
        "start": rounds[0]["start"] if rounds else snapshot(game),
        "rounds": rounds,
        "state": state_dict(game),
    }
