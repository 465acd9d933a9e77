"""Many players at once against `revolution serve`: whole games through the HTTP API, then one line of figures.

    python scripts/serve_load.py                                   # 80 players, 2 games each, random bots
    python scripts/serve_load.py --players 80 --games 2 --opponents value
    python scripts/serve_load.py --url http://127.0.0.1:8000 --pid 1234   # a server started elsewhere

Unless ``--url`` is given, the script starts ``revolution serve`` on a free port of the loopback (a process of its
own, with ``--serve-args`` added to its command line) and stops it at the end. Each player has one keep-alive
connection (asking for gzip, as a browser does) and plays ``--games`` games one after the other, as the page does:
``POST /api/games`` (3 players unless ``--table`` says otherwise, the other seats ``--opponents``), then a uniformly
random legal move from what the page is given (``pending``) with ``POST .../act`` until the game is over, asking
only for the events it has not seen (``since``), then ``POST .../save``. ``--think`` waits a random time of that
mean before each move (0, the default: as fast as the server answers, the hardest case). The players are
coroutines on one thread with a minimal HTTP/1.1 client, so that the client takes as little of the machine as it
can: on a machine of two cores, it shares them with the server.

The line printed: the players and games, how many games finished and how many were lost (a game whose request
failed or that was not over when ``--seconds`` ran out), the act latency (from sending the move to the last byte
of the answer) p50/p95/p99/max in ms, the responses by status, the server's RSS at the end and its peak (VmHWM),
the wall time, and the CPU time per move of the server and of this client. It exits 1 when a game was lost or a
response was a 5xx.
"""

from __future__ import annotations

import argparse
import asyncio
import gzip
import json
import os
import random
import socket
import subprocess
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

try:  # the client's own work is part of what the machine carries: the faster parser where it is installed
    from orjson import loads
except ImportError:
    from json import loads

REPO = Path(__file__).resolve().parent.parent


@dataclass
class Tally:
    """What the players saw."""

    act_ms: list[float] = field(default_factory=list)
    statuses: Counter = field(default_factory=Counter)
    finished: int = 0
    errors: list[str] = field(default_factory=list)


class Connection:
    """One player's keep-alive HTTP/1.1 connection; ``request`` returns (status, JSON body or None)."""

    def __init__(self, host: str, port: int, timeout: float) -> None:
        self.host, self.port, self.timeout = host, port, timeout
        self.reader: asyncio.StreamReader | None = None
        self.writer: asyncio.StreamWriter | None = None

    async def request(self, method: str, path: str, body: object = None) -> tuple[int, Any]:
        data = b"" if body is None else json.dumps(body).encode()
        head = (
            f"{method} {path} HTTP/1.1\r\nHost: {self.host}\r\nAccept-Encoding: gzip\r\nContent-Length: {len(data)}\r\n"
        )
        if body is not None:
            head += "Content-Type: application/json\r\n"
        message = head.encode() + b"\r\n" + data
        for attempt in (0, 1):  # a kept-alive connection that the server closed while idle is opened again, once
            reused = self.writer is not None
            if self.writer is None:
                self.reader, self.writer = await asyncio.wait_for(
                    asyncio.open_connection(self.host, self.port), self.timeout
                )
            try:
                self.writer.write(message)
                status, headers, raw = await asyncio.wait_for(self._response(), self.timeout)
                break
            except (asyncio.IncompleteReadError, ConnectionError) as exc:
                self.close()
                nothing = not isinstance(exc, asyncio.IncompleteReadError) or not exc.partial
                if attempt or not (reused and nothing):
                    raise
            except BaseException:
                self.close()
                raise
        if headers.get("connection") == "close":
            self.close()
        if headers.get("content-encoding") == "gzip":
            raw = gzip.decompress(raw)
        try:
            return status, loads(raw)
        except ValueError:
            return status, None

    async def _response(self) -> tuple[int, dict[str, str], bytes]:
        lines = (await self.reader.readuntil(b"\r\n\r\n")).decode("latin-1").split("\r\n")
        status = int(lines[0].split()[1])
        headers = {k.strip().lower(): v.strip() for k, _, v in (line.partition(":") for line in lines[1:] if line)}
        if "content-length" in headers:
            return status, headers, await self.reader.readexactly(int(headers["content-length"]))
        if headers.get("transfer-encoding") == "chunked":
            chunks = []
            while size := int((await self.reader.readuntil(b"\r\n")).split(b";")[0], 16):
                chunks.append(await self.reader.readexactly(size))
                await self.reader.readexactly(2)
            await self.reader.readuntil(b"\r\n")
            return status, headers, b"".join(chunks)
        headers["connection"] = "close"
        return status, headers, await self.reader.read()

    def close(self) -> None:
        if self.writer is not None:
            self.writer.close()
        self.reader = self.writer = None


