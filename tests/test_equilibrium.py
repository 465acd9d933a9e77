"""The round's equilibrium search (revolution_env/agents/equilibrium.py): its candidate loop on the scalar engine,
checked where the answer is known, and the ``equilibrium:`` agent wherever a spec goes."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from blotto import characters_won
from recording import Recording

from revolution_env.agents.base import RandomAgent
from revolution_env.agents.equilibrium import (
    ENGINES,
    SEED_BOUND,
    EquilibriumAgent,
    RoundSearcher,
    Sampler,
    Settings,
    appraisal_value,
    margin_value,
    neighbours,
    parse_spec,
    play_rounds,
    random_sampler,
    seat_values,
)
from revolution_env.agents.loading import display_name, is_checkpoint, load_agent, spec_problem
from revolution_env.agents.matrix_games import nash_conv
from revolution_env.arena.runner import GameRunner
from revolution_env.engine.game import BID, Decision, Game, Rules, clean_bids
from revolution_env.engine.random_play import random_bids, random_choice
from revolution_env.engine.scenario import state_dict
from revolution_env.env import observation_layout
from revolution_env.env.reconstruct import game_from_observation

BOT = "checkpoints/two_players.pt"
GAP = 0.02  # the search's NashConv (regret matching, 1,000 iterations) in the Blotto-like rounds below


def position(options: dict, seed: int, rounds: int) -> Game:
    """A game at the bid decision of round ``1 + rounds`` after random play."""
    game = Game.new(Rules(**options), seed)
    rng = np.random.default_rng(seed)
    while game.round <= rounds and game.decision is not None:
        if game.decision.kind == BID:
            game.submit_bids(random_bids(game, rng))
        else:
            game.choose(random_choice(game, rng))
    assert game.decision is not None and game.decision.kind == BID
    return game


def blotto_payoffs(game: Game, joint: np.ndarray) -> np.ndarray:
    """What :func:`characters_won` gives each player for a joint bid, computed from the bids alone (docs/rules.md
    §3-§4: cleaned bids, the strictly highest wins; no puppet)."""
    L = game.layout
    cleaned, _ = clean_bids(joint, L)
    keys = cleaned[:, : L.n_characters] @ L.strength  # (players, C)
    best = keys.max(0)
    sole = ((keys == best).sum(0) == 1) & (best > 0)
    won = np.array([(sole & (keys[s] == best)).sum() for s in range(L.players)])
    return np.array([won[s] - np.delete(won, s).max() for s in range(L.players)]) / L.n_characters


def searcher(options: dict, value=None, heuristics=("value", "bargain", "area"), **settings) -> RoundSearcher:
    layout = observation_layout(**options)
    bots = [load_agent(name, **options) for name in heuristics]
    return RoundSearcher(layout, random_sampler(**options), RandomAgent(**options),
                         value or margin_value(layout), bots, Settings(**settings))  # fmt: skip


@pytest.mark.parametrize("players", [3, 4])
def test_the_payoffs_of_a_blotto_round_are_the_contests_of_the_candidate_bids(players):
    """With a value that counts characters won, the loop's payoff tensor is the Blotto game of the candidates'
    bids, entry by entry (each joint bid stepped on the engine, the next state's observations scored, seats in
    order); its solution's gap is small; every seat's candidates are distinct, the heuristics' first."""
    options = {"players": players}
    layout = observation_layout(**options)
    k = 4 if players == 3 else 3
    search = searcher(options, characters_won(layout), candidates=k, oracle=0, iterations=1000)
    for seed in range(2):
        game = position(options, seed, 2)
        before = game.copy()
        found = search.search(game, np.random.default_rng(seed))
        assert [len(b) for b in found.bids] == [k] * players
        for s, (bids, actions) in enumerate(zip(found.bids, found.actions)):
            assert len({b.tobytes() for b in bids}) == k
            held = game.tokens[s]
            assert all((layout.codec.bid_counts(a, held) == b).all() for a, b in zip(actions, bids))
            assert (bids.sum(1) == held).all()  # every token placed (D3)
        for joint in itertools.product(range(k), repeat=players):
            bids = np.stack([found.bids[s][i] for s, i in enumerate(joint)])
            np.testing.assert_allclose(found.payoffs[joint], blotto_payoffs(game, bids), err_msg=str(joint))
        assert found.rollouts == k**players
        assert found.solution.nash_conv <= GAP
        assert nash_conv(found.payoffs, found.solution.strategies) == pytest.approx(found.solution.nash_conv)
        assert state_dict(game) == state_dict(before) and len(game.history) == len(before.history)  # untouched


