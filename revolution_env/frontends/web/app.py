"""The web application of ``revolution serve`` (Starlette): a JSON API and the page in ``static/``.

API (every error is JSON ``{"error": "one line"}`` with a 4xx status, or 503 when the server is full; the server
keeps serving):

| method, path                         | what                                                            |
|--------------------------------------|-----------------------------------------------------------------|
| GET  /api/info                       | the opponents offered, the replay folders, the server's limits   |
| GET  /api/replays                    | the files of games under the replay folders                      |
| GET  /api/replays/games?file=F       | a page of the games of file F (``offset``, ``limit``)            |
| GET  /api/replay?file=F&game=N       | game N of file F replayed: every round, every step, every state  |
| POST /api/games                      | a new game against bots (players, seat, opponents, rule options) |
| GET  /api/games/{id}?since=N         | what the person sees, and the events from number N on            |
| POST /api/games/{id}/act             | the person's move: ``{"action": [...], "since": N}``              |
| GET  /api/games/{id}/export          | the finished game as a scenario (download)                        |
| POST /api/games/{id}/save            | keep the finished game as a replay                                |

What the server promises (docs/reliability.md): a game stays while its player comes back within the idle timeout,
whatever the number of players; a game left alone longer ends (410 for it afterwards), a finished one saved first;
when every place is taken by a game being played, a new game is refused (503, ``Retry-After``). A request body
is at most ``MAX_BODY`` bytes (413 past it, refused by its ``Content-Length`` before it is read, or as soon as
more arrives), UTF-8 JSON when it is given (415 for another ``Content-Type``), and every value in it is checked:
a bad one is a 400 naming it. The games are played on the event loop's thread, one request after the other: they
are Python work that holds the interpreter's lock, so threads would only take turns at it, in no fair order
(replays, which can take seconds to play again, go to threads so that the games go on meanwhile).
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import json
import logging
import time
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import orjson
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.middleware.gzip import GZipMiddleware
from starlette.requests import Request
from starlette.responses import FileResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from revolution_env import __version__
from revolution_env.agents.heuristics import HEURISTICS
from revolution_env.agents.loading import load_agent as default_load_agent
from revolution_env.arena.runner import GameRunner
from revolution_env.frontends.web.replays import ReplayError, ReplayLibrary
from revolution_env.frontends.web.sessions import BUILT_IN, GameRequestError, PlaySession, ServerFull, Sessions

log = logging.getLogger(__name__)
STATIC = Path(__file__).parent / "static"
SAVE_FOLDER = "saved-games"
MAX_BODY = 16 * 1024  # the largest request the page sends (a new game's options) is a few hundred bytes
MAX_GAMES = 256
IDLE_TIMEOUT = 1800.0  # seconds
JSON_TYPE = "application/json"
MAX_ERROR = 240  # characters of an error message


class JSONResponse(Response):
    """JSON in UTF-8, written by orjson, which is faster than the standard library (docs/reliability.md)."""

    media_type = JSON_TYPE

    def render(self, content: Any) -> bytes:
        return orjson.dumps(content)


class BodyTooLarge(Exception):
    """A request body longer than ``MAX_BODY``: HTTP 413."""


class LimitBody:
    """Refuse request bodies longer than ``limit``: by their ``Content-Length`` before anything is read, and by
    counting what arrives for a body sent without one (chunked)."""

    def __init__(self, app: ASGIApp, limit: int) -> None:
        self.app, self.limit = app, limit

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        length = dict(scope["headers"]).get(b"content-length")
        if length is not None:
            if not length.isdigit() or len(length) > 18:
                await error(f"Content-Length: expected a number of bytes, got {length[:40]!r}", 400)(
                    scope, receive, send
                )
                return
            if int(length) > self.limit:
                await too_large(self.limit)(scope, receive, send)
                return
        received = 0

        async def limited() -> Message:
            nonlocal received
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > self.limit:
                    raise BodyTooLarge()
            return message

        await self.app(scope, limited, send)


def error(message: str, status: int = 400, headers: dict[str, str] | None = None) -> JSONResponse:
    """The one-line JSON error; a message that quotes a long value (a 4,000-digit number) is cut short."""
    line = " ".join(message.split())
    if len(line) > MAX_ERROR:
        line = line[: MAX_ERROR - 1] + "…"
    return JSONResponse({"error": line}, status_code=status, headers=headers)


def too_large(limit: int) -> JSONResponse:
    return error(f"the request body is larger than {limit} bytes", 413)


def _int_param(request: Request, name: str, default: int | None = None) -> int:
    """A non-negative integer from the query (ASCII digits only: ``²`` or ``٣`` are not numbers here)."""
    value = request.query_params.get(name)
    if value is None:
        if default is None:
            raise GameRequestError(f"{name}: required")
        return default
    if not (value.isascii() and value.isdigit()) or len(value) > 18:
        raise GameRequestError(f"{name}: expected a non-negative integer, got {value[:40]!r}")
    return int(value)


def _refuse_constant(name: str) -> Any:
    raise GameRequestError(f"the request body is not valid JSON ({name} is not a JSON number)")


def _no_repeated_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out = dict(pairs)
    if len(out) != len(pairs):
        seen = set()
        repeated = next(k for k, _ in pairs if k in seen or seen.add(k))
        raise GameRequestError(f"the request body gives {repeated[:40]!r} twice")
    return out


async def _json_body(request: Request) -> Any:
    """The request's JSON body (``{}`` when there is none), or a one-line :class:`GameRequestError`."""
    body = await request.body()
    if not body:
        return {}
    content_type = request.headers.get("content-type")
    if content_type is not None and content_type.split(";")[0].strip().lower() != JSON_TYPE:
        raise HTTPException(415, f"expected Content-Type: {JSON_TYPE}, got {content_type[:60]!r}")
    try:
        return json.loads(body.decode("utf-8"), parse_constant=_refuse_constant, object_pairs_hook=_no_repeated_keys)
    except GameRequestError:
        raise
    except UnicodeDecodeError:
        raise GameRequestError("the request body is not UTF-8 text") from None
    except json.JSONDecodeError as exc:
        raise GameRequestError(f"the request body is not valid JSON ({exc.msg}, column {exc.colno})") from None
    except ValueError:  # an integer longer than Python reads from a string (sys.get_int_max_str_digits)
        raise GameRequestError("the request body holds a number too long to read") from None
    except RecursionError:
        raise GameRequestError("the request body is nested too deeply") from None


