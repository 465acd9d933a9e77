"""The league: frozen snapshots of the learner and the heuristic agents it plays against.

On disk the league is a folder of policy checkpoints (``snapshot_<step>.pt``) and ``league.json``, which lists
them oldest first. Only the training process writes it (:class:`League`); every self-play environment, in its own
process, reads it (:class:`LeagueReader`) and picks up new snapshots when ``league.json`` changes. Every file is
written to a temporary name and renamed, so a reader sees the old league or the new one, never half of one.

**Snapshots.** The learner is copied into the league every ``snapshot_every`` steps. Past ``max_snapshots`` the
oldest snapshot goes, except the very first, which always stays (an anchor: the learner keeps meeting the weak
play it learned to beat first, so it does not forget how). With ``max_snapshots: 1`` only the latest is kept.

**Sampling**, independently for each opponent seat at the start of every game, so that three- and four-player
tables mix every composition of opponents. ``opponent_sampling: uniform``: with probability ``p_latest`` the
latest snapshot; with ``p_past`` an older snapshot drawn uniformly (the latest while it is the only one);
otherwise (``p_heuristics``) an agent of the ``heuristics`` list drawn uniformly. ``opponent_sampling: pfsp``
(prioritized fictitious self-play, as in AlphaStar's league): with probability ``p_latest`` the latest snapshot
(self-play); otherwise one member of the whole league (every snapshot and every heuristic) drawn with weight
``f(p)``, where ``p`` is the learner's win rate against it over its last ``pfsp_window`` games with it at the
table, and ``f`` favours what the learner loses to: ``hard`` ``(1 - p)^2``, ``linear`` ``1 - p``, ``variance``
``p (1 - p)`` (opponents of its own level), ``even`` 1. A member not met yet counts as ``p = 0``, so it is tried
first. Until the first snapshot exists, every seat gets a heuristic. Snapshot opponents sample their actions from
their masked policy (not argmax), so they are as varied as the learner that made them.

**Exploiters** (the config's ``exploiters`` section, PFSP only): every so often the training pauses and trains a
fresh best response to the learner as it is (``revolution_training.exploit``), which joins the league as
``exploiter_<step>.pt`` (the newest ``exploiters.keep`` are kept). PFSP weighs an exploiter like any member, so the
learner meets most often the exploiters that still beat it: AlphaStar's main exploiters, which look for the main
agent's weaknesses.

**Results.** The training process records the learner's result against every opponent at the table
(:meth:`League.record`) and writes them into ``league.json`` with the snapshots; the readers weigh by them. At
every snapshot the win rates are also appended to the league's history, the rows of the win-rate matrix that
:func:`plot_matrix` draws (``league.png`` in the run folder) and TensorBoard shows (``league/win_rate/*``).
"""

from __future__ import annotations

import json
import os
import re
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from revolution_training.checkpoint import atomic_write, atomic_write_json, save_checkpoint
from revolution_training.policy import load_policy_agent

from revolution_env.agents.base import Agent
from revolution_env.agents.loading import load_agent

LEAGUE_FILE = "league.json"
LEAGUE_FORMAT = "revolution-league"
PFSP_WEIGHTINGS: dict[str, Callable[[float], float]] = {
    "hard": lambda p: (1.0 - p) ** 2,
    "linear": lambda p: 1.0 - p,
    "variance": lambda p: p * (1.0 - p),
    "even": lambda p: 1.0,
}
SAMPLING = ("uniform", "pfsp")


def snapshot_name(step: int) -> str:
    return f"snapshot_{step:012d}.pt"


def exploiter_name(step: int) -> str:
    return f"exploiter_{step:012d}.pt"


MEMBER_NAMES = {"snapshot": re.compile(r"snapshot_\d{12}\.pt"), "exploiter": re.compile(r"exploiter_\d{12}\.pt")}