def test_a_two_player_round_is_solved_as_the_zero_sum_difference_game_and_ends_in_rewards_where_the_game_ends():
    options = {"players": 2}
    search = searcher(options, candidates=3, oracle=0)
    found = search.search(position(options, 4, 3), np.random.default_rng(0))
    assert found.payoffs.shape == (*[len(b) for b in found.bids], 2)
    assert found.solution.zero_sum and found.solution.method == "lp"
    assert found.solution.nash_conv < 1e-6
    # a game that ends within the round pays the final rewards (win_loss), not the value
    game = position({"players": 3, "max_rounds": 2}, 1, 1)
    rounds = play_rounds(game, random_bids(game, np.random.default_rng(0))[None], RandomAgent(players=3, max_rounds=2),
                         observation_layout(players=3, max_rounds=2))  # fmt: skip
    assert rounds[0].over
    values = seat_values(rounds, observation_layout(players=3, max_rounds=2), lambda o: np.full(len(o), 0.5))
    won = [s in rounds[0].final["winners"] for s in range(3)]
    assert values[0].tolist() == [1.0 if w else -1.0 for w in won]


def test_the_double_oracle_adds_a_best_response_that_gains_and_nothing_that_does_not():
    """From one candidate per seat (value's bid), a single-token move that wins one more character gains against
    the others' (pure) strategies: it joins, and its payoff row shows the gain; a threshold above any gain adds
    nothing."""
    options = {"players": 3}
    layout = observation_layout(**options)
    game = position(options, 2, 2)
    grown = searcher(options, characters_won(layout), heuristics=("value",), candidates=1, pool=64, oracle=1,
                     oracle_gain=0.0).search(game, np.random.default_rng(1))  # fmt: skip
    assert sum(grown.added) >= 1
    for s, added in enumerate(grown.added):
        if added:
            before = np.take(grown.payoffs, 0, axis=s)[(0,) * 2][s]  # the seat's first candidate against the others'
            after = np.take(grown.payoffs, len(grown.bids[s]) - 1, axis=s)[(0,) * 2][s]
            assert after > before, s
    same = searcher(options, characters_won(layout), heuristics=("value",), candidates=1, pool=64, oracle=1,
                    oracle_gain=10.0).search(game, np.random.default_rng(1))  # fmt: skip
    assert same.added == [0, 0, 0] and [len(b) for b in same.bids] == [1, 1, 1]


@pytest.mark.parametrize(
    "options, blueprint, rounds",
    [
        ({"players": 2}, "value", 3),
        ({"players": 3}, "value", 2),
        ({"players": 4, "bid_refunds": True, "area_control_bonus": True}, "bargain", 4),
        ({"players": 2, "first_edition": True}, "area", 2),
        ({"players": 3, "first_edition": True}, "random", 3),
        ({"players": 3, "max_rounds": 3}, "value", 2),  # every joint bid ends the game: the final rewards
    ],
)
def test_the_batched_engine_gives_the_scalar_references_search_entry_by_entry(options, blueprint, rounds):
    """``engine=batched`` (every joint bid a row of the batched engine) against ``engine=scalar`` (a copy of the game
    each), the same generator and the blueprint reset alike: the same candidates, the same payoffs entry by entry,
    the same double oracle and equilibrium. The round's other decisions are the blueprint's, drawn from its own
    generator, in the same order on both engines (the rows waiting at each step, in row order), so that the draws
    match; D9's coin is the position's on both. The position, rebuilt from an observation as an agent rebuilds it
    (the first edition's pile and deck generator drawn), is left untouched."""
    layout = observation_layout(**options)
    value = margin_value(layout)
    bots = [load_agent(name, **options) for name in ("value", "bargain", "area")]
    ended = 0
    for seed in range(2):
        real = position(options, seed, rounds)
        game = game_from_observation(layout.build(real, seed % real.layout.players, BID), layout, 0,
                                     np.random.default_rng(seed))  # fmt: skip
        before = state_dict(game)
        found = {}
        for engine in ENGINES:
            chooser = load_agent(blueprint, **options)
            chooser.reset(seed)
            sampler = Sampler(load_agent(blueprint, **options), cheap=blueprint == "random")
            settings = Settings(candidates=4, oracle=1, pool=8, oracle_gain=0.0, engine=engine)
            search = RoundSearcher(layout, sampler, chooser, value, bots, settings)
            found[engine] = search.search(game, np.random.default_rng(seed))
            assert state_dict(game) == before
        batched, scalar = found["batched"], found["scalar"]
        for s in range(real.layout.players):
            np.testing.assert_array_equal(batched.bids[s], scalar.bids[s])
        assert batched.payoffs.shape == scalar.payoffs.shape and batched.rollouts == scalar.rollouts
        np.testing.assert_allclose(batched.payoffs, scalar.payoffs, rtol=0, atol=1e-12)
        assert batched.added == scalar.added
        for x, y in zip(batched.solution.strategies, scalar.solution.strategies):
            np.testing.assert_allclose(x, y, atol=1e-9)
        ended += int((np.abs(scalar.payoffs) == 1).all())
    if options.get("max_rounds") == 3:
        assert ended == 2


