"""The heuristic bots' decisions (revolution_env/agents/decisions.py, compiled by .compiled where Numba is installed):
the decisions recorded in tests/golden/bots/ (scripts/make_golden_bots.py), compiled, as plain Python beside the
compiled code (while Numba builds it) and without Numba; the batched call equals one call per row; NumPy's own
draws; and the background build's bookkeeping (the lock, the switch once the cache holds the code)."""

from __future__ import annotations

import functools
import importlib.util
import os
import sys
import time
import types
from pathlib import Path

import numpy as np
import pytest
from plain_python import run_without_numba

import revolution_env
from revolution_env.agents import compiled, decisions
from revolution_env.agents.heuristics import HEURISTICS, HeuristicBot, ValueBot
from revolution_env.agents.loading import load_agent
from revolution_env.agents.variants import VARIANTS as BOT_VARIANTS
from revolution_env.arena.runner import GameRunner

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
GOLDEN = sorted(Path(ROOT, "tests", "golden", "bots").glob("*.json"))
PLAIN_GAMES = ("3p_small_board", "3p_styles", "2p_first_edition_bonus")  # as plain Python: a few, for time

needs_numba = pytest.mark.skipif(not compiled.COMPILED, reason="Numba is not installed (pip install -e '.[fast]')")


@pytest.fixture(scope="module")
def built():
    """The compiled bots in this process (or a background build waited for), where Numba is installed."""
    if compiled.COMPILED:
        compiled.build(ValueBot(players=3))


