"""Speed of random legal play, beside PettingZoo's connect_four and OpenSpiel's goofspiel in the same run.

    python scripts/benchmark.py                 # 3 players through the AEC API, ~10 s per measurement
    python scripts/benchmark.py --seconds 3 --players 2 3 4 --engine
    python scripts/benchmark.py --seconds 5 --vector 1 64 1024 4096   # also the single-agent and vector envs
    python scripts/benchmark.py --seconds 5 --vector 1024 --tokens       # ... and the vector env's token mode
    python scripts/benchmark.py --seconds 5 --vector 1 1024 --first-edition   # both envs in the first edition
    python scripts/benchmark.py --seconds 5 --bots                         # the heuristic bots' decisions
    python scripts/benchmark.py --seconds 5 --vector 1 64 1024 4096 --train 40960   # the README's table

``--vector N ...`` adds, for the first of ``--players``, the scalar single-agent env (the learner plays one seat,
``random`` opponents the others; one decision of the learner is one step) and ``revolution_env.vector_env`` at each
batch size N (the same, N games at once; the learner's actions are drawn from the masks in batch, as a policy's
forward pass would give them): learner steps/s and games/s, the ratio to the scalar single-agent env, and the
memory of the largest batch in flight (tracemalloc: the arrays of N games after some steps). ``--tokens`` adds the
vector env's token mode at the largest N (a learner step is one token of a bid, or one other decision).
``--first-edition`` plays the single-agent and vector envs in the first edition (the Card space and its deck).
``--bots`` times the heuristic bots (compiled where Numba is installed) on states of real games of the first of
``--players``: each style decides every recorded state in batches, as a league's opponent does (thread CPU time,
bids apart from the other decisions).
``--train STEPS`` trains ``configs/default.yaml`` (no imitation, no evaluations) for STEPS learner steps in three ways
and reports their learner steps/s while they train (start-up and tear-down apart): as configured (the training
speed of the main job); with every opponent seat ``random`` (what the learner itself costs: forward passes, SB3's
buffer, PPO's updates; the difference is what the league's opponents cost); and with PPO's updates and the
opponents on one thread, whose seconds are the run's work: no schedule on this machine's cores can beat that work
shared perfectly among them, so ``cores x`` that rate bounds the first (the first and the third are each the mean
of two runs in the order A B B A, since a run's rate moves with what ran before it). A last run trains it with
``selfplay: {enabled: true}``
(every seat of every game the learner): its learner steps are rows, the real decisions among them counted apart.

``--load N`` measures everything twice, alone and then beside N busy processes that the script starts and stops
(pure-Python loops, ``while True: pass``: a reproducible stand-in for a machine shared with others), and shows both
side by side with their ratio. Thread counts are the libraries' own (one per core this process may use) and the
user's where set (``OMP_NUM_THREADS``, ``REVOLUTION_THREADS``, ...; anything but a positive integer is refused).

Every measurement plays whole games with uniformly random legal moves for a fixed time on one core and reports
decisions per second (one agent decision = one AEC step; in goofspiel one player's card choice) and games per
second. The ratios compare Revolution! with the reference games measured in the same process. Every game draws
its moves the cheapest way its API allows, and all the same way: a uniform index into the legal actions, from
floats that one NumPy generator draws 4,096 at a time (:class:`UniformIndex`). OpenSpiel's goofspiel (13 cards,
as many players as the first of ``--players``): ``legal_actions(p)`` of every player, then ``apply_actions``; its
chance nodes (the point card turned up, uniform over those left) the same way. PettingZoo's connect_four: the
indices of the observation's ``action_mask``. Revolution!'s AEC env and the single-agent env: every dimension of
the ``MultiDiscrete`` action uniform among the values its part of the mask allows, all dimensions in one
vectorised draw (``MaskedMultiDiscrete.sample``); the vector env: the same for all its games in one draw
(:func:`batched_sampler`, which reads the rows that choose from the step's ``info["decision"]``). With ``--vector``
and OpenSpiel installed, the vector env at the largest N and goofspiel are also measured in turn, in ten pairs of
alternating blocks (:func:`alternating`), for a ratio that a drifting machine moves less. OpenSpiel is optional
(``pip install -e .[bench]``).
"""

from __future__ import annotations

