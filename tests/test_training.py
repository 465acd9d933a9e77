"""Self-play training (training/): the config, the learner's env, the league, checkpoints, and whole runs.

Runs are tiny (a 16-unit network, a few hundred steps) so the file stays well under a minute; what they check is
the plumbing: the learner is paid its own reward for its own decisions, the league samples by its documented
scheme, checkpoints say what they were trained for and refuse anything else, a checkpoint plays legal moves in
every decision, and a run killed at any moment resumes from its last save.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
import torch
import yaml
from revolution_training.checkpoint import (
    FORMAT,
    FORMAT_VERSION,
    history,
    layout_hash,
    make_checkpoint,
    read_checkpoint,
    save_checkpoint,
)
from revolution_training.config import TrainConfig, load_config, merge, stage_configs
from revolution_training.league import League, LeagueReader, choose_opponent, read_league
from revolution_training.policy import PolicyAgent, load_policy_agent, policy_from_sb3
from revolution_training.selfplay import SelfPlayEnv, make_selfplay_env

import revolution_env
from revolution_env.agents.heuristics import ValueBot
from revolution_env.agents.loading import load_agent
from revolution_env.arena.runner import GameRunner
from revolution_env.engine.game import Decision
from revolution_env.engine.scenario import run_scenario, state_dict

ROOT = Path(__file__).resolve().parents[1]
TINY = {
    "total_steps": 256,
    "n_envs": 2,
    "save_every": 64,
    "game": {"players": 3},
    "policy": {"net_arch": [16]},
    "ppo": {"n_steps": 32, "batch_size": 32, "n_epochs": 1},
    "league": {"snapshot_every": 64, "max_snapshots": 2},
    "evaluation": {"every": 128, "games": 3},
}


def tiny(**changes) -> TrainConfig:
    """A tiny run's config, ``changes`` in a config's form (a section's keys merged into TINY's)."""
    return TrainConfig(**merge(TINY, changes))


def write_config(folder: Path, **changes) -> Path:
    path = folder / "tiny.yaml"
    path.write_text(yaml.safe_dump(merge(TINY, changes)), encoding="utf-8")
    return path


def train_cli(*args: str, **popen) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "PYTHONFAULTHANDLER": "1"}  # a crash prints its threads' stacks
    return subprocess.Popen(
        [sys.executable, "-m", "revolution_training", "train", "--no-progress", *args],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        **popen,
    )


def untrained_checkpoint(tmp_path: Path, **env_options) -> Path:
    """A policy checkpoint of a freshly initialised MaskablePPO network for these options."""
    from revolution_training.distributions import MaskableMultiDiscretePolicy
    from sb3_contrib import MaskablePPO

    env = make_selfplay_env(env_options, None, ["random"])
    model = MaskablePPO(MaskableMultiDiscretePolicy, env, policy_kwargs={"net_arch": [16]}, seed=0, n_steps=32)
    path = tmp_path / f"policy_{'_'.join(f'{k}{v}' for k, v in env_options.items())}.pt"
    save_checkpoint(make_checkpoint(policy_from_sb3(model.policy, "tanh"), env_options, step=7, wall_time=1.5), path)
    return path


# --- the config --------------------------------------------------------------------------------------------------


RECIPES = sorted((ROOT / "configs").glob("*.yaml"))  # the main job and one recipe per shipped bot
EXPERIMENTS = sorted((ROOT / "experiments").glob("*.yaml"))  # runs tried and not shipped (docs/experiments.md)


@pytest.mark.parametrize("path", RECIPES, ids=lambda p: p.stem)
def test_every_config_is_a_recipe_that_runs_from_scratch(path):
    """configs/ holds recipes only: no hand-written start (init_from), every stage a valid config, and a header
    that says the command."""
    header = path.read_text().split("\n")
    header = header[: next(i for i, line in enumerate(header) if not line.startswith("#"))]
    if "\niterate:" in path.read_text():  # policy iteration from a recipe's best.pt, that recipe in the header
        from revolution_training.search_iteration import load_iterate_config

        config, iterate = load_iterate_config(path)
        assert any(f"revolution iterate --config configs/{path.name}" in line for line in header)
        named = [re.search(r"revolution train --config configs/(\S+)", line) for line in header]
        recipe = load_config(ROOT / "configs" / next(m for m in named if m).group(1))
        assert iterate.start == f"{recipe.out}/best.pt" and recipe.game.players == config.game.players
        return
    config = load_config(path)
    assert config.init_from is None
    for _, _, stage in stage_configs(config) if config.stages else [(None, None, config)]:
        assert stage.league.p_latest + stage.league.p_past + stage.league.p_heuristics == pytest.approx(1.0)
    assert any(f"revolution train --config configs/{path.name}" in line for line in header)


@pytest.mark.parametrize("bot", sorted(p.stem for p in (ROOT / "checkpoints").glob("*.pt")))
def test_every_shipped_bot_has_its_recipe(bot):
    """One recipe per shipped bot, with as many stages as the bot's card, each long enough for the checkpoint the
    card says it gave (a stage's best.pt may come before its end)."""
    card = json.loads((ROOT / "checkpoints" / f"{bot}.json").read_text())
    stages = stage_configs(load_config(ROOT / "configs" / f"{bot}.yaml"))
    assert len(stages) == len(card["stages"])
    assert all(stage.total_steps >= row["step"] for (_, _, stage), row in zip(stages, card["stages"]))
    assert {stage["config"] for stage in card["stages"]} == {f"configs/{bot}.yaml"}


@pytest.mark.parametrize("path", EXPERIMENTS, ids=lambda p: p.stem)
def test_experiment_configs_load(path):
    if "\npsro:" in path.read_text(encoding="utf-8"):  # a PSRO run: the oracle's config and its psro: section
        from revolution_training.psro import load_psro_config

        config, _ = load_psro_config(path)
    elif "\niterate:" in path.read_text(encoding="utf-8"):  # policy iteration: the training config and its iterate:
        from revolution_training.search_iteration import load_iterate_config

        config, _ = load_iterate_config(path)
    else:
        config = load_config(path)
    assert config.league.p_latest + config.league.p_past + config.league.p_heuristics == pytest.approx(1.0)


@pytest.mark.parametrize(
    "text, message",
    [
        ("n_envs: two", "n_envs: expected a positive integer up to 1e+12, got 'two'"),
        ("n_env: 2", "n_env: unknown option (at the top: algorithm, total_steps, n_envs"),
        ("game:\n  players: 5", "game.players: expected one of 2, 3, 4, got 5"),
        ("game: 5", "game: expected a section, a mapping of its options (players, bid_refunds"),
        ("league:\n  p_latest: 0.9", "league.p_latest, league.p_past, league.p_heuristics: expected to sum to 1"),
        ("league:\n  heuristics: []", "league.heuristics: expected a non-empty list of agent specs"),
        ("game:\n  players: 2\n  bid_refunds: false", "game.bid_refunds: the two-player variant"),
        ("init_from: 3", "init_from: expected a non-empty string, got 3"),
        ("selfplay:\n  enabled: 1", "selfplay.enabled: expected true or false, got 1"),
        (
            "selfplay: {enabled: true}\nleague: {opponent_sampling: pfsp, p_latest: 0.2, p_past: 0.5}",
            "selfplay.enabled: every seat is the learner, so the league's opponents are unused; drop "
            "league.opponent_sampling, league.p_latest, league.p_past from the config, or set selfplay.enabled: false",
        ),
        ("selfplay: {enabled: true}\nenv_backend: subprocess", "selfplay.enabled: pure self-play runs on the batched"),
        ("league: {learner_seats: 0}", "league.learner_seats: expected a positive integer up to 1e+12, got 0"),
        (
            "league: {learner_seats: 3}",
            "league.learner_seats: expected 1 to 2, the seats of a 3-player game less one for the league, got 3 "
            "(every seat the learner: selfplay.enabled: true)",
        ),
        ("league: {learner_seats: 2}\nenv_backend: subprocess", "league.learner_seats: more than one learner seat"),
        ("selfplay: {enabled: true}\nleague: {learner_seats: 2}", "drop league.learner_seats from the config"),
        ("imitation: {selfplay: yes please}", "imitation.selfplay: expected true or false"),
        (
            "imitation: {selfplay: true}\npolicy: {action_mode: tokens}",
            "imitation.selfplay: records the bid mode on the batched",
        ),
        ("imitation: {selfplay: true}\nenv_backend: subprocess", "imitation.selfplay: records the bid mode on the"),
        ("- a list", "expected a mapping of options"),
        ("", "the config is empty"),
        ("# only a comment\n", "the config is empty"),
    ],
)
def test_a_bad_config_names_the_file_and_the_key(tmp_path, text, message):
    path = tmp_path / "x.yaml"
    path.write_text(text)
    with pytest.raises(ValueError) as info:
        load_config(path)
    assert str(info.value).startswith(f"{path}: ")
    assert message in str(info.value)


def test_yaml_numbers_without_a_dot_are_numbers(tmp_path):
    path = tmp_path / "x.yaml"
    path.write_text("ppo:\n  learning_rate: 1e-4\nimitation:\n  learning_rate: 3e-3\ntotal_steps: 1_000\n")
    config = load_config(path)
    assert config.ppo.learning_rate == 1e-4 and config.imitation.learning_rate == 3e-3
    assert config.total_steps == 1000


@pytest.mark.parametrize(
    "text, message",
    [
        ("magnet_coef: 0.1", "magnet_coef is now mmd.magnet_coef"),
        ("players: 2", "players is now game.players"),
        ("pretrain_teacher: value", "pretrain_teacher is now imitation.teacher"),
        ("eval_games: 10", "eval_games is now evaluation.games"),
        ("best_by: worst", "best_by is now evaluation.best_by"),
        ("max_exploiters: 2", "max_exploiters is now exploiters.keep"),
        ("selfplay: true", "selfplay is now selfplay.enabled"),
        ("net_arch: [16]", "net_arch is now policy.net_arch"),
        ("total_steps: 64\np_latest: 0.2", "p_latest is now league.p_latest"),
        (
            "players: 3\nseed: 1\nreward: margin\neval_every: 0",
            "players is now game.players (and 2 more keys of the flat form: each in its section)",
        ),
        (
            "stages:\n- name: a\n  total_steps: 64\n- name: b\n  total_steps: 64\n  learning_rate: 1.0e-4",
            "stages[1] (b): learning_rate is now ppo.learning_rate",
        ),
    ],
)
def test_a_key_of_the_flat_form_is_refused_with_its_new_place(tmp_path, text, message):
    path = tmp_path / "old.yaml"
    path.write_text(text + "\n")
    with pytest.raises(ValueError) as info:
        load_config(path)
    assert str(info.value) == f"{path}: {message}"


def test_revolution_train_refuses_a_flat_config_in_one_line(tmp_path):
    path = tmp_path / "old.yaml"
    path.write_text("players: 3\ntotal_steps: 64\n")
    proc = subprocess.run([sys.executable, "-m", "revolution_training", "train", "--config", str(path), "--out",
                           str(tmp_path / "run")], capture_output=True, text=True, cwd=ROOT, timeout=120)  # fmt: skip
    assert proc.returncode == 2 and proc.stderr == f"error: {path}: players is now game.players\n"
    assert not (tmp_path / "run").exists()


@pytest.mark.parametrize(
    "text, message",
    [
        ("league:\n  p_lates: 0.2", "league.p_lates: unknown option (the league section's: heuristics, "),
        ("mmd:\n  pretrain_teacher: value", "mmd.pretrain_teacher: unknown option (the mmd section's: magnet, "),
        ("evaluation:\n  eval_games: 3", "evaluation.eval_games: unknown option (the evaluation section's: every, "),
        ("stages:\n- name: a\n  total_steps: 64\n  ppo: {lr: 1}", "stages[0] (a): ppo.lr: unknown option"),
        ("head: 3", "head: unknown option (at the top: "),
        ("n_steps_x: 3", "n_steps_x: unknown option (at the top: "),
    ],
)
def test_an_unknown_key_in_a_section_is_refused_naming_the_section(tmp_path, text, message):
    path = tmp_path / "x.yaml"
    path.write_text(text + "\n")
    with pytest.raises(ValueError) as info:
        load_config(path)
    assert str(info.value).startswith(f"{path}: {message}")
    assert "\n" not in str(info.value)


@pytest.mark.parametrize("bot", sorted(p.stem for p in (ROOT / "checkpoints").glob("*.pt")))
def test_the_flat_form_has_a_place_for_each_of_its_keys(bot):
    """FLAT places every key of the flat form that a shipped checkpoint stored (the form before the sections, each
    checkpoint with the keys of its day), one field each; a flat config becomes the sectioned one of its values."""
    from revolution_training.config import FIELDS, FLAT, RUN_FIELDS, dotted, sectioned

    stored = read_checkpoint(ROOT / "checkpoints" / f"{bot}.pt")["config"]
    assert "players" in stored and "game" not in stored  # written before the sections
    assert set(stored) - set(RUN_FIELDS) <= set(FLAT)
    assert set(FLAT.values()) <= set(FIELDS) and len(set(FLAT.values())) == len(FLAT)
    assert dotted(sectioned(stored)) == {FLAT.get(key, key): value for key, value in stored.items()}


@pytest.mark.parametrize("bot", sorted(p.stem for p in (ROOT / "checkpoints").glob("*.pt")))
def test_a_shipped_checkpoint_s_stored_flat_config_still_loads(bot):
    """The shipped checkpoints and their cards store the config they were trained with in the flat form: it reads
    as the config it was (a stored config, ``stored=True``), and the checkpoint still plays."""
    from revolution_training.config import FLAT, dotted, from_dict

    checkpoint = read_checkpoint(ROOT / "checkpoints" / f"{bot}.pt")
    flat = checkpoint["config"]
    config = from_dict(flat, f"{bot}.pt", stored=True)
    fields = dotted(config.to_dict())
    assert {key: fields[FLAT.get(key, key)] for key in flat} == flat  # every value in its place
    assert config.game.players == checkpoint["env_options"]["players"]
    card = json.loads((ROOT / "checkpoints" / f"{bot}.json").read_text())
    assert from_dict(card["config"], f"{bot}.json", stored=True) == config
    with pytest.raises(ValueError, match="is now"):  # the same mapping as a config file: refused
        from_dict(flat, f"{bot}.pt")
    agent = load_agent(str(ROOT / "checkpoints" / f"{bot}.pt"), **checkpoint["env_options"])
    assert agent is not None


def test_a_sectioned_config_round_trips_through_its_yaml_and_its_mapping(tmp_path):
    from revolution_training.config import dump_config, from_dict

    config = load_config(ROOT / "configs" / "two_players.yaml")  # a recipe: stages with sections of their own
    path = tmp_path / "again.yaml"
    path.write_text(dump_config(config))
    assert load_config(path) == config
    assert from_dict(config.to_dict()) == config
    assert stage_configs(load_config(path)) == stage_configs(config)
    changed = config.replace(seed=9, ppo={"learning_rate": 1e-5})
    assert changed.ppo.learning_rate == 1e-5 and changed.ppo.n_steps == config.ppo.n_steps and changed.seed == 9
    assert changed.replace(ppo=config.ppo, seed=config.seed) == config
    with pytest.raises(ValueError, match="ppo.lr: unknown option"):
        config.replace(ppo={"lr": 1})
    with pytest.raises(ValueError, match="magnet_coef is now mmd.magnet_coef"):
        config.replace(magnet_coef=0.1)


def test_a_stage_changes_only_the_keys_of_a_section_it_names():
    config = load_config(ROOT / "configs" / "two_players.yaml")
    (_, _, first), (_, _, value), *_ = stage_configs(config)
    assert value.league.heuristics == ["value"] and value.league.p_heuristics == 0.85  # the stage's own
    assert value.league.snapshot_every == config.league.snapshot_every == 50_000  # the base's
    assert value.imitation.teacher is None and first.imitation.teacher == "value"
    assert value.imitation.steps == first.imitation.steps == config.imitation.steps


# --- the learner's environment ----------------------------------------------------------------------------------


class ScriptedReader(LeagueReader):
    """Every opponent seat gets a ``value`` bot (a strong, fixed league)."""

    def __init__(self, env_options):
        super().__init__(None, ["value"], env_options)


def play_episode(env: SelfPlayEnv, seed: int, learner_bot=None) -> tuple[list[float], dict]:
    """One game; the learner's moves come from ``learner_bot`` (reading the learner's raw observation) or are
    uniform over its mask. Checks at every step that it is the learner's decision."""
    obs, info = env.reset(seed=seed)
    space = revolution_env.MaskedMultiDiscrete(env.action_space.nvec, seed=seed)
    rewards = []
    while True:
        raw = env.game_env
        assert raw.agent_selection == env.learner  # the learner decides only its own moves
        own = raw.observe(env.learner)
        np.testing.assert_allclose(obs, own["observation"] / env.scale, rtol=1e-6)
        np.testing.assert_array_equal(env.action_masks(), own["action_mask"].astype(bool))
        if learner_bot is not None:
            action = learner_bot.act(own, raw.infos[env.learner])
        else:
            action = space.sample(own["action_mask"])
        obs, reward, terminated, truncated, info = env.step(action)
        rewards.append(reward)
        if terminated or truncated:
            return rewards, info
        assert reward == 0.0


@pytest.mark.parametrize("reward", ["win_loss", "margin"])
def test_the_learner_is_paid_its_own_reward_not_the_winners(reward):
    options = {"players": 3, "reward": reward}
    env = SelfPlayEnv(options, ScriptedReader(options))
    bot = ValueBot(players=3)
    outcomes = Counter()
    for seed in range(40):  # until both outcomes have been seen twice (8 games or so)
        if min(outcomes["won"], outcomes["lost while an opponent won"]) >= 2:
            break
        bot.reset(seed)
        rewards, info = play_episode(env, seed, learner_bot=bot if seed % 2 else None)
        final = env.game_env.game.final
        seat = env.game_env.core.seat_of[env.learner]
        assert info["seat"] == seat and info["won"] == (seat in final["winners"])
        support = np.asarray(final["support"], dtype=float)
        if reward == "win_loss":
            expected = 1.0 if seat in final["winners"] else -1.0
        else:
            expected = (support[seat] - np.delete(support, seat).max()) / 100.0
        assert sum(rewards) == pytest.approx(expected)
        outcomes["won" if seat in final["winners"] else "lost while an opponent won"] += 1
    # both cases happened: a loss (an opponent won, its +1 must not leak in) and a win
    assert outcomes["won"] > 0 and outcomes["lost while an opponent won"] > 0


def test_the_learner_changes_seat_between_games():
    env = make_selfplay_env({"players": 3}, None, ["random"])
    seats = set()
    for seed in range(12):
        env.reset(seed=seed)
        seats.add(env.learner)
    assert seats == {"player_0", "player_1", "player_2"}


def test_the_same_seed_gives_the_same_games():
    def run():
        env = make_selfplay_env({"players": 2}, None, ["random"])
        return [play_episode(env, seed)[0] for seed in (3, 4)], env.game_env.state_dict()

    assert run() == run()


# --- the league --------------------------------------------------------------------------------------------------


def test_opponents_are_sampled_by_the_documented_scheme():
    rng = np.random.default_rng(0)
    snaps, heuristics = ["s1", "s2", "s3"], ["random", "value"]
    n = 20_000
    counts = Counter(choose_opponent(rng, snaps, heuristics, 0.5, 0.3)[1] for _ in range(n))
    expected = {"s3": 0.5, "s1": 0.15, "s2": 0.15, "random": 0.1, "value": 0.1}
    for name, p in expected.items():
        assert counts[name] / n == pytest.approx(p, abs=0.015), name
    # only the latest snapshot: past draws take it too; no snapshot yet: heuristics only
    one = Counter(choose_opponent(rng, ["s1"], heuristics, 0.5, 0.3)[1] for _ in range(n))
    assert one["s1"] / n == pytest.approx(0.8, abs=0.015)
    none = Counter(choose_opponent(rng, [], heuristics, 0.5, 0.3)[0] for _ in range(1000))
    assert none == {"heuristic": 1000}


def test_snapshots_are_added_and_capped_keeping_the_first(tmp_path):
    checkpoint = read_checkpoint(untrained_checkpoint(tmp_path, players=3))
    league = League(tmp_path / "league", max_snapshots=3)
    reader = LeagueReader(tmp_path / "league", ["random"], {"players": 3}, p_latest=1.0)
    rng = np.random.default_rng(0)
    assert reader.sample(rng, 0)[0] == "random"  # no snapshot yet
    for step in (100, 200, 300, 400, 500):
        league.add(checkpoint, step)
        name, agent = reader.sample(rng, 0)  # the reader sees every new snapshot at once
        assert name == f"snapshot_{step:012d}.pt" and isinstance(agent, PolicyAgent)
        assert not agent.deterministic  # snapshot opponents sample
    files = [s["file"] for s in read_league(tmp_path / "league")]
    assert files == ["snapshot_000000000100.pt", "snapshot_000000000400.pt", "snapshot_000000000500.pt"]
    assert sorted(p.name for p in (tmp_path / "league").glob("*.pt")) == files
    league.rollback(400)
    assert [s["step"] for s in read_league(tmp_path / "league")] == [100, 400]
    assert not (tmp_path / "league" / "snapshot_000000000500.pt").exists()


# --- checkpoints -------------------------------------------------------------------------------------------------


def test_a_checkpoint_records_what_it_was_trained_for(tmp_path):
    path = untrained_checkpoint(tmp_path, players=3)
    data = torch.load(path, weights_only=True)
    assert data["format"] == FORMAT and data["format_version"] == FORMAT_VERSION
    assert data["env"] == "revolution_v2"
    assert data["env_options"] == {
        "players": 3,
        "bid_refunds": False,
        "area_control_bonus": False,
        "first_edition": False,
        "max_rounds": 100,
        "board": "standard",
        "reward": "win_loss",
    }
    assert data["layout_hash"] == layout_hash({"players": 3}) != layout_hash({"players": 4})
    assert data["step"] == 7 and data["wall_time"] == 1.5 and "saved_at" in data


@pytest.mark.parametrize(
    "options, named",
    [
        ({"players": 4}, "players: checkpoint 3, environment 4"),
        ({"players": 3, "first_edition": True}, "first_edition"),
        ({"players": 3, "area_control_bonus": True}, "area_control_bonus"),
        ({"players": 3, "max_rounds": 20}, "max_rounds"),
    ],
)
def test_a_checkpoint_refuses_another_environment(tmp_path, options, named):
    path = untrained_checkpoint(tmp_path, players=3)
    with pytest.raises(ValueError, match=named):
        load_policy_agent(str(path), **options)
    with pytest.raises(ValueError, match=named):
        load_agent(str(path), **options)  # through the agents' loader too


def test_a_changed_layout_is_refused(tmp_path):
    path = untrained_checkpoint(tmp_path, players=3)
    data = torch.load(path, weights_only=True)
    data["layout_hash"] = "0" * 64
    save_checkpoint(data, path)
    with pytest.raises(ValueError, match="layout_hash differs"):
        load_policy_agent(str(path), players=3)


def test_corrupt_and_foreign_files_are_not_checkpoints(tmp_path):
    good = untrained_checkpoint(tmp_path, players=3).read_bytes()
    corrupt = tmp_path / "corrupt.pt"
    corrupt.write_bytes(good[: len(good) // 2])
    text = tmp_path / "notes.pt"
    text.write_text("hello")
    foreign = tmp_path / "foreign.pt"
    torch.save({"weights": torch.zeros(3)}, foreign)
    for path in (corrupt, text, foreign):
        with pytest.raises(ValueError, match=rf"{path.name} is not a Revolution! policy checkpoint: "):
            load_policy_agent(str(path), players=3)
    with pytest.raises(ValueError, match="no such"):
        load_policy_agent(str(tmp_path / "missing.pt"), players=3)


@pytest.mark.parametrize(
    "options, kinds",
    [
        (
            {"players": 2},
            {Decision.BID, Decision.GUY, Decision.SPY, Decision.APOTHECARY_FIRST, Decision.APOTHECARY_SECOND},
        ),
        (
            {"players": 3, "first_edition": True},
            {Decision.BID, Decision.REMOVE, Decision.SPY, Decision.APOTHECARY_FIRST, Decision.APOTHECARY_SECOND},
        ),
        ({"players": 4}, {Decision.BID, Decision.SPY, Decision.APOTHECARY_FIRST, Decision.APOTHECARY_SECOND}),
    ],
)
def test_a_checkpoint_plays_legal_moves_in_every_decision(tmp_path, options, kinds):
    """Whole games through the runner, which raises on any illegal action; greedy and sampling agents."""
    path = str(untrained_checkpoint(tmp_path, **options))
    players = options["players"]
    agents = [load_agent(path, **options)] + [
        load_policy_agent(path, deterministic=False, **options) for _ in range(players - 1)
    ]
    seen = Counter()
    runner = GameRunner(agents, options)
    for seed in range(6):
        runner.play(seed, on_step=lambda env, name, obs, info, action: seen.update([info["decision"]]))
        assert runner.game.final is not None
    assert kinds <= set(seen), seen


def test_the_numpy_policy_computes_the_networks_logits(tmp_path):
    from revolution_training.distributions import MaskableMultiDiscretePolicy
    from sb3_contrib import MaskablePPO

    env = make_selfplay_env({"players": 3}, None, ["random"])
    model = MaskablePPO(MaskableMultiDiscretePolicy, env, policy_kwargs={"net_arch": [16, 8]}, seed=1, n_steps=32)
    agent = PolicyAgent(policy_from_sb3(model.policy, "tanh"), players=3)
    obs, _ = env.reset(seed=0)
    with torch.no_grad():
        x = torch.as_tensor(obs[None])
        expected = model.policy.action_net(model.policy.mlp_extractor.forward_actor(x))[0].numpy()
    np.testing.assert_allclose(agent.net.logits(obs), expected, rtol=1e-4, atol=1e-5)
    greedy, _ = model.predict(obs, deterministic=True, action_masks=env.action_masks())
    raw = env.game_env.observe(env.learner)
    np.testing.assert_array_equal(agent.act(raw, {}), greedy)


# --- whole runs --------------------------------------------------------------------------------------------------


def test_a_short_run_through_the_cli_writes_checkpoints(tmp_path):
    out = tmp_path / "run"
    proc = train_cli("--config", str(write_config(tmp_path)), "--out", str(out))
    log, _ = proc.communicate(timeout=120)
    assert proc.returncode == 0, log
    state = json.loads((out / "state.json").read_text())
    assert state["step"] == 256 and state["model"] == "saves/model_000000000256.zip"
    assert [p.name for p in (out / "saves").glob("*.zip")] == ["model_000000000256.zip"]
    assert [e["step"] for e in state["evaluations"]] == [128, 256]
    assert set(state["evaluations"][0]["win_rates"]) == {"random"}
    latest = read_checkpoint(out / "latest.pt")
    assert latest["step"] == 256 and latest["config"]["policy"]["net_arch"] == [16]
    best = read_checkpoint(out / "best.pt")
    assert best["step"] == state["best_step"]
    assert [s["step"] for s in read_league(out / "league")] == [64, 256]  # capped at 2: the first and the latest
    assert list((out / "tb").glob("events.out.tfevents.*"))
    assert not list(out.rglob(".*.tmp"))
    # the policy plays in the evaluation harness, and a second run into the same folder is refused
    from revolution_env.evaluation import evaluate_lineup

    ev = evaluate_lineup([str(out / "latest.pt"), "random", "random"], games=3, seed=0, workers=1, progress=False)
    assert ev.stats["run/latest"].games == 3  # a checkpoint is named by its folder and stem
    with pytest.raises(ValueError, match="is a stable-baselines3 model"):
        load_agent(str(out / state["model"]), players=3)  # the resume file is not an agent
    again = train_cli("--config", str(write_config(tmp_path)), "--out", str(out))
    log, _ = again.communicate(timeout=60)
    assert again.returncode == 2 and "pass --resume" in log
    done = train_cli("--config", str(write_config(tmp_path)), "--out", str(out), "--resume")
    log, _ = done.communicate(timeout=60)
    assert done.returncode == 0 and "done: 256 steps" in log, log  # nothing left to train
    assert json.loads((out / "state.json").read_text()) == state


def wait_for_save(out: Path, proc: subprocess.Popen, past: int, timeout: float = 60.0) -> dict:
    deadline = time.time() + timeout
    while time.time() < deadline:
        if (out / "state.json").exists():
            state = json.loads((out / "state.json").read_text())
            if state["step"] > past:
                return state
        assert proc.poll() is None, proc.stdout.read()
        time.sleep(0.05)
    raise AssertionError(f"no save past step {past} within {timeout} s")


def test_a_killed_run_resumes_from_its_last_save(tmp_path):
    """SIGKILL mid-run, resume, Ctrl-C (saves and exits), resume to the end: the step count and the league carry
    on."""
    out = tmp_path / "run"
    config = write_config(tmp_path, n_envs=1, total_steps=100_000, evaluation={"every": 0}, league={"max_snapshots": 4})
    first = train_cli("--config", str(config), "--out", str(out))
    try:
        wait_for_save(out, first, past=128)
        time.sleep(0.3)  # kill it somewhere in the middle of the next interval, maybe mid-write
    finally:
        first.kill()
        first.wait()
    saved = json.loads((out / "state.json").read_text())
    assert (out / saved["model"]).exists()
    step = saved["step"]
    league_then = [s for s in read_league(out / "league") if s["step"] <= step]

    second = train_cli("--config", str(config), "--out", str(out), "--resume")
    state = wait_for_save(out, second, past=step)
    assert state["step"] >= step + 64  # it carried on from the save, not from zero
    second.send_signal(signal.SIGINT)
    log, _ = second.communicate(timeout=60)
    assert second.returncode == 130, log
    assert "saved" in log and "--resume" in log
    stopped = json.loads((out / "state.json").read_text())
    assert read_checkpoint(out / "latest.pt")["step"] == stopped["step"] >= state["step"]

    final = stopped["step"] + 64
    third = train_cli("--config", str(config), "--out", str(out), "--resume", "--total-steps", str(final))
    log, _ = third.communicate(timeout=60)
    assert third.returncode == 0, log
    end = json.loads((out / "state.json").read_text())
    assert end["step"] == final
    snapshots = read_league(out / "league")
    assert snapshots[0] == league_then[0]  # the first snapshot survives every resume
    assert [s["step"] for s in snapshots] == sorted(s["step"] for s in snapshots)
    assert all((out / "league" / s["file"]).exists() for s in snapshots)
    assert len(list((out / "saves").glob("*.zip"))) == 1
    assert not list(out.rglob(".*.tmp"))


def test_the_config_has_a_docstring_per_field_and_a_check():
    """Every field of TrainConfig and of each of its sections has its docstring (the line below it) and a check."""
    import ast
    import inspect

    import revolution_training.config as config_module

    tree = ast.parse(inspect.getsource(config_module))
    classes = {"TrainConfig": TrainConfig, **{kind.__name__: kind for kind in config_module.SECTIONS.values()}}
    for name, kind in classes.items():
        cls = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == name)
        documented = {
            a.target.id
            for a, doc in zip(cls.body, cls.body[1:])
            if isinstance(a, ast.AnnAssign) and isinstance(doc, ast.Expr) and isinstance(doc.value, ast.Constant)
        }
        assert documented == set(kind.__dataclass_fields__), name
    assert set(config_module.CHECKS) == set(config_module.FIELDS)
    assert set(config_module.SECTIONS) == {f for f in TrainConfig.__dataclass_fields__} - set(config_module.RUN_FIELDS)


def test_the_same_config_and_seed_train_the_same_weights(tmp_path):
    """A whole run (batched games, a PFSP league that brings in its heuristics and snapshots as it goes, PPO) is
    reproducible from its seed: the weights and the league's results of two runs are the same."""
    from revolution_training.train import LATEST, train

    config = tiny(
        evaluation={"every": 0},
        seed=5,
        league={
            "opponent_sampling": "pfsp",
            "heuristics": ["random", "area"],
            "p_latest": 0.2,
            "p_past": 0.4,
            "p_heuristics": 0.4,
        },
    )
    runs = []
    for name in ("a", "b"):
        train(config, out=tmp_path / name)
        weights = read_checkpoint(tmp_path / name / LATEST)["policy"]["state_dict"]
        league = json.loads((tmp_path / name / "league" / "league.json").read_text())
        runs.append((weights, league))
    (a, league_a), (b, league_b) = runs
    assert a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)
    assert league_a == league_b


def test_updates_take_torch_threads_and_rollouts_one(tmp_path, monkeypatch):
    """PPO's updates run on ``torch_threads`` threads, the rollouts' forward passes on one (the opponents' threads
    need the cores then), and the caller's setting is back afterwards."""
    from revolution_training.train import train
    from revolution_training.vec_env import SB3VecEnv
    from sb3_contrib import MaskablePPO

    seen: dict[str, set[int]] = {"update": set(), "rollout": set()}

    def spy(cls, name, key):
        original = getattr(cls, name)

        def wrapper(*args, **kwargs):
            seen[key].add(torch.get_num_threads())
            return original(*args, **kwargs)

        monkeypatch.setattr(cls, name, wrapper)

    spy(MaskablePPO, "train", "update")
    spy(SB3VecEnv, "step_async", "rollout")
    before = torch.get_num_threads()
    train(
        tiny(total_steps=128, evaluation={"every": 0}, torch_threads=3),
        out=tmp_path / "run",
    )
    assert seen == {"update": {3}, "rollout": {1}}
    assert torch.get_num_threads() == before
    assert TrainConfig().update_threads() >= 1 and TrainConfig(torch_threads=2).update_threads() == 2


def test_updates_take_one_thread_unless_the_user_chose_torchs_threads(monkeypatch):
    """Torch's spinning OpenMP threads collapse PPO's updates beside another busy process (TrainConfig.torch_threads
    says by how much): the updates take one thread, unless the user gave torch its threads, by the environment or
    by ``torch.set_num_threads`` before the run."""
    from revolution_env.common.workers import usable_cores

    for name in ("OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        monkeypatch.delenv(name, raising=False)
    before = torch.get_num_threads()
    try:
        torch.set_num_threads(usable_cores())  # torch's own default
        assert TrainConfig().update_threads() == 1
        torch.set_num_threads(usable_cores() + 2)
        assert TrainConfig().update_threads() == usable_cores() + 2
        torch.set_num_threads(usable_cores())
        monkeypatch.setenv("OMP_NUM_THREADS", str(usable_cores()))
        assert TrainConfig().update_threads() == usable_cores()
    finally:
        torch.set_num_threads(before)


@pytest.mark.parametrize(("best_by", "expected"), [("mean", 192), ("worst", 128)])
def test_best_pt_keeps_the_evaluation_best_by_mean_or_worst(tmp_path, monkeypatch, best_by, expected):
    import revolution_training.train as train_module

    scripted = {  # step: win rates; the best mean is at 192, the best worst win rate at 128
        64: {"a": 0.9, "b": 0.1},
        128: {"a": 0.5, "b": 0.4},
        192: {"a": 1.0, "b": 0.3},
        256: {"a": 0.3, "b": 0.3},
    }
    monkeypatch.setattr(train_module, "evaluate", lambda config, checkpoint, step, scratch: scripted[step])
    out = tmp_path / "run"
    config = tiny(n_envs=1, evaluation={"every": 64, "best_by": best_by})
    result = train_module.train(config, out=out)
    state = json.loads((out / "state.json").read_text())
    assert result.best_by == best_by and result.best_win_rate == state["best_win_rate"]
    assert [e["step"] for e in state["evaluations"]] == [64, 128, 192, 256]
    assert state["best_step"] == expected and read_checkpoint(out / "best.pt")["step"] == expected
    assert state["best_win_rate"] == pytest.approx({"mean": 0.65, "worst": 0.4}[best_by])
    with pytest.raises(ValueError, match="evaluation.best_by: expected one of"):
        TrainConfig(evaluation={"best_by": "median"})


@pytest.mark.parametrize(("players", "fill"), [(2, "random"), (3, "random"), (4, None)])
def test_the_mirror_table_seats_a_copy_of_the_learner_beside_it(tmp_path, monkeypatch, players, fill):
    import revolution_training.train as train_module

    import revolution_env.evaluation as evaluation

    played = []

    class Result:  # what _win_rates reads of an evaluation: the learner's seat by its spec, and its stats
        def __init__(self, lineup):
            self.specs = {f"seat{i}": spec for i, spec in enumerate(lineup)}
            self.stats = {name: type("S", (), {"win_rate": 0.25})() for name in self.specs}

    def evaluate_lineup(lineup, *args, **kwargs):
        played.append(list(lineup))
        return Result(lineup)

    monkeypatch.setattr(evaluation, "evaluate_lineup", evaluate_lineup)
    config = tiny(game={"players": players}, evaluation={"opponents": ["value", "self"], "fill": fill})
    rates = train_module._win_rates(config, tmp_path / "learner.pt", 0, config.env_options())
    me = str(tmp_path / "learner.pt")
    rest = players - 2
    assert played == [[me, "value"] + [fill or "value"] * rest, [me, me] + [fill or me] * rest]
    assert rates == {"value": 0.25, "self": 0.25}
    assert TrainConfig(evaluation={"opponents": ["self"]}).baselines() == ["self"]
    with pytest.raises(ValueError, match="evaluation.opponents: expected an agent spec"):
        TrainConfig(evaluation={"opponents": ["self", "nosuch"]})


# --- starting from trained weights (init_from) -------------------------------------------------------------------


@pytest.fixture(scope="module")
def finished_run(tmp_path_factory) -> Path:
    """A tiny 3-player run trained to its end (in this process)."""
    from revolution_training.train import train

    out = tmp_path_factory.mktemp("source") / "run"
    train(tiny(n_envs=1, total_steps=64, evaluation={"every": 0}, seed=3), out=out)
    return out


def fresh_model(config: TrainConfig, folder: Path):
    from revolution_training.train import make_vec_env, new_model

    venv = make_vec_env(config, folder / "league")
    return new_model(config, venv), venv


def values_of(policy, obs: np.ndarray) -> np.ndarray:
    with torch.no_grad():
        return policy.predict_values(torch.as_tensor(obs)).numpy()


def test_init_from_a_run_folder_takes_its_policy_and_value_network(finished_run, tmp_path):
    from revolution_training.train import load_initial_weights
    from sb3_contrib import MaskablePPO

    config = tiny(n_envs=1, seed=9, init_from=str(finished_run))
    model, venv = fresh_model(config, tmp_path)
    try:
        saved = MaskablePPO.load(finished_run / json.loads((finished_run / "state.json").read_text())["model"])
        obs = np.random.default_rng(0).random((4, model.observation_space.shape[0]), dtype=np.float32)
        assert not np.allclose(values_of(model.policy, obs), values_of(saved.policy, obs))  # different seeds
        rng_state = torch.get_rng_state()
        loaded, origin = load_initial_weights(model, config)
        assert torch.equal(torch.get_rng_state(), rng_state)  # weights only: the run keeps its own seed
        assert "policy and value network" in loaded and origin["path"] == str(finished_run)
        ours, theirs = model.policy.state_dict(), saved.policy.state_dict()
        assert ours.keys() == theirs.keys()
        assert all(torch.equal(ours[k], theirs[k]) for k in ours)
    finally:
        venv.close()


def test_init_from_a_policy_checkpoint_takes_the_policy_only(finished_run, tmp_path):
    from revolution_training.train import load_initial_weights

    config = tiny(n_envs=1, seed=9, init_from=str(finished_run / "latest.pt"))
    model, venv = fresh_model(config, tmp_path)
    try:
        obs = np.random.default_rng(0).random((4, model.observation_space.shape[0]), dtype=np.float32)
        values_before = values_of(model.policy, obs)
        assert "value network starts fresh" in load_initial_weights(model, config)[0]
        source = load_policy_agent(str(finished_run / "latest.pt"), players=3)
        ours = PolicyAgent(policy_from_sb3(model.policy, "tanh"), players=3)
        np.testing.assert_allclose(ours.net.logits(obs), source.net.logits(obs), rtol=0, atol=1e-6)
        np.testing.assert_array_equal(values_of(model.policy, obs), values_before)
    finally:
        venv.close()


@pytest.mark.parametrize(
    "changes, message",
    [
        ({"game": {"players": 4}}, "trained for another environment .*players: checkpoint 3, environment 4"),
        ({"policy": {"net_arch": [8]}}, r"its network is \[16\] tanh, this config asks for policy.net_arch \[8\] tanh"),
        ({"policy": {"activation": "relu"}}, "asks for policy.net_arch .* relu"),
        ({"init_from": "no/such/run"}, "init_from: no/such/run: no such run folder or checkpoint file"),
        ({"init_from": "{tmp}"}, "not a training run folder"),
        ({"init_from": "{run}/state.json"}, "is not a Revolution! policy checkpoint"),
        ({"game": {"reward": "margin"}}, "trained with reward 'win_loss', this config uses 'margin'"),
    ],
)
def test_init_from_refuses_what_does_not_fit(finished_run, tmp_path, changes, message):
    from revolution_training.train import load_initial_weights

    changes = {k: v.format(tmp=tmp_path, run=finished_run) if isinstance(v, str) else v for k, v in changes.items()}
    config = tiny(**merge({"n_envs": 1, "init_from": str(finished_run)}, changes))
    model, venv = fresh_model(config, tmp_path)
    try:
        with pytest.raises(ValueError, match=message):
            load_initial_weights(model, config)
    finally:
        venv.close()


def test_init_from_through_the_cli(finished_run, tmp_path):
    out = tmp_path / "stage2"
    config = write_config(tmp_path, n_envs=1, total_steps=64, evaluation={"every": 0}, init_from=str(finished_run))
    proc = train_cli("--config", str(config), "--out", str(out))
    log, _ = proc.communicate(timeout=120)
    assert proc.returncode == 0, log
    assert f"starting from the policy and value network of {finished_run} at step 64" in log
    assert json.loads((out / "state.json").read_text())["step"] == 64  # the count starts again
    source, ours = json.loads((finished_run / "state.json").read_text()), read_checkpoint(out / "latest.pt")
    assert ours["origin"] == {
        "path": str(finished_run),
        "step": 64,
        "wall_time": source["wall_time"],
        "origin": None,
    }
    assert [s["step"] for s in history(ours)] == [64, 64]
    assert sum(s["wall_time"] for s in history(ours)) == pytest.approx(source["wall_time"] + ours["wall_time"])
    more = train_cli("--config", str(config), "--out", str(out), "--resume", "--total-steps", "96")
    log, _ = more.communicate(timeout=120)
    assert more.returncode == 0, log
    assert read_checkpoint(out / "latest.pt")["origin"] == ours["origin"]  # a resumed run keeps its origin
    bad = write_config(tmp_path, n_envs=1, total_steps=64, init_from=str(tmp_path / "missing"))
    proc = train_cli("--config", str(bad), "--out", str(tmp_path / "stage2b"))
    log, _ = proc.communicate(timeout=120)
    assert proc.returncode == 2 and "no such run folder or checkpoint file" in log, log


def flat_form(config: TrainConfig) -> dict:
    """``config`` as a run folder stored it before the sections: one flat mapping (``revolution_training.config.FLAT``
    names each key's place now); a section's field added since (no flat key) is left out, as those folders lack it."""
    from revolution_training.config import FLAT, SECTIONS, dotted

    place = {path: key for key, path in FLAT.items()}
    fields = dotted(config.to_dict()).items()
    return {place.get(path, path): v for path, v in fields if path in place or path.split(".")[0] not in SECTIONS}


def test_a_run_folder_from_before_the_sections_resumes_and_starts_another(finished_run, tmp_path):
    """A run folder whose state.json holds the flat form (as every run before the sections) resumes with its own
    config, and ``init_from`` reads its reward from it; the state it saves then is in sections."""
    from revolution_training.train import train

    old = tmp_path / "old"
    shutil.copytree(finished_run, old)
    state = json.loads((old / "state.json").read_text())
    config = tiny(n_envs=1, total_steps=64, evaluation={"every": 0}, seed=3)
    assert state["config"] == {**config.to_dict(), "out": str(finished_run)}  # the run's own, in sections
    state["config"] = flat_form(TrainConfig(**state["config"]))
    assert "players" in state["config"] and "game" not in state["config"]
    (old / "state.json").write_text(json.dumps(state))

    again = train(config.replace(total_steps=96, game={"reward": "margin"}), out=old, resume=True)  # its own reward
    resumed = json.loads((old / "state.json").read_text())
    assert again.step == resumed["step"] == 96 and resumed["config"]["game"]["reward"] == "win_loss"
    # init_from reads the reward the flat record names (margin here, so that a default could not pass for it)
    flat = flat_form(TrainConfig(**merge(resumed["config"], {"game": {"reward": "margin"}})))
    (old / "state.json").write_text(json.dumps({**resumed, "config": flat}))
    with pytest.raises(ValueError, match="trained with reward 'margin', this config uses 'win_loss'"):
        train(tiny(n_envs=1, total_steps=64, init_from=str(old)), out=tmp_path / "next")
    start = tiny(n_envs=1, total_steps=64, evaluation={"every": 0}, init_from=str(old), game={"reward": "margin"})
    second = train(start, out=tmp_path / "ok")
    assert second.step == 64 and read_checkpoint(tmp_path / "ok" / "latest.pt")["origin"]["step"] == 96


# --- imitation before PPO (imitation.teacher) --------------------------------------------------------------------


def imitation_config(teacher: str, **changes) -> TrainConfig:
    base = {"n_envs": 1, "league": {"heuristics": ["random"]}, "imitation": {"teacher": teacher}}
    return tiny(**merge(merge(base, {"game": {"reward": "margin"}}), changes))


@pytest.mark.parametrize("backend", ["vector", "subprocess"])
def test_the_teachers_decisions_are_recorded_from_the_learners_seat(backend):
    from revolution_training.pretrain import collect

    config = imitation_config("value", ppo={"gamma": 0.9}, env_backend=backend)
    demos = collect(config, steps=150, seed=4)
    assert len(demos) >= 150 and demos.games >= 1
    assert demos.obs.shape == (len(demos), revolution_env.observation_layout(players=3).size)
    nvec = revolution_env.raw_env(players=3).action_space("player_0").nvec
    offsets = np.concatenate([[0], np.cumsum(nvec)[:-1]])
    assert demos.masks[np.arange(len(demos))[:, None], offsets + demos.actions].all()  # every action is legal
    assert (
        {Decision.BID}
        <= set(demos.decisions)
        <= {Decision.BID, Decision.SPY, Decision.APOTHECARY_FIRST, Decision.APOTHECARY_SECOND}
    )
    # games are whole and in order; returns: the game's final reward, discounted by gamma step by step before it
    assert demos.game[0] == 0 and demos.game[-1] == demos.games - 1 and np.all(np.diff(demos.game) >= 0)
    same_game = demos.game[:-1] == demos.game[1:]
    np.testing.assert_allclose(
        demos.returns[:-1][same_game], config.ppo.gamma * demos.returns[1:][same_game], rtol=1e-5
    )
    assert np.abs(demos.returns).max() > 0
    again = collect(config, steps=150, seed=4)
    np.testing.assert_array_equal(again.actions, demos.actions)  # reproducible from the seed
    np.testing.assert_array_equal(again.obs, demos.obs)
    other = collect(config, steps=150, seed=5)
    assert other.obs.shape != demos.obs.shape or not np.array_equal(other.obs, demos.obs)


@pytest.mark.parametrize("backend", ["vector", "subprocess"])
def test_demonstrations_of_several_games_at_once_are_reproducible_and_distinct(backend):
    """n_envs games at once (one batch, or one process each): every game of the batch records whole games up to
    its share of the steps; the same seed gives the same demonstrations; no two games are the same."""
    from revolution_training.pretrain import collect

    config = imitation_config("value", n_envs=3, env_backend=backend)
    demos = collect(config, steps=120, seed=1)
    again = collect(config, steps=120, seed=1)
    np.testing.assert_array_equal(again.obs, demos.obs)
    np.testing.assert_array_equal(again.actions, demos.actions)
    np.testing.assert_array_equal(again.game, demos.game)
    games = [demos.obs[demos.game == g].tobytes() for g in range(demos.games)]
    assert demos.games >= 3 and len(set(games)) == demos.games
    lengths = np.bincount(demos.game)
    assert len(demos) >= 120 and len(demos) - lengths.max() * 3 < 120  # whole games, stopped at each share
    assert len(demos.returns) == len(demos) and demos.masks.shape[0] == len(demos)


def test_the_teachers_games_against_itself_are_recorded_in_every_seat(monkeypatch):
    """pretrain_selfplay: the teacher plays every seat of its games, and every seat's decisions are recorded, whole
    games, seat after seat, each seat's final reward discounted back over its own decisions; the same recording
    with the two copies of the teacher side by side or one after the other, and from the same seed."""
    from revolution_training.pretrain import collect

    config = imitation_config("value", n_envs=4, ppo={"gamma": 0.9}, imitation={"selfplay": True})
    monkeypatch.setenv("REVOLUTION_THREADS", "2")
    demos = collect(config, steps=300, seed=2)
    assert len(demos) >= 300 and demos.games >= 4
    nvec = revolution_env.raw_env(players=3).action_space("player_0").nvec
    offsets = np.concatenate([[0], np.cumsum(nvec)[:-1]])
    assert demos.masks[np.arange(len(demos))[:, None], offsets + demos.actions].all()  # every action is legal
    assert Decision.NONE not in set(demos.decisions) and Decision.BID in set(demos.decisions)
    assert demos.game[0] == 0 and demos.game[-1] == demos.games - 1 and np.all(np.diff(demos.game) >= 0)
    bids = np.bincount(demos.game[demos.decisions == Decision.BID], minlength=demos.games)
    assert (bids > 0).all() and (bids % 3 == 0).all()  # every seat bids in every round: all three recorded
    for game in range(demos.games):  # within a game, each seat's returns: gamma-discounted chains, three of them
        returns = demos.returns[demos.game == game]
        chained = np.isclose(returns[:-1], config.ppo.gamma * returns[1:], rtol=1e-5)
        assert (~chained).sum() <= 2
    assert np.abs(demos.returns).max() > 0
    monkeypatch.setenv("REVOLUTION_THREADS", "1")
    again = collect(config, steps=300, seed=2)
    for name in ("obs", "actions", "masks", "returns", "game"):
        np.testing.assert_array_equal(getattr(again, name), getattr(demos, name))
    other = collect(config, steps=300, seed=3)
    assert other.obs.shape != demos.obs.shape or not np.array_equal(other.obs, demos.obs)


def test_imitation_learns_a_teacher_it_can_represent(tmp_path):
    """A learner cloning a confident policy of its own shape (seeded otherwise) agrees with it far more afterwards,
    on decisions it did not fit, and its value network moves towards the returns. It fits with the imitation's
    own minibatch and learning rate (PPO's here would learn nothing), and leaves PPO's learning rate as it was."""
    from revolution_training.pretrain import clone, collect, held_out, score

    teacher = untrained_checkpoint(tmp_path, players=3)
    sharp = read_checkpoint(teacher)
    for key in ("layers.1.weight", "layers.1.bias"):
        sharp["policy"]["state_dict"][key] *= 30  # decisive logits: a teacher with clear preferences
    save_checkpoint(sharp, teacher)
    config = imitation_config(
        str(teacher),
        imitation={"epochs": 20, "batch_size": 64, "learning_rate": 3e-3},
        ppo={"batch_size": 2048, "learning_rate": 1e-7},
        seed=5,
    )
    demos = collect(config, steps=1000, seed=0)
    model, venv = fresh_model(config, tmp_path)
    try:
        before = score(model.policy, demos, held_out(len(demos), config.seed)[1])
        after = clone(model, demos, config)
        assert [group["lr"] for group in model.policy.optimizer.param_groups] == [1e-7]
    finally:
        venv.close()
    # thresholds well inside what cloning reaches on the held-out demonstrations, far outside what chance moves
    assert after["dim_accuracy"] > before["dim_accuracy"] + 0.3, (before, after)
    assert after["accuracy"] > before["accuracy"] + 0.1, (before, after)
    assert after["nll"] < before["nll"] * 0.75
    assert after["value_mse"] < before["value_mse"]


@pytest.mark.parametrize("mode", ["bid", "tokens"])
def test_the_imitation_fits_the_same_weights_on_one_thread_or_two(tmp_path, monkeypatch, mode):
    """Each minibatch's halves: side by side in two threads, or one after the other on one, the same weights bit
    for bit (in the token mode, one Discrete head, too); and the fit moves them. The last minibatch of a pass holds
    one row here: one of its halves is empty."""
    from revolution_training.pretrain import clone, collect, held_out

    config = imitation_config("value", policy={"action_mode": mode}, imitation={"epochs": 2}, seed=3)
    demos = collect(config, steps=300, seed=1)
    config = config.replace(imitation={"batch_size": len(held_out(len(demos), config.seed)[0]) - 1})
    assert len(held_out(len(demos), config.seed)[0]) % config.imitation.batch_size == 1
    weights = []
    for threads in ("2", "1"):
        monkeypatch.setenv("REVOLUTION_THREADS", threads)
        model, venv = fresh_model(config, tmp_path / threads)
        venv.close()
        start = [p.detach().clone() for p in model.policy.parameters()]
        clone(model, demos, config)
        weights.append([p.detach().clone() for p in model.policy.parameters()])
    assert any(not torch.equal(a, b) for a, b in zip(start, weights[0]))
    for a, b in zip(*weights):
        assert torch.equal(a, b)


def test_the_fit_takes_each_minibatch_the_faster_way_and_times_the_other_now_and_then(monkeypatch):
    """``workers.Pace`` (the fit's and the vector env's): two threads or one, whichever its timings say is faster,
    the other tried again for ``probe`` minibatches in every ``every + probe``; one thread always where two are not
    usable."""
    from revolution_env.common import workers

    now = [0.0]
    monkeypatch.setattr(workers.time, "perf_counter", lambda: now[0])

    def modes(pace, cost):
        out = []
        for _ in range(16):
            with pace as side_by_side:
                now[0] += cost[side_by_side]
            out.append(side_by_side)
        return out

    F, T = False, True
    slow_threads = {True: 2.0, False: 1.0}  # a busy machine: the two threads are slower
    assert modes(workers.Pace(True, every=6, probe=2), slow_threads) == [F, F, T, F, F, F, F, F, T, T] + [F] * 6
    fast_threads = {True: 1.0, False: 2.0}
    assert modes(workers.Pace(True, every=6, probe=2), fast_threads) == [F, F, T, T, T, T, T, T, F, F] + [T] * 6
    assert modes(workers.Pace(False, every=6, probe=2), fast_threads) == [F] * 16


def test_a_run_with_a_teacher_imitates_it_first_through_the_cli(tmp_path):
    out = tmp_path / "run"
    config = write_config(
        tmp_path, n_envs=2, total_steps=64, evaluation={"every": 0}, imitation={"teacher": "value", "steps": 60}
    )
    proc = train_cli("--config", str(config), "--out", str(out))
    log, _ = proc.communicate(timeout=120)
    assert proc.returncode == 0, log
    imitated = re.search(r"imitated value on .* games in (\d+) s; on the tenth held out, the policy's likeliest", log)
    assert imitated, log
    state = json.loads((out / "state.json").read_text())
    assert state["step"] == 64 and state["wall_time"] >= int(imitated.group(1)) - 0.5  # imitation time counts
    bad = write_config(tmp_path, n_envs=1, total_steps=64, imitation={"teacher": "valu"})
    proc = train_cli("--config", str(bad), "--out", str(tmp_path / "bad"))
    log, _ = proc.communicate(timeout=120)
    assert proc.returncode == 2 and "imitation.teacher: expected an agent spec" in log and "got 'valu'" in log, log


def test_a_run_from_an_imitation_evaluates_its_start_so_best_pt_never_scores_below_it(tmp_path):
    out = tmp_path / "run"
    config = write_config(
        tmp_path,
        n_envs=2,
        total_steps=128,
        evaluation={"every": 64, "games": 3, "opponents": ["random"]},
        imitation={"teacher": "value", "steps": 60},
    )
    proc = train_cli("--config", str(config), "--out", str(out))
    log, _ = proc.communicate(timeout=120)
    assert proc.returncode == 0, log
    assert "step 0: win rate vs random" in log, log
    state = json.loads((out / "state.json").read_text())
    evaluations = state["evaluations"]
    assert [e["step"] for e in evaluations] == [0, 64, 128]
    assert state["best_win_rate"] == max(e["mean"] for e in evaluations)
    assert evaluations[0]["mean"] == 1.0 and state["best_step"] == 0  # value's imitation beats random; later ties
    kept = read_checkpoint(out / "best.pt")["policy"]["state_dict"]  # do not replace it: best.pt is the start
    start = read_checkpoint(out / "imitation.pt")["policy"]["state_dict"]
    assert all(torch.equal(kept[k], start[k]) for k in start)
    off = write_config(
        tmp_path,
        n_envs=2,
        total_steps=128,
        evaluation={"every": 64, "games": 3, "opponents": ["random"], "start": False},
        imitation={"teacher": "value", "steps": 60},
    )
    proc = train_cli("--config", str(off), "--out", str(tmp_path / "off"))
    log, _ = proc.communicate(timeout=120)
    assert proc.returncode == 0, log
    assert [e["step"] for e in json.loads((tmp_path / "off" / "state.json").read_text())["evaluations"]] == [64, 128]


def test_ctrl_c_while_imitating_says_there_is_nothing_to_resume(tmp_path):
    import queue
    import threading

    out = tmp_path / "run"
    config = write_config(tmp_path, n_envs=2, imitation={"teacher": "value", "steps": 1_000_000})
    proc = train_cli("--config", str(config), "--out", str(out))
    lines: queue.Queue[str] = queue.Queue()
    reader = threading.Thread(target=lambda: [lines.put(line) for line in proc.stdout], daemon=True)
    reader.start()
    seen = []
    try:
        while not any("imitating value" in line for line in seen):
            seen.append(lines.get(timeout=60))  # raises queue.Empty if the run never gets there
        time.sleep(1.0)
        proc.send_signal(signal.SIGINT)
        code = proc.wait(timeout=60)
    finally:
        proc.kill()
    reader.join(timeout=10)
    log = "".join(seen) + "".join(lines.queue)
    assert code == 130, log  # a crash shows every thread's stack in the log (PYTHONFAULTHANDLER, train_cli)
    assert "aborted before the first save: nothing to resume, start the run again" in log, log
    assert not (out / "state.json").exists()


def test_an_interrupted_recording_closes_its_env_with_no_bid_under_way(monkeypatch):
    """Ctrl-C while imitating: the recording's env is closed on the way out, after the opponents' bids under way in
    its threads (on two cores or more) are done, so that no thread runs the bots while the process exits."""
    from revolution_training import pretrain

    import revolution_env
    from revolution_env.agents.base import act_batch

    envs, calls = [], []
    make = revolution_env.vector_env

    def spy_env(*args, **kwargs):
        envs.append(make(*args, **kwargs))
        return envs[-1]

    def interrupted(agent, *args):
        calls.append(1)
        if len(calls) == 3:
            raise KeyboardInterrupt
        return act_batch(agent, *args)

    monkeypatch.setattr(revolution_env, "vector_env", spy_env)
    monkeypatch.setattr(pretrain, "act_batch", interrupted)
    config = tiny(imitation={"teacher": "value"}, league={"heuristics": ["value", "area"]})
    with pytest.raises(KeyboardInterrupt):
        pretrain.collect(config, 1_000, seed=0, progress=False)
    env = envs[0]
    assert env.closed and not env._pending


def test_an_interrupted_selfplay_recording_waits_for_the_teachers_other_half(monkeypatch):
    """Ctrl-C while recording the teacher's games against itself: the half of the rows that its second copy decides
    in a thread is done before the error goes on, so that no thread runs the bot as the process exits."""
    import threading

    from revolution_training import pretrain

    from revolution_env.agents.base import act_batch

    finished = []

    def interrupted(agent, *args):
        if threading.current_thread() is threading.main_thread():
            raise KeyboardInterrupt
        time.sleep(0.3)
        finished.append(len(args[0]))
        return act_batch(agent, *args)

    monkeypatch.setenv("REVOLUTION_THREADS", "2")
    monkeypatch.setattr(pretrain, "act_batch", interrupted)
    with pytest.raises(KeyboardInterrupt):
        pretrain.collect(imitation_config("value", n_envs=4, imitation={"selfplay": True}), 300, seed=0, progress=False)
    assert finished == [6]  # 4 games of 3 seats bid at once: the second copy's 6 rows


def test_a_finished_run_leaves_no_tensorboard_writer_running(tmp_path):
    """A run closes its TensorBoard writer (SB3 leaves it open): its daemon thread does not outlive the run, to be
    torn down with the interpreter."""
    import threading

    from revolution_training.train import train

    train(tiny(evaluation={"every": 0}), out=tmp_path / "run")
    assert not [t for t in threading.enumerate() if "tensorboard" in type(t).__module__], threading.enumerate()


def test_the_env_backend_is_the_batched_engine_for_every_variant():
    from revolution_training.config import TrainConfig

    assert TrainConfig().backend() == "vector"
    assert TrainConfig(game={"first_edition": True}).backend() == "vector"
    assert TrainConfig(game={"first_edition": True}, env_backend="vector").backend() == "vector"
    assert TrainConfig(game={"first_edition": True}, env_backend="subprocess").backend() == "subprocess"
    assert TrainConfig(env_backend="subprocess").backend() == "subprocess"
    with pytest.raises(ValueError, match="env_backend: expected one of auto, vector, subprocess"):
        TrainConfig(env_backend="gpu")


def test_the_first_edition_trains_on_the_vector_backend(tmp_path):
    """A first-edition run's games are the batched engine's: the learner's Remove decisions among them, and its
    finished games replay."""
    from revolution_training.train import make_vec_env

    config = load_config(
        write_config(tmp_path, n_envs=4, game={"first_edition": True}, league={"heuristics": ["random", "value"]})
    )
    venv = make_vec_env(config, tmp_path / "league", keep_finished=1_000)
    vector = venv.venv.venv  # VecMonitor, SB3VecEnv, the vector env
    assert vector.layout.card_space >= 0
    venv.seed(0)
    venv.reset()
    kinds, finished = set(), []
    for _ in range(300):
        masks = np.stack(venv.env_method("action_masks"))
        kinds.update(vector._kinds.tolist())
        venv.step(np.stack([_masked_sample(m, venv.action_space.nvec) for m in masks]))
        finished += vector.pop_finished()
    assert int(Decision.REMOVE) in kinds and finished
    for scenario, final in finished:
        assert state_dict(run_scenario(scenario)) == final
    venv.close()


@pytest.mark.parametrize("selfplay", [False, True])
def test_a_run_keeps_no_finished_games_that_it_never_reads(tmp_path, selfplay):
    """The batched env of a run keeps no finished games for ``pop_finished()`` (the env's default keeps 100,000
    records, which a long run would hold in memory for nobody); asked for, it keeps them."""
    from revolution_training.train import make_vec_env

    changes = {"selfplay": {"enabled": True}} if selfplay else {"league": {"heuristics": ["random"]}}
    config = load_config(write_config(tmp_path, n_envs=4, **changes))
    for keep, kept in ((None, False), (50, True)):
        venv = (
            make_vec_env(config, tmp_path / "league")
            if keep is None
            else make_vec_env(config, tmp_path / "league", keep)
        )
        vector = venv.venv.venv  # VecMonitor, SB3VecEnv, the vector env
        venv.seed(0)
        venv.reset()
        for _ in range(200):
            masks = np.stack(venv.env_method("action_masks"))
            venv.step(np.stack([_masked_sample(m, venv.action_space.nvec) for m in masks]))
        assert bool(vector.pop_finished()) == kept
        venv.close()


def test_the_vector_backend_reports_who_the_learner_played(tmp_path):
    from revolution_training.train import make_vec_env

    config = load_config(write_config(tmp_path, n_envs=8, league={"heuristics": ["random", "area"]}))
    venv = make_vec_env(config, tmp_path / "league")
    venv.seed(0)
    venv.reset()
    ended = []
    while len(ended) < 8:
        masks = np.stack(venv.env_method("action_masks"))
        actions = np.stack([_masked_sample(m, venv.action_space.nvec) for m in masks])
        _, _, dones, infos = venv.step(actions)
        ended += [infos[i] for i in np.flatnonzero(dones)]
    for info in ended:
        assert len(info["opponents"]) == 2 and set(info["opponents"]) <= {"random", "area"}
        assert "episode" in info and isinstance(info["won"], bool)
    venv.close()


def _masked_sample(mask: np.ndarray, nvec: np.ndarray) -> np.ndarray:
    from revolution_env import MaskedMultiDiscrete

    return MaskedMultiDiscrete(nvec).sample(mask.astype(np.int8))


def test_the_imitation_s_recording_shows_its_progress_in_lines_off_a_terminal(capsys):
    """Nothing was printed between "imitating value: recording 20,000 of its decisions ..." and its end: off a
    terminal, a line at every tenth of the way (on one, a bar; from Python, nothing unless asked)."""
    from revolution_training.pretrain import Progress

    shown = Progress(1000, "recording value", False)
    for done in (5, 120, 130, 550, 1000, 1200):
        shown(done)
    shown.close()
    lines = capsys.readouterr().out.splitlines()
    assert [line.rsplit(",", 1)[0].strip() for line in lines] == [
        "recording value: 120 of 1,000 decisions",
        "recording value: 550 of 1,000 decisions",
        "recording value: 1,000 of 1,000 decisions",
    ]
    quiet = Progress(1000, "recording value", None)
    quiet(1000)
    quiet.close()
    assert capsys.readouterr().out == ""


# --- pure self-play ----------------------------------------------------------------------------------------------


def test_pure_selfplay_puts_every_seat_in_the_learners_hands(tmp_path):
    from revolution_training.train import make_vec_env

    config = load_config(write_config(tmp_path, n_envs=4, selfplay={"enabled": True}, policy={"action_mode": "tokens"}))
    venv = make_vec_env(config, tmp_path / "league")
    assert venv.num_envs == 12  # 4 games x 3 seats
    venv.seed(0)
    venv.reset()
    ended = []
    while len(ended) < 6:
        masks = np.stack(venv.env_method("action_masks"))
        _, _, dones, infos = venv.step((np.random.default_rng(0).random(masks.shape) + masks).argmax(1))
        ended += [infos[i] | {"row": i} for i in np.flatnonzero(dones)]
    for info in ended:
        assert info["opponents"] == [] and info["seat"] == info["row"] % 3 and "episode" in info
    venv.close()


def test_a_short_pure_selfplay_run_evaluates_saves_and_resumes(tmp_path):
    """``selfplay: true`` through the CLI: evaluations, best.pt, latest.pt and a resume, as a league run; every
    step of PPO's is a row (a seat of a game), 4 games x 3 seats x 16 steps a rollout."""
    out = tmp_path / "run"
    config = write_config(
        tmp_path,
        selfplay={"enabled": True},
        total_steps=1536,
        n_envs=4,
        ppo={"n_steps": 16, "batch_size": 64},
        league={"snapshot_every": 768},
        evaluation={"every": 768},
        save_every=384,
    )
    proc = train_cli("--config", str(config), "--out", str(out))
    log, _ = proc.communicate(timeout=300)
    assert proc.returncode == 0, log
    state = json.loads((out / "state.json").read_text())
    assert state["config"]["selfplay"] == {"enabled": True}
    assert state["step"] == 1536 and [e["step"] for e in state["evaluations"]] == [768, 1536]
    assert read_checkpoint(out / "best.pt")["step"] == state["best_step"]
    latest = read_checkpoint(out / "latest.pt")
    assert latest["step"] == 1536
    from revolution_env.evaluation import evaluate_lineup

    ev = evaluate_lineup([str(out / "latest.pt"), "random", "random"], games=3, seed=0, workers=1, progress=False)
    assert ev.stats["run/latest"].games == 3
    more = train_cli("--config", str(config), "--out", str(out), "--resume", "--total-steps", "2304")
    log, _ = more.communicate(timeout=300)
    assert more.returncode == 0, log
    resumed = json.loads((out / "state.json").read_text())
    assert resumed["step"] == 2304 and [e["step"] for e in resumed["evaluations"]] == [768, 1536, 2304]


def test_a_run_with_two_learner_seats_trains_evaluates_the_mirror_table_and_resumes_after_a_kill(tmp_path):
    """``league.learner_seats: 2`` at 3 players through the CLI: 2 games x 2 learner rows x 16 steps a rollout, the
    mirror table (``self``) among the evaluations that pick ``best.pt``; killed after a save, it resumes from that
    save to the end, as every run does."""
    out = tmp_path / "run"
    config = write_config(
        tmp_path,
        total_steps=100_000,
        n_envs=2,
        ppo={"n_steps": 16, "batch_size": 32},
        league={"learner_seats": 2, "heuristics": ["random"], "snapshot_every": 128},
        evaluation={"every": 128, "games": 3, "opponents": ["random", "self"]},
        save_every=64,
    )
    first = train_cli("--config", str(config), "--out", str(out))
    try:
        wait_for_save(out, first, past=64, timeout=240)  # its first evaluation, at 128, plays 6 games
    finally:
        first.kill()
        first.wait()
    saved = json.loads((out / "state.json").read_text())
    assert saved["config"]["league"]["learner_seats"] == 2
    assert saved["step"] % 64 == 0  # whole rollouts of 2 games x 2 learner rows x 16 steps
    final = saved["step"] + 128
    more = train_cli("--config", str(config), "--out", str(out), "--resume", "--total-steps", str(final))
    log, _ = more.communicate(timeout=300)
    assert more.returncode == 0, log
    end = json.loads((out / "state.json").read_text())
    assert end["step"] == final and end["config"]["league"]["learner_seats"] == 2
    assert end["evaluations"] and all(set(e["win_rates"]) == {"random", "self"} for e in end["evaluations"])
    assert read_checkpoint(out / "best.pt")["step"] == end["best_step"]


@pytest.mark.parametrize(
    "backend",
    [
        {"env_backend": "vector", "n_envs": 4},
        {"env_backend": "subprocess", "n_envs": 1},
        {"selfplay": {"enabled": True}},
    ],
    ids=["vector", "scalar", "selfplay"],
)
def test_truncated_reward_ends_every_game_cut_at_max_rounds_with_it(tmp_path, backend):
    """``game.truncated_reward``: a game cut at ``max_rounds`` (D8) ends with that reward for the learner, whatever the
    standing (the games a leader would have won by stalling included), on every backend; other games keep theirs."""
    from revolution_training.train import close_vec_env, make_vec_env

    config = load_config(
        write_config(
            tmp_path, game={"max_rounds": 2, "truncated_reward": -3.0}, league={"heuristics": ["random"]}, **backend
        )
    )
    venv = make_vec_env(config, tmp_path / "league")
    venv.seed(0)
    venv.reset()
    cut, other = [], []
    for _ in range(400):
        masks = np.stack(venv.env_method("action_masks"))
        actions = np.stack([_masked_sample(m, venv.action_space.nvec) for m in masks])
        _, rewards, dones, infos = venv.step(actions)
        for i in np.flatnonzero(dones).tolist():
            (cut if infos[i]["TimeLimit.truncated"] else other).append(float(rewards[i]))
        if len(cut) >= 4:
            break
    close_vec_env(venv)
    assert len(cut) >= 4 and set(cut) == {-3.0}
    assert all(r in (-1.0, 1.0, 0.0) or -1.0 < r < 1.0 for r in other)  # ±1, or a shared win's share


def test_truncated_reward_is_a_number_or_null(tmp_path):
    path = write_config(tmp_path, game={"truncated_reward": "loss"})
    with pytest.raises(ValueError, match="game.truncated_reward: expected a number, or null"):
        load_config(path)
    assert load_config(write_config(tmp_path, game={"truncated_reward": None})).game.truncated_reward is None
