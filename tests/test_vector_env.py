"""``revolution_env.vector_env``: the Gymnasium VectorEnv API, SAME_STEP autoreset, exported games that replay
(through ``python -m revolution_env scenario``) on every supported variant, final observations and rewards against
the scalar engine, bad input, illegal actions, batched opponents, and the SB3 adapter under MaskablePPO."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest
from gymnasium import spaces
from gymnasium.vector import AutoresetMode, VectorEnv
from replay_files import another_seed

import revolution_env
from revolution_env.engine.game import Decision
from revolution_env.engine.scenario import run_scenario, state_dict
from revolution_env.env.batched import Rows
from revolution_env.env.encoding import NONE, Codec, IllegalActionError
from revolution_env.env.observation import ObservationLayout
from revolution_env.env.tokens import TokenCodec

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
VARIANTS = {
    "3 players": {"players": 3},
    "4 players": {"players": 4},
    "2 players (Guy)": {"players": 2},
    "bid refunds": {"players": 3, "bid_refunds": True},
    "area control bonus": {"players": 4, "area_control_bonus": True},
    "2 players, area control bonus": {"players": 2, "area_control_bonus": True},
    "truncated (max_rounds)": {"players": 3, "max_rounds": 3},
    "first edition, 3 players": {"players": 3, "first_edition": True},
    "first edition, 2 players (Guy)": {"players": 2, "first_edition": True},
    "first edition, 4 players, area control bonus": {"players": 4, "first_edition": True, "area_control_bonus": True},
}


def random_actions(env: VectorEnv, rng: np.random.Generator) -> np.ndarray:
    """A uniform legal action per row (a game, or a seat of a game in self-play), sampled from the masks."""
    masks = env.action_masks()
    if isinstance(env.single_action_space, spaces.Discrete):
        return (rng.random(masks.shape) + masks).argmax(1)
    space = env.single_action_space
    space.seed(int(rng.integers(2**31)))
    return np.stack([space.sample(m.astype(np.int8)) for m in masks])


def play(env: VectorEnv, steps: int, seed: int = 0):
    """Steps of random legal play, yielding (obs, rewards, terminated, truncated, infos) after each."""
    rng = np.random.default_rng(seed)
    for _ in range(steps):
        yield env.step(random_actions(env, rng))


def test_vector_env_api_shapes_and_spaces() -> None:
    env = revolution_env.vector_env(6, players=3, opponents="random")
    assert isinstance(env, VectorEnv)
    assert env.metadata["autoreset_mode"] == AutoresetMode.SAME_STEP
    obs, info = env.reset(seed=3)
    n_mask = int(env.single_action_space.nvec.sum())
    assert obs.shape == (6, env.single_observation_space.shape[0]) and obs.dtype == np.float32
    assert env.action_masks().shape == (6, n_mask) and env.action_masks().dtype == bool
    assert (info["decision"] == int(revolution_env.Decision.BID)).all()
    for obs, rewards, terminated, truncated, info in play(env, 60):
        assert env.observation_space.contains(obs)
        assert rewards.shape == terminated.shape == truncated.shape == (6,)
        assert (rewards[~(terminated | truncated)] == 0).all()
        assert np.isin(rewards[terminated | truncated], (-1.0, 1.0)).all()
        np.testing.assert_array_equal(info["action_mask"], env.action_masks())
        assert (info["decision"] != int(NONE)).all()  # after autoreset every game waits for the learner


@pytest.mark.parametrize("variant", ["3 players", "first edition, 3 players", "first edition, 2 players (Guy)"])
def test_same_step_autoreset_final_observation_and_reward_match_the_scalar_engine(variant: str) -> None:
    """The step that ends a game returns the next game's first observation; ``final_obs`` is the last observation
    of the game that ended, equal to the scalar observation of the exported game's replay, and the reward is the
    learner seat's win or loss in that replay."""
    env = revolution_env.vector_env(5, opponents="random", **VARIANTS[variant])
    env.reset(seed=11)
    codec = env.codec
    layout = ObservationLayout(Codec(env.layout))
    ended = 0
    for obs, rewards, terminated, truncated, info in play(env, 120, seed=2):
        done = terminated | truncated
        if not done.any():
            continue
        finished = env.pop_finished()
        assert len(finished) == done.sum()
        for (scenario, final), i in zip(finished, np.flatnonzero(done)):
            game = run_scenario(scenario)
            assert state_dict(game) == final
            seat = int(info["final_info"]["seat"][i])
            np.testing.assert_array_equal(info["final_obs"][i], layout.build(game, seat, NONE))
            assert rewards[i] == (1.0 if seat in game.final["winners"] else -1.0)
            assert obs[i][layout.features["round"].start] == 1  # the next game, already started
            assert obs[i][layout.features["phase"].start] == 1  # bidding
            ended += 1
        assert info["_final_obs"].sum() == done.sum()
    assert ended >= 5
    assert codec.size == env.action_masks().shape[1]


@pytest.mark.parametrize("players", [3, 4])
def test_final_info_names_the_other_seats_opponents_in_seat_order(players: int) -> None:
    """``final_info["opponents"]``: per finished row, the other seats' opponents in seat order (indices into
    ``opponent_names()``), whatever seat the learner drew; and the final observation of each finished row."""
    others = ["random", "area", "bargain"][: players - 1]
    env = revolution_env.vector_env(8, players=players, opponents=others)
    env.reset(seed=4)
    seen = 0
    for _, _, terminated, truncated, info in play(env, 80, seed=3):
        for i in np.flatnonzero(terminated | truncated):
            names = env.opponent_names()
            assert [names[j] for j in info["final_info"]["opponents"][i]] == others
            assert info["final_obs"][i].shape == env.single_observation_space.shape
            seen += 1
    assert seen >= 8


def finished_games_replay(env: VectorEnv, options: dict) -> list:
    """Random play until four games finish; each of ``pop_finished``'s scenarios replays to its final state."""
    env.reset(seed=5)
    finished = []
    rng = np.random.default_rng(1)
    while len(finished) < 4:
        env.step(random_actions(env, rng))
        finished += env.pop_finished()
    for scenario, final in finished:
        assert isinstance(scenario["seed"], int)
        if options["players"] == 2:
            assert all("priority" in r for r in scenario["rounds"])
        assert state_dict(run_scenario(another_seed(scenario))) == final
    return finished


