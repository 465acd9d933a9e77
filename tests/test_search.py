"""`search:` agents (revolution_env/agents/search.py): a policy's candidate bids, scored against the value model's
samples of the rivals' bids, played by regret matching's average strategy; every other decision the policy's."""

from __future__ import annotations

import numpy as np
import pytest
from recording import Recording
from revolution_training.exploit import exploit_config
from revolution_training.exploitability import identity

from revolution_env import vector_env
from revolution_env.agents.heldout import is_held_out
from revolution_env.agents.heuristics import ValueBot
from revolution_env.agents.loading import display_name, is_checkpoint, load_agent, spec_problem
from revolution_env.agents.search import SearchAgent, regret_matching
from revolution_env.arena.runner import GameRunner
from revolution_env.engine.game import Decision
from revolution_env.evaluation import evaluate_lineup

BOTS = {2: "checkpoints/two_players.pt", 3: "checkpoints/three_players.pt", 4: "checkpoints/four_players.pt"}
BOT = BOTS[2]


def bid_positions(players: int, first_edition: bool = False, seed: int = 2):
    """Observations of bids from a game of a search agent against value (its own seat's)."""
    options = {"players": players, "first_edition": first_edition}
    me = Recording(load_agent("random", **options))
    GameRunner([me] + [load_agent("value", **options) for _ in range(players - 1)], options).play(seed)
    return options, [(d.observation, d.info) for d in me.bids()]


@pytest.mark.parametrize("players, first_edition", [(2, False), (3, False), (3, True), (4, False)])
def test_the_value_of_a_bid_against_each_sample_averages_to_the_models_value(players, first_edition):
    """``ValueBot.bid_values``: a bid's worth against each sample of the rivals' bids averages to what the model
    expects of it (its worth per target, summed), for random legal bids in real positions (Guy's terms with two
    players, the Card space in the first edition, Scheming)."""
    options, positions = bid_positions(players, first_edition)
    bot = ValueBot(**options)
    bot.reset(5)
    rng = np.random.default_rng(0)
    space = load_agent("random", **options)
    checked = 0
    for observation, info in positions[:12]:
        view = bot.view(observation)
        space.reset(int(rng.integers(1 << 30)))
        bids = np.stack([bot.codec.bid_counts(space.act(observation, info), view.tokens[0]) for _ in range(6)])
        per_sample, expected = bot.bid_values(observation, bids)
        assert per_sample.shape == (6, bot.samples) and expected.shape == (6,)
        np.testing.assert_allclose(per_sample.mean(1), expected, rtol=1e-12, atol=1e-9)
        checked += 1
    assert checked >= 5


def test_regret_matching_finds_the_mixed_equilibrium_and_the_best_reply():
    rps = np.array([[0.0, -1.0, 1.0], [1.0, 0.0, -1.0], [-1.0, 1.0, 0.0]])
    np.testing.assert_allclose(regret_matching(rps, caution=1.0, iterations=2000), [1 / 3] * 3, atol=0.02)
    # against the columns as drawn (caution 0), the row best on average; a dominated row is never played
    payoff = np.array([[1.0, 0.0], [0.0, 2.0], [-1.0, -1.0]])
    assert regret_matching(payoff, caution=0.0, iterations=500).argmax() == 1
    matching_pennies = np.array([[1.0, -1.0], [-1.0, 1.0], [-2.0, -2.0]])
    x = regret_matching(matching_pennies, caution=1.0, iterations=3000)
    np.testing.assert_allclose(x, [0.5, 0.5, 0.0], atol=0.02)
    with pytest.raises(ValueError, match="caution"):
        regret_matching(rps, caution=1.5)
    with pytest.raises(ValueError, match="iterations"):
        regret_matching(rps, iterations=0)
    assert regret_matching(rps, caution=np.float32(0.5), iterations=np.int64(3)).shape == (3,)


