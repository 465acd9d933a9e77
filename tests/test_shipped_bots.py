"""The bots shipped in checkpoints/ load with their cards and play legal moves in every decision of their variant."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from revolution_training.checkpoint import history, read_checkpoint

import revolution_env
from revolution_env.arena.runner import GameRunner
from revolution_env.engine.game import Decision

CHECKPOINTS = Path(__file__).resolve().parent.parent / "checkpoints"
SHIPPED = {"three_players.pt": {Decision.BID, Decision.SPY, Decision.APOTHECARY_FIRST, Decision.APOTHECARY_SECOND},
           "two_players.pt": {Decision.BID, Decision.GUY, Decision.SPY, Decision.APOTHECARY_FIRST, Decision.APOTHECARY_SECOND},
           "four_players.pt": {Decision.BID, Decision.SPY, Decision.APOTHECARY_FIRST, Decision.APOTHECARY_SECOND}}  # fmt: skip


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
