"""Policy checkpoints: what a trained policy is, and which environment it was trained for.

A checkpoint is a ``torch.save`` of a dict of plain types and tensors (so ``torch.load(weights_only=True)`` reads
it), with this metadata beside the weights:

| key              | meaning                                                                                   |
|------------------|-------------------------------------------------------------------------------------------|
| `format`         | `"revolution-policy"`                                                                     |
| `format_version` | `1`                                                                                       |
| `env`            | `"revolution_v1"` (the environment id; a new id means the observations may mean otherwise) |
| `env_options`    | the rule options (normalised, defaults filled in) and the reward the policy was trained with |
| `layout_hash`    | sha256 of the observation layout's feature table and the action ``nvec``                  |
| `policy`         | `hidden` sizes, `activation`, `obs_size`, `nvec`, and the actor's `state_dict`            |
| `config`         | the training config (``TrainConfig.to_dict()``)                                           |
| `step`           | learner steps trained                                                                     |
| `wall_time`      | seconds of training behind it; `saved_at`: when it was written (UTC, ISO 8601)            |
| `origin`         | only for a run started from trained weights (``init_from``): that source's path, `step`,   |
|                  | `wall_time` and its own `origin` (so the whole training history adds up)                  |

Files are written to a temporary name and renamed into place, so a reader (or a kill) never meets half of one.
"""

from __future__ import annotations

import datetime
import hashlib
import json
import os
import zipfile
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import IO, Any

import torch

from revolution_env import files, observation_layout
from revolution_env.engine.game import Rules
from revolution_env.env.core import ENV_NAME, EnvConfig

FORMAT = "revolution-policy"
FORMAT_VERSION = 1
REQUIRED = ("format", "format_version", "env", "env_options", "layout_hash", "policy", "step")


# --- files -------------------------------------------------------------------------------------------------------


def atomic_write(path: str | Path, write: Callable[[IO[bytes]], None]) -> None:
    """Write ``path`` (binary) through ``write(file)``, all or nothing."""
    files.atomic_write(path, write, binary=True)


def atomic_write_json(path: str | Path, data: Any) -> None:
    atomic_write(path, lambda fh: fh.write((json.dumps(data, indent=2) + "\n").encode("utf-8")))


# --- the environment a policy belongs to -------------------------------------------------------------------------


def rule_options(env_options: Mapping[str, Any]) -> dict[str, Any]:
    """The rule options with every default filled in (what decides the game a policy plays)."""
    options = {k: v for k, v in env_options.items() if k not in ("reward", "render_mode")}
    return Rules(**EnvConfig.from_options(options).rules.to_dict()).to_dict()


def layout_hash(env_options: Mapping[str, Any]) -> str:
    """sha256 of the observation layout's feature table (name, start, shape, scale) and the action ``nvec``."""
    options = {k: v for k, v in env_options.items() if k != "render_mode"}
    layout = observation_layout(**options)
    table = {
        "features": [[f.name, f.start, list(f.shape), float(f.scale)] for f in layout.features.values()],
        "nvec": [int(n) for n in layout.codec.nvec],
    }
    return hashlib.sha256(json.dumps(table, sort_keys=True).encode("utf-8")).hexdigest()


def env_metadata(env_options: Mapping[str, Any]) -> dict[str, Any]:
    reward = env_options.get("reward", "win_loss")
    return {
        "env": ENV_NAME,
        "env_options": {**rule_options(env_options), "reward": reward},
        "layout_hash": layout_hash(env_options),
    }


# --- writing and reading -----------------------------------------------------------------------------------------


def make_checkpoint(
    policy: Mapping[str, Any],
    env_options: Mapping[str, Any],
    config: Mapping[str, Any] | None = None,
    step: int = 0,
    wall_time: float = 0.0,
    origin: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The checkpoint dict of ``policy`` (``hidden``, ``activation``, ``obs_size``, ``nvec``, ``state_dict``)."""
    checkpoint = {
        "format": FORMAT,
        "format_version": FORMAT_VERSION,
        **env_metadata(env_options),
        "policy": dict(policy),
        "config": dict(config or {}),
        "step": int(step),
        "wall_time": float(wall_time),
        "saved_at": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
    }
    if origin is not None:
        checkpoint["origin"] = dict(origin)
    return checkpoint


def history(checkpoint: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The stages of training behind a checkpoint, first first: ``{"path", "step", "wall_time"}`` for each run it
    was started from (``origin``), then ``{"path": None, ...}`` for the checkpoint's own run."""
    stages = [{"path": None, "step": int(checkpoint["step"]), "wall_time": float(checkpoint.get("wall_time", 0.0))}]
    origin = checkpoint.get("origin")
    while origin:
        stages.append({"path": origin["path"], "step": int(origin["step"]), "wall_time": float(origin["wall_time"])})
        origin = origin.get("origin")
    return stages[::-1]


def save_checkpoint(checkpoint: Mapping[str, Any], path: str | Path) -> None:
    atomic_write(path, lambda fh: torch.save(dict(checkpoint), fh))


def read_checkpoint(path: str | Path) -> dict[str, Any]:
    """The checkpoint dict at ``path``; anything else raises ``ValueError`` saying why."""
    path = str(path)
    if not os.path.isfile(path):
        raise ValueError(f"{path}: no such checkpoint file")
    not_ours = f"{path} is not a Revolution! policy checkpoint"
    try:
        data = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as exc:  # torch raises many kinds for a file that is not one of its own
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        if zipfile.is_zipfile(path) and "policy.pth" in zipfile.ZipFile(path).namelist():
            raise ValueError(
                f"{not_ours}: it is a stable-baselines3 model (what --resume reads); use the run's latest.pt or best.pt"
            ) from None
        raise ValueError(f"{not_ours}: torch cannot read it ({first})") from None
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise ValueError(f"{not_ours}: no {FORMAT!r} format tag")
    missing = [k for k in REQUIRED if k not in data]
    if missing:
        raise ValueError(f"{not_ours}: missing {', '.join(missing)}")
    if data["format_version"] != FORMAT_VERSION:
        raise ValueError(
            f"{path}: checkpoint format version {data['format_version']!r}, this code reads version {FORMAT_VERSION}"
        )
    return data


def check_compatible(checkpoint: Mapping[str, Any], env_options: Mapping[str, Any], path: str = "checkpoint") -> None:
    """Raise ``ValueError`` naming what differs between the checkpoint's environment and ``env_options``.

    The rule options must match (the players, every optional rule, the board, ``max_rounds``); the reward may
    differ (it changes what is learned, not what the policy reads). The layout hash is checked last, to catch an
    observation layout that changed under the same options (a code change without an environment version bump).
    """
    if checkpoint["env"] != ENV_NAME:
        raise ValueError(f"{path}: trained on {checkpoint['env']!r}, this environment is {ENV_NAME!r}")
    ours = rule_options(env_options)
    theirs = {k: v for k, v in checkpoint["env_options"].items() if k != "reward"}
    diffs = [
        f"{k}: checkpoint {theirs.get(k)!r}, environment {ours.get(k)!r}" for k in ours if theirs.get(k) != ours[k]
    ]
    if diffs:
        raise ValueError(f"{path}: trained for another environment ({'; '.join(diffs)})")
    if checkpoint["layout_hash"] != layout_hash(env_options):
        raise ValueError(
            f"{path}: layout_hash differs: the observation layout or the action space changed since it was trained "
            f"(checkpoint {checkpoint['layout_hash'][:12]}, environment {layout_hash(env_options)[:12]})"
        )
