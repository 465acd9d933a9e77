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
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

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
    evaluations = []
    for i, folder in enumerate(args.results):
        results = json.loads((Path(folder) / "results.json").read_text())
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
        "note": args.note or "",
    }
    path.with_suffix(".json").write_text(json.dumps(card, indent=1) + "\n")

    lines = [f"# {path.stem}", ""]
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
    args.note = card["note"] if args.note is None else args.note


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
