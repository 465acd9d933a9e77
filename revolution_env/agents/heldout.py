"""Held-out opponents: the opponents strength is measured on, which no training run may use (docs/heldout.md).

A bot is measured against the opponents it trained against by its gauntlet; how well it plays the game shows
against opponents nobody trained against. Two kinds, both in the repository so that anyone can reproduce the
figures: the heuristics with other parameters (:mod:`.variants`), and policies from other runs, the checkpoints in
``checkpoints/heldout/`` (its README says where each came from). ``revolution eval --gauntlet AGENT --held-out
default`` plays them (:func:`default_held_out`) and reports them apart; the training config refuses any config
that names one (:func:`held_out_specs`).
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from revolution_env.agents.loading import checkpoint_path
from revolution_env.agents.search import is_search, searched_spec
from revolution_env.agents.variants import VARIANTS

REPO = Path(__file__).resolve().parents[2]  # the clone this package was installed from (editable install)
FOLDER = REPO / "checkpoints" / "heldout"
PREVIOUS = {2: "previous_two_players.pt", 3: "previous_three_players.pt", 4: "previous_four_players.pt"}
DEFAULT = "default"  # ``--held-out default``: :func:`default_held_out`
FOR_EVALUATION_ONLY = "held-out opponents are for evaluation only (docs/heldout.md)"
MIXTURES = ("mix:", "meta:")  # a mixture per decision, per game (a PSRO meta-strategy): SPEC@W,SPEC@W,...


def shown(path: Path) -> str:
    """A path as a spec: relative to the working folder where it lies below it (so that reports and results.json
    read the same on every machine), else absolute."""
    relative = os.path.relpath(path)
    return path.as_posix() if relative.startswith("..") else Path(relative).as_posix()


def default_held_out(players: int, agent: str | None = None) -> list[str]:
    """The held-out set of ``players``-player games: every variant, then the previous shipped bot of that count
    (``checkpoints/heldout/previous_<count>_players.pt``) where the clone has it and it is not ``agent`` itself (the
    same file: until a new bot is shipped, the shipped one is its own previous bot, and copies of one
    deterministic policy tie each other's bids; nor the policy that ``agent``, a ``search:`` spec, plays)."""
    specs = list(VARIANTS)
    if agent and is_search(agent):  # a search plays its checkpoint's policy: that policy is the agent's own
        agent = searched_spec(agent)
    path = FOLDER / PREVIOUS.get(players, "")
    if players in PREVIOUS and path.is_file() and not (agent and _same_file(checkpoint_path(agent), path)):
        specs.append(shown(path))
    return specs


def _same_file(a: str | Path, b: Path) -> bool:
    try:
        return Path(a).is_file() and Path(a).read_bytes() == b.read_bytes()
    except OSError:
        return False


def expand_held_out(specs: list[str], players: int, agent: str | None = None) -> list[str]:
    """``specs`` with ``default`` replaced by :func:`default_held_out` (for ``agent``), each spec once, in order."""
    out: list[str] = []
    for spec in specs:
        out += default_held_out(players, agent) if spec == DEFAULT else [spec]
    return list(dict.fromkeys(out))


def in_held_out_folder(path: str) -> bool:
    """Whether a path lies in ``checkpoints/heldout/``: this clone's, or one written as ``.../checkpoints/heldout/...``
    (a config read from another folder, another clone)."""
    p = Path(path)
    parts = p.parts
    if any(parts[i : i + 2] == ("checkpoints", "heldout") for i in range(len(parts) - 1)):
        return True
    try:
        return p.resolve().is_relative_to(FOLDER.resolve())
    except (OSError, RuntimeError):  # pragma: no cover - a path that cannot be resolved is in no folder
        return False


def is_held_out(spec: str, files: bool = True) -> bool:
    """Whether an agent spec names a held-out opponent: a variant, a checkpoint in ``checkpoints/heldout/`` (with
    or without ``:sample``; played with ``search:`` or not), a mixture (``mix:``, ``meta:``) with one of those among
    its parts, or (``files``) a population file (``.json``, ``revolution psro``'s) that names one anywhere in it."""
    if spec.startswith(MIXTURES):
        parts = (part.strip() for part in spec.split(":", 1)[1].split(","))
        return any(is_held_out(part.rpartition("@")[0].strip() or part, files) for part in parts)
    if is_search(spec):
        return is_held_out(searched_spec(spec), files)
    if spec in VARIANTS or in_held_out_folder(checkpoint_path(spec)):
        return True
    if files and spec.endswith(".json") and os.path.isfile(spec):
        try:
            with open(spec, encoding="utf-8") as fh:
                return bool(_held_out_in(json.load(fh), files=False))
        except (OSError, UnicodeDecodeError, json.JSONDecodeError):
            return False
    return False


def held_out_specs(value: Any) -> list[str]:
    """Every string in ``value`` (a config's field: a spec, a list of specs, stages or a population as mappings and
    lists, nested) that names a held-out opponent (:func:`is_held_out`)."""
    return _held_out_in(value, files=True)


def _held_out_in(value: Any, files: bool) -> list[str]:
    if isinstance(value, str):
        return [value] if value and is_held_out(value, files) else []
    if isinstance(value, Mapping):
        value = [*value.keys(), *value.values()]
    if isinstance(value, (list, tuple, set, frozenset)):
        return [spec for item in value for spec in _held_out_in(item, files)]
    return []
