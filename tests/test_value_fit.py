"""Value fitting from games (training/value_fit.py, ``revolution fit-critic``): the games recorded are GameRunner's,
one row per seat per bid decision with the environment's final rewards; the fit learns a known function; a critic
attached to a checkpoint leaves its actor as it was and loads through ``PolicyAgent.value``; a critic file scores
``equilibrium:``'s states; bad input is one line."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch
from revolution_training.checkpoint import read_checkpoint, save_checkpoint
from revolution_training.cli import main
from revolution_training.value_fit import (
    CriticNet,
    GameRows,
    attach,
    calibration,
    critic_entry,
    critic_file,
    explained_variance,
    fit,
    fit_info,
    generate,
    schedule,
    split_games,
)

import revolution_env
from revolution_env.agents.checkpoint import load_critic
from revolution_env.arena.runner import GameRunner
from revolution_env.engine.game import Decision
from revolution_env.env.core import MARGIN_SCALE
from tests.test_shipped_bots import DECISIONS, decisions_digest, fixed_states

CHECKPOINTS = Path(__file__).resolve().parent.parent / "checkpoints"
TWO = str(CHECKPOINTS / "two_players.pt")
TEXT = str(Path(__file__))  # a file that is neither games nor a checkpoint


@pytest.fixture(scope="module")
def two_player_games() -> GameRows:
    tasks, names = schedule(["value", "random"], 2, 4, 3, {"players": 2})
    return generate(tasks, names, {"players": 2}, workers=1)


def runner_rows(specs: list[str], seed: int, players: int) -> tuple[np.ndarray, list[float], list[float]]:
    """What GameRunner shows each seat at its bid decisions (in the order they decide: seat by seat, round by
    round), and each seat's final rewards: the environment's ``win_loss``, and the result's margins scaled."""
    agents = [revolution_env.load_agent(s, players=players) for s in specs]
    seen, final = [], {}

    def record(env, name, observation, info, action) -> None:
        if int(info["decision"]) == Decision.BID:
            seen.append(observation["observation"])
        if any(env.rewards.values()):
            final.update(env.rewards)

    result = GameRunner(agents, {"players": players, "reward": "win_loss"}).play(seed, on_step=record)
    win_loss = [final[f"player_{s}"] for s in range(players)]
    return np.stack(seen), win_loss, [m / MARGIN_SCALE for m in result.margins()]


