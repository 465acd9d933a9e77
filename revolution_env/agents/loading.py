"""Build an agent from a spec string: ``random``, a heuristic's name (or a held-out variant's), a checkpoint file, a
mixture (``mix:``), a checkpoint played with search over its bids (``search:PATH``, :mod:`.search`), or a round's
equilibrium searched for every seat (``equilibrium:[KEY=VALUE:]...POLICY``, :mod:`.equilibrium`).

Specs are what the command line and the evaluation reports call agents. A checkpoint (a ``.pt`` file, or any
existing file) is loaded by :mod:`.checkpoint` (torch reads the file; no training library is needed). It plays its
most likely legal action, or samples from its masked distribution (a mixed strategy, seeded by the agent's
``reset``) where the checkpoint says it is meant to play so (a run with ``evaluation.sample``: its ``policy["play"]`` is
``sample``); ``:sample`` after the path (``checkpoints/two_players.pt:sample``) samples, ``:argmax`` takes the
argmax, whatever the checkpoint says. ``mix:SPEC@W,SPEC@W`` draws
the agent of each decision among several (:mod:`.mixture`).
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Callable, Mapping
from typing import Any

from revolution_env.agents.base import Agent, RandomAgent
from revolution_env.agents.equilibrium import PREFIX as EQUILIBRIUM
from revolution_env.agents.equilibrium import (
    is_equilibrium,
    load_equilibrium,
    parse_spec,
    play_problem,
    temperature_problem,
)
from revolution_env.agents.mixture import PREFIX as MIXTURE
from revolution_env.agents.mixture import (
    is_meta,
    is_mixture,
    load_meta,
    load_mixture,
    meta_members,
    parse_mixture,
    rename_components,
)
from revolution_env.agents.search import PREFIX as SEARCH
from revolution_env.agents.search import is_search, load_search, searched_spec

CHECKPOINT_SUFFIXES = (".zip", ".pt")
SAMPLING = ":sample"  # after a checkpoint's path: the policy samples its actions instead of taking the argmax
ARGMAX = ":argmax"  # after a checkpoint's path: the policy takes its most likely action


def _heuristics() -> Mapping[str, Callable[..., Agent]]:
    """The heuristic bots by name, and their held-out variants (``value-mirror``, ...), or nothing where the modules
    are not there (yet)."""
    bots: dict[str, Callable[..., Agent]] = {}
    for name, table in (("heuristics", "HEURISTICS"), ("variants", "VARIANTS")):
        try:
            module = importlib.import_module(f"revolution_env.agents.{name}")
        except ModuleNotFoundError as exc:
            if exc.name != f"revolution_env.agents.{name}":
                raise
            continue
        bots.update(getattr(module, table, {}))
    return bots


def known_specs() -> list[str]:
    """The agent names ``load_agent`` knows, checkpoints aside."""
    return ["random", *sorted(_heuristics())]


def checkpoint_path(spec: str) -> str:
    """The file a checkpoint spec names: the spec without its ``:sample`` or ``:argmax`` suffix."""
    return spec.removesuffix(SAMPLING).removesuffix(ARGMAX)


def is_checkpoint(spec: str) -> bool:
    if is_mixture(spec) or is_meta(spec) or is_search(spec) or is_equilibrium(spec):
        return False
    path = checkpoint_path(spec)
    return path.endswith(CHECKPOINT_SUFFIXES) or os.path.exists(path)


def is_checkpoint_file(spec: str) -> bool:
    """Whether ``spec`` names a checkpoint whose file exists."""
    return is_checkpoint(spec) and os.path.isfile(checkpoint_path(spec))


def display_name(spec: str, folder: bool = True) -> str:
    """An agent spec as reports name it: a checkpoint by its folder and file stem (``checkpoints/three_players``;
    by the stem alone with ``folder=False``, as the web viewer's column headers have it), keeping a ``:sample``; a
    mixture by its components so named (its weights as written); any other spec as written."""
    if is_mixture(spec) or (is_meta(spec) and not spec.endswith(".json")):
        return rename_components(spec, lambda part: display_name(part, folder))
    if is_search(spec):
        return SEARCH + display_name(searched_spec(spec), folder)
    if is_equilibrium(spec):
        policy = _equilibrium_policy(spec)  # the options kept as written, the policy named as reports name it
        return spec if policy == spec else spec[: len(spec) - len(policy)] + display_name(policy, folder)
    path = checkpoint_path(spec)
    if "/" not in path and os.sep not in path and not path.endswith(CHECKPOINT_SUFFIXES):
        return spec
    sampling = spec[len(path) :]
    path = os.path.normpath(path)
    stem = os.path.splitext(os.path.basename(path))[0]
    parent = os.path.basename(os.path.dirname(path)) if folder else ""
    return (f"{parent}/{stem}" if parent else stem) + sampling


def _equilibrium_policy(spec: str) -> str:
    """The policy an ``equilibrium:`` spec searches over (its options stripped), or the spec where it is malformed."""
    try:
        return parse_spec(spec)[1]
    except ValueError:
        return spec


def spec_problem(spec: Any) -> str | None:
    """Why :func:`load_agent` would refuse ``spec``, found without loading anything: None where it names ``random``,
    a heuristic, a checkpoint file that exists, or a mixture of those."""
    if is_mixture(spec) or is_meta(spec):
        try:
            parts = parse_mixture(spec) if is_mixture(spec) else meta_members(spec)
        except ValueError as exc:
            return str(exc)
        return next((f"in {spec!r}, {problem}" for name, _ in parts if (problem := spec_problem(name))), None)
    if not isinstance(spec, str) or not spec:
        return f"expected a non-empty agent spec, got {spec!r}"
    if is_search(spec):
        inner = searched_spec(spec)
        if not is_checkpoint_file(inner) or is_search(inner):
            return f"{spec!r}: expected {SEARCH}PATH, with PATH a policy checkpoint file that exists"
        if inner != checkpoint_path(inner):
            return f"{spec!r}: a search draws from the policy and takes its argmax itself: give {SEARCH}PATH alone"
        return None
    if is_equilibrium(spec):
        try:
            options, policy = parse_spec(spec)
        except ValueError as exc:
            return str(exc)
        if policy in known_specs():
            if "play" in options:
                return play_problem(spec, policy)
            return temperature_problem(spec, options, named=True)
        if problem := temperature_problem(spec, options, named=False):
            return problem
        if not is_checkpoint_file(policy) or policy != checkpoint_path(policy):
            return (
                f"{spec!r}: expected {EQUILIBRIUM}[KEY=VALUE:]...POLICY, POLICY random, a heuristic or a policy "
                "checkpoint file that exists (the search samples it, and play= says how it plays the rest)"
            )
        return None
    if spec in known_specs() or is_checkpoint_file(spec):
        return None
    return f"{spec!r} is neither a known agent ({', '.join(known_specs())}) nor a checkpoint file that exists"


def load_checkpoint_agent(spec: str, **env_options: Any) -> Agent:
    """A trained policy as an agent (:func:`.checkpoint.load_policy_agent`): sampling if the spec ends with
    ``:sample``, the argmax with ``:argmax``, else as the checkpoint says it plays."""
    from revolution_env.agents.checkpoint import load_policy_agent

    deterministic = {SAMPLING: False, ARGMAX: True}.get(spec[len(checkpoint_path(spec)) :])
    return load_policy_agent(checkpoint_path(spec), deterministic=deterministic, **env_options)


def load_agent(spec: str, **env_options: Any) -> Agent:
    """The agent a spec names, built for these environment options.

    ``"random"`` is :class:`RandomAgent`; a heuristic's name comes from
    ``revolution_env.agents.heuristics.HEURISTICS``; a ``.zip``/``.pt`` path or an existing file is a checkpoint
    (playing as it says, its argmax by default; ``PATH:sample`` samples, ``PATH:argmax`` takes the argmax);
    ``mix:SPEC@W,SPEC@W`` is a :class:`.mixture.MixtureAgent`; ``search:PATH`` a :class:`.search.SearchAgent`;
    ``equilibrium:...`` an :class:`.equilibrium.EquilibriumAgent`.
    An unknown spec raises ``ValueError`` listing the known names.
    """
    if not isinstance(spec, str) or not spec:
        raise ValueError(f"agent spec: expected a non-empty string, got {spec!r}")
    if spec == "random":
        return RandomAgent(**env_options)
    heuristics = _heuristics()
    if spec in heuristics:
        return heuristics[spec](**env_options)
    if is_mixture(spec):
        return load_mixture(spec, load_agent, **env_options)
    if is_meta(spec):
        return load_meta(spec, load_agent, **env_options)
    if is_search(spec):
        if (problem := spec_problem(spec)) is not None:
            raise ValueError(problem)
        return load_search(spec, load_checkpoint_agent, **env_options)
    if is_equilibrium(spec):
        if (problem := spec_problem(spec)) is not None:
            raise ValueError(problem)
        return load_equilibrium(spec, load_agent, lambda name: name in known_specs(), **env_options)
    if is_checkpoint(spec):
        return load_checkpoint_agent(spec, **env_options)
    raise ValueError(
        f"unknown agent spec {spec!r} (known: {', '.join(known_specs())}, a checkpoint file .zip/.pt, optionally "
        f"with {SAMPLING} or {ARGMAX}, {MIXTURE}SPEC@W,SPEC@W,..., {SEARCH}PATH or {EQUILIBRIUM}[KEY=VALUE:]...POLICY)"
    )
