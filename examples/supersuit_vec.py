"""SuperSuit's vector-env conversion feeding sb3-contrib's MaskablePPO: one policy shared over every seat.

    pip install -e '.[train,interop]'
    python examples/supersuit_vec.py --smoke       # one update of a few hundred steps, to see that it runs
    python examples/supersuit_vec.py               # the default run (3 players, self-play)

The recipe is SuperSuit's (and PettingZoo's SB3 tutorial): ``pettingzoo_env_to_vec_env_v1`` makes each seat of the
Parallel env a sub-env, ``concat_vec_envs_v1(..., base_class="stable_baselines3")`` stacks several games into one SB3
``VecEnv``, so the one model plays (and learns from) every seat. SuperSuit's own ``observation_lambda_v0`` divides the
observation by the layout's ``scale`` (raw counts otherwise). MaskablePPO with the stock ``MultiInputPolicy`` takes the
masks through ``revolution_training.sb3_pettingzoo.VecActionMasks``: neither SuperSuit's SB3 wrapper nor sb3-contrib
hands the observations' masks to MaskablePPO, and SuperSuit's SB3 wrapper cannot seed the games (the module's docstring
names both defects).
Before and after training, the model plays seat after seat against ``random`` bots (``SB3ModelAgent``).

What it reaches (default arguments, 301,056 sub-env steps, 100,352 steps of the 4 games, every seat learning): a
win rate against two random bots over 200 games from 0.26 to 0.91 (chance 0.33). That run seeded torch only; the
games are seeded too since (``seed=0``), so a rerun gives a close figure. Its time is in docs/interop.md.
"""

from __future__ import annotations

import argparse
import time

import gymnasium
import numpy as np
import supersuit as ss
from revolution_training.sb3_pettingzoo import SB3ModelAgent, VecActionMasks
from sb3_contrib import MaskablePPO
from stable_baselines3.common.vec_env import VecMonitor

import revolution_env
from revolution_env.arena.runner import win_share


def scaler(players: int):
    """SuperSuit's observation_lambda_v0 arguments (and the same transform for evaluation): observation / scale."""
    scale = revolution_env.observation_layout(players=players).scale

    def observation(obs: dict, space: gymnasium.Space | None = None) -> dict:
        return {"observation": (obs["observation"] / scale).astype(np.float32), "action_mask": obs["action_mask"]}

    def space(space: gymnasium.spaces.Dict) -> gymnasium.spaces.Dict:
        box = space["observation"]
        scaled = gymnasium.spaces.Box(box.low / scale, box.high / scale, box.shape, np.float32)
        return gymnasium.spaces.Dict({"observation": scaled, "action_mask": space["action_mask"]})

    return observation, space


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--smoke", action="store_true", help="one update of a few hundred steps, 4 games (CI)")
    parser.add_argument("--players", type=int, default=3)
    parser.add_argument("--games", type=int, default=4, help="games played side by side (sub-envs: games x seats)")
    parser.add_argument("--steps", type=int, default=300_000, help="sub-env steps (each seat's step counts)")
    parser.add_argument("--eval-games", type=int, default=200)
    args = parser.parse_args()
    if args.players not in (2, 3, 4) or args.games < 1 or args.steps < 1 or args.eval_games < 1:
        parser.error("--players is 2, 3 or 4; --games, --steps and --eval-games are positive")
    steps, eval_games = (1, 4) if args.smoke else (args.steps, args.eval_games)  # smoke: one rollout, one update

    observation, space = scaler(args.players)
    env = ss.observation_lambda_v0(revolution_env.parallel_env(players=args.players, illegal="raise"), observation,
                                   space)  # fmt: skip
    venv = ss.pettingzoo_env_to_vec_env_v1(env)
    venv = ss.concat_vec_envs_v1(venv, args.games, num_cpus=0, base_class="stable_baselines3")
    venv = VecActionMasks(VecMonitor(venv))
    n_steps = 32 if args.smoke else 256
    model = MaskablePPO("MultiInputPolicy", venv, n_steps=n_steps, batch_size=min(256, n_steps * venv.num_envs),
                        n_epochs=1 if args.smoke else 10, ent_coef=0.01, seed=0, verbose=0)  # fmt: skip

    options = {"players": args.players}
    agent = SB3ModelAgent(model, preprocess=observation, **options)
    before = win_share(agent, options, eval_games, seed=10_000)
    start = time.time()
    model.learn(total_timesteps=steps)
    elapsed = time.time() - start
    after = win_share(agent, options, eval_games, seed=10_000)
    print(f"{model.num_timesteps:,} sub-env steps ({model.num_timesteps // args.players:,} game "
          f"steps) in {elapsed:.0f} s; win rate against {args.players - 1} random over {eval_games} games: "
          f"{before:.2f} before, {after:.2f} after (chance {1 / args.players:.2f})")  # fmt: skip


if __name__ == "__main__":
    main()
