"""Bad input gets one clear line (issue 13): configs refused at load time (every agent spec, board, device,
ranges, duplicate keys), the command line, scenario files (not UTF-8, huge integers, fuzzed), the terminal game's
prompts (a non-ASCII digit)."""

from __future__ import annotations

import copy
import io
import json
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from revolution_training.config import load_config
from test_play import HEADERS, Person, play_game

from revolution_env.engine import ScenarioError, run_scenario

ROOT = Path(__file__).resolve().parent.parent
SCENARIOS = sorted((ROOT / "tests" / "scenarios").rglob("*.json"))


def revolution(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "revolution_env", *args], capture_output=True, text=True,
                          input=stdin, cwd=ROOT, timeout=120)  # fmt: skip


def one_line_error(proc: subprocess.CompletedProcess, words: str) -> None:
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and words in lines[0], proc.stderr


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("league: {heuristics: [value, nosuch]}", "league.heuristics: expected an agent spec"),
        ("evaluation: {opponents: [nosuch]}", "evaluation.opponents: expected an agent spec"),
        ("evaluation: {fill: nosuch}", "evaluation.fill: expected an agent spec"),
        ("imitation: {teacher: nosuch}", "imitation.teacher: expected an agent spec"),
        ("game: {board: nosuch}", "game.board: expected a board that loads"),
        ("eval_fill: random", "eval_fill is now evaluation.fill"),
        ("device: nonsense", "device: expected cpu, cuda, cuda:N, mps or auto"),
        ("total_steps: " + "9" * 400, "total_steps: expected a positive integer up to 1e+12"),
        ("seed: 1\nn_envs: 2\nseed: 2", "seed: given twice (lines 1 and 3)"),
    ],
)
def test_a_bad_config_is_refused_before_any_training(tmp_path, text, words):
    path = tmp_path / "bad.yaml"
    path.write_text(text + "\n")
    with pytest.raises(ValueError, match=words.replace("(", r"\(").replace(")", r"\)").replace("+", r"\+")):
        load_config(path)
    one_line_error(revolution("train", "--config", str(path), "--out", str(tmp_path / "run")), words)
    assert not (tmp_path / "run").exists()


