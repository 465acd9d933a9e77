"""Write the card of a shipped bot: its config, steps, wall time, and evaluation results.

    python scripts/make_card.py checkpoints/three_players.pt results/three_players_vs_value results/... \
        --config configs/three_players.yaml --command "revolution eval ..." --command "..."

``--config``: the bot's recipe (one config with ``stages:``, one per stage of the checkpoint's history), or one
config per training stage (a run started with ``init_from`` is a stage after its source's stages).

    python scripts/make_card.py checkpoints/three_players.pt --refresh

rewrites a card from the sources its JSON names (configs, results folders and their commands, exploit runs, note),
after those results were rerun; any other argument given replaces the card's own.

Each results folder is the ``--out`` of a ``revolution eval`` run (its ``results.json``). The card is written
beside the checkpoint as ``<name>.md`` (for people) and ``<name>.json`` (for tools).

The card opens with its figures (``figures`` in the JSON, one short table in the card), each with the file and
the command it comes from: the exploitability with its sources (the three-source run of ``--exploit`` with the
most steps), the tables that hold copies of the bot and its worst held-out table (from the results folders), how
often two of its bids drawn at one state are the same bid (``--tie-rate``: ``scripts/tie_rate.py --json``, the bot
as it plays and ``PATH:sample``), milliseconds per decision (``--timing``: ``scripts/decision_time.py --json``) and
the one-round gap (``--round-gap``: ``scripts/one_round_gap.py --json``). A figure not measured says so.
"""

from __future__ import annotations

import argparse
import json
import re
from pathlib import Path
from typing import Any

from revolution_training.checkpoint import history, read_checkpoint
from revolution_training.config import load_config, stage_configs

