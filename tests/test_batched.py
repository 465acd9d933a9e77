"""The batched engine against the scalar one: the same seeded random decisions on both, over every variant (the
first edition's included), with the canonical state compared after every decision; the batched observations and
masks against ``ObservationLayout.build`` and ``Codec.mask`` for every seat; exported games replayed."""

from __future__ import annotations

import json

import numpy as np
import pytest
from boards import STANDARD, small_deck
from plain_python import run_without_numba
from replay_files import another_seed

from revolution_env.engine.batched import BatchedGame
from revolution_env.engine.components import BOARDS_DIR, GOLD
from revolution_env.engine.game import BID, GUY, Decision, Game, IllegalAction, Rules, make_layout
from revolution_env.engine.kernels import Meta, random_states
from revolution_env.engine.random_play import random_bids, random_choice
from revolution_env.engine.scenario import run_scenario, state_dict
from revolution_env.env.batched import BatchedView
from revolution_env.env.encoding import NONE, Codec
from revolution_env.env.observation import ObservationLayout

VARIANTS = {
    "3 players": Rules(players=3),
    "4 players": Rules(players=4),
    "2 players (Guy)": Rules(players=2),
    "bid refunds": Rules(players=3, bid_refunds=True),
    "area control bonus": Rules(players=4, area_control_bonus=True),
    "2 players, area control bonus": Rules(players=2, area_control_bonus=True),
    "truncated (max_rounds)": Rules(players=3, max_rounds=4),
    "2 players truncated": Rules(players=2, max_rounds=3),
    # the first edition (D14: Bid Refunds always on): the Card space, the deck and its reshuffles, Remove decisions
    "first edition, 3 players": Rules(players=3, first_edition=True),
    "first edition, 4 players": Rules(players=4, first_edition=True),
    "first edition, 2 players (Guy)": Rules(players=2, first_edition=True),
    "first edition, area control bonus": Rules(players=4, first_edition=True, area_control_bonus=True),
    "first edition, 2 players, area control bonus": Rules(players=2, first_edition=True, area_control_bonus=True),
    "first edition truncated": Rules(players=3, first_edition=True, max_rounds=4),
}
FIRST_EDITION = [name for name, rules in VARIANTS.items() if rules.first_edition]


def engine_value(game: Game, choice: tuple[int, ...] | None) -> int:
    """The batched engine's encoding of a scalar engine choice."""
    if choice is None:
        return -1
    if game.decision.kind == GUY:
        c, answered, mode = choice
        return (c * 2 + answered) * 2 + mode
    return choice[0] * game.layout.seats + choice[1]


def scalar_kind(game: Game, seat: int) -> Decision:
    """What ``seat`` is asked in the scalar Core's sense, before anyone has bid."""
    d = game.decision
    if d is None:
        return NONE
    return d.kind if d.kind == BID or d.seats[0] == seat else NONE


def card_bids(game: Game, rng: np.random.Generator) -> np.ndarray:
    """Random bids with as much Gold on the first edition's Card space as draws cards (3 per player)."""
    L = game.layout
    bids = random_bids(game, rng)
    for seat in range(L.players):
        move = min(3, int(game.tokens[seat, GOLD])) - bids[seat, L.card_space, GOLD]
        for target in np.flatnonzero(bids[seat, :, GOLD]):
            take = min(move, bids[seat, target, GOLD]) if target != L.card_space else 0
            bids[seat, target, GOLD] -= take
            bids[seat, L.card_space, GOLD] += take
            move -= take
    return bids


