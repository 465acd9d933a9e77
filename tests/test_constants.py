"""One definition of each constant: the token types (``Token``), the phases (``Phase``) and the decisions
(``Decision``) are enums of the engine, whose plain-int copies for compiled code derive from them; the names a
file or a state dict writes are their ``str()``; and no module restates another's literal constant."""

from __future__ import annotations

import ast
import json
from pathlib import Path

import numpy as np

from revolution_env.agents import decisions
from revolution_env.engine import kernels
from revolution_env.engine.components import BLACKMAIL, FORCE, GOLD, TOKEN_TYPES, Token
from revolution_env.engine.game import BID, OVER, Decision, Game, Phase, Rules, make_layout
from revolution_env.engine.random_play import random_bids, random_choice
from revolution_env.engine.scenario import state_dict

ROOT = Path(__file__).resolve().parent.parent


def test_the_token_types_are_one_enum_named_as_files_write_them():
    assert TOKEN_TYPES == tuple(str(t) for t in Token) == ("force", "blackmail", "gold")
    assert tuple(Token) == (FORCE, BLACKMAIL, GOLD) and f"{Token.GOLD}" == "gold"
    assert np.arange(3)[GOLD] == 2  # an index into every array of three


def test_compiled_code_reads_plain_ints_derived_from_the_enums():
    pairs = [
        (kernels.BIDDING, Phase.BIDDING), (kernels.SCHEMING, Phase.SCHEMING),
        (kernels.RESOLUTION, Phase.RESOLUTION), (kernels.OVER, Phase.OVER),
        (kernels.K_NONE, Decision.NONE), (kernels.K_BID, Decision.BID), (kernels.K_GUY, Decision.GUY),
        (kernels.K_SPY, Decision.SPY), (kernels.K_APO1, Decision.APOTHECARY_FIRST),
        (kernels.K_APO2, Decision.APOTHECARY_SECOND), (kernels.K_REMOVE, Decision.REMOVE),
        (kernels.FORCE, Token.FORCE), (kernels.BLACKMAIL, Token.BLACKMAIL), (kernels.GOLD, Token.GOLD),
    ]  # fmt: skip
    for value, member in pairs:
        assert type(value) is int and value == member, member
    for name in ("FORCE", "BLACKMAIL", "GOLD", "K_NONE", "K_BID", "K_GUY", "K_SPY", "K_APO1", "K_REMOVE"):
        assert getattr(decisions, name) is getattr(kernels, name), name


def test_a_phase_is_a_number_written_as_its_name():
    game = Game(make_layout(Rules(players=2)), seed=1)
    assert game.phase is Phase.BIDDING and game.phase == "bidding" and game.phase != "over" and game.phase == 0
    assert {Phase.OVER: 1}[3] == 1 and hash(Phase.OVER) == hash(3)
    rng = np.random.default_rng(1)
    while "round_state" not in state_dict(game):  # to a decision in the middle of a round
        if game.decision.kind == BID:
            game.submit_bids(random_bids(game, rng))
        else:
            game.choose(random_choice(game, rng))
    written = json.loads(json.dumps(state_dict(game)))["round_state"]["phase"]
    assert written == str(game.phase) == game.phase.name.lower() and written in ("scheming", "resolution")
    assert str(OVER) == f"{OVER}" == "over"


def literal_constants() -> dict[tuple[str, str], set[str]]:
    """(NAME, repr of its literal value) -> the modules that assign it at module level."""
    out: dict[tuple[str, str], set[str]] = {}
    for path in sorted([*(ROOT / "revolution_env").rglob("*.py"), *(ROOT / "training").rglob("*.py")]):
        for node in ast.parse(path.read_text(encoding="utf-8")).body:
            if not isinstance(node, (ast.Assign, ast.AnnAssign)) or node.value is None:
                continue
            try:
                value = ast.literal_eval(node.value)
            except ValueError:
                continue
            for target in node.targets if isinstance(node, ast.Assign) else [node.target]:
                if isinstance(target, ast.Name):
                    pairs = [(target.id, value)]
                elif isinstance(target, ast.Tuple) and isinstance(value, tuple) and len(value) == len(target.elts):
                    pairs = [(t.id, v) for t, v in zip(target.elts, value) if isinstance(t, ast.Name)]
                else:
                    continue
                for name, v in pairs:
                    if name.isupper():
                        out.setdefault((name, repr(v)), set()).add(str(path.relative_to(ROOT)))
    return out


def test_no_module_restates_a_constant_of_another():
    twice = {key: sorted(paths) for key, paths in literal_constants().items() if len(paths) > 1}
    assert twice == {}


def test_the_finder_finds_a_restated_constant():
    found = literal_constants()
    assert found[("MAX_GUY_BIDS", "6")] == {"revolution_env/engine/game.py"}
    assert ("GOLD", "2") not in found  # the enum's members are no literals
