"""The web application of ``revolution serve`` (Starlette): a JSON API and the page in ``static/``.

API (every error is JSON ``{"error": "one line"}`` with a 4xx status; the server keeps serving):

| method, path                         | what                                                            |
|--------------------------------------|-----------------------------------------------------------------|
| GET  /api/info                       | the opponents offered, the replay folders                        |
| GET  /api/replays                    | the files of games under the replay folders                      |
| GET  /api/replays/games?file=F       | a page of the games of file F (``offset``, ``limit``)            |
| GET  /api/replay?file=F&game=N       | game N of file F replayed: every round, every step, every state  |
| POST /api/games                      | a new game against bots (players, seat, opponents, rule options) |
| GET  /api/games/{id}?since=N         | what the person sees, and the events from number N on            |
| POST /api/games/{id}/act             | the person's move: ``{"action": [...]}``, the env's action        |
| GET  /api/games/{id}/export          | the finished game as a scenario (download)                        |
| POST /api/games/{id}/save            | keep the finished game as a replay                                |
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.middleware.gzip import GZipMiddleware
from starlette.requests import Request
from starlette.responses import FileResponse, JSONResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from revolution_env import __version__
from revolution_env.agents.loading import load_agent as default_load_agent
from revolution_env.frontends.web.replays import ReplayError, ReplayLibrary
from revolution_env.frontends.web.sessions import BUILT_IN, GameRequestError, Sessions

STATIC = Path(__file__).parent / "static"
SAVE_FOLDER = "saved-games"


def error(message: str, status: int = 400) -> JSONResponse:
    return JSONResponse({"error": message}, status_code=status)


def _int_param(request: Request, name: str, default: int | None = None) -> int:
    value = request.query_params.get(name)
    if value is None:
        if default is None:
            raise GameRequestError(f"{name}: required")
        return default
    try:
        return int(value)
    except ValueError:
        raise GameRequestError(f"{name}: expected an integer, got {value!r}") from None


async def _json_body(request: Request) -> Any:
    try:
        return json.loads(await request.body() or b"{}")
    except (json.JSONDecodeError, UnicodeDecodeError):
        raise GameRequestError("the request body is not valid JSON") from None


def create_app(
    replays: list[str] | None = None,
    agents: list[str] | None = None,
    load_agent: Any = None,
) -> Starlette:
    """The application. ``replays``: folders whose games the viewer lists (saved games go into the first one's
    ``saved-games/``); ``agents``: specs offered as opponents besides the built-in ones (checkpoints)."""
    load = load_agent or default_load_agent
    roots = list(replays or [])
    save_dir = Path(roots[0]).resolve() / SAVE_FOLDER if roots else None
    library = ReplayLibrary(roots, load_agent=load, save_dir=save_dir)
    offered = list(dict.fromkeys([*BUILT_IN, *(agents or [])]))
    sessions = Sessions(load, offered)

    def session_of(game_id: str):
        try:
            return sessions.get(game_id)
        except KeyError:
            raise HTTPException(404, f"no game {game_id!r} (it may have ended with the server)") from None

    async def index(request: Request) -> Response:
        return FileResponse(STATIC / "index.html", headers={"Cache-Control": "no-cache"})

    async def info(request: Request) -> Response:
        return JSONResponse(
            {"version": __version__, "opponents": offered, "replay_folders": [str(r) for r in library.roots]}
        )

    async def replay_files(request: Request) -> Response:
        return JSONResponse({"files": await run_in_threadpool(library.files)})

    async def replay_games(request: Request) -> Response:
        file_id = request.query_params.get("file", "")
        offset, limit = _int_param(request, "offset", 0), _int_param(request, "limit", 100)
        return JSONResponse(await run_in_threadpool(library.games, file_id, offset, min(limit, 1000)))

    async def replay(request: Request) -> Response:
        file_id = request.query_params.get("file", "")
        index = _int_param(request, "game", 0)
        return JSONResponse(await run_in_threadpool(library.replay, file_id, index))

    async def new_game(request: Request) -> Response:
        body = await _json_body(request)
        session = await run_in_threadpool(sessions.create, body)
        return JSONResponse(session.view(), status_code=201)

    async def game_view(request: Request) -> Response:
        session = session_of(request.path_params["game_id"])
        since = _int_param(request, "since", 0)
        with session.lock:
            return JSONResponse(session.view(max(0, since)))

    async def game_act(request: Request) -> Response:
        session = session_of(request.path_params["game_id"])
        body = await _json_body(request)
        if not isinstance(body, dict) or "action" not in body:
            raise GameRequestError('expected {"action": [...]} (the MultiDiscrete action as integers)')
        since = body.get("since", 0)
        since = since if isinstance(since, int) and not isinstance(since, bool) and since >= 0 else 0

        def act() -> dict[str, Any]:
            with session.lock:
                session.act(body["action"])
                return session.view(since)

        return JSONResponse(await run_in_threadpool(act))

    async def game_export(request: Request) -> Response:
        session = session_of(request.path_params["game_id"])
        with session.lock:
            data = session.export()
        name = f"revolution-{session.id}.json"
        return JSONResponse(data, headers={"Content-Disposition": f'attachment; filename="{name}"'})

    async def game_save(request: Request) -> Response:
        session = session_of(request.path_params["game_id"])
        with session.lock:
            data = session.export()
            if session.saved_as is None:
                name = time.strftime("%Y%m%d-%H%M%S") + f"-{session.id}"
                session.saved_as = library.save(data, name)
        return JSONResponse({"file": session.saved_as, "game": 0})

    async def on_replay_error(request: Request, exc: ReplayError) -> Response:
        return error(str(exc), exc.status)

    async def on_request_error(request: Request, exc: GameRequestError) -> Response:
        return error(str(exc), 400)

    async def on_http_error(request: Request, exc: HTTPException) -> Response:
        if request.url.path.startswith("/api/"):
            return error(str(exc.detail), exc.status_code)
        return Response(str(exc.detail), status_code=exc.status_code, media_type="text/plain")

    async def on_crash(request: Request, exc: Exception) -> Response:
        return error(f"internal error: {type(exc).__name__}: {exc}", 500)

    routes = [
        Route("/", index),
        Route("/api/info", info),
        Route("/api/replays", replay_files),
        Route("/api/replays/games", replay_games),
        Route("/api/replay", replay),
        Route("/api/games", new_game, methods=["POST"]),
        Route("/api/games/{game_id}", game_view),
        Route("/api/games/{game_id}/act", game_act, methods=["POST"]),
        Route("/api/games/{game_id}/export", game_export),
        Route("/api/games/{game_id}/save", game_save, methods=["POST"]),
        Mount("/static", StaticFiles(directory=STATIC), name="static"),
    ]
    app = Starlette(
        routes=routes,
        middleware=[Middleware(GZipMiddleware, minimum_size=2048)],
        exception_handlers={
            ReplayError: on_replay_error,
            GameRequestError: on_request_error,
            HTTPException: on_http_error,
            Exception: on_crash,
        },
    )
    app.state.library = library
    app.state.sessions = sessions
    return app
