"""Record the heuristic bots' decisions in tests/golden/bots/ (replayed by tests/test_compiled_bots.py).

Each file is one whole seeded game of one variant with heuristic bots in every seat (the three styles and their
held-out variants; in two games, a shipped bot whose bids a search judges with ``value``'s model of the rivals'
bids): the options, the seats, the game's seed and, for every decision in turn, one line

    SEAT KIND ACTION OBSERVATION DRAWS

``KIND`` is the decision (``Decision``'s value), ``ACTION`` the action's entries joined by ``.`` without its
trailing zeros (``5`` is a choice of 5, a bid lists its tokens' targets), ``OBSERVATION`` the first hex digits of
a hash of the observation and the mask the bot decided on, and ``DRAWS`` those of the bot's random generators'
states after the decision (a search's and its judge's), so that a bot that draws more or fewer numbers shows at
once. Each seat's bot is reset with the seed ``GameRunner`` gives it (``runner.agent_seed``). The decisions are
GENERATED FROM THE BOTS: they pin the bots' behaviour, not its quality. When a change of a bot's decisions is
intended, rerun this script and review the diff of tests/golden/bots/ before committing:

    .venv/bin/python scripts/make_golden_bots.py
"""

from __future__ import annotations

import hashlib
import json
import sys
import tempfile
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

import revolution_env
from revolution_env.agents.loading import load_agent
from revolution_env.agents.search import PREFIX, is_search, searched_spec
from revolution_env.arena.runner import agent_seed
from revolution_env.engine.game import Decision

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))  # the tests' helpers (tests/boards.py): the boards of the recorded games
from boards import small_board, small_deck  # noqa: E402

GOLDEN_DIR = ROOT / "tests" / "golden" / "bots"
DIGITS = 6  # hex digits kept of each hash


def game(seats: tuple[str, ...], seed: int, board: dict | None = None, **options: Any) -> dict[str, Any]:
    """A game to record: its env options, its board's data (None: the standard board), its seats, its seed."""
    return {"options": {"players": len(seats), **options}, "board": board, "seats": list(seats), "seed": seed}


FIRST, REFUNDS, BONUS = "first_edition", "bid_refunds", "area_control_bonus"
# Every bot sits at 2, 3 and 4 players and in the first edition; every option is on and off; every decision kind
# comes (the summary printed shows how often).
GAMES: dict[str, dict[str, Any]] = {
    "2p_value_bargain": game(("value", "bargain"), 1),
    "2p_area_value_habit": game(("area", "value-habit"), 2),
    "2p_refunds": game(("value-mirror", "bargain-bold"), 3, **{REFUNDS: True}),
    "2p_first_edition_bonus": game(("bargain-cautious", "area-wide"), 4, **{FIRST: True, BONUS: True}),
    "2p_first_edition": game(("value", "area"), 5, **{FIRST: True}),
    "2p_refunds_bonus": game(("bargain", "value"), 6, **{REFUNDS: True, BONUS: True}),
    "2p_small_deck": game(("value", "bargain-bold"), 7, small_deck(), **{FIRST: True}),
    "3p_styles": game(("value", "bargain", "area"), 8),
    "3p_held_out": game(("value-mirror", "value-habit", "bargain-bold"), 9),
    "3p_first_edition": game(("bargain-cautious", "area-wide", "value"), 10, **{FIRST: True}),
    "3p_refunds": game(("area", "value-habit", "bargain"), 11, **{REFUNDS: True}),
    "3p_bonus": game(("value", "area-wide", "bargain-bold"), 12, **{BONUS: True}),
    "3p_first_edition_both": game(("value-mirror", "bargain", "area"), 13, **{FIRST: True, REFUNDS: True, BONUS: True}),
    "3p_small_board": game(("area", "value", "bargain-cautious"), 14, small_board()),
    "4p_styles": game(("value", "bargain", "area", "value-mirror"), 15),
    "4p_first_edition_refunds": game(
        ("value-habit", "bargain-bold", "bargain-cautious", "area-wide"), 16, **{FIRST: True, REFUNDS: True}
    ),
    "4p_bonus": game(("area", "value", "value-habit", "bargain"), 17, **{BONUS: True}),
    # play-time search (agents/search.py) judges its candidate bids with value's model of the rivals' bids
    "2p_search": game(("search:checkpoints/two_players.pt", "value"), 18),
    "3p_search": game(("search:checkpoints/three_players.pt", "bargain", "value-habit"), 19),
}