def play_both(rules: Rules, n: int, seed: int, check_views: bool, bidding=random_bids):
    """Play ``n`` games on both engines with the same random decisions (bids from ``bidding``); compare after every
    decision."""
    L = make_layout(rules)
    batch = BatchedGame(L, n, seeds=np.arange(seed, seed + n), rng=np.random.default_rng(seed))
    games = [Game(L, seed + i) for i in range(n)]
    rng = np.random.default_rng(seed)
    codec = Codec(L)
    view = BatchedView(codec, ObservationLayout(codec))
    compared = 0
    while any(g.decision is not None for g in games):
        # this round's bids for every game waiting for them, submitted to the batch in one call
        waiting = [i for i, g in enumerate(games) if g.decision is not None and g.decision.kind == BID]
        if waiting:
            bids = np.stack([bidding(games[i], rng) for i in waiting])
            batch.submit_bids(waiting, bids)
            for i, b in zip(waiting, bids):
                priority = int(batch.history.priority[i, games[i].round - 1]) if L.puppet >= 0 else None
                games[i].submit_bids(b, priority=priority)
        choosing = [i for i, g in enumerate(games) if g.decision is not None and g.decision.kind != BID]
        if choosing:
            values = []
            for i in choosing:
                assert batch.decider[i] == games[i].decision.seat
                choice = random_choice(games[i], rng)
                values.append(engine_value(games[i], choice))
                games[i].choose(choice)
            batch.choose(choosing, values)
        for i, g in enumerate(games):
            assert batch.state_dict(i) == state_dict(g), f"game {i}, round {g.round}"
            assert batch.kind[i] == (int(g.decision.kind) if g.decision else 0)
            compared += 1
        if check_views:
            pairs = [(i, s) for i in range(n) for s in range(L.players)]
            gi = np.array([p[0] for p in pairs])
            si = np.array([p[1] for p in pairs])
            kinds = view.kinds(batch, gi, si)
            obs = view.observe(batch, gi, si, kinds)
            masks = view.masks(batch, gi, si, kinds)
            for j, (i, s) in enumerate(pairs):
                kind = scalar_kind(games[i], s)
                assert kinds[j] == kind
                np.testing.assert_array_equal(obs[j], ObservationLayout(codec).build(games[i], s, kind))
                np.testing.assert_array_equal(masks[j], codec.mask(games[i], s, kind))
    for i, g in enumerate(games):
        assert batch.over[i] and g.final is not None
        final = batch.state_dict(i)["final"]
        assert final == {k: list(v) for k, v in g.final.items()}
    return batch, games, compared


@pytest.mark.parametrize("variant", list(VARIANTS))
def test_batched_engine_matches_scalar_engine(variant: str) -> None:
    batch, games, compared = play_both(VARIANTS[variant], n=12, seed=7, check_views=False)
    assert compared > 12 * 3
    kinds = {key for g in games for r in g.history for key in r}
    assert {"spy", "apothecary"} <= kinds  # the rare decisions are covered too
    if VARIANTS[variant].players == 2:
        assert "guy" in kinds
    if VARIANTS[variant].first_edition:
        assert "remove" in kinds


@pytest.mark.parametrize("variant", ["3 players", "4 players", "2 players (Guy)", "bid refunds"])
def test_bids_to_clean_are_cleaned_as_the_scalar_engine_cleans_them(variant: str) -> None:
    """Bids with tokens on targets that do not take them (to the bank, docs/rules.md §3) and on more than six
    characters (D16: the tokens past the sixth, in board order, to the bank): every token on a target drawn from all of
    them. The batched engine cleans a player's row by one rule where the player holds too few tokens to bid on seven
    characters and by another where it holds more; both are met here."""
    met = {"illegal": 0, "past the sixth": 0}

    def wild_bids(game: Game, rng: np.random.Generator) -> np.ndarray:
        L = game.layout
        bids = np.zeros((L.players, L.n_targets, 3), dtype=np.int64)
        for seat in range(L.players):
            for t in range(3):
                bids[seat, :, t] = np.bincount(rng.integers(L.n_targets, size=int(game.tokens[seat, t])),
                                               minlength=L.n_targets)  # fmt: skip
            legal = (bids[seat] > 0) & L.legal
            met["illegal"] += int(((bids[seat] > 0) & ~L.legal).any())
            met["past the sixth"] += int(legal[: L.n_characters].any(1).sum() > 6)
        return bids

    play_both(VARIANTS[variant], n=12, seed=11, check_views=False, bidding=wild_bids)
    assert met["illegal"] > 0 and met["past the sixth"] > 0, met


