"""A plain-text view of a game: support, holdings, the board, and the last revealed round with who won what.
Used by the command line (`revolution random`, `revolution play`) and the environment's ``ansi`` render."""

from __future__ import annotations

from collections.abc import Sequence

from revolution_env.engine.components import TOKEN_TYPES
from revolution_env.engine.game import OVER, Game, Layout

TOKEN_LETTERS = tuple(t[0].upper() for t in TOKEN_TYPES)  # ("F", "B", "G")


def layout_seat_names(layout: Layout) -> list[str]:
    """How seats are written for people: ``P0``, ``P1``, ... and ``Guy`` for the puppet."""
    return [("Guy" if s == layout.puppet else f"P{s}") for s in range(layout.seats)]


def seat_names(game: Game, names: Sequence[str] | None = None) -> list[str]:
    return list(names) if names is not None else layout_seat_names(game.layout)


def tokens_text(row: Sequence[int]) -> str:
    """``1F 2G`` for one Force and two Gold; ``-`` for nothing."""
    parts = [f"{int(n)}{letter}" for n, letter in zip(row, TOKEN_LETTERS) if n]
    return " ".join(parts) if parts else "-"


def render(game: Game, names: Sequence[str] | None = None) -> str:
    L = game.layout
    who = seat_names(game, names)
    width = max(len(n) for n in who)
    lines = []
    if game.phase == OVER:
        lines.append(f"Round {game.round}: game {'truncated at max_rounds' if game.truncated else 'over'}")
    else:
        pending = game.decision.kind if game.decision else "-"
        lines.append(f"Round {game.round} ({game.phase}; waiting for: {pending})")
    lines.append("")
    lines.append(f"{'seat':<{width}}  support  tokens        supply")
    for s in range(L.seats):
        lines.append(
            f"{who[s]:<{width}}  {int(game.support[s]):>7}  {tokens_text(game.tokens[s]):<12}  {int(game.supply[s]):>6}"
        )
    lines.append(f"{'bank':<{width}}           {tokens_text(game.bank)}")
    lines.append("")
    lines.append("area        spaces  support  " + "  ".join(f"{n:>{max(3, width)}}" for n in who))
    for a, area in enumerate(L.components.areas):
        row = game.cubes[a]
        filled = int(row.sum())
        bar = "#" * filled + "." * (area.spaces - filled)
        cells = "  ".join(f"{int(n):>{max(3, width)}}" for n in row)
        lines.append(f"{area.name:<11} {bar:<8} {area.support:>7}  {cells}")
    if game.revealed_round:
        lines.append("")
        lines.append(f"Bids of round {game.revealed_round}:")
        for c, name in enumerate(L.target_names):
            col = game.revealed[:, c]
            if not col.any():
                continue
            bids = "  ".join(f"{who[s]} {tokens_text(col[s])}" for s in range(L.seats) if col[s].any())
            w = int(game.winners[c])
            outcome = "" if w == -2 else ("-> nobody" if w == -1 else f"-> {who[w]}")
            if c == L.card_space:
                outcome = ""
            lines.append(f"  {name:<11} {bids:<40} {outcome}")
        if game.cards_drawn:
            deck = L.components.deck
            drawn = ", ".join(f"{who[s]}: {deck[i].name}" for s, i in game.cards_drawn)
            lines.append(f"  cards drawn: {drawn}")
    if game.final is not None:
        f = game.final
        lines.append("")
        lines.append("Final support (track + tokens + areas):")
        for s in range(L.seats):
            track = f["support"][s] - f["token_points"][s] - f["area_points"][s]
            lines.append(
                f"  {who[s]:<{width}}  {f['support'][s]:>4} = {track} + {f['token_points'][s]} + {f['area_points'][s]}"
            )
        winners = ", ".join(who[s] for s in f["winners"]) or "nobody (the puppet was not beaten)"
        lines.append(f"Winner: {winners}")
    return "\n".join(lines)


def gains_text(layout: Layout, target: int) -> str:
    """What the winner of a bid target gets, in the rulebook's words."""
    if target == layout.scheming:
        return "priority in the Scheming phase (all Scheming Gold goes to the bank)"
    ch = layout.card[target]
    if ch.special == "card":
        return f"one card per Gold, at most {layout.components.card_max_gold} (no contest)"
    gains = []
    if ch.support:
        gains.append(f"{ch.support} support")
    gains += [f"{n} {token}" for n, token in zip(ch.tokens, TOKEN_TYPES) if n]
    if ch.area >= 0:
        gains.append(f"a cube in {layout.components.areas[ch.area].name}")
    if ch.special == "spy":
        gains.append("replace another player's cube with yours")
    if ch.special == "apothecary":
        gains.append("swap two cubes of different owners in different areas")
    return ", ".join(gains) or "nothing"
