"""A run folder runs no code (issue 13): SB3's model zip may hold cloudpickled objects in its ``data`` entry, and
neither ``--resume`` nor ``init_from: <run folder>`` reads them; only the weights, with torch's weights_only."""

from __future__ import annotations

import base64
import contextlib
import json
import pickle
import shutil
import zipfile
from pathlib import Path

import pytest
from revolution_training.train import read_state, train
from test_training import tiny


class Payload:
    """Unpickling this writes a file: what a hostile run folder would do."""

    def __init__(self, target: Path) -> None:
        self.target = str(target)

    def __reduce__(self):
        return (exec, (f"open({self.target!r}, 'w').write('pwned')",))


def poison(run: Path, target: Path) -> None:
    """Put a cloudpickle ``:serialized:`` object that writes ``target`` into the run's model zip."""
    zip_path = run / read_state(run)["model"]
    with zipfile.ZipFile(zip_path) as z:
        entries = {name: z.read(name) for name in z.namelist()}
    data = json.loads(entries["data"])
    data["learning_rate"] = {":type:": "<class 'function'>",
                             ":serialized:": base64.b64encode(pickle.dumps(Payload(target))).decode()}  # fmt: skip
    entries["data"] = json.dumps(data).encode()
    with zipfile.ZipFile(zip_path, "w") as z:
        for name, blob in entries.items():
            z.writestr(name, blob)


@pytest.fixture
def hostile_run(tmp_path) -> tuple[Path, Path]:
    run = tmp_path / "run"
    train(tiny(n_envs=1, total_steps=64, evaluation={"every": 0}, seed=3), out=run)
    target = tmp_path / "pwned.txt"
    poison(run, target)
    return run, target


def test_the_payload_would_run_if_the_zip_were_loaded_the_usual_way(hostile_run):
    from sb3_contrib import MaskablePPO

    run, target = hostile_run
    with contextlib.suppress(Exception):  # whatever SB3 makes of the rest, the payload has run by then
        MaskablePPO.load(run / read_state(run)["model"], device="cpu")
    assert target.exists()  # the test's payload is real: loading the data entry runs it
    target.unlink()


def test_resume_reads_weights_only(hostile_run):
    run, target = hostile_run
    result = train(tiny(n_envs=1, total_steps=128, evaluation={"every": 0}, seed=3), out=run, resume=True)
    assert result.step == 128
    assert not target.exists()


def test_init_from_a_run_folder_reads_weights_only(hostile_run, tmp_path):
    run, target = hostile_run
    config = tiny(n_envs=1, total_steps=64, evaluation={"every": 0}, seed=4, init_from=str(run))
    train(config, out=tmp_path / "second")
    assert not target.exists()


def test_a_broken_save_is_one_clear_error(hostile_run):
    run, _ = hostile_run
    (run / read_state(run)["model"]).write_bytes(b"not a zip")
    with pytest.raises(ValueError, match="--resume: cannot read the save"):
        train(tiny(n_envs=1, total_steps=128, evaluation={"every": 0}, seed=3), out=run, resume=True)
    shutil.rmtree(run / "saves")
    with pytest.raises(ValueError, match="is gone"):
        train(tiny(n_envs=1, total_steps=128, evaluation={"every": 0}, seed=3), out=run, resume=True)
