"""The one-round gap (revolution_env/evaluation/round_gap.py), where the answer is known: an agent that always plays
one bid is outbid by a single-token move, so its gap is large; the agent's own draws are in the pool, so the gap is
never negative; the pool holds the sources it says, distinct."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from blotto import characters_won

from revolution_env.agents.base import Agent, RandomAgent
from revolution_env.evaluation.mixing import collect_bid_states
from revolution_env.evaluation.round_gap import SOURCES, one_round_gap

CHECKPOINTS = Path(__file__).resolve().parent.parent / "checkpoints"


class OneBid(Agent):
    """Always the same bid: every token on its first legal target; the first legal choice elsewhere."""

    name = "one-bid"

    def act(self, observation, info):
        mask = np.asarray(observation["action_mask"])
        C, K, T = self.codec.C, self.codec.K, self.codec.T
        action = np.zeros(1 + K, dtype=np.int64)
        action[0] = np.flatnonzero(mask[:C])[0]
        tokens = mask[C:].reshape(K, T)
        for k in range(K):
            legal = np.flatnonzero(tokens[k, 1:])
            action[1 + k] = legal[0] + 1 if len(legal) else 0
        return action


@pytest.fixture(scope="module")
def states():
    return collect_bid_states(["value", "random"], games=2, seed=3, players=2)


def test_an_agent_that_always_plays_one_bid_is_outbid(states):
    """Two copies of one bid tie on every character it contests and win nothing: a bid that moves tokens elsewhere
    wins characters outright, so the pool's best gains a large share of the characters over the agent's own."""
    agent = OneBid(players=2)
    report = one_round_gap(agent, states, states_used=4, pool=24, draws=2, own=2,
                           value=characters_won(agent.layout), seed=1)  # fmt: skip
    assert report.states == 4 and report.value == "value"
    assert all(row["gap"] >= 0.1 for row in report.per_state), report.per_state
    assert report.gap >= 0.2
    assert all(row["own_worth"] <= 0 for row in report.per_state)  # its own bid wins nothing against its copy
    assert report.best_from["own"] == 0


@pytest.mark.parametrize("spec", ["random", "value", str(CHECKPOINTS / "two_players.pt:sample")])
def test_the_gap_is_never_negative_and_the_pool_is_full_and_distinct(states, spec):
    """The agent's own draws are in the pool and meet the same draws of the others: the best of the pool is at least
    their mean, at every state, whatever scores the states."""
    agent = RandomAgent(players=2) if spec == "random" else spec
    report = one_round_gap(agent, states, states_used=3, pool=16, draws=2, own=3, value="margin", seed=2)
    assert report.states == 3 and report.pool == 16
    for row in report.per_state:
        assert row["gap"] >= -1e-12, row
        assert row["best_worth"] >= row["own_worth"] - 1e-12
        assert row["pool"] == 16
        assert row["best_from"] in SOURCES
    assert sum(report.best_from.values()) == 3
    assert report.gap_ci95[0] <= report.gap <= report.gap_ci95[1]


def test_bad_settings_are_refused_in_one_line(states):
    with pytest.raises(ValueError, match="own: the agent's 9 draws must fit in the pool of 8"):
        one_round_gap("random", states, pool=8, own=9)
    with pytest.raises(ValueError, match="draws: expected an integer at least 1"):
        one_round_gap("random", states, draws=0)
    with pytest.raises(ValueError, match="no critic of its own"):
        one_round_gap("value", states, value="critic")
    with pytest.raises(ValueError, match="value: expected one of"):
        one_round_gap("value", states, value="best")
