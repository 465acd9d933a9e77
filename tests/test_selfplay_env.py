"""``revolution_env.selfplay_vector_env``: every seat of every game a row. The same games driven through the scalar
envs with the same actions (the AEC env in the bid mode, the Parallel env in the token mode, whose simultaneous
bids are the token mode's own) give the same observations, masks, decisions, rewards and final states on every
variant the batched engine plays; exported games replay; seeds; illegal actions and bad input; the SB3 adapter."""

from __future__ import annotations

import json
import os

import numpy as np
import pytest
from gymnasium import spaces
from gymnasium.vector import AutoresetMode, VectorEnv

import revolution_env
from revolution_env.engine.game import Decision
from revolution_env.env.encoding import IllegalActionError
from revolution_env.env.tokens import TokenCodec
from tests.test_vector_env import VARIANTS as VECTOR_VARIANTS
from tests.test_vector_env import finished_games_replay, random_actions

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
VARIANTS = {**VECTOR_VARIANTS, "margin reward": {"players": 3, "reward": "margin"}}  # the vector env's, and a reward


class Coin:
    """D9's coin flip of a scalar game, made to land as the batched game's did (they draw from different
    generators; a replay carries the priority instead)."""

    def __init__(self) -> None:
        self.land = lambda: 0

    def integers(self, *args, **kwargs) -> int:
        return self.land()


class Scalar:
    """One scalar env per game of the self-play env, reset to the seed of the batched game in its place."""

    def __init__(self, env, make) -> None:
        self.env, self.make = env, make
        self.agents = [f"player_{s}" for s in range(env.players)]
        self.coins = [Coin() for _ in range(env.num_games)]
        self.envs = [make() for _ in range(env.num_games)]
        self.seen: list = [None] * env.num_games
        for g in range(env.num_games):
            self.start(g)

    def start(self, g: int) -> None:
        out = self.envs[g].reset(seed=int(self.env.game.seeds[g]))
        self.seen[g] = out[0] if isinstance(out, tuple) else None
        self.envs[g].unwrapped.core.game._coin_rng = self.coins[g]

    def land_coin(self, g: int, scenario: dict | None) -> None:
        """The coin of game ``g``'s current round as the batched game drew it (from its export if it ended)."""
        r = self.envs[g].unwrapped.core.game.round
        if scenario is not None:
            self.coins[g].land = lambda: scenario["rounds"][r - 1]["priority"]
        else:
            self.coins[g].land = lambda: int(self.env.game.history.priority[g, r - 1])


def compare_rows(env, obs, info, g: int, seen: dict) -> None:
    """The rows of game ``g`` against the scalar env's observations ``seen`` (per agent)."""
    for s in range(env.players):
        r = g * env.players + s
        np.testing.assert_array_equal(obs[r], seen[f"player_{s}"]["observation"])
        np.testing.assert_array_equal(env.action_masks()[r], seen[f"player_{s}"]["action_mask"].astype(bool))


