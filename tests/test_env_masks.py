"""The action mask is exact (docs/environment.md §3 "Exactness").

Random games of every variant are played through the environment; at every step the selected agent's mask is
compared with the legal options computed from the engine and mapped through the documented encoding, written
out again here: a cube choice is ``1 + area * S + seat``, a Guy bid ``1 + (character * 2 + answered) * 2 + mode``,
0 declines or passes, seats relative to the decider with the puppet last. Every action sampled from the mask is
accepted; actions that break it are refused with a clear error (raw env) or end the game with -1 (``env()``).
"""

from __future__ import annotations

import copy
import itertools

import numpy as np
import pytest
from gymnasium.spaces import MultiDiscrete

import revolution_env
from revolution_env import IllegalActionError, bid_action, describe_action, flat_mask, split_mask
from revolution_env.engine.game import Decision

TOKENS = ("force", "blackmail", "gold")
CUBE_KINDS = (Decision.SPY, Decision.APOTHECARY_FIRST, Decision.APOTHECARY_SECOND, Decision.REMOVE)
ALL_KINDS = (Decision.NONE, Decision.BID, Decision.GUY, *CUBE_KINDS)


def _variants() -> list[dict]:
    out = []
    for players, first, bonus, refunds in itertools.product((2, 3, 4), (False, True), (False, True), (False, True)):
        if not refunds and (players == 2 or first):
            continue  # always played with Bid Refunds (docs/rules.md §6, D14)
        out.append(dict(players=players, first_edition=first, area_control_bonus=bonus, bid_refunds=refunds))
    return out


VARIANTS = _variants()


def _name(options: dict) -> str:
    return "-".join(f"{k}={v}" for k, v in options.items())


# --- the documented encoding, written out independently ---------------------------------------------------------


def seats_of(game) -> tuple[int, int]:
    """(players, seats): the puppet is a seat but not a player."""
    return game.rules.players, (3 if game.rules.players == 2 else game.rules.players)


def relative(game, me: int, seat: int) -> int:
    players, seats = seats_of(game)
    return seats - 1 if seat >= players else (seat - me) % players


def absolute(game, me: int, rel: int) -> int:
    players, seats = seats_of(game)
    return players if rel == seats - 1 and players == 2 else (me + rel) % players


def legal_choices(game, me: int, kind: str) -> dict[int, object]:
    """Every legal value of the choice dimension and the engine choice it stands for (None = decline / pass)."""
    _, seats = seats_of(game)
    out: dict[int, object] = {}
    if game.can_decline():
        out[0] = None
    if kind == Decision.GUY:
        for character, answered, mode in np.argwhere(game.guy_targets()):
            value = 1 + (character * 2 + (0 if answered == me else 1)) * 2 + mode
            out[int(value)] = (int(character), int(answered), int(mode))
    else:
        for area, seat in np.argwhere(game.cube_targets()):
            out[int(1 + area * seats + relative(game, me, seat))] = (int(area), int(seat))
    return out


def legal_targets(game, token: int) -> set[int]:
    """The bid targets that accept a token type: the characters' printed types, Gold only on Scheming (D18)."""
    out = {i for i, ch in enumerate(game.layout.card) if ch.legal[token]}
    if game.rules.players == 2 and token == 2:
        out.add(len(game.layout.card))  # the Scheming space
    return out


def blocks(game) -> list[int]:
    """The first dimension of the Force, Blackmail and Gold blocks."""
    totals = game.layout.components.token_totals
    return [1, 1 + totals[0], 1 + totals[0] + totals[1]]


def allowed(mask: np.ndarray, nvec: np.ndarray, dim: int) -> set[int]:
    start = int(nvec[:dim].sum())
    return set(np.flatnonzero(mask[start : start + nvec[dim]]).tolist())