@pytest.mark.parametrize("players, small", [(2, True), (3, True), (4, True), (2, False), (4, False)])
def test_the_deck_is_reshuffled_as_the_scalar_engine_reshuffles_it(players: int, small: bool, tmp_path) -> None:
    """D15 with the players drawing every card they can (3 Gold each on the Card space): the standard deck runs out
    every few rounds, a deck of three cards several times a round; every reshuffle comes from the game's own seeded
    generator, the states (draw pile included) match after every decision, and the exported games replay."""
    path = tmp_path / "board.json"
    path.write_text(json.dumps(small_deck() if small else STANDARD))
    rules = Rules(players=players, first_edition=True, board=str(path))
    batch, games, _ = play_both(rules, n=4, seed=2, check_views=True, bidding=card_bids)
    assert batch.meta[:, Meta.DECK_SHUFFLE].min() > (3 * 4 if small else 0)  # several a round with three cards
    assert {"remove"} <= {key for g in games for r in g.history for key in r}
    for i in range(4):
        assert state_dict(run_scenario(batch.export(i))) == batch.state_dict(i)


@pytest.mark.parametrize(
    "variant",
    ["3 players", "2 players (Guy)", "4 players", "area control bonus", *FIRST_EDITION[:3],
     "first edition, 2 players, area control bonus"],
)  # fmt: skip
def test_batched_observations_and_masks_match_the_scalar_env(variant: str) -> None:
    play_both(VARIANTS[variant], n=3, seed=11, check_views=True)


@pytest.mark.parametrize("variant", ["3 players", "2 players (Guy)", "first edition, 4 players"])
def test_observations_and_masks_in_one_pass_are_those_of_two(variant: str, monkeypatch) -> None:
    """``BatchedView.observe_and_mask`` (each part of the rows observed then masked by one thread) gives what
    ``observe`` and ``masks`` give apart, its rows split in parts side by side (2 threads)."""
    import revolution_env.common.jit as jit_module

    monkeypatch.setattr(jit_module, "PARALLEL_ROWS", 4)
    monkeypatch.setenv("REVOLUTION_THREADS", "2")
    rules = VARIANTS[variant]
    batch, _, _ = play_both(rules, n=6, seed=3, check_views=False)  # finished games: phase OVER, every feature set
    L = make_layout(rules)
    codec = Codec(L)
    view = BatchedView(codec, ObservationLayout(codec))
    live = BatchedGame(L, 6, seeds=np.arange(6), rng=np.random.default_rng(0))
    states = random_states(np.arange(6))
    everyone = np.ones((6, L.players), dtype=bool)
    for game in (batch, live):
        for _ in range(4):
            gi = np.repeat(np.arange(game.n), L.players)
            si = np.tile(np.arange(L.players), game.n)
            kinds = view.kinds(game, gi, si)
            obs, masks = view.observe_and_mask(game, gi, si, kinds)
            np.testing.assert_array_equal(obs, view.observe(game, gi, si, kinds))
            np.testing.assert_array_equal(masks, view.masks(game, gi, si, kinds))
            playing = np.flatnonzero(~game.over)
            if game is live and len(playing):  # a decision of every seat, drawn at random
                bids = np.zeros((len(playing), L.players, L.n_targets, 3), dtype=game.count_type)
                game.step(playing, bids, np.zeros(len(playing), dtype=np.int64), everyone, states)


@pytest.mark.parametrize("variant", list(VARIANTS))
def test_exported_games_replay_to_the_same_final_state(variant: str) -> None:
    batch, games, _ = play_both(VARIANTS[variant], n=4, seed=3, check_views=False)
    for i in range(4):
        scenario = batch.export(i)
        assert scenario["seed"] == 3 + i
        if VARIANTS[variant].players == 2:
            assert all("priority" in r for r in scenario["rounds"])
        assert state_dict(run_scenario(another_seed(scenario))) == batch.state_dict(i)