def _member_entry(entry: Any, kind: str = "snapshot") -> dict[str, Any]:
    """A snapshot (or exploiter) of league.json, checked: its file is a member's name in the league folder, never
    a path elsewhere (the league deletes the files it drops)."""
    ok = (
        isinstance(entry, dict)
        and isinstance(entry.get("file"), str)
        and MEMBER_NAMES[kind].fullmatch(entry["file"])
        and isinstance(entry.get("step"), int)
        and not isinstance(entry["step"], bool)
        and entry["step"] >= 0
    )
    if not ok:
        raise ValueError(f"a {kind} must be {{'file': '{kind}_<12 digits>.pt', 'step': N}}, got {entry!r}")
    return {"file": entry["file"], "step": entry["step"]}


def read_league_file(folder: str | Path) -> dict[str, Any]:
    """``folder/league.json`` (an empty league if there is none yet)."""
    path = Path(folder) / LEAGUE_FILE
    if not path.exists():
        return {"snapshots": [], "exploiters": [], "results": {}, "history": []}
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ValueError(f"{path}: not a league file ({exc})") from None
    if not isinstance(data, dict) or data.get("format") != LEAGUE_FORMAT or not isinstance(data.get("snapshots"), list):
        raise ValueError(f"{path}: not a league file")
    try:
        return {"snapshots": [_member_entry(s) for s in data["snapshots"]],
                "exploiters": [_member_entry(s, "exploiter") for s in data.get("exploiters", [])],
                "results": dict(data.get("results", {})), "history": list(data.get("history", []))}  # fmt: skip
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{path}: not a league file ({exc})") from None


def read_league(folder: str | Path) -> list[dict[str, Any]]:
    """The snapshots listed in ``folder/league.json``, oldest first (none if there is no league yet)."""
    return read_league_file(folder)["snapshots"]


def win_rates(results: Mapping[str, Sequence[float]]) -> dict[str, float]:
    """The learner's win rate against each opponent, from its recent results (1 win, 0 loss, 1/k shared)."""
    return {name: float(np.mean(r)) for name, r in results.items() if len(r)}


def pfsp_weights(members: Sequence[str], rates: Mapping[str, float], weighting: str) -> np.ndarray:
    """PFSP's weight of each league member (normalised); a member never met counts as a win rate of 0."""
    f = PFSP_WEIGHTINGS[weighting]
    w = np.array([f(rates.get(m, 0.0)) for m in members], dtype=float)
    if w.sum() <= 0:  # e.g. "variance" when every rate is 0 or 1: fall back to uniform
        w = np.ones(len(members))
    return w / w.sum()


def kept(snapshots: Sequence[Mapping[str, Any]], max_snapshots: int) -> list[Mapping[str, Any]]:
    """The snapshots kept under the cap: the first one, then the newest (only the newest if the cap is 1)."""
    if len(snapshots) <= max_snapshots:
        return list(snapshots)
    if max_snapshots == 1:
        return [snapshots[-1]]
    return [snapshots[0], *snapshots[len(snapshots) - (max_snapshots - 1) :]]