def last_choice(game, kind: str) -> object:
    """The engine's record of the choice just made (the round's log)."""
    log = game.history[-1]
    if kind == Decision.GUY:
        value = log["guy"][-1]
    elif kind == Decision.SPY:
        value = log["spy"]
    elif kind == Decision.APOTHECARY_FIRST:
        value = None if log["apothecary"] is None else log["apothecary"][0]
    elif kind == Decision.APOTHECARY_SECOND:
        value = log["apothecary"][1]
    else:
        value = log["remove"][-1]
    return None if value is None else tuple(int(x) for x in value)


# --- the checks ----------------------------------------------------------------------------------------------


def check_mask(env, agent: str) -> None:
    """(b), (c): the mask of the selected agent is exactly what the rules allow."""
    raw = env.unwrapped
    game = raw.game
    me = raw.possible_agents.index(agent)
    kind = raw.infos[agent]["decision"]
    mask = raw.observe(agent)["action_mask"]
    nvec = raw.action_space(agent).nvec
    assert mask.dtype == np.int8 and mask.shape == (nvec.sum(),)
    if kind == Decision.BID:
        assert allowed(mask, nvec, 0) == {0}, "the choice is masked to 0 during a bid"
        for token, start in enumerate(blocks(game)):
            held = int(game.tokens[me, token])
            for j in range(game.layout.components.token_totals[token]):
                expected = legal_targets(game, token) if j < held else {0}
                assert allowed(mask, nvec, start + j) == expected, f"{TOKENS[token]} #{j + 1}, holding {held}"
    else:
        if kind == Decision.NONE:
            assert allowed(mask, nvec, 0) == {0}
        else:
            assert allowed(mask, nvec, 0) == set(legal_choices(game, me, kind)), kind
        for dim in range(1, len(nvec)):
            assert allowed(mask, nvec, dim) == {0}, f"token dimension {dim} outside bidding"


def fork(raw):
    """A copy of the environment to try an action on (the static tables are shared, not copied)."""
    core = raw.core
    shared = (
        core.layout,
        core.layout.components,
        core.codec,
        core.obs_layout,
        raw.action_spaces,
        raw.observation_spaces,
    )
    return copy.deepcopy(raw, {id(x): x for x in shared})


def check_choices_decode(env, agent: str, rng: np.random.Generator, tries: int = 4) -> None:
    """Legal choice values (decline and a few others), each stepped on a copy, make exactly the engine choice
    that the encoding names."""
    raw = env.unwrapped
    kind = raw.infos[agent]["decision"]
    me = raw.possible_agents.index(agent)
    options = legal_choices(raw.game, me, kind)
    values = sorted(options)
    picked = set(rng.choice(values, size=min(tries, len(values)), replace=False).tolist()) | ({0} & set(values))
    for value in sorted(picked):
        choice = options[value]
        trial = fork(raw)
        action = np.zeros(len(raw.action_space(agent).nvec), dtype=np.int64)
        action[0] = value
        trial.step(action)
        assert last_choice(trial.game, kind) == choice, f"{kind} value {value}"


def play_and_check(options: dict, seed: int, *, deep: bool = True) -> set[str]:
    """A random game through raw_env with every check at every step; returns the decision kinds seen."""
    env = revolution_env.raw_env(**options)
    env.reset(seed=seed)
    tuple_space = MultiDiscrete(env.action_space("player_0").nvec, seed=seed)
    rng = np.random.default_rng(seed)
    seen = set()
    for agent in env.agent_iter():
        observation, _, termination, truncation, info = env.last()
        if termination or truncation:
            env.step(None)
            continue
        seen.add(info["decision"])
        check_mask(env, agent)
        if deep and info["decision"] not in (Decision.BID, Decision.NONE):
            check_choices_decode(env, agent, rng)
        mask = observation["action_mask"]
        if rng.random() < 0.5:  # (a) the flat form, as PettingZoo and MaskablePPO use it ...
            action = env.action_space(agent).sample(mask)
        else:  # ... and Gymnasium's tuple form
            action = tuple_space.sample(mask=split_mask(mask, tuple_space.nvec))
        env.step(action)  # raises IllegalActionError if the mask let an illegal action through
    assert env.game.over
    return seen