@functools.cache
def golden_games():
    """``scripts/make_golden_bots.py`` as a module: its ``decisions`` plays a recorded game again."""
    spec = importlib.util.spec_from_file_location(
        "make_golden_bots", os.path.join(ROOT, "scripts", "make_golden_bots.py")
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def replay(path: Path) -> int:
    """Play the recorded game of ``path`` again with its bots: every decision's action, the observation it was
    made on and the bot's random generator after it as recorded. Returns the decisions compared."""
    make = golden_games()
    game = make.load(path)
    recorded = game["decisions"]
    n = 0
    for n, (line, bot, action) in enumerate(make.decisions(game), 1):
        got = line.format(make.action_text(action))
        assert n <= len(recorded), f"{path.name}: more decisions than recorded ({len(recorded)})"
        assert got == recorded[n - 1], (
            f"{path.name}, decision {n - 1} ({bot.name}): SEAT KIND ACTION OBSERVATION DRAWS\n"
            f"  recorded {recorded[n - 1]}\n  now      {got}\n(if intended: scripts/make_golden_bots.py)"
        )
    assert n == len(recorded), f"{path.name}: {n} decisions, {len(recorded)} recorded"
    return n


def test_the_recorded_games_cover_every_bot_variant_and_decision():
    make = golden_games()
    assert {p.stem for p in GOLDEN} == set(make.GAMES) and set(PLAIN_GAMES) <= set(make.GAMES)
    seats, kinds, players, options = set(), set(), set(), set()
    for path in GOLDEN:
        game = make.load(path)
        seats |= {name for name in game["seats"] if not make.is_search(name)}
        players.add(game["options"]["players"])
        options |= {k for k, v in game["options"].items() if v is True} | ({"board"} if game["board"] else set())
        kinds |= {int(line.split()[1]) for line in game["decisions"]}
    assert seats == set(HEURISTICS) | set(BOT_VARIANTS)
    assert players == {2, 3, 4} and options == {"first_edition", "bid_refunds", "area_control_bonus", "board"}
    assert kinds == {1, 2, 3, 4, 5, 6}, kinds  # bid, guy, spy, apothecary (both picks), remove


@pytest.mark.parametrize("path", GOLDEN, ids=[p.stem for p in GOLDEN])
def test_the_bots_decide_as_recorded(path):
    """Whole games of every variant, every bot seated (``scripts/make_golden_bots.py``): the same decisions, the
    same draws (compiled where Numba is installed)."""
    assert replay(path) > 0


def test_the_bots_decide_as_recorded_as_plain_python():
    """REVOLUTION_NO_NUMBA=1 (a fresh interpreter): a few of the recorded games, the same decisions and draws."""
    code = (
        "from revolution_env.common.jit import COMPILED\n"
        "from tests.test_compiled_bots import GOLDEN, PLAIN_GAMES, replay\n"
        "assert not COMPILED\n"
        "for path in GOLDEN:\n"
        "    if path.stem in PLAIN_GAMES:\n"
        "        replay(path)\n"
    )
    run_without_numba(code)


@needs_numba
def test_beside_the_compiled_code_the_bots_decide_as_recorded_as_plain_python(built, monkeypatch):
    """While Numba builds the bots (here: a build that failed), they play the same functions as plain Python, and
    the search's judge values bids with them as compiled."""
    bot = ValueBot(players=2)
    env = revolution_env.env(players=2)
    env.reset(seed=4)
    observation = env.last()[0]
    space, held = env.action_space(env.agent_selection), bot.view(observation).tokens[0]
    bids = np.stack([bot.codec.bid_counts(space.sample(observation["action_mask"]), held) for _ in range(5)])
    bot.reset(3)
    assert "value_per_sample" in compiled._Build.ready
    machine_code = bot.bid_values(observation, bids)
    monkeypatch.setattr(
        compiled, "_Build", type("B", (), {**vars(compiled._Build), "ready": frozenset(), "failed": True})
    )
    rows = compiled.as_python("decide_rows")
    assert isinstance(rows, types.FunctionType) and isinstance(rows.__globals__["plan_bid"], types.FunctionType)
    called = []
    monkeypatch.setattr(compiled, "decide_rows", lambda *args: called.append(args))
    monkeypatch.setattr(compiled, "value_per_sample", lambda *args: called.append(args))
    bot.reset(3)
    python = bot.bid_values(observation, bids)
    assert np.array_equal(python[0], machine_code[0]) and np.array_equal(python[1], machine_code[1])
    for path in GOLDEN:
        if path.stem in PLAIN_GAMES[:2]:
            replay(path)
    assert not called


def test_a_batch_is_the_rows_in_turn(built):
    """act_batch (the vector env's call) draws as one act call per row, in row order."""
    rows = []
    runner = GameRunner([load_agent("random", players=3) for _ in range(3)], {"players": 3})
    for seed in range(3):
        runner.play(seed, on_step=lambda env, agent, obs, info, action: rows.append((obs, info)))
    for name in ("value", "bargain", "area"):
        one, many = load_agent(name, players=3), load_agent(name, players=3)
        one.reset(5)
        many.reset(5)
        singles = np.stack([one.act(obs, info) for obs, info in rows])
        batch = many.act_batch(
            np.stack([o["observation"] for o, _ in rows]),
            np.stack([o["action_mask"] for o, _ in rows]).astype(bool),
            np.array([int(i["decision"]) for _, i in rows]),
        )
        assert np.array_equal(batch, singles), name
        assert one.rng.bit_generator.state == many.rng.bit_generator.state


@needs_numba
def test_the_compiled_draws_are_numpys_own():
    """The compiled ``multinomial`` and ``dirichlet`` (the beta branch of small alphas too) draw the same numbers,
    in the same order, as NumPy's, and leave the generator in the same state."""
    check = np.random.default_rng(0)
    for case in range(200):
        seed = int(check.integers(2**31))
        n, d = int(check.integers(0, 30)), int(check.integers(1, 10))
        p = check.dirichlet(np.ones(d))
        ours, theirs = np.random.default_rng(seed), np.random.default_rng(seed)
        out = np.empty(d, dtype=np.int64)
        decisions.multinomial(ours, n, p, out)
        assert np.array_equal(out, theirs.multinomial(n, p)), case
        alpha = check.uniform(0.01, 0.09 if case % 2 else 3.0, size=d)  # beta variates, then gamma variates
        got = np.empty(d)
        decisions.dirichlet(ours, alpha, got)
        assert np.array_equal(got, theirs.dirichlet(alpha)), case
        assert ours.bit_generator.state == theirs.bit_generator.state, case


def test_a_bot_without_a_style_is_refused():
    with pytest.raises(TypeError, match="style must be one of value, bargain, area, got None"):
        HeuristicBot(players=3)


# --- the background build ------------------------------------------------------------------------------------


def test_the_build_lock_keeps_a_second_builder_out_and_is_taken_back_when_stale(tmp_path):
    lock = tmp_path / "sub" / compiled.LOCK_NAME
    assert compiled._take_lock(lock)
    assert not compiled._take_lock(lock)  # held by a live process (this one)
    lock.write_text(f"{os.getpid()} {time.time() - compiled.STALE_BUILD - 1}")
    assert compiled._take_lock(lock)  # too old: abandoned
    lock.write_text("999999999 0")  # no such process
    assert compiled._take_lock(lock)


@needs_numba
def test_the_bots_play_as_plain_python_until_the_background_build_is_done(monkeypatch, tmp_path):
    started = []

    class FakeBuild:
        def __init__(self, args, **kwargs):
            started.append(args)
            self.code = None

        def poll(self):
            return self.code

    cached = {"yes": False}
    monkeypatch.setattr(
        compiled,
        "_Build",
        type("B", (), {**vars(compiled._Build), "ready": frozenset(), "failed": False, "proc": None}),
    )
    monkeypatch.setattr(compiled, "_cache_folder", lambda: tmp_path)
    monkeypatch.setattr(compiled, "_in_cache", lambda entry, signature: cached["yes"])
    monkeypatch.setattr(compiled.subprocess, "Popen", FakeBuild)
    monkeypatch.setattr(compiled, "_loaded", lambda entry: False)
    bot = ValueBot(players=3)
    played = []
    python_rows = compiled.as_python("decide_rows")
    monkeypatch.setattr(compiled, "as_python", lambda name: lambda *a: played.append("python") or python_rows(*a))
    monkeypatch.setattr(compiled, "decide_rows", lambda *a: played.append("compiled") or 0)
    env = revolution_env.env(players=3)
    env.reset(seed=0)
    obs, _, _, _, info = env.last()

    def ask():
        compiled._Build.next_check = 0.0
        bot.act(obs, info)
        return "decide_rows" in compiled._Build.ready

    assert not ask() and played == ["python"]  # nothing cached: a build starts in the background ...
    assert len(started) == 1 and started[0][1:3] == ["-m", "revolution_env.agents.build_bots"]
    assert (tmp_path / compiled.LOCK_NAME).exists()
    assert not ask() and len(started) == 1 and played[-1] == "python"  # ... once
    compiled._Build.proc.code = 0
    cached["yes"] = True
    assert ask() and played[-1] == "compiled"  # done and cached: the compiled bots play from now on


class EndingBuild:
    """A stand-in for the background build's process: ends (exit 0) after ``polls`` polls; counts its reaping."""

    polls = 3
    reaped = 0

    def __init__(self, args, **kwargs):
        self.left = EndingBuild.polls

    def poll(self):
        self.left -= 1
        if self.left > 0:
            return None
        EndingBuild.reaped += 1
        return 0


def _fake_build(monkeypatch, tmp_path, cached):
    monkeypatch.setattr(
        compiled,
        "_Build",
        type("B", (), {**vars(compiled._Build), "ready": frozenset(), "failed": False, "proc": None}),
    )
    monkeypatch.setattr(compiled, "_cache_folder", lambda: tmp_path)
    monkeypatch.setattr(compiled, "_in_cache", lambda entry, signature: cached["yes"])
    monkeypatch.setattr(compiled.subprocess, "Popen", EndingBuild)
    monkeypatch.setattr(compiled, "_loaded", lambda entry: False)
    EndingBuild.reaped = 0


@needs_numba
def test_the_background_build_is_reaped_when_it_ends_though_the_cache_says_so_first(monkeypatch, tmp_path):
    """A `[python3] <defunct>` build stayed for the whole of a run: the cache held the bots before anybody polled
    the finished process, so nobody did."""
    cached = {"yes": False}
    _fake_build(monkeypatch, tmp_path, cached)
    bot = ValueBot(players=3)
    compiled._Build.next_check = 0.0
    assert not compiled.ready(bot)  # the build starts
    build = compiled._Build.proc
    build.left = 1  # it has ended, and filled the cache
    cached["yes"] = True
    compiled._Build.next_check = 0.0
    assert compiled.ready(bot)
    assert compiled._Build.proc is None and EndingBuild.reaped == 1


@needs_numba
def test_the_bots_decide_compiled_before_the_build_has_compiled_the_search_and_it_is_reaped_after(
    monkeypatch, tmp_path
):
    """The background build compiles the bots' decisions, then the search's entry point: the bots play compiled
    as soon as the first is in the cache, and the build is reaped when it ends though nobody asks for the second."""
    cached: set[str] = set()
    _fake_build(monkeypatch, tmp_path, {"yes": False})
    monkeypatch.setattr(compiled, "_in_cache", lambda entry, signature: entry in cached)
    monkeypatch.setattr(EndingBuild, "polls", 10**6)
    bot = ValueBot(players=3)

    def ask(entry="decide_rows"):
        compiled._Build.next_check = 0.0
        return compiled.ready(bot, entry)

    assert not ask()  # the build starts
    build = compiled._Build.proc
    cached.add("decide_rows")
    assert ask() and compiled._Build.proc is build  # the bots' decisions: compiled from now on; the build goes on
    assert not ask("value_per_sample")  # the search: as plain Python until its entry point is in the cache
    build.left = 1  # the build has ended
    assert ask() and compiled._Build.proc is None and EndingBuild.reaped == 1
    cached.add("value_per_sample")
    assert ask("value_per_sample")


@needs_numba
def test_revolution_train_starts_the_build_before_torch_and_the_wait_counts_from_then(monkeypatch, tmp_path):
    """``revolution train`` starts the background build as soon as it has read the config (before torch loads and
    the run builds its games and model, which the build then overlaps), and only where the run plays the bots."""
    from revolution_training.cli import start_compiling
    from revolution_training.config import TrainConfig

    cached = {"yes": False}
    _fake_build(monkeypatch, tmp_path, cached)
    started = []
    monkeypatch.setattr(EndingBuild, "__init__", lambda self, args, **kwargs: started.append(args))
    start_compiling(
        TrainConfig(
            imitation={"teacher": None}, league={"heuristics": ["random"]}, evaluation={"opponents": ["random"]}
        )
    )
    assert not started and compiled.building_since() is None  # no bot in this run: nothing to build
    start_compiling(TrainConfig(imitation={"teacher": "value"}, league={"heuristics": ["random", "bargain"]}))
    assert len(started) == 1 and started[0][1:3] == ["-m", "revolution_env.agents.build_bots"]
    since = compiled.building_since()
    assert since is not None and since <= time.monotonic()


@needs_numba
def test_waiting_for_the_bots_reports_progress_until_the_build_is_done(monkeypatch, tmp_path):
    cached = {"yes": False}
    _fake_build(monkeypatch, tmp_path, cached)
    monkeypatch.setattr(EndingBuild, "polls", 8)
    monkeypatch.setattr(EndingBuild, "poll", lambda self: _poll_and_cache(self, cached))
    lines: list[str] = []
    assert compiled.wait_until_ready(ValueBot(players=3), lines.append, every=0.3)
    assert lines[0].startswith("compiling the heuristic bots into Numba's cache")
    assert any("still compiling" in line for line in lines[1:-1]) and lines[-1].startswith("compiled the heuristic")
    assert compiled._Build.proc is None and "decide_rows" in compiled._Build.ready


def _poll_and_cache(build, cached):
    build.left -= 1
    if build.left > 0:
        return None
    cached["yes"] = True
    return 0


@needs_numba
def test_a_build_that_cannot_cache_leaves_the_bots_playing_as_plain_python_with_a_warning(monkeypatch, tmp_path):
    class DoneBuild:
        def __init__(self, args, **kwargs):
            pass

        def poll(self):
            return 0

    monkeypatch.setattr(
        compiled,
        "_Build",
        type("B", (), {**vars(compiled._Build), "ready": frozenset(), "failed": False, "proc": None}),
    )
    monkeypatch.setattr(compiled, "_cache_folder", lambda: tmp_path)
    monkeypatch.setattr(compiled, "_in_cache", lambda entry, signature: False)
    monkeypatch.setattr(compiled.subprocess, "Popen", DoneBuild)
    monkeypatch.setattr(compiled, "_loaded", lambda entry: False)
    bot = ValueBot(players=3)
    compiled._Build.next_check = 0.0
    assert not compiled.ready(bot)
    compiled._Build.next_check = 0.0
    with pytest.warns(UserWarning, match="could not cache them.*play as plain Python"):
        assert not compiled.ready(bot)
    assert compiled._Build.failed
    played = []
    python_rows = compiled.as_python("decide_rows")
    monkeypatch.setattr(compiled, "as_python", lambda name: lambda *a: played.append(name) or python_rows(*a))
    env = revolution_env.env(players=3)
    env.reset(seed=1)
    obs, _, _, _, info = env.last()
    bot.act(obs, info)
    assert played == ["decide_rows"]  # quietly


@needs_numba
@pytest.mark.parametrize("source", ["vector env", "gym env", "writable"])
def test_masks_cross_into_the_compiled_code_as_the_build_compiled_them(monkeypatch, source):
    """The build compiles ``decide_rows`` for one set of argument types; a call with any other (the envs hand
    out read-only masks, a caller may pass writable ones) would compile the bots' entry point a second time on a
    fresh machine, before the main job's first decision."""
    bot = ValueBot(players=3)
    typeof = compiled.decide_rows.typeof_pyval
    built = tuple(typeof(a) for a in compiled._entries(bot)["decide_rows"])
    if source == "vector env":
        env = revolution_env.vector_env(4, players=3, opponents="random")
        obs, _ = env.reset(seed=0)
        masks = env.action_masks()
        assert not masks.flags.writeable
    elif source == "gym env":
        env = revolution_env.gym_env(players=3)
        obs, _ = env.reset(seed=0)
        obs, masks = obs[None], env.action_masks()[None]
    else:
        env = revolution_env.vector_env(4, players=3, opponents="random")
        obs, _ = env.reset(seed=0)
        masks = env.action_masks().copy()
    seen = []
    monkeypatch.setattr(compiled, "decide_rows", lambda *args: seen.append(args) or 0)
    monkeypatch.setattr(compiled, "ready", lambda bot: True)
    compiled.decide(bot, obs, masks)
    assert tuple(typeof(a) for a in seen[0]) == built


@needs_numba
def test_sigterm_stops_the_background_build_at_once(tmp_path):
    """Ctrl-C and SIGTERM wait for a compilation to end (common.jit), but not in the build process, which only
    compiles: stopped there, it leaves nothing half-built that would run."""
    import signal
    import subprocess

    env = {**os.environ, "NUMBA_CACHE_DIR": str(tmp_path / "cache")}
    proc = subprocess.Popen([sys.executable, "-m", "revolution_env.agents.build_bots"], env=env)
    time.sleep(4.0)  # importing, then compiling
    proc.send_signal(signal.SIGTERM)
    start = time.monotonic()
    assert proc.wait(timeout=60) == -signal.SIGTERM
    assert time.monotonic() - start < 5.0
