"""Games played through the environment are games of the rules engine (docs/environment.md, docs/scenarios.md).

A random game played through the AEC or the Parallel API, exported as a scenario, replays through the
scenario runner (and the ``scenario`` command) to the same state. Rewards come only at the end: ``win_loss``
gives +1 to every winner and -1 to everyone else (D7, D13), ``margin`` the final support minus the best other
seat's, over 100; a game cut at ``max_rounds`` is truncated, not terminated, and scored (D8).
"""

from __future__ import annotations

import itertools
import json
import subprocess
import sys

import numpy as np
import pytest
from replay_files import another_seed

import revolution_env
from revolution_env.engine import export_game, run_scenario, state_dict
from revolution_env.engine.game import Decision


def _variants() -> list[dict]:
    out = []
    for players, first, bonus, refunds in itertools.product((2, 3, 4), (False, True), (False, True), (False, True)):
        if not refunds and (players == 2 or first):
            continue
        out.append(dict(players=players, first_edition=first, area_control_bonus=bonus, bid_refunds=refunds))
    return out


VARIANTS = _variants()


def _name(options: dict) -> str:
    return "-".join(f"{k}={v}" for k, v in options.items())


def play_aec(env, seed: int) -> dict[str, float]:
    """A random game through the AEC API; returns each agent's total reward. Rewards must be 0 until the end."""
    env.reset(seed=seed)
    totals = dict.fromkeys(env.possible_agents, 0.0)
    for agent in env.agent_iter():
        observation, _, termination, truncation, _ = env.last()
        if termination or truncation:
            env.step(None)
            continue
        env.step(env.action_space(agent).sample(observation["action_mask"]))
        if not env.unwrapped.game.over:
            assert all(r == 0 for r in env.rewards.values()), "a reward before the end"
            assert not any(env.terminations.values()) and not any(env.truncations.values())
        for a, r in env.rewards.items():
            totals[a] += r
    return totals


def play_parallel(env, seed: int) -> tuple[dict[str, float], dict, dict]:
    """A random game through the Parallel API; returns the rewards, terminations and truncations of the end."""
    observations, _ = env.reset(seed=seed)
    while True:
        actions = {a: env.action_space(a).sample(observations[a]["action_mask"]) for a in env.agents}
        observations, rewards, terminations, truncations, _ = env.step(actions)
        if not env.agents:
            return rewards, terminations, truncations
        assert all(r == 0 for r in rewards.values()), "a reward before the end"
        assert not any(terminations.values()) and not any(truncations.values())


def expected_rewards(game, reward: str) -> list[float]:
    final = game.final
    players = game.rules.players
    if reward == "win_loss":
        return [1.0 if seat in final["winners"] else -1.0 for seat in range(players)]
    support = final["support"]  # the puppet's included in the two-player variant
    return [(support[s] - max(v for i, v in enumerate(support) if i != s)) / 100 for s in range(players)]


def replayed(game) -> dict:
    return state_dict(run_scenario(another_seed(export_game(game))))


# --- replay -----------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("options", VARIANTS, ids=_name)
def test_an_aec_game_replays_through_the_scenario_runner(options):
    for seed in range(3):
        env = revolution_env.env(**options)
        play_aec(env, seed)
        game = env.unwrapped.game
        assert game.over
        assert replayed(game) == env.unwrapped.state_dict()


@pytest.mark.parametrize("options", VARIANTS, ids=_name)
def test_a_parallel_game_replays_through_the_scenario_runner(options):
    for seed in range(3):
        env = revolution_env.parallel_env(**options)
        play_parallel(env, seed)
        assert env.game.over
        assert replayed(env.game) == env.state_dict()


@pytest.mark.parametrize("options", [dict(players=2, first_edition=True), dict(players=3)], ids=_name)
def test_a_game_stopped_between_decisions_replays_its_full_rounds(options):
    env = revolution_env.raw_env(**options)
    env.reset(seed=4)
    round_start, mid_round = env.state_dict(), 0
    while env.game.round <= 5 and not env.game.over:
        agent = env.agent_selection
        if agent != "player_0" or env.infos[agent]["decision"] != Decision.BID:  # some decisions of the round made
            assert replayed(env.game) == round_start
            mid_round += 1
        round_now = env.game.round
        env.step(env.action_space(agent).sample(env.observe(agent)["action_mask"]))
        if env.game.round != round_now:
            round_start = env.state_dict()
    assert mid_round >= 10


def test_a_game_replays_through_the_scenario_command(tmp_path):
    env = revolution_env.env(players=3, first_edition=True)
    play_aec(env, 11)
    path = tmp_path / "game.json"
    path.write_text(json.dumps(export_game(env.unwrapped.game)))
    result = subprocess.run(
        [sys.executable, "-m", "revolution_env", "scenario", str(path)], capture_output=True, text=True, check=False
    )
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout) == env.unwrapped.state_dict()


