"""`revolution serve` in a real browser: Playwright for Python driving the system's chromium (Debian's package;
Playwright's own browser download is not needed). Marked ``browser``; skipped, saying why, when Playwright, the
web extra or ``/usr/bin/chromium`` is missing. Run them alone with ``pytest -m browser``.

What is checked: the viewer lists the games and steps through one with the buttons and the keyboard, its link
reopens the same moment, a broken file shows an error; whole 2- and 3-player games are played by clicks against
``random`` bots, and the final support the page shows is the engine's, replaying the saved game."""

from __future__ import annotations

import json
import os
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

pytestmark = pytest.mark.browser

pytest.importorskip("starlette", reason="the web extra is not installed: pip install -e '.[web]'")
pytest.importorskip("uvicorn", reason="the web extra is not installed: pip install -e '.[web]'")
sync_api = pytest.importorskip(
    "playwright.sync_api", reason="Playwright is not installed: pip install -e '.[web-test]'"
)

CHROMIUM = os.environ.get("REVOLUTION_CHROMIUM", "/usr/bin/chromium")
if not os.path.exists(CHROMIUM):
    pytest.skip(f"no browser at {CHROMIUM}: apt-get install -y chromium", allow_module_level=True)

import uvicorn  # noqa: E402
from replay_files import write_evaluation  # noqa: E402

from revolution_env.engine import Rules, export_game, run_scenario  # noqa: E402
from revolution_env.engine.random_play import random_game  # noqa: E402
from revolution_env.frontends.web.app import create_app  # noqa: E402

CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
REPO = Path(__file__).resolve().parent.parent


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict]:
    root = tmp_path_factory.mktemp("replays")
    (root / "eval").mkdir()
    write_evaluation(root / "eval", 2)
    game = random_game(Rules(players=3), 3)
    (root / "a_game.json").write_text(json.dumps(export_game(game)))
    (root / "broken.json").write_text("{ not json")
    port = free_port()
    config = uvicorn.Config(create_app([str(root)]), host="127.0.0.1", port=port, log_level="warning")
    srv = uvicorn.Server(config)
    thread = threading.Thread(target=srv.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not srv.started:
        if time.monotonic() > deadline:
            pytest.fail("the server did not start")
        time.sleep(0.05)
    yield {"url": f"http://127.0.0.1:{port}/", "root": root, "game": game}
    srv.should_exit = True
    thread.join(10)


@pytest.fixture(scope="module")
def browser() -> Iterator:
    with sync_api.sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)  # present but broken: a failure
        yield b
        b.close()


@pytest.fixture
def page(browser, server):
    context = browser.new_context(viewport={"width": 1400, "height": 950})
    pg = context.new_page()
    errors: list[str] = []
    pg.on("pageerror", lambda exc: errors.append(str(exc)))
    pg.set_default_timeout(15_000)
    yield pg
    context.close()
    assert not errors, f"errors in the page: {errors}"


def shown_support(page, where: str = "#replay-table") -> list[int]:
    """The support the page shows on its track (the final support once the game is over)."""
    return [int(v.split()[0]) for v in page.locator(f"{where} .track .value").all_inner_texts()]


# --- the viewer ------------------------------------------------------------------------------------------------


