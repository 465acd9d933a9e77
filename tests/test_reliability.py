"""Reliability (issue 13, docs/reliability.md): what a hostile or careless user, or the machine, can do to the
project, and what the project guarantees in return.

- a run folder runs no code and deletes nothing outside itself (the model zip's pickles: tests/test_run_folder_trust.py;
  here the file names that state.json and league.json give);
- SIGTERM to the whole process group of a real training run (what timeout, systemd, Slurm and Ray send), with
  either env backend: the run saves, exits 143, leaves no process behind, and resumes; the same signal to an
  evaluation with worker processes exits 143 without a traceback or an orphan;
- fuzzed scenario files, config files and command lines: a one-line error and exit status 2, never a traceback;
- the terminal game through a real pseudo-terminal, with hostile input, Ctrl-C and Ctrl-D;
- the smaller probes: seeds, float actions, a step after the end, --out, --export, a corrupt state.json.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import pty
import re
import select
import shlex
import signal
import subprocess
import sys
import time
from pathlib import Path
from unittest import mock

import numpy as np
import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from revolution_training.checkpoint import read_checkpoint
from revolution_training.config import FIELDS as CONFIG_FIELDS
from revolution_training.config import SECTIONS, TrainConfig, load_config, merge
from revolution_training.league import League
from revolution_training.train import RUN_FORMAT, read_state, train
from test_training import TINY, wait_for_save, write_config

import revolution_env
from revolution_env.engine import ScenarioError
from revolution_env.engine.scenario import load_json, run_scenario

ROOT = Path(__file__).resolve().parent.parent
ENV = {**os.environ, "PYTHONPATH": str(ROOT)}


def revolution(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "revolution_env", *args], capture_output=True, text=True,
                          stdin=subprocess.DEVNULL, cwd=cwd, env=ENV, timeout=120)  # fmt: skip


def one_line_error(proc: subprocess.CompletedProcess, words: str) -> None:
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and words in lines[0], proc.stderr


def running() -> dict[int, tuple[int, int]]:
    """Every running process (zombies excluded): pid -> (parent pid, process group)."""
    out = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        with contextlib.suppress(OSError, IndexError, ValueError):
            fields = stat.read_text().rsplit(")", 1)[1].split()
            if fields[0] != "Z":
                out[int(stat.parent.name)] = (int(fields[1]), int(fields[2]))
    return out


def group_alive(pgid: int) -> list[int]:
    return [pid for pid, (_, group) in running().items() if group == pgid]


def wait_gone(pids, timeout: float = 15.0) -> None:
    deadline = time.time() + timeout
    while (left := set(pids) & set(running())) and time.time() < deadline:
        time.sleep(0.1)
    assert not left, f"processes left behind: {left}"


def wait_group_gone(pgid: int) -> None:
    wait_gone(group_alive(pgid))
    assert not group_alive(pgid), f"processes left behind: {group_alive(pgid)}"


# --- a run folder deletes nothing outside itself -------------------------------------------------------------------


def test_a_state_json_naming_a_file_elsewhere_is_refused_and_nothing_is_deleted(tmp_path):
    victim = tmp_path / "victim.zip"
    victim.write_text("precious")
    run = tmp_path / "run"
    (run / "saves").mkdir(parents=True)
    state = {"format": RUN_FORMAT, "version": 1, "step": 64, "wall_time": 1.0, "model": "../victim.zip",
             "evaluations": [], "config": TrainConfig(**TINY).to_dict()}  # fmt: skip
    (run / "state.json").write_text(json.dumps(state))
    with pytest.raises(ValueError, match=r"state.json: model: expected saves/model_<12 digits>.zip"):
        train(TrainConfig(**merge(TINY, {"total_steps": 128})), out=run, resume=True)
    assert victim.read_text() == "precious"


def test_a_league_json_naming_a_file_elsewhere_is_refused_and_nothing_is_deleted(tmp_path):
    victim = tmp_path / "victim.pt"
    victim.write_text("precious")
    league = tmp_path / "run" / "league"
    league.mkdir(parents=True)
    data = {"format": "revolution-league", "version": 1, "snapshots": [{"file": "../../victim.pt", "step": 10**9}]}
    (league / "league.json").write_text(json.dumps(data))
    with pytest.raises(ValueError, match="league.json"):
        League(league, max_snapshots=2).rollback(0)
    assert victim.read_text() == "precious"


def test_resuming_a_run_whose_saved_config_is_bad_is_one_error(tmp_path):
    run = tmp_path / "run"
    run.mkdir()
    config = merge(TrainConfig(**TINY).to_dict(), {"evaluation": {"opponents": ["nosuch"]}})
    state = {"format": RUN_FORMAT, "version": 1, "step": 64, "wall_time": 1.0, "model": "saves/model_000000000064.zip",
             "evaluations": [], "config": config}  # fmt: skip
    (run / "state.json").write_text(json.dumps(state))
    one_line_error(revolution("train", "--config", str(write_config(tmp_path)), "--out", str(run), "--resume"),
                   "state.json: evaluation.opponents: expected an agent spec")  # fmt: skip


@pytest.mark.parametrize("text", ["{not json", "[]", '{"format": "revolution-train-run"}', "\xff\xfe"])
def test_a_corrupt_state_json_is_one_error_naming_the_file(tmp_path, text):
    (tmp_path / "state.json").write_bytes(text.encode("latin-1"))
    with pytest.raises(ValueError, match=re.escape(str(tmp_path / "state.json"))):
        read_state(tmp_path)


# --- SIGTERM to the process group ----------------------------------------------------------------------------------


@pytest.mark.parametrize("backend", ["subprocess", "vector"])
def test_sigterm_to_the_process_group_saves_exits_143_and_resumes(tmp_path, backend):
    out = tmp_path / "run"
    config = write_config(tmp_path, n_envs=2, total_steps=100_000, evaluation={"every": 0}, env_backend=backend)
    proc = subprocess.Popen([sys.executable, "-m", "revolution_env", "train", "--no-progress", "--config",
                             str(config), "--out", str(out)], cwd=ROOT, env=ENV, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, start_new_session=True)  # fmt: skip
    try:
        before = wait_for_save(out, proc, past=64, timeout=90)
        os.killpg(proc.pid, signal.SIGTERM)  # the trainer and every worker at once
        log, _ = proc.communicate(timeout=60)
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
    assert proc.returncode == 143, log
    assert "SIGTERM: stopping" in log and "saved in" in log and "Traceback" not in log, log
    wait_group_gone(proc.pid)
    state = read_state(out)
    assert state["step"] >= before["step"] and read_checkpoint(out / "latest.pt")["step"] == state["step"]
    again = subprocess.run([sys.executable, "-m", "revolution_env", "train", "--no-progress", "--config", str(config),
                            "--out", str(out), "--resume", "--total-steps", str(state["step"] + 64)], cwd=ROOT,
                           env=ENV, capture_output=True, text=True, timeout=120)  # fmt: skip
    assert again.returncode == 0, again.stdout + again.stderr
    assert read_state(out)["step"] == state["step"] + 64


def test_sigterm_while_an_exploiter_trains_drops_it_saves_the_run_and_exits_143(tmp_path):
    out = tmp_path / "run"
    config = write_config(
        tmp_path,
        n_envs=2,
        total_steps=100_000,
        evaluation={"every": 0},
        league={
            "opponent_sampling": "pfsp",
            "heuristics": ["random"],
            "p_latest": 0.2,
            "p_past": 0.4,
            "p_heuristics": 0.4,
        },
        exploiters={"every": 128, "steps": 20_000},
    )
    proc = subprocess.Popen([sys.executable, "-m", "revolution_env", "train", "--no-progress", "--config",
                             str(config), "--out", str(out)], cwd=ROOT, env=ENV, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, start_new_session=True)  # fmt: skip
    try:
        lines = []
        for line in proc.stdout:  # the learner pauses at step 128 for an exploiter that would take a long time
            lines.append(line)
            if "training an exploiter" in line:
                break
        exploiter = out / "exploiters" / "000000000128" / "run"
        deadline = time.time() + 90
        while read_state(exploiter) is None:  # it has trained and saved a little
            assert time.time() < deadline and proc.poll() is None, "".join(lines)
            time.sleep(0.2)
        os.killpg(proc.pid, signal.SIGTERM)
        log, _ = proc.communicate(timeout=60)
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
    log = "".join(lines) + log
    assert proc.returncode == 143 and "Traceback" not in log, log
    assert "exploiter interrupted and dropped" in log and "saved in" in log, log
    assert not (out / "exploiters" / "000000000128").exists()
    assert read_state(out)["step"] >= 128 and League(out / "league", max_snapshots=2).exploiters == []
    wait_group_gone(proc.pid)


def test_an_env_worker_killed_alone_ends_the_run_with_a_save_and_one_line(tmp_path):
    out = tmp_path / "run"
    config = write_config(tmp_path, n_envs=2, total_steps=100_000, evaluation={"every": 0}, env_backend="subprocess")
    proc = subprocess.Popen([sys.executable, "-m", "revolution_env", "train", "--no-progress", "--config",
                             str(config), "--out", str(out)], cwd=ROOT, env=ENV, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, start_new_session=True)  # fmt: skip
    try:
        before = wait_for_save(out, proc, past=64, timeout=90)
        # SB3 starts its workers from a forkserver: they are the trainer's grandchildren
        workers = [pid for pid, (parent, group) in running().items() if group == proc.pid and parent != proc.pid]
        os.kill(max(workers), signal.SIGKILL)
        log, _ = proc.communicate(timeout=60)
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
    assert proc.returncode == 1 and "Traceback" not in log, log
    assert "error: an environment worker process died" in log and "continue with --resume" in log, log
    assert read_state(out)["step"] >= before["step"]
    wait_group_gone(proc.pid)


def test_sigterm_to_an_evaluation_with_workers_exits_143_and_leaves_no_worker(tmp_path):
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "revolution_env",
            "eval",
            "--agents",
            "value",
            "value",
            "value",
            "--games",
            "3000",
            "--workers",
            "2",
            "--quiet",
        ],
        cwd=ROOT,
        env=ENV,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        deadline = time.time() + 60
        while len(workers := [pid for pid, (parent, _) in running().items() if parent == proc.pid]) < 3:
            assert time.time() < deadline, "the workers never started"  # 2 workers and the resource tracker
            time.sleep(0.1)
        time.sleep(1.0)  # the workers are playing
        os.killpg(proc.pid, signal.SIGTERM)
        _, err = proc.communicate(timeout=60)
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
    assert proc.returncode == 143 and "Traceback" not in err, err
    wait_group_gone(proc.pid)
    wait_gone(workers)  # the pool's workers, in groups of their own, were stopped by the parent


EVAL = ["eval", "--players", "3", "--pool", "random", "value", "bargain", "area", "--games", "12", "--seed", "7",
        "--workers", "1", "--quiet"]  # fmt: skip


def lines_in(path: Path) -> int:
    return path.read_bytes().count(b"\n") if path.exists() else 0


def stop_evaluation(out: Path, signum: int, after: int, *extra: str) -> tuple[int, str]:
    """Run ``EVAL`` into ``out`` and send ``signum`` to its process group once games.jsonl holds ``after`` games;
    its exit status and standard error."""
    proc = subprocess.Popen([sys.executable, "-m", "revolution_env", *EVAL, *extra, "--out", str(out)], cwd=ROOT,
                            env=ENV, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)  # fmt: skip
    try:
        deadline = time.time() + 180
        while lines_in(out / "games.jsonl") < after:
            assert proc.poll() is None, f"it ended before it could be stopped: {proc.communicate()}"
            assert time.time() < deadline, "no game was played"
            time.sleep(0.02)
        os.killpg(proc.pid, signum)
        _, err = proc.communicate(timeout=120)
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
    wait_group_gone(proc.pid)
    return proc.returncode, err


def test_an_evaluation_killed_then_stopped_resumes_to_the_results_of_one_never_stopped(tmp_path):
    """SIGKILL after the first games, then SIGTERM (with other workers) after more, then the same command to the end:
    results.json and games.jsonl are those of an evaluation never stopped."""
    from revolution_env.frontends.evaluate import main

    out, games = tmp_path / "eval", tmp_path / "eval" / "games.jsonl"
    code, err = stop_evaluation(out, signal.SIGKILL, 1)
    killed = lines_in(games)
    assert code == -signal.SIGKILL and 0 < killed < 48, err  # 4 lineups of 12 games: not all played
    assert not (out / "results.json").exists()
    code, err = stop_evaluation(out, signal.SIGTERM, killed + 1, "--workers", "2")
    stopped = lines_in(games)
    assert code == 143 and "Traceback" not in err, err
    assert f"interrupted after {stopped} of 48 games" in err, err
    assert "to continue, the same command: revolution eval --players 3 --pool random value bargain area" in err, err
    results = json.loads((out / "results.json").read_text())
    assert results["complete"] is False and results["progress"] == {"games_played": stopped, "games_total": 48}
    assert killed < stopped < 48
    proc = revolution(*EVAL[:-1], "--out", str(out))  # not --quiet: it says it continues
    assert proc.returncode == 0, proc.stderr
    assert f"{stopped} of 48 games already played" in proc.stderr
    assert main([*EVAL[1:], "--out", str(tmp_path / "whole")]) == 0
    assert json.loads((out / "results.json").read_text()) == json.loads(
        (tmp_path / "whole" / "results.json").read_text()
    )
    assert games.read_bytes() == (tmp_path / "whole" / "games.jsonl").read_bytes()


def test_the_main_jobs_round_robin_stopped_continues_with_the_command_it_prints(tmp_path, monkeypatch, capsys):
    """``revolution main``'s evaluation is ``revolution eval``'s: stopped, it keeps its games and prints the command
    that continues it (the training step is replaced here by a copy of the shipped bot as its best checkpoint)."""
    from test_evaluation import stop_after

    from revolution_env.evaluation import runner
    from revolution_env.frontends import cli
    from revolution_env.frontends.evaluate import main as eval_main

    real = cli.main

    def without_training(argv):
        if argv[0] != "train":
            return real(argv)
        out = Path(argv[argv.index("--out") + 1])
        out.mkdir(parents=True)
        (out / "best.pt").write_bytes((ROOT / "checkpoints" / "three_players.pt").read_bytes())
        return 0

    with monkeypatch.context() as patch:
        patch.setattr(cli, "main", without_training)
        patch.setattr(runner, "default_workers", lambda: 1)  # no pool to start: main gives no --workers
        stop_after(patch, 1)
        assert cli.cmd_main(cli.build_parser().parse_args(["main", "--out", str(tmp_path), "--games", "1"])) == 130
    err = capsys.readouterr().err
    words = shlex.split(err.split("to continue, the same command: ")[1].strip())
    assert words[:2] == ["revolution", "eval"] and "--pool" in words, err
    out = Path(words[words.index("--out") + 1])
    played = len((out / "games.jsonl").read_text().splitlines())
    assert 0 < played < 20  # six agents, every lineup of three, one game each
    assert eval_main([*words[2:], "--workers", "1", "--quiet"]) == 0
    results = json.loads((out / "results.json").read_text())
    assert results["complete"] is True and results["progress"] == {"games_played": 20, "games_total": 20}


def test_another_evaluation_into_a_folder_is_one_line_naming_the_difference(tmp_path, capsys):
    """The folder holds an evaluation (interrupted or done): a command that would play other games is refused with
    the difference, and nothing in the folder changes; the same command, or --force, goes on."""
    from revolution_env.frontends.evaluate import main

    out = tmp_path / "eval"
    lineup = ["--players", "2", "--agents", "random", "value", "--games", "2", "--seed", "1", "--workers", "1",
              "--quiet", "--out", str(out)]  # fmt: skip
    assert main(lineup) == 0
    before = {p.name: p.read_bytes() for p in out.iterdir()}
    capsys.readouterr()
    for extra, words in [
        (["--games", "3"], "--games 2, not 3"),
        (["--seed", "2"], "--seed 1, not 2"),
        (["--max-rounds", "50"], "--max-rounds 100, not 50"),
        (["--bid-refunds"], "--bid-refunds (not given), not true"),
        (["--agents", "random", "area"], "the agents random value, not random area"),
        (["--agents", "value", "random"], "the agents random value, not value random"),  # other seats
    ]:
        assert main([*lineup, *extra]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and f"holds an evaluation with {words}: give the same command" in err, err
    pool = ["--players", "2", "--pool", "random", "value", "--games", "2", "--seed", "1", "--quiet", "--out", str(out)]
    assert main(pool) == 2
    assert "holds an evaluation with a lineup (--agents), not a round robin (--pool)" in capsys.readouterr().err
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before
    assert main(lineup) == 0  # the same command: nothing to play, the same files
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before
    assert main([*pool, "--force"]) == 0
    assert json.loads((out / "evaluation.json").read_text())["mode"] == "pool"


def test_a_checkpoint_changed_since_is_another_evaluation_and_a_folder_in_use_is_refused(tmp_path):
    from revolution_env.evaluation.journal import open_journal
    from revolution_env.evaluation.runner import lineup_tournament

    bot = tmp_path / "bot.pt"
    bot.write_bytes((ROOT / "checkpoints" / "two_players.pt").read_bytes())
    tournament = lineup_tournament([str(bot), "random"], 2, seed=0, env_options={"players": 2})
    with open_journal(tmp_path / "eval", tournament, "revolution eval ..."), pytest.raises(ValueError, match="in use"):
        open_journal(tmp_path / "eval", tournament, "revolution eval ...")
    with open_journal(tmp_path / "eval", tournament, "revolution eval ...") as journal:  # unlocked, the same
        assert journal.done == {}
    bot.write_bytes(bot.read_bytes() + b" ")  # retrained at the same path, say
    with pytest.raises(ValueError, match=re.escape(f"with another {bot} (the file has changed since)")):
        open_journal(tmp_path / "eval", tournament, "revolution eval ...")


# --- fuzzing: scenario files, configs, command lines ---------------------------------------------------------------


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.one_of(st.binary(max_size=200), st.text(max_size=200).map(str.encode),
                 st.recursive(st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=6),
                              lambda c: st.lists(c, max_size=3) | st.dictionaries(
                                  st.sampled_from(["rules", "start", "rounds", "bids", "players", "seed", "expect"]),
                                  c, max_size=3), max_leaves=12).map(lambda d: json.dumps(d).encode())))  # fmt: skip
def test_a_fuzzed_scenario_file_is_one_scenario_error(tmp_path, blob):
    path = tmp_path / "fuzzed.json"
    path.write_bytes(blob)
    try:
        run_scenario(load_json(path))
    except ScenarioError as exc:
        assert "\n" not in str(exc)


FIELDS = [*CONFIG_FIELDS, *SECTIONS]  # a section's field as section.field, and each section as a whole


def nested(fields: dict) -> dict:
    """``{"game.players": 3}`` as a config file has it, ``{"game": {"players": 3}}`` (a section given whole stays)."""
    out: dict = {}
    for key, value in fields.items():
        section, dot, name = key.partition(".")
        if dot and isinstance(out.get(section, {}), dict):
            out.setdefault(section, {})[name] = value
        elif not dot:
            out[key] = value
    return out


HOSTILE = st.one_of(st.none(), st.booleans(), st.integers(-(2**70), 2**70), st.floats(allow_nan=True),
                    st.text(max_size=6), st.lists(st.integers(-3, 3) | st.text(max_size=3), max_size=3),
                    st.dictionaries(st.text(max_size=3), st.integers(), max_size=2))  # fmt: skip


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.one_of(st.dictionaries(st.sampled_from([*FIELDS, "nosuch", "game.nosuch", "players"]), HOSTILE, max_size=4)
                 .map(nested).map(yaml.safe_dump), st.text(max_size=120)))  # fmt: skip
def test_a_fuzzed_config_loads_or_is_one_value_error(tmp_path, text):
    path = tmp_path / "fuzzed.yaml"
    path.write_text(text, encoding="utf-8")
    try:
        load_config(path)
    except ValueError as exc:
        assert "\n" not in str(exc).strip(), str(exc)


BAD_VALUES = ["-1", "0", "1.5", "abc", "²", "", "nosuch", "nosuch.pt", "9" * 40, "DIR", "BAD", "\udcff"]
# every command line but random's and play's carries one item that fails, so that none of them starts a long job
COMMANDS = {
    "random": ([], ["--seed", "--players", "--max-rounds", "--board", "--export", "--bogus"]),
    "scenario": (["BAD"], ["--check"]),
    "play": ([], ["--seat", "--opponents", "--seed", "--players", "--board", "--max-rounds"]),
    "eval": (["--agents", "nosuch", "DIR", "BAD"], ["--games", "--seed", "--workers", "--out", "--players"]),
    "train": (["--config", "BAD"], ["--out", "--total-steps", "--resume", "--config"]),
    "exploit": (
        ["nosuch"],
        [
            "--steps",
            "--players",
            "--seed",
            "--n-envs",
            "--reward",
            "--seeds",
            "--games",
            "--out",
            "--common-start",
            "--known-games",
        ],
    ),  # fmt: skip
    "main": (["--steps", "0"], ["--games", "--seed", "--steps"]),
}


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.sampled_from(sorted(COMMANDS)).flatmap(lambda c: st.tuples(st.just(c), st.lists(
    st.tuples(st.sampled_from(COMMANDS[c][1]), st.sampled_from(BAD_VALUES)), max_size=3))))  # fmt: skip
def test_a_fuzzed_command_line_is_one_line_and_exit_2(tmp_path, case):
    from revolution_env.frontends.cli import main

    command, extra = case
    (tmp_path / "DIR").mkdir(exist_ok=True)
    (tmp_path / "BAD").write_bytes(b"\xff\x00 not a config, a scenario or a checkpoint")
    argv = [command, *COMMANDS[command][0], *[w for pair in extra for w in pair if w]]
    argv = [str(tmp_path / w) if w in ("DIR", "BAD") else w for w in argv]
    err = io.StringIO()
    cwd = os.getcwd()
    os.chdir(tmp_path)
    try:
        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()), \
                mock.patch("sys.stdin", io.StringIO("")):  # fmt: skip
            try:
                code = main(argv)
            except SystemExit as exc:
                code = exc.code
    finally:
        os.chdir(cwd)
        signal.signal(signal.SIGTERM, signal.SIG_DFL)  # main() turns SIGTERM into an exception
    lines = err.getvalue().strip().splitlines()
    # random and play may get only good values: then a game is printed (0), or played until the input ends (1)
    assert code == 2 or (command, code) in (("random", 0), ("play", 1)), (argv, code, err.getvalue())
    if code == 2:
        assert len(lines) == 1 and lines[0].startswith("error: "), (argv, err.getvalue())


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (["nosuchcommand"], "invalid choice: 'nosuchcommand'"),
        (["play", "--bogus"], "unrecognized arguments: --bogus"),
        (["train"], "the following arguments are required: --config"),
        (["random", "--seed", "1.5"], "--seed: expected a non-negative integer, got '1.5'"),
        (["random", "--seed", "-3"], "--seed: expected a non-negative integer, got -3"),
        (["play", "--seed", "x"], "--seed: expected a non-negative integer, got 'x'"),
        (["play", "--seat", "5"], "--seat: expected 0 to 2, got 5"),
        (["play", "--opponents", "nosuch"], "unknown agent spec 'nosuch'"),
        (["play", "--opponents", "tests"], "tests is a folder, not a checkpoint file"),
        (["eval", "--agents", "missing.pt", "random", "random"], "missing.pt"),
        (["exploit", "value", "--seed", "-1"], "--seed: expected a non-negative integer, got -1"),
    ],
)
def test_a_bad_command_line_is_one_line_and_exit_2(args, words):
    one_line_error(revolution(*args), words)


def test_files_and_folders_in_the_wrong_place(tmp_path):
    (tmp_path / "a_file").write_text("x")
    (tmp_path / "a_dir").mkdir()
    one_line_error(revolution("random", "--quiet", "--export", str(tmp_path / "a_dir")), "is a folder")
    config = write_config(tmp_path)
    one_line_error(revolution("train", "--config", str(config), "--out", str(tmp_path / "a_file")), "is a file")
    one_line_error(revolution("eval", "--agents", "random", "random", "random", "--games", "1", "--out",
                              str(tmp_path / "a_file")), "is a file")  # fmt: skip


def test_a_second_evaluation_into_one_folder_is_refused_unless_forced(tmp_path):
    from revolution_env.frontends.evaluate import main

    out = str(tmp_path / "eval")
    pool = ["--players", "2", "--pool", "random", "value", "--games", "1", "--workers", "1", "--quiet"]
    assert main([*pool, "--out", out]) == 0
    assert (tmp_path / "eval" / "head_to_head.png").exists()
    lineup = ["--players", "2", "--agents", "random", "value", "--games", "1", "--workers", "1", "--quiet"]
    results = (tmp_path / "eval" / "results.json").read_text()
    assert main([*lineup, "--out", out]) == 2  # refused: it holds the pool's results
    assert (tmp_path / "eval" / "results.json").read_text() == results
    assert main([*lineup, "--out", out, "--force"]) == 0
    assert not (tmp_path / "eval" / "head_to_head.png").exists()  # the pool's plot would be stale
    assert (tmp_path / "eval" / "results.json").read_text() != results


# --- the environments' API -----------------------------------------------------------------------------------------

MAKERS = {
    "env": lambda: revolution_env.env(),
    "raw_env": lambda: revolution_env.raw_env(),
    "parallel_env": lambda: revolution_env.parallel_env(),
    "gym_env": lambda: revolution_env.gym_env(),
    "vector_env": lambda: revolution_env.vector_env(2),
}


@pytest.mark.parametrize("maker", sorted(MAKERS))
@pytest.mark.parametrize("seed", [-1, 1.5, "7", True, np.float64(2.0)])
def test_a_seed_that_is_not_a_non_negative_integer_is_refused(maker, seed):
    env = MAKERS[maker]()
    with pytest.raises(ValueError, match=r"seed: expected a non-negative integer or None, got"):
        env.reset(seed=seed)
    env.reset(seed=np.int64(3))  # numpy integers are integers


def test_a_float_action_names_its_dtype():
    env = revolution_env.raw_env()
    env.reset(seed=0)
    agent = env.agent_selection
    with pytest.raises(revolution_env.IllegalActionError, match="dtype float64"):
        env.step(np.zeros(len(env.action_space(agent).nvec), dtype=np.float64))


def test_a_raw_aec_step_after_the_end_says_the_game_is_over():
    env = revolution_env.raw_env()
    env.reset(seed=0)
    while not all(env.terminations.values()) and not all(env.truncations.values()):
        agent = env.agent_selection
        env.step(env.action_space(agent).sample(env.observe(agent)["action_mask"]))
    zero = np.zeros(len(env.action_space(env.possible_agents[0]).nvec), dtype=np.int64)
    with pytest.raises(ValueError, match="the game is over"):
        env.step(zero)
    while env.agents:
        env.step(None)
    with pytest.raises(RuntimeError, match="the game is over"):
        env.step(zero)


# --- the terminal game through a pseudo-terminal -------------------------------------------------------------------

PROMPT = re.compile(r"(Your bid \(you hold ([^;]*);[^\n]*: |Your choice \[[^\]\n]*\]: |\[y/N\] )$")
HOSTILE_LINES = ["²", "٣", "-1", "9" * 30, "\x1b[A", "3 gold nowhere", "99999999999999999999 gold spy", "help"]


def play_in_pty(args: list[str], answer, timeout: float = 120.0) -> tuple[int, str]:
    """Run ``revolution play ARGS`` on a pseudo-terminal (its controlling terminal, so Ctrl-C is a real SIGINT);
    ``answer(screen_since_last_answer, prompt) -> bytes`` types. Returns the exit status and the whole screen."""
    pid, fd = pty.fork()
    if pid == 0:  # the child: exec at once
        try:
            os.chdir(ROOT)
            os.execve(sys.executable, [sys.executable, "-m", "revolution_env", "play", *args], ENV)
        finally:
            os._exit(127)
    screen, since, interrupt_at = "", 0, None
    deadline = time.time() + timeout
    try:
        while time.time() < deadline:
            ready, _, _ = select.select([fd], [], [], 1.0)
            if not ready:
                # A Ctrl-C typed as the prompt appears can come before input() starts its read, which then waits
                # for a line (CPython's readline checks signals only when a read is interrupted): a person would
                # press it again, and the second one interrupts the read.
                if interrupt_at is not None and time.time() - interrupt_at > 3.0:
                    os.write(fd, b"\x03")
                    interrupt_at = time.time()
                continue
            try:
                data = os.read(fd, 65536)
            except OSError:  # EIO: the child has exited
                break
            if not data:
                break
            screen += data.decode("utf-8", "replace").replace("\r\n", "\n")
            match = PROMPT.search(screen[since:])
            if match:
                typed = answer(screen[since:], match)
                since = len(screen)
                if typed:
                    os.write(fd, typed)
                    interrupt_at = time.time() if typed == b"\x03" else None
        else:
            raise AssertionError(f"the game did not end in {timeout} s:\n{screen[-2000:]}")
    finally:
        status = reap(pid, within=10.0)
        os.close(fd)
    return os.waitstatus_to_exitcode(status), screen


def reap(pid: int, within: float) -> int:
    """The wait status of child ``pid``, killed if it is still running after ``within`` seconds: a failed test must
    not wait for it forever."""
    deadline = time.time() + within
    while time.time() < deadline:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            return status
        time.sleep(0.05)
    os.kill(pid, signal.SIGKILL)
    return os.waitpid(pid, 0)[1]


class HostileTypist:
    """Bids everything (Force on the Priest, Blackmail on the Apothecary, Gold on the Spy and the Apothecary in turn),
    takes the last option of every choice, and types something hostile before each of its first answers."""

    def __init__(self) -> None:
        self.hostile = list(HOSTILE_LINES)
        self.choice_tricks = ["²", "٣", "0x1", "99999999999999999999"]
        self.listing = ""
        self.bids = 0

    def __call__(self, shown: str, prompt: re.Match) -> bytes:
        if prompt.group(0).startswith("[y/N]"):
            return b"y\n"
        if prompt.group(0).startswith("Your bid"):
            if self.hostile:
                return (self.hostile.pop(0) + "\n").encode()
            self.bids += 1
            held = re.findall(r"(\d+) (\w+)", prompt.group(2))
            target = {"force": "priest", "blackmail": "apothecary", "gold": ("spy", "apothecary")[self.bids % 2]}
            return (", ".join(f"{n} {t} {target[t]}" for n, t in held) + "\n").encode()
        options = re.findall(r"^  (\d+)\) ", shown, re.M)
        if options:
            self.listing = options
        if self.choice_tricks:
            return (self.choice_tricks.pop(0) + "\n").encode()
        return (max(self.listing, key=int) + "\n").encode()


def test_the_terminal_game_through_a_pty_survives_hostile_typing():
    typist = HostileTypist()
    code, screen = play_in_pty(["--seat", "1", "--seed", "3", "--opponents", "random"], typist)
    assert code == 0 and "Traceback" not in screen, screen[-3000:]
    assert not typist.hostile and not typist.choice_tricks, "the game never asked for a choice"
    assert screen.count("not a legal bid") >= 3 and screen.count("type a number from") >= 2
    assert re.search(r"(wins|won|Game over|truncated)", screen, re.I), screen[-2000:]


@pytest.mark.parametrize(("key", "status", "words"), [(b"\x03", 130, "interrupted: the game stops"),
                                                      (b"\x04", 1, "The input ended")])  # fmt: skip
def test_ctrl_c_and_ctrl_d_at_a_prompt_stop_the_game_cleanly(key, status, words):
    code, screen = play_in_pty(["--seed", "1"], lambda shown, prompt: key)
    assert code == status and words in screen and "Traceback" not in screen, screen[-2000:]


def test_a_signal_waits_for_the_end_of_a_deferred_block():
    from revolution_env.common.workers import stop_signals_deferred

    reached = False
    with pytest.raises(KeyboardInterrupt), stop_signals_deferred():
        os.kill(os.getpid(), signal.SIGINT)
        time.sleep(0.05)  # Python runs a signal's handler at the next instruction: it would raise here
        reached = True
    assert reached


COMPILING = """
import sys, time
from revolution_env.common.jit import jit

@jit
def work(n):
    total = 0.0
    for i in range(n):
        total += (i % 7) * 0.5
    return total

print("compiling", flush=True)
try:
    work(10)
    time.sleep(30)
except KeyboardInterrupt:
    print("interrupted; compiled:", len(work.signatures), flush=True)
    sys.exit(130)
"""


def test_ctrl_c_while_numba_compiles_lands_after_the_compilation(tmp_path):
    """Ctrl-C inside Numba's compiler left half-built machine code that a later call ran (a SIGSEGV on a fresh
    clone, where the first run compiles everything): it now waits for the compilation to end."""
    script = tmp_path / "compiling.py"
    script.write_text(COMPILING, encoding="utf-8")
    env = {**os.environ, "NUMBA_CACHE_DIR": str(tmp_path / "cache"), "PYTHONPATH": str(Path(__file__).parent.parent)}
    proc = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE, text=True, env=env)
    assert proc.stdout.readline().strip() == "compiling"
    time.sleep(0.2)  # a first compilation takes a second or more
    proc.send_signal(signal.SIGINT)
    out, _ = proc.communicate(timeout=120)
    assert proc.returncode == 130 and out.strip() == "interrupted; compiled: 1", out
