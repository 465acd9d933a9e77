"""One reading of ``opponents`` for both learner environments (``revolution_env.arena.opponents``): the same forms
accepted, the same errors, the same default, and the league protocol."""

from __future__ import annotations

import numpy as np
import pytest

import revolution_env
from revolution_env.agents.base import RandomAgent
from revolution_env.arena.opponents import DEFAULT_OPPONENT, Opponents


@pytest.mark.parametrize(
    ("opponents", "message"),
    [
        ("nosuch", "opponents: unknown agent spec 'nosuch'"),
        (["value"], "opponents: expected 2 opponent(s), one per other seat of 3 players, got 1"),
        (3, "opponents: expected an agent spec, an Agent, a list with one per other seat, or an object with"),
        (
            [3, "value"],
            "opponents: expected an agent spec (a name, a checkpoint path, mix:SPEC@W,... or search:PATH) or an Agent",
        ),
    ],
)
def test_both_learner_envs_refuse_bad_opponents_with_the_same_message(opponents, message):
    errors = []
    for make in (lambda: revolution_env.gym_env(3, opponents), lambda: revolution_env.vector_env(2, 3, opponents)):
        with pytest.raises(ValueError) as caught:
            make()
        errors.append(str(caught.value))
    assert errors[0] == errors[1] and errors[0].startswith(message)


def test_the_default_opponent_is_the_strongest_heuristic_in_every_other_seat():
    assert DEFAULT_OPPONENT == "value"
    env = revolution_env.gym_env(players=3, seat=0)
    env.reset(seed=0)
    assert [name for name, _ in env.opponents.values()] == ["value", "value"]
    venv = revolution_env.vector_env(2, players=3, seat=0)
    venv.reset(seed=0)
    assert {venv.opponent_names()[i] for i in venv.opponent_of[:, 1:].ravel()} == {"value"}


def test_a_spec_in_several_seats_is_one_agent_only_where_shared():
    apart = Opponents("area", 3, {})
    assert apart.fixed[0][1] is not apart.fixed[1][1]  # gym_env reseeds each seat's agent every game
    together = Opponents(["area", "area"], 3, {}, shared=True)
    assert together.fixed[0][1] is together.fixed[1][1]  # the vector env asks it for all its games at once


def test_a_league_may_answer_a_pair_a_spec_or_an_agent():
    rand = RandomAgent(players=4)
    answers = [("lg", rand), "area", rand]

    class League:
        def sample(self, rng, slot):
            return answers[slot]

    opponents = Opponents(League(), 4, {})
    rng = np.random.default_rng(0)
    picks = [opponents.sample(rng, slot) for slot in range(3)]
    assert [name for name, _ in picks] == ["lg", "area", "random"]
    assert picks[0][1] is rand and picks[2][1] is rand and picks[1][1].name == "area"


def test_gym_env_takes_a_league_that_answers_specs_as_the_vector_env_does():
    class League:
        def sample(self, rng, slot):
            return "random"

    env = revolution_env.gym_env(players=2, opponents=League())
    env.reset(seed=0)
    assert list(env.opponents.values())[0][0] == "random"
