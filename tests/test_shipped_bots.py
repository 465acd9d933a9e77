"""The bots shipped in checkpoints/ load with their cards and play legal moves in every decision of their variant."""

from __future__ import annotations

import functools
import hashlib
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from revolution_training.checkpoint import history, read_checkpoint

import revolution_env
from revolution_env.arena.runner import GameRunner
from revolution_env.engine.game import Decision

CHECKPOINTS = Path(__file__).resolve().parent.parent / "checkpoints"
SHIPPED = {
    "three_players.pt": {Decision.BID, Decision.SPY, Decision.APOTHECARY_FIRST, Decision.APOTHECARY_SECOND},
    "two_players.pt": {Decision.BID, Decision.GUY, Decision.SPY, Decision.APOTHECARY_FIRST, Decision.APOTHECARY_SECOND},
    "four_players.pt": {Decision.BID, Decision.SPY, Decision.APOTHECARY_FIRST, Decision.APOTHECARY_SECOND},
}


@pytest.mark.parametrize("name", sorted(SHIPPED))
def test_shipped_bot_plays_every_decision_legally(name: str) -> None:
    path = CHECKPOINTS / name
    assert path.exists(), f"{path} is not shipped"
    card = json.loads(path.with_suffix(".json").read_text())
    options = {k: v for k, v in read_checkpoint(path)["env_options"].items() if k != "reward"}
    stages = history(read_checkpoint(path))  # the card adds up every stage of training behind the checkpoint
    assert card["steps"] == sum(s["step"] for s in stages) and len(card.get("stages", [None])) == len(stages)
    bot = revolution_env.load_agent(str(path), **options)
    rand = revolution_env.load_agent("random", **options)
    seen: set[str] = set()

    class Seat:
        """Random bidders bring about every decision; the bot answers all of them and bids for seat 0."""

        def __init__(self, seat: int) -> None:
            self.seat, self.name = seat, f"seat {seat}"

        def reset(self, seed=None) -> None:
            bot.reset(seed) if self.seat == 0 else rand.reset(seed)

        def act(self, obs, info):
            by_bot = info["decision"] != Decision.BID or self.seat == 0
            if by_bot:
                seen.add(info["decision"])
            return (bot if by_bot else rand).act(obs, info)

    runner = GameRunner([Seat(i) for i in range(options["players"])], options)  # raises on any illegal action
    for game in range(12):
        runner.play(seed=game)
    assert SHIPPED[name] <= seen, f"decisions never met: {SHIPPED[name] - seen}"


def test_a_shipped_bot_refuses_another_variant() -> None:
    with pytest.raises(ValueError, match="players"):
        revolution_env.load_agent(str(CHECKPOINTS / "three_players.pt"), players=4)