import argparse
import contextlib
import itertools
import json
import platform
import subprocess
import sys
import time
import warnings
from collections.abc import Iterator
from typing import Any

import numpy as np


def measure(play_game, seconds: float) -> dict[str, float]:
    """Run ``play_game(i) -> decisions`` until ``seconds`` have passed (after one warm-up game)."""
    decisions, games, elapsed = game_runner(play_game)(seconds)
    return {"decisions_per_s": decisions / elapsed, "games_per_s": games / elapsed, "games": games}


def game_runner(play_game):
    """``run(seconds) -> (decisions, games, elapsed)``: whole games of ``play_game(i) -> decisions`` (``i`` counting
    on from one call to the next) until ``seconds`` have passed; one warm-up game is played here."""
    play_game(-1)
    played = itertools.count()

    def run(seconds: float) -> tuple[int, int, float]:
        decisions = games = 0
        start = time.perf_counter()
        while time.perf_counter() - start < seconds:
            decisions += play_game(next(played))
            games += 1
        return decisions, games, time.perf_counter() - start

    return run


def alternating(a, b, seconds: float, pairs: int = 10) -> dict[str, float]:
    """The rate of runner ``a`` over that of runner ``b`` (``run(seconds) -> (decisions, games, elapsed)``, as
    :func:`game_runner` and :func:`vector_runner` make them), measured in ``pairs`` pairs of blocks of ``seconds / (2
    * pairs)`` each, in the order a b, b a, a b, ...: one ratio per pair, so that a machine whose speed drifts (a shared
    host's: this one's moves by a fifth between runs) moves both sides of each ratio alike. The median of the ratios,
    the lowest and the highest."""
    block = seconds / (2 * pairs)
    ratios = []
    for k in range(pairs):
        first, second = (a, b) if k % 2 == 0 else (b, a)
        rates = {}
        for run in (first, second):
            decisions, _, elapsed = run(block)
            rates[run] = decisions / elapsed
        ratios.append(rates[a] / rates[b])
    return {"ratio": float(np.median(ratios)), "low": min(ratios), "high": max(ratios), "pairs": pairs}


class UniformIndex:
    """Uniform indices below ``n``, the cheapest way in Python: floats drawn 4,096 at a time by one NumPy generator,
    then ``int(u * n)`` per index (a call of ``Generator.integers`` costs a few microseconds, ``choice`` tens)."""

    def __init__(self, seed: int = 0, block: int = 4096) -> None:
        self.rng = np.random.default_rng(seed)
        self.block = block
        self.floats: list[float] = []

    def __call__(self, n: int) -> int:
        if not self.floats:
            self.floats = self.rng.random(self.block).tolist()
        return int(self.floats.pop() * n)


def aec_random_play(make_env, discrete: bool = False):
    """Random legal play through the AEC API: a ``Discrete`` action (``discrete``: connect_four) as a uniform index
    into the legal actions of the mask; a ``MultiDiscrete`` one (ours) uniform per dimension among the values its
    part of the mask allows (``MaskedMultiDiscrete.sample``, all dimensions in one draw)."""
    env = make_env()
    pick = UniformIndex()

    def act(agent, mask: np.ndarray) -> Any:
        if discrete:
            legal = mask.nonzero()[0]
            return int(legal[pick(len(legal))])
        return env.action_space(agent).sample(mask)

    def play(i: int) -> int:
        env.reset(seed=i + 1000)
        n = 0
        for agent in env.agent_iter():
            obs, _, term, trunc, _ = env.last()
            action = None if term or trunc else act(agent, obs["action_mask"])
            env.step(action)
            n += action is not None
        return n

    return play


def engine_random_play(rules):
    from revolution_env.engine import BID, Game, random_bids, random_choice

    def play(i: int) -> int:
        game = Game.new(rules, i + 1000)
        rng = np.random.default_rng(i + 1000)
        n = 0
        while game.decision is not None:
            if game.decision.kind == BID:
                n += len(game.decision.seats)
                game.submit_bids(random_bids(game, rng))
            else:
                n += 1
                game.choose(random_choice(game, rng))
        return n

    return play


