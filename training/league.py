"""The league: frozen snapshots of the learner and the heuristic agents it plays against.

On disk the league is a folder of policy checkpoints (``snapshot_<step>.pt``) and ``league.json``, which lists
them oldest first. Only the training process writes it (:class:`League`); every self-play environment, in its own
process, reads it (:class:`LeagueReader`) and picks up new snapshots when ``league.json`` changes. Every file is
written to a temporary name and renamed, so a reader sees the old league or the new one, never half of one.

**Snapshots.** The learner is copied into the league every ``snapshot_every`` steps. Past ``max_snapshots`` the
oldest snapshot goes, except the very first, which always stays (an anchor: the learner keeps meeting the weak
play it learned to beat first, so it does not forget how). With ``max_snapshots: 1`` only the latest is kept.

**Sampling**, independently for each opponent seat at the start of every game: with probability ``p_latest``
the latest snapshot; with ``p_past`` an older snapshot drawn uniformly (the latest while it is the only one);
otherwise (``p_heuristics``) an agent of the ``heuristics`` list drawn uniformly. Until the first snapshot exists,
every seat gets a heuristic. Snapshot opponents sample their actions from their masked policy (not argmax), so
they are as varied as the learner that made them.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from revolution_env.agents.base import Agent
from revolution_env.agents.loading import load_agent

from .checkpoint import atomic_write_json, save_checkpoint
from .policy import load_policy_agent

LEAGUE_FILE = "league.json"
LEAGUE_FORMAT = "revolution-league"


def snapshot_name(step: int) -> str:
    return f"snapshot_{step:012d}.pt"


def read_league(folder: str | Path) -> list[dict[str, Any]]:
    """The snapshots listed in ``folder/league.json``, oldest first (none if there is no league yet)."""
    path = Path(folder) / LEAGUE_FILE
    if not path.exists():
        return []
    data = json.loads(path.read_text(encoding="utf-8"))
    if not isinstance(data, dict) or data.get("format") != LEAGUE_FORMAT:
        raise ValueError(f"{path}: not a league file")
    return list(data["snapshots"])


def kept(snapshots: Sequence[Mapping[str, Any]], max_snapshots: int) -> list[Mapping[str, Any]]:
    """The snapshots kept under the cap: the first one, then the newest (only the newest if the cap is 1)."""
    if len(snapshots) <= max_snapshots:
        return list(snapshots)
    if max_snapshots == 1:
        return [snapshots[-1]]
    return [snapshots[0], *snapshots[len(snapshots) - (max_snapshots - 1) :]]


class League:
    """The league folder, as the training process writes it."""

    def __init__(self, folder: str | Path, max_snapshots: int) -> None:
        self.folder = Path(folder)
        self.max_snapshots = max_snapshots
        self.folder.mkdir(parents=True, exist_ok=True)
        self.snapshots = [s for s in read_league(self.folder) if (self.folder / s["file"]).exists()]

    @property
    def latest_step(self) -> int | None:
        return self.snapshots[-1]["step"] if self.snapshots else None

    def paths(self) -> list[Path]:
        return [self.folder / s["file"] for s in self.snapshots]

    def add(self, checkpoint: Mapping[str, Any], step: int) -> Path:
        """Add a snapshot (a policy checkpoint dict) taken at ``step``; drop what the cap no longer keeps."""
        name = snapshot_name(step)
        save_checkpoint(checkpoint, self.folder / name)
        snapshots = [s for s in self.snapshots if s["file"] != name] + [{"file": name, "step": int(step)}]
        self._write(kept(snapshots, self.max_snapshots))
        return self.folder / name

    def rollback(self, step: int) -> None:
        """Forget snapshots taken after ``step`` (a resumed run continues from its last save at ``step``)."""
        self._write([s for s in self.snapshots if s["step"] <= step])

    def _write(self, snapshots: list[Mapping[str, Any]]) -> None:
        dropped = [s for s in self.snapshots if s not in snapshots]
        data = {"format": LEAGUE_FORMAT, "version": 1, "max_snapshots": self.max_snapshots, "snapshots": snapshots}
        atomic_write_json(self.folder / LEAGUE_FILE, data)  # the list first: readers never see a missing file listed
        self.snapshots = list(snapshots)
        for s in dropped:
            if all(s["file"] != k["file"] for k in snapshots):
                (self.folder / s["file"]).unlink(missing_ok=True)


def choose_opponent(
    rng: np.random.Generator,
    snapshots: Sequence[str],
    heuristics: Sequence[str],
    p_latest: float,
    p_past: float,
) -> tuple[str, str]:
    """One opponent by the league's scheme: ``("snapshot", file)`` or ``("heuristic", spec)``."""
    u = rng.random()
    if snapshots and u < p_latest + p_past:
        if u < p_latest or len(snapshots) == 1:
            return "snapshot", snapshots[-1]
        return "snapshot", snapshots[int(rng.integers(len(snapshots) - 1))]
    return "heuristic", heuristics[int(rng.integers(len(heuristics)))]


class LeagueReader:
    """The league as a self-play environment sees it: samples opponents, reloading ``league.json`` when it
    changes. Agents are built once per (spec, opponent slot), so two seats never share an agent's state."""

    def __init__(
        self,
        folder: str | Path | None,
        heuristics: Sequence[str],
        env_options: Mapping[str, Any],
        p_latest: float = 0.0,
        p_past: float = 0.0,
        deterministic: bool = False,
    ) -> None:
        self.folder = Path(folder) if folder is not None else None
        self.heuristics = list(heuristics)
        self.env_options = {k: v for k, v in env_options.items() if k != "reward"}
        self.p_latest, self.p_past = p_latest, p_past
        self.deterministic = deterministic
        self.snapshots: list[str] = []
        self._stamp: tuple | None = None
        self._agents: dict[tuple[str, str, int], Agent] = {}

    def refresh(self) -> None:
        """Reload ``league.json`` if it changed (every write replaces the file, so its inode changes)."""
        if self.folder is None:
            return
        try:
            st = os.stat(self.folder / LEAGUE_FILE)
        except FileNotFoundError:
            return
        stamp = (st.st_ino, st.st_mtime_ns, st.st_size)
        if stamp == self._stamp:
            return
        self.snapshots = [s["file"] for s in read_league(self.folder)]
        self._stamp = stamp
        live = set(self.snapshots)
        self._agents = {k: a for k, a in self._agents.items() if k[0] != "snapshot" or k[1] in live}

    def sample(self, rng: np.random.Generator, slot: int) -> tuple[str, Agent]:
        """An opponent for opponent ``slot`` (0, 1, ...): its name (``snapshot_<step>.pt`` or the spec) and agent."""
        self.refresh()
        kind, spec = choose_opponent(rng, self.snapshots, self.heuristics, self.p_latest, self.p_past)
        try:
            return spec, self._agent(kind, spec, slot)
        except FileNotFoundError:  # dropped from the league since we read it: take a heuristic instead
            spec = self.heuristics[int(rng.integers(len(self.heuristics)))]
            return spec, self._agent("heuristic", spec, slot)

    def _agent(self, kind: str, spec: str, slot: int) -> Agent:
        key = (kind, spec, slot)
        if key not in self._agents:
            if kind == "snapshot":
                path = self.folder / spec
                try:
                    agent = load_policy_agent(str(path), deterministic=self.deterministic, **self.env_options)
                except ValueError:
                    if not path.exists():  # deleted while we read it
                        raise FileNotFoundError(path) from None
                    raise
                self._agents[key] = agent
            else:
                self._agents[key] = load_agent(spec, **self.env_options)
        return self._agents[key]