def test_viewer_steps_through_a_replay_and_links_to_a_moment(page, server) -> None:
    page.goto(server["url"] + "#/replays")
    page.locator("li.file", has_text="a_game.json").click()
    page.wait_for_selector("#viewer-main:not([hidden])")
    assert page.inner_text("#step-text").startswith("Step 1/")
    page.click("#next")
    page.click("#next")
    assert page.inner_text("#step-text").startswith("Step 3/")
    assert "General" in page.inner_text("#step-text")  # the reveal, then the first character
    page.keyboard.press("ArrowLeft")
    assert page.inner_text("#step-text").startswith("Step 2/")
    page.keyboard.press("PageDown")
    assert page.input_value("#round") == "2"
    page.fill("#round", "4")
    page.dispatch_event("#round", "change")
    assert "round=4" in page.url
    page.keyboard.press("ArrowRight")
    link = page.url
    moment = page.inner_text("#step-text")
    page.keyboard.press("End")
    game = server["game"]
    assert shown_support(page) == game.final["support"]
    # the link opens the same moment in a new tab
    other = page.context.new_page()
    other.goto(link)
    other.wait_for_selector("#viewer-main:not([hidden])")
    assert other.inner_text("#step-text") == moment
    other.close()
    page.bring_to_front()  # chromium throttles the timers of a tab in the background, and play runs on a timer
    # play runs on by itself; space pauses
    page.keyboard.press("Home")
    page.select_option("#speed", "250")
    page.click("#play")
    page.wait_for_function("document.getElementById('step-text').textContent.startsWith('Step 3/')")
    page.keyboard.press(" ")
    assert page.inner_text("#play") == "play"


def test_viewer_replays_an_evaluation_game(page, server) -> None:
    page.goto(server["url"] + "#/replays")
    page.locator("li.file", has_text="games.jsonl").click()
    page.locator("tr.game").nth(1).click()
    page.wait_for_selector("#viewer-main:not([hidden])")
    record = json.loads((server["root"] / "eval" / "games.jsonl").read_text().splitlines()[1])
    page.keyboard.press("End")
    assert shown_support(page) == record["support"]
    assert page.locator("#replay-warnings").is_hidden()


def test_a_broken_file_shows_an_error_and_the_viewer_goes_on(page, server) -> None:
    page.goto(server["url"] + "#/replays")
    page.locator("li.file", has_text="broken.json").click()
    assert "not valid JSON" in page.inner_text("#viewer-error")
    page.goto(server["url"] + "#/replay?file=0/../secret.json&game=0")
    # only the hash changes: the error box of the broken file is still shown while the page asks again, so wait
    # for the new answer's text rather than for the box
    page.wait_for_function("document.getElementById('viewer-error').textContent.includes('refused')")
    assert page.locator("#viewer-error").is_visible()
    assert "refused" in page.inner_text("#viewer-error")
    page.locator("li.file", has_text="a_game.json").click()
    page.wait_for_selector("#viewer-main:not([hidden])")
    assert page.locator("#viewer-error").is_hidden()


# --- playing ---------------------------------------------------------------------------------------------------


def play_by_clicks(page, max_moves: int = 3000) -> dict:
    """Answer every decision by clicking: tokens onto the bid card (only where the page lets them go), the
    first offered choice otherwise. Returns counts of what was done."""
    done = {"bids": 0, "choices": 0, "blocked_clicks": 0, "cubes_clicked": 0, "kinds": set()}
    for _ in range(max_moves):
        page.wait_for_selector("body[data-play=ready], body[data-play=over]")
        if page.get_attribute("body", "data-play") == "over":
            return done
        turn = page.get_attribute("body", "data-turn")
        if page.locator("#submit-bid").count():
            # everything on one character in turn: those that place a cube (the board fills), the Spy, the Apothecary
            aim = str((0, 1, 2, 3, 4, 5, 6, 9, 10)[done["bids"] % 9])
            while page.locator(".tray .tok").count():
                blocked = page.locator("tr.target.blocked")
                if blocked.count() and done["bids"] % 3 == 0:  # clicking where the token may not go does nothing
                    left = page.locator(".tray .tok").count()
                    blocked.first.click()
                    assert page.locator(".tray .tok").count() == left
                    done["blocked_clicks"] += 1
                target = page.locator(f"tr.target.droppable[data-target='{aim}']")
                (target if target.count() else page.locator("tr.target.droppable").first).click()
            page.click("#submit-bid")
            done["bids"] += 1
        else:
            kind = page.evaluate("document.getElementById('prompt').textContent")
            cubes = page.locator("svg .cube.pickable")
            choices = page.locator("button.choice")
            if cubes.count() and done["choices"] % 2 == 0:
                cubes.first.click()  # a cube picked on the board
                done["cubes_clicked"] += 1
            else:
                (choices.first if choices.count() else page.locator("#decline")).click()
            done["choices"] += 1
            done["kinds"].add(kind.split(". ", 1)[1].split(":")[0])
        page.wait_for_selector(f"body:not([data-turn='{turn}']), #game-error:not([hidden])")
        assert page.locator("#game-error").is_hidden(), page.inner_text("#game-error")
    pytest.fail("the game did not end")


