"""Magnetic Mirror Descent (revolution_training.mmd): the KL to the magnet is exact over the legal actions of every
head, the update is MaskablePPO's when the regularisers are off, the magnet pulls the policy, and a run keeps its
magnet across a resume."""

from __future__ import annotations

import copy

import numpy as np
import pytest
import torch
from revolution_training.checkpoint import read_checkpoint
from revolution_training.config import TrainConfig, load_config, merge
from revolution_training.distributions import GroupedMaskableMultiCategorical, logits_kl
from revolution_training.mmd import MagnetPPO, kl_to_magnet
from revolution_training.train import make_vec_env, new_model, read_state, train
from sb3_contrib import MaskablePPO
from sb3_contrib.common.maskable.distributions import MaskableCategoricalDistribution
from stable_baselines3.common.save_util import load_from_zip_file
from torch.distributions import Categorical, kl_divergence

from revolution_env.interop.torch import MaskedRuns
from tests.test_training import write_config

NVEC = [3, 4, 4, 4, 2]


def random_masks(rng: np.random.Generator, batch: int, nvec: list[int]) -> torch.Tensor:
    parts = []
    for n in nvec:
        m = rng.random((batch, n)) < 0.6
        m[np.arange(batch), rng.integers(n, size=batch)] = True  # at least one legal value per head
        parts.append(m)
    return torch.as_tensor(np.concatenate(parts, 1))


def heads(flat: torch.Tensor, nvec: list[int]) -> list[torch.Tensor]:
    return list(torch.split(flat, nvec, dim=-1))


def masked(logits: torch.Tensor, mask: torch.Tensor) -> Categorical:
    return Categorical(logits=torch.where(mask, logits, torch.full_like(logits, -1e8)))


def test_the_kl_to_a_policy_magnet_is_the_sum_over_heads_of_each_heads_kl():
    rng = np.random.default_rng(0)
    logits, magnet = torch.randn(8, sum(NVEC), dtype=torch.float64), torch.randn(8, sum(NVEC), dtype=torch.float64)
    masks = random_masks(rng, 8, NVEC)
    dist = GroupedMaskableMultiCategorical(NVEC).proba_distribution(logits)
    dist.apply_masking(masks)
    expected = sum(
        kl_divergence(masked(p, m), masked(q, m))
        for p, q, m in zip(heads(logits, NVEC), heads(magnet, NVEC), heads(masks, NVEC))
    )
    assert torch.allclose(kl_to_magnet(dist, magnet), expected, atol=1e-9)
    # the fit's KL (policy iteration's anchor) from the two actors' outputs alone
    actions = torch.zeros(8, len(NVEC), dtype=torch.long)  # read by the autoregressive head only
    assert torch.allclose(logits_kl(logits, magnet, masks, actions, MaskedRuns(NVEC)), expected, atol=1e-9)


def test_the_kl_to_the_uniform_magnet_is_log_legal_minus_entropy_and_zero_for_a_forced_head():
    rng = np.random.default_rng(1)
    logits = torch.randn(6, sum(NVEC), dtype=torch.float64)
    masks = random_masks(rng, 6, NVEC)
    dist = GroupedMaskableMultiCategorical(NVEC).proba_distribution(logits)
    dist.apply_masking(masks)
    expected = sum(
        torch.log(m.sum(-1).double()) - masked(p, m).entropy() for p, m in zip(heads(logits, NVEC), heads(masks, NVEC))
    )
    assert torch.allclose(kl_to_magnet(dist, None), expected, atol=1e-9)
    forced = torch.zeros(1, sum(NVEC), dtype=torch.bool)
    forced[0, np.cumsum([0, *NVEC[:-1]])] = True  # one legal value per head: nothing to choose, nothing to pull
    dist.proba_distribution(torch.randn(1, sum(NVEC), dtype=torch.float64))
    dist.apply_masking(forced)
    assert kl_to_magnet(dist, None).item() == pytest.approx(0.0, abs=1e-12)
    assert kl_to_magnet(dist, torch.randn(1, sum(NVEC), dtype=torch.float64)).item() == pytest.approx(0.0, abs=1e-12)