def _since(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        shown = repr(value) if not isinstance(value, int) else "a negative integer"
        raise GameRequestError(f"since: expected a non-negative integer (events already seen), got {shown[:40]}")
    return value


def _duration(seconds: float) -> str:
    return f"{seconds / 60:g} minutes" if seconds >= 120 else f"{seconds:g} seconds"


def warm_up(load_agent: Callable[..., Any], offered: list[str]) -> None:
    """Play a one-round game between two of the heuristic bots offered, so that the machine code of the compiled
    bots is loaded before the first player's game needs it: loading it takes seconds, during which every request
    would wait (the games are played one request after the other). Where it is not compiled yet, this starts its
    background build, as the first game would."""
    styles = [spec for spec in offered if spec in HEURISTICS]
    if not styles:
        return
    options = {"players": 2, "max_rounds": 1}
    try:
        GameRunner([load_agent(styles[0], **options) for _ in range(2)], options).play(0)
    except Exception as exc:  # a bot that fails here fails in its games too, where the player is told
        log.warning("revolution serve: warming up the %s bot failed: %s", styles[0], exc)


def create_app(
    replays: list[str] | None = None,
    agents: list[str] | None = None,
    load_agent: Any = None,
    max_games: int = MAX_GAMES,
    idle_timeout: float = IDLE_TIMEOUT,
    clock: Callable[[], float] = time.monotonic,
    on_ready: Callable[[], None] | None = None,
) -> Starlette:
    """The application. ``replays``: folders whose games the viewer lists (saved games go into the first one's
    ``saved-games/``); ``agents``: specs offered as opponents besides the built-in ones (checkpoints);
    ``max_games``: games at once; ``idle_timeout``: the seconds after which a game left alone ends; ``on_ready``:
    called once the server has started (its bots warmed up), just before it listens."""
    load = load_agent or default_load_agent
    roots = list(replays or [])
    save_dir = Path(roots[0]).resolve() / SAVE_FOLDER if roots else None
    library = ReplayLibrary(roots, load_agent=load, save_dir=save_dir)
    offered = list(dict.fromkeys([*BUILT_IN, *(agents or [])]))

    def save(session: PlaySession) -> None:
        """Keep a finished game as a replay (the caller holds its lock)."""
        if session.saved_as is None:
            name = time.strftime("%Y%m%d-%H%M%S") + f"-{session.id}"
            session.saved_as = library.save(session.export(), name)

    sessions = Sessions(load, offered, max_games=max_games, idle_timeout=idle_timeout, save=save, clock=clock)

    def session_of(game_id: str) -> PlaySession:
        try:
            return sessions.get(game_id)
        except KeyError:
            pass
        ended, saved_as = sessions.ended(game_id)
        shown = repr(game_id[:40])
        if saved_as is not None:
            raise HTTPException(410, f"game {shown} has ended; it was saved as {saved_as}")
        if ended:
            raise HTTPException(
                410, f"game {shown} has ended: it was left alone for more than {_duration(idle_timeout)}"
            )
        raise HTTPException(404, f"no game {shown} (it may have ended with the server)")

    async def index(request: Request) -> Response:
        return FileResponse(STATIC / "index.html", headers={"Cache-Control": "no-cache"})

    async def info(request: Request) -> Response:
        return JSONResponse(
            {
                "version": __version__,
                "opponents": offered,
                "replay_folders": [str(r) for r in library.roots],
                "games": len(sessions),
                "max_games": sessions.max_games,
                "idle_timeout": sessions.idle_timeout,
            }
        )

    async def replay_files(request: Request) -> Response:
        return JSONResponse({"files": await run_in_threadpool(library.files)})

    async def replay_games(request: Request) -> Response:
        file_id = request.query_params.get("file", "")
        offset, limit = _int_param(request, "offset", 0), _int_param(request, "limit", 100)
        if limit < 1:
            raise GameRequestError("limit: expected at least 1")
        return JSONResponse(await run_in_threadpool(library.games, file_id, offset, min(limit, 1000)))

    async def replay(request: Request) -> Response:
        file_id = request.query_params.get("file", "")
        index = _int_param(request, "game", 0)
        return JSONResponse(await run_in_threadpool(library.replay, file_id, index))

    async def new_game(request: Request) -> Response:
        body = await _json_body(request)
        session = sessions.create(body)
        with session.lock:
            return JSONResponse(session.view(), status_code=201)

    async def game_view(request: Request) -> Response:
        session = session_of(request.path_params["game_id"])
        since = _int_param(request, "since", 0)
        with session.lock:
            return JSONResponse(session.view(since))

    async def game_act(request: Request) -> Response:
        session = session_of(request.path_params["game_id"])
        body = await _json_body(request)
        if not isinstance(body, dict) or "action" not in body:
            raise GameRequestError('expected {"action": [...]} (the MultiDiscrete action as integers)')
        unknown = [k for k in body if k not in ("action", "since")]
        if unknown:
            raise GameRequestError(f"{unknown[0][:40]!r}: unknown field (expected action and since)")
        since = _since(body.get("since", 0))
        with session.lock:
            session.act(body["action"])
            return JSONResponse(session.view(since))

    async def game_export(request: Request) -> Response:
        session = session_of(request.path_params["game_id"])
        with session.lock:
            data = session.export()
        name = f"revolution-{session.id}.json"
        return JSONResponse(data, headers={"Content-Disposition": f'attachment; filename="{name}"'})

    async def game_save(request: Request) -> Response:
        session = session_of(request.path_params["game_id"])
        if await request.body():
            raise GameRequestError("save takes no request body")
        with session.lock:
            save(session)
        return JSONResponse({"file": session.saved_as, "game": 0})

    async def on_replay_error(request: Request, exc: ReplayError) -> Response:
        return error(str(exc), exc.status)

    async def on_request_error(request: Request, exc: GameRequestError) -> Response:
        return error(str(exc), 400)

    async def on_full(request: Request, exc: ServerFull) -> Response:
        return error(str(exc), 503, headers={"Retry-After": "30"})

    async def on_too_large(request: Request, exc: BodyTooLarge) -> Response:
        return too_large(MAX_BODY)

    async def on_http_error(request: Request, exc: HTTPException) -> Response:
        if request.url.path.startswith("/api/"):
            return error(str(exc.detail), exc.status_code, headers=exc.headers)
        return Response(str(exc.detail), status_code=exc.status_code, media_type="text/plain", headers=exc.headers)

    async def on_crash(request: Request, exc: Exception) -> Response:
        return error(f"internal error: {type(exc).__name__}: {exc}", 500)

    async def expire_idle_games() -> None:
        """End the games left alone too long, now and then, so that finished ones are saved without waiting for
        the next new game."""
        while True:
            await asyncio.sleep(min(60.0, idle_timeout / 4))
            try:
                sessions.expire()
            except Exception as exc:  # the next round tries again; a game that cannot be saved is kept
                log.warning("revolution serve: ending idle games failed: %s: %s", type(exc).__name__, exc)

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        # what the imports made lives as long as the server: out of the collector's sight, its full collections
        # (whose pauses every waiting request sits through) walk only the games' objects
        warm_up(load, offered)
        gc.freeze()
        if on_ready is not None:
            on_ready()
        task = asyncio.create_task(expire_idle_games())
        try:
            yield
        finally:
            task.cancel()
            sessions.close()  # finished games saved before the server goes

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
        middleware=[Middleware(LimitBody, limit=MAX_BODY), Middleware(GZipMiddleware, minimum_size=2048)],
        exception_handlers={
            ReplayError: on_replay_error,
            GameRequestError: on_request_error,
            ServerFull: on_full,
            BodyTooLarge: on_too_large,
            HTTPException: on_http_error,
            Exception: on_crash,
        },
        lifespan=lifespan,
    )
    app.state.library = library
    app.state.sessions = sessions
    return app
