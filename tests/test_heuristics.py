"""The heuristic bots: legal in every variant and every decision, reproducible, and sensible where the board
makes one choice clearly right.

Games are played through the raw AEC environment, which raises on any action that breaks the mask; a bot that
would have broken it counts a ``fallback`` instead, and none is allowed either.
"""

from __future__ import annotations

import numpy as np
import pytest

import revolution_env
from revolution_env.agents.base import RandomAgent
from revolution_env.agents.heuristics import HEURISTICS, HeuristicBot
from revolution_env.arena.runner import GameRunner
from revolution_env.engine.game import Decision
from revolution_env.engine.scenario import set_position

BOTS = sorted(HEURISTICS)
VARIANTS = [
    {"players": 2},
    {"players": 3},
    {"players": 4},
    {"players": 3, "first_edition": True},
    {"players": 2, "first_edition": True, "area_control_bonus": True},
    {"players": 3, "area_control_bonus": True},
    {"players": 4, "bid_refunds": True},
]
KINDS = {
    Decision.BID,
    Decision.GUY,
    Decision.SPY,
    Decision.APOTHECARY_FIRST,
    Decision.APOTHECARY_SECOND,
    Decision.REMOVE,
}


def play(options: dict, agents: list, seed: int, log: list | None = None) -> revolution_env.env:
    """One game through the runner (which raises on any illegal action); ``log`` collects (seat, decision,
    action, tokens held) for every decision."""

    def note(env, name, obs, info, action):
        seat = int(name.split("_")[1])
        log.append((seat, info["decision"], np.asarray(action).copy(), agents[seat].view(obs).tokens[0]))

    runner = GameRunner(agents, options)
    runner.play(seed, on_step=None if log is None else note)
    return runner.env


def lineup(bot: str, options: dict, game: int) -> list:
    """The bot in one seat (rotating), the other seats random or the other bots."""
    players = options["players"]
    others = [RandomAgent(**options) if (game + i) % 2 else HEURISTICS[BOTS[i % len(BOTS)]](**options)
              for i in range(players - 1)]  # fmt: skip
    seat = game % players
    return others[:seat] + [HEURISTICS[bot](**options)] + others[seat:]


@pytest.mark.parametrize("bot", BOTS)
def test_every_decision_of_every_variant_is_legal(bot: str) -> None:
    seen: set[str] = set()
    for v, options in enumerate(VARIANTS):
        options = {**options, "max_rounds": 14}
        # "Remove 1 Influence" cards come only to a bot that bids on the Card space, which bargain seldom does
        for game in range(6 if options.get("first_edition") else 3):
            agents = lineup(bot, options, game)
            log: list = []
            play(options, agents, seed=100 * v + game, log=log)
            mine = [i for i, a in enumerate(agents) if isinstance(a, HEURISTICS[bot])]
            seen |= {kind for seat, kind, _, _ in log if seat in mine}
            for a in agents:
                assert getattr(a, "fallbacks", 0) == 0, f"{a.name} fell back to a default action"
            for seat, kind, action, held in log:
                if kind == Decision.BID and isinstance(agents[seat], HeuristicBot):
                    counts = agents[seat].codec.bid_counts(action, held)
                    chars = counts[: agents[seat].n_characters].any(1).sum()
                    assert chars <= 6, f"{agents[seat].name} bid on {chars} characters"
    assert seen == KINDS, f"{bot} never faced: {sorted(KINDS - seen)}"


@pytest.mark.parametrize("bot", BOTS)
def test_parallel_api_nothing_to_decide_is_the_zero_action(bot: str) -> None:
    env = revolution_env.parallel_env(players=2, max_rounds=6)
    observations, infos = env.reset(seed=3)
    agents = {a: HEURISTICS[bot](players=2) for a in env.agents}
    for i, agent in enumerate(agents.values()):
        agent.reset(i)
    kinds = set()
    while env.agents:
        actions = {a: agents[a].act(observations[a], infos[a]) for a in env.agents}
        for a, action in actions.items():
            kinds.add(infos[a]["decision"])
            if infos[a]["decision"] == Decision.NONE:
                assert not np.any(action)
        observations, _, _, _, infos = env.step(actions)
    assert Decision.NONE in kinds


@pytest.mark.parametrize("bot", BOTS)
def test_same_seed_same_game(bot: str) -> None:
    options = {"players": 2, "max_rounds": 8}
    logs = []
    for _ in range(2):
        log: list = []
        play(options, [HEURISTICS[bot](**options), HEURISTICS[bot](**options)], seed=7, log=log)
        logs.append(log)
    assert len(logs[0]) == len(logs[1])
    for (s1, k1, a1, _), (s2, k2, a2, _) in zip(*logs):
        assert (s1, k1) == (s2, k2) and np.array_equal(a1, a2)


# --- constructed positions ---------------------------------------------------------------------------------