def single_agent_random_play(players: int, opponents: str = "random", **rules):
    """The scalar single-agent path: ``gym_env`` where it exists, else training's ``SelfPlayEnv`` (the env
    ``revolution train`` steps today), with random opponents; the learner samples its mask. ``rules``: rule options
    (``first_edition=True``)."""
    import revolution_env
    from revolution_env import MaskedMultiDiscrete

    if hasattr(revolution_env, "gym_env"):
        env = revolution_env.gym_env(players=players, opponents=opponents, **rules)
    else:
        from revolution_training.selfplay import make_selfplay_env

        env = make_selfplay_env({"players": players, **rules}, None, [opponents])
    space = MaskedMultiDiscrete(env.action_space.nvec, seed=0)

    def play(i: int) -> int:
        env.reset(seed=i + 1000)
        n, done = 0, False
        while not done:
            _, _, terminated, truncated, _ = env.step(space.sample(env.action_masks().astype(np.int8)))
            n += 1
            done = terminated or truncated
        return n

    return play


def batched_sampler(env, seed: int = 0):
    """Uniform legal actions for every game at once, from the masks: a token dimension whose mask allows more than
    target 0 (a token the seat holds, while it bids) takes a uniform legal target of its type (the rows of one token
    type share one legal set), dimension 0 a uniform allowed choice where the decision has one. The cheapest NumPy
    draw measured here (``docs/experiments.md``, "Speed"): a float only for each held token (a twentieth of the rows'
    token dimensions), gathered from a flat table of the types' legal targets, and scattered into zeros; the rows
    with a choice read from the step's ``info["decision"]``, as a policy reads its infos, where it is given (a
    strided ``any`` over the masks costs a fifth of the draw)."""
    from revolution_env.engine import BID

    c = env.codec
    rng = np.random.default_rng(seed)
    n = env.num_envs
    dim_type = np.repeat(np.arange(3), c.n_tokens)
    targets = [np.flatnonzero(c.layout.legal[:, t]) for t in range(3)]
    # per token dimension, the legal targets of its type padded to one width (flat, a row per dimension), and how
    # many there are
    width = max(len(t) for t in targets)
    table = np.stack([np.resize(targets[t], width) for t in dim_type]).ravel()
    count = np.array([len(targets[t]) for t in dim_type], dtype=np.float64)
    first = np.arange(c.K) * width

    # a target that takes every token type (other than 0): a dimension allows it exactly when a held token's is
    everywhere = int(next(j for j in range(1, c.T) if c.layout.legal[j].all()))
    D = len(c.nvec)  # 1 + K

    def act(decisions: np.ndarray | None = None) -> np.ndarray:
        """The actions; ``decisions``: the step's ``info["decision"]``, where the rows that choose are read (else
        found in the masks, a third of the draw's time)."""
        masks = env.action_masks()
        held = np.flatnonzero(masks[:, c.C + everywhere :: c.T][:, : c.K])  # the held tokens of bidding rows
        rows, dims = np.divmod(held, c.K)
        out = np.zeros((n, D), dtype=np.int64)
        pick = (rng.random(len(dims)) * count[dims]).astype(np.intp)
        pick += first[dims]
        out.reshape(-1)[held + rows + 1] = table[pick]  # row * D + 1 + dim
        if decisions is None:
            choosing = np.flatnonzero(masks[:, 1 : c.C].any(1))
        else:  # a non-bid decision (Guy, Spy, Apothecary, Remove) always offers an option
            choosing = np.flatnonzero(decisions > int(BID))
        if len(choosing):  # noise in float32: half float64's bytes, so faster
            score = rng.random((len(choosing), c.C), dtype=np.float32)
            score += masks[choosing, : c.C]
            out[choosing, 0] = score.argmax(1)
        return out

    return act


def token_sampler(env, seed: int = 0):
    """A uniform legal token (or choice) for every game at once: the token mode's Discrete action, from the masks."""
    rng = np.random.default_rng(seed)

    def act(decisions: np.ndarray | None = None) -> np.ndarray:
        masks = env.action_masks()
        return (rng.random(masks.shape) + masks).argmax(1)

    return act