class League:
    """The league folder, as the training process writes it."""

    def __init__(self, folder: str | Path, max_snapshots: int, window: int = 100) -> None:
        self.folder = Path(folder)
        self.max_snapshots = max_snapshots
        self.window = window
        self.folder.mkdir(parents=True, exist_ok=True)
        data = read_league_file(self.folder)
        self.snapshots = [s for s in data["snapshots"] if (self.folder / s["file"]).exists()]
        self.exploiters = [s for s in data["exploiters"] if (self.folder / s["file"]).exists()]
        self.results: dict[str, deque[float]] = {name: deque(r, maxlen=window) for name, r in data["results"].items()}
        self.history: list[dict[str, Any]] = data["history"]

    def record(self, opponents: Sequence[str], won: float) -> None:
        """The learner's result (1 won, 0 lost; a shared win counts 1/k) in a game against ``opponents``."""
        for name in set(opponents):
            self.results.setdefault(name, deque(maxlen=self.window)).append(float(won))

    def win_rates(self) -> dict[str, float]:
        return win_rates(self.results)

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
        self.history = [h for h in self.history if h["step"] < step] + [
            {"step": int(step), "win_rates": self.win_rates()}
        ]
        self._write(kept(snapshots, self.max_snapshots))
        return self.folder / name

    def add_exploiter(self, checkpoint: str | Path, step: int, max_exploiters: int) -> Path:
        """Add an exploiter (a policy checkpoint file) trained at ``step``; past ``max_exploiters`` the oldest goes."""
        name = exploiter_name(step)
        data = Path(checkpoint).read_bytes()
        atomic_write(self.folder / name, lambda fh: fh.write(data))
        exploiters = [s for s in self.exploiters if s["file"] != name] + [{"file": name, "step": int(step)}]
        self._write(self.snapshots, exploiters[-max_exploiters:])
        return self.folder / name

    def publish(self) -> None:
        """Write the results so far, for the readers' PFSP weights."""
        self._write(self.snapshots)

    def rollback(self, step: int) -> None:
        """Forget snapshots and exploiters made after ``step`` (a resumed run continues from its last save at
        ``step``)."""
        self.history = [h for h in self.history if h["step"] <= step]
        self._write([s for s in self.snapshots if s["step"] <= step], [s for s in self.exploiters if s["step"] <= step])

    def _write(self, snapshots: list[Mapping[str, Any]], exploiters: list[Mapping[str, Any]] | None = None) -> None:
        exploiters = self.exploiters if exploiters is None else exploiters
        dropped = [s for s in [*self.snapshots, *self.exploiters] if s not in snapshots and s not in exploiters]
        data = {
            "format": LEAGUE_FORMAT,
            "version": 1,
            "max_snapshots": self.max_snapshots,
            "snapshots": snapshots,
            "exploiters": exploiters,
            "results": {name: list(r) for name, r in sorted(self.results.items())},
            "history": self.history,
        }
        atomic_write_json(self.folder / LEAGUE_FILE, data)  # the list first: readers never see a missing file listed
        self.snapshots, self.exploiters = list(snapshots), list(exploiters)
        for s in dropped:
            if all(s["file"] != k["file"] for k in [*snapshots, *exploiters]):
                (self.folder / s["file"]).unlink(missing_ok=True)


def choose_opponent(
    rng: np.random.Generator,
    snapshots: Sequence[str],
    heuristics: Sequence[str],
    p_latest: float,
    p_past: float,
    pfsp: Mapping[str, float] | None = None,
    weighting: str = "hard",
    exploiters: Sequence[str] = (),
    heuristics_weights: Sequence[float] | None = None,
) -> tuple[str, str]:
    """One opponent by the league's scheme: ``("snapshot", file)`` (a policy file of the league: a snapshot or an
    exploiter) or ``("heuristic", spec)``. ``pfsp`` (the learner's win rates by member) switches to prioritized
    fictitious self-play (module docstring); exploiters are members under PFSP only. ``heuristics_weights``: the
    chances of the heuristics (uniform sampling only; None: uniform)."""
    u = rng.random()
    if pfsp is not None:
        if snapshots and u < p_latest:
            return "snapshot", snapshots[-1]
        members = [*snapshots, *exploiters, *heuristics]
        pick = members[int(rng.choice(len(members), p=pfsp_weights(members, pfsp, weighting)))]
        return ("heuristic", pick) if pick in heuristics else ("snapshot", pick)
    if snapshots and u < p_latest + p_past:
        if u < p_latest or len(snapshots) == 1:
            return "snapshot", snapshots[-1]
        return "snapshot", snapshots[int(rng.integers(len(snapshots) - 1))]
    return "heuristic", draw_heuristic(rng, heuristics, heuristics_weights)


