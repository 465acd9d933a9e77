"""A picture of the game for the ``rgb_array`` render: the town board, the support track, each seat's holdings
and the last revealed round's bids, drawn with matplotlib's Agg backend into a fixed 1280×800 frame.

Every number comes from the public state (the engine's arrays); nothing hidden is drawn. Seats keep one colour
throughout (cubes, bars, bid cells); the puppet of the two-player variant is "Guy", in grey. Tokens are drawn in
their own colours: Force red, Blackmail black, Gold yellow.

Speed: text is what costs in matplotlib, so what never changes within a kind of game (panels, area names, the bid
card) is drawn once per rules and board and pasted under each frame, and token discs are small pictures drawn once
and stamped. No pyplot figure is ever opened, so nothing needs closing.
"""

from __future__ import annotations

import textwrap
from collections import Counter
from collections.abc import Sequence
from functools import lru_cache

import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.collections import PatchCollection
from matplotlib.figure import Figure
from matplotlib.patches import Circle, FancyBboxPatch, Patch, Rectangle

from revolution_env.engine.components import TOKEN_TYPES, Character, Components
from revolution_env.engine.game import (
    APOTHECARY_FIRST,
    APOTHECARY_SECOND,
    BID,
    GUY,
    OVER,
    REMOVE,
    SPY,
    Game,
    Layout,
    Rules,
    make_layout,
)
from revolution_env.env.text import TOKEN_LETTERS, layout_seat_names

WIDTH, HEIGHT, DPI = 1280, 800, 100

PAPER = "#efe8da"
PANEL = "#fbf8f1"
ZEBRA = "#f3eee4"
INK = "#2b2622"
LIGHT_INK = "#f6efe0"
FAINT = "#8a8178"
RULE = "#d8cfbf"
GOLDEN = "#b8860b"
SEAT_COLOURS = ("#2f6fba", "#2e9a57", "#8b4fb3", "#e07b1a")
GUY_COLOUR = "#8d8d8d"
TOKEN_COLOURS = ("#c9302c", "#1e1e1e", "#f3c316")  # Force, Blackmail, Gold
TOKEN_INK = ("white", "white", INK)
TOKEN_WORDS = tuple(t.capitalize() for t in TOKEN_TYPES)  # ("Force", "Blackmail", "Gold")

# Panels: (x, y, width, height) in pixels, y downwards.
HEADER = (0, 0, WIDTH, 52)
BOARD = (12, 60, 776, 458)
TRACK = (12, 528, 776, 260)
HOLDINGS = (800, 60, 468, 206)
BIDS = (800, 276, 468, 512)

WAITING = {
    BID: "to bid",
    GUY: "to place Guy's bid (Scheming)",
    SPY: "to move a cube (Spy)",
    APOTHECARY_FIRST: "to pick a cube to swap (Apothecary)",
    APOTHECARY_SECOND: "to pick the second cube (Apothecary)",
    REMOVE: "to remove a cube (card)",
}


def draw(game: Game) -> np.ndarray:
    """The picture of ``game`` as an (800, 1280, 3) uint8 array."""
    L = game.layout
    sk = Sketch(background=static_frame(game.rules, L.components))
    who = layout_seat_names(L)
    colours = seat_colours(L)
    draw_status(sk, game, who)
    draw_board(sk, game, who, colours)
    draw_track(sk, game, who, colours)
    draw_holdings(sk, game, colours)
    draw_bids(sk, game, who, colours)
    return sk.picture()


@lru_cache(maxsize=8)
def static_frame(rules: Rules, components: Components) -> np.ndarray:
    """What does not change during a game of these rules on this board, as an (H, W, 4) uint8 picture."""
    L = make_layout(rules, components)
    sk = Sketch()
    who = layout_seat_names(L)
    colours = seat_colours(L)
    frame_header(sk, L)
    frame_board(sk, L)
    frame_track(sk, L, who, colours)
    frame_holdings(sk, L, who, colours)
    frame_bids(sk, L, who, colours)
    picture = sk.picture(rgba=True)
    picture.flags.writeable = False
    return picture


