"""Multi-agent DQN with Tianshou 2 on the token mode, as in Tianshou's own PettingZoo tic-tac-toe example.

    pip install -e '.[interop]'
    python examples/tianshou_dqn.py --smoke        # a few hundred steps, to see that it runs
    python examples/tianshou_dqn.py                # the default run (3 players)

Tianshou masks Discrete actions only, so the env is ``revolution_env.env(action_mode="tokens")``: a bid is placed one
token at a time, every step with an exact Discrete mask. It goes in through Tianshou's ``PettingZooEnv``; a
``MultiAgentOffPolicyAlgorithm`` seats a DQN learner (``DiscreteQLearningPolicy`` on a stock ``Net``) as
``player_0`` and Tianshou's masked random player (``MARLRandomDiscreteMaskedOffPolicyAlgorithm``) in every other
seat. The reward is the env's (+1 to every winner, -1 to the others, at the end), so the learner's win rate is
(mean reward + 1) / 2 when there is one winner.

Measured (default arguments, 2 CPU cores shared with other runs, 2026-11-24): 5 epochs, 50,000 env steps in
1,062 s; the greedy learner's win rate over 100 test games went 0.00 (before), 0.01, 0.16, 0.18, 0.25, 0.04: this
stock DQN does not learn the game at this budget. Why (read off Tianshou 2.0's ``marl.py``): the replay buffer holds
every seat's steps interleaved, and each agent's n-step target runs over the next n steps of the buffer, whoever
took them. Here a player takes about ten steps in a row (one per token), then the others take theirs, so the
learner's targets bootstrap on other seats' observations, and the final reward (+1/-1 at the end of a game of about
500 steps) reaches only the learner steps that lie within n steps of the end. Monte Carlo targets (a horizon longer
than a game, gamma 0.999, observations divided by the layout's ``scale``) did no better: win rate 0.00 after
30,000 steps (about 60 games); the collector makes about 160 env steps/s here, so the thousands of games a policy
needs to beat random (``cleanrl_ppo.py``) take hours. Tianshou's path works (masks, whole games, the learner's
rewards); learning through it is still to find.
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import torch
from tianshou.algorithm import DQN, MARLRandomDiscreteMaskedOffPolicyAlgorithm, MultiAgentOffPolicyAlgorithm
from tianshou.algorithm.modelfree.dqn import DiscreteQLearningPolicy
from tianshou.algorithm.optim import AdamOptimizerFactory
from tianshou.data import Collector, CollectStats, VectorReplayBuffer
from tianshou.env import DummyVectorEnv
from tianshou.env.pettingzoo_env import PettingZooEnv
from tianshou.trainer import OffPolicyTrainerParams
from tianshou.utils.net.common import Net

import revolution_env


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--players", type=int, default=3, choices=(2, 3, 4))
    parser.add_argument("--epochs", type=int, default=5, help="training epochs (--epoch-steps env steps each)")
    parser.add_argument("--epoch-steps", type=int, default=10_000)
    parser.add_argument("--test-games", type=int, default=100, help="games against random after each epoch")
    parser.add_argument("--envs", type=int, default=8, help="games collected side by side")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--smoke", action="store_true", help="one epoch of 300 steps, 4 test games")
    args = parser.parse_args()
    if args.smoke:
        args.epochs, args.epoch_steps, args.test_games, args.envs = 1, 300, 4, 2
    if min(args.epochs, args.epoch_steps, args.test_games, args.envs) < 1:
        parser.error("--epochs, --epoch-steps, --test-games and --envs must be at least 1")

    np.random.seed(args.seed)
    torch.manual_seed(args.seed)

    def make_env() -> PettingZooEnv:
        return PettingZooEnv(revolution_env.env(players=args.players, action_mode="tokens"))

    env = make_env()
    obs_size = env.observation_space["observation"].shape
    net = Net(state_shape=obs_size, action_shape=int(env.action_space.n), hidden_sizes=[256, 256])
    learner = DQN(
        policy=DiscreteQLearningPolicy(model=net, action_space=env.action_space, eps_training=0.1, eps_inference=0.0),
        optim=AdamOptimizerFactory(lr=1e-4),
        gamma=0.99,
        n_step_return_horizon=3,
        target_update_freq=500,
    )
    others = [MARLRandomDiscreteMaskedOffPolicyAlgorithm(action_space=env.action_space) for _ in env.agents[1:]]
    algorithm = MultiAgentOffPolicyAlgorithm(algorithms=[learner, *others], env=env)

    train_envs = DummyVectorEnv([make_env for _ in range(args.envs)])
    test_envs = DummyVectorEnv([make_env for _ in range(args.envs)])
    train_envs.seed(args.seed)
    test_envs.seed(args.seed + 1)
    train_collector = Collector[CollectStats](
        algorithm, train_envs, VectorReplayBuffer(50_000, len(train_envs)), exploration_noise=True
    )
    test_collector = Collector[CollectStats](algorithm, test_envs, exploration_noise=True)

    def win_rate() -> float:
        stats = test_collector.collect(n_episode=args.test_games, reset_before_collect=True)
        return float((np.asarray(stats.returns)[:, 0] + 1).mean() / 2)

    before = win_rate()
    print(f"before training: win rate against random {before:.2f} (chance {1 / args.players:.2f})", flush=True)
    start = time.time()
    train_collector.reset()
    train_collector.collect(n_step=64 * args.envs)
    result = algorithm.run_training(
        OffPolicyTrainerParams(
            training_collector=train_collector,
            test_collector=test_collector,
            max_epochs=args.epochs,
            epoch_num_steps=args.epoch_steps,
            collection_step_num_env_steps=args.envs * max(2, -(-10 // args.envs)),  # >= 10, a multiple of --envs
            test_step_num_episodes=args.test_games,
            batch_size=64,
            update_step_num_gradient_steps_per_sample=0.1,
            test_in_training=False,
            show_progress=False,
            multi_agent_return_reduction=lambda returns: returns[:, 0],  # the learner's seat
        )
    )
    after = win_rate()
    print(
        f"after {args.epochs} epochs ({result.timing.total_time:.0f} s, {time.time() - start:.0f} s with tests): "
        f"win rate against random {after:.2f} (before {before:.2f})"
    )


if __name__ == "__main__":
    main()
