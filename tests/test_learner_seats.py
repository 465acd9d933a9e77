"""``vector_env(learner_seats=k)``: the learner in k seats of every game, each a row, beside the league's opponents.
The same games driven through the AEC env (the learner's rows' actions in their seats, the opponents' decisions
made again there by the same deterministic agent) give the same observations, masks, decisions, rewards and final
states; the seats drawn; conservation of rows and results; seeds; the token mode; bad input."""

from __future__ import annotations

import hashlib
import itertools

import numpy as np
import pytest

import revolution_env
from revolution_env.arena.selfplay import SelfPlayVectorEnv
from revolution_env.arena.vector import RevolutionVectorEnv
from revolution_env.engine.game import Decision
from tests.test_vector_env import random_actions


class Hashed:
    """A deterministic opponent: a uniform legal action drawn from a generator seeded by what it sees, so that the
    AEC env, shown the same observation and mask, makes the same decision."""

    name = "hashed"

    def __init__(self, nvec: np.ndarray) -> None:
        self.ends = np.cumsum(nvec)[:-1]

    def act(self, observation: dict, info: dict) -> np.ndarray:
        obs = np.asarray(observation["observation"], dtype=np.float32)
        mask = np.asarray(observation["action_mask"]).astype(bool)
        key = hashlib.sha256(obs.tobytes() + mask.tobytes()).digest()[:8]
        rng = np.random.default_rng(int.from_bytes(key, "little"))
        return np.array([rng.choice(np.flatnonzero(part)) for part in np.split(mask, self.ends)], dtype=np.int64)


def play_against_the_aec_env(options: dict, k: int, games: int, seed: int, ended_at_least: int) -> dict[str, int]:
    """Every learner row of a ``learner_seats=k`` env against the AEC env of its game, step by step."""
    probe = revolution_env.vector_env(1, **options)
    opponent = Hashed(probe.codec.nvec)
    env = revolution_env.vector_env(games, opponents=opponent, learner_seats=k, **options)
    obs, info = env.reset(seed=seed)
    P = env.players
    agents = [f"player_{s}" for s in range(P)]
    aecs = [revolution_env.env(**options) for _ in range(games)]
    for g, aec in enumerate(aecs):
        aec.reset(seed=int(env.game.seeds[g]))
    rng = np.random.default_rng(seed)
    counts = {"steps": 0, "ended": 0, "waited": 0, "other decisions": 0}
    while counts["ended"] < ended_at_least:
        assert counts["steps"] < 3000, "the games do not end"
        kinds = info["decision"]
        for r in range(env.num_envs):
            aec, seat = aecs[env.row_game[r]], int(env.seat[r])
            seen = aec.observe(agents[seat])
            np.testing.assert_array_equal(obs[r], seen["observation"])
            np.testing.assert_array_equal(env.action_masks()[r], seen["action_mask"].astype(bool))
            assert kinds[r] == aec.infos[agents[seat]]["decision"]
            if kinds[r] == Decision.NONE:  # only the no-op
                assert env.action_masks()[r].sum() == len(env.codec.nvec)
        counts["waited"] += int((kinds == Decision.NONE).sum())
        counts["other decisions"] += int((kinds > Decision.BID).sum())
        actions = random_actions(env, rng)
        seats, mine = env.seat.copy(), env.opponent_of == -1  # as they were for the step (a new game redraws them)
        obs, rewards, terminated, truncated, info = env.step(actions)
        counts["steps"] += 1
        finished = iter(env.pop_finished())  # in the order of the games
        for g, aec in enumerate(aecs):
            rows = g * k + np.arange(k)
            done = terminated[rows] | truncated[rows]
            assert done.all() or not done.any()
            # the AEC game played on: each learner row that decided once, the opponents as often as asked
            pending = {int(seats[r]): actions[r] for r in rows if kinds[r] != Decision.NONE}
            while not any(aec.terminations.values()) and not any(aec.truncations.values()):
                agent = aec.agent_selection
                seat = agents.index(agent)
                if not mine[g, seat]:
                    aec.step(opponent.act(aec.observe(agent), {}))
                elif seat in pending:
                    aec.step(pending.pop(seat))
                else:
                    break
            assert not pending, "a learner row's decision was not asked for in the AEC env"
            if not done.any():
                assert env.game.state_dict(g) == aec.state_dict()
                assert (rewards[rows] == 0).all()
                continue
            scenario, final = next(finished)
            assert aec.state_dict() == final
            raw = aec.unwrapped
            for r in rows:
                seat = int(info["final_info"]["seat"][r])
                assert rewards[r] == raw.rewards[agents[seat]]  # each learner seat's own result
                assert info["final_info"]["won"][r] == (seat in final["final"]["winners"])
                np.testing.assert_array_equal(info["final_obs"][r], aec.observe(agents[seat])["observation"])
            aec.reset(seed=int(env.game.seeds[g]))
            counts["ended"] += 1
    return counts


@pytest.mark.parametrize(
    "options, k",
    [
        ({"players": 3}, 2),
        ({"players": 4}, 2),
        ({"players": 4}, 3),
        ({"players": 3, "first_edition": True}, 2),
        ({"players": 3, "max_rounds": 3, "reward": "margin"}, 2),
    ],
)
def test_every_learner_row_sees_and_gets_what_the_aec_env_gives_its_seat(options: dict, k: int) -> None:
    counts = play_against_the_aec_env(options, k, games=3, seed=5, ended_at_least=4)
    assert counts["waited"] > 0 and counts["other decisions"] > 0