from revolution_env import ENV_NAME


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("checkpoint")
    parser.add_argument("results", nargs="*", help="folders holding an evaluation's results.json")
    parser.add_argument("--command", action="append", default=[], help="the command behind each results folder")
    parser.add_argument(
        "--config", action="append", default=[], help="the bot's recipe, or the config of each training stage"
    )
    parser.add_argument("--note", default=None, help="a paragraph for the card (what was tried, what is missing)")
    parser.add_argument(
        "--exploit", action="append", default=[], help="a `revolution exploit` run folder (its exploit.json)"
    )
    parser.add_argument("--tie-rate", help="scripts/tie_rate.py's --json, measuring the bot (PATH and PATH:sample)")
    parser.add_argument("--timing", help="scripts/decision_time.py's --json, measuring the bot")
    parser.add_argument("--round-gap", help="scripts/one_round_gap.py's --json, measuring the bot")
    parser.add_argument("--refresh", action="store_true", help="take every argument not given from the card's own JSON")
    args = parser.parse_args()

    path = Path(args.checkpoint)
    if args.refresh:
        _fill_from_card(args, path.with_suffix(".json"))
    if not args.results:
        parser.error("give at least one results folder (or --refresh, to take them from the card)")
    if not args.config:
        parser.error("give one --config per training stage (or --refresh, to take them from the card)")
    ckpt = read_checkpoint(path)
    stages = history(ckpt)
    evaluations, reports = [], []
    for i, folder in enumerate(args.results):
        results = json.loads((Path(folder) / "results.json").read_text())
        reports.append(results)
        evaluations.append(
            {
                "command": args.command[i] if i < len(args.command) else "",
                "results": str(folder),
                "config": results["config"],
                "agents": results["agents"],
                **({"gauntlet": results["gauntlet"]} if "gauntlet" in results else {}),
                **({"held_out": results["held_out"]} if results.get("held_out") else {}),
            }  # fmt: skip
        )
    exploits = [
        json.loads((Path(folder) / "exploit.json").read_text()) | {"run": str(folder)} for folder in args.exploit
    ]
    card = {
        "checkpoint": path.name,
        "env": ckpt["env"],
        "evaluated_on": ENV_NAME,
        "env_options": ckpt["env_options"],
        "layout_hash": ckpt["layout_hash"],
        "steps": sum(stage["step"] for stage in stages),
        "wall_time_s": round(sum(stage["wall_time"] for stage in stages)),
        "stages": [
            {**stage, **source, "wall_time": round(stage["wall_time"])}
            for stage, source in zip(stages, _stage_sources(args.config, len(stages)))
        ],
        "saved_at": ckpt.get("saved_at"),
        "config": ckpt.get("config"),
        "evaluations": evaluations,
        "exploitability": exploits,
        "figures": figures(path, args, evaluations, reports, exploits),
        "note": args.note or "",
    }
    path.with_suffix(".json").write_text(json.dumps(card, indent=1) + "\n")

    lines = [f"# {path.stem}", "", *figures_table(card["figures"], ckpt["env_options"]["players"])]
    opts = ", ".join(f"{k}={v}" for k, v in ckpt["env_options"].items())
    hours = card["wall_time_s"] / 3600
    lines += [
        f"- environment: trained on `{ckpt['env']}` ({opts}); every evaluation below holds on `{ENV_NAME}`",
        f"- trained: {card['steps']:,} learner steps, {hours:.2f} h wall time on 2 CPU cores "
        f"(saved {card['saved_at']})",
    ]
    recipes = {stage["config"] for stage in card["stages"] if "name" in stage}
    if recipes:
        (recipe,) = recipes
        total = len(stage_configs(load_config(recipe)))
        which = "every stage" if total == len(card["stages"]) else f"these {len(card['stages'])} stages and more"
        lines.append(f"- recipe: `revolution train --config {recipe}` runs {which} from scratch")
    for i, stage in enumerate(card["stages"], 1):
        if "name" in stage:
            lines.append(f"- stage {i}, {stage['name']}: {stage['step']:,} steps, {stage['wall_time'] / 3600:.2f} h")
            continue
        command = f"revolution train --config {stage['config']}"
        if load_config(stage["config"]).total_steps != stage["step"]:
            command += f" --total-steps {stage['step']}"  # the run was stopped there, or this is its best step
        lines.append(f"- stage {i}: `{command}`: {stage['step']:,} steps, {stage['wall_time'] / 3600:.2f} h")
    lines += ["- the last stage's config is in full in the JSON card", ""]
    if args.note:
        lines += [args.note, ""]
    for ev in evaluations:
        lines += [f"## `{ev['command']}`", "", f"Report: `{ev['results']}/report.md`.", ""]
        for key, title in (
            ("gauntlet", "Worst table"),
            ("held_out", "Held out (no training run met them): worst table"),
        ):
            if key not in ev:
                continue
            g = ev[key]
            worst = g["worst"]
            lo, hi = worst["win_rate_ci95"]
            lines += [
                f"{title}: {', '.join(worst['opponents'])}, {worst['win_rate']:.3f} [{lo:.3f}, {hi:.3f}] "
                f"(chance {g['chance']:.3f}).",
                "",
                "| opponents | games | win rate | 95% CI |",
                "|---|--:|--:|--:|",
            ]
            for row in g["tables"]:
                lo, hi = row["win_rate_ci95"]
                lines.append(
                    f"| {', '.join(row['opponents'])} | {row['games']} | {row['win_rate']:.3f} | [{lo:.3f}, {hi:.3f}] |"
                )
            lines.append("")
        lines += ["| agent | games | win rate | 95% CI | mean support | rating |", "|---|--:|--:|--:|--:|--:|"]
        for name, a in ev["agents"].items():
            lo, hi = a["win_rate_ci95"]
            lines.append(
                f"| {name} | {a['games']} | {a['win_rate']:.3f} | [{lo:.3f}, {hi:.3f}] | {a['mean_support']:.1f} |"
                f" {a['rating']['mu']:.1f} ± {a['rating']['sigma']:.1f} |"
            )
        lines.append("")
    if exploits:
        lines += [
            "## Approximate exploitability (`revolution exploit`)",
            "",
            "A fresh best response trained against the agent in every other seat, then measured on fresh games "
            "(`training/exploit.py`: a lower bound).",
            "",
            "| agent | steps | best response win rate | 95% CI | games | chance | run |",
            "|---|--:|--:|--:|--:|--:|---|",
        ]
        for e in exploits:
            if e.get("format") == "revolution-exploit-benchmark":  # the protocol: the best of its seeds
                f, steps = e["exploitability"], e["protocol"]["steps"]
                target = f"{e['target']} (best of {len(e['protocol']['seeds'])} seeds)"
            else:  # one best response (before the protocol)
                f, steps, target = e["final"], e["steps"], e["target"]
            lo, hi = f["win_rate_ci95"]
            lines.append(f"| {target} | {steps:,} | {f['win_rate']:.3f} | [{lo:.3f}, {hi:.3f}] | {f['games']} | "
                         f"{e['chance']:.3f} | `{e['run']}` |")  # fmt: skip
        lines.append("")
    path.with_suffix(".md").write_text("\n".join(lines))
    print(f"written: {path.with_suffix('.md')}, {path.with_suffix('.json')}")