def seat_colours(L: Layout) -> list[str]:
    return [GUY_COLOUR if s == L.puppet else SEAT_COLOURS[s] for s in range(L.seats)]


# --- drawing kit -----------------------------------------------------------------------------------------------


class Sketch:
    """One frame: shapes collected in two layers (one collection each, far cheaper than an artist per shape),
    texts, and token discs stamped from cached pictures. With a ``background``, only the new parts are drawn on
    top of it."""

    def __init__(self, background: np.ndarray | None = None) -> None:
        self.fig = Figure(figsize=(WIDTH / DPI, HEIGHT / DPI), dpi=DPI, facecolor=PAPER)
        self.canvas = FigureCanvasAgg(self.fig)
        self.ax = self.fig.add_axes((0, 0, 1, 1))
        self.ax.set_xlim(0, WIDTH)
        self.ax.set_ylim(HEIGHT, 0)
        self.ax.set_axis_off()
        self.background = background
        self.under: list[Patch] = []
        self.over: list[Patch] = []
        self.texts = []
        self.stamps: list[tuple[float, float, int, int, float, float]] = []

    def box(
        self,
        x: float,
        y: float,
        w: float,
        h: float,
        face: str,
        edge: str = "none",
        lw: float = 1.0,
        round_: float = 0.0,
        top: bool = False,
        alpha: float = 1.0,
    ) -> None:
        if round_:
            patch = FancyBboxPatch((x, y), w, h, boxstyle=f"round,pad=0,rounding_size={round_}")
        else:
            patch = Rectangle((x, y), w, h)
        patch.set(facecolor=face, edgecolor=edge, linewidth=lw)
        if alpha < 1.0:
            patch.set_alpha(alpha)  # (also fades the edge; 1.0 would override colours given with alpha)
        (self.over if top else self.under).append(patch)

    def disc(self, x: float, y: float, r: float, face: str, edge: str = "none", lw: float = 1.0) -> None:
        patch = Circle((x, y), r)
        patch.set(facecolor=face, edgecolor=edge, linewidth=lw)
        self.over.append(patch)

    def text(
        self,
        x: float,
        y: float,
        s: str,
        size: float = 10,
        colour: str = INK,
        weight: str = "normal",
        ha: str = "left",
        va: str = "center",
        style: str = "normal",
    ) -> None:
        self.texts.append(
            self.ax.text(x, y, s, fontsize=size, color=colour, fontweight=weight, ha=ha, va=va, fontstyle=style)
        )

    def panel(self, rect: tuple[float, float, float, float], title: str | None = None) -> None:
        x, y, w, h = rect
        self.box(x, y, w, h, PANEL, RULE, 1.0, round_=8)
        if title:
            self.title(rect, title)

    def title(self, rect: tuple[float, float, float, float], title: str) -> None:
        self.text(rect[0] + 12, rect[1] + 16, title, 12, INK, "bold")

    def token(self, x: float, y: float, kind: int, n: int, r: float = 9, size: float = 8) -> None:
        """A token disc with its count written on it."""
        self.stamps.append((x, y, kind, n, r, size))

    def picture(self, rgba: bool = False) -> np.ndarray:
        layers = [PatchCollection(p, match_original=True) for p in (self.under, self.over) if p]
        for layer in layers:
            self.ax.add_collection(layer)
        if self.background is None:
            self.canvas.draw()
        else:
            renderer = self.canvas.get_renderer()
            np.asarray(renderer.buffer_rgba())[:] = self.background
            for artist in [*layers, *self.texts]:
                artist.draw(renderer)
        out = np.asarray(self.canvas.buffer_rgba())
        out = out.copy() if rgba else out[..., :3].copy()
        for x, y, kind, n, r, size in self.stamps:
            stamp(out, x, y, token_sprite(kind, n, r, size))
        return out


