"""What `revolution_v2` promises beyond v1 (docs/environment.md §5).

- PettingZoo's api_test, parallel_api_test, seed_test and parallel_seed_test pass with default options on 2, 3
  and 4 players (parallel_seed_test samples unmasked actions: the default ``illegal="terminate"`` ends the game);
- infos hold numbers only: ``decision`` is a :class:`revolution_env.Decision` and ``illegal_action`` 0 or 1;
- ``illegal``: "terminate" (-1 to the offender, 0 to the others, one warning) or "raise", the same on AEC and
  Parallel; a Parallel step checks every action before applying any;
- ``revolution_v1`` in PettingZoo's registry says it was replaced; a v1 checkpoint loads with one warning.
"""

from __future__ import annotations

import functools
import warnings

import numpy as np
import pettingzoo
import pytest
from pettingzoo.test import api_test, parallel_api_test, parallel_seed_test, seed_test

import revolution_env
from revolution_env import Decision, IllegalActionError
from revolution_env.agents import checkpoint as checkpoint_module
from revolution_env.engine import Game, Rules

NEEDS_REGISTRY = pytest.mark.skipif(not hasattr(pettingzoo, "register"), reason="PettingZoo < 1.27 has no registry")

PLAYERS = [2, 3, 4]


@pytest.fixture(autouse=True)
def _quiet():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # Dict / MultiDiscrete spaces, illegal moves by design
        yield


@pytest.mark.parametrize("players", PLAYERS)
def test_the_four_pettingzoo_tests_pass_with_default_options(players):
    api_test(revolution_env.env(players=players), num_cycles=200)
    parallel_api_test(revolution_env.parallel_env(players=players), num_cycles=200)
    seed_test(functools.partial(revolution_env.env, players=players), num_cycles=200)
    parallel_seed_test(functools.partial(revolution_env.parallel_env, players=players), num_cycles=200)


def test_parallel_seed_test_really_meets_an_illegal_action():
    # The point of the default: an unmasked sample is nearly always illegal, and the game ends instead of raising.
    env = revolution_env.parallel_env(players=3)
    env.reset(seed=42)
    env.action_space("player_0").seed(0)
    actions = {a: env.action_space(a).sample() for a in env.agents}
    _, rewards, terminations, truncations, infos = env.step(actions)
    assert all(terminations.values()) and not any(truncations.values())
    assert any(info["illegal_action"] == 1 for info in infos.values())
    assert all(rewards[a] == (-1.0 if infos[a]["illegal_action"] else 0.0) for a in rewards)
    assert env.agents == []


def _infos_are_numbers(infos: dict) -> None:
    for info in infos.values():
        assert set(info) == {"decision", "illegal_action"}
        assert isinstance(info["decision"], Decision) and isinstance(info["decision"], int)
        assert info["illegal_action"] in (0, 1)
        np.asarray(list(info.values()), dtype=np.int64)  # what tensor libraries do with them


@pytest.mark.parametrize("players", PLAYERS)
def test_infos_hold_numbers_only_through_a_whole_game(players):
    env = revolution_env.parallel_env(players=players, first_edition=players == 3)
    observations, infos = env.reset(seed=1)
    seen = set()
    while env.agents:
        _infos_are_numbers(infos)
        seen |= {info["decision"] for info in infos.values()}
        actions = {a: env.action_space(a).sample(observations[a]["action_mask"]) for a in env.agents}
        observations, _, _, _, infos = env.step(actions)
    _infos_are_numbers(infos)
    assert {Decision.BID, Decision.NONE} <= seen


def test_decision_names_are_the_v1_strings():
    assert [str(d) for d in Decision] == [
        "none", "bid", "guy", "spy", "apothecary_first", "apothecary_second", "remove",
    ]  # fmt: skip
    assert f"{Decision.APOTHECARY_FIRST}" == "apothecary_first"
    assert Decision.parse("spy") is Decision.SPY and Decision.parse(3) is Decision.SPY
    with pytest.raises(ValueError, match="unknown decision 'bids'"):
        Decision.parse("bids")


def _bad_bid(env, agent: str) -> np.ndarray:
    action = np.zeros(len(env.action_space(agent).nvec), dtype=np.int64)
    action[0] = 1  # the choice dimension is masked to 0 during a bid
    return action


def test_aec_terminate_ends_the_game_with_minus_one_and_marks_the_offender(caplog):
    env = revolution_env.env(players=3)
    env.reset(seed=0)
    agent = env.agent_selection
    env.step(_bad_bid(env, agent))
    assert [r.message for r in caplog.records if "Illegal move" in r.message] != []  # PettingZoo's one warning
    assert all(env.terminations.values()) and not any(env.truncations.values())
    assert env.rewards == {a: (-1.0 if a == agent else 0.0) for a in env.possible_agents}
    assert env.infos[agent]["illegal_action"] == 1
    assert all(env.infos[a]["illegal_action"] == 0 for a in env.possible_agents if a != agent)


def test_aec_raise_raises_and_changes_nothing():
    env = revolution_env.env(players=3, illegal="raise")
    env.reset(seed=0)
    agent = env.agent_selection
    before = env.unwrapped.state_dict()
    with pytest.raises(IllegalActionError, match=rf"{agent}: illegal action for decision bid: choice 1"):
        env.step(_bad_bid(env, agent))
    assert env.unwrapped.state_dict() == before and env.agent_selection == agent


