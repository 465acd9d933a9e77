"""PSRO (revolution_training.psro, .meta) and per-game mixtures (revolution_env.agents.mixture.MetaAgent): exact
meta-solvers on games with known equilibria, a solver that does not converge says so, a population file is an
agent that plays one member per game, and a tiny PSRO run goes end to end and resumes."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
import yaml
from revolution_training.config import TrainConfig, merge
from revolution_training.league import LeagueReader
from revolution_training.meta import MetaSolverError, opponent_sets, regret, replicator, zero_sum_nash
from revolution_training.psro import load_psro_config, run_psro

from revolution_env.agents.loading import load_agent, spec_problem
from revolution_env.agents.mixture import MetaAgent
from revolution_env.arena.runner import GameRunner
from tests.test_training import TINY, flat_form


def two_player_table(win: np.ndarray) -> list[dict[tuple[int, ...], float]]:
    """win[i, j]: member i's win share against j."""
    return [{(j,): float(win[i, j]) for j in range(len(win))} for i in range(len(win))]


def test_the_two_player_meta_solver_finds_rock_paper_scissors_and_drops_a_dominated_member():
    rps = np.array([[0.5, 0.0, 1.0], [1.0, 0.5, 0.0], [0.0, 1.0, 0.5]])
    x = zero_sum_nash(two_player_table(rps))
    assert np.allclose(x, 1 / 3, atol=1e-6) and regret(two_player_table(rps), x) < 1e-6
    # a fourth member that loses to everyone gets no weight
    weak = np.pad(rps, ((0, 1), (0, 1)), constant_values=0.0)
    weak[:3, 3], weak[3, 3] = 1.0, 0.5
    x = zero_sum_nash(two_player_table(weak))
    assert x[3] == pytest.approx(0.0, abs=1e-9) and np.allclose(x[:3], 1 / 3, atol=1e-6)


def test_the_two_player_meta_solver_handles_shares_that_do_not_add_to_one():
    # the puppet wins some games: i's and j's shares need not sum to 1; the meta-game is their difference
    win = np.array([[0.4, 0.6], [0.2, 0.4]])
    x = zero_sum_nash(two_player_table(win))
    assert np.allclose(x, [1.0, 0.0], atol=1e-9)


def symmetric_table(k: int, players: int, payoff) -> list[dict[tuple[int, ...], float]]:
    return [{m: payoff(i, m) for m in opponent_sets(k, players)} for i in range(k)]


def test_replicator_dynamics_find_the_equilibrium_of_a_three_player_game():
    # member 0 wins 0.6 at any table, 1 wins 0.2: the pure population of 0 is the equilibrium
    table = symmetric_table(2, 3, lambda i, m: 0.6 if i == 0 else 0.2)
    x = replicator(table, tol=1e-3)
    assert x[0] > 0.99 and regret(table, x) <= 1e-3
    # anti-coordination: a member does best where the others play the other one; the mixed point is 50/50
    table = symmetric_table(2, 3, lambda i, m: sum(j != i for j in m) / 2)
    x = replicator(table, tol=1e-4)
    assert np.allclose(x, 0.5, atol=0.02) and regret(table, x) <= 1e-4


def test_a_meta_solver_that_does_not_converge_says_so_in_one_line():
    table = symmetric_table(3, 3, lambda i, m: 0.6 if i == 0 else 0.2)  # far from the equilibrium in 5 steps
    with pytest.raises(MetaSolverError, match=r"meta-solver: replicator dynamics reached a regret of .* in 5 steps"):
        replicator(table, tol=1e-9, iterations=5)