@pytest.mark.parametrize("players", [3, 2])
def test_a_whole_game_by_clicks_ends_as_the_engine_says(page, server, players: int) -> None:
    page.goto(server["url"] + "#/play")
    page.wait_for_selector("#setup:not([hidden])")
    page.select_option("select[name=players]", str(players))
    page.select_option("select[name=seat]", "1")
    for picker in page.locator("select.opponent").all():
        picker.select_option("random")
    page.fill("input[name=seed]", str(players))
    page.select_option("#play-speed", "0")
    page.click("#start")
    done = play_by_clicks(page)
    assert done["bids"] >= 3 and done["blocked_clicks"] >= 1
    assert done["cubes_clicked"] >= 1 and {"Spy", "Apothecary"} <= done["kinds"]  # seeded: these come up
    if players == 2:
        assert "Scheming" in done["kinds"]
    final = shown_support(page, "#play-table")
    view_id = page.evaluate("new URLSearchParams(location.hash.split('?')[1]).get('id')")
    exported = page.request.get(server["url"] + f"api/games/{view_id}/export").json()
    game = run_scenario(exported)
    assert final == game.final["support"]
    assert "You" in page.inner_text("#end-text")
    page.click("#save")
    page.wait_for_selector("#open-saved:not([hidden])")
    page.click("#open-saved")
    page.wait_for_selector("#viewer-main:not([hidden])")
    page.keyboard.press("End")
    assert shown_support(page) == game.final["support"]


def test_a_game_in_progress_shows_the_resolution_step_by_step(page, server) -> None:
    page.goto(server["url"] + "#/play")
    page.wait_for_selector("#setup:not([hidden])")
    for picker in page.locator("select.opponent").all():
        picker.select_option("random")
    page.select_option("#play-speed", "500")
    page.click("#start")
    page.wait_for_selector("body[data-play=ready]")
    assert page.locator("#submit-bid").is_disabled()
    while page.locator(".tray .tok").count():
        page.locator("tr.target.droppable").first.click()
    page.click("#submit-bid")
    page.wait_for_selector("body[data-play=busy]")
    page.wait_for_selector("tr.target.focus")  # a character being resolved is highlighted
    shown = page.inner_text("#prompt")
    page.wait_for_function(f"document.getElementById('prompt').textContent !== {json.dumps(shown)}")  # the next step
    page.click("#skip")  # then the rest at once
    page.wait_for_selector("body[data-play=ready]", timeout=5_000)
    assert page.locator("#log li.event").count() >= 13  # the reveal and every character


def test_two_tabs_play_two_games(page, server) -> None:
    def start(pg, players: str) -> str:
        pg.goto(server["url"] + "#/play")
        pg.wait_for_selector("#setup:not([hidden])")
        pg.select_option("select[name=players]", players)
        pg.select_option("#play-speed", "0")
        pg.click("#start")
        pg.wait_for_selector("body[data-play=ready]")
        return pg.evaluate("new URLSearchParams(location.hash.split('?')[1]).get('id')")

    other = page.context.new_page()
    first, second = start(page, "3"), start(other, "2")
    assert first != second
    while other.locator(".tray .tok").count():
        other.locator("tr.target.droppable").first.click()
    other.click("#submit-bid")
    other.wait_for_selector("#log li.event")
    assert page.locator("#log li.event").count() == 0  # the first game has not moved
    assert page.locator("tr.target").count() == 12 and other.locator("tr.target").count() == 13  # Scheming space
    page.reload()
    page.wait_for_selector("body[data-play=ready]")
    assert page.evaluate("new URLSearchParams(location.hash.split('?')[1]).get('id')") == first
