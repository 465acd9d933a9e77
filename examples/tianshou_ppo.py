"""Multi-agent PPO self-play with Tianshou 2 on the token mode, through Tianshou's own ``PettingZooEnv``.

    pip install -e '.[interop]'
    python examples/tianshou_ppo.py --smoke        # one small epoch and 2 test games, to see that it runs
    python examples/tianshou_ppo.py                # the default run (3 players)

Tianshou masks Discrete actions only, so the env is ``revolution_env.env(action_mode="tokens")``: a bid is placed one
token at a time, every step with an exact Discrete mask. Every seat plays the same PPO (Tianshou's ``PPO`` and
``DiscreteActorPolicy`` on stock ``Net``s), so the network learns from every seat's steps. Two small pieces come
from the package (``revolution_env.interop.tianshou``, where the reasons are written): ``MaskedActor`` and
``ObservationCritic`` put a stock ``Net`` on the ``PettingZooEnv`` observation (Tianshou's PPO has no masks), and
``SeatwiseOnPolicyAlgorithm`` is Tianshou's ``MultiAgentOnPolicyAlgorithm`` with each seat's rewards, episode ends
and next observations taken from its own steps (Tianshou's gives the final reward to the seat that moved last
only). After each epoch the greedy policy plays ``--test-games`` games in seat 0 against Tianshou's masked random
players (``MARLRandomDiscreteMaskedOffPolicyAlgorithm``'s policy); with one winner per game the win rate is
(mean reward + 1) / 2.

What it reaches (default arguments, 307,285 env steps, every seat's): a win rate over 100 games in seat 0 against
two random players, sampling, from 0.36 before training to 0.97, 0.98, 0.99 after each epoch; greedy (the mode of
each token's distribution): 0.00, then 0.01, 0.36, 0.38. Play a token policy by sampling: its per-token mode is a
poor player. Before the adapters the same recipe lost ground against random (0.62 after one epoch, then 0.24-0.29:
the training games were played by the mode, not sampled). Its time is in docs/interop.md.
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import torch
from tianshou.algorithm import PPO, MARLRandomDiscreteMaskedOffPolicyAlgorithm
from tianshou.algorithm.modelfree.reinforce import DiscreteActorPolicy
from tianshou.algorithm.multiagent.marl import MultiAgentPolicy
from tianshou.algorithm.optim import AdamOptimizerFactory
from tianshou.data import Collector, CollectStats, VectorReplayBuffer
from tianshou.env import DummyVectorEnv
from tianshou.env.pettingzoo_env import PettingZooEnv
from tianshou.trainer import OnPolicyTrainerParams
from tianshou.utils.net.common import Net

import revolution_env
from revolution_env.interop.tianshou import MaskedActor, ObservationCritic, SeatwiseOnPolicyAlgorithm


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--players", type=int, default=3, choices=(2, 3, 4))
    parser.add_argument("--epochs", type=int, default=3, help="training epochs (--epoch-steps env steps each)")
    parser.add_argument("--epoch-steps", type=int, default=100_000)
    parser.add_argument("--games-per-update", type=int, default=16, help="whole games collected per PPO update")
    parser.add_argument("--test-games", type=int, default=100, help="games against random after each epoch")
    parser.add_argument("--envs", type=int, default=8, help="games collected side by side")
    parser.add_argument(
        "--opponents", choices=("self", "random"), default="self", help="train against itself or random players"
    )
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--smoke", action="store_true", help="one epoch of a few hundred steps, 2 test games")
    args = parser.parse_args()
    if args.smoke:
        args.epochs, args.epoch_steps, args.games_per_update, args.test_games, args.envs = 1, 300, 2, 2, 2
    if min(args.epochs, args.epoch_steps, args.games_per_update, args.test_games, args.envs) < 1:
        parser.error("--epochs, --epoch-steps, --games-per-update, --test-games and --envs must be at least 1")

    np.random.seed(args.seed)
    torch.manual_seed(args.seed)

    def make_env() -> PettingZooEnv:
        return PettingZooEnv(revolution_env.env(players=args.players, action_mode="tokens"))

    env = make_env()
    size, actions = env.observation_space["observation"].shape, int(env.action_space.n)
    scale = revolution_env.observation_layout(players=args.players, action_mode="tokens").scale
    actor = MaskedActor(Net(state_shape=size, action_shape=actions, hidden_sizes=[128, 128]), scale=scale)
    critic = ObservationCritic(Net(state_shape=size, action_shape=1, hidden_sizes=[128, 128]), scale=scale)
    ppo = PPO(
        policy=DiscreteActorPolicy(actor=actor, action_space=env.action_space, deterministic_eval=True),
        critic=critic,
        optim=AdamOptimizerFactory(lr=3e-4),
        gamma=0.995,
        gae_lambda=0.95,
        ent_coef=0.01,
        max_grad_norm=0.5,
        max_batchsize=4096,
    )
    others = [
        ppo if args.opponents == "self" else MARLRandomDiscreteMaskedOffPolicyAlgorithm(action_space=env.action_space)
        for _ in env.agents[1:]
    ]
    algorithm = SeatwiseOnPolicyAlgorithm(algorithms=[ppo, *others], env=env)

    train_envs = DummyVectorEnv([make_env for _ in range(args.envs)])
    test_envs = DummyVectorEnv([make_env for _ in range(args.envs)])
    train_envs.seed(args.seed)
    test_envs.seed(args.seed + 1)
    train_collector = Collector[CollectStats](algorithm, train_envs, VectorReplayBuffer(100_000, len(train_envs)))
    # The learner in seat 0 (greedy, or sampling from its policy), Tianshou's masked random player elsewhere.
    sampling = DiscreteActorPolicy(actor=actor, action_space=env.action_space)
    random_player = MARLRandomDiscreteMaskedOffPolicyAlgorithm.Policy(env.action_space)

    def win_rate(learner: DiscreteActorPolicy) -> float:
        against_random = MultiAgentPolicy(
            {agent: learner if seat == 0 else random_player for seat, agent in enumerate(env.agents)}
        )
        stats = Collector[CollectStats](against_random, test_envs).collect(
            n_episode=args.test_games, reset_before_collect=True
        )
        return float((np.asarray(stats.returns)[:, 0] + 1).mean() / 2)

    def win_rates() -> str:
        return f"win rate against random {win_rate(ppo.policy):.2f} greedy, {win_rate(sampling):.2f} sampling"

    print(f"before training: {win_rates()} (chance {1 / args.players:.2f})", flush=True)
    start, steps, games = time.time(), 0, 0
    for epoch in range(1, args.epochs + 1):  # each run resets the collector's counts (and its games)
        algorithm.run_training(
            OnPolicyTrainerParams(
                training_collector=train_collector,
                max_epochs=1,
                epoch_num_steps=args.epoch_steps,
                collection_step_num_env_steps=None,
                collection_step_num_episodes=args.games_per_update,
                update_step_num_repetitions=4,
                batch_size=512,
                test_in_training=False,
                show_progress=False,
            )
        )
        steps, games = steps + train_collector.collect_step, games + train_collector.collect_episode
        print(
            f"epoch {epoch}: {steps:,} steps, {games:,} games, {time.time() - start:.0f} s, {win_rates()}", flush=True
        )


if __name__ == "__main__":
    main()