def random_move(pending: dict, rng: random.Random) -> list[int]:
    """A uniformly random legal move from what the page is given (each token's allowed targets, or the choices)."""
    action = [0] * pending["size"]
    if pending["decision"] == "bid":
        for token in pending["tokens"]:
            action[token["dim"]] = rng.choice(token["allowed"])
    else:
        values = [c["value"] for c in pending["choices"]] + ([0] if pending["can_decline"] else [])
        action[0] = rng.choice(values)
    return action


async def play(conn: Connection, request: dict, rng: random.Random, tally: Tally, deadline: float, think: float):
    """One whole game; True when it finished (and was saved), False when it was lost."""
    status, view = await conn.request("POST", "/api/games", request)
    tally.statuses[status] += 1
    if status != 201:
        tally.errors.append(f"new game: {status} {view}")
        return False
    game = view["id"]
    while not view["over"]:
        if time.monotonic() > deadline:
            tally.errors.append(f"game {game}: not over when the time ran out")
            return False
        if think:
            await asyncio.sleep(think * rng.random() * 2)
        move = {"action": random_move(view["pending"], rng), "since": view["event_count"]}
        start = time.perf_counter()
        status, answer = await conn.request("POST", f"/api/games/{game}/act", move)
        tally.act_ms.append((time.perf_counter() - start) * 1000)
        tally.statuses[status] += 1
        if status != 200:
            tally.errors.append(f"act in game {game}: {status} {answer}")
            return False
        view = answer
    status, saved = await conn.request("POST", f"/api/games/{game}/save")
    tally.statuses[status] += 1
    if status != 200:
        tally.errors.append(f"save of game {game}: {status} {saved}")
        return False
    return True


async def player(url: str, index: int, args: argparse.Namespace, tally: Tally, deadline: float) -> None:
    parts = urlsplit(url)
    conn = Connection(parts.hostname, parts.port or 80, timeout=args.timeout)
    rng = random.Random(args.seed * 100_003 + index)
    try:
        for g in range(args.games):
            request = {
                "players": args.table,
                "opponents": [args.opponents],
                "seed": args.seed * 100_003 + index * 997 + g,
            }
            try:
                finished = await play(conn, request, rng, tally, deadline, args.think)
                tally.finished += finished
            except (OSError, asyncio.IncompleteReadError, asyncio.TimeoutError) as exc:
                tally.errors.append(f"player {index}: {type(exc).__name__}: {exc}")
    finally:
        conn.close()


def request(url: str, method: str, path: str, body: object = None, timeout: float = 30) -> tuple[int, Any]:
    """One request on a connection of its own (for a start-up check or a test)."""
    parts = urlsplit(url)

    async def once() -> tuple[int, Any]:
        conn = Connection(parts.hostname, parts.port or 80, timeout)
        try:
            return await conn.request(method, path, body)
        finally:
            conn.close()

    return asyncio.run(once())


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_server(serve_args: list[str], timeout: float = 90) -> tuple[str, subprocess.Popen]:
    """``revolution serve`` on a free loopback port, once it answers (its output goes to a temporary file, which
    no pipe left unread can block)."""
    port = free_port()
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    command = [sys.executable, "-m", "revolution_env", "serve", "--port", str(port), *serve_args]
    log = tempfile.TemporaryFile("w+")  # noqa: SIM115 - it lives as long as the server
    proc = subprocess.Popen(command, env=env, stdout=log, stderr=subprocess.STDOUT, text=True)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + timeout
    while True:
        try:
            if request(url, "GET", "/api/info", timeout=5)[0] == 200:
                return url, proc
        except (OSError, asyncio.IncompleteReadError, asyncio.TimeoutError):
            pass
        if proc.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            proc.wait()
            log.seek(0)
            raise RuntimeError(f"revolution serve did not start: {log.read()[-2000:]}")
        time.sleep(0.1)