def digest(*parts: bytes) -> str:
    return hashlib.sha256(b"".join(parts)).hexdigest()[:DIGITS]


def action_text(action: np.ndarray) -> str:
    """The action's entries joined by ``.``, its trailing zeros left out (at least one entry)."""
    values = [int(x) for x in np.asarray(action).ravel()]
    while len(values) > 1 and values[-1] == 0:
        values.pop()
    return ".".join(map(str, values))


def _spec(name: str) -> str:
    """An agent spec of a seat, a search's checkpoint found from the repository's root wherever the caller runs."""
    return PREFIX + str(ROOT / searched_spec(name)) if is_search(name) else name


def _generators(bot: Any) -> list[np.random.Generator]:
    """A bot's random generators: its own, and a search's judge's."""
    judge = getattr(bot, "judge", None)
    return [bot.rng] + ([judge.rng] if judge is not None else [])


def decisions(game: dict[str, Any]) -> Iterator[tuple[str, Any, np.ndarray]]:
    """Play one recorded game (``options``, ``board``, ``seats``, ``seed``) to its end with its bots, yielding each
    decision's line (without its action), the bot that decided and its action; the caller may compare the action
    with a recorded one. The action played is the bot's own."""
    with tempfile.TemporaryDirectory() as folder:
        options = dict(game["options"])
        if game.get("board") is not None:
            path = Path(folder) / "board.json"
            path.write_text(json.dumps(game["board"]), encoding="utf-8")
            options["board"] = str(path)
        bots = [load_agent(_spec(name), **options) for name in game["seats"]]
        env = revolution_env.env(**options)
        env.reset(seed=game["seed"])
        for seat, bot in enumerate(bots):
            bot.reset(agent_seed(game["seed"], seat))
        for agent in env.agent_iter():
            observation, _, terminated, truncated, info = env.last()
            if terminated or truncated:
                env.step(None)
                continue
            seat = int(agent.split("_")[1])
            action = np.asarray(bots[seat].act(observation, info))
            seen = digest(observation["observation"].tobytes(), np.asarray(observation["action_mask"]).tobytes())
            draws = digest(*(repr(rng.bit_generator.state).encode() for rng in _generators(bots[seat])))
            yield f"{seat} {int(info['decision'])} {{}} {seen} {draws}", bots[seat], action
            env.step(action)
        if any(getattr(bot, "fallbacks", 0) for bot in bots):
            raise AssertionError(f"a bot fell back to a default action: {game['seats']}")


def record(game: dict[str, Any]) -> list[str]:
    return [line.format(action_text(action)) for line, _, action in decisions(game)]


def load(path: Path) -> dict[str, Any]:
    return json.loads(path.read_text(encoding="utf-8"))


def dumps(data: dict[str, Any]) -> str:
    """JSON with one decision per line, so that a change of a decision shows as a readable diff."""
    head = ",\n".join(f"  {json.dumps(k)}: {json.dumps(v)}" for k, v in data.items() if k != "decisions")
    lines = ",\n".join(f"    {json.dumps(line)}" for line in data["decisions"])
    return "{\n" + head + ',\n  "decisions": [\n' + lines + "\n  ]\n}\n"


def summary(data: dict[str, Any]) -> str:
    kinds = Counter(Decision(int(line.split()[1])).name.lower() for line in data["decisions"])
    return f"{len(data['decisions'])} decisions: " + ", ".join(f"{k} {n}" for k, n in sorted(kinds.items()))


def main() -> None:
    from revolution_env.agents import compiled
    from revolution_env.agents.heuristics import ValueBot

    if compiled.COMPILED:
        compiled.build(ValueBot(players=3))  # the compiled bots decide (the same decisions, sooner)
    GOLDEN_DIR.mkdir(parents=True, exist_ok=True)
    kinds: Counter = Counter()
    for name, data in GAMES.items():
        data = {**data, "decisions": record(data)}
        path = GOLDEN_DIR / f"{name}.json"
        path.write_text(dumps(data), encoding="utf-8")
        assert load(path) == data
        kinds.update(Decision(int(line.split()[1])).name.lower() for line in data["decisions"])
        print(f"{path.name}: {summary(data)}")
    print("all:", ", ".join(f"{k} {n}" for k, n in sorted(kinds.items())))


if __name__ == "__main__":
    main()