class FirstLegal(RandomAgent):
    """A blueprint whose every decision is fixed by the state: the first legal value of every dimension."""

    def act(self, observation, info):
        return first_legal(self.codec, observation["action_mask"])


def first_legal(codec, mask) -> np.ndarray:
    return np.array([int(np.argmax(mask[o : o + n])) for o, n in zip(codec.offsets, codec.nvec)])


@pytest.mark.parametrize("options", [{"players": 2}, {"players": 3, "first_edition": True}, {"players": 4}])
def test_the_rounds_of_many_positions_in_one_batch_are_those_of_each_alone(options):
    """``BatchedRounds.payoffs_many``: positions of several games, their joint bids on rows of one batch, the round's
    other decisions in one call a step over all of them: each position's payoffs as it has them alone, and as the
    scalar reference has them (a blueprint whose decisions are fixed by the state, so that no draw depends on which
    rows are asked together)."""
    from revolution_env.agents.equilibrium import BatchedRounds

    layout = observation_layout(**options)
    chooser, value = FirstLegal(**options), margin_value(layout)
    games = [position(options, seed, 2 + seed) for seed in range(3)]
    joint = []
    for i, game in enumerate(games):
        rng = np.random.default_rng(i)
        joint.append(np.stack([random_bids(game, rng) for _ in range(5 + i)]))
    rounds = BatchedRounds(layout)
    together = rounds.payoffs_many(games, joint, chooser, value)
    for game, bids, got in zip(games, joint, together):
        alone = BatchedRounds(layout).payoffs(game, bids, chooser, value)
        scalar = seat_values(play_rounds(game, bids, chooser, layout), layout, value)
        np.testing.assert_allclose(got, alone, rtol=0, atol=1e-12)
        np.testing.assert_allclose(got, scalar, rtol=0, atol=1e-12)
    assert len({float(p[0, 0]) for p in together}) == 3  # three positions, three different payoffs


@pytest.mark.parametrize("options", [{"players": 2}, {"players": 3, "first_edition": True}])
@pytest.mark.parametrize("engine", ENGINES)
def test_many_searches_at_once_find_what_each_finds_alone(options, engine):
    """``RoundSearcher.search_many``: positions searched together (their rounds in one batch at every stage) find
    each what its search alone finds with the same generator: candidates, payoffs, the double oracle's additions,
    strategies (a blueprint whose round decisions the state fixes, so that no draw depends on which rows are asked
    together)."""
    layout = observation_layout(**options)
    bots = [load_agent(name, **options) for name in ("value", "bargain", "area")]
    settings = Settings(candidates=3, oracle=2, pool=8, oracle_gain=0.0, engine=engine)
    search = RoundSearcher(layout, random_sampler(**options), FirstLegal(**options), margin_value(layout), bots,
                           settings)  # fmt: skip
    games = [position(options, seed, 1 + seed) for seed in range(3)]
    together = search.search_many(games, [np.random.default_rng(seed) for seed in range(3)])
    assert sum(sum(f.added) for f in together) >= 2
    for seed, (game, found) in enumerate(zip(games, together)):
        alone = search.search(game, np.random.default_rng(seed))
        for s in range(game.layout.players):
            np.testing.assert_array_equal(found.bids[s], alone.bids[s])
        np.testing.assert_allclose(found.payoffs, alone.payoffs, rtol=0, atol=1e-12)
        assert found.added == alone.added and found.rollouts == alone.rollouts
        for x, y in zip(found.solution.strategies, alone.solution.strategies):
            np.testing.assert_allclose(x, y, atol=1e-9)


