"""D11 on boards where a character refuses Gold: a beat adds one token of the weakest legal type and drops the
weaker ones. (Every character of the standard board takes Gold, so these cases need a constructed board.)"""

from __future__ import annotations

import json

import numpy as np

from revolution_env.engine import Game, Rules, parse_components
from revolution_env.engine.components import BOARDS_DIR
from revolution_env.engine.game import BEAT, TIE, make_layout


def board_with_immunities(immune: list[str]):
    data = json.loads((BOARDS_DIR / "standard.json").read_text())
    data["characters"][7]["immune"] = immune  # the Printer
    return parse_components(data)


def guy_options_after(bid0: tuple[int, int, int], immune: list[str], guy=(2, 2, 3)) -> Game:
    """Seat 0 bids ``bid0`` on the Printer, seat 1 one Gold on the General; Guy holds ``guy``."""
    layout = make_layout(Rules(players=2), board_with_immunities(immune))
    game = Game(layout, seed=0)
    game.tokens[:] = [list(bid0), [0, 0, 1], list(guy)]
    game.bank[:] = layout.totals - game.tokens.sum(0)
    bids = np.zeros((2, layout.n_targets, 3), dtype=np.int64)
    bids[0, 7] = bid0
    bids[1, 0, 2] = 1
    game.submit_bids(bids)
    return game


def test_beat_without_gold_adds_blackmail_and_drops_gold() -> None:
    game = guy_options_after((0, 1, 0), immune=["gold"])
    assert game.guy_targets()[7, 0, TIE]
    assert game.guy_bid(7, 0, TIE).tolist() == [0, 1, 0]
    assert game.guy_bid(7, 0, BEAT).tolist() == [0, 2, 0]


def test_beat_with_force_only_adds_force_and_drops_the_rest() -> None:
    game = guy_options_after((1, 0, 0), immune=["gold", "blackmail"])
    assert game.guy_bid(7, 0, BEAT).tolist() == [2, 0, 0]
    assert game.guy_bid(7, 0, TIE).tolist() == [1, 0, 0]


def test_beat_that_guy_cannot_pay_is_not_offered() -> None:
    game = guy_options_after((1, 0, 0), immune=["gold", "blackmail"], guy=(1, 2, 3))
    assert game.guy_targets()[7, 0, TIE]
    assert not game.guy_targets()[7, 0, BEAT]
