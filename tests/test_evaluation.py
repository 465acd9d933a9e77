"""The evaluation harness: seat rotation, seeding, statistics on hand-made results, and `revolution eval`."""

from __future__ import annotations

import collections
import json
import os
import random
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from openskill.models import PlackettLuce

import revolution_env
from revolution_env.agents.base import Agent, RandomAgent
from revolution_env.agents.checkpoint import gumbel
from revolution_env.agents.loading import load_agent
from revolution_env.engine.game import Decision
from revolution_env.evaluation import (
    GameResult,
    IllegalMoveError,
    aggregate,
    evaluate_lineup,
    evaluate_pool,
    head_to_head,
    name_agents,
    play_game,
    wilson_interval,
)
from revolution_env.evaluation.report import write_atomic
from revolution_env.evaluation.runner import game_seed, lineup_tasks, pool_lineups, seat_orders
from revolution_env.evaluation.stats import lineup_summaries, one_pass, rate
from revolution_env.frontends.evaluate import main

SHIPPED_3P = Path(__file__).resolve().parent.parent / "checkpoints" / "three_players.pt"

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def result(agents: str, support: tuple[int, ...], winners: tuple[int, ...], puppet: int | None = None) -> GameResult:
    return GameResult(tuple(agents.split()), support, winners, rounds=10, puppet_support=puppet)


# --- statistics on constructed games -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("wins", "n", "expected"),
    [(50, 100, (0.4038, 0.5962)), (0, 10, (0.0, 0.2775)), (10, 10, (0.7225, 1.0)), (8, 10, (0.4902, 0.9433))],
)
def test_wilson_interval_matches_known_values(wins, n, expected):
    assert wilson_interval(wins, n) == pytest.approx(expected, abs=1e-4)


def test_wilson_interval_of_no_games_is_everything():
    assert wilson_interval(0, 0) == (0.0, 1.0)


def test_a_win_shared_by_k_players_counts_one_kth():
    results = [
        result("a b c", (100, 100, 60), (0, 1)),  # a and b share
        result("a b c", (90, 90, 90), (0, 1, 2)),  # all three share
        result("c a b", (120, 40, 30), (0,)),  # c alone
    ]
    stats = aggregate(results)
    assert stats["a"].wins == pytest.approx(1 / 2 + 1 / 3)
    assert stats["b"].wins == pytest.approx(1 / 2 + 1 / 3)
    assert stats["c"].wins == pytest.approx(1 / 3 + 1)
    assert sum(s.wins for s in stats.values()) == pytest.approx(len(results))
    assert stats["c"].win_rate == pytest.approx((4 / 3) / 3)
    assert stats["a"].games == 3


def test_margin_is_support_minus_the_best_other_seat():
    stats = aggregate([result("a b c", (100, 80, 60), (0,)), result("b c a", (50, 70, 10), (1,))])
    assert stats["a"].mean_margin == pytest.approx((20 + -60) / 2)
    assert stats["b"].mean_margin == pytest.approx((-20 + -20) / 2)
    assert stats["c"].mean_margin == pytest.approx((-40 + 20) / 2)
    assert stats["a"].mean_support == pytest.approx(55)


def test_the_puppet_counts_in_the_margin_and_a_game_both_lose_has_no_winner():
    # D13: the puppet (Guy Fawkes) beat both players; it is not an agent.
    game = result("a b", (50, 40), (), puppet=70)
    assert game.margins() == [-20, -30]
    assert game.ranks() == [1, 2]  # the players are still ordered by their support
    stats = aggregate([game])
    assert set(stats) == {"a", "b"}
    assert stats["a"].wins == stats["b"].wins == 0


def test_an_agent_that_always_wins_gets_the_highest_rating():
    results = []
    for i in range(30):
        lineup = ["strong", "middle", "weak"]
        order = seat_orders(3)[i % 6]
        seated = [lineup[m] for m in order]
        support = tuple({"strong": 200, "middle": 150, "weak": 100}[n] for n in seated)
        results.append(GameResult(tuple(seated), support, (seated.index("strong"),)))
    stats = aggregate(results)
    assert stats["strong"].mu > stats["middle"].mu > stats["weak"].mu
    assert stats["strong"].win_rate == 1.0
    assert stats["strong"].sigma < 25 / 3  # it learned something


def test_ratings_see_ties_in_the_finishing_order():
    stats = aggregate([result("a b c", (100, 100, 10), (0, 1))] * 5)
    assert stats["a"].mu == pytest.approx(stats["b"].mu)
    assert stats["a"].mu > stats["c"].mu


def _lineup_games(names: str, n: int) -> list[GameResult]:
    """n seat-rotated games of three: the first name wins two in three, the second the rest, the third is last."""
    first, second, third = names.split()
    out = []
    for i in range(n):
        seated = [(first, second, third)[m] for m in seat_orders(3)[i % 6]]
        winner = first if i % 3 else second
        support = tuple(200 if a == winner else 150 if a in (first, second) else 100 for a in seated)
        out.append(GameResult(tuple(seated), support, (seated.index(winner),)))
    return out


def test_ratings_are_a_function_of_the_set_of_games_not_their_order():
    results = _lineup_games("a c d", 30) + _lineup_games("b c d", 30) + _lineup_games("c d e", 30)
    ratings = rate(results, list("abcde"))
    shuffled = results[:]
    random.Random(1).shuffle(shuffled)
    assert rate(shuffled, list("abcde")) == ratings
    assert rate(results[::-1], list("abcde")) == ratings


def test_ratings_do_not_favour_whoever_played_last():
    # a and b have the same results against the same opponents; a's games were all played first, then b's, then
    # games without either. Rated in that order, one pass puts a 3 points above b (the bug this guards against).
    results = _lineup_games("a c d", 60) + _lineup_games("b c d", 60) + _lineup_games("c d e", 120)
    names = list("abcde")
    played = one_pass(PlackettLuce(), results, names)
    assert played["a"].mu - played["b"].mu > 2.0  # the order effect is real in this tournament
    ratings = rate(results, names)
    assert abs(ratings["a"][0] - ratings["b"][0]) < 1.0
    assert ratings["a"][0] > ratings["c"][0] > ratings["d"][0] > ratings["e"][0]


@pytest.mark.parametrize("orders", [0, -1, 2.5, True])
def test_rating_orders_must_be_a_positive_integer(orders):
    with pytest.raises(ValueError, match="orders: expected a positive integer"):
        rate(_lineup_games("a b c", 6), list("abc"), orders=orders)