# --- rewards ----------------------------------------------------------------------------------------------------


# Whole games, and games cut after one round (where the puppet is often not beaten yet).
GAMES = [(seed, 100) for seed in range(8)] + [(seed, 1) for seed in range(30)]


@pytest.mark.parametrize("reward", ["win_loss", "margin"])
@pytest.mark.parametrize("players", [2, 3, 4])
def test_rewards_at_the_end_of_an_aec_game(players, reward):
    winnerless = 0
    for seed, max_rounds in GAMES:
        env = revolution_env.env(players=players, reward=reward, max_rounds=max_rounds)
        totals = play_aec(env, seed)
        game = env.unwrapped.game
        expected = expected_rewards(game, reward)
        assert [totals[a] for a in env.possible_agents] == pytest.approx(expected)
        winnerless += game.final["winners"] == []
    if players == 2:
        assert winnerless > 0, "no random game where the puppet is not beaten: D13 unchecked"


@pytest.mark.parametrize("reward", ["win_loss", "margin"])
@pytest.mark.parametrize("players", [2, 3, 4])
def test_rewards_at_the_end_of_a_parallel_game(players, reward):
    for seed, max_rounds in GAMES:
        env = revolution_env.parallel_env(players=players, reward=reward, max_rounds=max_rounds)
        rewards, terminations, truncations = play_parallel(env, seed)
        assert [rewards[a] for a in env.possible_agents] == pytest.approx(expected_rewards(env.game, reward))
        assert all(terminations.values()) != all(truncations.values())
        assert all(truncations.values()) == env.game.truncated


def test_a_two_player_game_the_puppet_wins_gives_everyone_minus_one():
    for seed in range(40):
        env = revolution_env.env(players=2, max_rounds=1)
        totals = play_aec(env, seed)
        final = env.unwrapped.game.final
        if final["winners"] == []:
            assert max(final["support"][:2]) <= final["support"][2]  # D13: the puppet was not beaten
            assert totals == {"player_0": -1.0, "player_1": -1.0}
            return
    raise AssertionError("no random game where the puppet is not beaten")


def test_a_shared_win_gives_every_winner_plus_one():
    core = revolution_env.raw_env(players=3).core  # the scoring that both APIs share, on a tie (D7)
    core.reset(0)
    core.game.final = {"support": [50, 50, 20], "token_points": [0] * 3, "area_points": [0] * 3, "winners": [0, 1]}
    assert core.rewards() == [1.0, 1.0, -1.0]


def test_margin_counts_the_puppet_as_the_best_other_seat():
    core = revolution_env.raw_env(players=2, reward="margin").core
    core.reset(0)
    core.game.final = {"support": [40, 30, 90], "token_points": [0] * 3, "area_points": [0] * 3, "winners": []}
    assert core.rewards() == pytest.approx([-0.5, -0.6])


# --- truncation -------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("players", [2, 3, 4])
@pytest.mark.parametrize("max_rounds", [1, 3])
def test_a_game_cut_at_max_rounds_is_truncated_and_scored(players, max_rounds):
    env = revolution_env.env(players=players, max_rounds=max_rounds)
    env.reset(seed=2)
    for agent in env.agent_iter():
        observation, reward, termination, truncation, _ = env.last()
        if termination or truncation:
            assert truncation and not termination
            env.step(None)
            continue
        env.step(env.action_space(agent).sample(observation["action_mask"]))
        if env.unwrapped.game.over:
            assert all(env.truncations.values()) and not any(env.terminations.values())
    game = env.unwrapped.game
    assert game.truncated and game.round == max_rounds
    assert env.unwrapped.state_dict()["truncated"] is True

    par = revolution_env.parallel_env(players=players, max_rounds=max_rounds, reward="margin")
    rewards, terminations, truncations = play_parallel(par, 2)
    assert all(truncations.values()) and not any(terminations.values())
    assert set(truncations) == set(par.possible_agents)
    assert [rewards[a] for a in par.possible_agents] == pytest.approx(expected_rewards(par.game, "margin"))
    assert par.game.round == max_rounds and replayed(par.game) == par.state_dict()


def test_no_step_after_the_end_of_a_parallel_game():
    env = revolution_env.parallel_env(players=3, max_rounds=1)
    play_parallel(env, 0)
    assert env.agents == []
    with pytest.raises(RuntimeError, match="the game is over"):
        env.step({"player_0": np.zeros(len(env.action_space("player_0").nvec), dtype=np.int64)})