def test_a_meta_agent_plays_one_member_for_the_whole_game_drawn_with_the_weights():
    options = {"players": 3}
    members = [load_agent("random", **options), load_agent("area", **options)]
    agent = MetaAgent(members, [0.25, 0.75], **options)
    draws = []
    for seed in range(400):
        agent.reset(seed)
        draws.append(agent.current)
    assert 0.68 < Counter(draws)[1] / 400 < 0.82
    agent.reset(3)
    first = agent.current
    agent.reset(3)
    assert agent.current == first  # seeded

    class Recorder:
        def __init__(self, inner, label, log):
            self.inner, self.label, self.log = inner, label, log
            self.name = label

        def reset(self, seed=None):
            self.inner.reset(seed)

        def fork(self, seed):
            return self

        def act(self, observation, info):
            self.log.append(self.label)
            return self.inner.act(observation, info)

    for seed in range(6):
        log: list[str] = []
        meta = MetaAgent([Recorder(m, str(i), log) for i, m in enumerate(members)], [0.5, 0.5], **options)
        GameRunner([meta, load_agent("random", **options), load_agent("random", **options)], options).play(seed)
        assert len(set(log)) == 1  # one member decided every decision of the game


def test_a_population_file_is_an_agent_spec(tmp_path):
    (tmp_path / "pop").mkdir()
    path = tmp_path / "pop" / "population.json"
    path.write_text(
        json.dumps(
            {
                "format": "revolution-population",
                "population": [
                    {"spec": "random", "weight": 0.5},
                    {"spec": "value", "weight": 0.5},
                    {"spec": "area", "weight": 0.0},
                ],
            }
        )
    )
    assert spec_problem(str(path)) is None
    agent = load_agent(str(path), players=2)
    assert isinstance(agent, MetaAgent) and len(agent.agents) == 2  # a member of weight 0 is left out
    assert spec_problem("meta:random@1,value@3") is None
    assert isinstance(load_agent("meta:random@1,value@3", players=2), MetaAgent)
    bad = tmp_path / "bad.json"
    bad.write_text("{}")
    assert "not a finished population file" in spec_problem(str(bad))
    assert "a mixture cannot hold a mixture" in spec_problem("meta:random,mix:value,area")


def test_the_league_draws_its_heuristics_with_their_weights():
    reader = LeagueReader(None, ["random", "area"], {"players": 3}, heuristics_weights=[0.2, 0.8])
    rng = np.random.default_rng(0)
    names = Counter(reader.sample(rng, 0)[0] for _ in range(500))
    assert 0.74 < names["area"] / 500 < 0.86
    with pytest.raises(ValueError, match="league.heuristics_weights: expected one weight per heuristic"):
        TrainConfig(league={"heuristics": ["random", "area"], "heuristics_weights": [1.0]})
    with pytest.raises(ValueError, match="heuristics_weights: they weigh the heuristics under league.opponent_samp"):
        TrainConfig(league={"heuristics": ["random"], "heuristics_weights": [1.0], "opponent_sampling": "pfsp"})


def psro_config(tmp_path, **psro) -> str:
    path = tmp_path / "psro.yaml"
    oracle = merge(
        TINY,
        {
            "game": {"players": 2, "reward": "margin"},
            "total_steps": 128,
            "evaluation": {"every": 0},
            "imitation": {"steps": 64, "epochs": 1},
        },
    )
    path.write_text(yaml.safe_dump({**oracle, "psro": {"population": ["random", "area"], "iterations": 1,
                                                      "payoff_games": 4, "eval_workers": 1, **psro}}))  # fmt: skip
    return str(path)


def test_a_tiny_psro_run_grows_the_population_and_resumes(tmp_path):
    oracle, psro = load_psro_config(psro_config(tmp_path))
    out = tmp_path / "run"
    state = run_psro(oracle, psro, out)
    assert len(state["population"]) == 3 and state["population"][2]["spec"] == "br_1/latest.pt"
    assert sum(m["weight"] for m in state["population"]) == pytest.approx(1.0)
    first = state["iterations"][0]
    assert first["members"] == ["random", "area"]
    br = json.loads((out / "br_1" / "state.json").read_text())["config"]
    assert br["league"]["heuristics"] == [m for m, w in zip(first["members"], first["weights"]) if w > 0]
    assert br["league"]["p_heuristics"] == 1.0
    assert br["league"]["heuristics_weights"] == [w for w in first["weights"] if w > 0]
    agent = load_agent(str(out / "population.json"), players=2)
    assert isinstance(agent, MetaAgent)
    with pytest.raises(ValueError, match="already holds a PSRO run; pass --resume"):
        run_psro(oracle, psro, out)
    played = len(state["played"])
    again = run_psro(oracle, psro, out, resume=True)  # nothing left to do: the same population, no game replayed
    assert again["population"] == state["population"] and len(again["played"]) == played
    saved = json.loads((out / "population.json").read_text())
    assert saved["oracle"] == oracle.to_dict()
    saved["oracle"] = flat_form(oracle)  # a PSRO folder from before the sections
    (out / "population.json").write_text(json.dumps(saved))
    again = run_psro(oracle, psro, out, resume=True)
    assert again["population"] == state["population"] and len(again["played"]) == played


