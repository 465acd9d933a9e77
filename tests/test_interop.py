"""Other RL libraries, used as their own docs describe (docs/interop.md). Marked ``interop``; each library is
skipped when it is not installed (``pip install -e '.[interop]'``)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import revolution_env

pytestmark = pytest.mark.interop


@pytest.fixture(autouse=True)
def _quiet():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        yield


@pytest.mark.parametrize("players", [2, 3, 4])
@pytest.mark.parametrize("parallel", [True, False], ids=["parallel", "aec"])
def test_torchrl_pettingzoo_wrapper_with_masks_passes_check_env_specs_and_rolls_out(players, parallel):
    """TorchRL's PettingZooWrapper(use_mask=True): in v1 it died on the string decision in infos."""
    pytest.importorskip("torchrl")
    import torch
    from torchrl.envs.libs.pettingzoo import PettingZooWrapper
    from torchrl.envs.utils import check_env_specs

    torch.manual_seed(players)  # TorchRL draws its random actions from torch's global generator
    make = revolution_env.parallel_env if parallel else revolution_env.env
    env = PettingZooWrapper(make(players=players), use_mask=True, seed=0)
    check_env_specs(env, seed=0)
    rollout = env.rollout(3000, break_when_any_done=True)  # TorchRL's random actions, drawn within the masks
    last = rollout["next"][-1]
    assert last["done"].item()  # a whole game was played ...
    keys = list(last.keys(True, True))
    illegal = [last[k].sum().item() for k in keys if k[-1] == "illegal_action"]
    rewards = [last[k].flatten().tolist() for k in keys if k[-1] == "reward"]
    assert illegal and sum(illegal) == 0  # ... to its end, not cut short by an illegal action
    final = env._env.unwrapped.core.game.final  # the winners may be the puppet alone (2 players): every agent -1
    expected = [1.0 if seat in final["winners"] else -1.0 for seat in range(players)]
    assert sorted(r for group in rewards for r in group) == sorted(expected)


def _tianshou_game(env, rng) -> tuple[int, list[float]]:
    obs, _ = env.reset(seed=int(rng.integers(2**31)))
    steps = 0
    while True:
        assert len(obs["mask"]) == env.action_space.n  # Tianshou gives the mask as a list of bools
        obs, rewards, terminated, truncated, _ = env.step(int(rng.choice(np.flatnonzero(obs["mask"]))))
        steps += 1
        if terminated or truncated:
            return steps, list(rewards)


@pytest.mark.parametrize("players", [2, 3, 4])
def test_tianshou_pettingzoo_env_plays_whole_games_in_the_token_mode(players):
    """Tianshou's PettingZooEnv takes a Discrete action and a Discrete mask: the token mode is its path."""
    pytest.importorskip("tianshou")
    from tianshou.env import PettingZooEnv

    env = PettingZooEnv(revolution_env.env(players=players, action_mode="tokens"))
    rng = np.random.default_rng(players)
    for _ in range(2):
        steps, rewards = _tianshou_game(env, rng)
        assert steps > 20 and max(rewards) == 1.0  # a whole game, someone won (no illegal action's -1 and 0s)
        assert sorted(rewards)[0] == -1.0 and 0.0 not in rewards


def _supersuit_venv(players: int, games: int, **options):
    """SuperSuit's documented path to SB3 (pettingzoo_env_to_vec_env_v1, concat_vec_envs_v1), masks added."""
    ss = pytest.importorskip("supersuit")
    pytest.importorskip("sb3_contrib")
    from revolution_training.sb3_pettingzoo import VecActionMasks

    venv = ss.pettingzoo_env_to_vec_env_v1(revolution_env.parallel_env(players=players, illegal="raise", **options))
    return VecActionMasks(ss.concat_vec_envs_v1(venv, games, num_cpus=0, base_class="stable_baselines3"))


@pytest.mark.parametrize("players", [2, 3, 4])
@pytest.mark.parametrize("action_mode", ["bid", "tokens"])
def test_supersuit_vec_env_hands_maskable_ppo_the_masks_of_every_seat(players, action_mode):
    """Each seat is a sub-env; MaskablePPO's own mask lookup (has_attr, env_method) gets the observations' masks,
    and actions drawn within them play whole games to the end (illegal="raise": none is illegal)."""
    from sb3_contrib.common.maskable.utils import get_action_masks, is_masking_supported

    venv = _supersuit_venv(players, games=2, action_mode=action_mode)
    assert venv.num_envs == 2 * players and is_masking_supported(venv)
    obs = venv.reset()
    finished = 0
    for _ in range(3000):
        masks = get_action_masks(venv)
        assert masks.dtype == bool and np.array_equal(masks, obs["action_mask"].astype(bool))
        assert masks.shape == (venv.num_envs, obs["action_mask"].shape[1])
        obs, rewards, dones, _ = venv.step(np.stack([venv.action_space.sample(mask=m.astype(np.int8)) for m in masks]))
        dones = np.asarray(dones, dtype=bool)  # SuperSuit gives 0/1 integers
        assert np.all(rewards[dones] != 0)  # every seat of a finished game scored (won or lost)
        finished += int(dones.sum())
        if finished >= 2 * players:
            break
    assert finished == 2 * players  # two whole games, every seat of a game done at the same step


