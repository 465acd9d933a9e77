"""Value fitting from games: a critic regressed on the final rewards of recorded games (issue 51: the first step of
policy iteration with an equilibrium search in the loop, and the critic that ``equilibrium:`` scores states by).

1. **Games** (:func:`generate`). Seeded games of given agents, scheduled as ``revolution eval --pool`` schedules a
   round robin (every lineup of distinct agents, each over every seat order; :func:`schedule`), played by the
   evaluation's own :func:`~revolution_env.evaluation.runner.play_tasks`: on the batched engine where every agent
   allows it (the games ``GameRunner`` plays, many at once), else one by one, over worker processes. Each game
   comes back recorded as a scenario, which :func:`rows_of` replays on the engine: at every bid decision, every
   seat's observation (the environment's, ``ObservationLayout.build``), and that seat's final rewards as the
   environment pays them (:func:`revolution_env.env.core.final_rewards`: ``win_loss`` and ``margin``).
2. **Fit** (:func:`fit`). The critic as training builds it (SB3's value network: an MLP on the observation divided
   by the layout's ``scale``, then one output), regressed by squared error on the final reward: the Monte-Carlo
   target, undiscounted. Not TD(lambda): the games are of fixed agents and plentiful, so the Monte-Carlo target's
   variance is paid for with games, while bootstrapping on the critic being fitted would add its bias; and the
   search scores a game that ends by its undiscounted final reward, so its critic must be on that scale. A tenth of
   the games is held out, whole (the rows of one game are far from independent); the fit stops early when the
   held-out loss has not improved for ``patience`` epochs and keeps its best epoch. The report
   (:class:`FitReport`): the held-out loss beside that of predicting the mean, the explained variance, and the
   calibration (mean reward by decile of the predicted value).
3. **Attach** (:func:`attach`, :func:`critic_file`). The fitted critic into a copy of a policy checkpoint (its
   actor untouched: ``load_agent(PATH).value(obs)``), or alone in a critic file for a population without a network
   (``equilibrium:critic=PATH:value``), both read by :func:`revolution_env.agents.checkpoint.load_critic`.

``revolution fit-critic`` (:mod:`.cli`) runs the three.
"""

from __future__ import annotations

import datetime
import json
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch

from revolution_env.agents.checkpoint import (
    ACTIVATIONS,
    CRITIC_FORMAT,
    FORMAT_VERSION,
    action_mode,
    check_compatible,
    env_metadata,
    read_checkpoint,
    rule_options,
)
from revolution_env.engine.game import BID, Decision
from revolution_env.engine.scenario import new_game, play_round
from revolution_env.env import observation_layout
from revolution_env.env.core import REWARDS, final_rewards
from revolution_env.env.observation import ObservationLayout
from revolution_env.evaluation.runner import GameTask, play_tasks, pool_tournament

HELD_OUT = 0.1  # the share of games held out, whole
HIDDEN = (256, 256)  # the shipped bots' networks (a critic alone gets these by default)
BATCH = 512
LEARNING_RATE = 3e-4
MAX_EPOCHS = 40
PATIENCE = 3
DECILES = 10


# --- games -------------------------------------------------------------------------------------------------------