@pytest.mark.parametrize("name", ["REVOLUTION_THREADS", "OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "NUMBA_NUM_THREADS"])
@pytest.mark.parametrize("value", ["two", "0", "-1", "1.5"])
def test_a_thread_setting_that_is_not_a_positive_integer_is_one_line(name, value):
    import os

    proc = subprocess.run([sys.executable, "-m", "revolution_env", "random", "--quiet"], capture_output=True,
                          text=True, cwd=ROOT, timeout=120, env={**os.environ, name: value})  # fmt: skip
    one_line_error(proc, f"{name}: expected a positive integer (a number of threads), got {value!r}")


def test_a_bad_thread_setting_is_named_by_the_vector_env_and_the_training_config(monkeypatch):
    from revolution_training.config import TrainConfig

    import revolution_env

    monkeypatch.setenv("REVOLUTION_THREADS", "all")
    with pytest.raises(ValueError, match="REVOLUTION_THREADS: expected a positive integer"):
        revolution_env.vector_env(2, opponents="random")
    monkeypatch.setenv("MKL_NUM_THREADS", "0")
    with pytest.raises(ValueError, match="MKL_NUM_THREADS: expected a positive integer"):
        TrainConfig().update_threads()


def test_main_refuses_nonsense_counts_at_parse_time():
    for args in (["--steps", "0"], ["--steps", "-5"], ["--games", "-1"], ["--games", "many"]):
        proc = revolution("main", *args)
        assert proc.returncode == 2 and "expected a positive integer" in proc.stderr


def test_scenario_files_that_are_not_text_or_hold_huge_numbers(tmp_path):
    bad = tmp_path / "latin1.json"
    bad.write_bytes(b'\xff\xfe{"rules": {}}')
    one_line_error(revolution("scenario", str(bad)), "is not UTF-8 text")
    big = tmp_path / "big.json"
    big.write_text(json.dumps({"rules": {"players": 3}, "start": {"support": [2**63, 0, 0]}, "rounds": []}))
    one_line_error(revolution("scenario", str(big)), "start.support: expected non-negative integers up to")
    bigger = tmp_path / "bigger.json"
    bigger.write_text(
        json.dumps({"rules": {"players": 3}, "rounds": [{"bids": [{"Printer": {"gold": 2**64}}, {}, {}]}]})
    )
    one_line_error(revolution("scenario", str(bigger)), "round 1, seat 0")


def _mutations():
    leaf = st.one_of(st.none(), st.booleans(), st.integers(-(2**70), 2**70), st.floats(allow_nan=True),
                     st.text(max_size=8), st.lists(st.integers(-3, 3), max_size=4))  # fmt: skip
    return st.tuples(st.sampled_from(SCENARIOS), st.integers(0, 10**6), leaf)


def _replace_somewhere(data, pick: int, value):
    """Replace one node (chosen by ``pick``) of a scenario's JSON tree with ``value``."""
    nodes = []

    def walk(node, parent, key):
        if parent is not None:
            nodes.append((parent, key))
        if isinstance(node, dict):
            for k, v in node.items():
                walk(v, node, k)
        elif isinstance(node, list):
            for i, v in enumerate(node):
                walk(v, node, i)

    walk(data, None, None)
    parent, key = nodes[pick % len(nodes)]
    parent[key] = value
    return data


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_mutations())
def test_a_fuzzed_scenario_fails_only_with_a_scenario_error(case):
    path, pick, value = case
    data = json.loads(path.read_text())
    data.pop("expect", None), data.pop("expect_error", None)
    mutated = _replace_somewhere(copy.deepcopy(data), pick, value)
    try:
        run_scenario(mutated)
    except ScenarioError as exc:
        assert "\n" not in str(exc)


class Fiddler(Person):
    """At the first numbered choice, types a superscript two and an Arabic-Indic three before answering."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.fiddled = False

    def answer(self, prompt: str, shown: str) -> str:
        if prompt.startswith("Your choice") and not self.fiddled:
            self.fiddled, self.listing = True, shown
            self.script += ["٣"]
            return "²"
        if prompt.startswith("Your choice") and not any(h in shown for h in HEADERS):
            shown = self.listing  # after the refusals, the choices are the ones listed before them
        return super().answer(prompt, shown)


def test_the_terminal_game_refuses_a_digit_that_is_not_a_number():
    out = io.StringIO()
    person = Fiddler(out, gold=("spy", "apothecary"), blackmail="apothecary")
    result = play_game({"players": 3}, seat=1, seed=3, read=person, out=out)
    assert person.fiddled and result.ended in ("over", "truncated")
    assert out.getvalue().count("type a number from") >= 2


def test_play_refuses_a_bad_seat_or_opponent_in_one_line():
    one_line_error(revolution("play", "--seat", "5"), "--seat: expected 0 to 2, got 5")
    one_line_error(revolution("play", "--opponents", "nosuch"), "unknown agent spec 'nosuch'")
    one_line_error(revolution("play", "--opponents", "missing.pt"), "missing.pt")


def test_every_command_words_a_bad_player_count_alike():
    """One wording, from one place (the rules' own check), whichever command is given the player count."""
    lines = set()
    for command in (["play"], ["random"], ["eval", "--agents", "random", "random"], ["exploit", "value"]):
        proc = revolution(*command, "--players", "7")
        one_line_error(proc, "players: expected 2, 3 or 4, got 7")
        lines.add(proc.stderr.strip())
    assert lines == {"error: players: expected 2, 3 or 4, got 7"}


def test_a_file_that_is_not_a_checkpoint_says_so_without_torch_s_unpickling_text(tmp_path):
    """A README or a pickle given as an agent: 'not a checkpoint', not torch's advice about weights_only and
    arbitrary code execution, which concerns a file the user never meant to unpickle."""
    import torch

    pickled = tmp_path / "pickled.pt"
    torch.save({"model": Path("a path object, which weights_only refuses")}, pickled)
    for path, why in ((ROOT / "README.md", "not a file that torch.save writes"), (pickled, "Python objects")):
        proc = revolution("eval", "--agents", str(path), "random", "random")
        one_line_error(proc, f"{path} is not a Revolution! policy checkpoint: ")
        assert why in proc.stderr and "weights_only" not in proc.stderr and "arbitrary" not in proc.stderr
