"""Held-out opponents (docs/heldout.md): the variants of the heuristics load by name and decide with their style's
code and their own parameters (their decisions recorded in tests/golden/bots/); the held-out gauntlet plays their
tables after the training opponents' and reports them apart; and no training config may name one, nor
``revolution train`` take one."""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path

import pytest
import yaml

from revolution_env.agents.decisions import STYLES, settings
from revolution_env.agents.heldout import (
    FOLDER,
    PREVIOUS,
    default_held_out,
    expand_held_out,
    held_out_specs,
    is_held_out,
)
from revolution_env.agents.heuristics import HEURISTICS
from revolution_env.agents.loading import known_specs, load_agent
from revolution_env.agents.variants import VARIANTS, changed_parameters
from revolution_env.evaluation import evaluate_gauntlet
from revolution_env.evaluation.report import markdown, write_all
from revolution_env.frontends.evaluate import main

ROOT = Path(__file__).resolve().parent.parent
TRAINING_CONFIGS = sorted((ROOT / "configs").rglob("*.yaml")) + sorted((ROOT / "experiments").rglob("*.yaml"))


# --- the variants ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(VARIANTS))
def test_a_variant_is_its_style_with_other_parameters(name):
    """A variant loads by name, plays its style's code (``style``) and its own parameters reach its decisions:
    each one it changes is in the settings or the judgement the decisions read (tests/test_compiled_bots.py
    replays its recorded decisions)."""
    bot = VARIANTS[name]
    assert name in known_specs() and load_agent(name, players=3).name == name
    assert bot.style in HEURISTICS and bot.style in STYLES and issubclass(bot, HEURISTICS[bot.style])
    assert not any(callable(v) for v in vars(bot).values())  # parameters only
    changes = changed_parameters(bot)
    assert changes
    agent, style = load_agent(name, players=3), load_agent(bot.style, players=3)
    for key, (theirs, ours) in changes.items():
        if key.startswith("judgement."):
            field = key.split(".", 1)[1]
            assert getattr(agent.judgement.as_floats(), field) == ours != getattr(style.judgement, field), key
        else:
            assert getattr(settings(agent), key) == ours != getattr(settings(style), key) == theirs, key


def test_docs_table_lists_every_variant_with_what_it_changes():
    text = (ROOT / "docs/heldout.md").read_text(encoding="utf-8")
    table = text[text.index("| variant | style |") :].split("\n\n")[0].splitlines()[2:]
    rows = {}
    for line in table:
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        rows[cells[0].strip("`")] = cells
    assert set(rows) == set(VARIANTS)
    for name, cells in rows.items():
        changes = "; ".join(f"`{k}` {a} → {b}" for k, (a, b) in changed_parameters(VARIANTS[name]).items())
        assert (cells[1], cells[2]) == (f"`{VARIANTS[name].style}`", changes), name


# --- what is held out --------------------------------------------------------------------------------------------


def test_held_out_names_the_variants_and_the_held_out_folder_only():
    assert all(is_held_out(name) for name in VARIANTS)
    assert not any(is_held_out(spec) for spec in ["random", *HEURISTICS, "checkpoints/three_players.pt"])
    assert is_held_out("checkpoints/heldout/previous_three_players.pt:sample")
    assert is_held_out(str(FOLDER / "anything.pt"))  # by its absolute path
    assert is_held_out("../elsewhere/checkpoints/heldout/x.pt")  # written from another folder
    assert is_held_out("mix:value@3,bargain-bold@1") and not is_held_out("mix:value@3,bargain@1")
    assert is_held_out("meta:value,checkpoints/heldout/previous_two_players.pt@2") and not is_held_out("meta:value")
    config = {"heuristics": ["value"], "psro": {"population": [{"spec": "area"}, {"spec": "area-wide"}]}}
    assert held_out_specs(config) == ["area-wide"]  # found however deep a config holds it
    assert held_out_specs({"heuristics": ["value", "bargain"], "out": "runs/x", "seed": 3}) == []


def test_a_population_file_with_a_held_out_member_is_held_out(tmp_path):
    """``revolution psro``'s population.json: its members are looked at (a file is not opened from within one)."""
    population = tmp_path / "population.json"
    member = {"spec": "value-habit", "weight": 0.5}
    population.write_text(json.dumps({"format": "revolution-population", "population": [member]}))
    assert is_held_out(str(population)) and held_out_specs({"heuristics": [str(population)]}) == [str(population)]
    member["spec"] = str(population)  # names itself: no endless reading
    population.write_text(json.dumps({"population": [member, {"spec": "value"}]}))
    assert not is_held_out(str(population))