@pytest.mark.parametrize("players, k", [(3, 2), (4, 2), (4, 3)])
def test_the_learner_seats_are_drawn_per_game_and_the_rows_conserve_games(players: int, k: int) -> None:
    """Each game's rows are k distinct seats in order, the league fills exactly the others (slots 0 to P-k-1);
    every seat combination turns up; a game's rows end together, one finished game per k rows, each row naming
    its game's opponents."""
    env = revolution_env.vector_env(6, players=players, opponents=["random", "area", "bargain"][: players - k],
                                    learner_seats=k)  # fmt: skip
    assert env.num_envs == 6 * k and env.num_games == 6
    env.reset(seed=1)
    rng = np.random.default_rng(2)
    combos, ended_rows, ended_games = set(), 0, 0
    for _ in range(300):
        seats = env.seat.reshape(6, k)
        assert (np.diff(seats, axis=1) > 0).all()  # distinct, in seat order
        for g in range(6):
            assert set(np.flatnonzero(env.opponent_of[g] == -1).tolist()) == set(seats[g].tolist())
            combos.add(tuple(seats[g].tolist()))
        kinds, made = env.decisions, env.decisions_made
        _, rewards, terminated, truncated, info = env.step(random_actions(env, rng))
        assert env.decisions_made - made == (kinds != Decision.NONE).sum()  # the rows that decided, no waiting one
        done = (terminated | truncated).reshape(6, k)
        assert (done.all(1) | ~done.any(1)).all()
        ended_rows += int(done.sum())
        finished = env.pop_finished()
        ended_games += len(finished)
        names = env.opponent_names()
        for r in np.flatnonzero(terminated | truncated):
            assert [names[j] for j in info["final_info"]["opponents"][r]] == ["random", "area", "bargain"][
                : players - k
            ]
        for g in np.flatnonzero(done.all(1)):  # win_loss: +1 for the winners' rows, -1 for the others
            won = info["final_info"]["won"][g * k : (g + 1) * k]
            np.testing.assert_array_equal(rewards[g * k : (g + 1) * k], np.where(won, 1.0, -1.0))
    assert ended_rows == k * ended_games and ended_games >= 6
    assert combos == set(itertools.combinations(range(players), k))


def test_one_learner_seat_counts_its_decisions_in_the_step_in_one_pass_too() -> None:
    """Every opponent random: the step decides and observes in one pass (``_decide_and_observe``); each row, one
    per game, decides at every step."""
    env = revolution_env.vector_env(5, players=3, opponents="random")
    env.reset(seed=0)
    rng = np.random.default_rng(0)
    for step in range(1, 31):
        env.step(random_actions(env, rng))
        assert env.decisions_made == 5 * step


@pytest.mark.parametrize("action_mode", ["bid", "tokens"])
def test_the_same_seed_gives_the_same_games(action_mode: str) -> None:
    def run(seed: int) -> list:
        env = revolution_env.vector_env(4, players=3, opponents=["value"], learner_seats=2, action_mode=action_mode)
        env.reset(seed=seed)
        rng = np.random.default_rng(0)
        out = []
        for _ in range(120):
            obs, rewards, terminated, truncated, _ = env.step(random_actions(env, rng))
            out.append((obs.tobytes(), rewards.tolist(), env.seat.tolist()))
        return [out, env.pop_finished()]

    assert run(3) == run(3)
    assert run(3) != run(4)


def test_token_mode_waits_for_every_learner_bid_of_the_game() -> None:
    """In the token mode a row whose bid is complete waits (``NONE``, the no-op alone) until the other learner
    seats of its game complete theirs; the games are those of the bid mode's bids placed token by token."""
    env = revolution_env.vector_env(2, players=3, opponents=["random"], learner_seats=2, action_mode="tokens")
    env.reset(seed=4)
    rng = np.random.default_rng(1)
    waited = 0
    for _ in range(300):
        kinds = env.decisions
        complete = env._complete.copy()
        assert (kinds[complete] == Decision.NONE).all()
        waited += int(complete.sum())
        env.step(random_actions(env, rng))
    assert waited > 0
    for scenario, final in env.pop_finished():
        from revolution_env.engine.scenario import run_scenario, state_dict

        assert state_dict(run_scenario(scenario)) == final


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"learner_seats": 0}, "learner_seats: expected a positive integer"),
        ({"learner_seats": True}, "learner_seats: expected a positive integer"),
        ({"learner_seats": 4}, r"learner_seats: expected 1 to 3"),
        ({"learner_seats": 2, "seat": 0}, "seat: the 2 learner seats"),
        ({"learner_seats": 2, "opponents": ["value", "area"]}, "opponents: expected 1 opponent"),
    ],
)
def test_bad_learner_seats_are_one_clear_line(kwargs: dict, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        revolution_env.vector_env(2, players=3, **kwargs)


def test_every_seat_the_learner_plays_what_the_self_play_env_plays() -> None:
    """``learner_seats=players`` (seats set as each game starts) plays the self-play env's games (seats in order
    from construction), row for row, for the same seed and actions; the self-play env is that env."""
    assert issubclass(SelfPlayVectorEnv, RevolutionVectorEnv)
    mine = revolution_env.vector_env(3, players=3, learner_seats=3)
    theirs = revolution_env.selfplay_vector_env(3, players=3)
    a, _ = mine.reset(seed=7)
    b, _ = theirs.reset(seed=7)
    np.testing.assert_array_equal(a, b)
    rng = np.random.default_rng(2)
    for _ in range(150):
        actions = random_actions(theirs, rng)
        for x, y in zip(mine.step(actions)[:4], theirs.step(actions)[:4]):
            np.testing.assert_array_equal(x, y)
    assert mine.pop_finished() == theirs.pop_finished()
