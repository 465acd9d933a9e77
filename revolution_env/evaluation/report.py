"""Write an evaluation out: results.json, games.jsonl, report.md and plots; print its table.

Every file is written to a temporary name beside it and then renamed, so an interrupted run leaves the old file
or the new one, never half of one. An interrupted evaluation's files are those of the games played so far, marked
partial (``complete`` false in results.json, a line at the top of report.md); while it plays, games.jsonl is
its journal (:mod:`.journal`), and evaluation.json says what it is.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np

from revolution_env.common.files import atomic_write as write_atomic
from revolution_env.evaluation.runner import Evaluation, HeldOut
from revolution_env.evaluation.stats import RATING_ORDERS

RESULTS = "results.json"
GAMES = "games.jsonl"
REPORT = "report.md"
MANIFEST = "evaluation.json"
INDEX = "game"  # the key of a game's index on its line of games.jsonl
WIN_RATES_PLOT = "win_rates.png"
HEAD_TO_HEAD_PLOT = "head_to_head.png"
GAUNTLET_PLOT = "gauntlet.png"
PLOTS = (WIN_RATES_PLOT, HEAD_TO_HEAD_PLOT, GAUNTLET_PLOT)
OUTPUTS = (RESULTS, GAMES, REPORT, MANIFEST, *PLOTS)  # what an evaluation may write in its folder


def remove_outputs(out: Path) -> None:
    """A previous evaluation's files, results.json first."""
    for name in OUTPUTS:
        (out / name).unlink(missing_ok=True)


def ranked(evaluation: Evaluation | HeldOut) -> list[str]:
    """Agent names, best first (by win rate, then rating)."""
    stats = evaluation.stats
    return sorted(stats, key=lambda n: (-stats[n].win_rate, -stats[n].mu, n))


def write_results(evaluation: Evaluation, out: str | Path) -> Path:
    data = evaluation.to_dict()
    path = Path(out) / RESULTS
    write_atomic(path, lambda fh: (json.dump(data, fh, indent=2), fh.write("\n")))
    return path


def game_line(index: int, result: Any) -> str:
    """A game's line in games.jsonl: its index in the evaluation first (its seed and seats come from it), then its
    result, with the game as a scenario."""
    return json.dumps({INDEX: index, **result.to_dict()})


def write_games(evaluation: Evaluation, out: str | Path) -> Path:
    """games.jsonl: a line per game, in game order, each with its index in the evaluation (``game``)."""
    path = Path(out) / GAMES
    pairs = sorted(zip(evaluation.all_indices(), evaluation.all_results()), key=lambda pair: pair[0])
    write_atomic(path, lambda fh: fh.writelines(game_line(i, r) + "\n" for i, r in pairs))
    return path


# --- the table ---------------------------------------------------------------------------------------------

COLUMNS = ("agent", "games", "win rate", "95% CI", "mean support", "mean margin", "rating (mu ± sigma)")
SHORT_COLUMNS = ("agent", "games", "win rate", "95% CI", "support", "margin", "mu ± sigma")


def table_rows(evaluation: Evaluation | HeldOut, terse: bool = False) -> list[tuple[str, ...]]:
    """One row per agent, best first (``terse``: narrower, for an 80-column terminal)."""
    rows = []
    for name in ranked(evaluation):
        s = evaluation.stats[name]
        low, high = s.win_rate_ci95
        rows.append(
            (
                name,
                str(s.games),
                f"{s.win_rate:.3f}",
                f"{low:.3f}–{high:.3f}" if terse else f"[{low:.3f}, {high:.3f}]",
                f"{s.mean_support:.1f}",
                f"{s.mean_margin:+.1f}",
                f"{s.mu:.2f} ± {s.sigma:.2f}",
            )
        )
    return rows