@pytest.mark.parametrize("variant", list(VARIANTS))
def test_pop_finished_games_replay_through_the_scenario_command(variant: str, tmp_path) -> None:
    env = revolution_env.vector_env(4, opponents="random", **VARIANTS[variant])
    finished = finished_games_replay(env, VARIANTS[variant])
    scenario, final = finished[0]
    path = tmp_path / "game.json"
    path.write_text(json.dumps(scenario))
    done = subprocess.run(
        [sys.executable, "-m", "revolution_env", "scenario", str(path)],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=dict(os.environ, PYTHONPATH=ROOT),
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == final


def test_remove_cards_are_decisions_of_the_learner_and_of_the_opponents() -> None:
    """First edition: a "Remove 1 Influence" card asks its drawer, the learner (a step of its own, whose mask offers
    only opponents' cubes and no decline) or an opponent (played inside the step), as Spy and Apothecary are."""
    env = revolution_env.vector_env(6, players=3, opponents="random", first_edition=True)
    env.reset(seed=4)
    deciders = []
    step = env.game.step

    def recorded(games, bids, values, random_seat, states):  # the learner's decisions
        g = np.asarray(games)
        removes = env.game.kind[g] == int(revolution_env.Decision.REMOVE)
        deciders.extend((env.game.decider[g[removes]] == env.seat[g[removes]]).tolist())
        return step(games, bids, values, random_seat, states)

    def played_randomly(games, random_seat, states):  # the random opponents: one choice a game per call here
        g = np.asarray(games)
        removes = env.game.kind[g] == int(revolution_env.Decision.REMOVE)
        deciders.extend((env.game.decider[g[removes]] == env.seat[g[removes]]).tolist())
        return play_random(games, random_seat, states)

    env.game.step = recorded
    play_random = env.game.play_random
    env.game.play_random = played_randomly
    asked = 0
    S, A = env.codec.S, env.codec.A
    for _, _, _, _, info in play(env, 300, seed=1):
        for i in np.flatnonzero(info["decision"] == int(revolution_env.Decision.REMOVE)):
            mask = info["action_mask"][i, : env.codec.C]
            assert not mask[0]  # compulsory
            assert not mask[1 : 1 + A * S].reshape(A, S)[:, 0].any()  # never the learner's own cube
            assert mask.any()
            asked += 1
    assert asked > 0 and True in deciders and False in deciders
    assert sum(deciders) == asked - sum(info["decision"] == int(revolution_env.Decision.REMOVE))


def test_fixed_seat_margin_reward_and_mask_in_obs() -> None:
    env = revolution_env.vector_env(4, players=4, opponents="random", seat=2, reward="margin", mask_in_obs=True)
    obs, _ = env.reset(seed=0)
    assert set(obs) == {"observation", "action_mask"}
    np.testing.assert_array_equal(obs["action_mask"].astype(bool), env.action_masks())
    seen = 0
    for obs, rewards, terminated, truncated, info in play(env, 50):
        assert env.observation_space.contains(obs)
        done = terminated | truncated
        for (_, final), i in zip(env.pop_finished(), np.flatnonzero(done)):
            support = np.array(final["final"]["support"], dtype=float)
            assert info["final_info"]["seat"][i] == 2
            assert rewards[i] == pytest.approx((support[2] - np.delete(support, 2).max()) / 100)
            seen += 1
    assert seen > 0


def test_heuristic_opponents_play_in_the_vector_env() -> None:
    """The heuristic bots answer all their games in one act_batch call per step; whole games finish and replay."""
    env = revolution_env.vector_env(3, players=2, opponents="value")
    env.reset(seed=4)
    finished = []
    rng = np.random.default_rng(0)
    while len(finished) < 2:
        env.step(random_actions(env, rng))
        finished += env.pop_finished()
    for scenario, final in finished:
        assert state_dict(run_scenario(scenario)) == final
    mixed = revolution_env.vector_env(2, players=3, opponents=["random", "area"])
    mixed.reset(seed=1)
    for _ in play(mixed, 5):
        pass


def test_an_opponent_without_act_batch_is_played_game_by_game_with_a_warning() -> None:
    from revolution_env.agents.base import RandomAgent

    class Slow(RandomAgent):  # an agent of the user's: act() only
        name = "slow"

    with pytest.warns(UserWarning, match="'slow' has no act_batch"):
        env = revolution_env.vector_env(2, players=3, opponents=[Slow(players=3), "random"])
    env.reset(seed=0)
    for _ in play(env, 3):
        pass


@pytest.mark.parametrize("variant", ["3 players", "2 players (Guy)", "first edition, 3 players"])
def test_the_actions_check_and_read_in_one_pass_as_apart(variant: str) -> None:
    """``BatchedView.decider`` (the bid mode's step: each action checked against its mask, a legal bid counted, a
    legal choice turned into the engine's value) gives what ``legal``, ``bid_counts`` and ``engine_choices`` give
    apart, on legal actions and on actions with one dimension moved (most of them illegal), for every decision."""
    env = revolution_env.vector_env(64, keep_finished=0, opponents="random", **VARIANTS[variant])
    env.reset(seed=3)
    view, game = env.view, env.game
    rng = np.random.default_rng(4)
    every = np.arange(env.num_envs)
    seen = set()
    for _ in range(60):
        masks, kinds = env.action_masks(), env._kinds.copy()
        actions = random_actions(env, rng)
        bad = actions.copy()
        dim = rng.integers(bad.shape[1], size=len(bad))
        bad[every, dim] = rng.integers(-1, env.codec.nvec[dim] + 1)
        for a in (actions, bad):
            bids = np.full((env.num_envs, env.players, env.codec.T, 3), -1, dtype=game.count_type)
            values = np.full(env.num_envs, -9, dtype=np.int64)
            ok, part = view.decider(a, masks, Rows(every, env.seat, kinds), game.tokens, (bids, values))
            part(0, env.num_envs)
            legal = view.legal(a, masks) | (kinds == NONE)
            np.testing.assert_array_equal(ok, legal)
            bidding = every[legal & (kinds == Decision.BID)]
            counts = view.bid_counts(a[bidding], game.tokens[bidding, env.seat[bidding]])
            np.testing.assert_array_equal(bids[bidding, env.seat[bidding]], counts)
            choosing = every[legal & (kinds > Decision.BID)]
            expected = view.engine_choices(a[choosing, 0], env.seat[choosing], kinds[choosing])
            np.testing.assert_array_equal(values[choosing], expected)
            untouched = np.ones(env.num_envs, dtype=bool)
            untouched[choosing] = False
            assert (values[untouched] == -9).all()
            seen.update(kinds[legal].tolist())
        env.step(actions)
    assert len(seen) >= 3, seen  # bids, and at least two kinds of other decisions
    with pytest.raises(ValueError, match="engine_choices: seats from 0 to"):  # read unchecked in the compiled loop
        view.engine_choices(np.ones(2, dtype=np.int64), np.array([0, env.players]), np.full(2, 5))
    with pytest.raises(ValueError, match="games or seats outside bids"):  # written unchecked in the compiled loop
        view.decider(actions, masks, Rows(every + 1, env.seat, kinds), game.tokens, (bids, values))
    with pytest.raises(ValueError, match=r"bids: expected a contiguous int8 array \(count_type\)"):
        view.decider(actions, masks, Rows(every, env.seat, kinds), game.tokens, (bids.astype(np.int64), values))


def _same(a, b, where: str) -> None:
    """Two step results (arrays, dicts, object arrays of observations or None) equal, element for element."""
    if isinstance(a, dict):
        assert a.keys() == b.keys(), where
        for k in a:
            _same(a[k], b[k], f"{where}[{k!r}]")
    elif isinstance(a, np.ndarray) and a.dtype == object:
        assert a.shape == b.shape, where
        for i, (x, y) in enumerate(zip(a, b)):
            assert (x is None) == (y is None), f"{where}[{i}]"
            if x is not None:
                _same(x, y, f"{where}[{i}]")
    else:
        np.testing.assert_array_equal(a, b, err_msg=where)
        assert np.asarray(a).dtype == np.asarray(b).dtype, where


@pytest.mark.parametrize(
    "variant, illegal",
    [("3 players", True), ("4 players", False), ("2 players (Guy)", False), ("truncated (max_rounds)", True)],
)
@pytest.mark.parametrize("mask_in_obs", [False, True])
def test_the_step_in_one_pass_gives_what_the_passes_apart_give(monkeypatch, variant, illegal, mask_in_obs) -> None:
    """With random opponents in the bid mode, a step reads the actions, steps the games and observes them in one
    pass over the games in parts (``RevolutionVectorEnv._decide_and_observe``, side by side in two threads here):
    the observations, masks, rewards, ends, infos (``final_obs`` and ``final_info`` of the games that end, illegal
    actions, whose games end, included) and the finished games are those of the three passes apart. (With two
    players an illegal bid's game would still flip D9's coin: legal actions there.)"""
    from revolution_env.arena.vector import RevolutionVectorEnv
    from revolution_env.common import jit as J
    from revolution_env.engine import batched as B

    monkeypatch.setenv("REVOLUTION_THREADS", "2")
    monkeypatch.setattr(J, "PARALLEL_ROWS", 60)  # parts of a few games: the same code, fewer games to step
    monkeypatch.setattr(B, "GAME_ROWS", 60)
    one_pass = RevolutionVectorEnv._decide_and_observe
    taken = []

    def spy(self, actions, kinds):
        observed = one_pass(self, actions, kinds)
        taken.append(observed is not None)
        return observed

    runs = []
    for apart in (False, True):
        if apart:
            monkeypatch.setattr(RevolutionVectorEnv, "_decide_and_observe", lambda self, actions, kinds: None)
        else:
            monkeypatch.setattr(RevolutionVectorEnv, "_decide_and_observe", spy)
        env = revolution_env.vector_env(
            130, opponents="random", keep_finished=10_000, mask_in_obs=mask_in_obs, **VARIANTS[variant]
        )
        trace = [env.reset(seed=11)]
        rng = np.random.default_rng(12)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the illegal actions' warning
            for step in range(40):
                actions = random_actions(env, rng)
                if illegal and step % 7 == 3:  # a few rows' actions moved off their masks
                    rows = rng.choice(env.num_envs, size=5, replace=False)
                    actions[rows, 0] = env.codec.nvec[0] + 1
                trace.append(env.step(actions))
                trace.append(env.action_masks().copy())
        trace.append(env.pop_finished())
        runs.append(trace)
    assert taken and all(taken)
    one, apart = runs
    for i, (a, b) in enumerate(zip(one[:-1], apart[:-1])):
        for j, (x, y) in enumerate(zip(a, b) if isinstance(a, tuple) else [(a, b)]):
            _same(x, y, f"step {i}, item {j}")
    assert one[-1] == apart[-1] and len(one[-1]) > 5
    ended_badly = sum(int(t[4].get("final_info", {}).get("illegal_action", np.zeros(1)).sum()) for t in one[1:-1]
                      if isinstance(t, tuple))  # fmt: skip
    assert ended_badly > 0 if illegal else ended_badly == 0


@pytest.mark.parametrize(
    "options",
    [
        {"opponents": ["random", "area"]},
        {"opponents": "random", "action_mode": "tokens"},
        {"opponents": "random", "first_edition": True},
        {"opponents": "random", "illegal": "raise"},
    ],
)
def test_the_step_in_one_pass_is_only_where_it_holds(options) -> None:
    """Agents among the opponents (their bids are read between the passes), the token mode, the first edition (its
    deck is drawn between a step's choices) and ``illegal="raise"`` (an illegal action leaves every game as it was)
    step in three passes."""
    env = revolution_env.vector_env(8, players=3, keep_finished=0, **options)
    env.reset(seed=0)
    assert env._decide_and_observe(random_actions(env, np.random.default_rng(0)), env._kinds) is None
    plain = revolution_env.vector_env(8, players=3, keep_finished=0, opponents="random")
    plain.reset(seed=0)
    assert plain._decide_and_observe(random_actions(plain, np.random.default_rng(0)), plain._kinds) is not None


def test_illegal_action_terminates_or_raises() -> None:
    env = revolution_env.vector_env(3, players=3, opponents="random")
    env.reset(seed=0)
    actions = random_actions(env, np.random.default_rng(0))
    actions[1, 0] = 5  # a choice during bidding
    with pytest.warns(UserWarning, match="illegal action"):
        obs, rewards, terminated, truncated, info = env.step(actions)
    assert rewards[1] == -1 and terminated[1] and info["illegal_action"][1] == 1
    assert info["final_info"]["illegal_action"][1] == 1 and not terminated[0]
    assert env.pop_finished() == []  # an abandoned game is no finished game
    strict = revolution_env.vector_env(2, players=3, opponents="random", illegal="raise")
    strict.reset(seed=0)
    actions = random_actions(strict, np.random.default_rng(0))
    actions[0, 0] = 5
    with pytest.raises(IllegalActionError, match="env 0"):
        strict.step(actions)


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"num_envs": 0}, "num_envs"),
        ({"num_envs": 2, "opponents": "nobody"}, "opponents: unknown agent spec"),
        ({"num_envs": 2, "opponents": ["random"]}, "opponents: expected 2 opponent"),
        ({"num_envs": 2, "first_edition": True, "bid_refunds": False}, "bid_refunds: the first edition .*D14"),
        ({"num_envs": 2, "seat": 3}, "seat"),
        ({"num_envs": 2, "colour": "red"}, "colour: unknown option"),
        ({"num_envs": 2, "players": 5}, "players"),
        ({"num_envs": 2, "reward": "points"}, "reward"),
    ],
)
def test_bad_input_is_a_clear_error_at_construction(kwargs: dict, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        revolution_env.vector_env(**kwargs)


def test_maskable_ppo_learns_on_the_sb3_adapter() -> None:
    sb3_contrib = pytest.importorskip("sb3_contrib")
    from revolution_training.vec_env import SB3VecEnv
    from sb3_contrib.common.maskable.utils import get_action_masks

    venv = SB3VecEnv(revolution_env.vector_env(8, players=3, opponents="random"))
    venv.seed(0)
    obs = venv.reset()
    raw = venv.venv.view.observe(venv.venv.game, np.arange(8), venv.venv.seat, venv.venv._kinds)
    np.testing.assert_allclose(obs, raw / venv.venv.obs_layout.scale, rtol=1e-6)  # as SelfPlayEnv feeds PPO
    assert all(venv.observation_space.contains(o) for o in obs)
    masks = get_action_masks(venv)
    assert masks.shape == (8, int(venv.action_space.nvec.sum())) and masks.dtype == bool
    model = sb3_contrib.MaskablePPO(
        "MlpPolicy", venv, n_steps=16, batch_size=64, n_epochs=1, seed=0, device="cpu", policy_kwargs={"net_arch": [32]}
    )
    model.learn(total_timesteps=256)
    assert model.num_timesteps >= 256
    # the trained policy acts legally through the masks
    obs = venv.reset()
    actions, _ = model.predict(obs, action_masks=get_action_masks(venv))
    assert venv.venv.view.legal(actions, venv.venv.action_masks()).all()
    # the adapter's own action_masks() too, as a user passes it: a writable array (the vector env's is read-only,
    # and torch warns of undefined behaviour when it wraps a read-only array, once per process)
    assert venv.action_masks().flags.writeable
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        actions, _ = model.predict(obs, action_masks=venv.action_masks())
    assert venv.venv.view.legal(actions, venv.venv.action_masks()).all()


class TwoKindsLeague:
    """A league object: ``sample(rng, slot)`` picks each new game's opponent per slot."""

    def __init__(self) -> None:
        self.calls = 0

    def sample(self, rng: np.random.Generator, slot: int) -> str:
        self.calls += 1
        return "random" if rng.random() < 0.5 else "area"


def test_the_same_seed_gives_the_same_games_with_a_league() -> None:
    """Opponents a league brings in after reset (here each env loads its own area bot) are seeded from the env."""

    def trajectory() -> list[bytes]:
        env = revolution_env.vector_env(4, players=3, opponents=TwoKindsLeague())
        env.reset(seed=2)
        return [obs.tobytes() + env.seat.tobytes() for obs, *_ in play(env, 40)]

    assert trajectory() == trajectory()


def test_a_league_picks_the_opponents_of_every_new_game_and_seats_are_drawn() -> None:
    league = TwoKindsLeague()
    env = revolution_env.vector_env(4, players=3, opponents=league)
    env.reset(seed=2)
    assert league.calls == 4 * 2  # two opponent slots per game
    seats, kinds = set(), set()
    for _ in play(env, 40):
        seats.update(env.seat.tolist())
        kinds.update(env._table[i].name for i in env.opponent_of[env.opponent_of >= 0].tolist())
        assert ((env.opponent_of == -1).sum(1) == 1).all()  # the learner's seat only
        assert (env.opponent_of[np.arange(4), env.seat] == -1).all()
    assert league.calls > 8  # new games drew new opponents
    assert seats == {0, 1, 2} and kinds == {"random", "area"}


def test_the_same_seed_and_actions_give_the_same_games() -> None:
    runs = []
    for _ in range(2):
        env = revolution_env.vector_env(3, players=2, opponents=["value"])
        env.reset(seed=9)
        rewards = [r.tolist() for _, r, _, _, _ in play(env, 30, seed=4)]
        runs.append((rewards, env.pop_finished(), env.game.state_dict(0)))
    assert runs[0] == runs[1]


def test_checkpoint_opponents_play_in_one_forward_pass() -> None:
    """A policy checkpoint answers all its games in one ``act_batch`` call, with the actions its ``act`` gives."""
    path = os.path.join(ROOT, "checkpoints", "three_players.pt")
    if not os.path.exists(path):
        pytest.skip("no shipped three-player checkpoint")
    pytest.importorskip("torch")
    import warnings

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        env = revolution_env.vector_env(6, players=3, opponents=[path, "random"])
    assert not [w for w in caught if "game by game" in str(w.message)]  # the policy is batched
    env.reset(seed=1)
    policy = next(o.agent for o in env._table if o.agent is not None)
    calls = []
    batch = policy.act_batch
    policy.act_batch = lambda obs, masks, kinds: calls.append(len(obs)) or batch(obs, masks, kinds)
    finished = []
    for _ in play(env, 40):
        finished += env.pop_finished()
    assert calls and max(calls) > 1  # several games in one call
    for scenario, final in finished:
        assert state_dict(run_scenario(scenario)) == final
    everyone = np.arange(6)
    seats = (env.seat + 1) % 3
    kinds = env.view.kinds(env.game, everyone, seats)
    obs = env.view.observe(env.game, everyone, seats, kinds)
    masks = env.view.masks(env.game, everyone, seats, kinds).view(np.int8)
    batched = batch(obs, masks, kinds)
    for i in range(6):
        single = policy.act({"observation": obs[i], "action_mask": masks[i]}, {"decision": kinds[i]})
        np.testing.assert_array_equal(batched[i], single)


def test_gymnasium_vector_wrappers_see_the_episodes() -> None:
    """SAME_STEP autoreset is declared in the metadata, so Gymnasium's vector wrappers count episodes right."""
    from gymnasium.wrappers.vector import RecordEpisodeStatistics

    env = RecordEpisodeStatistics(revolution_env.vector_env(4, players=3, opponents="random"))
    env.reset(seed=0)
    rng = np.random.default_rng(0)
    episodes = 0
    for _ in range(60):
        _, rewards, terminated, truncated, info = env.step(random_actions(env.env, rng))
        done = terminated | truncated
        if done.any():
            np.testing.assert_array_equal(info["_episode"], done)
            np.testing.assert_array_equal(info["episode"]["r"][done], rewards[done])  # the only non-zero reward
            episodes += int(done.sum())
    assert episodes >= 4


@pytest.mark.parametrize("action_mode", ["bid", "tokens"])
def test_opponents_asked_in_threads_play_the_same_games(monkeypatch, action_mode: str) -> None:
    """Several agents decide in parallel threads (vector._agents_act), and their bids while the learner decides
    (vector._decide_bids_early); each draws from its own generator and decides a round's bids when the round
    begins, so the games are those of one agent after the other on one thread (in the token mode too, where the
    learner's bids end at different steps), and a reset in the middle of a round drops the bids decided early.
    The same where the env changes its way (threads or not) from step to step, as its ``Pace`` may."""
    from revolution_env.common import workers

    def run(threads: int, switching: bool = False) -> list:
        monkeypatch.setenv("REVOLUTION_THREADS", str(threads))
        monkeypatch.setattr(workers, "_POOL", {})  # a pool of that many threads
        env = revolution_env.vector_env(6, players=4, opponents=["value", "bargain", "area"], action_mode=action_mode)
        if switching:
            ways = iter([True, False, False, True] * 100)
            env._pace.next = lambda: next(ways)
        env.reset(seed=3)
        rng = np.random.default_rng(0)
        out = []
        for _ in range(5):
            env.step(random_actions(env, rng))
        env.reset(seed=3)  # mid-round: the early bids of the rounds under way are dropped
        for _ in range(40 if action_mode == "bid" else 120):
            obs, rewards, terminated, truncated, _ = env.step(random_actions(env, rng))
            out.append((obs.copy(), rewards.copy(), terminated.copy()))
        return out + [scenario for scenario, _ in env.pop_finished()]

    one = run(1)
    for other in (run(3), run(3, switching=True)):
        assert len(one) == len(other)
        for a, b in zip(one, other):
            if isinstance(a, tuple):
                assert all(np.array_equal(x, y) for x, y in zip(a, b))
            else:
                assert a == b


def test_the_vector_env_times_its_steps_for_its_pace() -> None:
    """The env times each step from its start to the next one's (the learner's work included) for the way of the
    step (``workers.Pace``: the agents in threads or not), and not the time from a reset to its first step."""
    env = revolution_env.vector_env(4, players=3, opponents="area")
    env.reset(seed=0)
    rng = np.random.default_rng(0)
    for _ in range(6):
        env.step(random_actions(env, rng))
    timed = sum(len(x) for x in env._pace.seconds.values())
    assert timed == 5 and env._pace.count == 6
    env.reset(seed=1)
    env.step(random_actions(env, rng))
    assert sum(len(x) for x in env._pace.seconds.values()) == 5


def test_a_copy_of_a_running_env_plays_the_same_games() -> None:
    """The opponents' bids of a round are decided in threads when it begins; a copy (``copy.deepcopy``, pickle)
    takes them as decided and plays on as the original does."""
    import copy
    import pickle

    env = revolution_env.vector_env(4, players=3, opponents=["value", "bargain"])
    env.reset(seed=5)
    rng = np.random.default_rng(1)
    for _ in range(3):
        env.step(random_actions(env, rng))
    twins = [copy.deepcopy(env), pickle.loads(pickle.dumps(env))]
    for _ in range(30):
        actions = random_actions(env, rng)
        out = env.step(actions)
        for twin in twins:
            again = twin.step(actions)
            for a, b in zip(out[:4], again[:4]):
                np.testing.assert_array_equal(a, b)


class _BreaksTheMask:
    """An opponent whose bids name a choice where a bid has none (dimension 0 allows only 0 in a bid)."""

    name = "breaks the mask"

    def __init__(self, dims: int) -> None:
        self.dims = dims

    def act(self, observation, info):  # pragma: no cover - the vector env calls act_batch
        raise AssertionError

    def act_batch(self, observations, masks, decisions):
        actions = np.zeros((len(observations), self.dims), np.int64)
        actions[:, 0] = 1
        return actions


@pytest.mark.parametrize("threads", [1, 2])
def test_an_opponent_that_breaks_the_mask_fails_the_step_that_needs_its_bid(monkeypatch, threads: int) -> None:
    """Opponents' bids are decided when the round begins (in threads, or at once on one core); an opponent whose
    bid breaks the mask fails the step that needs the bid, named, whatever the threads, and never ``reset``."""
    from revolution_env.common import workers

    monkeypatch.setenv("REVOLUTION_THREADS", str(threads))
    monkeypatch.setattr(workers, "_POOL", {})  # a pool of that many threads
    dims = len(revolution_env.vector_env(1, players=3, opponents="random").codec.nvec)
    env = revolution_env.vector_env(3, players=3, opponents=_BreaksTheMask(dims))
    env.reset(seed=0)  # the first round's bids are decided here: no error yet
    assert (env._kinds == Decision.BID).all()
    with pytest.raises(RuntimeError, match="opponent 'breaks the mask' broke the mask in env 0"):
        env.step(random_actions(env, np.random.default_rng(0)))


# --- the token mode (action_mode="tokens") ---------------------------------------------------------------------


@pytest.mark.parametrize(
    "variant", ["3 players", "2 players (Guy)", "bid refunds", "4 players", "first edition, 2 players (Guy)"]
)
def test_token_mode_observations_and_masks_match_the_scalar_env(variant: str) -> None:
    """At every bid step, each game's observation and mask are the scalar token mode's for the same state (the
    exported game replayed by the scalar engine), the bid so far and the last token placed, tracked here from the
    actions sent; every other decision's mask is the bid mode's dimension 0."""
    env = revolution_env.vector_env(4, opponents="random", action_mode="tokens", **VARIANTS[variant])
    obs, _ = env.reset(seed=3)
    codec = Codec(env.layout)
    tokens = TokenCodec(codec)
    layout = ObservationLayout(codec, building=True)
    assert env.single_action_space == spaces.Discrete(tokens.n)
    assert obs.shape == (4, layout.size) and env.action_masks().shape == (4, tokens.n)
    building = np.zeros((4, codec.T, 3), dtype=np.int64)
    last = np.full(4, -1)
    rng = np.random.default_rng(0)
    compared = {"bid": 0, "other": 0}
    for _ in range(150):
        masks = env.action_masks()
        for i in range(4):
            kind = revolution_env.Decision(int(env._kinds[i]))
            game = run_scenario(env.game.export(i))
            seat = int(env.seat[i])
            if kind == revolution_env.Decision.BID:
                assert state_dict(game) == env.game.state_dict(i)
                expected = layout.build(game, seat, kind)
                expected[layout.features["bid_building"].start :] = building[i].ravel()
                np.testing.assert_array_equal(obs[i], expected)
                np.testing.assert_array_equal(masks[i], tokens.mask(game, seat, kind, building[i], int(last[i])))
                compared["bid"] += 1
            else:
                np.testing.assert_array_equal(masks[i, : codec.C], env.view.choice_masks(
                    env.game, np.array([i]), np.array([seat]), np.array([int(kind)]))[0])  # fmt: skip
                assert not masks[i, codec.C :].any()
                compared["other"] += 1
        actions = np.array([rng.choice(np.flatnonzero(m)) for m in masks])
        held = env.game.tokens[np.arange(4), env.seat].copy()
        kinds = env._kinds.copy()
        obs, _, terminated, truncated, _ = env.step(actions)
        for i in range(4):
            if kinds[i] == Decision.BID and held[i].any():
                t, c = divmod(int(actions[i]), codec.T)
                building[i, c, t] += 1
                last[i] = actions[i]
            if kinds[i] != Decision.BID or (building[i].sum(0) == held[i]).all() or terminated[i] or truncated[i]:
                building[i], last[i] = 0, -1  # the bid went in (or the game ended): a new one starts empty
    assert compared["bid"] > 200
    if VARIANTS[variant]["players"] == 2:
        assert compared["other"] > 0


def test_token_mode_plays_the_bid_modes_games_token_by_token() -> None:
    """One game at a time, the token mode driven by the canonical sequences of the bid mode's actions plays the
    same games as the bid mode (the same seed, the same random opponents)."""
    bid = revolution_env.vector_env(1, players=3, opponents="random")
    tok = revolution_env.vector_env(1, players=3, opponents="random", action_mode="tokens")
    bid.reset(seed=9)
    tok.reset(seed=9)
    tokens = TokenCodec(bid.codec)
    rng = np.random.default_rng(4)
    games = 0
    while games < 3:
        action = random_actions(bid, rng)
        if bid._kinds[0] == Decision.BID:
            held = bid.game.tokens[0, bid.seat[0]]
            sequence = tokens.sequence(bid.codec.bid_counts(action[0], held))
        else:
            sequence = [int(action[0, 0])]
        for a in sequence[:-1]:
            _, rewards, terminated, truncated, _ = tok.step(np.array([a]))
            assert not (terminated | truncated).any() and rewards[0] == 0
        _, r_tok, term_tok, _, _ = tok.step(np.array([sequence[-1]]))
        obs, r_bid, term_bid, _, _ = bid.step(action)
        assert r_tok[0] == r_bid[0] and term_tok[0] == term_bid[0]
        np.testing.assert_array_equal(tok.game.state_dict(0)["tokens"], bid.game.state_dict(0)["tokens"])
        finished = tok.pop_finished()
        assert finished == bid.pop_finished()
        games += len(finished)


@pytest.mark.parametrize("variant", list(VARIANTS))
def test_token_mode_games_replay(variant: str) -> None:
    env = revolution_env.vector_env(3, opponents="random", action_mode="tokens", **VARIANTS[variant])
    env.reset(seed=6)
    finished = []
    for obs, *_ in play(env, 2000, seed=1):
        assert env.observation_space.contains(obs)
        finished += env.pop_finished()
        if len(finished) >= 3:
            break
    assert len(finished) >= 3
    for scenario, final in finished:
        assert state_dict(run_scenario(another_seed(scenario))) == final


def test_token_mode_bad_actions_and_options() -> None:
    with pytest.raises(ValueError, match="action_mode: expected one of bid, tokens"):
        revolution_env.vector_env(2, action_mode="token")
    env = revolution_env.vector_env(2, players=3, opponents="random", action_mode="tokens", mask_in_obs=True)
    obs, _ = env.reset(seed=0)
    np.testing.assert_array_equal(obs["action_mask"].astype(bool), env.action_masks())
    with pytest.raises(ValueError, match=r"expected integers of shape \(2,\)"):
        env.step(np.zeros((2, 57), dtype=np.int64))
    wrong = np.array([int(np.flatnonzero(~m)[-1]) for m in env.action_masks()])
    with pytest.warns(UserWarning, match="is not next in the canonical order|is not allowed"):
        obs, rewards, terminated, _, info = env.step(np.array([wrong[0], np.flatnonzero(env.action_masks()[1])[0]]))
    assert rewards[0] == -1 and terminated[0] and info["illegal_action"][0] == 1 and not terminated[1]
    assert obs["observation"][0, -env.codec.T * 3 :].sum() == 0  # the next game starts with an empty bid
    strict = revolution_env.vector_env(1, players=3, opponents="random", action_mode="tokens", illegal="raise")
    strict.reset(seed=0)
    with pytest.raises(IllegalActionError, match="env 0"):
        strict.step(np.array([strict.tokens.n]))


def test_maskable_ppo_learns_in_the_token_mode_on_the_sb3_adapter() -> None:
    sb3_contrib = pytest.importorskip("sb3_contrib")
    from revolution_training.vec_env import SB3VecEnv
    from sb3_contrib.common.maskable.utils import get_action_masks

    venv = SB3VecEnv(revolution_env.vector_env(8, players=3, opponents="random", action_mode="tokens"))
    venv.seed(0)
    venv.reset()
    model = sb3_contrib.MaskablePPO(
        "MlpPolicy", venv, n_steps=32, batch_size=64, n_epochs=1, seed=0, device="cpu", policy_kwargs={"net_arch": [32]}
    )
    model.learn(total_timesteps=512)
    obs = venv.reset()
    actions, _ = model.predict(obs, action_masks=get_action_masks(venv))
    assert venv.venv.action_masks()[np.arange(8), actions].all()


def test_the_benchmark_plays_both_action_modes():
    """scripts/benchmark.py's vector rows run, in the bid mode and with --tokens (a smoke test: no timing)."""
    import importlib.util

    path = Path(__file__).resolve().parent.parent / "scripts" / "benchmark.py"
    spec = importlib.util.spec_from_file_location("benchmark", path)
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    for mode in ("bid", "tokens"):
        figures = bench.vector_random_play(2, 16, 0.2, action_mode=mode)
        assert figures["decisions_per_s"] > 0, mode
    assert bench.vector_random_play(3, 16, 0.2, first_edition=True)["decisions_per_s"] > 0  # --first-edition
    assert bench.measure(bench.single_agent_random_play(3, first_edition=True), 0.2)["decisions_per_s"] > 0
    for flag in ("--tokens", "--first-edition"):
        refused = subprocess.run([sys.executable, str(path), flag], capture_output=True, text=True, timeout=60)
        assert refused.returncode == 2 and "give --vector" in refused.stderr, flag


def _benchmark_module():
    import importlib.util

    path = Path(__file__).resolve().parent.parent / "scripts" / "benchmark.py"
    spec = importlib.util.spec_from_file_location("benchmark", path)
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    return bench


def test_the_benchmark_s_alternating_ratio_measures_both_sides_in_turn():
    """``alternating`` (the vector env against goofspiel, measured in turn): blocks of equal length in the order a b,
    b a, a b, ..., one ratio per pair, their median and range; a machine that slows down between pairs moves both
    sides of each ratio alike, so the ratio holds where two separate measurements would not."""
    bench = _benchmark_module()
    calls = []
    speed = iter([1.0, 1.0, 0.5, 0.5, 0.25, 0.25, 0.5, 0.5, 1.0, 1.0])  # the machine's speed, block by block

    def runner(name: str, rate: float):
        def run(seconds: float) -> tuple[int, int, float]:
            calls.append((name, seconds))
            return rate * next(speed) * seconds, 1, seconds

        return run

    r = bench.alternating(runner("a", 300.0), runner("b", 400.0), 2.0, pairs=5)
    assert [name for name, _ in calls] == ["a", "b", "b", "a", "a", "b", "b", "a", "a", "b"]
    assert all(seconds == pytest.approx(0.2) for _, seconds in calls)
    assert r["ratio"] == r["low"] == r["high"] == pytest.approx(0.75) and r["pairs"] == 5


def test_the_benchmark_draws_every_game_s_moves_as_uniform_indices():
    """The reference games and ours draw alike (benchmark.py's docstring): uniform indices into the legal actions;
    goofspiel with 13 cards and 3 players makes 12 decisions per player and game (OpenSpiel plays the last card)."""
    bench = _benchmark_module()
    pick = bench.UniformIndex(seed=1)
    counts = np.bincount([pick(5) for _ in range(50_000)], minlength=5)
    assert len(counts) == 5 and counts.min() > 9_500 and counts.max() < 10_500
    pytest.importorskip("pygame", reason="connect_four needs pygame: pip install -e '.[bench]'")
    from pettingzoo.classic import connect_four_v3

    assert bench.aec_random_play(connect_four_v3.env, discrete=True)(0) >= 7
    pytest.importorskip("pyspiel")
    assert bench.goofspiel_random_play(3)(0) == 36


def test_the_benchmark_s_batched_sampler_draws_legal_uniform_actions():
    """The vector rows' learner actions (benchmark.py's ``batched_sampler``): legal by the masks, every held token on
    each legal target of its type about equally often, and choices made where decisions offer them; the rows that
    choose read from ``info["decision"]`` or found in the masks, the same draws."""
    import revolution_env

    bench = _benchmark_module()
    env = revolution_env.vector_env(64, players=3, opponents="random", keep_finished=0)
    info = env.reset(seed=0)[1]
    act, masks_only = bench.batched_sampler(env, seed=1), bench.batched_sampler(env, seed=1)
    c = env.codec
    hits = np.zeros((c.K, c.T), dtype=np.int64)
    choices = 0
    for _ in range(300):
        masks = env.action_masks()
        actions = act(info["decision"])
        np.testing.assert_array_equal(actions, masks_only())
        assert env.view.legal(actions, masks).all()  # an unheld token's dimension allows target 0 alone
        for d in range(c.K):
            np.add.at(hits[d], actions[:, 1 + d], 1)
        choices += int((actions[:, 0] > 0).sum())
        info = env.step(actions)[4]
    assert choices > 0
    dim_type = np.repeat(np.arange(3), c.n_tokens)
    for t in range(3):
        legal = np.flatnonzero(c.layout.legal[:, t])
        counts = hits[dim_type == t][:, legal].sum(0)
        # target 0 is also where unheld tokens go: compare the other legal targets, each within 15% of their mean
        others = counts[legal != 0]
        assert others.min() > 0.85 * others.mean() and others.max() < 1.15 * others.mean(), (t, counts)


def test_the_benchmark_times_every_heuristic_style_on_bids_and_other_decisions():
    """scripts/benchmark.py --bots (a smoke test, no timing): each style, bids and the rest apart, on the states of
    real games."""
    figures = _benchmark_module().bot_decisions(3, 0.06, games=8, steps=40)
    assert set(figures) == {f"{style} {kind}" for style in ("value", "bargain", "area") for kind in ("bid", "other")}
    assert all(r["us_per_decision"] > 0 and r["states"] > 0 for r in figures.values())


def test_the_benchmark_s_busy_processes_run_only_while_it_measures():
    import os

    bench = _benchmark_module()

    def children() -> set[str]:
        return {p for p in os.listdir("/proc") if p.isdigit() and _parent(p) == os.getpid()}

    before = children()
    with bench.busy_processes(2):
        busy = children() - before
        assert len(busy) == 2
    assert not busy & children()


def _parent(pid: str) -> int:
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return int(fh.read().rsplit(")", 1)[1].split()[1])
    except (OSError, ValueError, IndexError):
        return -1


def test_the_benchmark_trains_the_default_config_and_its_random_league(monkeypatch):
    """scripts/benchmark.py --train's three runs (a smoke test, no timing): the default config's league, every seat
    random, and all on one thread; each with its rate while it trains and the rest of the run apart."""
    import importlib.util

    from revolution_training import train as T
    from revolution_training.config import load_config

    path = Path(__file__).resolve().parent.parent / "scripts" / "benchmark.py"
    spec = importlib.util.spec_from_file_location("benchmark", path)
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    leagues = []
    original = T.train

    def recorded(config, **kwargs):
        leagues.append(
            (config.league.heuristics, config.league.p_heuristics, config.evaluation.every, config.imitation.teacher,
             config.torch_threads, os.environ.get("REVOLUTION_THREADS"))
        )  # fmt: skip
        return original(config, **kwargs)

    monkeypatch.setattr(T, "train", recorded)
    monkeypatch.delenv("REVOLUTION_THREADS", raising=False)
    for one_core, overrides in ((False, {}), (False, bench.RANDOM_LEAGUE), (True, {})):
        figures = bench.default_training(2048, one_core, **overrides)
        assert figures["steps"] >= 2048 and figures["decisions_per_s"] > 0
        assert figures["seconds"] > 0 and figures["other_seconds"] >= 0
    default = load_config(path.parent.parent / "configs" / "default.yaml")
    assert leagues == [
        (default.league.heuristics, default.league.p_heuristics, 0, None, None, None),
        (["random"], 1.0, 0, None, None, None),
        (default.league.heuristics, default.league.p_heuristics, 0, None, 1, "1"),  # one thread for PPO and opponents
    ]
    assert "REVOLUTION_THREADS" not in os.environ  # set back after the run on one thread


# --- the same games, pinned -------------------------------------------------------------------------------------

# Hashes of 150 steps of uniform random legal play (obs, masks, rewards, ends, decisions, the finished games'
# scenarios and final states) in configurations that between them run every part of the batched engine and its
# view: random opponents (the step in one pass), heuristic bots (their own bids and choices in batch), two players
# (Guy), four players, the first edition (its deck), the token mode, and self-play. A change meant to keep the games
# (a refactoring, a speed-up) must leave them as they are; a change of the rules or of the draws changes them, and
# the hashes are then written anew from the new code (``python tests/test_vector_env.py``), with the reason in the
# commit.
PINNED_CONFIGURATIONS = {
    "random, 3 players": dict(players=3),
    "agents, 3 players": dict(players=3, opponents=["value", "area"]),
    "random, 2 players (Guy)": dict(players=2),
    "random, 4 players, area control bonus": dict(players=4, area_control_bonus=True),
    "first edition, 3 players": dict(players=3, first_edition=True),
    "token mode, 3 players": dict(players=3, action_mode="tokens"),
    "self-play, 2 players": dict(players=2, selfplay=True),
}
PINNED_HASHES = {
    "random, 3 players": "5b3d5fd118632bf9",
    "agents, 3 players": "181658ee3c88e6a2",
    "random, 2 players (Guy)": "5f0ba3fd84a23958",
    "random, 4 players, area control bonus": "c7c73c676af07979",
    "first edition, 3 players": "dba72ba3b8b240ec",
    "token mode, 3 players": "673564b920755de0",
    "self-play, 2 players": "0ce144cc88840b56",
}


def pinned_games_hash(options: dict, steps: int = 150, num: int = 16) -> str:
    """The hash of ``steps`` steps of uniform random legal play (each dimension's value uniform among those its
    part of the mask allows) in a vector env of ``num`` games made with ``options`` (``selfplay``: the self-play
    env), seeded 0."""
    import hashlib

    options = dict(options)
    if options.pop("selfplay", False):
        env = revolution_env.selfplay_vector_env(num, **options)
    else:
        env = revolution_env.vector_env(num, **options)
    rng = np.random.default_rng(0)
    digest = hashlib.sha256()
    obs, info = env.reset(seed=0)
    for step in range(steps + 1):
        masks = env.action_masks()
        for part in (obs, masks, info["decision"]):
            digest.update(np.ascontiguousarray(part).tobytes())
        if step == steps:
            break
        score = rng.random(masks.shape) + masks  # an allowed value beats every other
        if isinstance(env.single_action_space, spaces.Discrete):
            actions = score.argmax(1)
        else:
            ends = np.cumsum(env.single_action_space.nvec)
            actions = np.stack([part.argmax(1) for part in np.split(score, ends[:-1], axis=1)], axis=1)
        obs, rewards, terminated, truncated, info = env.step(actions)
        for part in (rewards.astype(np.float64), terminated, truncated):
            digest.update(np.ascontiguousarray(part).tobytes())
    digest.update(json.dumps(env.pop_finished(), sort_keys=True).encode())
    return digest.hexdigest()[:16]


@pytest.mark.parametrize("name", list(PINNED_CONFIGURATIONS))
def test_the_games_of_pinned_configurations_are_unchanged(name: str) -> None:
    assert pinned_games_hash(PINNED_CONFIGURATIONS[name]) == PINNED_HASHES[name]


def test_ab_speed_compares_two_trees_round_by_round():
    """``scripts/ab_speed.py`` (the vector env's speed in two trees, fresh processes each round), here one tree against
    itself: a round's line, then a summary per batch size; a folder that is no checkout is refused in one line."""
    script = os.path.join(ROOT, "scripts", "ab_speed.py")
    run = subprocess.run(
        [sys.executable, script, "--before", ROOT, "--after", ROOT, "--rounds", "1", "--pairs", "1",
         "--seconds", "0.05", "--batches", "1", "8"],
        capture_output=True, text=True, timeout=300, cwd=ROOT,
    )  # fmt: skip
    assert run.returncode == 0, run.stderr
    lines = run.stdout.splitlines()
    assert lines[0].startswith("round 0: N=1 ") and "N=8 " in lines[0]
    assert [line.split(":")[0] for line in lines[1:]] == ["N=1", "N=8"]
    bad = subprocess.run([sys.executable, script, "--before", "/"], capture_output=True, text=True, timeout=60)
    assert bad.returncode == 2 and "not a checkout of this repository" in bad.stderr


if __name__ == "__main__":  # the pinned hashes, written anew from this code
    for name, options in PINNED_CONFIGURATIONS.items():
        print(f"    {name!r}: {pinned_games_hash(options)!r},")