@lru_cache(maxsize=512)
def token_sprite(kind: int, n: int, r: float, size: float) -> np.ndarray:
    """A token disc with its count, as a small (d, d, 4) float picture (straight alpha, 0..1)."""
    d = int(np.ceil(2 * r + 4))
    fig = Figure(figsize=(d / DPI, d / DPI), dpi=DPI, facecolor="none")
    canvas = FigureCanvasAgg(fig)
    ax = fig.add_axes((0, 0, 1, 1))
    ax.set_xlim(0, d)
    ax.set_ylim(d, 0)
    ax.set_axis_off()
    edge = "#00000055" if kind == 2 else "none"
    ax.add_patch(Circle((d / 2, d / 2), r, facecolor=TOKEN_COLOURS[kind], edgecolor=edge, linewidth=0.8))
    ax.text(
        d / 2, d / 2 + 0.5, str(n), fontsize=size, color=TOKEN_INK[kind], fontweight="bold", ha="center", va="center"
    )
    canvas.draw()
    return np.asarray(canvas.buffer_rgba()).astype(np.float32) / 255.0


def stamp(out: np.ndarray, x: float, y: float, sprite: np.ndarray) -> None:
    """Lay ``sprite`` over ``out`` centred on (x, y), clipped to the frame."""
    d = sprite.shape[0]
    top, left = int(round(y - d / 2)), int(round(x - d / 2))
    t0, l0 = max(top, 0), max(left, 0)
    t1, l1 = min(top + d, out.shape[0]), min(left + d, out.shape[1])
    if t0 >= t1 or l0 >= l1:
        return
    piece = sprite[t0 - top : t1 - top, l0 - left : l1 - left]
    region = out[t0:t1, l0:l1, :3]
    alpha = piece[..., 3:]
    region[:] = (piece[..., :3] * 255.0 * alpha + region * (1.0 - alpha) + 0.5).astype(np.uint8)


# --- header ----------------------------------------------------------------------------------------------------


def frame_header(sk: Sketch, L: Layout) -> None:
    x, y, w, h = HEADER
    sk.box(x, y, w, h, INK)
    sk.text(16, h / 2, "Revolution!", 18, LIGHT_INK, "bold")
    sk.text(w - 16, h / 2, variant_line(L.rules, L.components), 9.5, "#cbbfae", ha="right")


def draw_status(sk: Sketch, game: Game, who: Sequence[str]) -> None:
    sk.text(190, HEADER[3] / 2, status_line(game, who), 12, TOKEN_COLOURS[2] if game.over else LIGHT_INK)


def status_line(game: Game, who: Sequence[str]) -> str:
    if game.phase == OVER:
        f = game.final
        if not f["winners"]:
            stop = (
                f"Stopped at max_rounds (round {game.round})"
                if game.truncated
                else f"Game over after round {game.round}"
            )
            return f"{stop}: Guy was not beaten, nobody wins"
        names = " and ".join(who[s] for s in f["winners"])
        best = f["support"][f["winners"][0]]
        if game.truncated:  # D8: scored as if it had ended
            return f"Stopped at max_rounds (round {game.round}), scored as if over: {names} ahead with {best}"
        verb = "win" if len(f["winners"]) > 1 else "wins"
        return f"Game over after round {game.round}: {names} {verb} with {best} support"
    d = game.decision
    seats = ", ".join(who[s] for s in d.seats)
    return f"Round {game.round}  ·  {game.phase}  ·  waiting for {seats} {WAITING.get(d.kind, d.kind)}"


def variant_line(rules: Rules, components: Components) -> str:
    parts = [f"{rules.players} players" + (" + Guy" if rules.players == 2 else "")]
    if rules.first_edition:
        parts.append("first edition")
    if rules.bid_refunds:
        parts.append("bid refunds")
    if rules.area_control_bonus:
        parts.append("area control bonus")
    if components.name != "standard":
        parts.append(f"board: {components.name}")
    return "  ·  ".join(parts)


# --- the town board --------------------------------------------------------------------------------------------

SLOT, SLOT_GAP, PER_LINE = 28, 7, 4


def area_rects(L: Layout) -> list[tuple[float, float, float, float]]:
    """Areas in two rows (the second centred), in board order."""
    n = len(L.components.areas)
    x0, y0, w, h = BOARD
    per_row = (n + 1) // 2
    gap = 12
    bw = (w - gap * (per_row + 1)) / per_row
    bh = (h - 34 - gap * 3) / 2
    rects = []
    for a in range(n):
        row, col = divmod(a, per_row)
        in_row = per_row if row == 0 else n - per_row
        shift = (per_row - in_row) * (bw + gap) / 2
        rects.append((x0 + gap + shift + col * (bw + gap), y0 + 34 + gap + row * (bh + gap), bw, bh))
    return rects


