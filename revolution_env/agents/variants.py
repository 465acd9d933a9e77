"""Held-out variants of the heuristic bots: the three styles with other parameters, opponents no training run meets.

A bot trained against ``value``, ``bargain`` and ``area`` may have learnt their habits rather than the game; these
variants keep each style's code and change how it reads its rivals or what it wants, so that a gauntlet against
them measures strength on opponents nobody trained against (docs/heldout.md, which tabulates their parameters;
:mod:`.heldout` keeps them out of training). Each sets class attributes only: its decisions are its style's code,
with its own parameters.

Two players, ``value`` sets its own ``sharpness`` and the ``lock``, ``trailing`` and ``special_scale`` of its
judgement (``ValueBot.__init__``): its variants change none of those.
"""

from __future__ import annotations

from typing import Any

from revolution_env.agents.heuristics import AreaBot, BargainBot, HeuristicBot, ValueBot


class ValueMirror(ValueBot):
    """``value-mirror``: ``value`` that expects its rivals to think as it does: four fifths of its samples of
    their bids are planned as it plans its own (``value``: a third)."""

    name = "value-mirror"
    mirror = 0.8


class ValueHabit(ValueBot):
    """``value-habit``: ``value`` that expects its rivals to bid again as they bid last round: four fifths of its
    samples of their bids repeat it (``value``: none), and the rest lean more towards where they bid."""

    name = "value-habit"
    habit = 0.8
    persistence = 4.0


class BargainBold(BargainBot):
    """``bargain-bold``: ``bargain`` that buys what it wins half of the time (``bargain``: 70%) and prizes the
    Printer more."""

    name = "bargain-bold"
    sure = 0.5
    printer_bonus = 2.5


class BargainCautious(BargainBot):
    """``bargain-cautious``: ``bargain`` that buys only what it wins nine times in ten: fewer characters, each with
    more tokens."""

    name = "bargain-cautious"
    sure = 0.9


class AreaWide(AreaBot):
    """``area-wide``: ``area`` that spreads its bid over six characters (``area``: four)."""

    name = "area-wide"
    focus = 6


VARIANTS: dict[str, type[HeuristicBot]] = {
    bot.name: bot for bot in (ValueMirror, ValueHabit, BargainBold, BargainCautious, AreaWide)
}


def changed_parameters(bot: type[HeuristicBot]) -> dict[str, Any]:
    """What a variant changes of its style: parameter name -> (its style's value, the variant's); a judgement's
    fields as ``judgement.FIELD``. docs/heldout.md's table is these."""
    base = next(cls for cls in bot.__mro__ if cls.name == bot.style)
    out: dict[str, Any] = {}
    for key in dir(base):
        if key.startswith("_") or key in ("name", "style") or callable(getattr(base, key)):
            continue
        ours, theirs = getattr(bot, key), getattr(base, key)
        if key == "judgement":
            for field in ours._fields:
                if getattr(ours, field) != getattr(theirs, field):
                    out[f"judgement.{field}"] = (getattr(theirs, field), getattr(ours, field))
        elif ours != theirs:
            out[key] = (theirs, ours)
    return out