@pytest.mark.parametrize(
    "change, message",
    [
        ({"population": []}, "psro: population: expected a non-empty list"),
        ({"population": ["nobody"]}, "psro: population: expected .*'nobody' is not one"),
        ({"iterations": -1}, "psro: iterations: expected a non-negative integer"),
        ({"payoff_games": 0}, "psro: payoff_games: expected a positive integer"),
        ({"meta_tolerance": 2}, r"psro: meta_tolerance: expected a number in \(0, 1\)"),
        ({"solver": "lp"}, "psro: solver: unknown option"),
    ],
)
def test_a_bad_psro_config_is_one_line(tmp_path, change, message):
    with pytest.raises(ValueError, match=message):
        load_psro_config(psro_config(tmp_path, **change))
    plain = tmp_path / "plain.yaml"
    plain.write_text("game: {players: 2}\n")
    with pytest.raises(ValueError, match="a PSRO config needs a psro: section"):
        load_psro_config(plain)


def test_a_best_response_to_a_per_game_mixture_meets_its_members_drawn_with_the_weights(tmp_path):
    from revolution_training.exploit import default_folder, exploit_config

    config = exploit_config("meta:random@1,area@3", 2, 4096, 0, 4)
    assert config.league.heuristics == ["random", "area"] and config.league.heuristics_weights == [0.25, 0.75]
    assert config.imitation.teacher == "area" and config.init_from is None  # imitates the heaviest member
    assert default_folder("meta:random@1,area@3").name == "meta-random@1_area@3"
    path = tmp_path / "pop" / "population.json"
    path.parent.mkdir()
    path.write_text(json.dumps({"format": "revolution-population", "population": [
        {"spec": "value", "weight": 0.7}, {"spec": "../checkpoints/two_players.pt", "weight": 0.3}]}))  # fmt: skip
    (tmp_path / "checkpoints").mkdir()
    (tmp_path / "checkpoints" / "two_players.pt").write_bytes(
        (Path(__file__).resolve().parents[1] / "checkpoints" / "two_players.pt").read_bytes()
    )
    config = exploit_config(str(path), None, 4096, 0, 4)
    assert config.init_from.endswith("two_players.pt")  # the heaviest checkpoint member, a copy of its policy
    assert config.game.players == 2 and config.league.heuristics_weights == [0.7, 0.3]
    assert default_folder(str(path)).name == "pop-population"


@pytest.mark.parametrize("make", ["vector", "gym"])
def test_a_per_game_mixture_as_an_opponent_plays_a_member_drawn_for_each_game(make):
    import revolution_env

    played: Counter[str] = Counter()
    for seed in range(3 if make == "vector" else 40):
        if make == "vector":
            env = revolution_env.vector_env(32, players=2, opponents="meta:random@1,area@3", seat=0)
            env.reset(seed=seed)
            table = env._table  # index 0: random, played in batch (no agent object)
            played.update("RandomAgent" if i == 0 else type(table[i].agent).__name__ for i in env.opponent_of[:, 1])
        else:
            env = revolution_env.gym_env(players=2, opponents="meta:random@1,area@3", seat=0)
            env.reset(seed=seed)
            played.update(type(agent).__name__ for _, agent in env.unwrapped.opponents.values())
    share = played["AreaBot"] / sum(played.values())
    assert set(played) == {"RandomAgent", "AreaBot"} and 0.6 < share < 0.9
