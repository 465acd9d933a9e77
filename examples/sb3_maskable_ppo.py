"""MaskablePPO (sb3-contrib) with its stock policy on the registered Gymnasium env, as sb3-contrib's docs show.

    python examples/sb3_maskable_ppo.py --smoke       # one small update and 2 games, to see that it runs
    python examples/sb3_maskable_ppo.py               # the default run: 3 players against two random opponents

``gymnasium.make("revolution_env:Revolution-v2", ...)`` gives the single-agent env; MaskablePPO takes the masks from
its ``action_masks()`` method. The only addition is dividing the observation by the layout's ``scale`` (raw counts
otherwise), with Gymnasium's own ``TransformObservation``.

What it reaches (default arguments, 100,000 steps): a win rate against two random opponents over 200 games of 0.95
(chance 0.33). sb3-contrib's stock masked distribution builds one Categorical per action dimension, 57 of them, so
this is the slow way to train (``revolution train`` uses a faster one); the run's time is in docs/interop.md.
"""

from __future__ import annotations

import argparse
import time

import gymnasium
import numpy as np
from sb3_contrib import MaskablePPO
from sb3_contrib.common.maskable.evaluation import evaluate_policy
from stable_baselines3.common.monitor import Monitor

import revolution_env


def make_env(players: int, opponents: str) -> gymnasium.Env:
    env = gymnasium.make("revolution_env:Revolution-v2", players=players, opponents=[opponents] * (players - 1))
    scale = revolution_env.observation_layout(players=players).scale
    box = env.observation_space
    space = gymnasium.spaces.Box(box.low / scale, box.high / scale, box.shape, np.float32)
    return Monitor(gymnasium.wrappers.TransformObservation(env, lambda obs: (obs / scale).astype(np.float32), space))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--smoke", action="store_true", help="one update of 128 steps, 2 games (CI)")
    parser.add_argument("--players", type=int, default=3)
    parser.add_argument("--opponents", default="random", help="random, value, bargain, area or a checkpoint")
    parser.add_argument("--steps", type=int, default=100_000)
    args = parser.parse_args()
    steps = 128 if args.smoke else args.steps
    env = make_env(args.players, args.opponents)
    size = {"n_steps": 128, "batch_size": 128, "n_epochs": 1} if args.smoke else {"n_steps": 1024, "batch_size": 64}
    model = MaskablePPO("MlpPolicy", env, seed=0, verbose=0, **size)
    start = time.time()
    model.learn(total_timesteps=steps)
    elapsed = time.time() - start
    games = 2 if args.smoke else 200
    rewards, _ = evaluate_policy(model, env, n_eval_episodes=games, return_episode_rewards=True)
    win_rate = float(np.mean(np.asarray(rewards) > 0))
    print(f"{steps:,} steps in {elapsed:.0f} s ({steps / elapsed:,.0f} steps/s); win rate against "
          f"{args.opponents} over {games} games: {win_rate:.2f}")  # fmt: skip


if __name__ == "__main__":
    main()
