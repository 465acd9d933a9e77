"""The league's prioritized fictitious self-play (revolution_training.league): weights, sampling, results that persist
and reach the readers, the win-rate matrix, and a real short run with ``opponent_sampling: pfsp``."""

from __future__ import annotations

import json
from collections import Counter

import numpy as np
import pytest
from revolution_training.checkpoint import read_checkpoint
from revolution_training.league import (
    League,
    LeagueReader,
    choose_opponent,
    pfsp_weights,
    plot_matrix,
    read_league_file,
)
from test_training import train_cli, untrained_checkpoint, write_config


def test_pfsp_weights_favour_what_the_learner_loses_to():
    members = ["a", "b", "c", "d"]
    rates = {"a": 0.9, "b": 0.5, "c": 0.1}  # d never met
    hard = pfsp_weights(members, rates, "hard")
    assert hard == pytest.approx(np.array([0.01, 0.25, 0.81, 1.0]) / 2.07)
    assert pfsp_weights(members, rates, "variance") == pytest.approx(np.array([0.09, 0.25, 0.09, 0.0]) / 0.43)
    assert pfsp_weights(members, rates, "even") == pytest.approx([0.25] * 4)
    assert pfsp_weights(["a"], {"a": 1.0}, "hard") == pytest.approx([1.0])  # nothing to prefer: uniform


def test_pfsp_sampling_follows_the_weights_and_keeps_self_play():
    rng = np.random.default_rng(0)
    snaps, heuristics = ["s1", "s2"], ["value", "random"]
    rates = {"s1": 0.5, "s2": 0.5, "value": 0.0, "random": 1.0}
    n = 20_000
    counts = Counter(choose_opponent(rng, snaps, heuristics, 0.2, 0.0, rates, "hard")[1] for _ in range(n))
    # 0.2 self-play (the latest, s2); the rest over s1, s2, value, random with weights 0.25, 0.25, 1, 0
    expected = {"s2": 0.2 + 0.8 * 0.25 / 1.5, "s1": 0.8 * 0.25 / 1.5, "value": 0.8 / 1.5, "random": 0.0}
    for name, p in expected.items():
        assert counts[name] / n == pytest.approx(p, abs=0.015), name
    kinds = {choose_opponent(rng, snaps, heuristics, 0.2, 0.0, rates)[0] for _ in range(200)}
    assert kinds == {"snapshot", "heuristic"}


def test_results_persist_and_reach_the_readers(tmp_path):
    folder = tmp_path / "league"
    league = League(folder, max_snapshots=4, window=3)
    for won in (1, 1, 0, 0, 0):  # the window keeps the last three: 1/3... then 0
        league.record(["value", "value", "random"], won)  # a seat counted once per game
    league.record(["random"], 1)
    assert league.win_rates() == {"value": 0.0, "random": 1 / 3}
    league.add(read_checkpoint(untrained_checkpoint(tmp_path, players=3)), 100)
    data = read_league_file(folder)
    assert data["results"] == {"random": [0.0, 0.0, 1.0], "value": [0.0, 0.0, 0.0]}
    assert data["history"] == [{"step": 100, "win_rates": {"value": 0.0, "random": 1 / 3}}]
    again = League(folder, max_snapshots=4, window=3)  # a resumed run starts from what was written
    assert again.win_rates() == league.win_rates()
    reader = LeagueReader(folder, ["value", "random"], {"players": 3}, p_latest=0.0, sampling="pfsp")
    rng = np.random.default_rng(1)
    drawn = Counter(reader.sample(rng, 0)[0] for _ in range(400))
    assert drawn["random"] < drawn["value"]  # lost to value more: value comes more often
    assert drawn["snapshot_000000000100.pt"] > 0  # never met: tried
    league.rollback(50)
    assert read_league_file(folder)["history"] == []


def test_a_reader_of_a_runs_league_section_takes_each_of_its_opponent_fields(tmp_path):
    """``LeagueReader.from_section``, as ``revolution train`` builds its readers: every field of the ``league``
    section that decides the opponents reaches the reader (here none at its default)."""
    from revolution_training.config import LeagueConfig

    section = LeagueConfig(
        heuristics=["value", "area"],
        heuristics_weights=[0.25, 0.75],
        p_latest=0.1,
        p_past=0.6,
        opponents_deterministic=True,
        opponent_sampling="pfsp",
        pfsp_weighting="variance",
    )
    reader = LeagueReader.from_section(tmp_path, section, {"players": 3, "reward": "margin"})
    assert (reader.folder, reader.heuristics, reader.heuristics_weights) == (tmp_path, ["value", "area"], [0.25, 0.75])
    assert (reader.p_latest, reader.p_past, reader.deterministic) == (0.1, 0.6, True)
    assert (reader.sampling, reader.weighting, reader.env_options) == ("pfsp", "variance", {"players": 3})


