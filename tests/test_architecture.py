"""The layers only look down (docs/architecture.md): no import cycle between modules, every import counted
(inside functions too), and no module of ``revolution_env`` imports ``revolution_training`` (the folder
``training/``). The engine imports no RL library; only ``revolution_training`` knows stable-baselines3."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = {"revolution_env": "revolution_env", "training": "revolution_training"}  # folder: package


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    parts[0] = PACKAGES[parts[0]]
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def modules() -> dict[str, Path]:
    return {module_name(p): p for pkg in PACKAGES for p in sorted((ROOT / pkg).rglob("*.py"))}


def imports(name: str, path: Path, known: set[str]) -> set[str]:
    """Every module this one imports (absolute names), wherever the import statement stands."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    out = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            out.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - (node.level - 1)]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module
            for alias in node.names:  # `from pkg import module` imports the module
                sub = f"{target}.{alias.name}"
                out.add(sub if sub in known else target)
    return out


def graph() -> dict[str, set[str]]:
    mods = modules()
    known = set(mods)
    return {name: {m for m in imports(name, path, known) if m in known and m != name} for name, path in mods.items()}


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan)."""
    index, low, stack, on, out = {}, {}, [], set(), []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in edges[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                out.append(sorted(component))

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return out


def all_imports() -> dict[str, set[str]]:
    mods = modules()
    return {name: imports(name, path, set(mods)) for name, path in mods.items()}


def test_no_import_cycle_between_modules():
    assert cycles(graph()) == []


def test_the_cycle_finder_finds_a_cycle():
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_revolution_env_never_imports_training():
    upward = {m: sorted(i for i in deps if i.split(".")[0] in ("training", "revolution_training"))
              for m, deps in all_imports().items() if m.startswith("revolution_env")}  # fmt: skip
    assert {m: d for m, d in upward.items() if d} == {}


def test_no_dynamic_import_of_training_either():
    for name, path in modules().items():
        if not name.startswith("revolution_env"):
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call) and getattr(node.func, "attr", getattr(node.func, "id", "")) in (
                "import_module",
                "__import__",
            ):
                literal = node.args[0] if node.args and isinstance(node.args[0], ast.Constant) else None
                assert not (literal and str(literal.value).split(".")[0] in ("training", "revolution_training")), name


# docs/architecture.md: a module may import its own layer and the layers above it (a lower number), never below.
LAYERS = {
    "revolution_env.common": 0,
    "revolution_env.engine": 1,
    "revolution_env.env": 2,
    "revolution_env.agents": 3,
    "revolution_env.arena": 4,
    "revolution_env.evaluation": 5,
    "revolution_env.interop": 5,
    "revolution_env.frontends": 6,
    "revolution_env": 6,  # the package facade and `python -m revolution_env`
    "revolution_training": 7,
}


def layer(module: str) -> int:
    parts = module.split(".")
    for n in range(len(parts), 0, -1):
        if ".".join(parts[:n]) in LAYERS:
            return LAYERS[".".join(parts[:n])]
    raise AssertionError(f"{module}: in no layer of docs/architecture.md")


def test_no_module_imports_a_layer_below_its_own():
    wrong = {(m, d) for m, deps in graph().items() for d in deps if layer(d) > layer(m)}
    assert wrong == set()


def test_each_layer_imports_only_what_it_may():
    rl = ("gymnasium", "pettingzoo", "torch", "stable_baselines3", "sb3_contrib")
    for module, deps in all_imports().items():
        roots = {d.split(".")[0] for d in deps}
        if module.startswith("revolution_env.engine"):
            assert not roots & set(rl), f"{module}: the engine imports no RL library"
            below = ("revolution_env.common", "revolution_env.engine")
            assert all(d.startswith(below) for d in deps if d.startswith("revolution_env.")), module
        if module.startswith("revolution_env"):
            assert not roots & {"stable_baselines3", "sb3_contrib"}, f"{module}: only training knows SB3"
        if module.startswith("revolution_env.env"):
            below = ("revolution_env.common", "revolution_env.engine", "revolution_env.env")
            assert all(d.startswith(below) for d in deps if d.startswith("revolution_env.")), module


def test_each_layer_is_one_folder_and_no_module_lies_loose():
    """Every module of the package sits in a layer's folder; only the facade and ``__main__`` stand at its root."""
    loose = sorted(p.name for p in (ROOT / "revolution_env").glob("*.py"))
    assert loose == ["__init__.py", "__main__.py"]
    folders = {p.parent.relative_to(ROOT / "revolution_env").parts[0] for p in (ROOT / "revolution_env").rglob("*.py")
               if p.parent != ROOT / "revolution_env"}  # fmt: skip
    assert {f"revolution_env.{f}" for f in folders} <= set(LAYERS)


def test_pyproject_installs_every_package_under_our_names():
    import tomllib

    setuptools = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["setuptools"]
    folders = {module_name(p.parent / "__init__.py") for pkg in PACKAGES for p in (ROOT / pkg).rglob("__init__.py")}
    assert set(setuptools["packages"]) == folders
    assert setuptools["package-dir"] == {"revolution_training": "training"}
    assert all(name.split(".")[0] in ("revolution_env", "revolution_training") for name in setuptools["packages"])


def test_the_layer_table_of_the_docs_is_this_one():
    """docs/architecture.md's table names each layer's folders with the numbers of ``LAYERS`` (data files aside)."""
    import re

    documented = {}
    for line in (ROOT / "docs/architecture.md").read_text(encoding="utf-8").splitlines():
        row = re.match(r"\|\s*(\d+)\s*\|[^|]*\|([^|]*)\|", line)
        if not row:
            continue
        for folder in re.findall(r"`(revolution_env/[a-z_]+/|training/|revolution_env/__init__\.py)`", row.group(2)):
            name = {"training/": "revolution_training", "revolution_env/__init__.py": "revolution_env"}.get(
                folder, folder.rstrip("/").replace("/", ".")
            )
            documented[name] = int(row.group(1))
    documented.pop("revolution_env.data", None)  # JSON files, no module
    assert documented == LAYERS
