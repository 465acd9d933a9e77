"""Dependencies are used through their public API, or pinned below the release that may move what we rely on.

A module of another package that is private by its name (a part starting with ``_``) or by its project's word
(Numba's ``numba.core``, ``numba.np``: its documented API is ``numba`` and ``numba.extending``) may change in any
release; code of ours that imports one needs an upper bound on that package in ``pyproject.toml`` (with the reason
beside it) and a test of what it relies on. The methods a library documents for subclasses to override
(Stable-Baselines3's ``_setup_model`` and ``_build``, RLlib's ``_forward``) are its extension API; the pins below
its next major version cover them too.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

tomllib = pytest.importorskip("tomllib")  # Python 3.11 and later

ROOT = Path(__file__).resolve().parent.parent
CODE = ("revolution_env", "training")
PRIVATE_BY_WORD = ("numba.core", "numba.np", "numba.cpython", "numba.misc", "numba.typed.typedobjectutils")
# The import name -> the distribution whose requirement carries the pin.
DISTRIBUTION = {"numba": "numba", "stable_baselines3": "stable-baselines3", "sb3_contrib": "sb3-contrib",
                "ray": "ray", "tianshou": "tianshou", "torchrl": "torchrl", "tensordict": "tensordict"}  # fmt: skip
# Packages whose documented subclass hooks (protected names) our classes override.
SUBCLASSED = ("stable-baselines3", "sb3-contrib", "ray", "tianshou")


def private_imports() -> dict[str, set[str]]:
    """Each private module imported by the package's code -> the files that import it."""
    found: dict[str, set[str]] = {}
    for folder in CODE:
        for path in sorted((ROOT / folder).rglob("*.py")):
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                names = []
                if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                    names = [node.module]
                elif isinstance(node, ast.Import):
                    names = [alias.name for alias in node.names]
                for name in names:
                    top = name.split(".")[0]
                    if top in {"revolution_env", "revolution_training", "__future__"}:
                        continue
                    parts = name.split(".")
                    if any(p.startswith("_") for p in parts) or name.startswith(PRIVATE_BY_WORD):
                        found.setdefault(name, set()).add(str(path.relative_to(ROOT)))
    return found


def requirements() -> list[str]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    return list(project["dependencies"]) + [r for extra in project["optional-dependencies"].values() for r in extra]


def upper_bounded(distribution: str) -> bool:
    """Whether every requirement of ``distribution`` in pyproject.toml has an upper bound (``<``)."""
    reqs = [r for r in requirements() if re.match(rf"{re.escape(distribution)}(\[[^\]]*\])?\s*[<>=!~]", r)]
    return bool(reqs) and all("<" in r.split(";")[0] for r in reqs)


def test_every_private_import_is_of_a_package_pinned_below_its_next_release() -> None:
    unpinned = {
        name: sorted(files)
        for name, files in private_imports().items()
        if not upper_bounded(DISTRIBUTION.get(name.split(".")[0], name.split(".")[0]))
    }
    assert not unpinned, f"private modules of packages with no upper bound in pyproject.toml: {unpinned}"


def test_the_libraries_whose_hooks_we_override_are_pinned_below_their_next_major_version() -> None:
    assert [d for d in SUBCLASSED if not upper_bounded(d)] == []


def test_the_checker_sees_a_private_import_and_an_unpinned_package(tmp_path) -> None:
    """The check above can fail: Numba's private modules are seen, and a requirement without ``<`` is unpinned."""
    assert any(name.startswith("numba.core") for name in private_imports())
    assert not upper_bounded("pyyaml") and upper_bounded("torch")


def test_numbas_cache_index_is_read_where_the_compiled_bots_look(tmp_path, monkeypatch) -> None:
    """``agents/compiled.py`` asks Numba's cache index, through private names, whether the bots' machine code is
    cached before it calls it (numba's pin covers it): were it moved, the check would answer False for good and
    the bots would play as plain Python. A function compiled here is absent from the cache, then present."""
    compiled = pytest.importorskip("revolution_env.agents.compiled")
    if not compiled.COMPILED:
        pytest.skip("Numba is not installed")
    monkeypatch.syspath_prepend(str(tmp_path))
    (tmp_path / "cached_twice.py").write_text(
        "from revolution_env.common.jit import jit\n\n\n@jit\ndef twice(x):\n    return 2 * x\n", encoding="utf-8"
    )
    from cached_twice import twice

    signature = (twice.typeof_pyval(1.5),)
    assert compiled._cache_folder(twice) == tmp_path / "__pycache__"
    assert not compiled.in_numbas_cache(twice, signature)
    assert twice(1.5) == 3.0
    assert compiled.in_numbas_cache(twice, signature)
    assert not compiled.in_numbas_cache(twice, (twice.typeof_pyval(1),))  # an int: another signature, not compiled