def test_bad_input_is_refused() -> None:
    with pytest.raises(ValueError, match="num_envs"):
        BatchedGame(make_layout(Rules()), 0)
    batch = BatchedGame(make_layout(Rules()), 2, seeds=[0, 1])
    with pytest.raises(IllegalAction, match="D3"):
        batch.submit_bids([0], np.zeros((1, 3, 12, 3), dtype=np.int64))  # tokens left unplaced
    held = batch.tokens[:2, :3]  # (2, 3 players, 3 types)
    good = np.zeros((2, 3, 12, 3), dtype=np.int64)
    good[:, :, 1] = held  # every token on target 1
    bad = good.copy()
    bad[1, 2, 1, 2] += 1  # game 1's third player: a Gold more than held, balanced by a negative count
    bad[1, 2, 2, 2] = -1
    before = batch.state_dict(0)
    with pytest.raises(IllegalAction, match="game 1: .*D3"):
        batch.submit_bids([0, 1], bad)
    assert batch.state_dict(0) == before  # refused before any game changed
    batch.submit_bids([0, 1], good)
    with pytest.raises(IllegalAction, match="no bid is pending|not allowed"):
        batch.choose([0], [-1])


def test_plain_python_fallback_gives_the_same_games() -> None:
    """Without numba the kernels run as plain Python: the same rules (a short run in a fresh interpreter)."""
    code = (
        "from tests.test_batched import play_both, VARIANTS\n"
        "from revolution_env.engine.kernels import COMPILED\n"
        "assert not COMPILED\n"
        "play_both(VARIANTS['2 players (Guy)'], n=3, seed=5, check_views=True)\n"
        "play_both(VARIANTS['4 players'], n=3, seed=5, check_views=False)\n"
        "play_both(VARIANTS['first edition, 3 players'], n=2, seed=5, check_views=True)\n"
    )
    run_without_numba(code)


def _all_gold_on_one_character(game: Game, rng: np.random.Generator) -> np.ndarray:
    """Random bids, then each player's Gold all on the first target that takes Gold."""
    bids = random_bids(game, rng)
    target = int(np.flatnonzero(game.layout.legal[:, GOLD])[0])
    for seat in range(game.layout.players):
        bids[seat, :, GOLD] = 0
        bids[seat, target, GOLD] = game.tokens[seat, GOLD]
    return bids


def test_a_board_with_more_than_127_tokens_of_a_type_records_and_replays_its_bids(tmp_path) -> None:
    """The export's bid history holds a bid of 150 Gold (it was int8, and wrapped to -106)."""
    data = json.loads((BOARDS_DIR / "standard.json").read_text())
    data["tokens"]["gold"].update(total=600, start=150)
    path = tmp_path / "board.json"
    path.write_text(json.dumps(data))
    batch, games, _ = play_both(Rules(players=3, board=str(path)), n=2, seed=5, check_views=False,
                                bidding=_all_gold_on_one_character)  # fmt: skip
    assert batch.history.bids.max() >= 150
    for i in range(2):
        assert state_dict(run_scenario(batch.export(i))) == batch.state_dict(i)
    # the vector env on that board: its bids in int16 (count_type) through its step, its games replayed
    import revolution_env

    env = revolution_env.vector_env(8, players=3, opponents="random", board=str(path), keep_finished=100)
    env.reset(seed=3)
    assert env.game.count_type == np.int16 and env.game.bids.dtype == np.int16
    space = env.single_action_space
    space.seed(4)
    finished = []
    for _ in range(400):
        env.step(np.stack([space.sample(m.astype(np.int8)) for m in env.action_masks()]))
        finished += env.pop_finished()
        if len(finished) >= 2:
            break
    assert len(finished) >= 2
    for scenario, final in finished[:2]:
        assert state_dict(run_scenario(scenario)) == final


