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
    from torchrl.envs.libs.pettingzoo import PettingZooWrapper
    from torchrl.envs.utils import check_env_specs

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
    assert 1.0 in [r for group in rewards for r in group]  # someone won


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
    from training.sb3_pettingzoo import VecActionMasks

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
    from stable_baselines3.common.vec_env import DummyVecEnv

    from training.sb3_pettingzoo import VecActionMasks

    with pytest.raises(ValueError, match="action_mask"):
        VecActionMasks(DummyVecEnv([lambda: gymnasium.make("CartPole-v1")]))


def test_maskable_ppo_trains_on_the_supersuit_vec_env_and_plays_games_as_an_agent():
    """The example's recipe, small: MaskablePPO's stock MultiInputPolicy over every seat, no action outside the
    masks (illegal="raise"), then the model seated in the package's game loop by SB3ModelAgent."""
    venv = _supersuit_venv(3, games=2)
    from sb3_contrib import MaskablePPO

    from revolution_env.agents.runner import win_share
    from training.sb3_pettingzoo import SB3ModelAgent

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
