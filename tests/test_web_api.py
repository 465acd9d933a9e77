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

from replay_files import write_evaluation

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
    assert run_scenario(exported).final == view["final"]
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
        deadline = time.monotonic() + 30
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