def test_index_arrays_cross_into_the_kernels_contiguous(monkeypatch) -> None:
    """A strided slice of seats is another Numba type than a contiguous array: each kernel compiled twice on a
    fresh machine. The view hands the kernels contiguous int64 arrays whatever it gets."""
    from revolution_env.env import batched as view_module

    layout = make_layout(Rules(players=3))
    game = BatchedGame(layout, 4, rng=np.random.default_rng(0))
    game.reset(np.arange(4), np.arange(4))
    view = BatchedView(Codec(layout), ObservationLayout(Codec(layout)))
    seen = []
    for name in ("observe_many", "masks_many"):
        monkeypatch.setattr(view_module, name, lambda rows, *args: seen.append(rows))
    pairs = np.array([[0, 0], [1, 1], [2, 2], [3, 0]])
    games, seats = pairs[:, 0], pairs[:, 1]  # strided views
    kinds = np.full(4, int(Decision.BID), dtype=np.int32)
    view.observe(game, games, seats, kinds)
    view.masks(game, games, seats, kinds)
    assert len(seen) == 2
    for arrays in seen:
        assert all(a.dtype == np.int64 and a.flags.c_contiguous for a in arrays)


# --- random play in batch (the vector envs' random opponents) ---------------------------------------------------


def _same_games_to_a_choice(rules: Rules, n: int, seed: int, skip: set[int] = frozenset()) -> BatchedGame | None:
    """``n`` copies of one game (seed ``seed``), played by the same random bids and choices until it waits for a
    non-bid decision of a kind not in ``skip`` (None if it ends first). Two players: D9's priority given, the
    rule's where it decides."""
    from revolution_env.engine.batched import clean_bids_batch, priority_by_rule_batch

    L = make_layout(rules)
    batch = BatchedGame(L, n, seeds=[seed] * n, rng=np.random.default_rng(seed))
    everyone = np.arange(n)
    state = random_states(np.full(n, seed))  # game 0's draws the copies' bids
    rng = np.random.default_rng(seed)
    while not batch.over[0]:
        kind = int(batch.kind[0])
        if kind == int(BID):
            one = np.stack([batch.random_bids([0], [p], state)[0] for p in range(L.players)])
            bids = np.repeat(one[None], n, axis=0)
            priority = None
            if L.scheming >= 0:
                ruled = priority_by_rule_batch(clean_bids_batch(bids[:1], L)[0], L)
                priority = np.full(n, max(int(ruled[0]), 0))
            batch.submit_bids(everyone, bids, priority)
        elif kind in skip:  # the same uniform choice in every copy
            cubes, guy, decline = (x[0] for x in batch.options([0]))
            S = L.seats
            legal = [a * S + s for a, s in np.argwhere(cubes)] if kind != int(GUY) else [
                (c * 2 + p) * 2 + m for c, p, m in np.argwhere(guy)]  # fmt: skip
            legal += [-1] if decline else []
            batch.choose(everyone, np.full(n, legal[rng.integers(len(legal))]))
        else:
            return batch
    return None


def _first_random_choices(batch: BatchedGame, states: np.ndarray) -> np.ndarray:
    """Each game's first random choice (the engine's value, -1 declined), drawn with ``states`` and read back from
    the history that exports it."""
    from revolution_env.engine.kernels import play_random_many

    history = (batch.history.spy, batch.history.apothecary, batch.history.guy, batch.history.remove)
    before = [h.copy() for h in history]
    g = np.arange(batch.n)
    rand = batch._random_play(states)._replace(one_at_a_time=True)  # every seat random, one choice per game
    bad = play_random_many(g, batch.state, batch.tables, batch.history, rand)
    assert bad == -1
    out = np.full(batch.n, -3, dtype=np.int64)
    for old, new in zip(before, history):
        changed = (old != new).reshape(batch.n, -1)
        rows = np.flatnonzero(changed.any(1))
        out[rows] = new.reshape(batch.n, -1)[rows, changed[rows].argmax(1)]
    assert (out != -3).all()
    return out


