"""Recipes (revolution_training.recipe): a bot's stages in one config, each starting from the one before, resumable,
and a clear line for a malformed stage."""

from __future__ import annotations

import json
import signal
from pathlib import Path

import pytest
import yaml
from revolution_training.checkpoint import history, read_checkpoint
from revolution_training.config import TrainConfig, load_config, merge, stage_configs
from revolution_training.train import read_state, train

from tests.test_training import TINY, flat_form, train_cli

ROOT = Path(__file__).resolve().parents[1]


def recipe(folder: Path, stages: list[dict], **base) -> Path:
    path = folder / "recipe.yaml"
    path.write_text(yaml.safe_dump({**merge(TINY, base), "stages": stages}), encoding="utf-8")
    return path


STAGES = [
    {"name": "league", "total_steps": 128},
    {"name": "margin", "start": "latest", "game": {"reward": "margin"}, "total_steps": 128},
    {"name": "more", "start": "run", "game": {"reward": "margin"}, "algorithm": "mmd", "total_steps": 192},
]
FLAT_STAGES = [  # the same stages as a recipe folder stored them before the sections
    {"name": "league", "total_steps": 128},
    {"name": "margin", "start": "latest", "reward": "margin", "total_steps": 128},
    {"name": "more", "start": "run", "reward": "margin", "algorithm": "mmd", "total_steps": 192},
]


def test_a_recipe_trains_each_stage_from_the_one_before_and_ships_the_last(tmp_path):
    config = load_config(recipe(tmp_path, STAGES))
    result = train(config, out=tmp_path / "run")
    out = tmp_path / "run"
    assert result.out == out and not result.interrupted
    folders = [out / "1-league", out / "2-margin", out / "3-more"]
    states = [read_state(f) for f in folders]
    assert [s["step"] >= s["config"]["total_steps"] for s in states] == [True] * 3
    assert states[0]["config"]["init_from"] is None
    assert states[1]["config"]["init_from"] == str(folders[0] / "latest.pt")
    assert states[2]["config"]["init_from"] == str(folders[1])
    assert states[1]["config"]["game"]["reward"] == "margin" and states[2]["config"]["algorithm"] == "mmd"
    assert (out / "best.pt").read_bytes() == (folders[2] / "best.pt").read_bytes()
    assert (out / "latest.pt").read_bytes() == (folders[2] / "latest.pt").read_bytes()
    stages = history(read_checkpoint(out / "latest.pt"))  # every stage behind the bot, oldest first
    assert len(stages) == 3
    with pytest.raises(ValueError, match="already holds a recipe's run; pass --resume"):
        train(config, out=out)
    # the same folder as a recipe run before the sections wrote it: its recipe.yaml and state.json files flat
    base = flat_form(config.replace(stages=None))
    (out / "recipe.yaml").write_text(yaml.safe_dump({**base, "stages": FLAT_STAGES}), encoding="utf-8")
    for folder, state in zip(folders, states):
        state["config"] = flat_form(TrainConfig(**state["config"]))
        (folder / "state.json").write_text(json.dumps(state), encoding="utf-8")
    with pytest.raises(ValueError, match=r"action_mode is now policy.action_mode .and \d+ more keys of the flat form"):
        load_config(out / "recipe.yaml")
    assert load_config(out / "recipe.yaml", stored=True) == config  # as a recipe folder's own record: read
    again = train(config, out=out, resume=True)  # every stage finished: nothing trained again
    assert again.step == states[2]["step"] and read_state(folders[2])["step"] == states[2]["step"]


def test_a_recipe_interrupted_in_a_stage_resumes_there(tmp_path):
    path = recipe(tmp_path, [{"name": "a", "total_steps": 128}, {"name": "b", "total_steps": 4_000_000}],
                  save_every=128)  # fmt: skip
    out = tmp_path / "run"
    proc = train_cli("--config", str(path), "--out", str(out))
    lines = []
    for line in proc.stdout:
        lines.append(line)
        if "stage 2/2" in line:
            break
    while read_state(out / "2-b") is None:  # its first save
        assert proc.poll() is None, "".join(lines) + proc.stdout.read()
    proc.send_signal(signal.SIGINT)
    rest = proc.stdout.read()
    assert proc.wait(timeout=120) == 130, "".join(lines) + rest
    assert f"saved in {out} (continue with --resume)" in rest
    step = read_state(out / "2-b")["step"]
    config = load_config(out / "recipe.yaml")
    shorter = [{"name": "a", "total_steps": 128}, {"name": "b", "total_steps": step + 128}]
    (out / "recipe.yaml").write_text(yaml.safe_dump({**config.to_dict(), "stages": shorter}), encoding="utf-8")
    result = train(load_config(path), out=out, resume=True)  # the recipe in the folder is what runs
    assert read_state(out / "1-a")["step"] == 128  # finished: not trained again
    assert result.step >= step + 128 and (out / "best.pt").exists()