def print_table(evaluation: Evaluation, console: Any = None) -> None:
    """The table on a terminal (rich); elsewhere (a log file, CI) plain Markdown, in full whatever the width."""
    from rich import box
    from rich.console import Console
    from rich.table import Table

    console = console or Console()
    if not console.is_terminal:
        print(markdown_tables(evaluation))
        return
    title = _title(evaluation)
    table = Table(title=title, box=box.SIMPLE_HEAVY)
    for i, column in enumerate(SHORT_COLUMNS):
        table.add_column(column, justify="left" if i == 0 else "right", no_wrap=True)
    for row in table_rows(evaluation, terse=True):
        table.add_row(*row)
    console.print(table)
    if evaluation.head_to_head is not None:
        names = ranked(evaluation)
        h2h = Table(title="head to head: the row's win rate in games with the column", box=box.SIMPLE_HEAVY)
        h2h.add_column("")
        for name in names:
            h2h.add_column(name, justify="right")
        for row in names:
            h2h.add_row(row, *(_rate(evaluation.head_to_head[row][col]) for col in names))
        console.print(h2h)


def _title(evaluation: Evaluation) -> str:
    title = f"{evaluation.mode}: {evaluation.players} players, {len(evaluation.results)} games, seed {evaluation.seed}"
    return title if evaluation.complete else f"{title} ({partial(evaluation)})"


def partial(evaluation: Evaluation) -> str:
    """What an interrupted evaluation's files say it is."""
    return f"partial: interrupted after {len(evaluation.all_results()):,} of {evaluation.planned:,} games"


def markdown_tables(evaluation: Evaluation) -> str:
    """The agents' table (and the head-to-head matrix of a pool) as Markdown: no width limit."""
    title = _title(evaluation)
    parts = [title, "", _markdown_table(list(COLUMNS), table_rows(evaluation))]
    if evaluation.head_to_head is not None:
        names = ranked(evaluation)
        rows = [[row, *(_rate(evaluation.head_to_head[row][col]) for col in names)] for row in names]
        parts += [
            "",
            "head to head: the row's win rate in games with the column",
            "",
            _markdown_table(["", *names], rows),
        ]
    return "\n".join(parts)


def _rate(value: float | None) -> str:
    return "—" if value is None else f"{value:.3f}"


def _markdown_table(header: list[str], rows: list[tuple[str, ...]] | list[list[str]]) -> str:
    lines = [
        "| " + " | ".join(header) + " |",
        "|" + "|".join("---" if i == 0 else "--:" for i in range(len(header))) + "|",
    ]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines)


def markdown(evaluation: Evaluation, command: str | None = None, plots: list[str] | None = None) -> str:
    """report.md: the table first, then the head-to-head matrix, what the games were like, the command."""
    from revolution_env.evaluation.stats import lineup_summaries, summary

    config = evaluation.config()
    s = summary(evaluation.results)
    options = ", ".join(f"{k}={v}" for k, v in sorted(config["options"].items()) if k != "players") or "defaults"
    orders = math.factorial(evaluation.players)
    uneven = f"; {evaluation.games} is not a multiple of the {orders} orders" if evaluation.games % orders else ""
    parts = [
        f"# Evaluation: {evaluation.mode} of {len(evaluation.specs)} agents, {evaluation.players} players",
        "",
        f"{len(evaluation.results)} games ({evaluation.games} per lineup, rotated over every seat order{uneven}), "
        f"seed {evaluation.seed}; rules: {options}. Chance is {1 / evaluation.players:.3f}.",
        "",
    ]
    if not evaluation.complete:
        parts += [
            f"**{partial(evaluation).capitalize()}**: the tables are those of the games played so far. The same "
            "command continues the evaluation where it stopped.",
            "",
        ]
    parts += [
        _markdown_table(list(COLUMNS), table_rows(evaluation)),
        "",
        "A win shared by k players counts 1/k. Margin: final support minus the best other seat's (the puppet "
        "included). Rating: openskill Plackett-Luce from each game's finishing order, averaged over "
        f"{RATING_ORDERS} random orders of the games.",
    ]
    if evaluation.head_to_head is not None:
        names = ranked(evaluation)
        rows = [[row, *(_rate(evaluation.head_to_head[row][col]) for col in names)] for row in names]
        parts += [
            "",
            "## Head to head",
            "",
            "The row agent's win rate in the games the column agent also played.",
            "",
            _markdown_table(["", *names], rows),
        ]
    if evaluation.gauntlet is not None:
        parts += ["", "## Gauntlet", "", gauntlet_markdown(evaluation)]
    seat_rates = ", ".join(f"seat {i}: {w:.3f}" for i, w in enumerate(s["win_rate_by_seat"]))
    parts += [
        "",
        "## Games",
        "",
        f"- mean length: {s['mean_rounds']:.1f} rounds; truncated at max_rounds: {s['truncated']}",
        f"- shared wins: {s['shared_wins']}; games nobody won: {s['no_winner']}",
        f"- win rate by seat: {seat_rates}",
        "",
        "By lineup (a bot that wins by stalling wins the games truncated at max_rounds):",
        "",
        lineups_markdown(lineup_summaries(evaluation.results, list(evaluation.specs))),
    ]
    if plots:
        parts += ["", "## Plots", ""] + [f"![{p}]({p})" for p in plots]
    if command:
        parts += ["", "## Command", "", "```", command, "```"]
    return "\n".join(parts) + "\n"