def test_vec_action_masks_refuses_observations_without_masks():
    pytest.importorskip("sb3_contrib")
    import gymnasium
    from revolution_training.sb3_pettingzoo import VecActionMasks
    from stable_baselines3.common.vec_env import DummyVecEnv

    with pytest.raises(ValueError, match="action_mask"):
        VecActionMasks(DummyVecEnv([lambda: gymnasium.make("CartPole-v1")]))


def test_maskable_ppo_trains_on_the_supersuit_vec_env_and_plays_games_as_an_agent():
    """The example's recipe, small: MaskablePPO's stock MultiInputPolicy over every seat, no action outside the
    masks (illegal="raise"), then the model seated in the package's game loop by SB3ModelAgent."""
    venv = _supersuit_venv(3, games=2)
    from revolution_training.sb3_pettingzoo import SB3ModelAgent
    from sb3_contrib import MaskablePPO

    from revolution_env.arena.runner import win_share

    model = MaskablePPO("MultiInputPolicy", venv, n_steps=32, batch_size=64, n_epochs=1, verbose=0)
    model.learn(total_timesteps=2 * 32 * venv.num_envs)
    assert model.num_timesteps == 2 * 32 * venv.num_envs
    share = win_share(SB3ModelAgent(model, players=3), {"players": 3}, games=3)
    assert 0.0 <= share <= 1.0


def test_torchrl_probabilistic_actor_with_the_packages_masked_multicategorical_plays_the_bid_mode():
    """TorchRL's ProbabilisticActor takes MaskedMultiCategorical as its distribution_class (the TorchRL example's
    actor): every sampled bid keeps to the masks (illegal="raise") through a whole game, and log-probs are finite."""
    pytest.importorskip("torchrl")
    import torch
    from tensordict.nn import TensorDictModule
    from torchrl.envs.libs.pettingzoo import PettingZooWrapper
    from torchrl.modules import ProbabilisticActor

    from revolution_env.interop.torch import MaskedMultiCategorical

    par = revolution_env.parallel_env(players=3, illegal="raise")
    nvec = par.action_space("player_0").nvec.tolist()
    env = PettingZooWrapper(par, use_mask=True, seed=0)
    n_obs = env.observation_spec["player", "observation", "observation"].shape[-1]
    torch.manual_seed(0)
    net = TensorDictModule(torch.nn.Linear(n_obs, sum(nvec)), in_keys=[("player", "observation", "observation")],
                           out_keys=[("player", "logits")])  # fmt: skip
    actor = ProbabilisticActor(net, in_keys={"logits": ("player", "logits"), "masks": ("player", "action_mask")},
                               out_keys=[("player", "action")], distribution_class=MaskedMultiCategorical,
                               distribution_kwargs={"nvec": nvec}, return_log_prob=True,
                               log_prob_key=("player", "action_log_prob"))  # fmt: skip
    with torch.no_grad():
        rollout = env.rollout(500, policy=actor, break_when_any_done=True)
    assert rollout["next", "done"][-1].all()  # a whole game, no IllegalActionError on the way
    assert torch.isfinite(rollout["player", "action_log_prob"]).all()
    assert rollout["player", "action"].shape[-2:] == (3, len(nvec))


def test_a_seed_reaches_the_games_of_the_supersuit_vec_env():
    """MaskablePPO(seed=...) calls venv.seed(), which SuperSuit's ConcatVecEnv lacks: VecActionMasks seeds the
    games through ConcatVecEnv's reset, and the games after those follow from their seeds."""
    from sb3_contrib import MaskablePPO

    def game_seeds(seed):
        venv = _supersuit_venv(2, games=3)
        MaskablePPO("MultiInputPolicy", venv, n_steps=8, batch_size=8, seed=seed)  # seeds the env: no error
        venv.reset()  # what learn() does first
        inner = venv.venv
        while hasattr(inner, "venv"):
            inner = inner.venv
        return [markov.par_env.unwrapped.core.game.seed for markov in inner.vec_envs]

    first = game_seeds(3)
    assert first == game_seeds(3) and len(set(first)) == 3 and first != game_seeds(4)