@pytest.mark.parametrize("variant", ["3 players", "2 players (Guy)", "first edition, 4 players"])
def test_random_play_in_batch_draws_each_legal_option_uniformly(variant: str) -> None:
    """``BatchedGame.play_random`` (the vector envs' random opponents) draws every legal choice, declining
    included where it is allowed, equally often and nothing else (2,000 copies of a position, each with its own
    generator, 5 standard deviations); ``random_bids`` puts every held token on a legal target of its type, each
    legal target equally often."""
    rules, n, tested = VARIANTS[variant], 2000, set()
    kinds = {int(Decision.SPY), int(Decision.APOTHECARY_FIRST), int(Decision.APOTHECARY_SECOND)}
    kinds |= {int(GUY)} if rules.players == 2 else set()
    kinds |= {int(Decision.REMOVE)} if rules.first_edition else set()
    for seed in range(40):
        if tested == kinds:
            break
        batch = _same_games_to_a_choice(rules, n, seed, skip=tested)
        if batch is None:
            continue
        kind = int(batch.kind[0])
        tested.add(kind)
        cubes, guy, decline = (x[0] for x in batch.options([0]))
        S = batch.layout.seats
        legal = [a * S + s for a, s in np.argwhere(cubes)] if kind != int(GUY) else [
            (c * 2 + p) * 2 + m for c, p, m in np.argwhere(guy)]  # fmt: skip
        legal += [-1] if decline else []
        drawn = _first_random_choices(batch, random_states(np.arange(n)))
        values, counts = np.unique(drawn, return_counts=True)
        assert sorted(values.tolist()) == sorted(legal), Decision(kind)
        expected = n / len(legal)
        assert (abs(counts - expected) < 5 * np.sqrt(expected)).all(), (Decision(kind), counts)
    assert tested == kinds, tested
    L = make_layout(rules)
    batch = BatchedGame(L, n, seeds=[0] * n)
    bids = batch.random_bids(np.arange(n), np.zeros(n, dtype=np.int64), random_states(np.arange(n)))
    np.testing.assert_array_equal(bids.sum(1), batch.tokens[:, 0])
    for t in range(3):
        held = int(batch.tokens[0, 0, t])
        per_target = bids[:, :, t].sum(0)
        assert not per_target[~L.legal[:, t]].any()
        expected = n * held / len(L.legal_targets[t])
        assert (abs(per_target[L.legal[:, t]] - expected) < 5 * np.sqrt(expected)).all(), (t, per_target)


def random_play_digest() -> list[int]:
    """The random choices and bids drawn in a few positions: the same compiled and as plain Python."""
    out: list[int] = []
    for variant, seed in (("2 players (Guy)", 1), ("first edition, 3 players", 2), ("4 players", 3)):
        for s in range(seed, seed + 10):
            batch = _same_games_to_a_choice(VARIANTS[variant], 6, s)
            if batch is not None:
                out += _first_random_choices(batch, random_states(np.arange(6))).tolist()
                break
        game = BatchedGame(make_layout(VARIANTS[variant]), 3, seeds=[seed] * 3)
        out += game.random_bids(np.arange(3), np.arange(3) % 2, random_states(np.arange(5, 8))).ravel().tolist()
    return out


def test_random_play_in_batch_draws_the_same_as_plain_python() -> None:
    expected = random_play_digest()
    run_without_numba(
        "from tests.test_batched import random_play_digest\n"
        "from revolution_env.engine.kernels import COMPILED\n"
        f"assert not COMPILED\nassert random_play_digest() == {expected!r}\n"
    )