def slot_positions(rect: tuple[float, float, float, float], spaces: int) -> list[tuple[float, float]]:
    x, y, w, _ = rect
    lines = (spaces + PER_LINE - 1) // PER_LINE
    grid_w = PER_LINE * SLOT + (PER_LINE - 1) * SLOT_GAP
    gx = x + (w - grid_w) / 2
    gy = y + 62 + (2 - lines) * (SLOT + SLOT_GAP) / 2
    return [(gx + (i % PER_LINE) * (SLOT + SLOT_GAP), gy + (i // PER_LINE) * (SLOT + SLOT_GAP)) for i in range(spaces)]


def frame_board(sk: Sketch, L: Layout) -> None:
    sk.panel(BOARD, "The town")
    for a, (area, rect) in enumerate(zip(L.components.areas, area_rects(L))):
        x, y, w, h = rect
        sk.box(x, y, w, h, "white", RULE, 1.2, round_=10)
        sk.text(x + 12, y + 26, area.name, 12.5, INK, "bold")
        via = [ch.name for ch in L.card if ch.area == a]
        sk.text(x + 12, y + 45, f"{area.spaces} spaces" + (f"  ·  {', '.join(via)}" if via else ""), 8, FAINT)
        sk.disc(x + w - 24, y + 30, 17, INK)
        sk.text(x + w - 24, y + 30.5, str(area.support), 11, "white", "bold", ha="center")
        for sx, sy in slot_positions(rect, area.spaces):
            sk.box(sx, sy, SLOT, SLOT, ZEBRA, "#c9bfae", 1.0, round_=4, top=True)


def area_controller(row: np.ndarray) -> int:
    """The seat with strictly the most cubes in an area, -1 when empty or tied (docs/rules.md §5)."""
    most = row.max()
    if most == 0 or np.count_nonzero(row == most) > 1:
        return -1
    return int(row.argmax())


def draw_board(sk: Sketch, game: Game, who: Sequence[str], colours: Sequence[str]) -> None:
    L = game.layout
    protected = game.protected_areas()
    for a, (area, rect) in enumerate(zip(L.components.areas, area_rects(L))):
        x, y, w, h = rect
        row = game.cubes[a]
        owner = area_controller(row)
        fill = [s for s in range(L.seats) for _ in range(int(row[s]))]
        for s, (sx, sy) in zip(fill, slot_positions(rect, area.spaces)):
            sk.box(sx, sy, SLOT, SLOT, colours[s], "#00000066", 1.0, round_=4, top=True)
        foot = y + h - 20
        if owner >= 0:
            sk.box(x, y, w, h, "none", colours[owner], 3.0, round_=10)
            sk.box(x + 1.5, y + 1.5, w - 3, 7, colours[owner], round_=3)
            sk.text(x + 12, foot, f"{who[owner]} controls", 10, colours[owner], "bold")
            if protected[a]:  # Area Control Bonus (docs/rules.md §5)
                sk.text(x + 12, foot - 17, "full: +10, locked", 8, colours[owner])
        elif row.any():
            tied = [who[s] for s in range(L.seats) if row[s] == row.max()]
            sk.text(x + 12, foot, "tied: " + ", ".join(tied), 10, FAINT, style="italic")
        else:
            sk.text(x + 12, foot, "empty", 10, FAINT, style="italic")


# --- the support track -----------------------------------------------------------------------------------------

TRACK_LEFT, TRACK_RIGHT = TRACK[0] + 70, TRACK[0] + TRACK[2] - 185


def lanes(L: Layout) -> tuple[float, float]:
    """The first lane's top and the height of a lane (one lane per seat)."""
    return TRACK[1] + 40, min(50, (TRACK[3] - 72) / L.seats)


def frame_track(sk: Sketch, L: Layout, who: Sequence[str], colours: Sequence[str]) -> None:
    sk.panel(TRACK)
    top, lane_h = lanes(L)
    for s in range(L.seats):
        cy = top + lane_h * (s + 0.5)
        bar_h = lane_h * 0.56
        sk.text(TRACK[0] + 14, cy, who[s], 11, colours[s], "bold")
        sk.box(TRACK_LEFT, cy - bar_h / 2, TRACK_RIGHT - TRACK_LEFT, bar_h, "#ece5d8", round_=3)


def nice_step(top: float) -> int:
    for step in (10, 20, 25, 50, 100, 200, 500):
        if top / step <= 10:
            return step
    return 1000


def area_points(game: Game) -> list[int]:
    """The support each seat's areas would score if the game ended now (docs/rules.md §5)."""
    L = game.layout
    points = [0] * L.seats
    for a, row in enumerate(game.cubes):
        owner = area_controller(row)
        if owner >= 0:
            full = game.rules.area_control_bonus and row[owner] == L.spaces[a]
            points[owner] += int(L.area_support[a]) + (10 if full else 0)
    return points


def draw_track(sk: Sketch, game: Game, who: Sequence[str], colours: Sequence[str]) -> None:
    L = game.layout
    final = game.final
    x0, y0, w, _ = TRACK
    track = game.support.astype(int).tolist()
    if final is not None:
        sk.title(TRACK, "Final support  =  track  +  tokens  +  areas")
        tokens, areas, totals = final["token_points"], final["area_points"], final["support"]
    else:
        sk.title(TRACK, "Support track")
        tokens, areas = (game.tokens @ L.token_points).astype(int).tolist(), area_points(game)
        totals = [t + k + a for t, k, a in zip(track, tokens, areas)]
    step = nice_step(max(50, max(totals)))
    end = max(step * 5, -(-max(totals) // step) * step)
    scale = (TRACK_RIGHT - TRACK_LEFT) / end
    top, lane_h = lanes(L)
    base = top + lane_h * L.seats
    for k in range(0, end + 1, step):
        gx = TRACK_LEFT + k * scale
        sk.box(gx - 0.5, top - 4, 1, base - top + 8, RULE)
        sk.text(gx, base + 14, str(k), 8, FAINT, ha="center")
    bar_h = lane_h * 0.56
    shades = (1.0, 0.55, 0.3) if final is not None else (1.0, 0.35, 0.18)
    for s in range(L.seats):
        cy = top + lane_h * (s + 0.5)
        at = TRACK_LEFT
        for value, alpha in zip((track[s], tokens[s], areas[s]), shades):
            if value > 0:
                sk.box(at, cy - bar_h / 2, value * scale, bar_h, colours[s], top=True, alpha=alpha)
                at += value * scale
        sk.disc(TRACK_LEFT + track[s] * scale, cy, bar_h / 2 + 3, colours[s], "white", 2.0)
        if final is not None:
            sk.text(TRACK_RIGHT + 10, cy, str(totals[s]), 13, INK, "bold")
            first = s in final["winners"]
            sk.text(TRACK_RIGHT + 58, cy - 7 if first else cy, f"= {track[s]} + {tokens[s]} + {areas[s]}", 8, FAINT)
            if first:
                sk.text(TRACK_RIGHT + 58, cy + 8, "AHEAD" if game.truncated else "WINNER", 8.5, GOLDEN, "bold")
        else:
            sk.text(TRACK_RIGHT + 10, cy, str(track[s]), 13, INK, "bold")
            sk.text(TRACK_RIGHT + 58, cy, f"if it ended now: {totals[s]}", 8, FAINT)
    labels = ("track", "tokens", "areas") if final is not None else ("track", "+ tokens", "+ areas held")
    lx = x0 + w - 300
    for i, (alpha, label) in enumerate(zip(shades, labels)):
        sk.box(lx + i * 80, y0 + 10, 14, 12, INK, alpha=alpha, top=True)
        sk.text(lx + i * 80 + 19, y0 + 16, label, 8, FAINT)


# --- holdings --------------------------------------------------------------------------------------------------

HOLD_NAME, HOLD_TOKENS, HOLD_CUBES, HOLD_AREAS = (
    HOLDINGS[0] + 14,
    HOLDINGS[0] + 120,
    HOLDINGS[0] + 272,
    HOLDINGS[0] + 346,
)
HOLD_WORTH = HOLDINGS[0] + HOLDINGS[2] - 14
HOLD_HEAD = HOLDINGS[1] + 40


def holding_rows(L: Layout) -> list[tuple[int, float]]:
    """(seat, centre y) per row; seat -1 is the bank."""
    row_h = min(30, (HOLDINGS[3] - 60) / (L.seats + 1))
    return [(s, HOLD_HEAD + 20 + i * row_h) for i, s in enumerate([*range(L.seats), -1])]


def frame_holdings(sk: Sketch, L: Layout, who: Sequence[str], colours: Sequence[str]) -> None:
    sk.panel(HOLDINGS, "Holdings")
    for t in range(3):
        sk.text(HOLD_TOKENS + t * 44, HOLD_HEAD, TOKEN_WORDS[t], 7.5, FAINT, ha="center")
    sk.text(HOLD_CUBES, HOLD_HEAD, "cubes left", 7.5, FAINT, ha="center")
    sk.text(HOLD_AREAS, HOLD_HEAD, "areas held", 7.5, FAINT, ha="center")
    sk.text(HOLD_WORTH, HOLD_HEAD, "tokens worth", 7.5, FAINT, ha="right")
    for s, cy in holding_rows(L):
        if s < 0:
            sk.box(HOLDINGS[0] + 10, cy - 15, HOLDINGS[2] - 20, 0.8, RULE)
            sk.text(HOLD_NAME, cy + 2, "bank", 10, FAINT, style="italic")
        else:
            sk.box(HOLD_NAME, cy - 6, 12, 12, colours[s], round_=2, top=True)
            sk.text(HOLD_NAME + 18, cy, who[s], 10.5, INK, "bold")


def draw_holdings(sk: Sketch, game: Game, colours: Sequence[str]) -> None:
    L = game.layout
    points = game.tokens @ L.token_points
    held = [area_controller(r) for r in game.cubes]
    for s, cy in holding_rows(L):
        counts = game.bank if s < 0 else game.tokens[s]
        for t in range(3):
            x = HOLD_TOKENS + t * 44
            if s < 0 or counts[t]:
                sk.token(x, cy + (2 if s < 0 else 0), t, int(counts[t]), r=10.5, size=8.5)
            else:
                sk.box(x - 4, round(cy) - 1, 8, 2, RULE)  # none held
        if s >= 0:
            sk.text(HOLD_CUBES, cy, str(int(game.supply[s])), 10, INK, ha="center")
            sk.text(HOLD_AREAS, cy, str(held.count(s)), 10, INK, ha="center")
            sk.text(HOLD_WORTH, cy, str(int(points[s])), 10, INK, ha="right")


# --- the revealed bids -----------------------------------------------------------------------------------------

BID_NAME_W, BID_OUTCOME_W = 150, 52
BID_HEAD = BIDS[1] + 40
BID_OUTCOME_X = BIDS[0] + BIDS[2] - 10 - BID_OUTCOME_W / 2


def bid_rows(L: Layout) -> tuple[float, float]:
    """The first row's top and the height of a row (one row per character, and Scheming)."""
    footer = 44 if L.card_space >= 0 else 0  # up to three lines of cards drawn
    return BID_HEAD + 12, min(34, (BIDS[3] - 58 - footer) / L.n_targets)


def bid_columns(L: Layout) -> tuple[float, float]:
    """The first seat column's left edge and the width of a column."""
    return BIDS[0] + 10 + BID_NAME_W, (BIDS[2] - 20 - BID_NAME_W - BID_OUTCOME_W) / L.seats


def reward_text(ch: Character, area_names: Sequence[str]) -> str:
    if ch.special == "spy":
        return "move a cube"
    if ch.special == "apothecary":
        return "swap two cubes"
    if ch.special == "card":
        return "a card per Gold bid"
    parts = [f"+{ch.support}"] if ch.support else []
    parts += [f"{n}{TOKEN_LETTERS[t]}" for t, n in enumerate(ch.tokens) if n]
    if ch.area >= 0:
        parts.append(f"cube: {area_names[ch.area]}")
    return "  ".join(parts)


def frame_bids(sk: Sketch, L: Layout, who: Sequence[str], colours: Sequence[str]) -> None:
    sk.panel(BIDS)
    x0, _, w, _ = BIDS
    cx0, col_w = bid_columns(L)
    for s in range(L.seats):
        sk.text(cx0 + (s + 0.5) * col_w, BID_HEAD, who[s], 9.5, colours[s], "bold", ha="center")
    sk.text(BID_OUTCOME_X, BID_HEAD, "won by", 7.5, FAINT, ha="center")
    top, row_h = bid_rows(L)
    area_names = L.components.area_names
    for c, name in enumerate(L.target_names):
        y = top + c * row_h
        if c % 2 == 0:
            sk.box(x0 + 6, y, w - 12, row_h, ZEBRA)
        desc = "Gold: who places Guy first" if c == L.scheming else reward_text(L.card[c], area_names)
        sk.text(x0 + 14, y + row_h / 2 - 6, name, 9.5, INK, "bold")
        sk.text(x0 + 14, y + row_h / 2 + 7, desc, 7, FAINT)


def draw_bids(sk: Sketch, game: Game, who: Sequence[str], colours: Sequence[str]) -> None:
    L = game.layout
    shown = game.revealed_round > 0
    sk.title(BIDS, f"Bids of round {game.revealed_round}" if shown else "Bids (none revealed yet)")
    if not shown:
        return
    top, row_h = bid_rows(L)
    cx0, col_w = bid_columns(L)
    r = min(8.5, row_h * 0.3)
    resolving = game.phase != OVER and game.revealed_round == game.round
    for c in range(L.n_targets):
        y = top + c * row_h
        cy = y + row_h / 2
        winner = int(game.winners[c])
        column = game.revealed[:, c]
        for s in range(L.seats):
            cell_x = cx0 + s * col_w
            if winner == s and c != L.card_space:
                sk.box(cell_x + 2, y + 2, col_w - 4, row_h - 4, colours[s], round_=4, alpha=0.22)
                sk.box(cell_x + 2, y + 2, col_w - 4, row_h - 4, "none", colours[s], 2.0, round_=4, top=True)
            kinds = [t for t in range(3) if column[s, t]]
            span = len(kinds) * 2 * r + (len(kinds) - 1) * 3
            for k, t in enumerate(kinds):
                sk.token(cell_x + col_w / 2 - span / 2 + r + k * (2 * r + 3), cy, t, int(column[s, t]), r=r, size=7.5)
        outcome, colour = outcome_text(game, c, winner, resolving, who, colours)
        sk.text(BID_OUTCOME_X, cy, outcome, 8.5, colour, "bold", ha="center")
    if game.cards_drawn:
        sk.text(BIDS[0] + 14, top + L.n_targets * row_h + 8, cards_text(game, who), 7.5, INK, va="top")


def cards_text(game: Game, who: Sequence[str]) -> str:
    """The cards drawn this round, seat by seat, wrapped to the width of the bids panel."""
    deck = game.layout.components.deck
    per_seat: dict[int, Counter[str]] = {}
    for s, i in game.cards_drawn:
        per_seat.setdefault(s, Counter())[deck[i].name] += 1
    drawn = "; ".join(
        f"{who[s]}: " + ", ".join(name if n == 1 else f"{n}× {name}" for name, n in names.items())
        for s, names in per_seat.items()
    )
    return "\n".join(textwrap.wrap("Cards drawn: " + drawn, 84))


def outcome_text(
    game: Game, c: int, winner: int, resolving: bool, who: Sequence[str], colours: Sequence[str]
) -> tuple[str, str]:
    """Who won a character: a seat, ``tie`` (nobody), ``–`` (no bid), ``…`` (not resolved yet)."""
    L = game.layout
    if c == L.scheming:
        return "", FAINT
    if c == L.card_space:
        return ("cards" if game.revealed[:, c].any() else "–"), FAINT
    if winner >= 0:
        return who[winner], colours[winner]
    if winner == -2:
        return ("…" if resolving else ""), FAINT
    return ("tie" if game.revealed[:, c].any() else "–"), FAINT
