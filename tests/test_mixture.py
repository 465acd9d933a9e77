"""`mix:` agents (revolution_env/agents/mixture.py): each decision by one component, drawn with the spec's weights;
bad specs are clear errors; the mixture plays wherever an agent spec goes (evaluation, the vector env, exploit)."""

from __future__ import annotations

import numpy as np
import pytest
from revolution_training.config import TrainConfig
from revolution_training.exploit import exploit_config

from revolution_env import vector_env
from revolution_env.agents.base import Agent
from revolution_env.agents.loading import display_name, is_checkpoint, load_agent
from revolution_env.agents.mixture import MixtureAgent, parse_mixture
from revolution_env.evaluation import evaluate_lineup

BOT = "checkpoints/two_players.pt"


def test_a_spec_names_its_components_and_their_weights():
    assert parse_mixture("mix:value@3,bargain") == [("value", 0.75), ("bargain", 0.25)]
    assert parse_mixture(f"mix:{BOT}:sample@0.5, random@0.5") == [(f"{BOT}:sample", 0.5), ("random", 0.5)]
    assert not is_checkpoint(f"mix:value,{BOT}")  # a mixture ending in .pt is not a checkpoint file
    agent = load_agent(f"mix:{BOT}@0.8,value@0.2", players=2)
    assert isinstance(agent, MixtureAgent) and [a.name for a in agent.agents][1] == "value"
    assert np.allclose(agent.weights, [0.8, 0.2])
    assert display_name(f"mix:{BOT}@0.8,value@0.2") == "mix:checkpoints/two_players@0.8,value@0.2"


@pytest.mark.parametrize(
    "spec, message",
    [
        ("mix:", "empty component"),
        ("mix:value,,area", "empty component"),
        ("mix:value@0", "must be a positive number"),
        ("mix:value@-1", "must be a positive number"),
        ("mix:value@nan", "must be a positive number"),
        ("mix:value@heavy", "is not a number"),
        ("mix:value@", "is not a number"),
        ("mix:mix:value", "cannot hold a mixture"),
        ("mix:@2", "empty component"),
        ("mix:value,@1", "empty component"),
        ("mix:value,nosuch", "unknown agent spec 'nosuch'"),
    ],
)
def test_a_bad_spec_is_a_clear_error(spec, message):
    with pytest.raises(ValueError, match=message):
        load_agent(spec, players=3)


def test_weights_near_the_float_limit_are_normalised():
    assert parse_mixture("mix:value@1e308,area@1e308") == [("value", 0.5), ("area", 0.5)]
    with pytest.raises(ValueError, match="positive number, got '2e308'"):  # infinite
        parse_mixture("mix:value@1,area@2e308")


def test_a_training_config_and_the_web_front_end_take_mixtures_and_name_a_bad_component():
    from revolution_env.frontends.web.cli import check_agents

    config = TrainConfig(game={"players": 3}, league={"heuristics": ["mix:value,area@2"]})
    assert config.league.heuristics == ["mix:value,area@2"]
    with pytest.raises(ValueError, match="heuristics: .*in 'mix:value,nosuch', 'nosuch' is neither a known agent"):
        TrainConfig(game={"players": 3}, league={"heuristics": ["mix:value,nosuch"]})
    with pytest.raises(ValueError, match="heuristics.*positive"):
        TrainConfig(game={"players": 3}, league={"heuristics": ["mix:value@0"]})
    check_agents(["mix:value,random", BOT])
    with pytest.raises(ValueError, match="--agents: in 'mix:value,nosuch', 'nosuch' is neither"):
        check_agents(["mix:value,nosuch"])


def test_reports_name_a_mixture_by_its_components():

    assert display_name(f"mix:value,{BOT}:sample@2", folder=False) == "mix:value,two_players:sample@2"
    assert display_name(f"{BOT}:sample", folder=False) == "two_players:sample"
    assert display_name(BOT, folder=False) == "two_players"