def draw_heuristic(rng: np.random.Generator, heuristics: Sequence[str], weights: Sequence[float] | None) -> str:
    """A heuristic of the league, uniformly or with ``weights`` (a population's meta-strategy)."""
    if weights is None:
        return heuristics[int(rng.integers(len(heuristics)))]
    p = np.asarray(weights, dtype=np.float64)
    return heuristics[int(rng.choice(len(heuristics), p=p / p.sum()))]


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
        sampling: str = "uniform",
        weighting: str = "hard",
        heuristics_weights: Sequence[float] | None = None,
    ) -> None:
        if sampling not in SAMPLING:
            raise ValueError(f"opponent_sampling: expected one of {', '.join(SAMPLING)}, got {sampling!r}")
        if weighting not in PFSP_WEIGHTINGS:
            raise ValueError(f"pfsp_weighting: expected one of {', '.join(PFSP_WEIGHTINGS)}, got {weighting!r}")
        self.folder = Path(folder) if folder is not None else None
        self.heuristics = list(heuristics)
        self.heuristics_weights = None if heuristics_weights is None else list(heuristics_weights)
        self.env_options = {k: v for k, v in env_options.items() if k != "reward"}
        self.p_latest, self.p_past = p_latest, p_past
        self.deterministic = deterministic
        self.sampling, self.weighting = sampling, weighting
        self.rates: dict[str, float] = {}  # the learner's recent win rates by member (PFSP)
        self.snapshots: list[str] = []
        self.exploiters: list[str] = []
        self._stamp: tuple | None = None
        self._agents: dict[tuple[str, str, int], Agent] = {}

    @classmethod
    def from_section(cls, folder: str | Path | None, league: Any, env_options: Mapping[str, Any]) -> LeagueReader:
        """The reader of the league in ``folder`` as a run's ``league`` section (``config.LeagueConfig``) sets it."""
        return cls(folder, league.heuristics, env_options, league.p_latest, league.p_past,
                   league.opponents_deterministic, league.opponent_sampling, league.pfsp_weighting,
                   league.heuristics_weights)  # fmt: skip

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
        data = read_league_file(self.folder)
        self.snapshots = [s["file"] for s in data["snapshots"]]
        self.exploiters = [s["file"] for s in data["exploiters"]]
        self.rates = win_rates(data["results"])
        self._stamp = stamp
        live = {*self.snapshots, *self.exploiters}
        self._agents = {k: a for k, a in self._agents.items() if k[0] != "snapshot" or k[1] in live}

    def sample(self, rng: np.random.Generator, slot: int) -> tuple[str, Agent]:
        """An opponent for opponent ``slot`` (0, 1, ...): its name (``snapshot_<step>.pt`` or the spec) and agent."""
        self.refresh()
        pfsp = self.rates if self.sampling == "pfsp" else None
        kind, spec = choose_opponent(
            rng,
            self.snapshots,
            self.heuristics,
            self.p_latest,
            self.p_past,
            pfsp,
            self.weighting,
            self.exploiters,
            self.heuristics_weights,
        )
        try:
            return spec, self._agent(kind, spec, slot)
        except FileNotFoundError:  # dropped from the league since we read it: take a heuristic instead
            spec = draw_heuristic(rng, self.heuristics, self.heuristics_weights)
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


def plot_matrix(history: Sequence[Mapping[str, Any]], path: str | Path) -> Path | None:
    """The league's win-rate matrix as a heat map: one row per snapshot step, one column per opponent met, the
    learner's recent win rate against it (blank where not met yet). Nothing is drawn before the first row."""
    rows = [h for h in history if h["win_rates"]]
    if not rows:
        return None
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from revolution_env.common.files import atomic_write

    names = sorted({n for h in rows for n in h["win_rates"]}, key=lambda n: (n.startswith("snapshot"), n))
    grid = np.array([[h["win_rates"].get(n, np.nan) for n in names] for h in rows], dtype=float)
    labels = [n.removeprefix("snapshot_").removesuffix(".pt").lstrip("0") or "0" for n in names]
    fig, ax = plt.subplots(figsize=(max(5.0, 1.5 + 0.5 * len(names)), max(3.0, 1.5 + 0.3 * len(rows))))
    image = ax.imshow(grid, vmin=0, vmax=1, cmap="RdYlGn", aspect="auto")
    ax.set_xticks(range(len(names)), labels, rotation=60, ha="right", fontsize=7)
    ax.set_yticks(range(len(rows)), [f"{h['step']:,}" for h in rows], fontsize=7)
    ax.set_xlabel("opponent (heuristic, or snapshot step)")
    ax.set_ylabel("learner at step")
    ax.set_title("league: the learner's recent win rate against each opponent", fontsize=10)
    fig.colorbar(image, ax=ax, fraction=0.046)
    fig.tight_layout()
    path = Path(path)
    atomic_write(path, lambda fh: fig.savefig(fh, format="png", dpi=100), binary=True)
    plt.close(fig)
    return path