def vector_runner(players: int, num_envs: int, opponents: str = "random", action_mode: str = "bid", **rules):
    """``run(seconds) -> (learner steps, games, elapsed)``: ``vector_env`` with random opponents stepped until
    ``seconds`` have passed, the learner's actions drawn from the masks in batch (in the token mode, one token a
    step: a learner step is a token); made and warmed up here. ``rules``: rule options (``first_edition=True``)."""
    import revolution_env

    env = revolution_env.vector_env(
        num_envs, players=players, opponents=opponents, keep_finished=0, action_mode=action_mode, **rules
    )
    info = env.reset(seed=0)[1]
    act = token_sampler(env) if action_mode == "tokens" else batched_sampler(env)
    for _ in range(3):  # warm-up (numba's compiled loops load from its cache)
        info = env.step(act(info["decision"]))[4]

    def run(seconds: float) -> tuple[int, int, float]:
        nonlocal info
        steps = games = 0
        start = time.perf_counter()
        while time.perf_counter() - start < seconds:
            _, _, terminated, truncated, info = env.step(act(info["decision"]))
            steps += num_envs
            games += int((terminated | truncated).sum())
        return steps, games, time.perf_counter() - start

    return run


def vector_random_play(
    players: int, num_envs: int, seconds: float, opponents: str = "random", action_mode: str = "bid", **rules
) -> dict[str, float]:
    """:func:`vector_runner` for ``seconds``: learner steps/s and games/s."""
    steps, games, elapsed = vector_runner(players, num_envs, opponents, action_mode, **rules)(seconds)
    return {"decisions_per_s": steps / elapsed, "games_per_s": games / elapsed, "games": games}


def vector_memory(players: int, num_envs: int, steps: int = 30, **rules) -> dict[str, float]:
    """Bytes held by ``num_envs`` games in flight (tracemalloc: after ``steps`` steps, and the peak)."""
    import tracemalloc

    import revolution_env

    tracemalloc.start()
    env = revolution_env.vector_env(num_envs, players=players, opponents="random", **rules)
    env.reset(seed=0)
    act = batched_sampler(env)
    for _ in range(steps):
        env.step(act())
        env.pop_finished()  # the finished games' records are part of what a run holds
    current, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return {"current_bytes": current, "peak_bytes": peak}


def bot_decisions(players: int, seconds: float, games: int = 256, steps: int = 60) -> dict[str, dict[str, float]]:
    """Microseconds of thread CPU time a decision of each heuristic style, bids and other decisions apart, on the
    states of ``games`` games of ``players`` players (``vector_env``, ``value`` in the learner's seat against
    ``value`` and ``bargain``, ``steps`` steps): each style decides the recorded states of a kind in one
    ``act_batch`` call, again and again for ``seconds`` / 6. Where Numba's cache lacks the compiled bots, their
    build first, so that no figure is of the plain Python they play meanwhile; with ``REVOLUTION_NO_NUMBA=1``, the
    figures of plain Python."""
    import revolution_env
    from revolution_env.agents.base import act_batch
    from revolution_env.agents.compiled import COMPILED, wait_until_ready
    from revolution_env.agents.loading import load_agent
    from revolution_env.engine import Decision

    teacher = load_agent("value", players=players)
    if COMPILED:
        wait_until_ready(teacher)
    env = revolution_env.vector_env(games, players=players, opponents=["value", "bargain"], keep_finished=0)
    teacher.reset(1)
    obs, info = env.reset(seed=0)
    states: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
    for _ in range(steps):
        masks, kinds = env.action_masks(), info["decision"]
        states.append((obs.copy(), masks.copy(), kinds.copy()))
        obs, _, _, _, info = env.step(act_batch(teacher, obs, masks, kinds))
    env.close()
    every_obs, every_mask, every_kind = (np.concatenate(part) for part in zip(*states))
    out: dict[str, dict[str, float]] = {}
    for style in ("value", "bargain", "area"):
        bot = load_agent(style, players=players)
        bot.reset(2)
        for label, rows in (("bid", every_kind == Decision.BID), ("other", every_kind != Decision.BID)):
            o, m, d = every_obs[rows], every_mask[rows], every_kind[rows]
            act_batch(bot, o[:1], m[:1], d[:1])  # loads the compiled code from the cache
            done, start = 0, time.thread_time()
            while time.thread_time() - start < seconds / 6:
                act_batch(bot, o, m, d)
                done += len(d)
            out[f"{style} {label}"] = {"us_per_decision": 1e6 * (time.thread_time() - start) / done, "states": len(d)}
    return out