def _fill_from_card(args: argparse.Namespace, card_path: Path) -> None:
    if not card_path.exists():
        raise SystemExit(f"--refresh: no card at {card_path}")
    card = json.loads(card_path.read_text())
    if not args.results:
        args.results = [ev["results"] for ev in card["evaluations"]]
        args.command = [ev["command"] for ev in card["evaluations"]]
    if not args.config:  # a recipe's stages name it once each; otherwise one config per stage
        stages = card["stages"]
        args.config = [stages[0]["config"]] if "name" in stages[0] else [stage["config"] for stage in stages]
    args.exploit = args.exploit or [e["run"] for e in card["exploitability"]]
    for key, name in (("tie_rate", "tie_rate"), ("timing", "ms_per_decision"), ("round_gap", "one_round_gap")):
        figure = card.get("figures", {}).get(name)
        if getattr(args, key) is None and figure:
            setattr(args, key, figure["file"])
    args.note = card["note"] if args.note is None else args.note


# --- the figures at the top of the card ---------------------------------------------------------------------------

# The sources of an exploitability benchmark in the card's words (training/exploitability.py's SOURCE_NAMES; not
# imported, as that module loads the learner and the card needs only its JSON).
SOURCES = {"copy": "(a) from a copy", "common": "(b) from the common start", "known": "(c) best known response"}


def _is_bot(spec: str, path: Path) -> bool:
    """Whether an agent spec (``checkpoints/two_players.pt``, ``...pt:sample``) names the card's checkpoint."""
    return Path(spec.split(":")[0]).name == path.name


def _rate(row: dict[str, Any]) -> dict[str, Any]:
    return {"win_rate": row["win_rate"], "win_rate_ci95": row["win_rate_ci95"], "games": row["games"]}


def figures(path: Path, args: argparse.Namespace, evaluations: list[dict], reports: list[dict],
            exploits: list[dict]) -> dict[str, Any]:  # fmt: skip
    """The card's figures (the module's documentation): each a dict with where it comes from, or None."""
    return {
        "exploitability": _exploitability(exploits),
        "mirror": _mirror(evaluations, reports),
        "held_out": _held_out(evaluations),
        "tie_rate": _measured(args.tie_rate, path, _tie_rate),
        "ms_per_decision": _measured(args.timing, path, _timing),
        "one_round_gap": _measured(args.round_gap, path, _round_gap),
    }


def _exploitability(exploits: list[dict]) -> dict[str, Any] | None:
    """The three-source benchmark with the most steps (the first of them): its figure, each source's, its budget."""
    runs = [e for e in exploits if "sources" in e]
    if not runs:
        return None
    e = max(runs, key=lambda run: run["protocol"]["steps"])
    best, p = e["exploitability"], e["protocol"]
    sources: dict[str, Any] = {}
    for name, source in e["sources"].items():
        if "same_as" in source:
            sources[name] = {"same_as": source["same_as"]}
        elif "exploitability" in source:
            x = source["exploitability"]
            sources[name] = {**_rate(x), **({"agent": x["label"]} if "label" in x else {"seed": x["seed"]})}
        else:
            sources[name] = None
    given = best["label"] if best["source"] == "known" else f"seed {best['seed']}"
    return {**_rate(best), "source": best["source"], "given_by": f"{SOURCES[best['source']]}, {given}",
            "sources": sources, "chance": e["chance"],
            "budget": {"steps": p["steps"], "seeds": len(p["seeds"]), "games": p["games"],
                       "known_games": p["known_games"]},
            "calibration": [{"agent": c["agent"].removesuffix(" (calibration)"), **_rate(c["exploitability"])}
                            for c in e.get("calibration", [])],
            "run": e["run"], "command": e["command"]}  # fmt: skip