def test_an_evaluation_reloads_a_mixture_whose_checkpoint_was_rewritten(tmp_path):
    import os
    import shutil

    from revolution_env.evaluation.runner import _agent

    path = tmp_path / "bot.pt"
    shutil.copy(BOT, path)
    spec = f"mix:value,{path}"
    first = _agent("m", spec, {"players": 2})
    assert _agent("m", spec, {"players": 2}) is first  # loaded once
    os.utime(path, ns=(1, 1))  # the file rewritten: another version
    assert _agent("m", spec, {"players": 2}) is not first


class _Constant(Agent):
    """Always the same bid-mode action (the value ``k`` in dimension 0), whatever the mask."""

    def __init__(self, k: int, **options):
        super().__init__(**options)
        self.k = k

    def act(self, observation, info):
        return self.choice_action(self.k)


def test_each_decision_is_drawn_with_the_weights_and_made_by_its_component():
    options = {"players": 3}
    mixture = MixtureAgent([_Constant(1, **options), _Constant(2, **options)], [3, 1], **options)
    mixture.reset(5)
    n = 4000
    size = mixture.codec.size
    actions = mixture.act_batch(np.zeros((n, mixture.layout.size), np.float32), np.ones((n, size), bool),
                                np.zeros(n, np.int64))  # fmt: skip
    assert set(actions[:, 0]) == {1, 2} and not actions[:, 1:].any()
    assert abs(np.mean(actions[:, 0] == 1) - 0.75) < 0.03
    one = [int(mixture.act({}, {})[0]) for _ in range(2000)]
    assert abs(np.mean(np.equal(one, 1)) - 0.75) < 0.04
    # seeded: the same draws again, and a fork's draws are its own seed's
    mixture.reset(5)
    again = mixture.act_batch(np.zeros((n, mixture.layout.size), np.float32), np.ones((n, size), bool),
                              np.zeros(n, np.int64))  # fmt: skip
    assert np.array_equal(actions, again)
    a, b = mixture.fork(9), mixture.fork(9)
    assert [int(a.act({}, {})[0]) for _ in range(50)] == [int(b.act({}, {})[0]) for _ in range(50)]


def test_a_mixture_of_one_plays_as_its_component():
    """A deterministic policy alone in a mixture plays the same games as the policy itself (same seeds; a stochastic
    agent alone in a mixture draws from a seed derived from the mixture's, so its games differ)."""
    greedy = f"{BOT}:argmax"  # deterministic (the shipped bot samples)
    alone = evaluate_lineup([greedy, "value"], 8, seed=4, env_options={"players": 2}, workers=1)
    mixed = evaluate_lineup([f"mix:{greedy}", "value"], 8, seed=4, env_options={"players": 2}, workers=1)
    assert [(r.support, r.winners) for r in alone.results] == [(r.support, r.winners) for r in mixed.results]


def test_mixtures_play_in_evaluations_and_as_vector_env_opponents():
    ev = evaluate_lineup(["mix:value,random", "area", "mix:bargain@2,area"], 6, seed=1, workers=1)
    assert sum(s.games for s in ev.stats.values()) == 18
    env = vector_env(8, players=3, opponents=["mix:value,random", "mix:bargain,area"])
    env.reset(seed=3)
    space = env.single_action_space
    space.seed(0)
    ended = 0
    for _ in range(400):
        actions = np.stack([space.sample(m.astype(np.int8)) for m in env.action_masks()])
        _, _, terminated, truncated, _ = env.step(actions)
        ended += int(np.sum(terminated | truncated))
    assert ended > 0 and len(env.pop_finished()) == ended


def test_exploiting_a_mixture_starts_from_its_first_checkpoint():
    config = exploit_config(f"mix:value,{BOT}", None, steps=100, seed=0, eval_games=4)
    assert config.game.players == 2 and config.init_from == BOT and config.imitation.teacher is None
    assert config.league.heuristics == [f"mix:value,{BOT}"] and config.evaluation.opponents == [f"mix:value,{BOT}"]
    heuristics = exploit_config("mix:value,area", 4, steps=100, seed=0, eval_games=4)
    assert heuristics.game.players == 4 and heuristics.imitation.teacher == "mix:value,area"
    with pytest.raises(ValueError, match="trained for 2 players, not 3"):
        exploit_config(f"mix:value,{BOT}", 3, steps=100, seed=0, eval_games=4)
