"""``revolution serve``: a replay viewer and games against the bots in a browser.

``app`` is the Starlette application (JSON API), ``static/`` the page (plain HTML, CSS and ES modules, no build
step), ``trace`` a game that records each step for people to watch, ``replays`` the games found under the replay
folders, ``sessions`` the games being played. Starlette and uvicorn come with the ``web`` extra
(``pip install -e '.[web]'``); only ``cli`` is imported without them.
"""

from revolution_env.frontends.web.cli import add_parser

__all__ = ["add_parser"]
