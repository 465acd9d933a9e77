"""Write the README's generated tables from the reports they summarise, or check that the README holds them.

    python scripts/readme_tables.py            # rewrite the tables in README.md
    python scripts/readme_tables.py --check    # exit 1, saying which table differs, if README.md is not up to date

A generated table stands between ``<!-- generated: NAME -->`` and ``<!-- end generated -->`` in the README; the
text between is replaced, nothing else is touched. ``tests/test_readme.py`` runs the check.

``results``: one row per shipped bot (``checkpoints/*.json``, the cards that ``scripts/make_card.py`` writes), in
order of players. The card names the bot's evaluations and exploitability runs; the figures come from those runs'
own reports, ``docs/results/<folder>/results.json`` and ``exploit.json``:

- trained: the card's learner steps, wall time and stages;
- worst training table: the worst table of the card's first gauntlet (its headline evaluation);
- worst held-out table: the worst held-out table of the card's held-out gauntlet with the most games a table;
- best response wins: the card's exploitability run with the most steps (for the benchmark's protocol, the best of
  its seeds);
- exploitability (source): the card's ``figures``: the three-source benchmark with the most steps, the source that
  gave the maximum, its budget, its calibration rows (the same protocol against ``value`` and ``random``);
- two draws the same bid: the card's tie rate, the bot as it plays and sampled (``PATH:sample``);
- ms/decision: the card's milliseconds of CPU per decision on one core, bid and other decisions.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
BLOCK = re.compile(r"(<!-- generated: (\w+) -->\n)(.*?)(<!-- end generated -->)", re.DOTALL)


def _read(path: Path) -> dict[str, Any]:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise SystemExit(f"{path.relative_to(ROOT)}: no such report (a card names it)") from None


def _rate(row: dict[str, Any]) -> str:
    """``72.2% [66.8, 76.9]``: a win rate and its 95% interval, in percent."""
    lo, hi = row["win_rate_ci95"]
    return f"{100 * row['win_rate']:.1f}% [{100 * lo:.1f}, {100 * hi:.1f}]"


def _table_name(opponents: list[str]) -> str:
    """``value-habit+area-wide x2``: a table's opponents, repeats counted."""
    names: list[str] = []
    for name in opponents:
        if name not in names:
            names.append(name)
    return "+".join(f"`{n}`" + (f" x{opponents.count(n)}" if opponents.count(n) > 1 else "") for n in names)


def _link(folder: str, *names: str) -> str:
    """A link to the first of ``names`` that the report folder holds (its report, else its figures)."""
    for name in names:
        if (ROOT / folder / name).is_file():
            return f"[report]({folder}/{name})"
    raise SystemExit(f"{folder}: none of {', '.join(names)}")


def _worst(table: dict[str, Any], folder: str) -> str:
    worst = table["worst"]
    return f"{_table_name(worst['opponents'])} {_rate(worst)} ({worst['games']} games; {_link(folder, 'report.md')})"


def results_row(card_path: Path) -> str:
    card = _read(card_path)
    name = card_path.stem
    hours = card["wall_time_s"] / 3600
    trained = f"{card['steps'] / 1e6:.2f}M steps, {hours:.1f} h, {len(card['stages'])} stages"
    folders = [ev["results"] for ev in card["evaluations"]]
    reports = [(folder, _read(ROOT / folder / "results.json")) for folder in folders]
    gauntlets = [(folder, r["gauntlet"]) for folder, r in reports if r.get("gauntlet")]
    held_out = [(folder, r["held_out"]) for folder, r in reports if r.get("held_out")]
    if not gauntlets:
        raise SystemExit(f"{card_path.relative_to(ROOT)}: no gauntlet among its evaluations")
    training = _worst(gauntlets[0][1], gauntlets[0][0])
    if held_out:
        folder, table = max(held_out, key=lambda item: item[1]["worst"]["games"])  # the first of the largest
        held = _worst(table, folder)
    else:
        held = "not measured"
    best = "not measured"
    runs = [(e["run"], _read(ROOT / e["run"] / "exploit.json")) for e in card["exploitability"]]
    if runs:
        folder, run = max(runs, key=lambda item: _steps(item[1]))
        figures = run["exploitability"] if "exploitability" in run else run["final"]
        best = f"{_rate(figures)} ({_steps(run) / 1e6:.1f}M steps; {_link(folder, 'exploit.md', 'exploit.json')})"
    chance = 100 / card["env_options"]["players"]
    figures = card.get("figures", {})
    cells = [_exploitability(figures.get("exploitability")), _tie_rate(figures.get("tie_rate")),
             _ms(figures.get("ms_per_decision"))]  # fmt: skip
    return (f"| [`{name}`](checkpoints/{name}.md) (chance {chance:.0f}%) | {trained} | {training} | {held} | {best} | "
            + " | ".join(cells) + " |")  # fmt: skip