def goofspiel_random_play(players: int = 3, cards: int = 13):
    """OpenSpiel's goofspiel (C++): every player's card a uniform index into its legal actions; the chance node
    (the point card turned up) likewise, its outcomes being uniform (checked on the first)."""
    import pyspiel

    game = pyspiel.load_game("goofspiel", {"players": players, "num_cards": cards})
    first = game.new_initial_state()
    if first.is_chance_node() and len({p for _, p in first.chance_outcomes()}) != 1:
        raise RuntimeError("goofspiel's chance outcomes are not uniform: draw them by their probabilities")
    pick = UniformIndex()
    seats = range(game.num_players())

    def play(i: int) -> int:
        state = game.new_initial_state()
        n = 0
        while not state.is_terminal():
            if state.is_chance_node():
                outcomes = state.chance_outcomes()
                state.apply_action(outcomes[pick(len(outcomes))][0])
            else:
                actions = []
                for p in seats:
                    legal = state.legal_actions(p)
                    actions.append(legal[pick(len(legal))])
                n += len(actions)
                state.apply_actions(actions)
        return n

    return play


# The league of configs/default.yaml with every opponent seat `random` (drawn in batch, nearly free): what the
# learner itself costs (its forward passes, SB3's buffer, PPO's updates) beside the default league's opponents.
RANDOM_LEAGUE = {"league": {"heuristics": ["random"], "p_latest": 0.0, "p_past": 0.0, "p_heuristics": 1.0}}


def default_training(steps: int, one_core: bool = False, **overrides) -> dict[str, float]:
    """Train configs/default.yaml (with ``overrides``) for ``steps`` learner steps in a scratch folder, evaluations
    and the imitation before PPO off (the imitation is a fixed cost, not a rate): PPO's learner steps/s
    while it trains (from ``learn()`` to the last save, the run's own figure) and the seconds of the rest of
    ``train()`` (start-up: imports, the league, the model; tear-down). ``one_core``: PPO's updates and the
    opponents on one thread, so that the run's seconds are its work."""
    import tempfile
    from pathlib import Path

    from revolution_training.config import load_config, merge
    from revolution_training.train import train

    from revolution_env.common.workers import environment

    config = load_config(Path(__file__).resolve().parent.parent / "configs" / "default.yaml")
    if config.mmd.magnet == "imitation":  # without the imitation, the magnet is the start, frozen: the same pass
        overrides = merge({"mmd": {"magnet": "latest", "magnet_every": steps + 1}}, overrides)
    off = {"evaluation": {"every": 0}, "imitation": {"teacher": None}}
    config = config.replace(**merge(merge({"total_steps": steps}, off), overrides))
    threads = {}
    if one_core:
        config = config.replace(torch_threads=1)
        threads = {"REVOLUTION_THREADS": "1"}  # the opponents' decisions one after the other
    with environment(threads), tempfile.TemporaryDirectory() as out:
        start = time.perf_counter()
        result = train(config, out=out)
        elapsed = time.perf_counter() - start
    rate = result.steps_per_second
    training = result.step / rate if rate > 0 else elapsed
    return {
        "decisions_per_s": rate,
        "games_per_s": float("nan"),
        "steps": result.step,
        "seconds": training,
        "other_seconds": elapsed - training,
    }


def selfplay_training(steps: int, **overrides) -> dict[str, float]:
    """``default_training`` with ``selfplay: {enabled: true}`` (the league's keys back to their defaults). A learner
    step is a row, a seat of a game: ``rows_per_s`` counts them all, ``decisions_per_s`` those with a real decision
    (a row that waits while another seat decides steps with the no-op), from the env's own count."""
    from unittest import mock

    import revolution_training.train as training
    from revolution_training.config import LEAGUE_OPPONENTS, merge

    made, make = [], training.make_vec_env

    def kept(*args):  # the run's env, for its count of real decisions
        made.append(make(*args))
        return made[-1]

    with mock.patch.object(training, "make_vec_env", kept):
        run = default_training(steps, **merge(merge(LEAGUE_OPPONENTS, {"selfplay": {"enabled": True}}), overrides))
    share = made[0].get_attr("decisions_made")[0] / run["steps"]
    return {**run, "rows_per_s": run["decisions_per_s"], "decisions_per_s": run["decisions_per_s"] * share}