def test_the_token_modes_kl_is_over_its_one_head():
    rng = np.random.default_rng(2)
    logits, magnet = torch.randn(5, 9, dtype=torch.float64), torch.randn(5, 9, dtype=torch.float64)
    masks = random_masks(rng, 5, [9])
    dist = MaskableCategoricalDistribution(9).proba_distribution(logits)
    dist.apply_masking(masks)
    assert torch.allclose(kl_to_magnet(dist, magnet), kl_divergence(masked(logits, masks), masked(magnet, masks)))
    uniform = torch.log(masks.sum(-1).double()) - masked(logits, masks).entropy()
    assert torch.allclose(kl_to_magnet(dist, None), uniform, atol=1e-9)


def rollout(tmp_path, algorithm: str, **changes):
    config = load_config(write_config(tmp_path, algorithm=algorithm, **changes))
    venv = make_vec_env(config, tmp_path / "league")
    model = new_model(config, venv)
    model._setup_learn(total_timesteps=config.n_envs * config.ppo.n_steps, callback=None)
    from stable_baselines3.common.callbacks import CallbackList

    callback = CallbackList([])
    callback.init_callback(model)
    model.collect_rollouts(model.env, callback, model.rollout_buffer, n_rollout_steps=config.ppo.n_steps)
    return config, venv, model


def test_with_the_regularisers_off_an_mmd_update_is_maskable_ppos(tmp_path):
    _, venv, ppo = rollout(tmp_path, "ppo", ppo={"n_epochs": 2})
    mmd = MagnetPPO(type(ppo.policy), ppo.env, magnet="uniform", magnet_coef=0.0, kl_coef=0.0, n_steps=ppo.n_steps,
                    batch_size=ppo.batch_size, n_epochs=ppo.n_epochs, ent_coef=ppo.ent_coef,
                    policy_kwargs=ppo.policy_kwargs, seed=0)  # fmt: skip
    mmd.policy.load_state_dict(ppo.policy.state_dict())
    mmd.policy.optimizer.load_state_dict(ppo.policy.optimizer.state_dict())
    mmd.rollout_buffer = copy.deepcopy(ppo.rollout_buffer)
    for model in (ppo, mmd):
        model.set_logger(ppo.logger)
        np.random.seed(7)  # the buffer's minibatches are drawn from NumPy's global generator
        torch.manual_seed(7)
        model.train()
    for (name, a), b in zip(ppo.policy.state_dict().items(), mmd.policy.state_dict().values()):
        assert torch.allclose(a, b, atol=1e-6), name
    venv.close()