def _mirror(evaluations: list[dict], reports: list[dict]) -> dict[str, Any] | None:
    """The tables of the card's gauntlets that hold copies of the bot: every one, the worst, and the table of copies
    alone with how many of its games reached ``max_rounds``."""
    tables = []
    for ev, results in zip(evaluations, reports):
        g = ev.get("gauntlet")
        if not g:
            continue
        for table in g["tables"]:
            copies = sum(re.sub(r"#\d+$", "", name) == g["agent"] for name in table["opponents"])
            if copies:
                tables.append({"opponents": table["opponents"], "copies": copies, **_rate(table),
                               "chance": g["chance"], "results": ev["results"], "command": ev["command"]})  # fmt: skip
                if copies == len(table["opponents"]):
                    lineup = next(lu for lu in results["lineups"] if len(set(lu["agents"])) == len(lu["agents"])
                                  and all(re.sub(r"#\d+$", "", a) == g["agent"] for a in lu["agents"]))  # fmt: skip
                    tables[-1]["truncated"] = lineup["truncated"]
    if not tables:
        return None
    return {"worst": min(tables, key=lambda t: t["win_rate"]), "tables": tables}


def _held_out(evaluations: list[dict]) -> dict[str, Any] | None:
    """The worst table of the held-out gauntlet with the most games a table (the first of them)."""
    held = [ev for ev in evaluations if "held_out" in ev]
    if not held:
        return None
    ev = max(held, key=lambda e: e["held_out"]["worst"]["games"])
    worst = ev["held_out"]["worst"]
    return {"opponents": worst["opponents"], **_rate(worst), "chance": ev["held_out"]["chance"],
            "tables": len(ev["held_out"]["tables"]), "results": ev["results"], "command": ev["command"]}  # fmt: skip


def _measured(file: str | None, path: Path, read: Any) -> dict[str, Any] | None:
    if file is None:
        return None
    data = json.loads(Path(file).read_text())
    return {**read(data, path), "file": file, "command": data["command"]}


def _tie_rate(data: dict, path: Path) -> dict[str, Any]:
    """The bot as it plays (its spec as given) and sampled (``:sample``)."""
    out = {"states": data["states"], "games": data["games"], "lineup": data["lineup"]}
    for report in data["reports"]:
        if _is_bot(report["agent"], path):
            key = "sampled" if report["agent"].endswith(":sample") else "as_played"
            out[key] = {k: report[k] for k in ("tie_rate", "tie_rate_ci95", "tie_probability", "entropy")}
    if "as_played" not in out and "sampled" not in out:
        raise SystemExit(f"--tie-rate: the report does not measure {path.name}")
    return out


def _timing(data: dict, path: Path) -> dict[str, Any]:
    row = next((r for r in data["agents"] if _is_bot(r["agent"], path)), None)
    if row is None:
        raise SystemExit(f"--timing: the report does not measure {path.name}")
    return {kind: row[kind] for kind in ("bid", "other")} | {"games": row["games"], "opponent": row["opponent"]}


def _round_gap(data: dict, path: Path) -> dict[str, Any]:
    row = next((r for r in data["reports"] if _is_bot(r["agent"], path)), None)
    if row is None:
        raise SystemExit(f"--round-gap: the report does not measure {path.name}")
    keys = ("gap", "gap_ci95", "gap_median", "own_worth", "best_worth", "best_from", "value", "states", "pool",
            "draws", "own")  # fmt: skip
    return {k: row[k] for k in keys}


def _pct(row: dict[str, Any]) -> str:
    lo, hi = row["win_rate_ci95"]
    return f"{100 * row['win_rate']:.1f}% [{100 * lo:.1f}, {100 * hi:.1f}]"


def _opponents(names: list[str]) -> str:
    """``copy``+``value``: a table's opponents, a copy of the bot (``checkpoints/NAME#2``) called a copy."""
    return "+".join("a copy" if re.fullmatch(r"checkpoints/\w+#\d+", n) else f"`{n}`" for n in names)