def play_against_the_aec_env(options: dict, games: int, seed: int, ended_at_least: int) -> dict[str, int]:
    env = revolution_env.selfplay_vector_env(games, **options)
    obs, info = env.reset(seed=seed)
    P = env.players
    scalar = Scalar(env, lambda: revolution_env.env(**options))
    rng = np.random.default_rng(seed)
    counts = {"steps": 0, "ended": 0, "other decisions": 0}
    while counts["ended"] < ended_at_least:
        assert counts["steps"] < 2000, "the games do not end"
        for g, aec in enumerate(scalar.envs):
            compare_rows(env, obs, info, g, {a: aec.observe(a) for a in scalar.agents})
            for s, agent in enumerate(scalar.agents):
                assert info["decision"][g * P + s] == aec.infos[agent]["decision"]
        actions = random_actions(env, rng)
        kinds = info["decision"]
        counts["other decisions"] += int((kinds > Decision.BID).sum())
        obs, rewards, terminated, truncated, info = env.step(actions)
        counts["steps"] += 1
        finished = iter(env.pop_finished())  # in the order of the games
        for g, aec in enumerate(scalar.envs):
            rows = g * P + np.arange(P)
            done = terminated[rows] | truncated[rows]
            assert done.all() or not done.any()
            scenario, final = next(finished) if done.any() else (None, None)
            if options.get("players") == 2:
                scalar.land_coin(g, scenario)
            for s in np.flatnonzero(kinds[rows]):  # the seats that decided, in the AEC env's order
                assert aec.agent_selection == scalar.agents[s]
                aec.step(actions[g * P + s])
            raw = aec.unwrapped
            if not done.any():
                assert env.game.state_dict(g) == aec.state_dict()
                assert (rewards[rows] == 0).all()
                continue
            assert aec.state_dict() == final
            for s, agent in enumerate(scalar.agents):
                r = g * P + s
                assert rewards[r] == raw.rewards[agent]
                assert terminated[r] == raw.terminations[agent] and truncated[r] == raw.truncations[agent]
                np.testing.assert_array_equal(info["final_obs"][r], aec.observe(agent)["observation"])
                assert info["final_info"]["won"][r] == (s in final["final"]["winners"])
                assert info["final_info"]["seat"][r] == s
                assert info["final_info"]["support"][r] == final["final"]["support"][s]
            scalar.start(g)
            counts["ended"] += 1
    return counts


@pytest.mark.parametrize("variant", list(VARIANTS))
def test_every_row_sees_what_the_aec_env_shows_its_seat(variant: str) -> None:
    """The same games through the AEC env with the same actions: observations, masks and decisions of every
    seat before every step, the state after it, and at the end the rewards, final observations and states."""
    counts = play_against_the_aec_env(VARIANTS[variant], games=3, seed=7, ended_at_least=4)
    assert counts["other decisions"] > 0  # Guy, Spy or Apothecary: one row decides, the others wait


@pytest.mark.parametrize("variant", ["3 players", "2 players (Guy)", "4 players", "bid refunds"])
def test_token_mode_rows_see_what_the_parallel_env_shows_their_seats(variant: str) -> None:
    """The token mode against the Parallel env's (every seat places a token each step; a complete bid waits):
    observations, masks and decisions of every seat before every step, the rewards and final states at the end."""
    options = dict(VARIANTS[variant], action_mode="tokens")
    env = revolution_env.selfplay_vector_env(3, **options)
    obs, info = env.reset(seed=4)
    P = env.players
    scalar = Scalar(env, lambda: revolution_env.parallel_env(**options))
    assert env.single_action_space == spaces.Discrete(TokenCodec(env.codec).n)
    rng = np.random.default_rng(4)
    ended = waited = 0
    for _ in range(3000):
        for g in range(env.num_games):
            compare_rows(env, obs, info, g, scalar.seen[g])
        actions = random_actions(env, rng)
        kinds = info["decision"]
        waited += int(((kinds == Decision.NONE) & (env.game.kind[env.row_game] == Decision.BID)).sum())
        obs, rewards, terminated, truncated, info = env.step(actions)
        finished = iter(env.pop_finished())
        for g, par in enumerate(scalar.envs):
            rows = g * P + np.arange(P)
            done = (terminated | truncated)[rows]
            scenario, final = next(finished) if done.any() else (None, None)
            if P == 2:
                scalar.land_coin(g, scenario)
            deciding = {scalar.agents[s]: int(actions[g * P + s]) for s in np.flatnonzero(kinds[rows])}
            seen, paid, *_ = par.step(deciding)
            scalar.seen[g] = seen
            if not done.any():
                assert env.game.state_dict(g) == par.state_dict() and (rewards[rows] == 0).all()
                continue
            assert par.state_dict() == final
            for s, agent in enumerate(scalar.agents):
                assert rewards[g * P + s] == paid[agent]
                np.testing.assert_array_equal(info["final_obs"][g * P + s], seen[agent]["observation"])
            scalar.start(g)
            ended += 1
        if ended >= 3:
            break
    assert ended >= 3 and waited > 0