def test_parallel_raise_checks_every_action_before_applying_any():
    env = revolution_env.parallel_env(players=3, illegal="raise")
    observations, _ = env.reset(seed=0)
    actions = {a: env.action_space(a).sample(observations[a]["action_mask"]) for a in env.agents}
    good = dict(actions)
    actions["player_2"] = _bad_bid(env, "player_2")  # the last agent's action is the illegal one
    before = env.state_dict()
    with pytest.raises(IllegalActionError, match="player_2"):
        env.step(actions)
    assert env.state_dict() == before
    env.step(good)  # the corrected retry is accepted
    assert env.state_dict()["round"] == 2 or env.game.phase != "bidding"


def test_raw_env_always_raises():
    with pytest.raises(ValueError, match="illegal: raw_env always raises"):
        revolution_env.raw_env(players=3, illegal="terminate")
    with pytest.raises(ValueError, match=r"illegal: expected one of terminate, raise, got 'ignore'"):
        revolution_env.env(players=3, illegal="ignore")
    with pytest.raises(ValueError, match="illegal: expected one of"):
        revolution_env.parallel_env(players=3, illegal=None)


@NEEDS_REGISTRY
def test_pettingzoo_make_revolution_v1_says_it_was_replaced():
    for kind in ("aec", "parallel"):
        with pytest.raises(ValueError, match="revolution_v1 is replaced by revolution_v2"):
            pettingzoo.make(kind, "revolution_v1", players=3)
    assert pettingzoo.make("parallel", "revolution_v2", players=4).metadata["name"] == "revolution_v2"


def test_a_v1_checkpoint_loads_with_one_warning_that_says_what_changed(tmp_path, monkeypatch):
    torch = pytest.importorskip("torch")
    data = torch.load("checkpoints/three_players.pt", map_location="cpu", weights_only=True)
    data["env"] = "revolution_v1"
    path = tmp_path / "v1.pt"
    torch.save(data, path)
    monkeypatch.setattr(checkpoint_module, "_warned", set())
    with pytest.warns(
        UserWarning, match="trained on revolution_v1, this is revolution_v2: v2 changed the rules of Guy"
    ):
        revolution_env.load_agent(str(path), players=3)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        revolution_env.load_agent(str(path), players=3)  # once only
    data["env"] = "revolution_v9"
    torch.save(data, path)
    with pytest.raises(ValueError, match="trained on 'revolution_v9', which this code does not know"):
        revolution_env.load_agent(str(path), players=3)


def _tied_round(game: Game) -> np.ndarray:
    """Both players: 1 Scheming Gold and the same bid on the Printer, so D9 comes to the coin flip."""
    L = game.layout
    bids = np.zeros((2, L.n_targets, 3), dtype=np.int64)
    bids[:, L.scheming, 2] = 1
    bids[:, 7] = (1, 1, 2)
    return bids


def test_the_d9_coin_flip_is_seeded_and_recorded_for_the_replay():
    firsts = {}
    for seed in range(16):
        game = Game.new(Rules(players=2), seed=seed)
        game.submit_bids(_tied_round(game))
        firsts[seed] = game.history[-1]["priority"]
        assert game.decision.seat == firsts[seed]
        again = Game.new(Rules(players=2), seed=seed)
        again.submit_bids(_tied_round(again))
        assert again.history[-1]["priority"] == firsts[seed]
    assert set(firsts.values()) == {0, 1}
    game = Game.new(Rules(players=2), seed=0)
    forced = 1 - firsts[0]
    game.submit_bids(_tied_round(game), priority=forced)
    assert game.decision.seat == forced


def test_an_exported_two_player_game_gives_priority_in_every_round():
    env = revolution_env.parallel_env(players=2)
    observations, _ = env.reset(seed=5)
    while env.agents:
        actions = {a: env.action_space(a).sample(observations[a]["action_mask"]) for a in env.agents}
        observations, *_ = env.step(actions)
    rounds = revolution_env.engine.export_game(env.game)["rounds"]
    assert rounds and all(r["priority"] in (0, 1) for r in rounds)
    replayed = revolution_env.run_scenario(revolution_env.engine.export_game(env.game))
    assert revolution_env.state_dict(replayed) == env.state_dict()


@pytest.mark.parametrize("make", [revolution_env.env, revolution_env.parallel_env], ids=["aec", "parallel"])
def test_a_seeded_reset_seeds_the_games_reset_after_it_without_one(make):
    """Gymnasium's convention: reset(seed=s), then reset(), reset()... is one reproducible sequence of games."""

    def seeds(env, first):
        env.reset(seed=first)
        out = [env.unwrapped.core.game.seed]
        for _ in range(3):
            env.reset()
            out.append(env.unwrapped.core.game.seed)
        return out

    a = seeds(make(players=2), 11)
    assert a == seeds(make(players=2), 11) and a[0] == 11 and len(set(a)) == 4
    assert seeds(make(players=2), 12)[1:] != a[1:]
    unseeded = make(players=2)
    unseeded.reset()
    first = unseeded.unwrapped.core.game.seed
    unseeded.reset()
    assert unseeded.unwrapped.core.game.seed != first  # never seeded: every game draws its own