def lineups_markdown(lineups: list[dict[str, Any]]) -> str:
    """The games of each lineup (``stats.lineup_summaries``): their length, how many reached max_rounds, and who
    won those."""
    rows = []
    for row in lineups:
        won = ", ".join(f"{name} {wins:g}" for name, wins in row["truncated_wins"].items() if wins) or "—"
        rows.append(
            (" + ".join(row["agents"]), str(row["games"]), f"{row['mean_rounds']:.1f}",
             f"{row['truncated']} ({row['truncated_rate']:.1%})", won)
        )  # fmt: skip
    return _markdown_table(["lineup", "games", "mean rounds", "truncated at max_rounds", "won when truncated"], rows)


def gauntlet_markdown(evaluation: Evaluation) -> str:
    """The gauntlet's agent at every table, worst first, with the headline (its worst table); with held-out
    opponents, two blocks (:func:`held_out_markdown`)."""
    if evaluation.held_out is not None:
        return held_out_markdown(evaluation)
    return _tables_markdown(evaluation.gauntlet)


def _tables_markdown(g: dict[str, Any]) -> str:
    """A gauntlet's tables, worst first (those not played yet, in a partial evaluation, last)."""
    rows = [
        (", ".join(t["opponents"]), str(t["games"]), _rate(t["win_rate"]),
         f"[{t['win_rate_ci95'][0]:.3f}, {t['win_rate_ci95'][1]:.3f}]")
        for t in sorted(g["tables"], key=lambda t: (t["win_rate"] is None, t["win_rate"] or 0, t["opponents"]))
    ]  # fmt: skip
    worst = g["worst"]
    if worst is None:
        headline = f"**{g['agent']}: no table played yet** (chance {g['chance']:.3f})."
    else:
        low, high = worst["win_rate_ci95"]
        headline = (f"**{g['agent']}: worst table {', '.join(worst['opponents'])}, {worst['win_rate']:.3f} "
                    f"[{low:.3f}, {high:.3f}]** (chance {g['chance']:.3f}).")  # fmt: skip
    return "\n".join([headline, "", _markdown_table(["opponents", "games", f"{g['agent']} win rate", "95% CI"], rows)])


def held_out_markdown(evaluation: Evaluation) -> str:
    """The gauntlet in two blocks, never merged: the training opponents (the report's first table is their games)
    and the held-out ones (docs/heldout.md), each with its own worst table; the held-out games' own table."""
    held = evaluation.held_out
    return "\n".join(
        [
            "### Training opponents",
            "",
            _tables_markdown(evaluation.gauntlet),
            "",
            "### Held-out opponents",
            "",
            f"Opponents no training run may use: {', '.join(held.specs)}; {len(held.results)} games.",
            "",
            _tables_markdown(held.gauntlet),
            "",
            _markdown_table(list(COLUMNS), table_rows(held)),
        ]
    )