@pytest.mark.parametrize("path", TRAINING_CONFIGS, ids=lambda p: str(p.relative_to(ROOT)))
def test_no_training_config_names_a_held_out_opponent(path):
    """heuristics, eval_opponents, eval_fill, pretrain_teacher, init_from, and whatever a config may hold later
    (magnet, stages, a psro population): every string of the file is looked at."""
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    assert held_out_specs(data) == [], f"{path.relative_to(ROOT)} names held-out opponents"


def first_field(changes: dict) -> str:
    """The config field a change names, as an error names it (``section.field``, or a key at the top)."""
    key, value = next(iter(changes.items()))
    return f"{key}.{next(iter(value))}" if isinstance(value, dict) else key


@pytest.mark.parametrize(
    "changes",
    [
        {"league": {"heuristics": ["value", "value-mirror"]}},
        {"evaluation": {"opponents": ["area-wide"]}},
        {"evaluation": {"fill": "mix:random@1,bargain-cautious@1"}},
        {"imitation": {"teacher": "value-habit"}},
        {"init_from": "checkpoints/heldout/previous_three_players.pt"},
        {"stages": [{"name": "a", "total_steps": 64, "league": {"heuristics": ["area-wide"]}}]},
    ],
    ids=lambda c: first_field(c),
)
def test_training_refuses_a_held_out_opponent(changes):
    from revolution_training.config import from_dict

    with pytest.raises(ValueError) as info:
        from_dict({"game": {"players": 3}, **changes}, "x.yaml")
    field = first_field(changes)
    assert str(info.value).startswith(f"x.yaml: {field}: ")
    assert "held-out opponents are for evaluation only" in str(info.value)


def test_revolution_train_refuses_it_in_one_line(tmp_path):
    import subprocess
    import sys

    config = tmp_path / "c.yaml"
    config.write_text("game: {players: 3}\nleague: {heuristics: [value, bargain-bold]}\n")
    proc = subprocess.run(
        [sys.executable, "-m", "revolution_training", "train", "--config", str(config)],
        capture_output=True, text=True, timeout=120, cwd=ROOT,
    )  # fmt: skip
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr == (
        f"error: {config}: league.heuristics: 'bargain-bold' is held out: held-out opponents are for evaluation only "
        "(docs/heldout.md)\n"
    )


# --- the held-out checkpoints ------------------------------------------------------------------------------------


@pytest.mark.parametrize("players", sorted(PREVIOUS))
def test_a_previous_bot_is_held_out_with_its_provenance(players):
    path = FOLDER / PREVIOUS[players]
    readme = (FOLDER / "README.md").read_text(encoding="utf-8")
    row = next(line for line in readme.splitlines() if line.startswith(f"| `{path.name}` |"))
    assert hashlib.sha256(path.read_bytes()).hexdigest() in row  # the README describes this very file
    assert json.loads(path.with_suffix(".json").read_text())["env_options"]["players"] == players  # its card
    load_agent(str(path), players=players)  # loads for its player count
    *variants, previous = default_held_out(players)
    assert variants == list(VARIANTS) and Path(previous).resolve() == path.resolve()


def test_every_checkpoint_of_the_folder_has_a_row_in_its_readme():
    readme = (FOLDER / "README.md").read_text(encoding="utf-8")
    for path in FOLDER.glob("*.pt"):
        assert f"| `{path.name}` |" in readme, path.name


def test_default_is_spelled_out_once():
    assert expand_held_out(["default", "value-mirror", "random"], 3) == [*default_held_out(3), "random"]


def test_default_leaves_out_the_agent_itself(tmp_path):
    """Until a new bot is shipped, the shipped one is its own previous bot: a copy of the same file is no opponent
    it never met (and copies of one deterministic policy tie each other's bids)."""
    previous = FOLDER / PREVIOUS[3]
    copy = tmp_path / "shipped.pt"
    copy.write_bytes(previous.read_bytes())
    for agent in (str(previous), str(copy), f"{copy}:sample"):
        assert default_held_out(3, agent) == list(VARIANTS)
        assert expand_held_out(["default"], 3, agent) == list(VARIANTS)
    for agent in (str(FOLDER / PREVIOUS[2]), "value", "mix:value,bargain"):
        assert len(default_held_out(3, agent)) == len(VARIANTS) + 1