def _tianshou_random_games(players: int, episodes: int):
    """Whole games of Tianshou's masked random players, collected the way its trainers collect them."""
    pytest.importorskip("tianshou")
    from tianshou.algorithm import MARLRandomDiscreteMaskedOffPolicyAlgorithm
    from tianshou.algorithm.multiagent.marl import MultiAgentPolicy
    from tianshou.data import Collector, VectorReplayBuffer
    from tianshou.env import DummyVectorEnv, PettingZooEnv

    def make_env():
        return PettingZooEnv(revolution_env.env(players=players, action_mode="tokens"))

    env = make_env()
    policy = MultiAgentPolicy(
        {agent: MARLRandomDiscreteMaskedOffPolicyAlgorithm.Policy(env.action_space) for agent in env.agents}
    )
    envs = DummyVectorEnv([make_env for _ in range(2)])
    envs.seed(players)
    np.random.seed(players)
    buffer = VectorReplayBuffer(20_000, 2)
    Collector(policy, envs, buffer).collect(n_episode=episodes, reset_before_collect=True)
    return env, buffer


def _finished_games(buffer) -> list[np.ndarray]:
    """The buffer indices of every finished game, in order."""
    games = []
    for start, stop in zip(buffer.subbuffer_edges[:-1], buffer.subbuffer_edges[1:]):
        first = start
        for end in start + np.flatnonzero(buffer.terminated[start:stop] | buffer.truncated[start:stop]):
            games.append(np.arange(first, end + 1))
            first = end + 1
    return games


@pytest.mark.parametrize("players", [2, 3, 4])
def test_tianshou_seatwise_transitions_give_every_seat_its_final_reward_and_its_own_next_step(players):
    """The adapter's rewrite (revolution_env.interop.tianshou): in every finished game each seat's rewritten
    rewards add up to its final reward, its last step and only that one ends its episode, and every other step's
    next step is the seat's own next step in the same game. Tianshou's own per-agent view (each transition's column
    of the reward vector) gives the final reward to the seat that moved last only."""
    from revolution_env.interop.tianshou import seat_transitions, seats

    env, buffer = _tianshou_random_games(players, episodes=3)
    seat_of = seats(buffer, env.agent_idx)
    games = _finished_games(buffer)
    assert len(games) >= 3
    for game in games:
        final = buffer.rew[game[-1]]
        assert sorted(final)[-1] == 1.0 and sorted(final)[0] == -1.0
        stock_missing = 0
        for seat in range(players):
            mine = game[seat_of[game] == seat]
            view = seat_transitions(buffer, mine, seat_of, seat)
            assert view["rew"].sum() == pytest.approx(final[seat])
            assert view["terminated"].tolist() == [False] * (len(mine) - 1) + [True]
            assert not view["truncated"].any() and not view["unfinished"].any()
            assert (view["next"][:-1] == mine[1:]).all()
            stock_missing += buffer.rew[mine, seat].sum() != final[seat]
        assert stock_missing >= players - 1  # Tianshou's view: only the last mover sees its final reward


@pytest.mark.parametrize("players", [2, 3])
def test_tianshou_seatwise_ppo_gives_every_step_of_a_seat_its_final_reward_as_return(players):
    """End to end through Tianshou's PPO (one network for every seat, as in examples/tianshou_ppo.py): with
    gamma = lambda = 1 and a critic that says 0.5 everywhere, every step a seat took in a finished game has that
    seat's final reward as its return (a return that bootstrapped on the critic somewhere would be off by 0.5), and
    the buffer's done flags are as they were afterwards."""
    pytest.importorskip("tianshou")
    import torch
    from tianshou.algorithm import PPO
    from tianshou.algorithm.modelfree.reinforce import DiscreteActorPolicy
    from tianshou.algorithm.optim import AdamOptimizerFactory
    from tianshou.utils.net.common import Net

    from revolution_env.interop.tianshou import MaskedActor, ObservationCritic, SeatwiseOnPolicyAlgorithm

    env, buffer = _tianshou_random_games(players, episodes=3)
    size, n = env.observation_space["observation"].shape, int(env.action_space.n)
    critic_net = Net(state_shape=size, action_shape=1, hidden_sizes=[8])
    for parameter in critic_net.parameters():
        torch.nn.init.zeros_(parameter)
    torch.nn.init.constant_(critic_net.model.model[-1].bias, 0.5)
    ppo = PPO(
        policy=DiscreteActorPolicy(
            actor=MaskedActor(Net(state_shape=size, action_shape=n, hidden_sizes=[8])), action_space=env.action_space
        ),
        critic=ObservationCritic(critic_net),
        optim=AdamOptimizerFactory(),
        gamma=1.0,
        gae_lambda=1.0,
    )
    algorithm = SeatwiseOnPolicyAlgorithm(algorithms=[ppo] * players, env=env)
    done_before = buffer.done.copy()
    batch, indices = buffer.sample(0)
    processed = algorithm._preprocess_batch(batch, buffer, indices)
    assert (buffer.done == done_before).all()
    final_of = {int(i): buffer.rew[game[-1]] for game in _finished_games(buffer) for i in game}
    checked = 0
    for seat, agent in enumerate(env.agents):
        mine = indices[np.asarray(batch.obs.agent_id) == agent]
        returns = processed[agent].returns.numpy()
        for index, value in zip(mine, returns):
            if int(index) in final_of:
                assert value == pytest.approx(final_of[int(index)][seat])
                checked += 1
    assert checked > 100