@contextlib.contextmanager
def busy_processes(n: int) -> Iterator[None]:
    """``n`` busy processes (pure-Python loops) while the block runs: a machine that others share."""
    procs = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(n)]
    try:
        yield
    finally:
        for p in procs:
            p.kill()
        for p in procs:
            p.wait()


TRAIN_ROWS = (
    ("its league", "its league (snapshots and heuristics)"),
    ("random league", "every opponent seat random"),
    ("one thread", "its league, all on one thread"),
)


def first_edition(args: argparse.Namespace) -> dict[str, bool]:
    """The rule options of ``--first-edition`` for the single-agent and vector envs."""
    return {"first_edition": True} if args.first_edition else {}


def _mean(runs: list[dict[str, float]]) -> dict[str, float]:
    """The runs' figures, each the mean of theirs."""
    return {key: type(runs[0][key])(np.mean([run[key] for run in runs])) for key in runs[0]}


def figures(args: argparse.Namespace) -> dict[str, dict[str, dict[str, float]]]:
    """Every figure the arguments ask for: ``play`` (random legal play: our envs and the reference games),
    ``vector`` (learner steps of the single-agent and vector envs, in the first edition with ``--first-edition``),
    ``train`` (``--train``'s four runs), ``bots`` (``--bots``)."""
    from pettingzoo.classic import connect_four_v3

    import revolution_env
    from revolution_env.engine import Rules

    play: dict[str, dict[str, float]] = {}
    for p in args.players:
        play[f"revolution_v2 AEC, {p} players"] = measure(
            aec_random_play(lambda p=p: revolution_env.env(players=p)), args.seconds
        )
        if args.engine:
            play[f"revolution engine, {p} players"] = measure(engine_random_play(Rules(players=p)), args.seconds)
    vector: dict[str, dict[str, float]] = {}
    p, opponents = args.players[0], args.opponents
    rules = first_edition(args)
    o = opponents + (", first edition" if rules else "")
    if args.vector:
        vector[f"single-agent env, {p}p, {o}"] = measure(single_agent_random_play(p, opponents, **rules), args.seconds)
        for n in args.vector:
            vector[f"vector_env N={n}, {p}p, {o}"] = vector_random_play(p, n, args.seconds, opponents, **rules)
        if args.tokens:
            n = max(args.vector)
            vector[f"vector_env N={n}, {p}p, {o}, tokens"] = vector_random_play(
                p, n, args.seconds, opponents, "tokens", **rules
            )
    play["connect_four_v3 AEC"] = measure(aec_random_play(connect_four_v3.env, discrete=True), args.seconds)
    paired: dict[str, dict[str, float]] = {}
    try:
        play[f"open_spiel goofspiel, 13 cards, {p}p"] = measure(goofspiel_random_play(p), args.seconds)
        if args.vector:  # the target's ratio again, the two measured in turn (twice --seconds in all)
            n = max(args.vector)
            ours = vector_runner(p, n, opponents, **rules)
            paired[f"vector_env N={n}, {p}p, {o}"] = alternating(
                ours, game_runner(goofspiel_random_play(p)), 2 * args.seconds
            )
    except ImportError:
        print("(open_spiel not installed: pip install -e .[bench] to compare with goofspiel)")
    train: dict[str, dict[str, float]] = {}
    if args.train:
        key = f"single-agent env, {p}p, random"
        train["single-agent env"] = vector.get(key) if p == 3 else None
        if train["single-agent env"] is None:
            train["single-agent env"] = measure(single_agent_random_play(3), args.seconds)
        # the league on every core and on one thread, whose comparison is a target, each run twice in the order
        # A B B A: a run's rate moves with what ran before it (the first run of a process warms it up)
        league, alone = [default_training(args.train)], [default_training(args.train, True)]
        train["random league"] = default_training(args.train, **RANDOM_LEAGUE)
        alone.append(default_training(args.train, True))
        league.append(default_training(args.train))
        train["its league"], train["one thread"] = _mean(league), _mean(alone)
        train["selfplay"] = selfplay_training(args.train)
    bots = bot_decisions(p, args.seconds) if args.bots else {}
    return {"play": play, "vector": vector, "paired": paired, "train": train, "bots": bots}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seconds", type=float, default=10.0, help="time per measurement")
    parser.add_argument("--players", type=int, nargs="+", default=[3])
    parser.add_argument("--engine", action="store_true", help="also measure the bare engine (no environment)")
    parser.add_argument("--json", metavar="FILE", help="also write the figures as JSON")
    parser.add_argument(
        "--opponents",
        default="random",
        help="the opponents of the single-agent and vector envs (random: drawn in batch; a heuristic: its compiled "
        "code)",
    )
    parser.add_argument(
        "--vector",
        type=int,
        nargs="*",
        metavar="N",
        help="also the single-agent env and vector_env at these batch sizes",
    )
    parser.add_argument(
        "--tokens",
        action="store_true",
        help="with --vector, also vector_env in the token mode (action_mode='tokens') at the largest batch size",
    )
    parser.add_argument(
        "--train",
        type=int,
        metavar="STEPS",
        help="also train the default config (configs/default.yaml, no evaluations) for STEPS learner steps three "
        "times: as configured, with every opponent seat random (the learner's own cost), and on one thread (the "
        "run's work, which bounds what the cores can do), then once by pure self-play (selfplay.enabled: true); report "
        "their learner steps/s beside the single-agent env's random play",
    )
    parser.add_argument(
        "--first-edition",
        action="store_true",
        help="with --vector, play the single-agent and vector envs in the first edition (Card space and deck)",
    )
    parser.add_argument(
        "--bots",
        action="store_true",
        help="also time the heuristic bots' decisions (value, bargain, area; bids and the rest apart) on states of "
        "real games of the first of --players",
    )
    parser.add_argument(
        "--load",
        type=int,
        default=0,
        metavar="N",
        help="measure everything again beside N busy processes (pure-Python loops the script starts and stops) and "
        "show both columns",
    )
    args = parser.parse_args()
    if args.tokens and not args.vector:
        parser.error("--tokens measures the vector env: give --vector N ... too")
    if args.first_edition and not args.vector:
        parser.error("--first-edition measures the single-agent and vector envs: give --vector N ... too")
    if args.load < 0:
        parser.error(f"--load: expected a number of busy processes (0 or more), got {args.load}")
    from revolution_env.common.workers import check_thread_settings, usable_cores

    try:
        check_thread_settings()
    except ValueError as exc:
        parser.error(str(exc))
    warnings.simplefilter("ignore")

    quiet = figures(args)
    loaded = None
    if args.load:
        with busy_processes(args.load):
            loaded = figures(args)
    beside = f"beside {args.load} busy" if args.load else ""

    def extra(group: str, name: str, rate: float, figure: str = "decisions_per_s") -> str:
        if loaded is None:
            return ""
        other = loaded[group][name][figure]
        return f"  {other:12,.0f} {other / rate:6.2f}x"

    extra_head = f"  {beside:>12} {'ratio':>7}" if loaded else ""
    play, vector, train = quiet["play"], quiet["vector"], quiet["train"]
    where = platform.processor() or platform.machine()
    print(f"random legal play, one core, {args.seconds:.0f} s each ({where}; {usable_cores()} usable cores)")
    print(f"{'':40} {'decisions/s':>12} {'games/s':>9}  {'vs connect_four':>15} {'vs goofspiel':>12}{extra_head}")
    c4 = play["connect_four_v3 AEC"]["decisions_per_s"]
    goof = next((r["decisions_per_s"] for name, r in play.items() if name.startswith("open_spiel")), None)
    for group, rows in (("play", play), ("vector", vector)):
        for name, r in rows.items():
            rate = r["decisions_per_s"]
            ratio_goof = f"{rate / goof:12.2f}" if goof else f"{'-':>12}"
            print(f"{name:40} {rate:12,.0f} {r['games_per_s']:9,.1f}  {rate / c4:15.2f} {ratio_goof}"
                  f"{extra(group, name, rate)}")  # fmt: skip
    results = {**play, **vector}
    if vector:
        names = list(vector)
        scalar = vector[names[0]]["decisions_per_s"]
        print(f"\nlearner steps (one learner decision each; opponents {args.opponents}), ratio to the {names[0]}:")
        print(f"{'':40} {'steps/s':>12} {'games/s':>9}  {'vs single-agent':>15} {'vs goofspiel':>12}{extra_head}")
        for name in names:
            r = vector[name]
            rate = r["decisions_per_s"]
            ratio_goof = f"{rate / goof:12.2f}" if goof else f"{'-':>12}"
            print(f"{name:40} {rate:12,.0f} {r['games_per_s']:9,.1f}  {rate / scalar:15.1f} {ratio_goof}"
                  f"{extra('vector', name, rate)}")  # fmt: skip
        for name, r in quiet["paired"].items():
            results[f"{name} / goofspiel, alternating"] = r
            print(
                f"{name} against goofspiel in {r['pairs']} pairs of alternating blocks ({2 * args.seconds:.0f} s): "
                f"{r['ratio']:.2f}x (pairs {r['low']:.2f} to {r['high']:.2f})"
                + (f"; {beside} processes {loaded['paired'][name]['ratio']:.2f}x" if loaded else "")
            )
        largest = max(args.vector)
        memory = vector_memory(args.players[0], largest, **first_edition(args))
        results[f"vector_env N={largest} memory"] = memory
        print(
            f"memory of {largest} games in flight (tracemalloc): {memory['current_bytes'] / 2**20:.1f} MiB held, "
            f"{memory['peak_bytes'] / 2**20:.1f} MiB at the peak of a step"
        )
    if train:
        rate = train["single-agent env"]["decisions_per_s"]
        trained, bare, alone = train["its league"], train["random league"], train["one thread"]
        print(
            f"\nrevolution train on configs/default.yaml ({trained['steps']:,} PPO steps, no imitation or evaluations),"
            f" while it trains, ratio to the single-agent env's random play ({rate:,.0f} steps/s):"
        )
        for key, name in TRAIN_ROWS:
            r = train[key]
            results[f"revolution train, configs/default.yaml, {key}"] = r
            print(
                f"  {name:38} {r['decisions_per_s']:8,.0f} learner steps/s  {r['decisions_per_s'] / rate:5.2f}x"
                f"  ({r['seconds']:.1f} s; {r['other_seconds']:.1f} s of start-up and tear-down apart)"
                f"{extra('train', key, r['decisions_per_s'])}"
            )
        pure = results["revolution train, configs/default.yaml, selfplay"] = train["selfplay"]
        print(
            f"  {'pure self-play (every seat the learner)':38} {pure['rows_per_s']:8,.0f} learner steps/s  "
            f"{pure['rows_per_s'] / rate:5.2f}x  ({pure['seconds']:.1f} s; of which real decisions "
            f"{pure['decisions_per_s']:,.0f}/s, {pure['decisions_per_s'] / rate:.2f}x)"
            f"{extra('train', 'selfplay', pure['rows_per_s'], 'rows_per_s')}"
        )
        cores = usable_cores()
        bound = cores * alone["decisions_per_s"]
        print(
            f"  the league's opponents: {trained['seconds'] - bare['seconds']:.1f} s of {trained['seconds']:.1f}; "
            f"the run's work, {alone['seconds']:.1f} s on one thread, shared perfectly by {cores} cores: at most "
            f"{bound:,.0f} learner steps/s ({bound / rate:.2f}x)"
        )
        if loaded is not None:
            held = min(loaded["train"][k]["decisions_per_s"] / train[k]["decisions_per_s"] for k, _ in TRAIN_ROWS)
            two, one = (loaded["train"][k]["decisions_per_s"] for k in ("its league", "one thread"))
            print(
                f"  {beside} processes: every run kept at least {held:.2f} of its rate alone (target 1/3: "
                f"{'met' if held >= 1 / 3 else 'NOT met'}); its league on every core {two:,.0f} against "
                f"{one:,.0f} on one thread (target: not below, {'met' if two >= one else 'NOT met'})"
            )
    if quiet["bots"]:
        print(f"\nheuristic bots, thread CPU time a decision ({args.players[0]} players, states of real games):")
        print(f"{'':16} {'us':>9} {'states':>8}{extra_head}")
        for name, r in quiet["bots"].items():
            results[f"bot {name}"] = r
            rate = r["us_per_decision"]
            print(f"  {name:14} {rate:9,.1f} {r['states']:8,}{extra('bots', name, rate, 'us_per_decision')}")
    if loaded is not None:
        results[f"{beside} processes"] = {**loaded["play"], **loaded["vector"], **loaded["train"], **loaded["bots"]}
    if args.json:
        with open(args.json, "w", encoding="utf-8") as fh:
            json.dump(results, fh, indent=2)


if __name__ == "__main__":
    main()
