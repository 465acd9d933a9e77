"""Many players at once against `revolution serve`: whole games through the HTTP API, then one line of figures.

    python scripts/serve_load.py                                   # 80 players, 2 games each, random bots
    python scripts/serve_load.py --players 80 --games 3 --opponents value
    python scripts/serve_load.py --url http://127.0.0.1:8000 --pid 1234   # a server started elsewhere

Unless ``--url`` is given, the script starts ``revolution serve`` on a free port of the loopback (a process of its
own, with ``--serve-args`` added to its command line) and stops it at the end. Each player is a thread with one
keep-alive connection (asking for gzip, as a browser does) that plays ``--games`` games one after the other, as the page does: ``POST /api/games``
(3 players unless ``--table`` says otherwise, its seat's opponents ``--opponents``), then a uniformly random legal
move from what the page is given (``pending``) with ``POST .../act`` until the game is over, asking only for the
events it has not seen (``since``), then ``POST .../save``. ``--think`` waits that many seconds before each move
(0: as fast as the server answers, the hardest case).

The line printed: the players and games, how many games finished and how many were lost (a game whose request
failed or that was not over when ``--seconds`` ran out), the act latency (from sending the move to the last byte
of the answer) p50/p95/p99/max in ms, the responses by status, the server's RSS at the end and its peak (VmHWM),
and the wall time. It exits 1 when a game was lost or a response was a 5xx.
"""

from __future__ import annotations

import argparse
import gzip
import http.client
import json
import os
import random
import socket
import subprocess
import sys
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

try:  # the client's own work is part of what the machine carries: the faster parser where it is installed
    from orjson import loads
except ImportError:
    from json import loads

REPO = Path(__file__).resolve().parent.parent


@dataclass
class Tally:
    """What the players saw, gathered under one lock."""

    act_ms: list[float] = field(default_factory=list)
    statuses: Counter = field(default_factory=Counter)
    finished: int = 0
    lost: int = 0
    errors: list[str] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def add(self, **counts: int) -> None:
        with self.lock:
            for name, n in counts.items():
                setattr(self, name, getattr(self, name) + n)


class Client:
    """One player's keep-alive connection; a request returns (status, JSON body or None)."""

    def __init__(self, host: str, port: int, timeout: float) -> None:
        self.host, self.port, self.timeout = host, port, timeout
        self.conn: http.client.HTTPConnection | None = None

    def request(self, method: str, path: str, body: object = None) -> tuple[int, object]:
        data = None if body is None else json.dumps(body).encode()
        headers = {"Accept-Encoding": "gzip"}  # as a browser asks
        if data is not None:
            headers["Content-Type"] = "application/json"
        for attempt in (0, 1):  # a keep-alive connection the server closed while idle is opened again, once
            if self.conn is None:
                self.conn = http.client.HTTPConnection(self.host, self.port, timeout=self.timeout)
            try:
                self.conn.request(method, path, body=data, headers=headers)
                response = self.conn.getresponse()
                raw = response.read()
                break
            except (http.client.RemoteDisconnected, BrokenPipeError):
                self.conn.close()
                self.conn = None
                if attempt:
                    raise
            except OSError:
                self.conn.close()
                self.conn = None
                raise
        if response.getheader("Content-Encoding") == "gzip":
            raw = gzip.decompress(raw)
        try:
            return response.status, loads(raw)
        except ValueError:
            return response.status, None

    def close(self) -> None:
        if self.conn is not None:
            self.conn.close()


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


def play(client: Client, request: dict, rng: random.Random, tally: Tally, deadline: float, think: float) -> bool:
    """One whole game; True when it finished (and was saved), False when it was lost."""
    status, view = client.request("POST", "/api/games", request)
    tally.statuses[status] += 1
    if status != 201:
        tally.errors.append(f"new game: {status} {view}")
        return False
    game = view["id"]
    seen = view["event_count"]
    while not view["over"]:
        if time.monotonic() > deadline:
            tally.errors.append(f"game {game}: not over when the time ran out")
            return False
        if think:
            time.sleep(think * rng.random() * 2)
        move = {"action": random_move(view["pending"], rng), "since": seen}
        start = time.perf_counter()
        status, answer = client.request("POST", f"/api/games/{game}/act", move)
        elapsed = (time.perf_counter() - start) * 1000
        with tally.lock:
            tally.statuses[status] += 1
            tally.act_ms.append(elapsed)
        if status != 200:
            tally.errors.append(f"act in game {game}: {status} {answer}")
            return False
        view = answer
        seen = view["event_count"]
    status, saved = client.request("POST", f"/api/games/{game}/save")
    tally.statuses[status] += 1
    if status != 200:
        tally.errors.append(f"save of game {game}: {status} {saved}")
        return False
    return True


def player(url: str, index: int, args: argparse.Namespace, tally: Tally, deadline: float, start: threading.Event):
    parts = urlsplit(url)
    client = Client(parts.hostname, parts.port or 80, timeout=args.timeout)
    rng = random.Random(args.seed * 100_003 + index)
    start.wait()
    try:
        for g in range(args.games):
            request = {
                "players": args.table,
                "opponents": [args.opponents],
                "seed": args.seed * 100_003 + index * 997 + g,
            }
            try:
                ok = play(client, request, rng, tally, deadline, args.think)
            except (OSError, http.client.HTTPException) as exc:
                tally.errors.append(f"player {index}: {type(exc).__name__}: {exc}")
                ok = False
            tally.add(finished=int(ok), lost=int(not ok))
    finally:
        client.close()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_server(serve_args: list[str], timeout: float = 60) -> tuple[str, subprocess.Popen]:
    """``revolution serve`` on a free loopback port, once it answers."""
    port = free_port()
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    command = [sys.executable, "-m", "revolution_env", "serve", "--port", str(port), *serve_args]
    proc = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + timeout
    while True:
        try:
            status, _ = Client("127.0.0.1", port, 2).request("GET", "/api/info")
            if status == 200:
                return url, proc
        except OSError:
            pass
        if proc.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            raise RuntimeError(f"revolution serve did not start: {proc.stdout.read()}")
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
    start = threading.Event()
    server_cpu = cpu_seconds(pid) if pid is not None else float("nan")
    client_cpu = time.process_time()
    began = time.monotonic()
    deadline = began + args.seconds
    threads = [threading.Thread(target=player, args=(url, i, args, tally, deadline, start), daemon=True)
               for i in range(args.players)]  # fmt: skip
    for t in threads:
        t.start()
    start.set()
    for t in threads:
        t.join(max(0.0, deadline + 2 * args.timeout - time.monotonic()))
    wall = time.monotonic() - began
    server_cpu = (cpu_seconds(pid) if pid is not None else float("nan")) - server_cpu
    client_cpu = time.process_time() - client_cpu
    with tally.lock:
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
    parser.add_argument("--pid", type=int, help="that server's process id, for its memory")
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