def print_gauntlet(evaluation: Evaluation) -> None:
    """The gauntlet's table on standard output, in full whatever the width (Markdown)."""
    print(gauntlet_markdown(evaluation))


def plot_gauntlet(evaluation: Evaluation, out: str | Path) -> Path:
    """A heat map of the agent's win rate at each table (:func:`_gauntlet_grid`). With held-out opponents, a second
    panel below, its title saying which is which (docs/heldout.md)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    panels = [("training opponents" if evaluation.held_out is not None else "", evaluation.gauntlet)]
    if evaluation.held_out is not None:
        panels.append(("held-out opponents", evaluation.held_out.gauntlet))
    grids = [_gauntlet_grid(g, evaluation.players) for _, g in panels]
    width = max(max(5.0, 2.5 + 0.9 * len(cols)) for _, _, cols in grids)
    heights = [2.2 + 0.7 * len(rows) for _, rows, _ in grids]
    fig, axes = plt.subplots(len(panels), 1, figsize=(width, sum(heights)), height_ratios=heights, squeeze=False)
    for ax, (label, g), (grid, rows, cols) in zip(axes[:, 0], panels, grids):
        image = ax.imshow(grid, vmin=0, vmax=1, cmap="RdYlGn")
        ax.set_xticks(range(len(cols)), cols, rotation=45, ha="right")
        ax.set_yticks(range(len(rows)), rows)
        for i in range(grid.shape[0]):
            for j in range(grid.shape[1]):
                if not np.isnan(grid[i, j]):
                    ax.text(j, i, f"{grid[i, j]:.2f}", ha="center", va="center", fontsize=9)
        fig.colorbar(image, ax=ax, fraction=0.046)
        worst = "none played yet" if g["worst"] is None else f"{g['worst']['win_rate']:.2f}"
        ax.set_title(
            f"{g['agent']}: win rate per table{', ' + label if label else ''}\nworst {worst}, chance {g['chance']:.2f}",
            fontsize=10,
        )
    fig.tight_layout()
    path = Path(out) / GAUNTLET_PLOT
    _save(fig, path)
    plt.close(fig)
    return path


def _or_nan(rate: float | None) -> float:
    return math.nan if rate is None else rate


def _gauntlet_grid(g: dict[str, Any], players: int) -> tuple[np.ndarray, list[str], list[str]]:
    """A gauntlet's win rates as a grid with its row and column names: opponent by opponent in three players (a
    symmetric grid); in four, a row per pair of opponents and a column per third one (each table once, where the
    third comes no earlier than the second); one row of tables in two."""
    tables = g["tables"]
    if players == 2:
        rates = [[_or_nan(t["win_rate"]) for t in tables]]
        return np.array(rates, dtype=float), [g["agent"]], [" + ".join(t["opponents"]) for t in tables]
    names = list(dict.fromkeys(o for t in tables for o in t["opponents"]))
    if players == 3:
        grid = np.full((len(names), len(names)), np.nan)
        for t in tables:
            i, j = (names.index(o) for o in t["opponents"])
            grid[i, j] = grid[j, i] = _or_nan(t["win_rate"])
        return grid, names, names
    pairs = list(dict.fromkeys(tuple(t["opponents"][:-1]) for t in tables))
    grid = np.full((len(pairs), len(names)), np.nan)
    for t in tables:
        grid[pairs.index(tuple(t["opponents"][:-1])), names.index(t["opponents"][-1])] = _or_nan(t["win_rate"])
    return grid, [" + ".join(pair) for pair in pairs], names


def write_report(
    evaluation: Evaluation, out: str | Path, command: str | None = None, plots: list[str] | None = None
) -> Path:
    path = Path(out) / REPORT
    text = markdown(evaluation, command, plots)
    write_atomic(path, lambda fh: fh.write(text))
    return path


# --- plots -------------------------------------------------------------------------------------------------


def _save(fig: Any, path: Path) -> None:
    write_atomic(path, lambda fh: fig.savefig(fh, format="png", dpi=120, metadata={"Software": None}), binary=True)


def plot_win_rates(evaluation: Evaluation, out: str | Path) -> Path:
    """Horizontal bars of win rate with their 95% intervals; a dashed line at chance."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = ranked(evaluation)[::-1]  # best at the top
    rates = [evaluation.stats[n].win_rate for n in names]
    cis = [evaluation.stats[n].win_rate_ci95 for n in names]
    errors = [
        [max(0.0, r - lo) for r, (lo, _) in zip(rates, cis)],
        [max(0.0, hi - r) for r, (_, hi) in zip(rates, cis)],
    ]
    fig, ax = plt.subplots(figsize=(7, 1.2 + 0.45 * len(names)))
    ax.barh(names, rates, xerr=errors, color="#4c72b0", ecolor="black", capsize=4)
    ax.axvline(1 / evaluation.players, color="grey", linestyle="--", label=f"chance (1/{evaluation.players})")
    ax.set_xlim(0, 1)
    ax.set_xlabel("win rate (95% Wilson interval)")
    ax.set_title(f"{evaluation.players} players, {len(evaluation.results)} games")
    ax.legend(loc="lower right")
    fig.tight_layout()
    path = Path(out) / WIN_RATES_PLOT
    _save(fig, path)
    plt.close(fig)
    return path


