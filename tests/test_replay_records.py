"""A saved game records every chance outcome (docs/scenarios.md §3): the first edition's deck as dealt
(``start.deck``), each D15 reshuffle in the round it came in (``reshuffles``), the two-player Scheming priority
(``priority``). Every writer of games saves them, and every saved game replays to the same state with its seed
changed. The vector envs, the batched engine, the AEC and Parallel envs and the server are checked where their own
exports are tested (``another_seed`` in test_vector_env, test_selfplay_env, test_batched, test_env_replay,
test_properties, test_web_api); here: live play, the command line, evaluations, and games saved before records
held their draws."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from replay_files import another_seed

from revolution_env.engine import Game, Rules, export_game, random_game, run_scenario, state_dict
from revolution_env.engine.game import DECK_STREAM, seed_stream
from revolution_env.engine.scenario import UnrecordedDrawError
from revolution_env.evaluation import evaluate_lineup
from revolution_env.evaluation.report import write_all

FIRST_EDITION = Rules(players=3, first_edition=True)


def reshuffled_games(count: int) -> list[Game]:
    """The first ``count`` seeded random first-edition games with at least one reshuffle."""
    games = (random_game(FIRST_EDITION, seed) for seed in range(200))
    found = [g for g in games if any("reshuffles" in r for r in g.history)][:count]
    assert len(found) == count
    return found


def old_record(scenario: dict) -> dict:
    """A first-edition game as saved before saved games held their draws: no deck, no reshuffles."""
    data = json.loads(json.dumps(scenario))
    data.pop("start", None)
    for entry in data["rounds"]:
        entry.pop("reshuffles", None)
    return data


def test_live_play_deals_and_reshuffles_from_the_seeds_deck_stream():
    """D15 in play: the deck as first dealt, then each reshuffle, are the successive shuffles of the seed's deck
    stream (settled case 16), and the record holds them as dealt."""
    for game in reshuffled_games(3):
        stream = seed_stream(game.seed, DECK_STREAM)
        deck = game.layout.components.deck
        orders = [game.first_pile] + [o for r in game.history for o in r.get("reshuffles", [])]
        for order in orders:
            assert order == stream.permutation(len(deck)).tolist()
        saved = export_game(game)
        assert saved["start"]["deck"] == [deck[i].name for i in game.first_pile]
        assert [o for r in saved["rounds"] for o in r.get("reshuffles", [])] == [
            [deck[i].name for i in o] for o in orders[1:]
        ]


def test_a_saved_game_replays_from_its_record_whatever_its_seed():
    for game in reshuffled_games(2):
        assert state_dict(run_scenario(another_seed(export_game(game)))) == state_dict(game)


def test_a_record_without_its_draws_is_one_error_unless_drawn_from_its_seed():
    """A record missing a draw it needs is refused (the replay would otherwise depend on this engine's generator);
    ``draws="seed"`` replays a game saved before records held them, as the engine draws them today."""
    game = reshuffled_games(1)[0]
    old = old_record(export_game(game))
    with pytest.raises(UnrecordedDrawError, match="start.deck"):
        run_scenario(old)
    assert state_dict(run_scenario(old, draws="seed")) == state_dict(game)
    no_reshuffle = export_game(game)
    for entry in no_reshuffle["rounds"]:
        entry.pop("reshuffles", None)
    with pytest.raises(UnrecordedDrawError, match="reshuffle"):
        run_scenario(no_reshuffle)
    with pytest.raises(ValueError, match="draws: expected one of record, seed"):
        run_scenario(export_game(game), draws="generator")


def test_the_command_line_saves_and_replays_the_draws(tmp_path):
    """``revolution random --export`` writes the draws; ``revolution scenario`` replays them whatever the seed, and
    an old record only with ``--draws-from-seed`` (otherwise one line, exit 1)."""
    seed = reshuffled_games(1)[0].seed
    path = tmp_path / "game.json"
    cli = [sys.executable, "-m", "revolution_env"]
    subprocess.run([*cli, "random", "--players", "3", "--first-edition", "--seed", str(seed), "--quiet",
                    "--export", str(path)], check=True, capture_output=True)  # fmt: skip
    saved = json.loads(path.read_text())
    assert any("reshuffles" in r for r in saved["rounds"])
    expected = state_dict(run_scenario(saved))
    path.write_text(json.dumps(another_seed(saved)))
    shown = subprocess.run([*cli, "scenario", str(path)], check=True, capture_output=True, text=True)
    assert json.loads(shown.stdout) == expected
    path.write_text(json.dumps(old_record(saved)))
    refused = subprocess.run([*cli, "scenario", str(path)], capture_output=True, text=True)
    assert refused.returncode != 0 and "Traceback" not in refused.stderr
    assert "--draws-from-seed" in refused.stderr and len(refused.stderr.strip().splitlines()) == 1
    shown = subprocess.run([*cli, "scenario", "--draws-from-seed", str(path)], check=True, capture_output=True,
                           text=True)  # fmt: skip
    assert json.loads(shown.stdout) == expected


@pytest.mark.parametrize("agents", [["random", "random", "random"], ["value", "area", "random"]])
def test_an_evaluations_games_replay_from_their_records(tmp_path, agents):
    """games.jsonl's scenarios, played on the batched engine (random) or game by game: each replays to the game's
    result with its seed changed."""
    evaluation = evaluate_lineup(agents, 12, seed=3, env_options={"players": 3, "first_edition": True}, workers=1,
                                 progress=False)  # fmt: skip
    write_all(evaluation, tmp_path)
    lines = [json.loads(line) for line in (tmp_path / "games.jsonl").read_text().splitlines()]
    assert len(lines) == 12
    for line in lines:
        scenario = line["scenario"]
        assert "deck" in scenario["start"]
        final = run_scenario(another_seed(scenario)).final
        assert list(final["winners"]) == list(line["winners"])
        assert list(final["support"][:3]) == list(line["support"])


def test_the_replay_viewer_plays_an_old_record_from_its_seed_with_a_warning(tmp_path):
    from revolution_env.frontends.web.replays import ReplayLibrary

    game = reshuffled_games(1)[0]
    (tmp_path / "old.json").write_text(json.dumps(old_record(export_game(game))))
    (tmp_path / "new.json").write_text(json.dumps(export_game(game)))
    library = ReplayLibrary([tmp_path])
    files = {f["path"]: f["id"] for f in library.files()}
    old, new = (library.replay(files[name], 0) for name in ("old.json", "new.json"))
    assert old["state"] == new["state"] == state_dict(game)
    assert any("seed" in w for w in old["warnings"]) and not new["warnings"]
