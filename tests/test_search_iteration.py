"""Policy iteration with the equilibrium search in the loop (training/search_iteration.py)."""

from __future__ import annotations

import json
import os

import numpy as np
import pytest

pytest.importorskip("sb3_contrib")

from revolution_training.checkpoint import make_checkpoint, read_checkpoint, save_checkpoint  # noqa: E402
from revolution_training.config import TrainConfig  # noqa: E402
from revolution_training.policy import critic_layers, load_critic, policy_from_sb3  # noqa: E402
from revolution_training.search_iteration import (  # noqa: E402
    GameJob,
    IterateConfig,
    chunk_jobs,
    demonstrations,
    expected_payoffs,
    fit_policy,
    iterate_section,
    load_iterate_config,
    play_games,
    read_chunk,
    run_iterate,
)
from revolution_training.train import close_vec_env, make_vec_env, new_model  # noqa: E402

from revolution_env.engine.game import BID  # noqa: E402
from revolution_env.env import observation_layout  # noqa: E402

SEARCH = "k=2:oracle=0:iterations=50"


def tiny_config(tmp_path, **changes) -> TrainConfig:
    game = {"players": 2, "max_rounds": 5}  # short games: a small random policy would play to the round limit
    config = TrainConfig(game=game, policy={"net_arch": [16]}, n_envs=1, seed=3, out=str(tmp_path / "run"),
                         evaluation={"every": 0})  # fmt: skip
    return config.replace(**changes)


def start_checkpoint(config: TrainConfig, path, critic: bool = True) -> str:
    """A small random policy with its critic, as a training run saves it."""
    venv = make_vec_env(config, path.parent / "league")
    try:
        model = new_model(config, venv)
    finally:
        close_vec_env(venv)
    policy = policy_from_sb3(model.policy, config.policy.activation)
    if not critic:
        policy.pop("critic")
    save_checkpoint(make_checkpoint(policy, config.env_options(), config.to_dict()), path)
    return str(path)


@pytest.fixture(scope="module")
def start(tmp_path_factory):
    folder = tmp_path_factory.mktemp("start")
    config = tiny_config(folder)
    return config, start_checkpoint(config, folder / "start.pt")


def test_expected_payoffs_contract_every_seat_with_its_strategy():
    rng = np.random.default_rng(0)
    U = rng.normal(size=(3, 2, 4, 3))
    x = (np.array([0.2, 0.3, 0.5]), np.array([1.0, 0.0]), np.array([0.1, 0.2, 0.3, 0.4]))
    want = np.einsum("i,j,k,ijks->s", *x, U)
    np.testing.assert_allclose(expected_payoffs(U, x), want)


def test_a_chunk_of_games_records_every_seat_at_every_bid_with_its_strategy_and_value(start, tmp_path):
    config, policy = start
    options = {k: v for k, v in config.env_options().items() if k != "reward"}
    job = GameJob(policy, SEARCH, options, (11,), str(tmp_path / "chunk.npz"))
    measured = play_games(job)
    chunk = read_chunk(job.out)
    bids = chunk["kind"] == BID
    assert measured["games"] == 1 and measured["rows"] == len(chunk["obs"])
    assert measured["seat_decisions"] == bids.sum() and bids.sum() % 2 == 0  # both seats at each bid decision
    for i in np.flatnonzero(bids):
        lo, n = chunk["first"][i], chunk["count"][i]
        p = chunk["probs"][lo : lo + n]
        assert 1 <= n <= 2 and abs(p.sum() - 1) < 1e-9 and (p >= 0).all()
        assert -1 <= chunk["value"][i] <= 1
        mask = chunk["mask"][i]
        assert mask.dtype == bool and chunk["candidates"][lo : lo + n].shape[1] > 0
    # every other decision carries the seat's final reward, the same for each of its decisions
    other = ~bids
    for s in (0, 1):
        finals = set(chunk["value"][other & (chunk["seat"] == s)].tolist())
        assert len(finals) <= 1 and finals <= {-1.0, 1.0}
    # the same seed, the same chunk
    again = GameJob(policy, SEARCH, options, (11,), str(tmp_path / "again.npz"))
    play_games(again)
    twin = read_chunk(again.out)
    for key in chunk:
        np.testing.assert_array_equal(chunk[key], twin[key])