@pytest.mark.parametrize("options", VARIANTS, ids=_name)
def test_the_mask_is_exact_in_random_games(options):
    for seed in range(5):
        play_and_check(options, seed)


def test_the_random_games_reach_every_kind_of_decision():
    seen = set()
    for options, seed in itertools.product(
        [dict(players=2, first_edition=True), dict(players=3, first_edition=True)], range(4)
    ):
        seen |= play_and_check(options, 100 + seed, deep=False)
    assert seen == set(ALL_KINDS) - {Decision.NONE}


def test_non_deciders_of_the_parallel_api_may_only_send_zeros():
    env = revolution_env.parallel_env(players=2, first_edition=True)
    observations, infos = env.reset(seed=3)
    while env.agents:
        for agent in env.agents:
            mask = observations[agent]["action_mask"]
            nvec = env.action_space(agent).nvec
            if infos[agent]["decision"] == Decision.NONE:
                assert all(allowed(mask, nvec, d) == {0} for d in range(len(nvec)))
            else:
                assert mask.sum() > len(nvec)  # something to decide
        actions = {a: env.action_space(a).sample(observations[a]["action_mask"]) for a in env.agents}
        observations, _, _, _, infos = env.step(actions)


# --- actions that break the mask --------------------------------------------------------------------------------


def advance_to(env, kinds: tuple[str, ...], seed: int = 0):
    """Play random legal actions until the selected agent faces one of ``kinds``."""
    for s in range(seed, seed + 50):
        env.reset(seed=s)
        for agent in env.agent_iter():
            observation, _, termination, truncation, info = env.last()
            if termination or truncation:
                break
            if info["decision"] in kinds:
                return agent, observation
            env.step(env.action_space(agent).sample(observation["action_mask"]))
    raise AssertionError(f"no {kinds} decision in 50 games")


def legal_action(env, agent: str, observation) -> np.ndarray:
    return env.action_space(agent).sample(observation["action_mask"])


def bad_actions(env, agent: str, observation) -> list[tuple[object, str]]:
    """(action, words the error must contain) for the decision the agent faces."""
    kind = env.unwrapped.infos[agent]["decision"]
    n = len(env.action_space(agent).nvec)
    good = legal_action(env, agent, observation)
    out: list[tuple[object, str]] = [
        (np.zeros(n - 1, dtype=np.int64), "shape"),
        (np.zeros((n, 1), dtype=np.int64), "shape"),
        (good.astype(np.float64), "integer"),
        ([0.5] * n, "integer"),
        ("bid", "shape"),
    ]
    if kind == Decision.BID:
        wrong = good.copy()
        wrong[1] = 0  # the first Force token on the General, who takes no Force
        out.append((wrong, "force token #1 (dimension 1) may not go to General"))
        over = good.copy()
        over[0] = 1
        out.append((over, "choice 1 is not allowed"))
        unheld = good.copy()
        unheld[2] = 4  # a second Force token, which nobody holds at the start
        out.append((unheld, "dimension 2"))
        out.append((np.full(n, 99), "decision bid:"))
    else:
        mask = observation["action_mask"]
        choices = int(env.action_space(agent).nvec[0])
        refused = next(v for v in range(choices) if not mask[v])
        wrong = good.copy()
        wrong[0] = refused
        out.append((wrong, f"choice {refused} is not allowed"))
        tokens = good.copy()
        tokens[5] = 3
        out.append((tokens, "token dimension 5 must be 0 outside bidding"))
        out.append((-good - 1, f"decision {kind}:"))
    return out