def test_api_rows_spaces_and_autoreset() -> None:
    env = revolution_env.selfplay_vector_env(5, players=4)
    assert isinstance(env, VectorEnv) and env.metadata["autoreset_mode"] == AutoresetMode.SAME_STEP
    assert env.num_envs == 20 and env.num_games == 5
    np.testing.assert_array_equal(env.row_game[:6], [0, 0, 0, 0, 1, 1])
    np.testing.assert_array_equal(env.row_seat[:6], [0, 1, 2, 3, 0, 1])
    obs, info = env.reset(seed=2)
    assert obs.shape == (20, env.single_observation_space.shape[0]) and obs.dtype == np.float32
    assert env.action_masks().shape == (20, int(env.single_action_space.nvec.sum()))
    assert (info["decision"] == Decision.BID).all()  # every seat bids in the first step
    rng = np.random.default_rng(0)
    before = env.decisions_made
    for _ in range(80):
        kinds = env.decisions
        obs, rewards, terminated, truncated, info = env.step(random_actions(env, rng))
        assert env.decisions_made - before == (kinds != Decision.NONE).sum()
        before = env.decisions_made
        assert env.observation_space.contains(obs)
        done = terminated | truncated
        assert (rewards[~done] == 0).all() and np.isin(rewards[done], (-1.0, 1.0)).all()
        np.testing.assert_array_equal(info["action_mask"], env.action_masks())
        np.testing.assert_array_equal(info["decision"], env.decisions)
        waiting = info["decision"] == Decision.NONE  # a waiting row's mask is the no-op alone
        assert (env.action_masks()[waiting].sum(1) == len(env.single_action_space.nvec)).all()
        if done.any():
            assert info["_final_obs"].sum() == done.sum() and done.sum() % 4 == 0
            assert (obs[done][:, env.obs_layout.features["round"].start] == 1).all()  # the next game started


@pytest.mark.parametrize("variant", list(VARIANTS))
def test_every_finished_game_replays(variant: str) -> None:
    finished_games_replay(revolution_env.selfplay_vector_env(4, **VARIANTS[variant]), VARIANTS[variant])


def test_a_finished_game_replays_through_the_scenario_command(tmp_path, capsys) -> None:
    from revolution_env.frontends.cli import main

    env = revolution_env.selfplay_vector_env(2, players=3, action_mode="tokens")
    env.reset(seed=8)
    rng = np.random.default_rng(2)
    finished = []
    while not finished:
        env.step(random_actions(env, rng))
        finished = env.pop_finished()
    scenario, final = finished[0]
    path = tmp_path / "game.json"
    path.write_text(json.dumps(scenario))
    assert main(["scenario", str(path)]) == 0  # revolution scenario game.json
    assert json.loads(capsys.readouterr().out) == final


@pytest.mark.parametrize("action_mode", ["bid", "tokens"])
def test_the_same_seed_gives_the_same_games(action_mode: str) -> None:
    one = revolution_env.selfplay_vector_env(3, players=2, action_mode=action_mode)
    two = revolution_env.selfplay_vector_env(3, players=2, action_mode=action_mode)
    first, _ = one.reset(seed=9)
    two.reset(seed=1)
    two.step(random_actions(two, np.random.default_rng(0)))  # a different history does not matter after reset
    np.testing.assert_array_equal(two.reset(seed=9)[0], first)
    np.testing.assert_array_equal(one.game.seeds, two.game.seeds)
    rng = np.random.default_rng(3)
    games = 0
    while games < 4:
        actions = random_actions(one, rng)
        a, b = one.step(actions), two.step(actions)
        for x, y in zip(a[:4], b[:4]):
            np.testing.assert_array_equal(x, y)
        finished = one.pop_finished()
        assert finished == two.pop_finished()
        games += len(finished)
    other = revolution_env.selfplay_vector_env(3, players=2, action_mode=action_mode)
    other.reset(seed=10)
    assert not np.array_equal(other.game.seeds, one.game.seeds)