@pytest.mark.parametrize("action_mode", ["bid", "tokens"])
def test_the_update_skips_the_actor_on_rows_with_nothing_to_decide_and_keeps_the_loss(tmp_path, action_mode):
    """Pure self-play's rollouts hold rows of seats that wait (one legal value per head): the update runs the actor
    and the magnet over the other rows only, and its values, log-probabilities, entropies, magnet KL and the
    gradients of the loss's terms are those of ``evaluate_actions`` and ``kl_to_magnet`` over every row."""
    _, venv, model = rollout(tmp_path, "mmd", selfplay={"enabled": True}, mmd={"magnet": "latest", "magnet_every": 64},
                             policy={"action_mode": action_mode}, ppo={"n_steps": 16})  # fmt: skip
    with torch.no_grad():  # a magnet apart from the policy, so that its KL is not 0
        model.policy.magnet.action_net.weight.mul_(3.0)
    model.ent_coef = 0.01  # the entropy's gradient too
    policy, params = model.policy, [p for p in model.policy.parameters() if p.requires_grad]
    waiting = 0
    for batch in model.rollout_buffer.get(64):
        actions = batch.actions.long().flatten() if action_mode == "tokens" else batch.actions
        heads = 1 if action_mode == "tokens" else len(model.action_space.nvec)
        waiting += (batch.action_masks.sum(1) == heads).float().mean().item() >= 1 / 8  # the rows apart
        values, log_prob, entropy = policy.evaluate_actions(batch.observations, actions, batch.action_masks)
        kl = kl_to_magnet(policy.action_dist, model._magnet_logits(batch.observations)).mean()
        full = (values.flatten(), log_prob, entropy, kl)
        ours = model._evaluate(batch.observations, actions, batch.action_masks)
        grads = []
        for terms in (full, ours):
            policy.optimizer.zero_grad()
            sum(t.sum() * w for t, w in zip(terms, (0.3, 1.0, 0.7, 2.0))).backward()
            grads.append([p.grad.clone() for p in params])
        for a, b in zip(full, ours):
            assert torch.allclose(a, b, atol=1e-5), (a, b)
        for a, b in zip(*grads):
            assert torch.allclose(a, b, atol=1e-5)
    assert waiting > 0  # minibatches in which the update skips the actor's rows that wait
    venv.close()


def test_the_magnet_term_pulls_the_policy_towards_the_magnet(tmp_path):
    _, venv, model = rollout(tmp_path, "mmd", mmd={"magnet": "latest", "magnet_every": 64, "magnet_coef": 5.0,
                             "kl_coef": 0.0}, ppo={"ent_coef": 0.0, "n_epochs": 4, "learning_rate": 1e-2})  # fmt: skip
    model.set_logger(__import__("stable_baselines3").common.logger.configure(None, []))
    with torch.no_grad():  # a magnet far from the policy: the action layer's logits scaled up and shuffled
        model.policy.magnet.action_net.weight.copy_(
            model.policy.action_net.weight[torch.randperm(model.policy.action_net.weight.shape[0])] * 20
        )

    def distance() -> float:
        total = 0.0
        for batch in model.rollout_buffer.get(256):
            model.policy.evaluate_actions(batch.observations, batch.actions, action_masks=batch.action_masks)
            total += kl_to_magnet(model.policy.action_dist, model._magnet_logits(batch.observations)).mean().item()
        return total

    before = distance()
    model.num_timesteps = 1  # not at a multiple of magnet_every: no refresh in this update
    model.train()
    assert distance() < 0.8 * before
    venv.close()


def test_the_latest_magnet_is_refreshed_every_magnet_every_steps(tmp_path):
    _, venv, model = rollout(tmp_path, "mmd", mmd={"magnet": "latest", "magnet_every": 128})
    model.set_logger(__import__("stable_baselines3").common.logger.configure(None, []))
    model.set_magnet()
    rollout_steps = model.n_steps * model.n_envs  # 64

    def same() -> bool:
        return torch.equal(model.policy.magnet.action_net.weight, model.policy.action_net.weight)

    model.num_timesteps = 64  # the update after steps 0-64: 128 not crossed, the magnet stays where it was
    model.train()
    assert not same()
    model.num_timesteps = 64 + rollout_steps  # crossing 128: the magnet becomes the policy after the update
    model.train()
    assert same()
    venv.close()