@pytest.mark.parametrize(
    ("options", "kinds"),
    [
        (dict(players=3), (Decision.BID,)),
        (dict(players=3), (Decision.SPY, Decision.APOTHECARY_FIRST, Decision.APOTHECARY_SECOND)),
        (dict(players=2), (Decision.GUY,)),
        (dict(players=3, first_edition=True), (Decision.REMOVE,)),
    ],
)
def test_an_action_that_breaks_the_mask_raises_on_the_raw_env(options, kinds):
    env = revolution_env.raw_env(**options)
    agent, observation = advance_to(env, kinds)
    kind = env.infos[agent]["decision"]
    before = env.state_dict()
    good_shape = env.action_space(agent).shape
    for action, words in bad_actions(env, agent, observation):
        with pytest.raises(IllegalActionError) as err:
            env.step(action)
        message = str(err.value)
        assert agent in message and words in message, message
        if isinstance(action, np.ndarray) and action.dtype == np.int64 and action.shape == good_shape:
            assert str(kind) in message  # the decision is named
        assert env.state_dict() == before and env.agent_selection == agent, "a refused action changes nothing"
    env.step(legal_action(env, agent, observation))  # the env still plays on


@pytest.mark.parametrize(
    ("options", "kinds"),
    [
        (dict(players=4), (Decision.BID,)),
        (dict(players=3), (Decision.SPY, Decision.APOTHECARY_FIRST)),
        (dict(players=2), (Decision.GUY,)),
    ],
)
def test_an_action_that_breaks_the_mask_ends_the_wrapped_game_with_minus_one(options, kinds):
    env = revolution_env.env(**options)
    agent, observation = advance_to(env, kinds)
    action, _ = bad_actions(env, agent, observation)[-2]
    env.step(action)
    assert all(env.terminations.values())
    assert env.rewards == {a: (-1.0 if a == agent else 0.0) for a in env.possible_agents}
    final = {}
    for a in env.agent_iter():
        _, reward, termination, truncation, _ = env.last()
        assert termination or truncation
        final[a] = reward
        env.step(None)
    assert final == {a: (-1.0 if a == agent else 0.0) for a in env.possible_agents}
    assert env.agents == []


# --- bids, descriptions and masks both ways ----------------------------------------------------------------------


def random_counts(game, seat: int, rng: np.random.Generator) -> np.ndarray:
    """A legal bid as (T, 3) counts: each held token to a random target that takes its type."""
    counts = np.zeros((game.layout.n_targets, 3), dtype=np.int64)
    for token in range(3):
        targets = sorted(legal_targets(game, token))
        for _ in range(int(game.tokens[seat, token])):
            counts[targets[rng.integers(len(targets))], token] += 1
    return counts


@pytest.mark.parametrize("options", [dict(players=2), dict(players=3, first_edition=True), dict(players=4)], ids=_name)
def test_a_bid_built_from_counts_is_the_bid_the_game_receives(options):
    env = revolution_env.raw_env(**options)
    env.reset(seed=5)
    rng = np.random.default_rng(5)
    rounds = 0
    while not env.game.over and rounds < 8:
        placed = {}
        while env.infos[env.agent_selection]["decision"] == Decision.BID:
            agent = env.agent_selection
            seat = env.possible_agents.index(agent)
            placed[seat] = random_counts(env.game, seat, rng)
            action = bid_action(env, placed[seat])
            mask = env.observe(agent)["action_mask"]
            nvec = env.action_space(agent).nvec
            assert all(action[d] in allowed(mask, nvec, d) for d in range(len(nvec)))
            env.step(action)
        rounds += 1
        for seat, counts in placed.items():
            assert np.array_equal(env.game.revealed[seat], counts)  # revealed as placed, before cleaning
        while not env.game.over and env.infos[env.agent_selection]["decision"] != Decision.BID:
            observation = env.observe(env.agent_selection)
            env.step(env.action_space(env.agent_selection).sample(observation["action_mask"]))
    assert rounds >= 3