@pytest.mark.parametrize("blueprint", [BOT + ":sample", "value"])
def test_samples_at_many_positions_at_once_are_each_positions_own(blueprint):
    """``Sampler.sample_many``: a policy samples every position's bids in one forward pass (``act_groups``), a
    heuristic position by position; each position's bids are the agent's, reset from its generator, on its rows."""
    options = {"players": 2}
    layout = observation_layout(**options)
    sampler = Sampler(load_agent(blueprint, **options), cheap=True)
    views = []
    for seed in range(3):
        game = position(options, seed, 2 + seed)
        views.append((np.stack([layout.build(game, s, BID) for s in range(2)]),
                      np.stack([layout.codec.mask(game, s, BID) for s in range(2)])))  # fmt: skip
    counts = [4, 1, 6]
    together = sampler.sample_many(*zip(*views), counts, [np.random.default_rng(seed) for seed in range(3)])
    for seed, ((obs, masks), n, got) in enumerate(zip(views, counts, together)):
        assert got.shape == (2, n, len(layout.codec.nvec))
        sampler.agent.reset(int(np.random.default_rng(seed).integers(SEED_BOUND)))
        alone = sampler.agent.act_batch(np.repeat(obs, n, 0), np.repeat(masks, n, 0), np.full(2 * n, int(BID)))
        np.testing.assert_array_equal(got, alone.reshape(2, n, -1))


@pytest.mark.parametrize("players", [2, 3, 4])
@pytest.mark.parametrize("engine", ENGINES)
def test_the_searchers_bid_counts_of_many_actions_are_each_actions(players, engine):
    """The candidates' bid counts, many at once (``BatchedView.bid_counts``, whichever engine plays the rounds)."""
    options = {"players": players}
    layout = observation_layout(**options)
    walker = RandomAgent(**options)
    walker.reset(players)
    actions, held = [], []
    for seed in range(6):
        game = position(options, seed, 1 + seed)
        for s in range(players):
            obs, mask = layout.build(game, s, BID), layout.codec.mask(game, s, BID)
            seen = {"observation": obs, "action_mask": mask}
            actions += [walker.act(seen, {"decision": Decision.BID}) for _ in range(5)]
            held += [game.tokens[s]] * 5
    search = RoundSearcher(
        layout, random_sampler(**options), walker, margin_value(layout), settings=Settings(engine=engine)
    )
    many = search.view.bid_counts(np.array(actions), np.array(held))
    assert many.sum() > 0
    for a, h, counts in zip(actions, held, many):
        np.testing.assert_array_equal(counts, layout.codec.bid_counts(a, h))


def test_an_equilibrium_agent_acts_for_many_games_at_once():
    """``EquilibriumAgent.act_batch``: bid rows of several games searched together, the others by the blueprint:
    legal actions, each bid one of its search's candidates, the same again after the same reset."""
    options = {"players": 2}
    agent = load_agent("equilibrium:k=3:pool=8:value", **options)
    layout = agent.layout
    rows = []
    for seed in range(3):
        game = position(options, seed, 1 + seed)
        rows.append((layout.build(game, seed % 2, BID), layout.codec.mask(game, seed % 2, BID), int(BID)))
    game = position(options, 5, 2)
    game.submit_bids(random_bids(game, np.random.default_rng(0)))
    if game.decision is not None and game.decision.kind != BID:
        seat, kind = game.decision.seat, game.decision.kind
        rows.append((layout.build(game, seat, kind), layout.codec.mask(game, seat, kind), int(kind)))
    obs, masks, kinds = (np.stack(column) for column in zip(*rows))
    agent.reset(3)
    first = agent.act_batch(obs, masks, kinds)
    agent.reset(3)
    assert (agent.act_batch(obs, masks, kinds) == first).all()
    codec = layout.codec
    assert all(m[codec.offsets + a].all() for a, m in zip(first, masks))
    searched = agent.searcher.search_many
    seen = []
    agent.searcher.search_many = lambda games, rngs: seen.append(searched(games, rngs)) or seen[-1]
    agent.reset(3)
    agent.act_batch(obs, masks, kinds)
    assert len(seen) == 1 and len(seen[0]) == 3  # the bid rows in one call
    for action, found in zip(first, seen[0]):
        chosen = [i for i, a in enumerate(found.actions[0]) if (a == action).all()]
        assert chosen and found.solution.strategies[0][chosen].sum() > 0