def test_tianshou_masked_actor_keeps_every_sampled_action_within_the_mask():
    pytest.importorskip("tianshou")
    import torch
    from tianshou.algorithm.modelfree.reinforce import DiscreteActorPolicy
    from tianshou.data import Batch
    from tianshou.utils.net.common import Net

    from revolution_env.interop.tianshou import MaskedActor, ObservationCritic
    from revolution_env.interop.torch import MASKED

    env, buffer = _tianshou_random_games(3, episodes=1)
    obs = buffer[np.arange(len(buffer))].obs
    size, n = env.observation_space["observation"].shape, int(env.action_space.n)
    scale = revolution_env.observation_layout(players=3, action_mode="tokens").scale
    actor = MaskedActor(Net(state_shape=size, action_shape=n, hidden_sizes=[32]), scale=scale)
    logits, _ = actor(obs)
    mask = torch.as_tensor(np.asarray(obs.mask))
    assert (logits[~mask] == MASKED).all() and (logits[mask] > MASKED).all()
    policy = DiscreteActorPolicy(actor=actor, action_space=env.action_space)
    actions = policy(Batch(obs=obs, info=Batch())).act
    assert mask[torch.arange(len(actions)), torch.as_tensor(actions)].all()
    critic = ObservationCritic(Net(state_shape=size, action_shape=1, hidden_sizes=[32]), scale=scale)
    assert critic(obs).shape == (len(actions), 1)


def test_tianshou_seatwise_algorithm_lets_every_seat_sample_its_training_games():
    """Tianshou's trainers mark the policy they train as within a training step; SeatPolicies passes the mark on
    to each seat's policy, so a PPO with deterministic_eval samples its training games (and plays its mode only
    outside them). Tianshou's own MultiAgentPolicy keeps the mark to itself."""
    pytest.importorskip("tianshou")
    from tianshou.algorithm import PPO
    from tianshou.algorithm.modelfree.reinforce import DiscreteActorPolicy
    from tianshou.algorithm.multiagent.marl import MultiAgentOnPolicyAlgorithm
    from tianshou.algorithm.optim import AdamOptimizerFactory
    from tianshou.env import PettingZooEnv
    from tianshou.utils.net.common import Net
    from tianshou.utils.torch_utils import policy_within_training_step

    from revolution_env.interop.tianshou import MaskedActor, ObservationCritic, SeatwiseOnPolicyAlgorithm

    env = PettingZooEnv(revolution_env.env(players=3, action_mode="tokens"))
    size, n = env.observation_space["observation"].shape, int(env.action_space.n)

    def ppo():
        actor = MaskedActor(Net(state_shape=size, action_shape=n, hidden_sizes=[8]))
        return PPO(
            policy=DiscreteActorPolicy(actor=actor, action_space=env.action_space, deterministic_eval=True),
            critic=ObservationCritic(Net(state_shape=size, action_shape=1, hidden_sizes=[8])),
            optim=AdamOptimizerFactory(),
        )

    learners = [ppo(), ppo(), ppo()]
    stock = MultiAgentOnPolicyAlgorithm(algorithms=learners, env=env)
    with policy_within_training_step(stock.policy):
        assert not any(learner.policy.is_within_training_step for learner in learners)  # the upstream defect
    ours = SeatwiseOnPolicyAlgorithm(algorithms=learners, env=env)
    with policy_within_training_step(ours.policy):
        assert all(learner.policy.is_within_training_step for learner in learners)
    assert not any(learner.policy.is_within_training_step for learner in learners)