def memory_mb(pid: int) -> tuple[float, float]:
    """The process's resident memory now and its peak (VmRSS, VmHWM), in MB; NaN where /proc cannot say."""
    try:
        fields = dict(line.split(":", 1) for line in Path(f"/proc/{pid}/status").read_text().splitlines())
        return tuple(int(fields[k].split()[0]) / 1024 for k in ("VmRSS", "VmHWM"))
    except (OSError, KeyError, ValueError):
        return float("nan"), float("nan")


def cpu_seconds(pid: int) -> float:
    """The process's CPU time so far (user and system, its threads included), NaN where /proc cannot say."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, IndexError, ValueError):
        return float("nan")


def percentile(sorted_values: list[float], q: float) -> float:
    if not sorted_values:
        return float("nan")
    return sorted_values[min(len(sorted_values) - 1, int(q / 100 * len(sorted_values)))]


def run(args: argparse.Namespace, url: str, pid: int | None) -> dict:
    """Play the games; return the figures."""
    tally = Tally()
    server_cpu = cpu_seconds(pid) if pid is not None else float("nan")
    client_cpu = time.process_time()
    began = time.monotonic()
    deadline = began + args.seconds

    async def everyone() -> None:
        await asyncio.gather(*(player(url, i, args, tally, deadline) for i in range(args.players)))

    asyncio.run(everyone())
    wall = time.monotonic() - began
    server_cpu = (cpu_seconds(pid) if pid is not None else float("nan")) - server_cpu
    client_cpu = time.process_time() - client_cpu
    ms = sorted(tally.act_ms)
    games = args.players * args.games
    rss, peak = memory_mb(pid) if pid is not None else (float("nan"), float("nan"))
    return {
        "players": args.players,
        "games": games,
        "opponents": args.opponents,
        "finished": tally.finished,
        "lost": games - tally.finished,
        "acts": len(ms),
        "p50": percentile(ms, 50),
        "p95": percentile(ms, 95),
        "p99": percentile(ms, 99),
        "max": ms[-1] if ms else float("nan"),
        "statuses": dict(sorted(tally.statuses.items())),
        "rss_mb": rss,
        "peak_rss_mb": peak,
        "wall_s": wall,
        "server_cpu_ms_per_act": server_cpu / max(1, len(ms)) * 1000,
        "client_cpu_ms_per_act": client_cpu / max(1, len(ms)) * 1000,
        "errors": list(tally.errors),
    }


def line(figures: dict) -> str:
    statuses = " ".join(f"{k}:{v}" for k, v in figures["statuses"].items())
    return (
        f"players={figures['players']} games={figures['games']} opponents={figures['opponents']}"
        f" finished={figures['finished']} lost={figures['lost']} acts={figures['acts']}"
        f" act_ms p50={figures['p50']:.0f} p95={figures['p95']:.0f} p99={figures['p99']:.0f} max={figures['max']:.0f}"
        f" statuses={statuses} rss_mb={figures['rss_mb']:.0f} peak_rss_mb={figures['peak_rss_mb']:.0f}"
        f" wall_s={figures['wall_s']:.1f} cpu_ms_per_act server={figures['server_cpu_ms_per_act']:.1f}"
        f" client={figures['client_cpu_ms_per_act']:.1f}"
    )


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--players", type=int, default=80, help="players at once (default 80)")
    parser.add_argument("--games", type=int, default=2, help="games each player plays one after the other")
    parser.add_argument("--opponents", default="random", help="the bots' spec (default random)")
    parser.add_argument("--table", type=int, default=3, help="players at each table, the person included")
    parser.add_argument("--think", type=float, default=0.0, help="mean seconds a player waits before each move")
    parser.add_argument("--seconds", type=float, default=900, help="a game not over by then is counted lost")
    parser.add_argument("--timeout", type=float, default=60, help="seconds a request may take before it fails")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--url", help="a server already running (default: start one on the loopback)")
    parser.add_argument("--pid", type=int, help="that server's process id, for its memory and CPU time")
    parser.add_argument("--serve-args", default="", help="more arguments for the revolution serve it starts")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    proc = None
    if args.url:
        url, pid = args.url.rstrip("/"), args.pid
    else:
        url, proc = start_server(args.serve_args.split())
        pid = proc.pid
    try:
        figures = run(args, url, pid)
    finally:
        if proc is not None:
            proc.terminate()
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                proc.kill()
    for message in figures["errors"][:5]:
        print(f"  {message[:300]}", file=sys.stderr)
    print(line(figures), flush=True)
    bad = figures["lost"] or any(s >= 500 for s in figures["statuses"])
    return 1 if bad else 0


if __name__ == "__main__":
    raise SystemExit(main())