def test_neighbours_move_one_token_to_a_target_that_takes_it():
    layout = observation_layout(players=3).codec.layout
    bid = np.zeros((layout.n_targets, 3), dtype=np.int64)
    bid[0, 2] = 2  # two Gold on the General
    bid[4, 0] = 1  # one Force on the Priest
    near = neighbours(bid[None], layout.legal)
    assert len({b.tobytes() for b in near}) == len(near)
    gold_targets, force_targets = layout.legal[:, 2].sum(), layout.legal[:, 0].sum()
    assert len(near) == (gold_targets - 1) + (force_targets - 1)
    for b in near:
        assert (b.sum(0) == bid.sum(0)).all() and np.abs(b - bid).sum() == 2
        assert (b[~layout.legal] == 0).all()


# --- the agent ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("players", [2, 3])
def test_an_equilibrium_agent_plays_legal_reproducible_games_drawing_its_bids_from_its_strategy(players):
    options = {"players": players, "max_rounds": 4}
    spec = "equilibrium:k=3:pool=8:oracle=1:value"
    agent = load_agent(spec, **options)
    assert isinstance(agent, EquilibriumAgent) and agent.name == spec
    chosen = []  # what the blueprint answered at each of our non-bid decisions
    answer = agent.chooser.act
    agent.chooser.act = lambda observation, info: chosen.append(answer(observation, info)) or chosen[-1]
    me = Recording(agent)
    lineup = [me] + [load_agent("value", **options) for _ in range(players - 1)]
    first = GameRunner(lineup, options).play(11)  # the env raises on an illegal action
    again = GameRunner([load_agent(spec, **options)] + lineup[1:], options).play(11)
    assert (first.support, first.rounds) == (again.support, again.rounds)
    bids = 0
    others = [action for _, info, action, _ in me.seen if info["decision"] != Decision.BID]
    assert len(others) == len(chosen) >= 1 and all((a == b).all() for a, b in zip(others, chosen))
    for _, info, action, found in me.seen:
        if info["decision"] != Decision.BID:
            continue
        bids += 1
        x = found.solution.strategies[0]
        chosen = [i for i, a in enumerate(found.actions[0]) if (a == action).all()]
        assert chosen and x[chosen].sum() > 0  # one of our candidates, with positive probability
    assert bids >= 3


def test_the_spec_loads_names_and_refuses_what_it_cannot_play():
    assert parse_spec("equilibrium:k=6:iterations=50:pool=8:oracle=0:gain=0.1:method=rm:seed=3:value=margin:value") == (
        {"candidates": 6, "iterations": 50, "pool": 8, "oracle": 0, "oracle_gain": 0.1, "method": "rm", "seed": 3,
         "value": "margin"},
        "value",
    )  # fmt: skip
    assert parse_spec(f"equilibrium:{BOT}") == ({}, BOT)
    assert not is_checkpoint(f"equilibrium:{BOT}")
    assert display_name(f"equilibrium:k=4:{BOT}") == "equilibrium:k=4:checkpoints/two_players"
    assert display_name("equilibrium:value") == "equilibrium:value"
    for good in (
        "equilibrium:value",
        "equilibrium:random",
        "equilibrium:k=2:bargain",
        f"equilibrium:value=margin:{BOT}",
    ):
        assert spec_problem(good) is None, good
    for bad, match in [
        ("equilibrium:", "expected equilibrium:"),
        ("equilibrium:k=4", "expected equilibrium:"),
        ("equilibrium:nosuch.pt", "expected equilibrium:"),
        ("equilibrium:equilibrium:value", "expected equilibrium:"),
        (f"equilibrium:{BOT}:sample", "expected equilibrium:"),
        ("equilibrium:depth=2:value", "unknown option 'depth'"),
        ("equilibrium:k=four:value", "is not an integer"),
        ("equilibrium:value=oracle:value", "value='oracle'"),
        (f"equilibrium:play=best:value=margin:{BOT}", "play='best'"),
        ("equilibrium:play=sample:value", "play= is how a checkpoint plays"),
        ("equilibrium:temperature=2:value", "a named policy has none"),
        (f"equilibrium:temperature=0:value=margin:{BOT}", "expected a number above 0"),
        (f"equilibrium:temperature=hot:value=margin:{BOT}", "is not a number"),
    ]:
        assert match in spec_problem(bad), bad
        with pytest.raises(ValueError, match=match):
            load_agent(bad, players=2)
    for bad, match in [
        ("equilibrium:k=0:value", "candidates: expected an integer at least 1"),
        ("equilibrium:method=cfr:value", "method"),
        ("equilibrium:gain=-1:value", "oracle_gain"),
        ("equilibrium:value=critic:value", "value has no critic"),
    ]:
        with pytest.raises(ValueError, match=match):
            load_agent(bad, players=2)