def position(options: dict, start: dict, bids: list[str]) -> revolution_env.env:
    """A raw environment set to ``start`` (docs/scenarios.md §3) with the round's bids placed."""
    env = revolution_env.raw_env(**options)
    env.reset(seed=0)
    set_position(env.unwrapped.game, start)
    for text in bids:
        env.step(revolution_env.bid_action(env, text))
    return env


@pytest.mark.parametrize("bot", BOTS)
def test_spy_takes_the_cube_that_turns_a_majority(bot: str) -> None:
    # Fortress is full at 3-4-1 for P1: taking one of P1's cubes there turns it to 4-3 for us (50 support).
    # Taking P2's Tavern cube would win only the Tavern (20); P2's Fortress cube only ties the Fortress.
    start = {
        "tokens": [{"force": 1}, {"gold": 1}, {"gold": 1}],
        "board": {"Fortress": [3, 4, 1], "Tavern": [2, 0, 2], "Market": [1, 1, 1]},
    }
    env = position({"players": 3}, start, ["1 force spy", "1 gold printer", "1 gold priest"])
    obs, _, _, _, info = env.last()
    assert info["decision"] == Decision.SPY and env.agent_selection == "player_0"
    agent = HEURISTICS[bot](players=3)
    agent.reset(0)
    assert revolution_env.describe_action(env, "player_0", agent.act(obs, info)) == "spy: P1's cube in Fortress"


def test_value_apothecary_takes_a_majority_with_a_cube_it_can_spare() -> None:
    # Swapping P1's Fortress cube with one of our Tavern cubes turns the Fortress 4-3 our way (50 support) and
    # leaves the Tavern ours at 2-1-1. Giving away a Market cube instead would hand P1 the Market.
    start = {
        "tokens": [{"blackmail": 1}, {"gold": 1}, {"gold": 1}],
        "board": {"Fortress": [3, 4, 1], "Tavern": [3, 0, 1], "Market": [2, 1, 1]},
    }
    env = position({"players": 3}, start, ["1 blackmail apothecary", "1 gold printer", "1 gold priest"])
    agent = HEURISTICS["value"](players=3)
    agent.reset(0)
    picks = []
    for _ in range(2):
        obs, _, _, _, info = env.last()
        action = agent.act(obs, info)
        picks.append(revolution_env.describe_action(env, "player_0", action).split(": ")[1])
        env.step(action)
    assert sorted(picks) == ["P0's cube in Tavern", "P1's cube in Fortress"]
    assert env.unwrapped.game.cubes[0].tolist() == [4, 3, 1]


def test_value_uses_guy_to_deny_the_opponents_printer() -> None:
    # We have priority (Scheming Gold). The opponent's 2 Gold on the Printer is worth 10 support to it; our own
    # bid is a lone Gold on the Rogue. Guy ties the Printer bid: nobody gets it, and Guy gets nothing either.
    start = {"tokens": [{"gold": 2}, {"gold": 2}, {"gold": 5}], "support": [20, 20, 0]}
    env = position({"players": 2}, start, ["1 gold rogue, 1 gold scheming", "2 gold printer"])
    obs, _, _, _, info = env.last()
    assert info["decision"] == Decision.GUY and env.agent_selection == "player_0"
    agent = HEURISTICS["value"](players=2)
    agent.reset(0)
    assert revolution_env.describe_action(env, "player_0", agent.act(obs, info)) == "guy: tie P1's bid on Printer"


def test_value_spends_a_sure_force_alone() -> None:
    # Opponents hold only Gold: the value bot's Force wins a character outright, so no Gold joins it there, and it
    # never goes to a character that refuses Force (the General, the Captain, the Rogue, the Apothecary, the
    # Mercenary).
    options = {"players": 3}
    agent = HEURISTICS["value"](**options)
    refused = ~agent.legal_types()[:, 0]
    for seed in range(20):
        start = {"tokens": [{"force": 1, "gold": 4}, {"gold": 5}, {"gold": 5}], "round": 3}
        env = position(options, start, [])
        obs, _, _, _, info = env.last()
        agent.reset(seed)
        counts = agent.codec.bid_counts(agent.act(obs, info), np.array([1, 0, 4]))
        assert counts[refused, 0].sum() == 0
        target = int(np.argmax(counts[:, 0]))
        assert counts[target].tolist() == [1, 0, 0]


def test_bots_are_fast() -> None:
    import time

    from revolution_env.agents.compiled import COMPILED, wait_until_ready

    options = {"players": 3}
    agents = [HEURISTICS[b](**options) for b in BOTS]
    if COMPILED:  # the compiled bots (on a fresh clone they play as plain Python, slower, until Numba built them)
        wait_until_ready(agents[0], report=lambda line: None)
    log: list = []
    start = time.perf_counter()
    play(options, agents, seed=5, log=log)
    per_decision = (time.perf_counter() - start) / len(log)
    assert per_decision < 0.02  # generous: the target is about a millisecond