def test_bad_sampling_options_are_refused(tmp_path):
    with pytest.raises(ValueError, match="opponent_sampling: expected one of uniform, pfsp"):
        LeagueReader(None, ["random"], {"players": 3}, sampling="fancy")
    with pytest.raises(ValueError, match="pfsp_weighting"):
        LeagueReader(None, ["random"], {"players": 3}, sampling="pfsp", weighting="steep")


def test_the_win_rate_matrix_is_drawn(tmp_path):
    history = [{"step": 0, "win_rates": {}}, {"step": 100, "win_rates": {"value": 0.2}},
               {"step": 200, "win_rates": {"value": 0.4, "snapshot_000000000100.pt": 0.6}}]  # fmt: skip
    assert plot_matrix(history[:1], tmp_path / "none.png") is None
    path = plot_matrix(history, tmp_path / "league.png")
    assert path.stat().st_size > 1000 and path.read_bytes()[:4] == b"\x89PNG"


def test_a_short_pfsp_run_records_results_and_draws_the_matrix(tmp_path):
    out = tmp_path / "run"
    config = write_config(
        tmp_path,
        league={
            "opponent_sampling": "pfsp",
            "heuristics": ["random", "value"],
            "p_latest": 0.2,
            "p_past": 0.4,
            "p_heuristics": 0.4,
        },
        evaluation={"every": 0},
    )
    proc = train_cli("--config", str(config), "--out", str(out))
    log, _ = proc.communicate(timeout=180)
    assert proc.returncode == 0, log
    data = read_league_file(out / "league")
    assert set(data["results"]) >= {"random", "value"}
    assert data["history"] and (out / "league.png").exists()
    assert json.loads((out / "state.json").read_text())["config"]["league"]["opponent_sampling"] == "pfsp"


def test_exploiters_join_the_league_reach_the_readers_and_roll_back(tmp_path):
    folder = tmp_path / "league"
    league = League(folder, max_snapshots=4)
    policy = untrained_checkpoint(tmp_path, players=3)
    league.add(read_checkpoint(policy), 100)
    for step in (100, 200, 300):
        league.add_exploiter(policy, step, max_exploiters=2)
    data = read_league_file(folder)
    names = ["exploiter_000000000200.pt", "exploiter_000000000300.pt"]
    assert [e["file"] for e in data["exploiters"]] == names  # the newest two
    assert not (folder / "exploiter_000000000100.pt").exists() and all((folder / n).exists() for n in names)
    league.record(["snapshot_000000000100.pt", "value"], 1.0)  # beats those; never met the exploiters
    league.publish()
    reader = LeagueReader(folder, ["value"], {"players": 3}, p_latest=0.0, sampling="pfsp")
    rng = np.random.default_rng(2)
    drawn = Counter(reader.sample(rng, 0)[0] for _ in range(300))
    assert set(drawn) == set(names)  # weight (1 - 0)^2 each, the members it beats 0
    assert reader.sample(np.random.default_rng(3), 0)[1].name != "value"  # a policy agent, loaded from the file
    league.rollback(250)
    assert [e["file"] for e in read_league_file(folder)["exploiters"]] == names[:1]
    assert not (folder / names[1]).exists()
    # uniform sampling does not draw exploiters: they are members under PFSP only
    rng = np.random.default_rng(4)
    assert {choose_opponent(rng, ["s"], ["value"], 0.3, 0.3, None, "hard", ["e"])[1] for _ in range(100)} == {
        "s",
        "value",
    }


def test_exploiters_need_pfsp(tmp_path):
    from revolution_training.config import TrainConfig

    with pytest.raises(ValueError, match="exploiters.every: exploiters join the league under league.opponent_sampl"):
        TrainConfig(exploiters={"every": 1000}, league={"opponent_sampling": "uniform"})
    with pytest.raises(ValueError, match="exploiters.steps: expected a positive integer"):
        TrainConfig(exploiters={"steps": 0})


def test_a_short_run_trains_an_exploiter_and_meets_it(tmp_path):
    out = tmp_path / "run"
    config = write_config(
        tmp_path,
        league={
            "opponent_sampling": "pfsp",
            "heuristics": ["random"],
            "p_latest": 0.2,
            "p_past": 0.4,
            "p_heuristics": 0.4,
        },
        evaluation={"every": 0},
        total_steps=512,
        exploiters={"every": 192, "steps": 64, "keep": 1},
    )
    proc = train_cli("--config", str(config), "--out", str(out))
    log, _ = proc.communicate(timeout=300)
    assert proc.returncode == 0, log
    assert log.count("exploiter trained (64 steps)") == 2, log  # at 192 and 384
    data = read_league_file(out / "league")
    assert [e["file"] for e in data["exploiters"]] == ["exploiter_000000000384.pt"]  # exploiters.keep: 1
    report = json.loads((out / "exploiters" / "000000000192" / "run" / "exploit.json").read_text())
    assert report["steps"] == 64 and report["final"]["games"] == 3
    assert read_checkpoint(out / "exploiters" / "000000000192" / "target.pt")["step"] == 192
    met = {name for name in data["results"] if name.startswith("exploiter_")}
    assert met  # the learner played against its exploiters
