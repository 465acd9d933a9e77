"""The mixing measures of revolution_env.evaluation.mixing: a bid is the same bid whatever the order of its tokens,
the probability of a bid of the factorised head sums over the assignments of its tokens, and the tie rate counted
from draws agrees with the probability computed exactly."""

from __future__ import annotations

import itertools
from pathlib import Path

import numpy as np
import pytest

from revolution_env.agents.loading import load_agent
from revolution_env.evaluation.mixing import _assignments, bid_key, bid_log_prob, bid_mixing, collect_bid_states

CHECKPOINTS = Path(__file__).resolve().parent.parent / "checkpoints"


def test_the_probability_of_a_bid_sums_over_every_assignment_of_its_tokens():
    rng = np.random.default_rng(0)
    probs = rng.dirichlet(np.ones(4), size=4)  # four independent tokens over four targets
    totals: dict[tuple, float] = {}
    for assignment in itertools.product(range(4), repeat=4):
        key = tuple(sorted(assignment))
        totals[key] = totals.get(key, 0.0) + float(np.prod([p[a] for p, a in zip(probs, assignment)]))
    for key, expected in totals.items():
        targets = np.array(rng.permutation(key))
        assert _assignments(probs, targets) == pytest.approx(expected, rel=1e-12)
    assert sum(totals.values()) == pytest.approx(1.0)


@pytest.fixture(scope="module")
def states():
    return collect_bid_states(["value", "random"], games=2, seed=3, players=2)


def test_a_bid_is_the_same_bid_whatever_the_order_of_its_tokens(states):
    agent = load_agent(str(CHECKPOINTS / "two_players.pt") + ":sample", players=2)
    agent.reset(1)
    actions = agent.act_batch(states.observations, states.masks, np.ones(len(states), dtype=np.int64))
    codec = agent.codec
    shuffled = actions.copy()
    rng = np.random.default_rng(2)
    held = (states.masks[:, codec.C :].reshape(len(states), codec.K, codec.T)[:, :, 1:] != 0).any(2)
    for i in range(len(states)):
        for start, end in zip(codec.block[:-1], codec.block[1:]):
            dims = start + np.flatnonzero(held[i, start - 1 : end - 1])
            shuffled[i, dims] = rng.permutation(shuffled[i, dims])
    np.testing.assert_array_equal(bid_key(codec, states.masks, shuffled), bid_key(codec, states.masks, actions))
    np.testing.assert_allclose(bid_log_prob(agent, states.observations, states.masks, shuffled),
                               bid_log_prob(agent, states.observations, states.masks, actions))  # fmt: skip
    moved = actions.copy()  # one token on another target: another bid
    rows = np.flatnonzero(held[:, 0])
    force = np.flatnonzero(codec.layout.legal[:, 0])  # the targets that take Force
    moved[rows, 1] = np.where(moved[rows, 1] == force[0], force[1], force[0])
    assert (
        len(rows)
        and (bid_key(codec, states.masks, moved)[rows] != bid_key(codec, states.masks, actions)[rows]).any(1).all()
    )


def test_the_tie_rate_counted_agrees_with_the_probability_computed(states):
    spec = str(CHECKPOINTS / "two_players.pt") + ":sample"
    few = type(states)(np.repeat(states.observations[:6], 150, 0), np.repeat(states.masks[:6], 150, 0),
                       np.repeat(states.rounds[:6], 150), states.lineup, states.env_options)  # fmt: skip
    report = bid_mixing(spec, few, seed=4)
    low, high = report.tie_rate_ci95
    assert low <= report.tie_probability <= high, report
    assert 0.0 < report.tie_rate < 1.0 and report.entropy > 0.0
    argmax = bid_mixing(str(CHECKPOINTS / "two_players.pt") + ":argmax", states, seed=4)
    assert argmax.tie_rate == 1.0 and argmax.entropy == 0.0
    assert sum(row["states"] for row in argmax.rounds) == len(states)