@pytest.mark.parametrize("magnet", ["uniform", "imitation", "latest", "checkpoint"])
def test_an_mmd_run_trains_saves_and_resumes_with_its_magnet(tmp_path, magnet):
    extra: dict = {}
    if magnet == "imitation":
        extra = {"imitation": {"teacher": "random", "steps": 64, "epochs": 1}}
    if magnet == "latest":
        extra = {"mmd": {"magnet_every": 64}}
    if magnet == "checkpoint":
        first = train(load_config(write_config(tmp_path, total_steps=64)), out=tmp_path / "first")
        magnet = str(first.out / "latest.pt")
    changes = merge({"algorithm": "mmd", "mmd": {"magnet": magnet}, "ppo": {"lr_schedule": "linear"}}, extra)
    config = load_config(write_config(tmp_path, total_steps=128, **changes))
    result = train(config, out=tmp_path / "run")
    assert result.step >= 128 and not result.interrupted
    state = read_state(tmp_path / "run")
    assert state["config"]["algorithm"] == "mmd" and state["config"]["mmd"]["magnet"] == magnet
    # a run that imitates keeps its start: the policy right after imitation, the magnet of magnet: imitation
    assert (tmp_path / "run" / "imitation.pt").exists() == (magnet == "imitation")
    if magnet == "imitation":
        start = read_checkpoint(tmp_path / "run" / "imitation.pt")["policy"]["state_dict"]
        _, params, _ = load_from_zip_file(tmp_path / "run" / state["model"], device="cpu", load_data=False)
        assert torch.equal(
            params["policy"]["magnet.action_net.weight"], start[f"layers.{len(config.policy.net_arch)}.weight"]
        )
    # resume to a longer run: the magnet comes back from the save (it is part of the policy's state)
    _, params, _ = load_from_zip_file(tmp_path / "run" / state["model"], device="cpu", load_data=False)
    saved = {k: v for k, v in params["policy"].items() if k.startswith("magnet.")}
    assert bool(saved) == (magnet != "uniform")
    resumed = train(config.replace(total_steps=192), out=tmp_path / "run", resume=True)
    assert resumed.step >= 192


def test_bad_magnets_are_one_line(tmp_path):
    with pytest.raises(ValueError, match="mmd.magnet: expected one of uniform, imitation, latest, or a policy check"):
        TrainConfig(algorithm="mmd", mmd={"magnet": str(tmp_path / "missing.pt")})
    with pytest.raises(ValueError, match="mmd.magnet: imitation needs an imitation.teacher"):
        TrainConfig(algorithm="mmd", mmd={"magnet": "imitation"})
    with pytest.raises(ValueError, match="algorithm: expected one of ppo, mmd"):
        TrainConfig(algorithm="nfsp")
    other = train(load_config(write_config(tmp_path, game={"players": 2}, total_steps=64)), out=tmp_path / "two")
    config = load_config(write_config(tmp_path, algorithm="mmd", mmd={"magnet": str(other.out / "latest.pt")}))
    with pytest.raises(ValueError, match="mmd.magnet: .*latest.pt"):
        train(config, out=tmp_path / "three")


def test_a_ppo_run_is_a_maskable_ppo(tmp_path):
    config = TrainConfig(**{k: v for k, v in load_config(write_config(tmp_path)).to_dict().items()})
    venv = make_vec_env(config, tmp_path / "league")
    assert type(new_model(config, venv)) is MaskablePPO
    venv.close()


def test_a_checkpoint_trained_to_mix_plays_sampling_unless_told_argmax(tmp_path):
    from revolution_env.agents.loading import display_name, load_agent, spec_problem

    run = train(load_config(write_config(tmp_path, total_steps=64, evaluation={"sample": True})), out=tmp_path / "mix")
    plain = train(load_config(write_config(tmp_path, total_steps=64)), out=tmp_path / "plain")
    mixing = str(run.out / "latest.pt")
    assert read_checkpoint(mixing)["policy"]["play"] == "sample"
    assert "play" not in read_checkpoint(plain.out / "latest.pt")["policy"]
    options = {"players": 3}
    assert load_agent(mixing, **options).deterministic is False
    assert load_agent(mixing + ":argmax", **options).deterministic is True
    assert load_agent(mixing + ":sample", **options).deterministic is False
    assert load_agent(str(plain.out / "latest.pt"), **options).deterministic is True
    assert spec_problem(mixing + ":argmax") is None
    assert display_name(mixing + ":argmax") == "mix/latest:argmax"