def test_a_temperature_spreads_a_checkpoints_candidates_where_it_is_nearly_sure():
    """``temperature=T``: the blueprint's logits divided by T before they are sampled, the same draws otherwise: at
    T = 1 the samples are the policy's, above it they cover more distinct bids; the spec passes it to the sampler."""
    options = {"players": 2}
    layout = observation_layout(**options)
    policy = load_agent(BOT + ":sample", **options)
    game = position(options, 0, 1)
    obs = np.stack([layout.build(game, s, BID) for s in range(2)])
    masks = np.stack([layout.codec.mask(game, s, BID) for s in range(2)])

    def distinct(temperature):
        got = Sampler(policy, cheap=True, temperature=temperature).sample_rows(
            obs, masks, 200, np.random.default_rng(0)
        )
        return [len({a.tobytes() for a in seat}) for seat in got]

    plain = Sampler(policy, cheap=True).sample_rows(obs, masks, 200, np.random.default_rng(0))
    policy.reset(int(np.random.default_rng(0).integers(SEED_BOUND)))
    rows = np.repeat(obs, 200, 0), np.repeat(masks, 200, 0), np.full(400, int(BID))
    np.testing.assert_array_equal(plain.reshape(400, -1), policy.act_batch(*rows))
    assert all(hot > cold for hot, cold in zip(distinct(3.0), distinct(1.0)))
    agent = load_agent(f"equilibrium:temperature=2.5:value=margin:{BOT}", **options)
    assert agent.searcher.blueprint.temperature == 2.5 and agent.fork(1).searcher.blueprint.temperature == 2.5
    with pytest.raises(ValueError, match="a checkpoint's samples only"):
        Sampler(load_agent("value", **options), cheap=False, temperature=2.0).sample_rows(
            obs, masks, 2, np.random.default_rng(0)
        )


def test_a_checkpoint_without_a_critic_says_so_and_plays_with_a_stand_in_or_a_critic_it_is_given(monkeypatch):
    with pytest.raises(ValueError, match="carries no critic.*value=margin"):
        load_agent(f"equilibrium:{BOT}", players=2)
    agent = load_agent(f"equilibrium:k=3:pool=8:value=margin:{BOT}", players=2)
    assert agent.searcher.blueprint.cheap
    game = position({"players": 2}, 5, 2)
    layout = agent.layout
    observation = {"observation": layout.build(game, 0, BID), "action_mask": layout.codec.mask(game, 0, BID)}
    agent.reset(1)
    agent.act(observation, {"decision": Decision.BID})
    assert agent.last.bids[0].shape[0] >= 3
    # the round's other decisions and the rollouts: as the checkpoint says it plays, or as play= says
    assert not agent.chooser.deterministic  # as the checkpoint says it plays: this one is sampled
    for play, deterministic in (("argmax", True), ("sample", False)):
        told = load_agent(f"equilibrium:k=3:pool=8:play={play}:value=margin:{BOT}", players=2)
        assert told.chooser.deterministic == deterministic and told.searcher.chooser is told.chooser
    # a critic, where the checkpoint carries one, scores the states (here one that prefers more Gold held)
    from revolution_env.agents import checkpoint
    from revolution_env.agents.checkpoint import PolicyAgent

    gold = layout.features["tokens"].start + 2
    seen = []

    def critic(self, observations):
        seen.append(np.array(observations))
        return np.tanh(observations[:, gold] / 10.0)

    monkeypatch.setattr(checkpoint, "_critic", lambda policy, size: object())  # the checkpoint has a critic ...
    monkeypatch.setattr(PolicyAgent, "value", critic)  # ... which prefers more Gold held
    agent = load_agent(f"equilibrium:k=3:pool=8:{BOT}", players=2)
    agent.reset(1)
    agent.act(observation, {"decision": Decision.BID})
    rows = np.concatenate(seen)
    assert len(rows) == 2 * agent.last.rollouts  # both players' observations of every next state (none ended)
    assert (rows[:, layout.features["decision"].start + int(Decision.BID)] == 1).all()  # at the next bid decision
    scored = {round(float(v), 12) for v in np.tanh(rows[:, gold] / 10.0)}
    assert {round(float(v), 12) for v in agent.last.payoffs.ravel()} <= scored