@pytest.mark.parametrize("action_mode", ["bid", "tokens"])
def test_the_actions_of_rows_with_nothing_to_decide_are_ignored(action_mode: str) -> None:
    """Garbage in every waiting row plays the same games as the no-op."""
    plain = revolution_env.selfplay_vector_env(4, players=2, action_mode=action_mode)
    noisy = revolution_env.selfplay_vector_env(4, players=2, action_mode=action_mode)
    plain.reset(seed=3)
    noisy.reset(seed=3)
    rng = np.random.default_rng(5)
    waited = 0
    for _ in range(150):
        actions = random_actions(plain, rng)
        waiting = plain.decisions == Decision.NONE
        waited += int(waiting.sum())
        garbage = actions.copy()
        garbage[waiting] = rng.integers(-5, 50, size=garbage[waiting].shape)
        a, b = plain.step(actions), noisy.step(garbage)
        for x, y in zip(a[:4], b[:4]):
            np.testing.assert_array_equal(x, y)
        assert not b[4]["illegal_action"].any()
    assert waited > 0


def test_an_illegal_action_ends_its_game_with_minus_one_to_the_offender() -> None:
    env = revolution_env.selfplay_vector_env(3, players=3)
    env.reset(seed=0)
    actions = random_actions(env, np.random.default_rng(0))
    offender = 1 * 3 + 2  # game 1, seat 2: its tokens left unplaced (D3)
    actions[offender, 1:] = 0
    with pytest.warns(UserWarning, match=r"row 5 \(game 1, seat 2\): illegal action for decision"):
        obs, rewards, terminated, truncated, info = env.step(actions)
    np.testing.assert_array_equal(terminated, [False] * 3 + [True] * 3 + [False] * 3)
    np.testing.assert_array_equal(rewards, [0, 0, 0, 0, 0, -1, 0, 0, 0])
    np.testing.assert_array_equal(info["illegal_action"], np.arange(9) == offender)
    np.testing.assert_array_equal(info["final_info"]["illegal_action"][3:6], [0, 0, 1])
    assert env.pop_finished() == []  # an illegal action ends a game that is no game
    assert env.game.round[1] == 1 and (info["decision"][3:6] == Decision.BID).all()  # a new game in its place
    np.testing.assert_array_equal(env.game.revealed_round, [1, 0, 1])  # the others' bids went in


@pytest.mark.parametrize("action_mode", ["bid", "tokens"])
def test_illegal_raise_is_one_line_and_changes_nothing(action_mode: str) -> None:
    env = revolution_env.selfplay_vector_env(2, players=3, illegal="raise", action_mode=action_mode)
    env.reset(seed=0)
    actions = random_actions(env, np.random.default_rng(0))
    if action_mode == "tokens":
        actions[4] = env.tokens.n - 1  # a Gold token is never the first of a canonical bid that holds Force
    else:
        actions[4, 1:] = 0
    before = [env.game.state_dict(g) for g in range(2)]
    with pytest.raises(IllegalActionError) as raised:
        env.step(actions)
    message = str(raised.value)
    assert message.startswith("row 4 (game 1, seat 1): illegal action for decision") and "\n" not in message
    assert [env.game.state_dict(g) for g in range(2)] == before


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"num_games": 0}, "num_games: expected a positive integer, got 0"),
        ({"num_games": True}, "num_games: expected a positive integer"),
        ({"num_games": 2, "players": 5}, "players"),
        ({"num_games": 2, "render_mode": "ansi"}, "render_mode: the self-play vector env does not render"),
        ({"num_games": 2, "mask_in_obs": 1}, "mask_in_obs: expected true or false"),
        ({"num_games": 2, "keep_finished": -1}, "keep_finished: expected a non-negative integer"),
        ({"num_games": 2, "action_mode": "token"}, "action_mode: expected one of bid, tokens"),
        ({"num_games": 2, "opponents": "value"}, "opponents: unknown option"),
        ({"num_games": 2, "board": "nowhere"}, "board"),
    ],
)
def test_bad_options_are_one_clear_line(kwargs: dict, message: str) -> None:
    with pytest.raises(ValueError) as raised:
        revolution_env.selfplay_vector_env(**kwargs)
    assert message in str(raised.value) and "\n" not in str(raised.value)


