"""Rendering: ``rgb_array`` draws the board as a fixed-size picture that follows the state, ``ansi`` writes the
board and the last round's bids as text, ``human`` prints that text.

Games are played by masked random actions through the environment (every variant, mid-game and at the end);
single changes of state are made on copies of the engine's game.
"""

from __future__ import annotations

import gc
import warnings

import numpy as np
import pytest
from matplotlib.colors import to_rgb
from matplotlib.figure import Figure

import revolution_env
from revolution_env.engine import Game, Rules, random_bids
from revolution_env.engine.game import Decision
from revolution_env.engine.random_play import play_random
from revolution_env.env import picture
from revolution_env.env.text import layout_seat_names, tokens_text

VARIANTS = [(2, False), (3, False), (4, False), (2, True), (3, True), (4, True)]
SHAPE = (picture.HEIGHT, picture.WIDTH, 3)


def play(env, until_round: int | None = None) -> None:
    """Random legal actions until the game is over, or until round ``until_round`` starts."""
    while env.agents:
        if until_round is not None and env.unwrapped.game.round >= until_round:
            return
        obs, _, term, trunc, _ = env.last()
        action = None if term or trunc else env.action_space(env.agent_selection).sample(obs["action_mask"])
        env.step(action)


def colour_pixels(image: np.ndarray, colour: str, rect: tuple[float, float, float, float]) -> int:
    """How many pixels of ``rect`` (x, y, w, h) are exactly ``colour``."""
    x, y, w, h = (int(v) for v in rect)
    rgb = np.round(np.array(to_rgb(colour)) * 255).astype(np.uint8)
    return int((image[y : y + h, x : x + w] == rgb).all(-1).sum())


def after_first_round(players: int = 3, seed: int = 0, **rules) -> Game:
    """A game whose first round has been bid and resolved by random play."""
    game = Game.new(Rules(players=players, **rules), seed=seed)
    rng = np.random.default_rng(seed)
    while game.round == 1 and game.decision is not None:
        if game.decision.kind == Decision.BID:
            game.submit_bids(random_bids(game, rng))
        else:
            game.choose(None if game.can_decline() else _first_option(game))
    return game


def _first_option(game: Game) -> tuple[int, ...]:
    options = game.guy_targets() if game.decision.kind == Decision.GUY else game.cube_targets()
    return tuple(int(v) for v in np.argwhere(options)[0])


# --- rgb_array ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("players", "first_edition"), VARIANTS)
def test_rgb_array_is_a_fixed_size_picture_mid_game_and_at_the_end(players: int, first_edition: bool) -> None:
    env = revolution_env.env(players=players, first_edition=first_edition, render_mode="rgb_array")
    env.reset(seed=players)
    play(env, until_round=3)
    middle = env.render()
    play(env)
    assert env.unwrapped.game.over
    end = env.render()
    for frame in (middle, end):
        assert frame.dtype == np.uint8 and frame.shape == SHAPE
        packed = frame.astype(np.int32) @ np.array([1 << 16, 1 << 8, 1], dtype=np.int32)
        assert len(np.unique(packed)) > 50  # a drawing, not a blank frame
    assert not np.array_equal(middle, end)


def test_the_same_state_gives_the_same_picture_and_another_state_another() -> None:
    game = after_first_round(3)
    first = picture.draw(game)
    picture.draw(after_first_round(2, first_edition=True))  # another variant's frame in between
    assert np.array_equal(picture.draw(game), first)
    game.submit_bids(random_bids(game, np.random.default_rng(9)))  # the second round is revealed
    assert not np.array_equal(picture.draw(game), first)


def test_cubes_are_drawn_in_their_seats_colour_on_the_board() -> None:
    game = Game.new(Rules(players=4), seed=0)
    colours = picture.SEAT_COLOURS[:2]
    before = [colour_pixels(picture.draw(game), c, picture.BOARD) for c in colours]
    game.cubes[0, :2] = 3  # three cubes each of P0 and P1 in the Fortress: tied, so no border in either colour
    game.supply[:2] -= 3
    image = picture.draw(game)
    one_cube = (picture.SLOT - 4) ** 2  # the inside of a slot at least
    for colour, count in zip(colours, before):
        assert colour_pixels(image, colour, picture.BOARD) - count >= 3 * one_cube


def test_the_puppet_is_drawn_in_grey_as_guy() -> None:
    game = Game.new(Rules(players=2), seed=0)
    before = colour_pixels(picture.draw(game), picture.GUY_COLOUR, picture.BOARD)
    game.cubes[6] = 1  # one cube of each seat in the Tavern: tied
    after = colour_pixels(picture.draw(game), picture.GUY_COLOUR, picture.BOARD)
    assert after - before >= (picture.SLOT - 4) ** 2
    assert layout_seat_names(game.layout) == ["P0", "P1", "Guy"]


@pytest.mark.parametrize("bonus", [False, True])
def test_the_areas_each_seat_would_score_now_match_the_final_scoring(bonus: bool) -> None:
    for seed in range(4):
        game = Game.new(Rules(players=3 + seed % 2, area_control_bonus=bonus), seed=seed)
        play_random(game, np.random.default_rng(seed))
        assert picture.area_points(game) == game.final["area_points"]


def _figures_alive() -> int:
    gc.collect()
    with warnings.catch_warnings():  # isinstance on every live object reads torch's deprecated module attributes
        warnings.simplefilter("ignore", FutureWarning)
        return sum(isinstance(o, Figure) for o in gc.get_objects())


def test_rendering_leaves_no_figure_behind() -> None:
    game = after_first_round(3)
    picture.draw(game)
    alive = _figures_alive()
    for _ in range(5):
        picture.draw(game)
    assert _figures_alive() <= alive


# --- ansi and human ----------------------------------------------------------------------------------------


def test_ansi_shows_the_board_areas_and_the_last_rounds_bids() -> None:
    env = revolution_env.env(players=3, render_mode="ansi")
    env.reset(seed=4)
    play(env, until_round=2)
    text = env.render()
    game = env.unwrapped.game
    assert isinstance(text, str)
    for area in game.layout.components.area_names:
        assert area in text
    assert "Bids of round 1:" in text
    bid_lines = text.split("Bids of round 1:")[1]
    for c, name in enumerate(game.layout.target_names):
        if game.revealed[0, c].any():  # P0's bid on this character is written on its line
            line = next(row for row in bid_lines.splitlines() if row.strip().startswith(name))
            assert f"P0 {tokens_text(game.revealed[0, c])}" in line


def test_human_prints_the_text_view(capsys: pytest.CaptureFixture[str]) -> None:
    env = revolution_env.env(players=2, render_mode="human")
    env.reset(seed=1)
    capsys.readouterr()
    assert env.render() is None
    printed = capsys.readouterr().out
    assert "Fortress" in printed and "Guy" in printed