def test_head_to_head_is_the_row_win_rate_in_games_with_the_column():
    results = [
        result("a b c", (100, 50, 40), (0,)),
        result("a b d", (10, 50, 40), (1,)),
        result("a c d", (100, 50, 100), (0, 2)),
    ]
    h2h = head_to_head(results, ["a", "b", "c", "d"])
    assert h2h["a"]["b"] == pytest.approx(1 / 2)
    assert h2h["a"]["c"] == pytest.approx((1 + 1 / 2) / 2)
    assert h2h["a"]["d"] == pytest.approx((0 + 1 / 2) / 2)
    assert h2h["b"]["a"] == pytest.approx(1 / 2)
    assert h2h["b"]["c"] == 0.0
    assert h2h["a"]["a"] is None
    assert h2h["b"]["c"] is not None and h2h["c"]["b"] == 0.0


def test_each_lineup_reports_its_length_and_the_games_it_stalled_to_max_rounds():
    stall = GameResult(("staller", "b"), (60, 50), (0,), rounds=100, truncated=True)
    results = [
        stall,
        GameResult(("b", "staller"), (40, 41), (1,), rounds=100, truncated=True),  # the other seat order
        GameResult(("staller", "b"), (30, 50), (1,), rounds=20),
        GameResult(("b", "c"), (30, 30), (0, 1), rounds=100, truncated=True),  # a shared win counts 1/2
        GameResult(("c", "b"), (30, 50), (1,), rounds=12),
    ]
    rows = lineup_summaries(results, ["staller", "b", "c"])
    assert [r["agents"] for r in rows] == [["staller", "b"], ["b", "c"]]  # whatever the seats
    staller, other = rows
    assert staller["games"] == 3 and staller["mean_rounds"] == pytest.approx(220 / 3)
    assert staller["truncated"] == 2 and staller["truncated_rate"] == pytest.approx(2 / 3)
    assert staller["truncated_wins"] == {"staller": 2.0, "b": 0.0}  # it wins the games it drags to the end
    assert other["truncated"] == 1 and other["truncated_wins"] == {"b": 0.5, "c": 0.5}
    assert other["mean_rounds"] == pytest.approx(56.0)


def test_results_and_report_show_truncation_per_lineup(tmp_path):
    out = tmp_path / "pool"
    assert run_eval("--players", "2", "--pool", "random", "area", "value", "--games", "2", "--max-rounds", "3",
                    "--workers", "1", "--out", str(out)) == 0  # fmt: skip
    data = json.loads((out / "results.json").read_text())
    assert [row["agents"] for row in data["lineups"]] == [["random", "area"], ["random", "value"], ["area", "value"]]
    for row in data["lineups"]:  # three rounds: every game reaches max_rounds
        assert row["games"] == 2 and row["truncated"] == 2 and row["truncated_rate"] == 1.0
        assert row["mean_rounds"] == 3.0 and sum(row["truncated_wins"].values()) <= 2
    report = (out / "report.md").read_text()
    assert "| lineup | games | mean rounds | truncated at max_rounds | won when truncated |" in report
    assert "| random + area | 2 | 3.0 | 2 (100.0%) |" in report