# --- the held-out gauntlet ---------------------------------------------------------------------------------------

FAST = {"max_rounds": 3}  # short games: the reports' shape, not the bots' strength


def test_held_out_tables_are_played_after_the_others_and_reported_apart(tmp_path):
    args = ("random", ["random", "area"], 3)
    plain = evaluate_gauntlet(*args, games=6, seed=2, env_options=FAST, workers=1, progress=False)
    ev = evaluate_gauntlet(
        *args, games=6, seed=2, env_options=FAST, workers=1, progress=False, held_out=["value-mirror", "area-wide"]
    )
    # the training opponents' block is the gauntlet without held-out opponents, game for game
    assert ev.gauntlet == plain.gauntlet and ev.to_dict()["agents"] == plain.to_dict()["agents"]
    assert [r.to_dict() for r in ev.results] == [r.to_dict() for r in plain.results]
    held = ev.held_out
    tables = [t["opponents"] for t in held.gauntlet["tables"]]
    assert tables == [["value-mirror", "value-mirror"], ["value-mirror", "area-wide"], ["area-wide", "area-wide"]]
    assert len(held.results) == 18 and all(t["games"] == 6 for t in held.gauntlet["tables"])
    for t, start in zip(held.gauntlet["tables"], (0, 6, 12)):
        part = held.results[start : start + 6]
        assert t["win_rate"] == sum(r.win_share(r.agents.index("random")) for r in part) / 6
    assert held.gauntlet["worst"] == min(held.gauntlet["tables"], key=lambda t: (t["win_rate"], t["opponents"]))
    assert set(held.stats) == {"random", "value-mirror", "area-wide", "value-mirror#2", "area-wide#2"}
    assert not set(held.stats) & {"area", "random#2"}  # no training opponent among them
    written = {p.name for p in write_all(ev, tmp_path, "revolution eval ...")}
    assert {"gauntlet.png", "report.md", "results.json", "games.jsonl"} <= written
    data = json.loads((tmp_path / "results.json").read_text())
    assert data["gauntlet"]["worst"] == plain.gauntlet["worst"]
    assert data["held_out"]["worst"] == held.gauntlet["worst"] and data["held_out"]["games_total"] == 18
    assert data["held_out"]["opponents"] == {"value-mirror": "value-mirror", "area-wide": "area-wide"}
    assert data["config"]["agents"] == {"random": "random", "random#2": "random", "area": "area"}
    assert len((tmp_path / "games.jsonl").read_text().splitlines()) == 18 + 18
    report = markdown(ev)
    assert report.index("### Training opponents") < report.index("### Held-out opponents")
    assert "Opponents no training run may use: value-mirror, area-wide; 18 games." in report


@pytest.mark.parametrize(
    "opponents, held_out, message",
    [
        (["random", "area"], ["area"], "'area' is both a training opponent and a held-out one"),
        (["random", "value-habit"], ["area-wide"], "'value-habit' is held out (docs/heldout.md)"),
        (["random"], ["area-wide", "area-wide"], "each held-out opponent once"),
    ],
)
def test_held_out_opponents_are_never_training_ones(opponents, held_out, message):
    with pytest.raises(ValueError, match=re.escape(message)):
        evaluate_gauntlet("random", opponents, 2, games=2, env_options=FAST, workers=1, held_out=held_out)


def test_held_out_on_the_command_line(tmp_path, capsys):
    common = ["--players", "2", "--games", "2", "--workers", "1", "--quiet"]  # the checkpoint plays 100 rounds
    assert main([*common, "--gauntlet", "random", "--opponents", "area", "--held-out", "default",
                 "--out", str(tmp_path)]) == 0  # fmt: skip
    data = json.loads((tmp_path / "results.json").read_text())
    held = [t["opponents"][0] for t in data["held_out"]["tables"]]
    assert held == [*VARIANTS, "heldout/previous_two_players"]
    report = (tmp_path / "report.md").read_text()
    assert "--held-out " + " ".join(default_held_out(2)) in report  # the command spells the default out
    assert main([*common, "--agents", "random", "random", "--held-out", "default"]) == 2
    assert capsys.readouterr().err == (
        "error: --held-out: held-out opponents are played in a gauntlet (give --gauntlet)\n"
    )