def test_samplers_draw_fresh_bids_from_the_generator():
    options = {"players": 3}
    game = position(options, 3, 1)
    layout = observation_layout(**options)
    obs, mask = layout.build(game, 0, BID), layout.codec.mask(game, 0, BID)
    for sampler in (random_sampler(**options), Sampler(load_agent("value", **options), cheap=False)):
        a = sampler.sample(obs, mask, 6, np.random.default_rng(0))
        b = sampler.sample(obs, mask, 6, np.random.default_rng(0))
        assert a.shape == (6, len(layout.codec.nvec)) and (a == b).all()
        assert all(mask[layout.codec.offsets + row].all() for row in a)
    assert len({r.tobytes() for r in random_sampler(**options).sample(obs, mask, 6, np.random.default_rng(1))}) > 1


class Counting:
    """An agent's ``act_batch`` calls counted (rows per call), ``act`` refused: the candidates ask in batches."""

    def __init__(self, agent) -> None:
        self.agent, self.calls = agent, []

    def reset(self, seed=None) -> None:
        self.agent.reset(seed)

    def act(self, observation, info):
        raise AssertionError("act: the candidates are asked for in batches")

    def act_batch(self, observations, masks, decisions):
        self.calls.append(len(observations))
        return self.agent.act_batch(observations, masks, decisions)


@pytest.mark.parametrize("players", [2, 3])
def test_the_candidates_of_every_seat_come_from_one_call_of_each_heuristic_and_of_the_blueprint(players):
    """Each heuristic bids for every seat in one call, and the blueprint draws the samples of every seat in one call,
    no more than the seats lack; the candidates are each seat's legal, distinct bids, the heuristics' first, and
    reproducible."""
    options = {"players": players}
    layout = observation_layout(**options)
    bots = [Counting(load_agent(name, **options)) for name in ("value", "bargain", "area")]
    blueprint = Counting(load_agent("value", **options))
    search = RoundSearcher(layout, Sampler(blueprint, cheap=False), RandomAgent(**options), margin_value(layout),
                           bots, Settings(candidates=5, oracle=0))  # fmt: skip
    game = position(options, 2, 1)
    found = search.search(game, np.random.default_rng(0))
    # the blueprint is asked for as many bids a seat as the seats lack (here at least 2: three heuristics, K=5),
    # and again for 2K a seat only where its draws repeated
    assert [b.calls for b in bots] == [[players]] * 3
    assert players * 2 <= blueprint.calls[0] <= players * 5 and blueprint.calls[1:] in ([], [players * 10])
    again = search.search(game, np.random.default_rng(0))
    for s in range(players):
        bids, actions = found.bids[s], found.actions[s]
        assert 1 <= len(bids) <= 5 and len({b.tobytes() for b in bids}) == len(bids)
        np.testing.assert_array_equal(bids, again.bids[s])
        mask = layout.codec.mask(game, s, BID)
        for b, a in zip(bids, actions):
            assert mask[layout.codec.offsets + a].all()
            np.testing.assert_array_equal(layout.codec.bid_counts(a, game.tokens[s]), b)
    # the first candidate is value's bid for the seat, from the first seed the position's generator draws
    value = load_agent("value", **options)
    value.reset(int(np.random.default_rng(0).integers(SEED_BOUND)))
    views = [(layout.build(game, s, BID), layout.codec.mask(game, s, BID)) for s in range(players)]
    first = value.act_batch(np.stack([o for o, _ in views]), np.stack([m for _, m in views]))
    for s in range(players):
        np.testing.assert_array_equal(found.actions[s][0], first[s])

    # heuristics=1: value's bid and then the blueprint's samples only; heuristics=0: the blueprint's samples only
    for count in (1, 0):
        bots = [Counting(load_agent(name, **options)) for name in ("value", "bargain", "area")]
        search = RoundSearcher(layout, Sampler(blueprint, cheap=False), RandomAgent(**options), margin_value(layout),
                               bots, Settings(candidates=5, oracle=0, heuristics=count))  # fmt: skip
        found = search.search(game, np.random.default_rng(0))
        assert [b.calls for b in bots] == [[players]] * count + [[]] * (3 - count)
        assert all(1 <= len(b) <= 5 for b in found.bids)
    with pytest.raises(ValueError, match="heuristics: expected an integer at least 0"):
        Settings(heuristics=-1)