@pytest.mark.parametrize("players", [2, 3, 4])
def test_a_search_agent_plays_legal_reproducible_games_and_mixes_its_bids(players):
    """Whole games through the AEC env (which raises on an illegal action); the same seed plays the same game; a
    bid is one of the policy's candidates, and not always its argmax; every other decision is the argmax."""
    options = {"players": players}
    agent = load_agent(f"search:{BOTS[players]}", **options)
    assert isinstance(agent, SearchAgent) and agent.name == f"search:{BOTS[players]}"
    seen = Recording(agent)
    lineup = [seen] + [load_agent("value", **options) for _ in range(players - 1)]
    first = GameRunner(lineup, options).play(11)
    again = GameRunner([load_agent(f"search:{BOTS[players]}", **options)] + lineup[1:], options).play(11)
    assert (first.support, first.rounds) == (again.support, again.rounds)
    policy = load_agent(f"{BOTS[players]}:argmax", **options)
    differs = 0
    for observation, info, *_ in seen.seen[:40]:
        agent.reset(3)
        action = agent.act(observation, info)
        if info["decision"] != Decision.BID:
            assert (action == policy.act(observation, info)).all()
            continue
        agent.reset(3)
        bids, actions = agent.candidate_bids(observation, info, agent.judge.view(observation).tokens[0])
        assert any((action == a).all() for a in actions)
        assert (actions[0] == policy.act(observation, info)).all()
        differs += not (action == actions[0]).all()
    assert differs > 0


def test_a_search_spec_loads_names_and_refuses_what_it_cannot_play():
    assert not is_checkpoint(f"search:{BOT}")
    assert display_name(f"search:{BOT}") == "search:checkpoints/two_players"
    assert spec_problem(f"search:{BOT}") is None
    for bad in ("search:", "search:value", "search:nosuch.pt", f"search:search:{BOT}"):
        assert "expected search:PATH" in spec_problem(bad)
        with pytest.raises(ValueError, match="expected search:PATH"):
            load_agent(bad, players=2)
    with pytest.raises(ValueError, match="give search:PATH alone"):
        load_agent(f"search:{BOT}:sample", players=2)
    with pytest.raises(ValueError, match="trained for 2 players|players"):
        load_agent(f"search:{BOT}", players=3)
    policy = load_agent(BOT, players=2)
    for bad in ({"candidates": 0}, {"iterations": 1.5}, {"caution": -0.1}, {"caution": True}, {"candidates": "4"}):
        with pytest.raises(ValueError, match="search"):
            SearchAgent(policy, players=2, **bad)
    assert is_held_out("search:checkpoints/heldout/previous_two_players.pt") and not is_held_out(f"search:{BOT}")


def test_search_plays_in_evaluations_as_a_vector_env_opponent_and_under_exploit():
    ev = evaluate_lineup([f"search:{BOT}", "value"], 2, seed=1, env_options={"players": 2}, workers=1)
    assert sum(s.games for s in ev.stats.values()) == 4
    with pytest.warns(UserWarning, match="game by game"):  # no act_batch: said once, then played by act()
        env = vector_env(2, players=2, opponents=[f"search:{BOT}"])
    env.reset(seed=3)
    space = env.single_action_space
    space.seed(0)
    for _ in range(30):
        env.step(np.stack([space.sample(m.astype(np.int8)) for m in env.action_masks()]))
    for target in (f"search:{BOT}", f"mix:search:{BOT}@0.5,value@0.5", f"meta:value@0.4,search:{BOT}@0.6"):
        config = exploit_config(target, None, steps=100, seed=0, eval_games=4)  # starts from the policy searched
        assert config.game.players == 2 and config.init_from == BOT and config.imitation.teacher is None, target
    assert identity(f"search:{BOT}").startswith("search:sha256:")


def test_the_held_out_set_of_a_search_leaves_out_the_policy_it_plays():
    from revolution_env.agents.heldout import default_held_out

    for players, own in ((2, False), (3, True)):  # the 3-player bot is its own previous bot until a new one ships
        plain = default_held_out(players, BOTS[players])
        assert default_held_out(players, f"search:{BOTS[players]}") == plain
        assert any("previous" in spec for spec in plain) != own