@pytest.mark.parametrize(
    "variant",
    ["3 players", "2 players (Guy)", "4 players", "first edition, 3 players", "first edition, 2 players (Guy)"],
)
def test_step_is_submit_choose_and_play_random_in_one(variant: str) -> None:
    """``BatchedGame.step`` (the vector env's step: the decisions in, the random seats' drawn) leaves every game as
    ``submit_bids``, ``choose`` and ``play_random`` called in turn leave it: the state, the exported history and
    the generators, after every step of whole games in which some seats are random and the others decide."""
    L = make_layout(VARIANTS[variant])
    n, P = 24, L.players
    rng = np.random.default_rng(7)
    random_seat = rng.random((n, P)) < 0.5
    random_seat[np.arange(n), rng.integers(P, size=n)] = False  # a seat that decides in every game
    one, two = (BatchedGame(L, n, seeds=np.arange(n) + 100, rng=np.random.default_rng(3)) for _ in range(2))
    states_one, states_two = random_states(np.arange(n)), random_states(np.arange(n))
    deciders_state = random_states(np.arange(n) + 50)  # the deciding seats' own draws (bids)
    everyone = np.arange(n)
    for _ in range(400):
        kind, seat = one.kind.copy(), one.decider.copy()
        bidding = everyone[kind == int(BID)]
        choosing = everyone[(kind >= int(GUY)) & ~random_seat[everyone, seat]]
        if len(bidding) + len(choosing) == 0:
            break
        games = np.sort(np.concatenate([bidding, choosing]))
        bids = np.zeros((len(games), P, L.n_targets, 3), dtype=two.count_type)
        values = np.zeros(len(games), dtype=np.int64)
        at = np.searchsorted(games, bidding)
        for s in range(P):  # the deciding seats' bids (the random seats' rows are the engine's, left at zero)
            mine = ~random_seat[bidding, s]
            bids[at[mine], s] = one.random_bids(bidding[mine], np.full(mine.sum(), s), deciders_state)
        cubes, guy, decline = one.options(choosing)
        for i, g in enumerate(choosing.tolist()):  # a uniform legal choice, declining included where allowed
            options = np.flatnonzero(guy[i].ravel() if kind[g] == int(GUY) else cubes[i].ravel()).tolist()
            options += [-1] if decline[i] else []
            values[np.searchsorted(games, g)] = options[rng.integers(len(options))]
        # one: the three calls in turn (the random seats' bids drawn seat by seat, as the engine draws them)
        full = bids[at].copy()
        for s in range(P):
            rows = np.flatnonzero(random_seat[bidding, s])
            full[rows, s] = one.random_bids(bidding[rows], np.full(len(rows), s), states_one)
        one.submit_bids(bidding, full)
        one.choose(choosing, values[np.searchsorted(games, choosing)])
        waiting = everyone[(one.kind >= int(GUY)) & random_seat[everyone, one.decider]]
        one.play_random(waiting, random_seat, states_one)
        # two: in one
        two.step(games, bids, values, random_seat, states_two)
        for a, b in zip(one.state, two.state):
            np.testing.assert_array_equal(a, b)
        np.testing.assert_array_equal(states_one, states_two)
    assert one.over.all()
    for i in range(n):
        assert one.snapshot([i]).export(0) == two.snapshot([i]).export(0)