@pytest.mark.parametrize(
    "stages, message",
    [
        ([{"total_steps": 64}], r"stages\[0\]: name: expected letters"),
        ([{"name": "a b", "total_steps": 64}], r"stages\[0\] \(a b\): name: expected letters"),
        (
            [{"name": "a", "total_steps": 64}, {"name": "a", "total_steps": 64}],
            r"stages\[1\] \(a\): name: given to two",
        ),
        ([{"name": "a"}], r"stages\[0\] \(a\): total_steps: every stage says how long"),
        ([{"name": "a", "total_steps": 64, "lr": 1}], r"stages\[0\] \(a\): lr: unknown option"),
        ([{"name": "a", "total_steps": 64, "ppo": {"lr": 1}}], r"stages\[0\] \(a\): ppo.lr: unknown option"),
        ([{"name": "a", "total_steps": 64, "reward": "margin"}], r"stages\[0\] \(a\): reward is now game.reward"),
        ([{"name": "a", "total_steps": 64, "init_from": "x"}], r"stages\[0\] \(a\): init_from: not a stage's to set"),
        ([{"name": "a", "total_steps": 64, "start": "best"}], r"stages\[0\] \(a\): start: the first stage"),
        (
            [{"name": "a", "total_steps": 64}, {"name": "b", "total_steps": 64, "start": "worst"}],
            r"stages\[1\] \(b\): start: expected one of run, best, latest",
        ),
        (
            [{"name": "a", "total_steps": 64, "game": {"players": 5}}],
            r"stages\[0\] \(a\): game.players: expected one of 2, 3, 4",
        ),
        ([], "stages: expected a non-empty list of stages"),
    ],
)
def test_a_malformed_stage_is_one_line_naming_it(tmp_path, stages, message):
    with pytest.raises(ValueError, match=message):
        load_config(recipe(tmp_path, stages))


def test_total_steps_on_the_command_line_is_refused_for_a_recipe(tmp_path):
    proc = train_cli("--config", str(recipe(tmp_path, STAGES)), "--total-steps", "99", "--out", str(tmp_path / "r"))
    out = proc.stdout.read()
    assert proc.wait(timeout=60) == 2
    assert out.strip().splitlines()[-1] == (
        "error: --total-steps: a recipe's stages give their own total_steps (edit the recipe)"
    )


def test_yaml_floats_in_a_stage_are_numbers(tmp_path):
    path = tmp_path / "r.yaml"
    path.write_text(
        "game: {players: 3}\nstages:\n  - name: a\n    total_steps: 64\n    ppo: {learning_rate: 3e-4}\n",
        encoding="utf-8",
    )
    ((_, _, stage),) = stage_configs(load_config(path))
    assert stage.ppo.learning_rate == 3e-4


def test_a_self_play_stage_leaves_the_league_of_the_base_behind(tmp_path):
    """A recipe whose earlier stages train against a league can end in pure self-play: the base's league settings
    are not the self-play stage's (they would be refused there), unless the stage sets them itself."""
    path = tmp_path / "r.yaml"
    path.write_text(
        "game: {players: 2}\nleague: {p_latest: 0.1, p_past: 0.1, p_heuristics: 0.8, opponent_sampling: pfsp}\n"
        "stages:\n  - {name: league, total_steps: 64}\n"
        "  - {name: selfplay, start: best, total_steps: 64, selfplay: {enabled: true}}\n",
        encoding="utf-8",
    )
    (_, _, league), (_, _, selfplay) = stage_configs(load_config(path))
    assert (league.league.p_heuristics, league.league.opponent_sampling) == (0.8, "pfsp")
    assert selfplay.selfplay.enabled
    assert (selfplay.league.p_heuristics, selfplay.league.opponent_sampling) == (0.3, "uniform")
    path.write_text(
        path.read_text().replace("{enabled: true}}", "{enabled: true}, league: {opponent_sampling: pfsp}}"),
        encoding="utf-8",
    )
    with pytest.raises(ValueError, match=r"stages\[1\] \(selfplay\): .*selfplay.enabled: every seat is the learner"):
        stage_configs(load_config(path))
