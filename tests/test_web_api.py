"""`revolution serve`'s JSON API, through Starlette's TestClient (no browser): the replay library (what it lists,
that it replays games as the engine does, that it reads nothing outside its folders, that a broken file is an
error and not a crash) and games against bots (legal moves from the mask, illegal moves refused with the game
unchanged, a finished game saved and replayed to the same state)."""

from __future__ import annotations

import json
import os
import shutil
import warnings
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("starlette", reason="the web extra is not installed: pip install -e '.[web]'")
pytest.importorskip("httpx", reason="Starlette's TestClient needs httpx (the web-test extra)")

with warnings.catch_warnings():  # Starlette >= 1.10 prefers httpx2 and says so on import
    warnings.simplefilter("ignore")
    from starlette.testclient import TestClient  # noqa: E402

import contextlib

from replay_files import another_seed, write_evaluation

from revolution_env.engine import Game, Rules, export_game, run_scenario, state_dict  # noqa: E402
from revolution_env.engine.random_play import random_game  # noqa: E402
from revolution_env.frontends.web.app import create_app  # noqa: E402
from revolution_env.frontends.web.trace import replay_scenario  # noqa: E402

REPO = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def folders(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """A replay folder with one file of each kind, a broken one, and a secret file beside it (outside)."""
    base = tmp_path_factory.mktemp("web")
    root = base / "replays"
    (root / "eval").mkdir(parents=True)
    write_evaluation(root / "eval", 3)
    games = {p: random_game(Rules(players=p, first_edition=(p == 4)), 10 + p) for p in (2, 3, 4)}
    (root / "three.json").write_text(json.dumps(export_game(games[3])))
    pairs = [{"scenario": export_game(g), "final_state": state_dict(g)} for g in games.values()]
    (root / "exported.json").write_text(json.dumps(pairs))
    (root / "broken.json").write_text('{"rules": {"players": 3}, "rounds": [')
    bad = export_game(games[3])
    bad["rounds"][0]["bids"][0] = {"Printer": {"force": 9}}
    (root / "unplayable.json").write_text(json.dumps(bad))
    (root / "not_a_game.json").write_text(json.dumps({"hello": 1}))
    (base / "secret.json").write_text(json.dumps(export_game(games[3])))
    with contextlib.suppress(OSError):
        os.symlink(base / "secret.json", root / "link.json")
    return {"root": root, "base": base, "games": games}


@pytest.fixture(scope="module")
def client(folders: dict[str, Path]) -> TestClient:
    return TestClient(create_app([str(folders["root"])]), raise_server_exceptions=False)


def files(client: TestClient) -> dict[str, dict]:
    response = client.get("/api/replays")
    assert response.status_code == 200
    return {f["path"]: f for f in response.json()["files"]}


# --- the replay library --------------------------------------------------------------------------------------


def test_lists_the_games_of_every_kind_and_the_broken_file(client: TestClient) -> None:
    listed = files(client)
    assert listed["eval/games.jsonl"]["kind"] == "eval" and listed["eval/games.jsonl"]["games"] == 3
    assert listed["three.json"]["kind"] == "scenario"
    assert listed["exported.json"]["games"] == 3
    assert "not valid JSON" in listed["broken.json"]["error"]
    assert "not_a_game.json" not in listed and "eval/results.json" not in listed
    assert "link.json" not in listed  # a link leading outside the folder is not offered


def test_a_scenario_replays_to_the_engines_state_step_by_step(client: TestClient, folders: dict) -> None:
    game = folders["games"][3]
    replay = client.get("/api/replay", params={"file": "0/three.json", "game": 0}).json()
    assert replay["state"] == state_dict(game)
    assert len(replay["rounds"]) == len(export_game(game)["rounds"])
    last = replay["rounds"][-1]
    assert last["end"]["final"] == game.final
    assert last["events"][-1]["kind"] == "end"
    # each round starts where the last one ended; each character resolved is one step
    for before, after in zip(replay["rounds"], replay["rounds"][1:]):
        assert before["end"]["board"] == after["start"]["board"]
        assert before["end"]["support"] == after["start"]["support"]
    first = replay["rounds"][0]
    characters = [e for e in first["events"] if e["kind"] == "character"]
    assert [e["target"] for e in characters] == list(range(12))
    for e in characters:
        assert e["winner"] == first["winners"][e["target"]]


def test_exported_pairs_replay_and_check_their_final_state(client: TestClient, folders: dict) -> None:
    for index, players in enumerate((2, 3, 4)):
        replay = client.get("/api/replay", params={"file": "0/exported.json", "game": index}).json()
        assert replay["state"] == state_dict(folders["games"][players])
        assert replay["warnings"] == []
    kinds = {e["kind"] for index in (0, 2) for r in client.get("/api/replay", params={"file": "0/exported.json",
             "game": index}).json()["rounds"] for e in r["events"]}  # fmt: skip
    assert {"guy", "cards", "reveal", "character", "end"} <= kinds


@pytest.mark.parametrize("game", [0, 1])  # 0: its recorded scenario; 1: no scenario, played again
def test_an_evaluation_game_replays_and_matches_its_record(client: TestClient, folders: dict, game: int) -> None:
    record = json.loads((folders["root"] / "eval" / "games.jsonl").read_text().splitlines()[game])
    assert ("scenario" in record) == (game == 0)
    replay = client.get("/api/replay", params={"file": "0/eval/games.jsonl", "game": game}).json()
    assert replay["warnings"] == []
    assert replay["state"]["final"]["support"] == record["support"]
    assert replay["state"]["final"]["winners"] == record["winners"]
    assert run_scenario(replay["scenario"]).final == replay["state"]["final"]
    page = client.get("/api/replays/games", params={"file": "0/eval/games.jsonl", "offset": game, "limit": 1}).json()
    assert page["total"] == 3 and page["games"][0]["agents"] == record["agents"]


def test_an_evaluation_being_played_is_listed_in_game_order_without_its_torn_last_line(folders: dict) -> None:
    """``revolution eval`` appends its games as they finish (docs/reliability.md), so a games.jsonl read while it
    plays, or after a kill, holds them out of order and may end in a line cut short: the viewer lists the whole
    lines in game order and says that the last one is left out."""
    lines = (folders["root"] / "eval" / "games.jsonl").read_text().splitlines()
    playing = folders["root"] / "playing"
    playing.mkdir()
    (playing / "games.jsonl").write_text(lines[2] + "\n" + lines[0] + "\n" + lines[1][: len(lines[1]) // 2])
    client = TestClient(create_app([str(folders["root"])]), raise_server_exceptions=False)
    listed = files(client)["playing/games.jsonl"]
    assert listed["kind"] == "eval" and listed["games"] == 2 and "cut short" in listed["note"]
    page = client.get("/api/replays/games", params={"file": "0/playing/games.jsonl", "offset": 0, "limit": 2}).json()
    assert [g["support"] for g in page["games"]] == [json.loads(lines[i])["support"] for i in (0, 2)]


def test_a_broken_or_unplayable_file_is_an_error_and_the_server_goes_on(client: TestClient) -> None:
    response = client.get("/api/replay", params={"file": "0/broken.json", "game": 0})
    assert response.status_code == 422 and "not valid JSON" in response.json()["error"]
    response = client.get("/api/replay", params={"file": "0/unplayable.json", "game": 0})
    assert response.status_code == 422
    assert "round 1, seat 0" in response.json()["error"]
    assert client.get("/api/replay", params={"file": "0/three.json", "game": 0}).status_code == 200
    assert client.get("/api/replay", params={"file": "0/three.json", "game": 5}).status_code == 404
    assert client.get("/api/replay", params={"file": "0/three.json", "game": "x"}).status_code == 400


@pytest.mark.parametrize(
    "file_id",
    [
        "0/../secret.json",
        "0/eval/../../secret.json",
        "0//etc/passwd",
        "0/%2e%2e/secret.json",
        "0/link.json",
        "1/three.json",
        "../secret.json",
        "/etc/passwd",
        "0/..\\secret.json",
        "0/eval/results.jsonx",
    ],
)
def test_no_file_outside_the_replay_folders_can_be_read(client: TestClient, file_id: str) -> None:
    for path in ("/api/replay", "/api/replays/games"):
        response = client.get(path, params={"file": file_id, "game": 0})
        assert response.status_code in (403, 404), (file_id, response.text)
        assert "error" in response.json()
    assert client.get("/static/../replays/three.json").status_code == 404
    assert client.get("/static/%2e%2e/app.py").status_code == 404


def test_a_path_outside_resolves_to_a_refusal_not_a_read(folders: dict) -> None:
    from revolution_env.frontends.web.replays import ReplayError, ReplayLibrary

    library = ReplayLibrary([folders["root"]])
    with pytest.raises(ReplayError) as err:
        library.resolve("0/../secret.json")
    assert err.value.status == 403
    if (folders["root"] / "link.json").is_symlink():
        with pytest.raises(ReplayError, match="outside"):
            library.resolve("0/link.json")


# --- playing -------------------------------------------------------------------------------------------------


def new_game(client: TestClient, **request) -> dict:
    response = client.post("/api/games", json=request)
    assert response.status_code == 201, response.text
    return response.json()


def legal_action(view: dict, rng: np.random.Generator) -> list[int]:
    """A legal move from what the page is given (the mask as token targets and choices)."""
    pending = view["pending"]
    action = [0] * pending["size"]
    if pending["decision"] == "bid":
        for token in pending["tokens"]:
            action[token["dim"]] = int(rng.choice(token["allowed"]))
    else:
        values = [c["value"] for c in pending["choices"]] + ([0] if pending["can_decline"] else [])
        action[0] = int(rng.choice(values))
    return action


@pytest.mark.parametrize("players", [2, 3, 4])
def test_a_whole_game_against_bots_saves_a_replay_of_the_same_game(client: TestClient, players: int) -> None:
    view = new_game(client, players=players, seat=players - 1, opponents=["random"], seed=players,
                    first_edition=players == 4)  # fmt: skip
    rng = np.random.default_rng(players)
    seen = set()
    while not view["over"]:
        seen.add(view["pending"]["decision"])
        response = client.post(f"/api/games/{view['id']}/act", json={"action": legal_action(view, rng)})
        assert response.status_code == 200, response.text
        view = response.json()
    assert "bid" in seen
    exported = client.get(f"/api/games/{view['id']}/export").json()
    assert run_scenario(another_seed(exported)).final == view["final"]
    saved = client.post(f"/api/games/{view['id']}/save").json()
    replay = client.get("/api/replay", params={"file": saved["file"], "game": 0}).json()
    assert replay["state"]["final"] == view["final"]
    assert saved["file"] in {f["id"] for f in client.get("/api/replays").json()["files"]}


def test_an_illegal_move_is_refused_and_the_game_is_unchanged(client: TestClient) -> None:
    view = new_game(client, players=3, opponents=["value", "random"], seed=5)
    game_id = view["id"]
    before = client.get(f"/api/games/{game_id}").json()
    force = next(t for t in view["pending"]["tokens"] if t["type"] == "force")
    action = legal_action(view, np.random.default_rng(0))
    action[force["dim"]] = 0  # Force on the General, who is immune to Force
    for bad in (action, [0] * 3, "bid", [1.5] * view["pending"]["size"], [-1] * view["pending"]["size"]):
        response = client.post(f"/api/games/{game_id}/act", json={"action": bad})
        assert response.status_code == 400, bad
        assert response.json()["error"]
    response = client.post(f"/api/games/{game_id}/act", json={"action": action})
    assert "illegal move" in response.json()["error"] and "General" in response.json()["error"]
    assert client.post(f"/api/games/{game_id}/act", content=b"not json").status_code == 400
    assert client.get(f"/api/games/{game_id}").json() == before
    assert client.get(f"/api/games/{game_id}/export").status_code == 400  # not before the end (it holds the seed)


def test_a_cube_decision_offers_what_the_mask_offers(client: TestClient) -> None:
    """Play until the person faces a non-bid decision; its choices are exactly the mask's legal values."""
    from revolution_env.agents.loading import load_agent
    from revolution_env.frontends.web.sessions import PlaySession

    for seed in range(40):
        session = PlaySession({"players": 2}, 0, ["random"], load_agent, seed=seed)
        rng = np.random.default_rng(seed)
        while not session.game.over and session.pending()["decision"] == "bid":
            session.act(legal_action({"pending": session.pending()}, rng))
        if session.game.over:
            continue
        pending = session.pending()
        mask = session.env.observe(session.human)["action_mask"]
        legal = set(np.flatnonzero(mask[: session.core.codec.C]).tolist())
        assert {c["value"] for c in pending["choices"]} | ({0} if pending["can_decline"] else set()) == legal
        return
    pytest.fail("no seed led to a decision other than a bid")


def test_bad_game_requests_say_what_is_wrong(client: TestClient) -> None:
    for request, words in [
        ({"players": 5}, "players"),
        ({"players": 3, "opponents": ["/etc/passwd"]}, "not offered"),
        ({"players": 3, "seat": 3}, "seat"),
        ({"players": 3, "colour": "red"}, "colour"),
        ({"players": 3, "first_edition": "yes"}, "first_edition"),
        ({"players": 2, "bid_refunds": False}, "bid_refunds"),
    ]:
        response = client.post("/api/games", json=request)
        assert response.status_code == 400 and words in response.json()["error"], (request, response.text)
    assert client.get("/api/games/nope").status_code == 404


def test_separate_games_do_not_mix(client: TestClient) -> None:
    a = new_game(client, players=3, opponents=["random"], seed=1)
    b = new_game(client, players=2, opponents=["random"], seed=1)
    assert a["id"] != b["id"]
    rng = np.random.default_rng(1)
    client.post(f"/api/games/{a['id']}/act", json={"action": legal_action(a, rng)})
    assert client.get(f"/api/games/{b['id']}").json()["state"] == b["state"]


def test_the_traced_game_is_the_engines_game() -> None:
    for players in (2, 3, 4):
        game = random_game(Rules(players=players, first_edition=players == 3), players)
        traced, replay = replay_scenario(export_game(game))
        assert replay["state"] == state_dict(game)
        assert type(traced).__mro__[1] is Game


def test_serve_without_the_web_extra_says_how_to_install(monkeypatch: pytest.MonkeyPatch, capsys) -> None:
    import importlib.util

    from revolution_env.frontends.cli import main

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "uvicorn" else real(name, *a))
    assert main(["serve"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "pip install -e '.[web]'" in err[0]


def test_serve_refuses_a_missing_folder_in_one_line(capsys) -> None:
    from revolution_env.frontends.cli import main

    assert main(["serve", "--replays", "/no/such/folder"]) == 2
    assert "--replays" in capsys.readouterr().err


def test_checkpoints_given_with_agents_are_offered_and_checked(folders: dict) -> None:
    pytest.importorskip("torch", reason="checkpoints need torch (the torch extra)")
    shipped = str(REPO / "checkpoints" / "three_players.pt")
    client = TestClient(create_app([str(folders["root"])], [shipped]), raise_server_exceptions=False)
    assert shipped in client.get("/api/info").json()["opponents"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # trained on v1: the loader says so
        view = new_game(client, players=3, opponents=[shipped, "value"], seed=0)
        assert view["names"][1] == "P1 three_players"
        response = client.post("/api/games", json={"players": 4, "opponents": [shipped]})
    assert response.status_code == 400 and "three_players.pt" in response.json()["error"]


def test_revolution_serve_listens_on_this_machine_only_by_default() -> None:
    import socket
    import subprocess
    import sys
    import time
    import urllib.request

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    proc = subprocess.Popen([sys.executable, "-m", "revolution_env", "serve", "--port", str(port)], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)  # fmt: skip
    try:
        deadline = time.monotonic() + 120  # the imports, then the bots' warm-up, on a machine that may be busy
        while True:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/api/info", timeout=2) as response:
                    info = json.load(response)
                break
            except OSError:
                if time.monotonic() > deadline or proc.poll() is not None:
                    pytest.fail(
                        f"revolution serve did not start: {proc.stdout.read() if proc.poll() is not None else ''}"
                    )
                time.sleep(0.2)
        assert "value" in info["opponents"]
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=2) as response:
            assert b"Revolution!" in response.read()
        listening = subprocess.run(["ss", "-ltn"], capture_output=True, text=True).stdout if shutil.which("ss") else ""
        if listening:
            local = [line.split()[3] for line in listening.splitlines()[1:] if line.split()[3].endswith(f":{port}")]
            assert local == [f"127.0.0.1:{port}"]
    finally:
        proc.terminate()
        proc.wait(10)


def test_a_file_changed_on_disk_is_read_again(tmp_path: Path) -> None:
    from revolution_env.frontends.web.replays import ReplayLibrary

    games = [random_game(Rules(players=3), seed) for seed in (1, 2)]
    path = tmp_path / "game.json"
    path.write_text(json.dumps(export_game(games[0])))
    library = ReplayLibrary([tmp_path], cache_size=1)
    assert library.replay("0/game.json", 0)["state"] == state_dict(games[0])
    path.write_text(json.dumps(export_game(games[1])))
    os.utime(path, ns=(path.stat().st_mtime_ns + 10**9,) * 2)
    assert library.replay("0/game.json", 0)["state"] == state_dict(games[1])
    path.write_text("[")
    os.utime(path, ns=(path.stat().st_mtime_ns + 2 * 10**9,) * 2)
    assert "error" in library.files()[0]


def test_without_replay_folders_a_saved_game_is_kept_for_the_session() -> None:
    client = TestClient(create_app(), raise_server_exceptions=False)
    assert client.get("/api/replays").json()["files"] == []
    view = new_game(client, players=3, opponents=["area"], seed=4, max_rounds=2)
    rng = np.random.default_rng(4)
    while not view["over"]:
        view = client.post(f"/api/games/{view['id']}/act", json={"action": legal_action(view, rng)}).json()
    assert view["truncated"] and view["state"]["round"] == 2
    saved = client.post(f"/api/games/{view['id']}/save").json()
    assert saved["file"].startswith("saved/")
    assert client.post(f"/api/games/{view['id']}/save").json() == saved  # saved once
    assert [f["id"] for f in client.get("/api/replays").json()["files"]] == [saved["file"]]
    replay = client.get("/api/replay", params={"file": saved["file"], "game": 0}).json()
    assert replay["state"]["final"] == view["final"] and len(replay["rounds"]) == 2


# --- many players: no game being played is dropped ------------------------------------------------------------


class Clock:
    """A clock the test moves by hand (the server's idle timeout is read from it)."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def play_to_the_end(client: TestClient, view: dict, seed: int = 0) -> dict:
    rng = np.random.default_rng(seed)
    while not view["over"]:
        response = client.post(f"/api/games/{view['id']}/act", json={"action": legal_action(view, rng)})
        assert response.status_code == 200, response.text
        view = response.json()
    return view


def test_a_full_server_refuses_a_new_game_and_keeps_every_game_being_played() -> None:
    clock = Clock()
    client = TestClient(create_app(max_games=3, idle_timeout=600, clock=clock), raise_server_exceptions=False)
    games = [new_game(client, players=2, opponents=["random"], seed=s) for s in range(3)]
    clock.now += 599  # each player still within the timeout
    response = client.post("/api/games", json={"players": 2, "opponents": ["random"]})
    assert response.status_code == 503 and response.json() == {"error": "the server is full, try again later"}
    assert response.headers["Retry-After"]
    rng = np.random.default_rng(0)
    for view in games:  # all three still there, and playable
        assert client.post(f"/api/games/{view['id']}/act", json={"action": legal_action(view, rng)}).status_code == 200
    assert client.get("/api/info").json()["games"] == 3
    clock.now += 300
    client.get(f"/api/games/{games[1]['id']}")  # one player comes back; the other two have been gone 900 s
    clock.now += 301
    late = new_game(client, players=2, opponents=["random"])  # the two left alone expired: room again
    response = client.get(f"/api/games/{games[0]['id']}")
    assert response.status_code == 410 and "left alone for more than 10 minutes" in response.json()["error"]
    assert client.get(f"/api/games/{games[1]['id']}").status_code == 200
    assert client.get(f"/api/games/{late['id']}").status_code == 200
    assert client.get("/api/games/0123456789abcdef").status_code == 404


def test_a_finished_game_is_saved_before_it_goes(tmp_path: Path) -> None:
    """Left alone past the timeout, or making room on a full server: the finished game is saved as a replay first,
    and its id then says where."""
    clock = Clock()
    app = create_app([str(tmp_path)], max_games=2, idle_timeout=60, clock=clock)
    client = TestClient(app, raise_server_exceptions=False)
    first = play_to_the_end(client, new_game(client, players=3, opponents=["area"], seed=4, max_rounds=2))
    second = play_to_the_end(client, new_game(client, players=2, opponents=["random"], seed=5, max_rounds=2))
    assert not list(tmp_path.glob("saved-games/*.json"))  # nobody pressed save
    new_game(client, players=2, opponents=["random"])  # full: the finished game left alone longest makes room
    response = client.get(f"/api/games/{first['id']}")
    assert response.status_code == 410 and "was saved as 0/saved-games/" in response.json()["error"]
    clock.now += 61
    assert app.state.sessions.expire() == 2  # the second finished game, and the new one nobody played
    saved = sorted(tmp_path.glob("saved-games/*.json"))
    assert {p.stem.rsplit("-", 1)[1] for p in saved} == {first["id"], second["id"]}
    for view in (first, second):
        file = next(f"0/saved-games/{p.name}" for p in saved if p.stem.endswith(view["id"]))
        assert file in client.get(f"/api/games/{view['id']}").json()["error"]
        replay = client.get("/api/replay", params={"file": file, "game": 0}).json()
        assert replay["state"]["final"] == view["final"]


def test_the_server_saves_its_finished_games_when_it_stops(tmp_path: Path) -> None:
    with TestClient(create_app([str(tmp_path)]), raise_server_exceptions=False) as client:  # runs the lifespan
        done = play_to_the_end(client, new_game(client, players=2, opponents=["random"], seed=7, max_rounds=2))
        new_game(client, players=2, opponents=["random"])  # unfinished: nothing to save
        assert not list(tmp_path.glob("saved-games/*.json"))
    (saved,) = tmp_path.glob("saved-games/*.json")
    assert saved.stem.endswith(done["id"]) and run_scenario(json.loads(saved.read_text())).final == done["final"]


def test_idle_games_end_by_themselves_while_the_server_runs(tmp_path: Path) -> None:
    """No new game needed: the server looks for idle games now and then (a quarter of the timeout here)."""
    import time

    with TestClient(create_app([str(tmp_path)], idle_timeout=3), raise_server_exceptions=False) as client:
        done = play_to_the_end(client, new_game(client, players=2, opponents=["random"], seed=6, max_rounds=2))
        deadline = time.monotonic() + 60
        while not list(tmp_path.glob("saved-games/*.json")) and time.monotonic() < deadline:
            time.sleep(0.2)
        response = client.get(f"/api/games/{done['id']}")
        assert response.status_code == 410 and "saved as" in response.json()["error"]


def test_a_game_that_cannot_be_saved_is_kept_and_saved_later(tmp_path: Path, monkeypatch) -> None:
    clock = Clock()
    app = create_app([str(tmp_path)], idle_timeout=60, clock=clock)
    client = TestClient(app, raise_server_exceptions=False)
    done = play_to_the_end(client, new_game(client, players=2, opponents=["random"], seed=2, max_rounds=2))
    save = app.state.library.save

    def disk_full(*args, **kwargs):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(app.state.library, "save", disk_full)
    clock.now += 61
    assert app.state.sessions.expire() == 0  # kept, not lost
    assert client.get(f"/api/games/{done['id']}").json()["final"] == done["final"]
    monkeypatch.setattr(app.state.library, "save", save)
    clock.now += 61
    assert app.state.sessions.expire() == 1
    (saved,) = tmp_path.glob("saved-games/*.json")
    assert saved.stem.endswith(done["id"])


def test_the_bots_warm_up_before_the_server_listens() -> None:
    """A one-round game between two heuristic bots at start-up: the compiled bots' machine code is loaded then,
    not in the first player's game while every other request waits."""
    from revolution_env.agents.loading import load_agent

    loaded, acts, ready = [], [], []

    def recording(spec: str, **options):
        agent = load_agent(spec, **options)
        act = agent.act
        agent.act = lambda *args: acts.append(spec) or act(*args)
        loaded.append((spec, options))
        return agent

    app = create_app(load_agent=recording, on_ready=lambda: ready.append(len(acts)))
    with TestClient(app, raise_server_exceptions=False):
        assert ready and ready[0] >= 2  # the bots had played before the server said it was ready
    assert loaded == [("value", {"players": 2, "max_rounds": 1})] * 2


# --- bad input: a one-line 4xx, never a 500 --------------------------------------------------------------------

HUGE = "9" * 5000  # more digits than Python reads from a string: ValueError, not a JSONDecodeError


def raw_json(text: str) -> dict:
    return {"content": text.encode(), "headers": {"Content-Type": "application/json"}}


NEW_GAME_REFUSED = [
    # (body of POST /api/games, a word of the error)
    ('{"players": 3, "seed": ' + HUGE + "}", "too long"),
    ('{"players": 3, "seed": -1}', "seed"),
    ('{"players": 3, "seed": 9223372036854775808}', "seed"),
    ('{"players": 3, "seed": 1.5}', "seed"),
    ('{"players": 3, "seed": 1e3}', "seed"),
    ('{"players": 3, "seed": true}', "seed"),
    ('{"players": 3, "seed": "7"}', "seed"),
    ('{"players": 3, "seed": [7]}', "seed"),
    ('{"players": "3"}', "players"),
    ('{"players": 3.0}', "players"),
    ('{"players": true}', "players"),
    ('{"players": null}', "players"),
    ('{"players": ' + "9" * 4000 + "}", "players"),
    ('{"players": 3, "seat": "0"}', "seat"),
    ('{"players": 3, "seat": -1}', "seat"),
    ('{"players": 3, "seat": false}', "seat"),
    ('{"players": 3, "seat": 1e400}', "seat"),
    ('{"players": 3, "opponents": 5}', "opponents"),
    ('{"players": 3, "opponents": [1, 2]}', "opponents"),
    ('{"players": 3, "opponents": ["random", "nope"]}', "not offered"),
    ('{"players": 3, "opponents": []}', "opponents"),
    ('{"players": 3, "opponents": ["random", "random", "random"]}', "opponents"),
    ('{"players": 3, "opponents": {"a": 1}}', "opponents"),
    ('{"players": 3, "max_rounds": 0}', "max_rounds"),
    ('{"players": 3, "max_rounds": "5"}', "max_rounds"),
    ('{"players": 3, "max_rounds": 2.5}', "max_rounds"),
    ('{"players": 3, "max_rounds": true}', "max_rounds"),
    ('{"players": 3, "max_rounds": 18446744073709551616}', "max_rounds"),
    ('{"players": 3, "first_edition": 1}', "first_edition"),
    ('{"players": 3, "area_control_bonus": "no"}', "area_control_bonus"),
    ('{"players": 3, "colour": "red"}', "colour"),
    ('{"players": 3, "players": 2}', "twice"),
    ("[3]", "JSON object"),
    ('"players"', "JSON object"),
    ("null", "JSON object"),
    ("{", "not valid JSON"),
    ('{"players": NaN}', "NaN"),
    ('{"players": Infinity}', "Infinity"),
    ("[" * 5000 + "]" * 5000, "nested too deeply"),
]


@pytest.mark.parametrize(("body", "words"), NEW_GAME_REFUSED)
def test_a_bad_new_game_is_a_one_line_400(body: str, words: str) -> None:
    client = TestClient(create_app(), raise_server_exceptions=False)
    response = client.post("/api/games", **raw_json(body))
    assert response.status_code == 400, (body[:60], response.status_code, response.text[:200])
    message = response.json()["error"]
    assert words in message and "\n" not in message and len(message) < 300, message


def test_bodies_are_capped_and_must_be_json() -> None:
    from revolution_env.frontends.web.app import MAX_BODY

    client = TestClient(create_app(), raise_server_exceptions=False)
    big = b'{"players": 3, "pad": "' + b"x" * MAX_BODY + b'"}'
    response = client.post("/api/games", content=big, headers={"Content-Type": "application/json"})
    assert response.status_code == 413 and str(MAX_BODY) in response.json()["error"]

    def chunks():  # no Content-Length: the body is counted as it arrives
        for _ in range(64):
            yield b" " * 1024

    response = client.post("/api/games", content=chunks(), headers={"Content-Type": "application/json"})
    assert response.status_code == 413
    for path in ("/api/info", "/api/games/nope/save", "/"):  # whatever the endpoint
        assert client.post(path, content=big).status_code in (405, 413)
    response = client.post("/api/games", content=b'{"players": 3}', headers={"Content-Type": "text/plain"})
    assert response.status_code == 415 and "application/json" in response.json()["error"]
    response = client.post("/api/games", content=b"\xff\xfe{}", headers={"Content-Type": "application/json"})
    assert response.status_code == 400 and "UTF-8" in response.json()["error"]
    ok = client.post("/api/games", content=b'{"players": 2, "opponents": ["random"]}',
                     headers={"Content-Type": "application/json; charset=utf-8"})  # fmt: skip
    assert ok.status_code == 201


def test_every_endpoint_answers_bad_values_with_one_line() -> None:
    client = TestClient(create_app(), raise_server_exceptions=False)
    view = new_game(client, players=3, opponents=["random"], seed=3)
    game = f"/api/games/{view['id']}"
    size = view["pending"]["size"]
    good = legal_action(view, np.random.default_rng(3))
    requests = [
        ("POST", f"{game}/act", '{"action": ' + json.dumps(good) + ', "since": -1}', 400),
        ("POST", f"{game}/act", '{"action": ' + json.dumps(good) + ', "since": "3"}', 400),
        ("POST", f"{game}/act", '{"action": ' + json.dumps(good) + ', "since": 1.5}', 400),
        ("POST", f"{game}/act", '{"action": ' + json.dumps(good) + ', "since": true}', 400),
        ("POST", f"{game}/act", '{"action": ' + json.dumps(good) + ', "extra": 1}', 400),
        ("POST", f"{game}/act", '{"action": [' + HUGE + "]}", 400),
        ("POST", f"{game}/act", '{"action": ' + json.dumps([10**30] * size) + "}", 400),
        ("POST", f"{game}/act", '{"action": ' + json.dumps([-(2**70)] * size) + "}", 400),
        ("POST", f"{game}/act", '{"action": ' + json.dumps([None] * size) + "}", 400),
        ("POST", f"{game}/act", '{"action": ' + json.dumps([True] * size) + "}", 400),
        ("POST", f"{game}/act", '{"action": {"0": 1}}', 400),
        ("POST", f"{game}/act", '{"action": null}', 400),
        ("POST", f"{game}/act", "{}", 400),
        ("POST", f"{game}/act", "[]", 400),
        ("POST", f"{game}/act", "", 400),
        ("POST", f"{game}/save", '{"a": 1}', 400),
        ("POST", f"{game}/save", "", 400),  # not over yet
        ("GET", f"{game}?since=-1", None, 400),
        ("GET", f"{game}?since=x", None, 400),
        ("GET", f"{game}?since=%C2%B2", None, 400),  # ², a digit to str.isdigit
        ("GET", f"{game}?since=" + "9" * 40, None, 400),
        ("GET", f"{game}/export", None, 400),  # not over yet
        ("GET", "/api/games/" + "x" * 5000, None, 404),
        ("POST", "/api/games/nope/act", '{"action": [0]}', 404),
        ("GET", "/api/games", None, 405),
        ("DELETE", game, None, 405),
        ("GET", "/api/nothing", None, 404),
        ("GET", "/api/replays/games?file=0/x.json&offset=-1", None, 400),
        ("GET", "/api/replays/games?file=0/x.json&limit=0", None, 400),
        ("GET", "/api/replay?file=0/x.json&game=" + HUGE, None, 400),
        ("GET", "/api/replay?file=0/x.json&game=1.5", None, 400),
        ("GET", "/api/replay", None, 404),
    ]
    for method, path, body, status in requests:
        kwargs = raw_json(body) if body is not None else {}
        response = client.request(method, path, **kwargs)
        assert response.status_code == status, (method, path[:80], (body or "")[:80], response.text[:200])
        message = response.json()["error"]
        assert message and "\n" not in message and len(message) < 300, message
    assert client.get(game).json()["state"] == view["state"]  # none of it changed the game
    assert client.post(f"{game}/act", json={"action": good, "since": view["event_count"]}).status_code == 200


@pytest.mark.parametrize("target", ["new", "act"])
def test_fuzzed_bodies_are_answered_never_with_a_500(target: str) -> None:
    from hypothesis import HealthCheck, given, settings
    from hypothesis import strategies as st

    client = TestClient(create_app(), raise_server_exceptions=False)
    view = new_game(client, players=2, opponents=["random"], seed=1)
    path = "/api/games" if target == "new" else f"/api/games/{view['id']}/act"
    keys = ["players", "seat", "opponents", "seed", "max_rounds", "first_edition", "bid_refunds", "action", "since"]
    leaves = st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=8)
    values = st.recursive(leaves, lambda inner: st.lists(inner, max_size=4), max_leaves=12)
    bodies = st.dictionaries(st.sampled_from(keys) | st.text(max_size=4), values, max_size=4) | values

    @settings(max_examples=120, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True)
    @given(bodies)
    def check(body: object) -> None:
        response = client.post(path, content=json.dumps(body).encode(), headers={"Content-Type": "application/json"})
        assert response.status_code < 500, (body, response.text[:300])
        if response.status_code >= 400:
            message = response.json()["error"]
            assert "\n" not in message and len(message) < 300, message

    check()


# --- a real server under load ---------------------------------------------------------------------------------


def load_script():
    import importlib.util
    import sys

    spec = importlib.util.spec_from_file_location("serve_load", REPO / "scripts" / "serve_load.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules["serve_load"] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def hostile_requests(port: int) -> list[tuple[str, int, str]]:
    """Bad requests of every kind, sent while the players play: (what, status, first line of the answer)."""
    import socket

    def raw(request: bytes) -> tuple[int, str]:
        with socket.create_connection(("127.0.0.1", port), timeout=30) as s:
            s.sendall(request)
            answer = b""
            while b"\r\n\r\n" not in answer or not answer.rstrip().endswith(b"}"):
                chunk = s.recv(65536)
                if not chunk:
                    break
                answer += chunk
        head, _, body = answer.partition(b"\r\n\r\n")
        return int(head.split()[1]), json.loads(body)["error"]

    start = b"POST /api/games HTTP/1.1\r\nHost: x\r\n"

    def post(body: bytes, content_type: bytes = b"application/json") -> bytes:
        length = str(len(body)).encode()
        return start + b"Content-Type: " + content_type + b"\r\nContent-Length: " + length + b"\r\n\r\n" + body

    chunks = b"".join(b"1000\r\n" + b" " * 4096 + b"\r\n" for _ in range(8)) + b"0\r\n\r\n"
    chunked = start + b"Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n" + chunks
    cases = {
        "5,000-digit seed": post(b'{"players": 3, "seed": ' + b"9" * 5000 + b"}"),
        "body over the cap, announced": post(b" " * 20_000),
        "body over the cap, chunked": chunked,
        "wrong content type": post(b"players=3", b"application/x-www-form-urlencoded"),
        "not JSON": post(b"\x00\xff{"),
        "float seed": post(b'{"players": 3, "seed": 1.5}'),
        "unknown field": post(b'{"players": 3, "colour": 1}'),
    }
    return [(what, *raw(request)) for what, request in cases.items()]


def test_many_players_at_once_lose_no_game_while_bad_requests_come_in(tmp_path: Path) -> None:
    """A real ``revolution serve`` on the loopback: players playing whole games at once through the HTTP API (the
    load script's own code), fewer places than games, hostile requests in the middle; then SIGTERM, which saves the
    finished game nobody saved. The strict latency figure is the script's longer run (docs/reliability.md): here
    only a bound no busy machine should break."""
    import signal
    import threading

    load = load_script()
    players, games = 10, 2
    url, proc = load.start_server(["--replays", str(tmp_path), "--max-games", str(players + 2)])
    port = int(url.rsplit(":", 1)[1])
    try:
        args = load.parse_args(["--players", str(players), "--games", str(games), "--seconds", "60", "--seed", "3"])
        hostile: list = []
        attack = threading.Thread(target=lambda: hostile.extend(hostile_requests(port)))
        attack.start()
        figures = load.run(args, url, proc.pid)
        attack.join(60)
        assert figures["errors"] == [] and figures["lost"] == 0 and figures["finished"] == players * games
        assert set(figures["statuses"]) == {200, 201}, figures["statuses"]
        assert figures["p99"] < 10_000, load.line(figures)  # generous: the machine may be shared
        assert len(hostile) == 7
        for what, status, message in hostile:
            assert status in (400, 413, 415), (what, status, message)
            assert "\n" not in message and len(message) < 300, (what, message)
        assert len(list(tmp_path.glob("saved-games/*.json"))) == players * games  # the script saves every game
        status, view = load.request(url, "POST", "/api/games", {"players": 2, "opponents": ["random"], "max_rounds": 1})
        rng = np.random.default_rng(0)
        while not view["over"]:
            move = {"action": legal_action(view, rng)}
            status, view = load.request(url, "POST", f"/api/games/{view['id']}/act", move)
            assert status == 200, view
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(30) == 143
        assert any(p.stem.endswith(view["id"]) for p in tmp_path.glob("saved-games/*.json"))
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
