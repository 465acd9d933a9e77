"""Token-mode policies (``action_mode="tokens"``): trained on the vector env one token a step, saved with their mode,
played as agents in any game (a bid built token by token inside ``act``), refused where they do not fit, and a
tiny training run in the token mode end to end (imitation, PPO, sampled evaluations)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch
from revolution_training.checkpoint import layout_hash, make_checkpoint, read_checkpoint, save_checkpoint
from revolution_training.config import TrainConfig, merge
from revolution_training.policy import policy_from_sb3
from revolution_training.vec_env import SB3VecEnv

import revolution_env
from revolution_env.agents.checkpoint import PolicyAgent, load_policy_agent
from revolution_env.agents.loading import load_agent
from revolution_env.arena.runner import GameRunner
from revolution_env.engine.game import Decision
from revolution_env.env.core import Core, EnvConfig
from revolution_env.env.tokens import TokenCodec

pytest.importorskip("sb3_contrib")
from sb3_contrib import MaskablePPO  # noqa: E402

TINY = {
    "total_steps": 512,
    "n_envs": 8,
    "save_every": 256,
    "policy": {"net_arch": [16], "action_mode": "tokens"},
    "ppo": {"n_steps": 32, "batch_size": 64, "n_epochs": 1},
    "league": {"snapshot_every": 256, "max_snapshots": 2},
    "evaluation": {"every": 256, "games": 2},
}


def token_model(players: int, seed: int = 0) -> tuple[MaskablePPO, SB3VecEnv]:
    venv = SB3VecEnv(revolution_env.vector_env(4, players=players, opponents="random", action_mode="tokens"))
    return MaskablePPO("MlpPolicy", venv, policy_kwargs={"net_arch": [16]}, seed=seed, n_steps=32), venv


def token_checkpoint(tmp_path: Path, players: int) -> Path:
    """A token-mode checkpoint with random weights of unit scale (SB3 starts its action head near zero, so that
    every token would get nearly the same logits: this one's choices depend on the bid so far)."""
    model, _ = token_model(players)
    generator = torch.Generator().manual_seed(players)
    building = revolution_env.observation_layout(players=players, action_mode="tokens").features["bid_building"]
    with torch.no_grad():
        for parameter in model.policy.parameters():
            parameter.copy_(torch.randn(parameter.shape, generator=generator))
        first = model.policy.mlp_extractor.policy_net[0].weight
        first[:, building.start :] *= 30  # and strongly on the bid so far: a later token may aim lower
    path = tmp_path / f"tokens_{players}.pt"
    save_checkpoint(make_checkpoint(policy_from_sb3(model.policy, "tanh"), {"players": players}, step=3), path)
    return path


def test_a_token_policy_is_saved_with_its_mode_and_its_own_layout_hash(tmp_path):
    path = token_checkpoint(tmp_path, 3)
    checkpoint = read_checkpoint(path)
    policy = checkpoint["policy"]
    n = TokenCodec(Core(EnvConfig.from_options({"players": 3})).codec).n
    assert policy["action_mode"] == "tokens" and policy["nvec"] == [n]
    assert "action_mode" not in checkpoint["env_options"]  # a rule option it is not
    broken_path = tmp_path / "broken.pt"

    assert checkpoint["layout_hash"] == layout_hash({"players": 3, "action_mode": "tokens"})
    assert checkpoint["layout_hash"] != layout_hash({"players": 3})
    assert isinstance(load_agent(str(path), players=3), PolicyAgent)
    # the mode and the weights must agree
    for mode, message in (("bid", "layout_hash differs"), ("moves", "action_mode is 'moves'")):
        broken = dict(checkpoint, policy={**policy, "action_mode": mode})
        torch.save(broken, broken_path)
        with pytest.raises(ValueError, match=message):
            load_policy_agent(str(broken_path), players=3)


@pytest.mark.parametrize("players", [2, 3])
def test_act_builds_the_bid_the_token_env_builds_with_the_policys_argmax(tmp_path, players):
    """The agent's bid (built inside ``act``) is the one its network builds stepping the scalar token-mode env
    token by token, taking the most likely legal token each step; its other decisions are the argmax too."""
    agent = load_policy_agent(str(token_checkpoint(tmp_path, players)), players=players)
    env = revolution_env.raw_env(players=players, action_mode="tokens")
    env.reset(seed=4)
    core = env.core
    checked = {"bid": 0, "other": 0}
    while env.agents and checked["bid"] < 12:
        name = env.agent_selection
        seat = core.seat_of[name]
        kind = core.kind(seat)
        view = core.bid_mode_view(seat)
        expected = agent.act(view, {"decision": kind})
        if kind == Decision.BID:
            counts = core.codec.bid_counts(expected, core.game.tokens[seat])
            built = []
            while True:  # this seat's whole bid, token by token, from the token env's own observations
                obs = core.observe(seat)
                logits = agent.net.logits(obs["observation"] / agent.scale)
                a = int(np.argmax(np.where(obs["action_mask"] != 0, logits, -np.inf)))
                built.append(a)
                env.step(a)
                if env.agent_selection != name or core.kind(seat) != Decision.BID:
                    break
            assert built == core.tokens.sequence(counts)
            checked["bid"] += 1
        else:
            obs = core.observe(seat)
            logits = agent.net.logits(obs["observation"] / agent.scale)
            a = int(np.argmax(np.where(obs["action_mask"] != 0, logits, -np.inf)))
            assert expected[0] == a and not expected[1:].any()
            env.step(a)
            checked["other"] += 1
    assert checked["bid"] >= 12


@pytest.mark.parametrize("players", [2, 3, 4])
def test_a_token_policy_plays_whole_games_and_in_batch_as_one_by_one(tmp_path, players):
    path = str(token_checkpoint(tmp_path, players))
    greedy = load_agent(path, players=players)
    agents = [greedy] + [load_agent(path + ":sample", players=players) for _ in range(players - 1)]
    runner = GameRunner(agents, {"players": players})  # raises on an illegal action
    for seed in range(2):
        runner.play(seed)
        assert runner.game.final is not None
    # act_batch (the vector env's opponents) equals act row by row
    venv = revolution_env.vector_env(6, players=players, opponents=[greedy] * (players - 1))
    venv.reset(seed=1)
    for _ in range(30):
        obs, masks = venv.bid_mode_view()
        batch = greedy.act_batch(obs, masks, venv._kinds)
        single = [greedy.act({"observation": o, "action_mask": m.view(np.int8)}, {"decision": Decision(int(k))})
                  for o, m, k in zip(obs, masks, venv._kinds)]  # fmt: skip
        np.testing.assert_array_equal(batch, np.stack(single))
        sampling = agents[-1]  # act_groups (a search's samples): each group as reset(seed) and act_batch alone
        got = sampling.act_groups(obs, masks, venv._kinds, [2, 4], [7, 8], [3, 1])
        for (lo, hi), seed, n, actions in zip([(0, 2), (2, 6)], [7, 8], [3, 1], got):
            sampling.reset(seed)
            group = (np.repeat(a[lo:hi], n, 0) for a in (obs, masks, venv._kinds))
            np.testing.assert_array_equal(actions, sampling.act_batch(*group))
        venv.step(np.stack([venv.single_action_space.sample(m.astype(np.int8)) for m in venv.action_masks()]))


def test_training_in_the_token_mode_end_to_end(tmp_path):
    """Imitation of a heuristic token by token, PPO on the vector env, sampled evaluations, snapshots of a
    token-mode policy as opponents, and a checkpoint that plays in the evaluation harness."""
    from revolution_training.train import train

    from revolution_env.evaluation import evaluate_lineup

    config = TrainConfig(
        **merge(
            TINY,
            {
                "game": {"players": 2},
                "imitation": {"teacher": "value", "steps": 300},
                "league": {"p_latest": 0.5, "p_past": 0.0, "p_heuristics": 0.5, "heuristics": ["random"]},
                "evaluation": {"sample": True, "opponents": ["random"]},
            },
        )
    )
    out = tmp_path / "run"
    result = train(config, out=out)
    assert result is not None
    latest = read_checkpoint(out / "latest.pt")
    assert latest["policy"]["action_mode"] == "tokens" and latest["step"] >= 512
    ev = evaluate_lineup([str(out / "latest.pt") + ":sample", "random"], games=2, seed=0, workers=1, progress=False)
    assert sum(s.games for s in ev.stats.values()) == 4


@pytest.mark.parametrize(
    "changes, message",
    [
        ({"env_backend": "subprocess"}, "policy.action_mode: tokens trains on the batched engine only"),
        ({"policy": {"action_mode": "moves"}}, "policy.action_mode: expected one of bid, tokens, got 'moves'"),
    ],
)
def test_bad_token_mode_configs(changes, message):
    from revolution_training.config import check

    with pytest.raises(ValueError, match=message):
        check(TrainConfig(**merge(merge(TINY, {"game": {"players": 3}}), changes)))


def test_init_from_refuses_a_policy_of_the_other_mode(tmp_path):
    from revolution_training.distributions import MaskableMultiDiscretePolicy
    from revolution_training.train import load_initial_weights, make_vec_env, new_model

    venv = SB3VecEnv(revolution_env.vector_env(2, players=3, opponents="random"))
    bid_model = MaskablePPO(MaskableMultiDiscretePolicy, venv, policy_kwargs={"net_arch": [16]}, n_steps=32)
    bid_policy = tmp_path / "bid.pt"
    save_checkpoint(make_checkpoint(policy_from_sb3(bid_model.policy, "tanh"), {"players": 3}), bid_policy)
    config = TrainConfig(**merge(TINY, {"game": {"players": 3}, "init_from": str(bid_policy)}))
    venv = make_vec_env(config, tmp_path / "league")
    try:
        model = new_model(config, venv)
        with pytest.raises(
            ValueError, match="a policy of the 'bid' action mode; this config trains policy.action_mode"
        ):
            load_initial_weights(model, config)
    finally:
        venv.close()


def test_search_plays_a_token_policy_its_candidates_built_token_by_token(tmp_path):
    path = str(token_checkpoint(tmp_path, 2))
    searched = load_agent(f"search:{path}", players=2)
    runner = GameRunner([searched, load_agent("value", players=2)], {"players": 2})  # raises on an illegal action
    runner.play(4)
    assert runner.game.final is not None