def plot_head_to_head(evaluation: Evaluation, out: str | Path) -> Path:
    """A heatmap of the head-to-head matrix."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    names = ranked(evaluation)
    h2h = evaluation.head_to_head or {}
    grid = np.array([[np.nan if h2h[r][c] is None else h2h[r][c] for c in names] for r in names], dtype=float)
    size = 2.5 + 0.7 * len(names)
    fig, ax = plt.subplots(figsize=(size + 1, size))
    image = ax.imshow(grid, vmin=0, vmax=1, cmap="RdYlGn")
    ax.set_xticks(range(len(names)), names, rotation=45, ha="right")
    ax.set_yticks(range(len(names)), names)
    for i in range(len(names)):
        for j in range(len(names)):
            if not np.isnan(grid[i, j]):
                ax.text(j, i, f"{grid[i, j]:.2f}", ha="center", va="center", fontsize=8)
    ax.set_xlabel("in games with")
    ax.set_ylabel("win rate of")
    fig.colorbar(image, ax=ax, fraction=0.046)
    ax.set_title("head to head")
    fig.tight_layout()
    path = Path(out) / HEAD_TO_HEAD_PLOT
    _save(fig, path)
    plt.close(fig)
    return path


def write_all(evaluation: Evaluation, out: str | Path, command: str | None = None, games: bool = True) -> list[Path]:
    """Every output into ``out`` (created if needed): games.jsonl (unless ``games`` is False: an interrupted
    evaluation's journal holds them already), the plots, report.md, and results.json last, whose ``complete`` says
    whether the evaluation is done. A plot that this evaluation does not draw (another's) is removed: it would be
    stale."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    draws = {WIN_RATES_PLOT: plot_win_rates}
    if evaluation.head_to_head is not None:
        draws[HEAD_TO_HEAD_PLOT] = plot_head_to_head
    if evaluation.gauntlet is not None:
        draws[GAUNTLET_PLOT] = plot_gauntlet
    for name in PLOTS:
        if name not in draws:
            (out / name).unlink(missing_ok=True)
    written = [write_games(evaluation, out)] if games else []
    plots = [draw(evaluation, out) for draw in draws.values()]
    written += plots
    written.append(write_report(evaluation, out, command, [p.name for p in plots]))
    written.append(write_results(evaluation, out))
    return written
