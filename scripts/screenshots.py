"""Screenshots of `revolution serve` for the README: the replay viewer in the middle of a game, and a game in
progress with a bid half placed. Needs the web extras and Debian's chromium (see tests/test_web_browser.py).

    python scripts/screenshots.py            # writes docs/serve_viewer.png and docs/serve_play.png
"""

from __future__ import annotations

import argparse
import io
import socket
import sys
import tempfile
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]  # fmt: skip


def serve(replays: list[str]) -> tuple[str, object]:
    import uvicorn

    from revolution_env.frontends.web.app import create_app

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(create_app(replays), host="127.0.0.1", port=port, log_level="warning"))
    threading.Thread(target=server.run, daemon=True).start()
    while not server.started:
        time.sleep(0.05)
    return f"http://127.0.0.1:{port}/", server


def save_small(png: bytes, path: Path) -> None:
    """A 256-colour PNG: the page is flat colours, so it stays sharp at a fraction of the size."""
    from PIL import Image

    image = Image.open(io.BytesIO(png)).convert("RGB").quantize(colors=256, method=Image.Quantize.MEDIANCUT)
    image.save(path, optimize=True)
    print(f"{path.relative_to(REPO)}: {path.stat().st_size // 1024} KiB")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=str(REPO / "docs"), help="folder for the PNG files (default docs/)")
    parser.add_argument("--chromium", default="/usr/bin/chromium")
    args = parser.parse_args()
    from playwright.sync_api import sync_playwright

    out = Path(args.out)
    replays = Path(tempfile.mkdtemp()) / "heuristics_round_robin"  # the round robin of the README, 12 games
    from revolution_env.evaluation import evaluate_pool
    from revolution_env.evaluation.report import write_all

    write_all(evaluate_pool(["value", "bargain", "area", "random"], 3, 3, seed=4, progress=False), replays)
    url, server = serve([str(replays.parent)])
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=args.chromium, args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": 1280, "height": 820})
        page.goto(url + "#/replay?file=0/heuristics_round_robin/games.jsonl&game=0&round=6&step=9")
        page.wait_for_selector("#viewer-main:not([hidden])")
        page.wait_for_selector("tr.game")
        save_small(page.screenshot(), out / "serve_viewer.png")

        page.goto(url + "#/play")
        page.wait_for_selector("#setup:not([hidden])")
        page.fill("input[name=seed]", "11")
        page.select_option("#play-speed", "0")
        page.click("#start")
        page.wait_for_selector("body[data-play=ready]")
        for target in (7, 7, 4):  # two tokens on the Printer, one on the Priest
            page.locator(f"tr.target.droppable[data-target='{target}']").click()
        page.locator(".tray .tok").last.click()
        save_small(page.screenshot(), out / "serve_play.png")
        browser.close()
    server.should_exit = True
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