@pytest.mark.parametrize("players, specs", [(2, ["value", "random"]), (3, ["value", "bargain", "random"])])
def test_every_seats_bid_decisions_are_recorded_with_its_final_rewards(players, specs, two_player_games):
    if players == 2:
        tasks, _ = schedule(specs, 2, 4, 3, {"players": 2})
        rows = two_player_games
    else:
        tasks, names = schedule(specs, players, 3, 8, {"players": players})
        rows = generate(tasks, names, {"players": players}, workers=1)
    assert rows.games == len(tasks) and sorted(set(rows.game.tolist())) == list(range(len(tasks)))
    for i, task in enumerate(tasks):
        mine = rows.game == i
        obs, win_loss, margin = runner_rows(list(task.specs), task.seed, players)
        assert mine.sum() == len(obs)  # one row per seat per bid decision
        np.testing.assert_array_equal(rows.obs[mine], obs)
        seats = rows.seat[mine]
        np.testing.assert_array_equal(seats, np.tile(np.arange(players), len(obs) // players))
        np.testing.assert_array_equal(rows.win_loss[mine], np.asarray(win_loss, dtype=np.float32)[seats])
        np.testing.assert_allclose(rows.margin[mine], np.asarray(margin)[seats], rtol=1e-6)
        assert [rows.agents[a] for a in rows.agent[mine][:players]] == list(task.specs)
    assert set(rows.win_loss.tolist()) <= {-1.0, 1.0}


def test_the_games_saved_load_as_they_were(tmp_path, two_player_games):
    path = tmp_path / "games.npz"
    two_player_games.save(path)
    back = GameRows.load(path)
    for name in ("obs", "win_loss", "margin", "game", "seat", "round", "agent"):
        np.testing.assert_array_equal(getattr(back, name), getattr(two_player_games, name))
    both = GameRows.concatenate([two_player_games, back])
    assert both.games == 2 * two_player_games.games and both.game.max() == both.games - 1
    with pytest.raises(ValueError, match="not the games that fit-critic --save-games writes"):
        GameRows.load(TEXT)


def test_the_fit_learns_a_known_function_of_the_observation(two_player_games):
    rows = two_player_games
    layout = revolution_env.observation_layout(players=2)
    w = np.random.default_rng(0).normal(size=layout.size) / np.sqrt(layout.size)
    target = np.tanh(3 * (rows.obs / layout.scale) @ w).astype(np.float32)
    fitted = fit(rows, hidden=[64], seed=1, epochs=60, patience=10, batch_size=64, learning_rate=3e-3, values=target)
    report = fitted.report
    assert report.loss < 0.1 * report.initial_loss and report.loss < 0.25 * report.baseline
    assert report.explained_variance > 0.75
    assert report.held_out_games == 1 and report.games == rows.games - 1


def test_calibration_and_explained_variance():
    truth = np.repeat([-1.0, 1.0], 50)
    assert explained_variance(truth, truth) == 1.0
    assert explained_variance(np.zeros(100), truth) == 0.0
    bins = calibration(np.linspace(-1, 1, 100), truth, bins=4)
    assert [b["rows"] for b in bins] == [25] * 4
    assert [b["reward"] for b in bins] == [-1.0, -1.0, 1.0, 1.0]
    fit_rows, held = split_games(np.repeat(np.arange(20), 3), seed=0)
    assert len(held) == 6 and len(np.intersect1d(fit_rows // 3, held // 3)) == 0  # whole games held out


def small_fit(rows: GameRows, hidden=(16,)):
    return fit(rows, hidden=list(hidden), epochs=2, seed=0)


def test_a_critic_attached_to_a_checkpoint_leaves_its_actor_as_it_was(tmp_path, two_player_games):
    rows = two_player_games
    fitted = small_fit(rows, hidden=(256, 256))
    out = tmp_path / "two_players.pt"
    save_checkpoint(attach(TWO, fitted.entry, fit_info(rows, fitted.report, 0), {"players": 2}), out)
    assert decisions_digest(out) == DECISIONS["two_players.pt"]  # argmax and sampled, batched and one by one
    before, after = read_checkpoint(TWO), read_checkpoint(out)
    for key, tensor in before["policy"]["state_dict"].items():
        assert torch.equal(tensor, after["policy"]["state_dict"][key])
    assert after["critic_fit"]["games"] == rows.games and after["critic_fit"]["agents"] == ["value", "random"]
    agent = revolution_env.load_agent(str(out), players=2)
    obs = fixed_states(2)[0][:50]
    with torch.no_grad():
        expected = fitted.net(torch.as_tensor(obs / agent.scale, dtype=torch.float32)).numpy()
    np.testing.assert_allclose(agent.value(obs), expected, rtol=1e-5, atol=1e-5)
    assert agent.value(obs[0]) == pytest.approx(expected[0], abs=1e-5)


def test_a_critic_file_scores_the_states_of_an_equilibrium_search(tmp_path, two_player_games):
    rows = two_player_games
    fitted = small_fit(rows)
    path = tmp_path / "critic.pt"
    save_checkpoint(critic_file(fitted.entry, fit_info(rows, fitted.report, 0), {"players": 2}, "win_loss"), path)
    obs = rows.obs[:30]
    critic = load_critic(path, players=2)
    with torch.no_grad():
        expected = fitted.net(torch.as_tensor(obs / critic.layout.scale, dtype=torch.float32)).numpy()
    np.testing.assert_allclose(critic.value(obs), expected, rtol=1e-5, atol=1e-5)
    agent = revolution_env.load_agent(f"equilibrium:critic={path}:k=2:oracle=0:value", players=2)
    np.testing.assert_allclose(agent.searcher.value(obs), expected, rtol=1e-5, atol=1e-5)
    mask = fixed_states(2)[1][0]
    agent.reset(0)
    action = agent.act({"observation": fixed_states(2)[0][0], "action_mask": mask}, {"decision": Decision.BID})
    assert agent.last is not None and action in agent.last.actions[0]
    policy = tmp_path / "policy.pt"  # a policy checkpoint's critic serves as well
    save_checkpoint(attach(TWO, fitted.entry, fit_info(rows, fitted.report, 0), {"players": 2}), policy)
    np.testing.assert_allclose(load_critic(policy, players=2).value(obs), expected, rtol=1e-5, atol=1e-5)


def test_fit_critic_on_the_command_line(tmp_path, capsys):
    games, critic = tmp_path / "games.npz", tmp_path / "critic.pt"
    args = ["--agents", "value", "random", "--games", "3", "--epochs", "2", "--workers", "1", "--hidden", "8"]
    assert main(["fit-critic", "--players", "2", *args, "--out", str(critic), "--save-games", str(games)]) == 0
    printed = capsys.readouterr().out
    assert "explained variance" in printed and "calibration (win_loss)" in printed
    assert load_critic(critic, players=2).value(np.zeros(276)).shape == ()
    policy = tmp_path / "policy.pt"
    assert main(["fit-critic", TWO, "--games-from", str(games), "--epochs", "1", "--out", str(policy)]) == 0
    assert read_checkpoint(policy)["policy"]["critic"]["hidden"] == [256, 256]  # the policy's own sizes
    assert revolution_env.load_agent(str(policy), players=2).critic is not None


@pytest.mark.parametrize(
    "argv, message",
    [
        ([TWO, "--players", "3", "--agents", "value", "bargain", "area"], "is a 2-player policy; --players 3"),
        (["--players", "2"], "no games: give --agents"),
        (["--agents", "value", "random"], "give --players"),
        (["--players", "2", "--agents", "value"], "2-player games need at least 2 agents, got 1"),
        (["--players", "2", "--agents", "value", "nobody"], "unknown agent spec 'nobody'"),
        ([str(CHECKPOINTS / "three_players.pt"), "--agents", TWO, "value"], "trained for another environment"),
        (["--players", "2", "--games-from", TEXT], "not the games that fit-critic"),
    ],
)
def test_bad_input_is_one_line(tmp_path, capsys, argv, message):
    assert main(["fit-critic", *argv, "--out", str(tmp_path / "x.pt")]) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1
    assert not (tmp_path / "x.pt").exists()


def test_bad_fits_and_files_are_one_line(tmp_path, two_player_games):
    rows = two_player_games
    with pytest.raises(ValueError, match="games: expected a positive integer, got 0"):
        schedule(["value", "random"], 2, 0, 0, {"players": 2})
    with pytest.raises(ValueError, match="at least 2 games are needed"):
        fit(GameRows(**{k: getattr(rows, k)[rows.game == 0] for k in ("obs", "win_loss", "margin", "game", "seat",
            "round", "agent")}, agents=rows.agents, env_options=rows.env_options, games=1))  # fmt: skip
    with pytest.raises(ValueError, match="no games"):
        GameRows.concatenate([])
    fitted = small_fit(rows)
    info = fit_info(rows, fitted.report, 0)
    with pytest.raises(ValueError, match="trained for another environment"):
        attach(str(CHECKPOINTS / "three_players.pt"), fitted.entry, info, {"players": 2})
    path = tmp_path / "critic.pt"
    save_checkpoint(critic_file(fitted.entry, info, {"players": 2}, "win_loss"), path)
    torn = tmp_path / "torn.pt"
    torn.write_bytes(path.read_bytes()[:200])
    misfit = tmp_path / "misfit.pt"  # a network for the 3-player observation under a 2-player label
    size = revolution_env.observation_layout(players=3).size
    save_checkpoint(critic_file(critic_entry(CriticNet(size, [8], "tanh"), [8], "tanh"), info, {"players": 2},
                                "win_loss"), misfit)  # fmt: skip
    margin = tmp_path / "margin.pt"
    save_checkpoint(critic_file(fitted.entry, info, {"players": 2}, "margin"), margin)
    assert load_critic(margin, players=2).target == "margin" and load_critic(path, players=2).target == "win_loss"
    for load, match in [
        (lambda: load_critic(path, players=3), "trained for another environment"),
        (lambda: load_critic(torn, players=2), "torn.pt is not a Revolution! critic or policy checkpoint"),
        (lambda: load_critic(misfit, players=2), "misfit.pt: bad critic entry"),
        (lambda: revolution_env.load_agent(f"equilibrium:critic={margin}:value", players=2),
         "predicts the margin reward; the search's payoffs are win_loss"),
        (lambda: load_critic(CHECKPOINTS / "three_players.pt", players=3), "carries no critic"),
        (lambda: load_critic(TEXT, players=2), "is not a Revolution! critic"),
        (lambda: revolution_env.load_agent(f"equilibrium:critic={path}:value=margin:value", players=2),
         "critic= scores the states by that critic, value=margin by a stand-in"),
    ]:  # fmt: skip
        with pytest.raises(ValueError, match=match) as error:
            load()
        assert "\n" not in str(error.value)
