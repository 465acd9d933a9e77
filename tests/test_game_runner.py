"""The one game loop with a seat decided from outside (the browser game's person): ``GameRunner.advance`` plays the
seated agents until that seat must decide, ``apply_outside`` applies its action, and a game so played is the game
``run`` plays with an agent in that seat."""

from __future__ import annotations

import numpy as np
import pytest

from revolution_env.agents.base import RandomAgent
from revolution_env.arena.runner import OUTSIDE, GameRunner, agent_seed
from revolution_env.engine.scenario import state_dict
from revolution_env.env.encoding import IllegalActionError


@pytest.mark.parametrize("players", [2, 3])
def test_a_seat_decided_from_outside_plays_the_game_its_agent_would(players):
    seed, outside = 7, players - 1
    options = {"players": players}
    seated = GameRunner([RandomAgent(**options) for _ in range(players)], options)
    expected = seated.play(seed, record=True)

    runner = GameRunner([RandomAgent(**options) if s != outside else None for s in range(players)], options)
    assert runner.names[outside] == OUTSIDE
    person = RandomAgent(**options)
    runner.reset(seed)
    person.reset(agent_seed(seed, outside))
    steps = []
    while (name := runner.advance(on_step=lambda env, agent, *_: steps.append(agent))) is not None:
        assert name == f"player_{outside}" == runner.env.agent_selection
        env = runner.env
        runner.apply_outside(person.act(env.observe(name), env.infos[name]))
    assert runner.game.over and f"player_{outside}" not in steps and len(steps) > 0
    assert state_dict(runner.game) == state_dict(seated.game)
    assert runner.result(record=True).scenario == expected.scenario


def test_run_refuses_a_seat_without_an_agent_and_an_outside_move_is_checked():
    options = {"players": 3}
    runner = GameRunner([None, RandomAgent(**options), RandomAgent(**options)], options, names=["me", "a", "b"])
    runner.reset(1)
    with pytest.raises(RuntimeError, match="player_0 decides from outside"):
        runner.run()
    assert runner.advance() == "player_0"
    before = state_dict(runner.game)
    bad = np.zeros(len(runner.env.unwrapped.core.codec.nvec), dtype=np.int64)
    bad[0] = 1  # the choice dimension is masked during a bid
    with pytest.raises(IllegalActionError, match="decision bid"):
        runner.apply_outside(bad)
    assert state_dict(runner.game) == before
    mask = runner.env.observe("player_0")["action_mask"]
    runner.apply_outside(runner.env.action_space("player_0").sample(mask))
    with pytest.raises(RuntimeError, match="player_1 has an agent"):
        runner.apply_outside(bad)