@pytest.mark.parametrize("options", [{"players": 2}, {"players": 3, "area_control_bonus": True}, {"players": 4}])
def test_the_margin_stand_in_is_the_final_support_margin_if_the_game_ended_now(options):
    """``margin_value``: tanh of (the observer's final support were the game scored now, minus the best other
    seat's, the puppet included) over the margin reward's scale, from the observation alone."""
    from revolution_env.env.core import MARGIN_SCALE

    layout = observation_layout(**options)
    value = margin_value(layout)
    for seed in range(3):
        game = position(options, seed, 6)
        scored = game.copy()
        scored._score()  # the engine's scoring (docs/rules.md §5) of the position as it stands
        total = np.asarray(scored.final["support"])
        for seat in range(game.layout.players):
            others = np.delete(total, seat)
            got = value(layout.build(game, seat, BID)[None])[0]
            assert got == pytest.approx(np.tanh((total[seat] - others.max()) / MARGIN_SCALE)), (seed, seat)


@pytest.mark.parametrize("options", [{"players": 3}, {"players": 4, "bid_refunds": True, "area_control_bonus": True}])
def test_the_appraisal_stand_in_is_the_heuristics_margin_level_at_the_start_and_summing_to_zero(options):
    """``appraisal_value`` (``value=appraisal``): tanh of the observer's margin as a heuristic's judgement appraises
    the position (:func:`.decisions.appraise`), over the margin reward's scale. Seats level at the first bid have
    none; taken over the mean rival with no time term, the seats' margins sum to zero; compiled and as plain
    Python alike."""
    from revolution_env.agents import compiled
    from revolution_env.agents.heuristics import ValueBot
    from revolution_env.env.core import MARGIN_SCALE

    layout = observation_layout(**options)
    bot = ValueBot(**options)
    start = Game.new(Rules(**options), 0)
    assert appraisal_value(bot)(np.stack([layout.build(start, s, BID) for s in range(start.layout.players)])) == (
        pytest.approx(np.zeros(start.layout.players))
    )
    bot.judgement = bot.judgement._replace(rival_weight=0.0, lock=0.0)
    plain = compiled.as_python("margins_now")
    for seed in range(3):
        game = position(options, seed, 4)
        obs = np.stack([layout.build(game, s, BID) for s in range(game.layout.players)])
        margins = compiled.observers_margins(bot, obs)
        assert margins.sum() == pytest.approx(0.0, abs=1e-9) and np.abs(margins).max() > 0, seed
        assert appraisal_value(bot)(obs) == pytest.approx(np.tanh(margins / MARGIN_SCALE)), seed
        out = np.zeros(len(obs))
        plain(obs.astype(np.float32), *bot.static, tuple(bot.judgement.as_floats()), out)
        assert (out == margins).all(), seed


def test_a_rollout_plays_the_blueprint_on_to_the_state_the_value_scores_and_to_the_end_needs_no_value():
    """``rollout=N``: after the round searched, the blueprint bids for every seat and decides the rounds' other
    decisions for N more rounds on the same rows. Played past the round limit every row ends, so every payoff is a
    final reward and the value is never asked; one round on, the value scores later states than without it."""
    from revolution_env.agents.equilibrium import BatchedRounds

    options = {"players": 2, "max_rounds": 8}
    layout = observation_layout(**options)
    chooser = FirstLegal(**options)
    game = position(options, 3, 2)
    bids = np.stack([random_bids(game, np.random.default_rng(i)) for i in range(6)])

    def never(observations):
        raise AssertionError("the value was asked for a row that the rollout should have ended")

    ended = BatchedRounds(layout).payoffs_many([game], [bids], chooser, never, rollout=20)[0]
    assert set(np.unique(ended).tolist()) <= {-1.0, 1.0}
    rounds_seen = []

    def the_round(observations):
        rounds_seen.extend(layout.decode(o).round for o in observations)
        return np.zeros(len(observations))

    BatchedRounds(layout).payoffs_many([game], [bids], chooser, the_round, rollout=0)
    right_after, rounds_seen[:] = set(rounds_seen), []
    BatchedRounds(layout).payoffs_many([game], [bids], chooser, the_round, rollout=2)
    assert right_after == {game.round + 1} and set(rounds_seen) <= {game.round + 3} and rounds_seen
    with pytest.raises(ValueError, match="rollout: .*batched engine only"):
        Settings(rollout=1, engine="scalar")
    with pytest.raises(ValueError, match="rollout: expected an integer at least 0"):
        Settings(rollout=-1)
    assert parse_spec("equilibrium:rollout=5:value")[0] == {"rollout": 5}