def _exploitability(e: dict[str, Any] | None) -> str:
    """``73.8% [67.2, 79.4], (c) value-habit (20k steps, 200 games); calibration value 84.2%, random 100.0%``: the
    figure, its source, its budget, and the calibration rows of the same protocol where they were run."""
    if not e:
        return "not measured"
    source = "(a) copy" if e["source"] == "copy" else "(b) common start" if e["source"] == "common" else "(c)"
    if e["source"] == "known":
        source += f" `{e['sources']['known']['agent']}`"
    b = e["budget"]
    rows = sorted(e.get("calibration", []), key=lambda c: c["agent"] != "value")  # value first: the one to read
    calibration = ", ".join(f"`{c['agent']}` {100 * c['win_rate']:.1f}%" for c in rows)
    return (f"{_rate(e)}, {source} ({b['steps'] / 1e3:.0f}k steps x {b['seeds']}, {b['games']} games; "
            f"{_link(e['run'], 'exploit.md', 'exploit.json')})"
            + (f"; calibration {calibration}" if calibration else "; calibration not run"))  # fmt: skip


def _tie_rate(t: dict[str, Any] | None) -> str:
    if not t:
        return "not measured"
    words = {"as_played": "as it plays", "sampled": "sampled"}
    return ", ".join(f"{words[k]} {100 * t[k]['tie_rate']:.1f}%" for k in words if k in t)


def _ms(ms: dict[str, Any] | None) -> str:
    if not ms:
        return "not measured"
    return f"bid {ms['bid']['cpu_ms_mean']:.2f}, other {ms['other']['cpu_ms_mean']:.2f}"


def _steps(run: dict[str, Any]) -> int:
    """A best response's training steps: the protocol's, or a single run's."""
    return run["protocol"]["steps"] if "protocol" in run else run["steps"]


def results_table() -> str:
    cards = sorted(ROOT.glob("checkpoints/*.json"), key=lambda p: _read(p)["env_options"]["players"])
    lines = [
        "| bot | trained | worst training table | worst held-out table | best response wins | exploitability (source)"
        " | two draws the same bid | ms/decision (one core) |",
        "|---|---|---|---|---|---|---|---|",
    ]
    return "\n".join(lines + [results_row(card) for card in cards]) + "\n"


TABLES = {"results": results_table}


def generated(text: str) -> str:
    """``text`` with every generated table written afresh; an unknown table name is refused."""

    def fill(m: re.Match) -> str:
        if m.group(2) not in TABLES:
            raise SystemExit(f"README.md: no generator for the table {m.group(2)!r} (known: {', '.join(TABLES)})")
        return m.group(1) + TABLES[m.group(2)]() + m.group(4)

    return BLOCK.sub(fill, text)


def stale(text: str) -> list[str]:
    """The names of the generated tables of ``text`` that differ from what the reports give."""
    fresh = generated(text)
    return [m.group(2) for m, f in zip(BLOCK.finditer(text), BLOCK.finditer(fresh)) if m.group(3) != f.group(3)]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="only check that README.md holds the tables")
    args = parser.parse_args(argv)
    text = README.read_text(encoding="utf-8")
    if not BLOCK.search(text):
        raise SystemExit("README.md has no generated table (<!-- generated: NAME --> ... <!-- end generated -->)")
    if args.check:
        if differ := stale(text):
            print(f"README.md: the {', '.join(differ)} table differs from the reports: python scripts/readme_tables.py")
            return 1
        return 0
    fresh = generated(text)
    if fresh != text:
        README.write_text(fresh, encoding="utf-8")
        print("README.md: tables written")
    return 0


if __name__ == "__main__":
    sys.exit(main())