@dataclass
class GameRows:
    """Every seat's bid decisions of some games: one row per seat per bid decision.

    ``obs`` (N, size) the seat's observation, raw as the environment gives it (counts: stored as int16 where they
    fit); ``win_loss`` and ``margin`` (N,) the seat's final rewards; ``game`` (N,) the game's index in the schedule;
    ``seat`` and ``round`` (N,); ``agent`` (N,) the index of the seat's agent in ``agents`` (their specs)."""

    obs: np.ndarray
    win_loss: np.ndarray
    margin: np.ndarray
    game: np.ndarray
    seat: np.ndarray
    round: np.ndarray
    agent: np.ndarray
    agents: list[str]
    env_options: dict[str, Any]
    games: int = 0

    def __len__(self) -> int:
        return len(self.win_loss)

    def target(self, name: str) -> np.ndarray:
        if name not in REWARDS:
            raise ValueError(f"target: expected one of {', '.join(REWARDS)}, got {name!r}")
        return getattr(self, name)

    def save(self, path: str | Path) -> None:
        meta = {"agents": self.agents, "env_options": self.env_options, "games": self.games}
        arrays = {k: getattr(self, k) for k in ARRAYS}
        with open(path, "wb") as fh:  # np.savez adds .npz to a name without it; an open file keeps the name given
            np.savez_compressed(fh, meta=np.array(json.dumps(meta)), **arrays)

    @classmethod
    def load(cls, path: str | Path) -> GameRows:
        try:
            with np.load(path, allow_pickle=False) as data:
                meta = json.loads(str(data["meta"]))
                arrays = {k: data[k] for k in ARRAYS}
        except (OSError, KeyError, ValueError) as exc:
            raise ValueError(f"{path}: not the games that fit-critic --save-games writes ({exc})") from None
        return cls(**arrays, agents=list(meta["agents"]), env_options=dict(meta["env_options"]), games=meta["games"])

    @classmethod
    def concatenate(cls, parts: Sequence[GameRows]) -> GameRows:
        """The rows of several recordings of one variant, games renumbered after each other, agents merged."""
        if not parts:
            raise ValueError("no games: nothing to fit")
        options = rule_options(parts[0].env_options)
        agents: list[str] = []
        arrays: dict[str, list[np.ndarray]] = {k: [] for k in ARRAYS}
        first = 0
        for part in parts:
            if rule_options(part.env_options) != options:
                raise ValueError(f"games of different variants ({rule_options(part.env_options)} and {options})")
            index = np.array([_index(agents, a) for a in part.agents], dtype=np.int16)
            for k in ARRAYS:
                arrays[k].append(getattr(part, k))
            arrays["game"][-1] = part.game + first
            arrays["agent"][-1] = index[part.agent] if len(part.agent) else part.agent
            first += part.games
        joined = {k: np.concatenate(v) for k, v in arrays.items()}
        return cls(**joined, agents=agents, env_options=dict(parts[0].env_options), games=first)


ARRAYS = ("obs", "win_loss", "margin", "game", "seat", "round", "agent")


def _index(items: list[str], item: str) -> int:
    if item not in items:
        items.append(item)
    return items.index(item)


def schedule(specs: Sequence[str], players: int, games: int, seed: int, env_options: Mapping[str, Any]
             ) -> tuple[list[GameTask], dict[str, str]]:  # fmt: skip
    """The games to record: ``games`` games of every lineup of ``players`` distinct agents among ``specs``, each
    rotated over every seat order (``revolution eval --pool``'s round robin, its seeds); and the agents by name.
    Every agent is loaded once here, so that a bad spec fails before any game is played."""
    if isinstance(games, bool) or not isinstance(games, int) or games < 1:
        raise ValueError(f"games: expected a positive integer, got {games!r}")
    if len(specs) < players:
        raise ValueError(f"agents: {players}-player games need at least {players} agents, got {len(specs)}")
    tournament = pool_tournament(list(specs), players, games, seed, {**env_options, "players": players})
    return tournament.tasks, tournament.names


def rows_of(scenario: Mapping[str, Any], layout: ObservationLayout) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """One recorded game replayed on the engine: every seat's observation at every bid decision (rounds first, then
    seats), (rounds * players, size); each seat's final rewards, ``win_loss`` and ``margin``, (players,) each."""
    game = new_game(dict(scenario))
    players = layout.codec.P
    obs = []
    for spec in scenario["rounds"]:
        if game.decision is None or game.decision.kind != BID:
            raise RuntimeError(f"game seed {scenario.get('seed')}: round {game.round} does not start with the bids")
        obs.extend(layout.build(game, seat, Decision.BID) for seat in range(players))
        play_round(game, spec)
    if game.final is None:
        raise RuntimeError(f"game seed {scenario.get('seed')}: the recorded game does not end where it ended")
    seats = np.arange(players)
    won = np.isin(seats, list(game.final["winners"]))
    support = np.broadcast_to(np.asarray(game.final["support"]), (players, len(game.final["support"])))
    rewards = [final_rewards(r, won, support, seats) for r in ("win_loss", "margin")]
    return np.asarray(obs, dtype=np.float32).reshape(-1, layout.size), rewards[0], rewards[1]


def _compact(obs: np.ndarray) -> np.ndarray:
    """Observations as int16 where every value is an integer that fits (the counts they are), else float32."""
    small = obs.astype(np.int16)
    return small if np.array_equal(small, obs) else obs