def test_the_fit_rows_draw_bids_from_the_strategy_and_keep_the_other_choices():
    chunk = {
        "obs": np.ones((2, 3), dtype=np.float32),
        "mask": np.ones((2, 4), dtype=bool),
        "kind": np.array([int(BID), 3]),
        "seat": np.array([0, 1]),
        "game": np.array([0, 0]),
        "value": np.array([0.25, -1.0], dtype=np.float32),
        "first": np.array([0, 2]),
        "count": np.array([2, 1]),
        "candidates": np.array([[1, 1], [2, 2], [7, 0]]),
        "probs": np.array([0.0, 1.0, 1.0]),
    }
    demos = demonstrations([chunk], np.full(3, 2.0), samples=5, seed=0)
    assert len(demos) == 6
    np.testing.assert_array_equal(demos.actions[:5], np.tile([2, 2], (5, 1)))  # the pure strategy's bid, 5 times
    np.testing.assert_array_equal(demos.actions[5], [7, 0])
    np.testing.assert_allclose(demos.returns, [0.25] * 5 + [-1.0])
    np.testing.assert_allclose(demos.obs, 0.5)  # scaled as the learner sees it


def test_a_league_seat_bids_and_decides_as_its_agent_and_is_not_fitted(start, tmp_path):
    config, policy = start
    options = {k: v for k, v in config.env_options().items() if k != "reward"}
    seeds = (11, 12, 13)
    plain = GameJob(policy, SEARCH, options, seeds, str(tmp_path / "plain.npz"))
    play_games(plain)
    # a share of 0 draws nothing: a run from before the league's option plays the same games
    unused = GameJob(policy, SEARCH, options, seeds, str(tmp_path / "unused.npz"), ("value",), 0.0)
    play_games(unused)
    for key, values in read_chunk(plain.out).items():
        np.testing.assert_array_equal(values, read_chunk(unused.out)[key])
    job = GameJob(policy, SEARCH, options, seeds, str(tmp_path / "league.npz"), ("value",), 1.0)
    measured = play_games(job)
    chunk = read_chunk(job.out)
    bids = chunk["kind"] == BID
    assert measured["seat_decisions"] == bids.sum()
    for g in range(len(seeds)):  # one seat of each game is value's: only the other's rows are kept
        assert len(set(chunk["seat"][chunk["game"] == g].tolist())) == 1
    assert bids.sum() < read_chunk(plain.out)["kind"].tolist().count(int(BID))
    again = GameJob(policy, SEARCH, options, seeds, str(tmp_path / "again.npz"), ("value",), 1.0)
    play_games(again)
    for key, values in chunk.items():
        np.testing.assert_array_equal(values, read_chunk(again.out)[key])


def test_the_magnet_holds_the_fit_near_it(start, tmp_path):
    """``KL(pi || magnet)`` in the fit (MMD's anchor): the fitted policy ends nearer its magnet with a large weight
    than with a negligible one, on the fit's held-out rows."""
    config, policy = start
    options = {k: v for k, v in config.env_options().items() if k != "reward"}
    job = GameJob(policy, SEARCH, options, (11, 12), str(tmp_path / "chunk.npz"))
    play_games(job)
    demos = demonstrations([read_chunk(job.out)], observation_layout(**options).scale, samples=4, seed=0)
    kl = {}
    for coef in (1e-9, 10.0):
        iterate = IterateConfig(start=policy, epochs=4, batch_size=32, learning_rate=3e-3, magnet="previous",
                                magnet_coef=coef)  # fmt: skip
        _, score = fit_policy(config, iterate, policy, demos, tmp_path / f"fit_{coef}")
        kl[coef] = score["magnet_kl"]
    assert kl[10.0] < 0.5 * kl[1e-9]


def test_load_critic_copies_a_checkpoints_value_network_and_refuses_what_does_not_fit(start, tmp_path):
    config, policy = start
    checkpoint = read_checkpoint(policy)
    venv = make_vec_env(config, tmp_path / "league")
    try:
        model = new_model(config.replace(seed=99), venv)
    finally:
        close_vec_env(venv)
    load_critic(checkpoint["policy"], model.policy, "start")
    for i, layer in enumerate(critic_layers(model.policy)):
        want = checkpoint["policy"]["critic"]["state_dict"][f"layers.{i}.weight"].numpy()
        np.testing.assert_array_equal(layer.weight.detach().numpy(), want)
    with pytest.raises(ValueError, match="carries no critic"):
        load_critic({}, model.policy, "start")