def test_a_bid_written_as_text_reaches_the_game():
    env = revolution_env.raw_env(players=3)
    env.reset(seed=0)  # everyone starts with 1 Force, 1 Blackmail, 3 Gold
    action = bid_action(env, "3 gold printer, 1 force priest, 1 blackmail general")
    assert describe_action(env, "player_0", action) == "bid: 1 blackmail General, 1 force Priest, 3 gold Printer"
    env.step(action)
    for _ in ("player_1", "player_2"):
        env.step(bid_action(env, "1 force spy, 1 blackmail captain, 3 gold rogue"))
    names = env.core.layout.target_names
    placed = {(names[c], TOKENS[t]): int(env.game.revealed[0, c, t]) for c, t in np.argwhere(env.game.revealed[0])}
    assert placed == {("Printer", "gold"): 3, ("Priest", "force"): 1, ("General", "blackmail"): 1}
    assert env.game.revealed[1, names.index("Rogue"), 2] == 3


def seat_name(game, seat: int) -> str:
    return "Guy" if seat >= game.rules.players else f"P{seat}"


def check_description(env, agent: str, action: np.ndarray) -> str:
    raw = env.unwrapped
    game, kind = raw.game, raw.infos[agent]["decision"]
    me = raw.possible_agents.index(agent)
    text = describe_action(env, agent, action)
    if kind == Decision.NONE:
        assert text == "none"
        return kind
    assert text.startswith(f"{kind}: "), text
    if kind == Decision.BID:
        return kind
    choice = legal_choices(game, me, kind)[int(action[0])]
    if choice is None:
        assert text == f"{kind}: {'pass' if kind == Decision.GUY else 'decline'}"
    elif kind == Decision.GUY:
        character, answered, mode = choice
        target = game.layout.target_names[character]
        assert text == f"guy: {('tie', 'beat')[mode]} {seat_name(game, answered)}'s bid on {target}"
    else:
        area, seat = choice
        assert text == f"{kind}: {seat_name(game, seat)}'s cube in {game.layout.components.areas[area].name}"
    return kind


def test_describe_action_writes_every_kind_of_decision():
    seen = set()
    for options, seed in itertools.product([dict(players=2, first_edition=True), dict(players=3)], range(6)):
        env = revolution_env.raw_env(**options)
        env.reset(seed=seed)
        for agent in env.agent_iter():
            observation, _, termination, truncation, _ = env.last()
            if termination or truncation:
                env.step(None)
                continue
            action = env.action_space(agent).sample(observation["action_mask"])
            seen.add(check_description(env, agent, action))
            for other in env.possible_agents:  # the others have nothing to decide in the AEC order
                if other != agent and env.infos[other]["decision"] == Decision.NONE:
                    seen.add(check_description(env, other, np.zeros_like(action)))
            env.step(action)
    assert seen == set(ALL_KINDS)


def test_a_bid_description_lists_the_tokens_per_target():
    env = revolution_env.raw_env(players=2)
    env.reset(seed=0)
    action = bid_action(env, "2 gold scheming, 1 gold rogue, 1 force spy, 1 blackmail captain")
    assert describe_action(env, "player_0", action) == (
        "bid: 1 blackmail Captain, 1 gold Rogue, 1 force Spy, 2 gold Scheming"
    )


@pytest.mark.parametrize("players", [2, 3, 4])
def test_split_mask_and_flat_mask_are_inverses(players):
    env = revolution_env.raw_env(players=players)
    env.reset(seed=0)
    nvec = env.action_space("player_0").nvec
    rng = np.random.default_rng(players)
    masks = [env.observe(a)["action_mask"] for a in env.possible_agents]
    masks += [rng.integers(0, 2, nvec.sum(), dtype=np.int8) for _ in range(5)]
    for mask in masks:
        parts = split_mask(mask, nvec)
        assert [len(p) for p in parts] == nvec.tolist()
        assert np.array_equal(flat_mask(parts), mask)
        assert all(np.array_equal(p, q) for p, q in zip(split_mask(flat_mask(parts), nvec), parts))
    with pytest.raises(ValueError, match="mask"):
        split_mask(masks[0][:-1], nvec)