def test_a_wrong_action_shape_is_one_clear_line() -> None:
    env = revolution_env.selfplay_vector_env(2, players=3)
    env.reset(seed=0)
    D = len(env.single_action_space.nvec)
    with pytest.raises(
        ValueError, match=rf"actions: expected integers of shape \(6, {D}\) \(one row per seat, 2 games"
    ):
        env.step(np.zeros((2, D), dtype=np.int64))  # one per game is not enough
    with pytest.raises(ValueError, match=r"got float64"):
        env.step(np.zeros((6, D)))
    tokens = revolution_env.selfplay_vector_env(2, players=3, action_mode="tokens")
    tokens.reset(seed=0)
    with pytest.raises(ValueError, match=r"expected integers of shape \(6,\)"):
        tokens.step(np.zeros((6, 2), dtype=np.int64))
    with pytest.raises(RuntimeError, match="step\\(\\) before reset\\(\\)"):
        revolution_env.selfplay_vector_env(1).step(np.zeros((3, D), dtype=np.int64))


@pytest.mark.parametrize("action_mode", ["bid", "tokens"])
def test_mask_in_obs_and_the_margin_reward(action_mode: str) -> None:
    env = revolution_env.selfplay_vector_env(3, players=4, reward="margin", mask_in_obs=True, action_mode=action_mode)
    obs, _ = env.reset(seed=0)
    assert set(obs) == {"observation", "action_mask"}
    np.testing.assert_array_equal(obs["action_mask"].astype(bool), env.action_masks())
    rng = np.random.default_rng(1)
    for _ in range(3000):
        obs, rewards, terminated, truncated, info = env.step(random_actions(env, rng))
        assert env.observation_space.contains(obs)
        done = terminated | truncated
        if done.any():
            break
    finished = env.pop_finished()
    for (_, final), g in zip(finished, np.flatnonzero(done[::4])):
        support = np.array(final["final"]["support"], dtype=float)
        for s in range(4):
            best_other = np.delete(support, s).max()
            assert rewards[g * 4 + s] == pytest.approx((support[s] - best_other) / 100)
            last = info["final_obs"][g * 4 + s]
            assert set(last) == {"observation", "action_mask"} and last["action_mask"].sum() == (
                1 if action_mode == "tokens" else len(env.single_action_space.nvec)
            )


def test_maskable_ppo_learns_from_every_row_on_the_sb3_adapter() -> None:
    from revolution_training.distributions import MaskableMultiDiscretePolicy
    from revolution_training.vec_env import SB3VecEnv
    from sb3_contrib import MaskablePPO

    venv = SB3VecEnv(revolution_env.selfplay_vector_env(4, players=3))
    assert venv.num_envs == 12
    model = MaskablePPO(
        MaskableMultiDiscretePolicy,
        venv,
        n_steps=16,
        batch_size=96,
        n_epochs=1,
        seed=0,
        policy_kwargs={"net_arch": [16]},
    )
    model.learn(2 * 12 * 16)
    assert model.num_timesteps == 384  # every row a step
    venv.seed(0)
    obs = venv.reset()
    ended = 0
    while not ended:
        actions, _ = model.predict(obs, action_masks=venv.action_masks())
        assert venv.venv.view.legal(actions, venv.venv.action_masks()).all()
        obs, rewards, dones, infos = venv.step(actions)
        for i in np.flatnonzero(dones):
            assert infos[i]["seat"] == i % 3 and infos[i]["opponents"] == []  # the other seats: itself
            assert rewards[i] in (-1.0, 1.0) and "terminal_observation" in infos[i]
            ended += 1
    assert ended % 3 == 0


def test_the_benchmark_trains_by_pure_self_play_and_counts_real_decisions_apart():
    """scripts/benchmark.py --train's self-play run (a smoke test, no timing): rows and real decisions apart."""
    import importlib.util

    path = os.path.join(ROOT, "scripts", "benchmark.py")
    spec = importlib.util.spec_from_file_location("benchmark", path)
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    figures = bench.selfplay_training(192, n_envs=4, ppo={"n_steps": 16, "batch_size": 64})
    assert figures["steps"] == 192 and 0 < figures["decisions_per_s"] < figures["rows_per_s"]