def generate(
    tasks: Sequence[GameTask],
    names: Mapping[str, str],
    env_options: Mapping[str, Any],
    workers: int | None = None,
    progress: bool | None = None,
) -> GameRows:
    """The rows of every game of ``tasks`` (:func:`schedule`), played by ``play_tasks`` over ``workers``
    processes (the batched engine where the agents allow it), each game replayed here as it comes back."""
    if not tasks:
        raise ValueError("no games to play")
    options = {k: v for k, v in env_options.items() if k not in ("reward", "render_mode", "action_mode")}
    layout = observation_layout(**options)
    specs = list(dict.fromkeys(names.values()))
    order = {t.index: i for i, t in enumerate(tasks)}
    done: dict[int, tuple] = {}

    def record(part: Sequence[GameTask], results: Sequence[Any]) -> None:
        for task, result in zip(part, results):
            obs, win, margin = rows_of(result.scenario, layout)
            done[order[task.index]] = (_compact(obs), win, margin, [specs.index(names[n]) for n in task.names])

    play_tasks(tasks, options, workers, progress, "games", record=record)
    P = layout.codec.P
    parts = [done[i] for i in range(len(tasks))]
    rounds = [len(p[0]) // P for p in parts]
    return GameRows(
        obs=np.concatenate([p[0] for p in parts]),
        win_loss=np.concatenate([np.tile(p[1], r) for p, r in zip(parts, rounds)]).astype(np.float32),
        margin=np.concatenate([np.tile(p[2], r) for p, r in zip(parts, rounds)]).astype(np.float32),
        game=np.repeat(np.arange(len(parts), dtype=np.int64), [r * P for r in rounds]),
        seat=np.concatenate([np.tile(np.arange(P, dtype=np.int8), r) for r in rounds]),
        round=np.concatenate([np.repeat(np.arange(1, r + 1, dtype=np.int16), P) for r in rounds]),
        agent=np.concatenate([np.tile(np.asarray(p[3], dtype=np.int16), r) for p, r in zip(parts, rounds)]),
        agents=specs,
        env_options=rule_options(options),
        games=len(parts),
    )


# --- the fit -----------------------------------------------------------------------------------------------------


class CriticNet(torch.nn.Module):
    """The critic as SB3's ``MlpPolicy`` builds it (hidden layers with ``activation``, then one output), its
    layers named as a checkpoint's ``critic`` ``state_dict`` names them (``layers.<i>``)."""

    def __init__(self, size: int, hidden: Sequence[int], activation: str) -> None:
        super().__init__()
        dims = [size, *hidden, 1]
        self.layers = torch.nn.ModuleList(torch.nn.Linear(a, b) for a, b in zip(dims[:-1], dims[1:]))
        self.activation = {"tanh": torch.tanh, "relu": torch.relu}[activation]

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for layer in self.layers[:-1]:
            x = self.activation(layer(x))
        return self.layers[-1](x)[:, 0]


@dataclass
class FitReport:
    """How a fit went, on the held-out games: ``loss`` (mean squared error) against ``baseline`` (that of the fit
    rows' mean reward), ``explained_variance`` (1 - Var(reward - value) / Var(reward)), ``calibration`` (by decile
    of the predicted value: its range, the mean prediction, the mean reward, the rows), ``initial_loss`` (before
    the first epoch), the epochs run and the best one, and the rows and games of each side."""

    target: str
    loss: float
    baseline: float
    explained_variance: float
    initial_loss: float
    calibration: list[dict[str, float]]
    epochs: int
    best_epoch: int
    rows: int
    held_out_rows: int
    games: int
    held_out_games: int
    seconds: float
    curve: list[float] = field(default_factory=list)  # the held-out loss after each epoch

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def lines(self) -> list[str]:
        out = [
            f"held-out loss (MSE) {self.loss:.4f}, predicting the mean {self.baseline:.4f}, before fitting "
            f"{self.initial_loss:.4f}; explained variance {self.explained_variance:.3f}",
            f"{self.rows:,} rows of {self.games:,} games fitted, {self.held_out_rows:,} rows of "
            f"{self.held_out_games:,} games held out; best epoch {self.best_epoch} of {self.epochs}",
            f"calibration ({self.target}), by decile of the predicted value:",
            "  decile  predicted range     mean predicted  mean reward   rows",
        ]
        for i, c in enumerate(self.calibration):
            out.append(f"  {i + 1:>6}  [{c['low']:+.3f}, {c['high']:+.3f}]  {c['predicted']:>+14.3f}  "
                       f"{c['reward']:>+11.3f}  {int(c['rows']):>5}")  # fmt: skip
        return out


@dataclass
class Fitted:
    """A fitted critic: the checkpoint's ``critic`` entry (``hidden``, ``activation``, ``state_dict``), the network
    itself, and the report."""

    entry: dict[str, Any]
    net: CriticNet
    report: FitReport


def split_games(games: np.ndarray, seed: int, share: float = HELD_OUT) -> tuple[np.ndarray, np.ndarray]:
    """Row indices (fit, held out): ``share`` of the distinct games of ``games`` (at least one) held out whole,
    drawn from ``seed``."""
    ids = np.unique(games)
    if len(ids) < 2:
        raise ValueError(f"fit: at least 2 games are needed (one is held out), got {len(ids)}")
    held = np.random.default_rng(seed).permutation(ids)[: max(1, int(round(share * len(ids))))]
    out = np.isin(games, held)
    return np.flatnonzero(~out), np.flatnonzero(out)


def fit(
    rows: GameRows,
    target: str = "win_loss",
    hidden: Sequence[int] = HIDDEN,
    activation: str = "tanh",
    seed: int = 0,
    epochs: int = MAX_EPOCHS,
    patience: int = PATIENCE,
    batch_size: int = BATCH,
    learning_rate: float = LEARNING_RATE,
    values: np.ndarray | None = None,
    say: Callable[[str], None] | None = None,
) -> Fitted:
    """A critic fitted to ``rows``: Adam on the squared error to ``target`` (or to ``values``, (N,), a target of
    one's own), minibatches of ``batch_size``, at most ``epochs`` epochs, stopped after ``patience`` epochs
    without a better held-out loss; the best epoch's weights. ``say`` hears one line per epoch."""
    if activation not in ACTIVATIONS:
        raise ValueError(f"activation: expected one of {', '.join(ACTIVATIONS)}, got {activation!r}")
    if not hidden or any(isinstance(h, bool) or not isinstance(h, int) or h < 1 for h in hidden):
        raise ValueError(f"hidden: expected positive layer sizes, got {list(hidden)!r}")
    for name, value in (("epochs", epochs), ("patience", patience), ("batch_size", batch_size)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ValueError(f"{name}: expected a positive integer, got {value!r}")
    if len(rows) == 0:
        raise ValueError("no games: nothing to fit")
    y_all = np.asarray(rows.target(target) if values is None else values, dtype=np.float32)
    if y_all.shape != (len(rows),):
        raise ValueError(f"values: expected one per row ({len(rows)}), got shape {y_all.shape}")
    start = time.monotonic()
    layout = observation_layout(**rows.env_options)
    if rows.obs.shape[1] != layout.size:
        raise ValueError(f"the games' observations have {rows.obs.shape[1]} features, this variant {layout.size}")
    torch.manual_seed(seed)
    rng = np.random.default_rng(seed)
    train, held = split_games(rows.game, seed)
    scale = np.asarray(layout.scale, dtype=np.float32)
    x = torch.as_tensor(rows.obs.astype(np.float32) / scale)
    y = torch.as_tensor(y_all)
    net = CriticNet(layout.size, hidden, activation)
    optimizer = torch.optim.Adam(net.parameters(), lr=learning_rate)
    held_t = torch.as_tensor(held)

    def held_loss() -> float:
        with torch.no_grad():
            return float(((_predict(net, x[held_t]) - y[held_t]) ** 2).mean())

    initial = best = held_loss()
    best_state = {k: v.clone() for k, v in net.state_dict().items()}
    best_epoch, curve, run = 0, [], 0
    for epoch in range(1, epochs + 1):
        run = epoch
        net.train()
        order = train[rng.permutation(len(train))]
        for lo in range(0, len(order), batch_size):
            idx = torch.as_tensor(order[lo : lo + batch_size])
            loss = ((net(x[idx]) - y[idx]) ** 2).mean()
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        net.eval()
        now = held_loss()
        curve.append(now)
        if say is not None:
            say(f"  epoch {epoch}: held-out loss {now:.4f}")
        if now < best:
            best, best_epoch = now, epoch
            best_state = {k: v.clone() for k, v in net.state_dict().items()}
        elif epoch - best_epoch >= patience:
            break
    net.load_state_dict(best_state)
    with torch.no_grad():
        predicted = _predict(net, x[held_t]).numpy()
    truth = y_all[held]
    baseline = float(((truth - y_all[train].mean()) ** 2).mean())
    report = FitReport(
        target=target if values is None else "values",
        loss=float(((predicted - truth) ** 2).mean()),
        baseline=baseline,
        explained_variance=explained_variance(predicted, truth),
        initial_loss=initial,
        calibration=calibration(predicted, truth),
        epochs=run,
        best_epoch=best_epoch,
        rows=len(train),
        held_out_rows=len(held),
        games=len(np.unique(rows.game[train])),
        held_out_games=len(np.unique(rows.game[held])),
        seconds=time.monotonic() - start,
        curve=curve,
    )
    return Fitted(critic_entry(net, hidden, activation), net, report)


def _predict(net: CriticNet, x: torch.Tensor, chunk: int = 65536) -> torch.Tensor:
    return torch.cat([net(x[i : i + chunk]) for i in range(0, len(x), chunk)]) if len(x) else torch.zeros(0)


def explained_variance(predicted: np.ndarray, truth: np.ndarray) -> float:
    """1 - Var(truth - predicted) / Var(truth) (NaN where the truth does not vary)."""
    var = float(np.var(truth))
    return float("nan") if var == 0 else 1.0 - float(np.var(truth - predicted)) / var


def calibration(predicted: np.ndarray, truth: np.ndarray, bins: int = DECILES) -> list[dict[str, float]]:
    """By quantile bin of ``predicted`` (deciles): the range of predictions, the mean prediction, the mean of
    ``truth``, the rows."""
    order = np.argsort(predicted, kind="stable")
    out = []
    for part in np.array_split(order, bins):
        if len(part):
            p = predicted[part]
            out.append({"low": float(p.min()), "high": float(p.max()), "predicted": float(p.mean()),
                        "reward": float(truth[part].mean()), "rows": float(len(part))})  # fmt: skip
    return out


def critic_entry(net: CriticNet, hidden: Sequence[int], activation: str) -> dict[str, Any]:
    """A checkpoint's ``critic`` entry of ``net``."""
    state = {k: v.detach().cpu().clone() for k, v in net.state_dict().items()}
    return {"hidden": [int(h) for h in hidden], "activation": activation, "state_dict": state}


# --- attaching ---------------------------------------------------------------------------------------------------


def fit_info(rows: GameRows, report: FitReport, seed: int) -> dict[str, Any]:
    """What a fitted critic's file says of its fit (``critic_fit``)."""
    return {
        "agents": list(rows.agents),
        "games": int(rows.games),
        "rows": int(len(rows)),
        "seed": int(seed),
        "gamma": 1.0,
        "report": report.to_dict(),
        "saved_at": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
    }


def check_policy(checkpoint: Mapping[str, Any], env_options: Mapping[str, Any], path: str) -> None:
    """``ValueError`` in one line where the policy at ``path`` cannot take a critic fitted on games of
    ``env_options``: another variant, or a token-mode policy (whose critic reads the bid under construction)."""
    check_compatible(checkpoint, env_options, path)
    if action_mode(checkpoint) != "bid":
        raise ValueError(f"{path}: a token-mode policy's critic reads the bid under construction; fit-critic fits "
                         "critics of the bid mode")  # fmt: skip


def attach(path: str, entry: Mapping[str, Any], info: Mapping[str, Any], env_options: Mapping[str, Any]
           ) -> dict[str, Any]:  # fmt: skip
    """A copy of the policy checkpoint at ``path`` with ``entry`` as its critic and ``info`` as its ``critic_fit``;
    everything else, the actor first, as it was."""
    checkpoint = read_checkpoint(path)
    check_policy(checkpoint, env_options, path)
    out = dict(checkpoint)
    out["policy"] = {**checkpoint["policy"], "critic": dict(entry)}
    out["critic_fit"] = dict(info)
    return out


def critic_file(entry: Mapping[str, Any], info: Mapping[str, Any], env_options: Mapping[str, Any], target: str
                ) -> dict[str, Any]:  # fmt: skip
    """A critic file (``format`` ``revolution-critic``) holding ``entry`` for games of ``env_options``, its
    ``env_options["reward"]`` the target it was fitted to."""
    return {
        "format": CRITIC_FORMAT,
        "format_version": FORMAT_VERSION,
        **env_metadata({**env_options, "reward": target}),
        "critic": dict(entry),
        "critic_fit": dict(info),
    }