def test_step_refuses_misplaced_bids_and_choices_not_allowed() -> None:
    """``BatchedGame.step``'s bad input: bids that do not place exactly the held tokens (D3), a choice the rules do
    not allow, a game with nothing to decide, bids of the wrong shape: a clear error naming the game."""
    L = make_layout(Rules(players=3))
    game = BatchedGame(L, 2, seeds=[1, 2])
    random_seat = np.zeros((2, 3), dtype=bool)
    states = random_states(np.arange(2))
    bids = np.zeros((2, 3, L.n_targets, 3), dtype=game.count_type)
    with pytest.raises(IllegalAction, match=r"game 0: every held token must be placed.*\(D3\)"):
        game.step([0, 1], bids, [0, 0], random_seat, states)
    with pytest.raises(ValueError, match=r"bids: expected a contiguous int8 array \(count_type\) of shape \(2, 3, "):
        game.step([0, 1], bids[:, :2], [0, 0], random_seat, states)
    with pytest.raises(ValueError, match=r"bids: expected a contiguous int8 array"):  # counts wider than the game's
        game.step([0, 1], bids.astype(np.int64), [0, 0], random_seat, states)
    with pytest.raises(ValueError, match="values: expected 2 choices, got 1"):
        game.step([0, 1], bids, [0], random_seat, states)
    with pytest.raises(ValueError, match="states: expected the games' generators, a writable int64 array of 2"):
        game.step([0, 1], bids, [0, 0], random_seat, random_states(np.arange(3)))
    with pytest.raises(ValueError, match=r"random_seat: expected a bool array of shape \(2, 3\)"):
        game.step([0, 1], bids, [0, 0], random_seat[:, :2], states)
    game.step([0, 1], bids, [0, 0], ~random_seat, states)  # every seat random: the games play on to a bid
    while not game.over.all():
        game.step(np.flatnonzero(~game.over), bids[: int((~game.over).sum())], np.zeros((~game.over).sum()),
                  ~random_seat, states)  # fmt: skip
    with pytest.raises(IllegalAction, match="game 0: no decision is pending"):
        game.step([0], bids[:1], [0], random_seat, states)
    game = BatchedGame(L, 40, seeds=np.arange(40))
    states = random_states(np.arange(40))
    random_seat = np.zeros((40, 3), dtype=bool)
    random_seat[:, 1:] = True
    everyone = np.arange(40)
    for _ in range(30):  # seat 0 bids at random until some game asks it a non-bid decision
        asked = everyone[(game.kind >= int(GUY)) & (game.decider == 0)]
        if len(asked):
            break
        own = np.zeros((40, 3, L.n_targets, 3), dtype=game.count_type)
        bidding = everyone[game.kind == int(BID)]
        own[: len(bidding), 0] = game.random_bids(bidding, np.zeros(len(bidding), dtype=np.int64), states)
        game.step(bidding, own[: len(bidding)], np.zeros(len(bidding)), random_seat, states)
    g = int(asked[0])
    with pytest.raises(IllegalAction, match=rf"game {g}: .* choice 999 is not allowed"):
        game.step([g], np.zeros((1, 3, L.n_targets, 3), dtype=game.count_type), [999], random_seat, states)


# --- the state's form -------------------------------------------------------------------------------------------


def test_the_kernels_take_their_state_as_records_and_at_most_six_parameters() -> None:
    """The batched engine's state travels as typed records (``kernels.State``, ``Tables``, ``History``, ...), not as
    loose arrays: no compiled function of the engine, of its view or of the heuristic bots (``agents.decisions``:
    ``Bot``, ``Stakes``, ``Rival``, ...) takes more than six parameters, nor any function of the batched evaluation
    games (``arena.batched``), and the record a game hands the kernels holds the very arrays it exposes (a copy would
    leave its attributes behind)."""
    import ast
    import inspect

    from revolution_env.agents import decisions
    from revolution_env.arena import batched as arena
    from revolution_env.engine import kernels
    from revolution_env.env import batched as view

    counts = {}
    for module, compiled_only in ((kernels, True), (view, True), (decisions, True), (arena, False)):
        for node in ast.parse(inspect.getsource(module)).body:
            if not isinstance(node, ast.FunctionDef):
                continue
            decorators = [d.func if isinstance(d, ast.Call) else d for d in node.decorator_list]
            if not compiled_only or any(isinstance(d, ast.Name) and d.id == "jit" for d in decorators):
                args = node.args
                counts[f"{module.__name__}.{node.name}"] = len(args.posonlyargs + args.args + args.kwonlyargs)
    assert len(counts) > 100 and "revolution_env.engine.kernels.step_many" in counts
    assert {"revolution_env.agents.decisions.decide_rows", "revolution_env.arena.batched._actions"} <= set(counts)
    assert {name: n for name, n in counts.items() if n > 6} == {}
    game = BatchedGame(make_layout(Rules(players=2, first_edition=True)), 3, seeds=[1, 2, 3])
    assert isinstance(game.state, kernels.State) and isinstance(game.tables, kernels.Tables)
    for name, array in game.state._asdict().items():
        assert array is getattr(game, name), name
    assert game.meta.shape == (3, len(kernels.Meta)) and game.tables.cfg.shape == (len(kernels.Cfg),)
    assert game.tables.cfg[kernels.Cfg.PUPPET] == game.layout.puppet == 2
    assert (game.meta[:, kernels.Meta.KIND] == Decision.BID).all() and (game.round == 1).all()
