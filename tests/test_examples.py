"""Every example runs as a user would run it (``--smoke``: one small update), so that none of them rots. An
example whose library is not installed is skipped (RLlib's runs in CI's venv of its own, ``.ci/run``)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = sorted((ROOT / "examples").glob("*.py"))
NEEDS = {
    "sb3_maskable_ppo": ("sb3_contrib",),
    "supersuit_vec": ("supersuit", "sb3_contrib"),
    "tianshou_ppo": ("tianshou",),
    "torchrl_mappo": ("torchrl",),
    "rllib_ppo": ("ray.rllib",),
}


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.stem)
def test_example_runs(path):
    for module in NEEDS.get(path.stem, ("torch",)):
        pytest.importorskip(module, reason=f"{path.name} needs {module}")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.run([sys.executable, str(path), "--smoke"], capture_output=True, text=True, timeout=300,
                          cwd=ROOT, env=env)  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "win rate" in proc.stdout
