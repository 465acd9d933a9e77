"""Experiment, not shipped (docs/experiments.md): is the 2-player bot held back by not knowing which opponent it
faces? Trains two copies of the bot of stage 4 in the same league of heuristics, with the same seeds: an *oracle*
copy whose observation carries a one-hot of its opponent's name, and a *blind* copy whose extra inputs are zeros.

    .venv/bin/python experiments/oracle_opponent.py --mode oracle --steps 1500000 --out runs/oracle_2p
    .venv/bin/python experiments/oracle_opponent.py --mode blind  --steps 1500000 --out runs/blind_2p

Each writes ``<out>/evals.json`` (greedy win rates against each heuristic, seats alternated, the same seeds at
every evaluation). Not a product feature: the env's observation is fixed by the interface (docs/environment.md §4).
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import gymnasium
import numpy as np
import torch
from revolution_training.distributions import MaskableMultiDiscretePolicy
from revolution_training.league import LeagueReader
from revolution_training.policy import actor_layers
from revolution_training.vec_env import SB3VecEnv
from sb3_contrib import MaskablePPO
from stable_baselines3.common.callbacks import BaseCallback
from stable_baselines3.common.vec_env import VecMonitor

from revolution_env import vector_env
from revolution_env.agents.checkpoint import read_checkpoint

NAMES = ["value", "bargain", "area"]
LEAGUE = ["value", "value", "value", "bargain", "bargain", "area"]  # experiments/two_players_stage5.yaml's draw


class Identified(SB3VecEnv):
    """The SB3 adapter with one one-hot of the opponent's name (over NAMES) appended to every observation; zeros in
    ``blind`` mode, or where the opponent is not in NAMES."""

    def __init__(self, venv, oracle: bool, fixed: str | None = None) -> None:
        super().__init__(venv)
        low = np.concatenate([self.observation_space.low, np.zeros(len(NAMES), np.float32)])
        high = np.concatenate([self.observation_space.high, np.ones(len(NAMES), np.float32)])
        self.observation_space = gymnasium.spaces.Box(low, high, dtype=np.float32)
        self.oracle, self.fixed = oracle, fixed

    def _ids(self) -> np.ndarray:
        out = np.zeros((self.num_envs, len(NAMES)), np.float32)
        if not self.oracle:
            return out
        names = self.venv.opponent_names()
        opp = self.venv.opponent_of.max(1)  # the one opponent seat of each game (-1 in the learner's)
        for i, k in enumerate(opp.tolist()):
            name = self.fixed or names[k]
            if name in NAMES:
                out[i, NAMES.index(name)] = 1.0
        return out

    def reset(self):
        obs = super().reset()
        self._last_ids = self._ids()
        return np.concatenate([obs, self._last_ids], 1)

    def step_wait(self):
        obs, rewards, dones, infos = super().step_wait()
        for i in np.flatnonzero(dones).tolist():  # the finished game's opponent is the one in its terminal obs
            infos[i]["terminal_observation"] = np.concatenate([infos[i]["terminal_observation"], self._last_ids[i]])
        ids = self._ids()
        self._last_ids = ids
        return np.concatenate([obs, ids], 1), rewards, dones, infos


def evaluate(model: MaskablePPO, oracle: bool, games: int, seed: int) -> dict[str, float]:
    """Greedy win rate against each heuristic: ``games`` games, half in each seat, the same seeds every time."""
    rates = {}
    for name in NAMES:
        wins = 0
        for seat in (0, 1):
            n = games // 2
            env = Identified(vector_env(n, players=2, opponents=[name], seat=seat), oracle, fixed=name)
            env.seed(seed + seat)
            obs = env.reset()
            done = np.zeros(n, bool)
            while not done.all():
                action, _ = model.predict(obs, action_masks=env.action_masks(), deterministic=True)
                env.step_async(action)
                obs, _, dones, infos = env.step_wait()
                for i in np.flatnonzero(dones & ~done).tolist():
                    wins += infos[i]["won"]
                done |= dones
            env.close()
        rates[name] = wins / games
    return rates


class Evaluations(BaseCallback):
    def __init__(self, every: int, games: int, oracle: bool, out: Path) -> None:
        super().__init__()
        self.every, self.games, self.oracle, self.out = every, games, oracle, out
        self.next, self.history, self.start = every, [], time.time()

    def _on_step(self) -> bool:
        if self.num_timesteps >= self.next:
            self.next += self.every
            rates = evaluate(self.model, self.oracle, self.games, seed=1000)
            self.history.append({"step": self.num_timesteps, "wall_s": round(time.time() - self.start), **rates})
            print(self.history[-1], flush=True)
            (self.out / "evals.json").write_text(json.dumps(self.history, indent=1))
            self.model.save(self.out / "model.zip")
        return True


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mode", choices=["oracle", "blind"], required=True)
    parser.add_argument("--steps", type=int, default=1_000_000)
    # stage 4's best.pt (configs/two_players.yaml (stage league-margin); git show fd78276^:checkpoints/two_players.pt)
    parser.add_argument("--init", default="runs/two_players/4-league-margin/best.pt")
    parser.add_argument("--every", type=int, default=250_000)
    parser.add_argument("--games", type=int, default=120)
    parser.add_argument("--seed", type=int, default=61)
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    torch.set_num_threads(1)
    oracle = args.mode == "oracle"
    league = LeagueReader(None, LEAGUE, {"players": 2})
    venv = VecMonitor(Identified(vector_env(256, players=2, opponents=league), oracle))
    checkpoint = read_checkpoint(args.init)
    policy = checkpoint["policy"]
    model = MaskablePPO(
        MaskableMultiDiscretePolicy, venv, learning_rate=1e-4, n_steps=16, batch_size=1024, n_epochs=4,
        gamma=0.997, gae_lambda=0.95, clip_range=0.2, ent_coef=0.005, seed=args.seed, verbose=0,
        policy_kwargs={"net_arch": list(policy["hidden"]), "activation_fn": torch.nn.Tanh},
    )  # fmt: skip
    assert policy["activation"] == "tanh"
    weights = policy["state_dict"]
    with torch.no_grad():  # the starting policy; the extra inputs' weights start at zero, the value network fresh
        for i, layer in enumerate(actor_layers(model.policy)):
            w = weights[f"layers.{i}.weight"]
            layer.weight.zero_()
            layer.weight[:, : w.shape[1]].copy_(w)
            layer.bias.copy_(weights[f"layers.{i}.bias"])
    first = evaluate(model, oracle, args.games, seed=1000)
    history = [{"step": 0, "wall_s": 0, **first}]
    print(history[-1], flush=True)
    callback = Evaluations(args.every, args.games, oracle, out)
    callback.history = history
    model.learn(args.steps, callback=callback)
    (out / "evals.json").write_text(json.dumps(callback.history, indent=1))


if __name__ == "__main__":
    main()
