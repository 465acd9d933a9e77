"""The bots shipped in checkpoints/ load with their cards and play legal moves in every decision of their variant."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import revolution_env
from training.checkpoint import history, read_checkpoint

CHECKPOINTS = Path(__file__).resolve().parent.parent / "checkpoints"
SHIPPED = {"three_players.pt": {"bid", "spy", "apothecary_first", "apothecary_second"},
           "two_players.pt": {"bid", "guy", "spy", "apothecary_first", "apothecary_second"}}  # fmt: skip


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
    for game in range(12):
        env = revolution_env.raw_env(**options)  # the raw env raises on any illegal action
        env.reset(seed=game)
        bot.reset(game)
        rand.reset(game)
        for agent in env.agent_iter():
            obs, _, term, trunc, info = env.last()
            if term or trunc:
                env.step(None)
                continue
            # random bidders bring about every decision; the bot answers all of them and bids for seat 0
            by_bot = info["decision"] != "bid" or agent == "player_0"
            if by_bot:
                seen.add(info["decision"])
            env.step((bot if by_bot else rand).act(obs, info))
    assert SHIPPED[name] <= seen, f"decisions never met: {SHIPPED[name] - seen}"


def test_a_shipped_bot_refuses_another_variant() -> None:
    with pytest.raises(ValueError, match="players"):
        revolution_env.load_agent(str(CHECKPOINTS / "three_players.pt"), players=4)