def test_a_run_iterates_fits_resumes_and_refuses_what_it_cannot_do(start, tmp_path):
    config, policy = start
    config = config.replace(evaluation={"every": 1, "games": 4, "opponents": ["random", "self"], "sample": True})
    iterate = IterateConfig(start=policy, iterations=1, games=2, search=SEARCH, samples=2, chunk=1, epochs=1,
                            batch_size=64, magnet_coef=0.5)  # fmt: skip
    out = tmp_path / "run"
    state = run_iterate(config, iterate, out, say=lambda line: None)
    assert len(state["iterations"]) == 1 and (out / "policy_001.pt").exists() and (out / "best.pt").exists()
    entry = state["iterations"][0]
    assert entry["rows"] > 0 and set(entry["evaluation"]) == {"random", "self"} and entry["search_ms"] > 0
    assert entry["fit"]["magnet_kl"] >= 0  # anchored to the run's first policy, policy_000.pt
    new, old = read_checkpoint(out / "policy_001.pt"), read_checkpoint(policy)
    changed = [not np.array_equal(new["policy"]["state_dict"][k].numpy(), old["policy"]["state_dict"][k].numpy())
               for k in old["policy"]["state_dict"]]  # fmt: skip
    assert any(changed)  # the fit moved the actor
    assert new["policy"]["critic"] is not None and new["policy"]["play"] == "sample"  # fitted to mix: it samples
    assert set(state["start"]) == {"random", "self"}  # the start evaluated, to compare with
    with pytest.raises(ValueError, match="already holds"):
        run_iterate(config, iterate, out, say=lambda line: None)
    # a run killed in its second iteration's games, one chunk of two saved: --resume plays only the other
    saved = json.loads((out / "iterate.json").read_text())
    saved["iterate"]["iterations"] = 2
    (out / "iterate.json").write_text(json.dumps(saved))
    first = chunk_jobs(config, iterate, str(out / "policy_001.pt"), 1, out)[0]
    play_games(first)
    lines = []
    state = run_iterate(config, iterate, out, resume=True, say=lines.append)
    assert len(state["iterations"]) == 2 and (out / "policy_002.pt").exists()
    assert "1 chunk(s) of games already played: read back" in lines
    assert not any(name.startswith("games_") for name in os.listdir(out))  # the games go once fitted


def test_bad_configs_are_refused_in_one_line(start, tmp_path):
    config, policy = start
    with pytest.raises(ValueError, match="iterate: games: expected an integer at least 1"):
        iterate_section({"start": policy, "games": 0}, "cfg")
    with pytest.raises(ValueError, match="iterate: colour: unknown option"):
        iterate_section({"start": policy, "colour": 1}, "cfg")
    with pytest.raises(ValueError, match="iterate: search: .*unknown option 'q'"):
        iterate_section({"start": policy, "search": "q=1"}, "cfg")
    with pytest.raises(ValueError, match="iterate: magnet: expected one of start, previous"):
        iterate_section({"start": policy, "magnet": "uniform"}, "cfg")
    with pytest.raises(ValueError, match="iterate: magnet_coef: expected a number at least 0"):
        iterate_section({"start": policy, "magnet_coef": -1}, "cfg")
    with pytest.raises(ValueError, match="iterate: opponent_share: expected a number from 0 to 1"):
        iterate_section({"start": policy, "opponent_share": 1.5, "opponents": ["value"]}, "cfg")
    with pytest.raises(ValueError, match="with no opponents"):
        iterate_section({"start": policy, "opponent_share": 0.5}, "cfg")
    with pytest.raises(ValueError, match="iterate: opponents: .*valeu"):
        iterate_section({"start": policy, "opponents": ["valeu"]}, "cfg")
    with pytest.raises(ValueError, match="the run's own"):
        iterate_section({"start": policy, "search": "value=margin"}, "cfg")
    bare = start_checkpoint(config, tmp_path / "bare.pt", critic=False)
    with pytest.raises(ValueError, match="carries no critic"):
        run_iterate(config, IterateConfig(start=bare, iterations=1, games=1), tmp_path / "r", say=lambda line: None)
    path = tmp_path / "c.yaml"
    path.write_text("game:\n  players: 2\n")
    with pytest.raises(ValueError, match="needs an iterate: section"):
        load_iterate_config(path)
    path.write_text(f"game:\n  players: 2\niterate:\n  start: {policy}\n  games: 2\n")
    loaded, section = load_iterate_config(path)
    assert loaded.game.players == 2 and section.games == 2
    assert observation_layout(players=2).size == read_checkpoint(policy)["policy"]["obs_size"]