def figures_table(f: dict[str, Any], players: int) -> list[str]:
    """The card's opening table of figures, then the commands behind them."""
    rows, commands = [], []
    e = f["exploitability"]
    if e:
        b = e["budget"]
        per = {k: "= (a)" if s and "same_as" in s else (_pct(s) if s else "none") for k, s in e["sources"].items()}
        if e["sources"]["known"]:
            per["known"] += f" (`{e['sources']['known']['agent']}`)"
        rows.append(("exploitability (a lower bound)",
                     f"**{_pct(e)}**, given by {e['given_by']}; (a) {per['copy']}, (b) {per['common']}, "
                     f"(c) {per['known']}",
                     f"{b['seeds']} seed(s) x {b['steps']:,} steps from each start, {b['games']} final games; "
                     f"{b['known_games']} games a known agent; calibration "
                     + (", ".join(f"{c['agent']} {_pct(c)}" for c in e["calibration"]) or "not run")
                     + f"; `{e['run']}`"))  # fmt: skip
        commands.append(e["command"])
    else:
        rows.append(("exploitability (a lower bound)", "not measured by the three sources", ""))
    m = f["mirror"]
    if m:
        w = m["worst"]
        alone = [t for t in m["tables"] if t["copies"] == len(t["opponents"])]
        copies = (f"; copies alone {_pct(alone[0])}, {alone[0]['truncated']} of {alone[0]['games']} games at "
                  "max_rounds") if alone else ""  # fmt: skip
        rows.append(("tables with copies of it", f"worst {_opponents(w['opponents'])} {_pct(w)} ({w['games']} games,"
                     f" chance {100 * w['chance']:.0f}%){copies}",
                     ", ".join(sorted({f"`{t['results']}`" for t in m["tables"]}))))  # fmt: skip
        commands += sorted({t["command"] for t in m["tables"]})
    else:
        rows.append(("tables with copies of it", "not measured", ""))
    h = f["held_out"]
    rows.append(("worst held-out table", f"{_opponents(h['opponents'])} {_pct(h)} ({h['games']} games, chance "
                 f"{100 * h['chance']:.0f}%)", f"{h['tables']} tables; `{h['results']}`")
                if h else ("worst held-out table", "not measured", ""))  # fmt: skip
    t = f["tie_rate"]
    if t:
        cells = []
        for key, words in (("as_played", "as it plays"), ("sampled", "sampled")):
            if key in t:
                lo, hi = t[key]["tie_rate_ci95"]
                cells.append(f"{words} {100 * t[key]['tie_rate']:.1f}% [{100 * lo:.1f}, {100 * hi:.1f}]")
        rows.append(
            (
                "two draws at one state the same bid",
                "; ".join(cells),
                f"{t['states']:,} bid decisions of {t['games']} games of {', '.join(t['lineup'])}; `{t['file']}`",
            )
        )
        commands.append(t["command"])
    else:
        rows.append(("two draws at one state the same bid", "not measured", ""))
    ms = f["ms_per_decision"]
    if ms:
        rows.append(("ms per decision, one core", f"bid {ms['bid']['cpu_ms_mean']:.2f}, other "
                     f"{ms['other']['cpu_ms_mean']:.2f} (CPU time)",
                     f"{ms['bid']['decisions'] + ms['other']['decisions']:,} decisions in {ms['games']} games "
                     f"against {ms['opponent']}; `{ms['file']}`"))  # fmt: skip
        commands.append(ms["command"])
    else:
        rows.append(("ms per decision, one core", "not measured", ""))
    g = f["one_round_gap"]
    if g:
        lo, hi = g["gap_ci95"]
        rows.append(("one-round gap", f"{g['gap']:.3f} [{lo:.3f}, {hi:.3f}] (median {g['gap_median']:.3f})",
                     f"{g['states']} states, a pool of {g['pool']} bids, {g['draws']} draws of the others; scored "
                     f"by {g['value']}; `{g['file']}`"))  # fmt: skip
        commands.append(g["command"])
    else:
        rows.append(("one-round gap", "not measured", ""))
    lines = ["| figure | measured | how |", "|---|---|---|"] + [f"| {a} | {b} | {c} |" for a, b, c in rows]
    return lines + ["", "Commands:", "", *[f"- `{c}`" for c in commands], ""]


def _stage_sources(configs: list[str], stages: int) -> list[dict[str, str]]:
    """Where each stage of a checkpoint's history comes from: ``{"config"}``, plus its ``name`` in a recipe."""
    if len(configs) == 1 and (recipe := load_config(configs[0])).stages:
        names = [name for name, _, _ in stage_configs(recipe)]
        if len(names) < stages:
            raise SystemExit(f"the checkpoint has {stages} training stage(s), the recipe {configs[0]} {len(names)}")
        return [{"config": configs[0], "name": name} for name in names[:stages]]  # the recipe's first stages
    if len(configs) != stages:
        raise SystemExit(f"the checkpoint has {stages} training stage(s); give its recipe, or one --config for each")
    return [{"config": config} for config in configs]


if __name__ == "__main__":
    main()