# --- scheduling --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("players", "games"), [(2, 6), (3, 12), (4, 48)])
def test_seat_rotation_covers_every_order_equally(players, games):
    names = [f"agent{i}" for i in range(players)]
    tasks = lineup_tasks(names, names, games, seed=0)
    orders = collections.Counter(t.names for t in tasks)
    assert len(orders) == len(seat_orders(players)) == [2, 6, 24][players - 2]
    assert set(orders.values()) == {games // len(orders)}
    for seat in range(players):
        assert collections.Counter(t.names[seat] for t in tasks) == dict.fromkeys(names, games // players)


def test_every_game_has_its_own_seed_drawn_from_the_evaluation_seed():
    tasks = lineup_tasks(["a", "b", "c"], ["a", "b", "c"], 50, seed=7)
    assert len({t.seed for t in tasks}) == 50
    assert [t.seed for t in tasks] == [game_seed(7, i) for i in range(50)]
    assert game_seed(7, 0) != game_seed(8, 0)


def test_a_round_robin_plays_every_lineup_of_distinct_members():
    lineups = pool_lineups(["a", "b", "c", "d", "e"], 3)
    assert len(lineups) == 10
    assert all(len(set(lineup)) == 3 for lineup in lineups)
    assert len({frozenset(lineup) for lineup in lineups}) == 10


def test_agents_given_twice_get_suffixes():
    assert name_agents(["random", "random", "x", "random"]) == {
        "random": "random",
        "random#2": "random",
        "x": "x",
        "random#3": "random",
    }


# --- playing -----------------------------------------------------------------------------------------------


def test_play_game_reports_the_engine_final_scores():
    agents = [RandomAgent(players=3) for _ in range(3)]
    first = play_game(agents, {"players": 3}, seed=11, names=["x", "y", "z"])
    again = play_game(agents, {"players": 3}, seed=11, names=["x", "y", "z"])
    assert first == again
    assert first.agents == ("x", "y", "z") and len(first.support) == 3 and first.puppet_support is None
    best = max(first.support)
    assert first.winners == tuple(s for s in range(3) if first.support[s] == best)
    assert not first.truncated and 1 <= first.rounds < 100


def test_play_game_two_players_keeps_the_puppet_apart():
    r = play_game([RandomAgent(players=2), RandomAgent(players=2)], {"players": 2}, seed=3)
    assert len(r.support) == 2 and r.puppet_support is not None
    assert all(r.support[w] > r.puppet_support for w in r.winners)


class Cheat(Agent):
    name = "cheat"

    def act(self, observation, info):
        a = np.zeros(len(self.codec.nvec), dtype=np.int64)
        a[1:] = 999  # no such bid target
        return a


def test_an_illegal_action_is_an_error_not_a_result():
    with pytest.raises(IllegalMoveError, match="cheat"):
        play_game([RandomAgent(players=3), Cheat(players=3), RandomAgent(players=3)], {"players": 3}, seed=0)


def test_the_same_seed_gives_the_same_evaluation_whatever_the_workers():
    one = evaluate_lineup(["random", "random", "random"], games=8, seed=5, workers=1, progress=False)
    two = evaluate_lineup(["random", "random", "random"], games=8, seed=5, workers=2, progress=False)
    assert one.results == two.results
    assert one.to_dict() == two.to_dict()
    other = evaluate_lineup(["random", "random", "random"], games=8, seed=6, workers=1, progress=False)
    assert other.results != one.results


def test_each_evaluate_function_takes_its_tournaments_parameters_then_where_its_games_are_played():
    """``evaluate_lineup``, ``evaluate_pool``, ``evaluate_gauntlet``: one piece of code (``runner._played``) over
    their tournaments, taking the tournament's parameters with ``workers``, ``progress``, ``ray_address`` after
    ``env_options``, by position too; an unknown argument is refused as a Python function refuses it."""
    import inspect

    from revolution_env.evaluation import evaluate_gauntlet
    from revolution_env.evaluation.runner import gauntlet_tournament, lineup_tournament, pool_tournament

    pairs = [(evaluate_lineup, lineup_tournament), (evaluate_pool, pool_tournament)]
    for evaluate, tournament in [*pairs, (evaluate_gauntlet, gauntlet_tournament)]:
        made = list(inspect.signature(tournament).parameters)
        at = made.index("env_options") + 1
        where = ["workers", "progress", "ray_address"]
        assert list(inspect.signature(evaluate).parameters) == made[:at] + where + made[at:]
        assert evaluate.__name__ == "evaluate_" + tournament.__name__.removesuffix("_tournament")
        assert evaluate.__doc__
    by_position = evaluate_lineup(["random", "random", "random"], 3, 5, None, 1, False)
    by_name = evaluate_lineup(["random", "random", "random"], games=3, seed=5, workers=1, progress=False)
    assert by_position.results == by_name.results and len(by_name.results) == 3
    with pytest.raises(TypeError, match="unexpected keyword argument 'worker'"):
        evaluate_lineup(["random", "random", "random"], games=3, worker=1)


@pytest.mark.parametrize(
    "specs,options",
    [
        (["value", "bargain", "area"], {}),
        (["random", "value"], {"players": 2}),  # the puppet, D9's coin flips
        (["area", "random", "bargain", "value"], {"players": 4, "bid_refunds": True}),
        (["checkpoints/three_players.pt", "value", "random"], {}),  # one forward pass for many games
        (["checkpoints/two_players.pt:sample", "value"], {"players": 2}),  # a sampling policy: its own stream
        (["bargain", "area", "random"], {"area_control_bonus": True}),
        (["mix:checkpoints/two_players.pt@3,value", "mix:bargain,random"], {"players": 2}),  # a draw per decision
        (["mix:checkpoints/two_players.pt:sample@2,value", "mix:checkpoints/two_players.pt,area"], {"players": 2}),
        # a member drawn per game (meta:), sampling policies in one pass with each game's own stream
        (["meta:checkpoints/three_players.pt:sample@2,value", "checkpoints/three_players.pt:sample", "random"], {}),
        # the first edition: the deck from each game's seed, Remove decisions
        (["value", "bargain", "random"], {"first_edition": True}),
        (["random", "value"], {"players": 2, "first_edition": True}),
        (["area", "random", "value", "bargain"], {"players": 4, "first_edition": True, "area_control_bonus": True}),
    ],
)
def test_the_batched_engine_plays_the_same_games_as_one_by_one(specs, options):
    """Evaluation games side by side on the batched engine (evaluation.batched) are the games play_task plays
    alone: the same results and the same recorded scenarios, game by game."""
    from revolution_env.arena.batched import can_batch
    from revolution_env.evaluation import runner as R

    names = R.name_agents(specs)
    opts = R._options(options, len(specs))
    tasks = R.lineup_tasks(list(names), list(names.values()), 12, seed=7)
    agents = {(n, s): R._agent(n, s, opts) for n, s in names.items()}
    assert can_batch(list(agents.values()), opts)
    alone = [R.play_task(t, opts) for t in tasks]
    side_by_side = R._play_chunk(tasks, opts)
    assert [r.to_dict() for r in side_by_side] == [r.to_dict() for r in alone]
    if options.get("first_edition"):
        assert any("remove" in r for result in alone for r in result.scenario["rounds"])


def test_a_checkpoint_in_a_mixture_decides_for_all_its_games_in_one_pass(monkeypatch):
    """The batched path plays a deterministic checkpoint that a mixture drew for a game's decision with the others
    it decides for (act_batch), never game by game (act), and the games are still those played one by one."""
    from revolution_env.agents.checkpoint import PolicyAgent
    from revolution_env.evaluation import runner as R

    specs = ["mix:checkpoints/two_players.pt:argmax@3,value", "bargain"]  # deterministic: the bot samples
    names = R.name_agents(specs)
    opts = R._options({"players": 2}, 2)
    tasks = R.lineup_tasks(list(names), list(names.values()), 6, seed=3)
    alone = [R.play_task(t, opts) for t in tasks]
    batches = []
    original = PolicyAgent.act_batch

    def counted(self, observations, masks, decisions):
        batches.append(len(observations))
        return original(self, observations, masks, decisions)

    def refused(self, observation, info):
        raise AssertionError("a checkpoint decided for one game alone")

    monkeypatch.setattr(PolicyAgent, "act_batch", counted)
    monkeypatch.setattr(PolicyAgent, "act", refused)
    side_by_side = R._play_chunk(tasks, opts)
    assert [r.to_dict() for r in side_by_side] == [r.to_dict() for r in alone]
    assert max(batches) > 1


def test_a_sampling_checkpoint_and_a_per_game_member_decide_in_one_pass(monkeypatch):
    """A sampling policy (and a checkpoint a meta: spec drew for the game) is never asked game by game on the batched
    path: one forward pass, each game's draw from its own stream (the games are checked above)."""
    from revolution_env.agents.checkpoint import PolicyAgent
    from revolution_env.evaluation import runner as R

    specs = ["checkpoints/two_players.pt:sample", "meta:checkpoints/two_players.pt@3,value"]
    names = R.name_agents(specs)
    opts = R._options({"players": 2}, 2)
    tasks = R.lineup_tasks(list(names), list(names.values()), 6, seed=5)
    alone = [R.play_task(t, opts) for t in tasks]

    def refuse(self, observation, info):
        raise AssertionError("a policy asked game by game on the batched path")

    monkeypatch.setattr(PolicyAgent, "act", refuse)
    assert [r.to_dict() for r in R._play_chunk(tasks, opts)] == [r.to_dict() for r in alone]


def test_what_the_batched_engine_does_not_play_goes_one_by_one():
    from revolution_env.agents.mixture import MixtureAgent
    from revolution_env.arena.batched import can_batch

    assert not can_batch([RandomAgent(players=3)] * 3, {"players": 3, "action_mode": "tokens"})
    assert not can_batch([RandomAgent(players=3), Cheat(players=3)], {"players": 3})  # an agent of its own
    mixed = MixtureAgent([RandomAgent(players=3), Cheat(players=3)], [1, 1], players=3)
    assert not can_batch([RandomAgent(players=3), mixed], {"players": 3})  # ... in a mixture


def test_a_pool_evaluation_gives_each_member_its_share_of_games():
    ev = evaluate_pool(["random"] * 3, players=2, games=2, seed=1, workers=1, progress=False)
    assert len(ev.results) == 3 * 2
    assert {name: s.games for name, s in ev.stats.items()} == {"random": 4, "random#2": 4, "random#3": 4}
    assert ev.head_to_head["random"]["random#2"] is not None


# --- agent specs -------------------------------------------------------------------------------------------


def test_load_agent_knows_random_and_rejects_the_unknown():
    assert isinstance(load_agent("random", players=4), RandomAgent)
    with pytest.raises(ValueError, match=r"unknown agent spec 'nobody'.*random"):
        load_agent("nobody", players=3)


def test_a_checkpoint_spec_with_sample_plays_a_seeded_mixed_strategy():
    greedy = load_agent(str(SHIPPED_3P), players=3)
    sampling = load_agent(f"{SHIPPED_3P}:sample", players=3)
    assert greedy.deterministic and not sampling.deterministic
    env = revolution_env.env(players=3)
    env.reset(seed=0)
    decisions = []  # the first 40 decisions of a random game: a trained policy is sure of some, not of all
    walker = RandomAgent(players=3)
    walker.reset(0)
    for _ in range(40):
        obs, info = env.observe(env.agent_selection), env.infos[env.agent_selection]
        decisions.append((obs, info))
        env.step(walker.act(obs, info))

    def plays(agent, seed):
        agent.reset(seed)
        return [tuple(agent.act(obs, info)) for obs, info in decisions for _ in range(5)]

    assert plays(sampling, 1) == plays(sampling, 1)  # seeded by reset
    assert plays(sampling, 1) != plays(sampling, 2)
    assert plays(greedy, 1) == plays(greedy, 2) != plays(sampling, 1)
    with pytest.raises(ValueError, match="no such checkpoint file"):
        load_agent("nowhere.pt:sample", players=3)


def test_a_sampling_checkpoint_skips_forced_draws_as_if_it_drew_them():
    """Outside bidding the tokens allow 0 only: the policy computes the choice's logits alone and skips the tokens'
    Gumbel draws on its generator; its actions, and the generator after them, are those of drawing every value."""
    agent = load_agent(f"{SHIPPED_3P}:sample", players=3)
    env = revolution_env.env(players=3)
    env.reset(seed=3)
    walker = RandomAgent(players=3)
    walker.reset(3)
    observations, masks, kinds = [], [], []
    while len(observations) < 120 and not all(env.terminations.values()):
        obs, info = env.observe(env.agent_selection), env.infos[env.agent_selection]
        observations.append(obs["observation"])
        masks.append(obs["action_mask"])
        kinds.append(int(info["decision"]))
        env.step(walker.act(obs, info))
    observations, masks, kinds = np.array(observations), np.array(masks), np.array(kinds)
    other = kinds != int(Decision.BID)
    assert 10 < other.sum() < len(kinds)

    def drawn_in_full(rows, seed):  # every value's logit and Gumbel draw, as the chooser did before
        rng = np.random.default_rng(seed)
        logits = agent.net.logits(observations[rows] / agent.scale)
        action = np.zeros((len(rows), len(agent.codec.nvec)), dtype=np.int64)
        for start, d, k, w in agent.chooser.runs:
            legal = masks[rows, start : start + k * w].reshape(len(rows), k, w) != 0
            scores = np.where(legal, logits[:, start : start + k * w].reshape(len(rows), k, w), -np.inf)
            action[:, d : d + k] = np.argmax(scores + rng.gumbel(size=scores.shape), axis=2)
        return action, rng.bit_generator.state

    for rows in (np.flatnonzero(other), np.arange(len(kinds)), np.flatnonzero(other)[:1]):
        assert agent.chooser.needed(masks[rows]) < masks.shape[1] or not other[rows].all()
        agent.reset(7)
        actions = agent.act_batch(observations[rows], masks[rows], kinds[rows])
        expected, state = drawn_in_full(rows, 7)
        np.testing.assert_array_equal(actions, expected)
        assert agent.rng.bit_generator.state == state
    with pytest.raises(ValueError, match="leave a choice"):
        agent.chooser.choose_batch(np.zeros((1, 3)), masks[~other][:1], None)


def test_the_gumbel_noise_of_legal_values_is_numpys_and_takes_the_same_draws():
    legal = np.random.default_rng(0).random((30, 4, 9)) < 0.3
    sizes = [5, 0, 25]
    rngs = [np.random.default_rng(seed) for seed in (1, 2, 3)]
    noise = gumbel(rngs, sizes, legal)
    lo = 0
    for seed, size, rng in zip((1, 2, 3), sizes, rngs):
        reference = np.random.default_rng(seed)
        drawn = reference.gumbel(size=(size, 4, 9))
        part = legal[lo : lo + size]
        np.testing.assert_array_equal(noise[lo : lo + size][part], drawn[part])
        assert (noise[lo : lo + size][~part] == 0).all()
        assert rng.bit_generator.state == reference.bit_generator.state
        lo += size

    class ZeroFirst:  # a generator whose first uniform is 0, which numpy's Gumbel draws again
        def __init__(self):
            self.inner = np.random.default_rng(4)
            self.bit_generator = self.inner.bit_generator

        def random(self, out):
            self.inner.random(out=out)
            out.flat[0] = 0.0

        def gumbel(self, size):
            return self.inner.gumbel(size=size)

    odd = ZeroFirst()
    noise = gumbel([odd], [2], np.ones((2, 3), dtype=bool))
    reference = np.random.default_rng(4)
    np.testing.assert_array_equal(noise, reference.gumbel(size=(2, 3)))
    assert odd.bit_generator.state == reference.bit_generator.state


@pytest.mark.parametrize("spec", ["", ":sample"])
def test_a_checkpoints_groups_of_repeated_rows_play_as_each_group_alone(spec):
    """``PolicyAgent.act_groups``: one forward pass for many groups of rows, each repeated and seeded, gives each
    group what ``reset(seed)`` and ``act_batch`` on its repeated rows give."""
    agent = load_agent(f"{SHIPPED_3P}{spec}", players=3)
    env = revolution_env.env(players=3)
    env.reset(seed=5)
    walker = RandomAgent(players=3)
    walker.reset(5)
    rows = []
    while len(rows) < 12:
        obs, info = env.observe(env.agent_selection), env.infos[env.agent_selection]
        rows.append((obs["observation"], obs["action_mask"], int(info["decision"])))
        env.step(walker.act(obs, info))
    obs, masks, kinds = (np.array(x) for x in zip(*rows))
    sizes, seeds, repeats = [3, 1, 0, 8], [11, 12, 13, 14], [4, 2, 3, 1]
    got = agent.act_groups(obs, masks, kinds, sizes, seeds, repeats)
    lo = 0
    for size, seed, n, actions in zip(sizes, seeds, repeats, got):
        agent.reset(seed)
        group = (np.repeat(a[lo : lo + size], n, 0) for a in (obs, masks, kinds))
        np.testing.assert_array_equal(actions, agent.act_batch(*group))
        lo += size


def test_a_checkpoint_is_loaded_without_the_training_package(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "revolution_training", None)  # loading a bot never needs the training package
    monkeypatch.setitem(sys.modules, "revolution_training.policy", None)
    agent = load_agent(str(SHIPPED_3P), players=3)
    assert agent.name == str(SHIPPED_3P)
    with pytest.raises(ValueError, match="no such checkpoint file"):
        load_agent(str(tmp_path / "missing.pt"), players=3)
    with pytest.raises(ValueError, match="is a folder"):
        load_agent(str(tmp_path), players=3)
    empty = tmp_path / "policy.pt"
    empty.write_bytes(b"")
    with pytest.raises(ValueError, match="not a Revolution! policy checkpoint"):
        load_agent(str(empty), players=3)


def test_a_checkpoint_without_torch_says_how_to_get_it(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "torch", None)
    with pytest.raises(ValueError, match=r"needs torch: pip install -e '\.\[torch\]'"):
        load_agent(str(SHIPPED_3P), players=3)


# --- outputs -----------------------------------------------------------------------------------------------


def test_an_interrupted_write_leaves_the_old_file(tmp_path):
    path = tmp_path / "results.json"
    path.write_text("old")

    def half_then_fail(fh):
        fh.write("half")
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        write_atomic(path, half_then_fail)
    assert path.read_text() == "old"
    assert [p.name for p in tmp_path.iterdir()] == ["results.json"]


def run_eval(*args: str) -> int:
    return main(["--quiet", *args])


def test_eval_lineup_writes_results_report_and_plot(tmp_path):
    out = tmp_path / "ev"
    assert run_eval("--players", "3", "--agents", "random", "random", "random", "--games", "6", "--out", str(out)) == 0
    data = json.loads((out / "results.json").read_text())
    assert data["config"]["specs"] == ["random"] * 3
    assert data["config"]["players"] == 3 and data["config"]["games"] == 6 and data["config"]["seed"] == 0
    assert data["config"]["options"]["max_rounds"] == 100
    assert set(data["agents"]) == {"random", "random#2", "random#3"}
    for stats in data["agents"].values():
        assert stats["games"] == 6
        low, high = stats["win_rate_ci95"]
        assert 0 <= low <= stats["win_rate"] <= high <= 1
        assert set(stats["rating"]) >= {"mu", "sigma"}
        assert {"mean_support", "mean_margin"} <= set(stats)
    assert "head_to_head" not in data
    report = (out / "report.md").read_text()
    assert "| agent | games | win rate |" in report
    assert "revolution eval --players 3 --agents random random random --games 6 --seed 0" in report
    assert (out / "win_rates.png").read_bytes()[:8] == PNG_MAGIC
    assert len((out / "games.jsonl").read_text().splitlines()) == 6


def test_eval_pool_adds_the_head_to_head_matrix_and_heatmap(tmp_path):
    out = tmp_path / "pool"
    args = ["--players", "2", "--pool", "random", "random", "random", "--games", "2", "--out", str(out)]
    assert run_eval(*args, "--bid-refunds", "--max-rounds", "30") == 0
    data = json.loads((out / "results.json").read_text())
    assert data["config"]["options"] == {
        "players": 2,
        "area_control_bonus": False,
        "first_edition": False,
        "max_rounds": 30,
        "bid_refunds": True,
    }
    assert set(data["head_to_head"]) == {"random", "random#2", "random#3"}
    assert data["head_to_head"]["random"]["random"] is None
    assert "## Head to head" in (out / "report.md").read_text()
    assert (out / "head_to_head.png").read_bytes()[:8] == PNG_MAGIC


def test_eval_is_reproducible_from_its_seed_across_workers(tmp_path):
    lineup = ["--players", "2", "--agents", "random", "random", "--games", "6", "--seed", "3"]
    assert run_eval(*lineup, "--workers", "1", "--out", str(tmp_path / "a")) == 0
    assert run_eval(*lineup, "--workers", "2", "--out", str(tmp_path / "b")) == 0
    a, b = (tmp_path / "a" / "results.json").read_text(), (tmp_path / "b" / "results.json").read_text()
    assert a == b
    assert (tmp_path / "a" / "games.jsonl").read_text() == (tmp_path / "b" / "games.jsonl").read_text()


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--agents", "random", "random", "random", "--pool", "random", "random", "random"], "exactly one of"),
        (["--games", "3"], "exactly one of"),
        (["--players", "3", "--agents", "random", "random"], "need 3 specs, got 2"),
        (["--players", "4", "--pool", "random", "random"], "at least 4"),
        (["--players", "2", "--agents", "random", "nobody"], "unknown agent spec 'nobody'"),
        (["--players", "2", "--agents", "random", "random", "--games", "0"], "--games"),
        (["--players", "5", "--agents", "random"] * 1, "players: expected 2, 3 or 4, got 5"),
        (["--agents", "random", "random", "random", "--max-rounds", "0"], "max_rounds: expected a positive integer"),
        (["--players", "2", "--agents", "random", "random", "--seed", "-1"], "--seed"),
        (["--players", "2", "--agents", "random", "random", "--workers", "0"], "--workers"),
        (["--players", "2", "--agents", "random", "random", "--board", "nowhere"], "board"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(args, message, capsys):
    assert run_eval(*args) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and message in err
    assert err.count("\n") == 1


@pytest.mark.parametrize("args", [["--games", "many"], ["--bogus"], ["--players"]])
def test_a_malformed_flag_is_one_line_and_exit_2(args, capsys):
    with pytest.raises(SystemExit) as exit_info:
        run_eval("--agents", "random", "random", "random", *args)
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and err.count("\n") == 1


def test_python_m_revolution_env_eval_runs(tmp_path):
    cmd = [sys.executable, "-m", "revolution_env", "eval", "--players", "2", "--agents", "random", "random"]
    proc = subprocess.run([*cmd, "--games", "2", "--workers", "1"], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert "random#2" in proc.stdout


def test_a_checkpoint_rewritten_at_the_same_path_is_loaded_again(tmp_path, monkeypatch):
    from revolution_env.evaluation import runner

    loads = []
    monkeypatch.setattr(runner, "load_agent", lambda spec, **opts: loads.append(spec) or object())
    monkeypatch.setattr(runner, "_AGENTS", {})
    path = tmp_path / "bot.pt"
    path.write_bytes(b"first")
    first = runner._agent("bot", str(path), {"players": 3})
    assert runner._agent("bot", str(path), {"players": 3}) is first  # cached while unchanged
    sampling = runner._agent("bot:sample", f"{path}:sample", {"players": 3})
    path.write_bytes(b"second, longer")
    assert runner._agent("bot", str(path), {"players": 3}) is not first
    assert runner._agent("bot:sample", f"{path}:sample", {"players": 3}) is not sampling  # PATH:sample: its file
    assert len(loads) == 4


def test_checkpoint_paths_are_named_by_folder_and_stem():
    from revolution_env.evaluation.runner import name_agents

    names = name_agents(["runs/a/latest.pt", "value", "checkpoints/three_players.pt", "runs/b/latest.pt", "value"])
    assert names == {
        "a/latest": "runs/a/latest.pt",
        "value": "value",
        "checkpoints/three_players": "checkpoints/three_players.pt",
        "b/latest": "runs/b/latest.pt",
        "value#2": "value",
    }
    sampling = name_agents(["checkpoints/three_players.pt", "checkpoints/three_players.pt:sample"])
    assert list(sampling) == ["checkpoints/three_players", "checkpoints/three_players:sample"]


def test_wilson_interval_is_exact_at_zero_and_all_wins_and_holds_the_rate():
    from revolution_env.evaluation.stats import wilson_interval

    for n in (1, 7, 1000):
        assert wilson_interval(0, n)[0] == 0.0
        assert wilson_interval(n, n)[1] == 1.0
        for k in range(0, n + 1, max(1, n // 10)):
            low, high = wilson_interval(k, n)
            assert low <= k / n <= high


# --- gauntlet ----------------------------------------------------------------------------------------------


def test_gauntlet_tables_are_every_multiset_of_opponents():
    from revolution_env.evaluation.runner import gauntlet_tables

    assert gauntlet_tables(["a", "b", "c"], 2) == [("a",), ("b",), ("c",)]
    assert len(gauntlet_tables(["a", "b", "c"], 3)) == 6  # aa ab ac bb bc cc
    assert len(gauntlet_tables(["a", "b", "c"], 4)) == 10
    assert ("a", "a", "a") in gauntlet_tables(["a", "b", "c"], 4)


def test_a_gauntlet_reports_every_table_and_its_worst(tmp_path):
    from revolution_env.evaluation import evaluate_gauntlet
    from revolution_env.evaluation.report import write_all

    ev = evaluate_gauntlet("value", ["random", "area"], 3, games=6, seed=1, workers=1, progress=False)
    g = ev.gauntlet
    assert [t["opponents"] for t in g["tables"]] == [["random", "random"], ["random", "area"], ["area", "area"]]
    assert all(t["games"] == 6 for t in g["tables"]) and len(ev.results) == 18
    for t, start in zip(g["tables"], (0, 6, 12)):  # each table's win rate is the agent's share of its own games
        part = ev.results[start : start + 6]
        assert t["win_rate"] == sum(r.win_share(r.agents.index("value")) for r in part) / 6
        assert t["win_rate_ci95"][0] <= t["win_rate"] <= t["win_rate_ci95"][1]
    assert g["worst"] == min(g["tables"], key=lambda t: t["win_rate"])
    again = evaluate_gauntlet("value", ["random", "area"], 3, games=6, seed=1, workers=2, progress=False)
    assert again.gauntlet == g  # the seed decides, not the workers
    written = {p.name for p in write_all(ev, tmp_path)}
    assert {"gauntlet.png", "report.md", "results.json"} <= written
    assert "## Gauntlet" in (tmp_path / "report.md").read_text()
    assert json.loads((tmp_path / "results.json").read_text())["gauntlet"]["worst"] == g["worst"]


def test_gauntlet_on_the_command_line(tmp_path):
    assert main(["--players", "2", "--gauntlet", "random", "--opponents", "random", "area", "--games", "2",
                 "--workers", "1", "--quiet", "--out", str(tmp_path)]) == 0  # fmt: skip
    data = json.loads((tmp_path / "results.json").read_text())
    assert [t["opponents"] for t in data["gauntlet"]["tables"]] == [["random#2"], ["area"]]
    assert main(["--players", "2", "--gauntlet", "random", "--agents", "random", "random"]) == 2
    assert main(["--players", "2", "--gauntlet", "random", "--opponents", "area", "area"]) == 2


def test_a_ray_evaluation_gives_the_local_results():
    pytest.importorskip("ray")
    from revolution_env.evaluation import evaluate_gauntlet

    local = evaluate_gauntlet("value", ["random", "area"], 2, games=4, seed=3, workers=1, progress=False)
    on_ray = evaluate_gauntlet("value", ["random", "area"], 2, games=4, seed=3, workers=2, progress=False,
                               ray_address="")  # fmt: skip
    assert [r.to_dict() for r in on_ray.results] == [r.to_dict() for r in local.results]
    assert on_ray.to_dict() == local.to_dict()


def test_the_table_is_printed_in_full_when_not_on_a_terminal():
    out = subprocess.run(
        [sys.executable, "-m", "revolution_env", "eval", "--players", "3", "--pool", "value", "random", "area",
         "bargain", "--games", "1", "--workers", "1"],
        capture_output=True, text=True, env={**__import__("os").environ, "COLUMNS": "40"},
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    assert "…" not in out.stdout
    assert "| agent | games | win rate | 95% CI | mean support | mean margin | rating (mu ± sigma) |" in out.stdout
    assert "head to head" in out.stdout


def test_win_share_rotates_the_seat_and_is_reproducible():
    from revolution_env.agents.heuristics import ValueBot
    from revolution_env.arena.runner import play_game, win_share

    options = {"players": 3}
    bot = ValueBot(**options)
    share = win_share(bot, options, games=6, seed=40)
    assert share == win_share(bot, options, games=6, seed=40)
    by_hand = [play_game([bot if s == g % 3 else RandomAgent(**options) for s in range(3)], options, seed=40 + g)
               for g in range(6)]  # fmt: skip
    assert share == sum(r.win_share(g % 3) for g, r in enumerate(by_hand)) / 6
    assert share > 0.5  # value against two random bots
    with pytest.raises(ValueError, match="games: expected at least 1, got 0"):
        win_share(bot, options, games=0)


def test_pool_workers_share_the_cores_between_their_math_libraries(monkeypatch):
    """Each of the evaluation's worker processes gets its share of the cores for OpenBLAS, OpenMP, MKL and Numba
    (a batched checkpoint's forward passes in two workers, each with a BLAS thread per core, took 2.8 times as
    long); a variable the user has set is theirs, and the parent's environment is left as it was."""
    from revolution_env.common.workers import THREAD_VARIABLES, usable_cores, worker_pool

    for name in THREAD_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("MKL_NUM_THREADS", "3")
    with worker_pool(2) as pool:
        seen = pool.map(os.getenv, THREAD_VARIABLES)
    share = str(max(1, usable_cores() // 2))
    assert dict(zip(THREAD_VARIABLES, seen)) == {
        "OMP_NUM_THREADS": share,
        "OPENBLAS_NUM_THREADS": share,
        "MKL_NUM_THREADS": "3",
        "NUMBA_NUM_THREADS": share,
    }
    assert os.environ.get("OPENBLAS_NUM_THREADS") is None and os.environ["MKL_NUM_THREADS"] == "3"


# --- resuming (revolution_env/evaluation/journal.py) ---------------------------------------------------------------

RESUMABLE = {
    "lineup": ["--players", "2", "--agents", "random", "value", "--games", "6"],
    "pool": ["--players", "2", "--pool", "random", "value", "bargain", "--games", "2"],
    "gauntlet": ["--players", "3", "--gauntlet", "value", "--opponents", "random", "area", "--held-out", "bargain",
                 "--games", "2"],
}  # fmt: skip


def stop_after(monkeypatch, pieces: int, signal_class: type = KeyboardInterrupt) -> None:
    """Ctrl-C (or SIGTERM: ``Terminated``) right after the evaluation has written ``pieces`` more pieces of games."""
    from revolution_env.evaluation.journal import Journal

    record, calls = Journal.record, []

    def record_then_stop(self, tasks, results):
        record(self, tasks, results)
        calls.append(len(tasks))
        if len(calls) == pieces:
            raise signal_class

    monkeypatch.setattr(Journal, "record", record_then_stop)


def outputs(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir()) if p.suffix in (".json", ".jsonl", ".md")}


@pytest.mark.parametrize(("mode", "workers"), [("lineup", "1"), ("pool", "2"), ("gauntlet", "1")])
def test_an_evaluation_stopped_again_and_again_ends_as_one_never_stopped(tmp_path, monkeypatch, mode, workers):
    """Stopped by Ctrl-C, then by SIGTERM, it writes the games so far, marked partial, and the same command
    continues; the last run's files are those of a run never stopped (played with other workers)."""
    from revolution_env.common.workers import Terminated

    args = [*RESUMABLE[mode], "--seed", "4"]
    assert run_eval(*args, "--workers", workers, "--out", str(tmp_path / "uninterrupted")) == 0
    whole = outputs(tmp_path / "uninterrupted")
    total = json.loads(whole["results.json"])["progress"]["games_total"]
    out = tmp_path / "resumed"
    played = 0
    for stop, status in ((KeyboardInterrupt, 130), (Terminated, 143)):
        with monkeypatch.context() as patch:
            stop_after(patch, 2 if stop is Terminated else 1, stop)
            assert run_eval(*args, "--workers", "1", "--out", str(out)) == status
        results = json.loads((out / "results.json").read_text())
        lines = (out / "games.jsonl").read_text().splitlines()
        assert played < len(lines) < total
        assert results["complete"] is False
        assert results["progress"] == {"games_played": len(lines), "games_total": total}
        assert "**Partial: interrupted after" in (out / "report.md").read_text()
        played = len(lines)
    assert run_eval(*args, "--workers", "1", "--out", str(out)) == 0
    moved = {name: whole[name].replace(b"/uninterrupted", b"/resumed") for name in ("report.md", "evaluation.json")}
    assert outputs(out) == {**whole, **moved}


def test_a_partial_gauntlet_reports_the_tables_played_so_far(tmp_path, monkeypatch):
    """Stopped before some tables have any game: those have no win rate and are no one's worst table."""
    out = tmp_path / "g"
    stop_after(monkeypatch, 2)
    assert run_eval(*RESUMABLE["gauntlet"], "--workers", "1", "--out", str(out)) == 130
    data = json.loads((out / "results.json").read_text())
    tables = data["gauntlet"]["tables"]
    assert [t["games"] for t in tables] == [2, 2, 0]  # 8 games in four pieces of 2: the first two
    assert tables[2]["win_rate"] is None and data["gauntlet"]["worst"] in tables[:2]
    assert data["held_out"]["tables"][0]["games"] == 0 and data["held_out"]["worst"] is None
    assert "no table played yet" in (out / "report.md").read_text()
    assert (out / "gauntlet.png").read_bytes()[:8] == PNG_MAGIC


class FakeRay:
    """What the evaluation uses of Ray, run here: each chunk is played when it is waited for, the last one asked for
    first, so that games finish out of order (as on a cluster)."""

    class Ref:
        def __init__(self, function, args):
            self.function, self.args = function, args

    def __init__(self):
        self.started, self.cancelled = False, []

    def is_initialized(self):
        return self.started

    def init(self, **kwargs):
        self.started = True

    def shutdown(self):
        self.started = False

    def cluster_resources(self):
        return {"CPU": 1.0}

    def remote(self, function):
        return type("Remote", (), {"remote": lambda _, *args: FakeRay.Ref(function, args)})()

    def wait(self, pending, num_returns=1):
        return pending[-1:], pending[:-1]

    def get(self, ref):
        return ref.function(*ref.args)

    def cancel(self, ref):
        self.cancelled.append(ref)


def test_an_evaluation_on_ray_resumes_whatever_order_its_games_finish_in(tmp_path, monkeypatch):
    import importlib.machinery
    import types

    fake = FakeRay()
    module = types.ModuleType("ray")
    module.__spec__ = importlib.machinery.ModuleSpec("ray", None)
    for name in ("is_initialized", "init", "shutdown", "cluster_resources", "remote", "wait", "get", "cancel"):
        setattr(module, name, getattr(fake, name))
    args = [*RESUMABLE["pool"], "--seed", "9"]
    assert run_eval(*args, "--workers", "1", "--out", str(tmp_path / "local")) == 0
    monkeypatch.setitem(sys.modules, "ray", module)
    out = tmp_path / "ray"
    with monkeypatch.context() as patch:
        stop_after(patch, 2)
        assert run_eval(*args, "--ray", "--out", str(out)) == 130
    lines = [json.loads(line) for line in (out / "games.jsonl").read_text().splitlines()]
    assert [line["game"] for line in lines] == [5, 4]  # chunks of one game (1 CPU), the last first
    assert fake.cancelled and not fake.started  # the rest cancelled, the session closed
    assert run_eval(*args, "--ray", "--out", str(out)) == 0
    local = outputs(tmp_path / "local")
    assert json.loads(local["results.json"]) == json.loads((out / "results.json").read_text())
    assert local["games.jsonl"] == (out / "games.jsonl").read_bytes()  # rewritten in game order at the end


def test_a_torn_last_line_is_played_again_and_the_file_repaired_before_appending(tmp_path, monkeypatch):
    """A kill in the middle of a line (SIGKILL, a power cut) leaves it torn: reading drops it, and the file is
    rewritten with the whole lines before the next game is appended, so that no line is glued to the torn one."""
    args = ["--players", "2", "--agents", "random", "value", "--games", "6", "--seed", "2", "--workers", "1"]
    assert run_eval(*args, "--out", str(tmp_path / "whole")) == 0
    out = tmp_path / "torn"
    with monkeypatch.context() as patch:
        stop_after(patch, 2)
        assert run_eval(*args, "--out", str(out)) == 130
    games = out / "games.jsonl"
    lines = games.read_bytes().splitlines(keepends=True)
    assert len(lines) == 4  # six games in pieces of two: two pieces
    games.write_bytes(b"".join(lines[:-1]) + lines[-1][: len(lines[-1]) // 2])  # the last line cut in half
    with monkeypatch.context() as patch:
        stop_after(patch, 1)
        assert run_eval(*args, "--out", str(out)) == 130
    again = [json.loads(line) for line in games.read_text().splitlines()]  # every line whole
    assert [line["game"] for line in again] == [0, 1, 2, 3]  # game 3 played again, appended on a line of its own
    assert run_eval(*args, "--out", str(out)) == 0
    assert games.read_bytes() == (tmp_path / "whole" / "games.jsonl").read_bytes()
    assert json.loads((out / "results.json").read_text()) == json.loads(
        (tmp_path / "whole" / "results.json").read_text()
    )


def test_a_damaged_line_before_the_last_is_one_line_naming_it(tmp_path, capsys):
    args = ["--players", "2", "--agents", "random", "value", "--games", "3", "--workers", "1", "--out", str(tmp_path)]
    assert run_eval(*args) == 0
    games = tmp_path / "games.jsonl"
    lines = games.read_text().splitlines(keepends=True)
    capsys.readouterr()
    for damaged, words in [
        ("{not json\n", "line 2 is not a game"),
        (lines[2], "line 3 is not a game of this evaluation (game 2)"),  # a game given twice
        (lines[1].replace('"game": 1', '"game": 7'), "line 2 is not a game of this evaluation"),
    ]:
        games.write_text(lines[0] + damaged + lines[2])
        assert run_eval(*args) == 2
        err = capsys.readouterr().err
        assert err.startswith("error: --out: ") and words in err and err.count("\n") == 1, err


def test_what_an_agent_plays_from_is_fingerprinted(tmp_path):
    from revolution_env.evaluation.journal import files_of, fingerprints, identity

    bot = str(tmp_path / "bot.pt")
    assert files_of("value") == [] and files_of(bot) == files_of(f"{bot}:sample") == [bot]
    assert files_of(f"search:{bot}") == files_of(f"mix:{bot}@2,value") == files_of(f"meta:{bot}:sample,random") == [bot]
    (tmp_path / "bot.pt").write_bytes(b"one")
    population = tmp_path / "population.json"
    members = [{"spec": "bot.pt", "weight": 1}, {"spec": "value", "weight": 1}]
    population.write_text(json.dumps({"format": "revolution-population", "population": members}))
    assert files_of(str(population)) == [str(population), bot]
    assert files_of(f"equilibrium:k=4:{bot}") == [bot]  # the policy a search plays
    first = fingerprints({"a": bot, "b": f"mix:{bot}@1,value"})
    assert list(first) == [bot]
    # an agent's identity: the same fingerprints in the spec, so that a copy elsewhere is the same agent
    copy = tmp_path / "elsewhere" / "copy.pt"
    copy.parent.mkdir()
    copy.write_bytes(b"one")
    digest = "sha256:" + first[bot]
    assert (
        identity(f"mix:{bot}:sample@2,value")
        == identity(f"mix:{copy}:sample@2,value")
        == f"mix:{digest}:sample@2,value"
    )
    assert identity(f"equilibrium:k=4:{bot}") == f"equilibrium:k=4:{digest}" and identity("value") == "value"
    assert identity(f"search:{copy}") == f"search:{digest}" and identity(str(population)).endswith(
        f"[{digest}@1,value@1]"
    )
    (tmp_path / "bot.pt").write_bytes(b"two")
    assert fingerprints({"a": bot}) != first and identity(bot) != identity(str(copy))  # retrained at the same path