@pytest.mark.parametrize("name", sorted(SHIPPED))
def test_a_shipped_bots_card_is_up_to_date_with_its_results(name: str, tmp_path: Path) -> None:
    # `make_card.py --refresh` rebuilds a card from the results folders and runs its JSON names: the shipped card
    # must be what it writes, so that a rerun evaluation (or a checkpoint swapped under its card) shows here.
    root = CHECKPOINTS.parent
    for suffix in (".pt", ".json"):
        shutil.copy(CHECKPOINTS / Path(name).with_suffix(suffix), tmp_path / Path(name).with_suffix(suffix))
    proc = subprocess.run(
        [sys.executable, "scripts/make_card.py", str(tmp_path / name), "--refresh"],
        cwd=root, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    shipped, rebuilt = (CHECKPOINTS / name).with_suffix(".md"), (tmp_path / name).with_suffix(".md")
    assert rebuilt.read_text() == shipped.read_text(), f"{shipped} is stale: rerun make_card.py {shipped} --refresh"
    assert json.loads(rebuilt.with_suffix(".json").read_text()) == json.loads(shipped.with_suffix(".json").read_text())


@pytest.mark.parametrize("name", sorted(SHIPPED))
def test_a_shipped_bots_card_opens_with_its_figures(name: str) -> None:
    """Every figure of the card's opening table is measured, each with its command, and the card shows it first."""
    path = CHECKPOINTS / name
    figures = json.loads(path.with_suffix(".json").read_text())["figures"]
    assert set(figures) == {"exploitability", "mirror", "held_out", "tie_rate", "ms_per_decision", "one_round_gap"}
    missing = [key for key, figure in figures.items() if not figure]
    assert not missing, f"{name}: not measured: {missing}"
    exploit = figures["exploitability"]
    assert set(exploit["sources"]) == {"copy", "common", "known"} and exploit["source"] in exploit["sources"]
    assert exploit["win_rate"] == max(s["win_rate"] for s in exploit["sources"].values() if s and "win_rate" in s)
    assert all(figures[key]["command"] for key in ("exploitability", "tie_rate", "ms_per_decision", "one_round_gap"))
    bot = Path(name).stem
    assert all(re.sub(r"#\d+$", "", o) != f"checkpoints/{bot}" for o in figures["held_out"]["opponents"])
    worst = figures["mirror"]["worst"]
    assert any(re.sub(r"#\d+$", "", o) == f"checkpoints/{bot}" for o in worst["opponents"])
    assert worst["win_rate"] == min(t["win_rate"] for t in figures["mirror"]["tables"])
    card = path.with_suffix(".md").read_text().splitlines()
    assert card[2].startswith("| figure | measured |") and card[4].startswith("| exploitability (a lower bound) |")


@functools.cache
def fixed_states(players: int, games: int = 2) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Every decision of every seat in ``games`` seeded games of ``value`` and ``random`` seats: (observations,
    masks, decisions)."""
    options = {"players": players}
    seats = [revolution_env.load_agent("value" if i % 2 == 0 else "random", **options) for i in range(players)]
    rows: list[tuple] = []

    def record(env, name, observation, info, action) -> None:
        rows.append((observation["observation"], observation["action_mask"], int(info["decision"])))

    runner = GameRunner(seats, options)
    for seed in range(games):
        runner.play(seed=seed, on_step=record)
    return tuple(np.stack([r[i] for r in rows]) for i in range(3))  # type: ignore[return-value]


def decisions_digest(path: Path) -> str:
    """sha256 of a checkpoint's argmax actions and of its sampled actions (seeded) on :func:`fixed_states`."""
    options = {k: v for k, v in read_checkpoint(path)["env_options"].items() if k != "reward"}
    obs, masks, kinds = fixed_states(options["players"])
    digest = hashlib.sha256()
    for spec in (str(path) + ":argmax", str(path) + ":sample"):
        agent = revolution_env.load_agent(spec, **options)
        agent.reset(seed=1)
        digest.update(agent.act_batch(obs, masks, kinds).astype(np.int64).tobytes())
        agent.reset(seed=2)
        one_by_one = [agent.act({"observation": o, "action_mask": m}, {"decision": Decision(int(k))})
                      for o, m, k in zip(obs[:40], masks[:40], kinds[:40])]  # fmt: skip
        digest.update(np.stack(one_by_one).astype(np.int64).tobytes())
    return digest.hexdigest()


# The shipped checkpoints' decisions on fixed states, argmax and sampled, as the code played them when the format
# learned to carry a critic: a change in how a checkpoint is read or played shows here.
DECISIONS = {
    "four_players.pt": "986a875d489d8d3e10db09733a03b081206cd1a77d0c2051380f436fe7e0fb7b",
    "heldout/previous_four_players.pt": "986a875d489d8d3e10db09733a03b081206cd1a77d0c2051380f436fe7e0fb7b",
    "heldout/previous_three_players.pt": "a912db91e19baa0acf69abd1dee945187e66fdc192471183674b3909a8fa25d4",
    "heldout/previous_two_players.pt": "3f96eff7e63fcb03ad6b5b3f54d500b26d5ebc0111f8e47465b1252804517e03",
    "three_players.pt": "a912db91e19baa0acf69abd1dee945187e66fdc192471183674b3909a8fa25d4",
    "two_players.pt": "ced29afcf1525978b9b3b8abbcf056e66aece2ea46c92d6cdc917249e3c05fa3",
}


@pytest.mark.parametrize("path", sorted([*CHECKPOINTS.glob("*.pt"), *CHECKPOINTS.glob("heldout/*.pt")]), ids=str)
def test_shipped_checkpoints_decide_as_they_always_did(path: Path) -> None:
    name = str(path.relative_to(CHECKPOINTS))
    assert decisions_digest(path) == DECISIONS[name]
