"""Writing policy checkpoints (the format and the reading side live in ``revolution_env.agents.checkpoint``).

Files are written to a temporary name and renamed into place, so a reader (or a kill) never meets half of one.
"""

from __future__ import annotations

import datetime
import json
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import IO, Any

import torch

from revolution_env.agents.checkpoint import (
    FORMAT,
    FORMAT_VERSION,
    action_mode,
    check_compatible,
    env_metadata,
    history,
    layout_hash,
    read_checkpoint,
    rule_options,
)
from revolution_env.common import files

__all__ = [
    "FORMAT",
    "FORMAT_VERSION",
    "action_mode",
    "atomic_write",
    "atomic_write_json",
    "check_compatible",
    "env_metadata",
    "history",
    "layout_hash",
    "make_checkpoint",
    "read_checkpoint",
    "rule_options",
    "save_checkpoint",
]


# --- files -------------------------------------------------------------------------------------------------------


def atomic_write(path: str | Path, write: Callable[[IO[bytes]], None]) -> None:
    """Write ``path`` (binary) through ``write(file)``, all or nothing."""
    files.atomic_write(path, write, binary=True)


def atomic_write_json(path: str | Path, data: Any) -> None:
    atomic_write(path, lambda fh: fh.write((json.dumps(data, indent=2) + "\n").encode("utf-8")))


# --- writing -----------------------------------------------------------------------------------------------------


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
        **env_metadata({**env_options, "action_mode": policy.get("action_mode", "bid")}),
        "policy": dict(policy),
        "config": dict(config or {}),
        "step": int(step),
        "wall_time": float(wall_time),
        "saved_at": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
    }
    if origin is not None:
        checkpoint["origin"] = dict(origin)
    return checkpoint


def save_checkpoint(checkpoint: Mapping[str, Any], path: str | Path) -> None:
    atomic_write(path, lambda fh: torch.save(dict(checkpoint), fh))
