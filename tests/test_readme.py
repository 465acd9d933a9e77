"""Every command in the README runs as written.

The README's code blocks are read as a new user would copy them. Python snippets run, in a fresh interpreter.
Every shell command is checked: a ``revolution`` command is parsed by the real argument parser, and every file it
names must exist; a script is parsed by its own parser; ``pip install -e ".[extras]"`` names extras that
``pyproject.toml`` declares. The cheap commands then run for real (scenario, random, an evaluation of a few games);
the others are only parsed, and :func:`too_long` says why each one is. Commands run in a scratch folder that sees
the repository's files, so that what they write (``game.json``, ``runs/``) stays out of the checkout.
"""

from __future__ import annotations

import argparse
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from revolution_env.frontends.cli import build_parser

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text(encoding="utf-8")
BLOCKS = re.findall(r"```(\w*)\n(.*?)```", README, re.DOTALL)
PYTHON = [code for lang, code in BLOCKS if lang == "python"]
SHELL = [code for lang, code in BLOCKS if lang == "bash"]
OUTPUTS = {"--out", "--export", "--logdir", "--replays"}  # options naming what a command writes (or a folder it reads)
CHEAP_GAMES = 12  # an evaluation of at most this many games per lineup runs for real


def commands() -> list[list[str]]:
    """Every shell command of the README's bash blocks, as argument lists (``a && b`` gives two)."""
    out = []
    for block in SHELL:
        for line in block.splitlines():
            words = shlex.split(line, comments=True)
            while words:
                cut = words.index("&&") if "&&" in words else len(words)
                out.append(words[:cut])
                words = words[cut + 1 :]
    return out


COMMANDS = commands()
REVOLUTION = [c for c in COMMANDS if Path(c[0]).name == "revolution"]


def command_id(words: list[str]) -> str:
    return " ".join(words)[:80]


def too_long(args: argparse.Namespace) -> str | None:
    """Why a parsed ``revolution`` command is not run here, or None to run it."""
    if args.command in ("train", "exploit", "main", "psro", "iterate"):
        return "training: minutes to hours"
    if args.command == "play":
        return "interactive: it waits for a person's bids"
    if args.command == "serve":
        return "a web server: it runs until stopped"
    if args.command == "eval" and args.ray is not None:
        return "needs Ray and a cluster"
    if args.command == "eval" and args.games > CHEAP_GAMES:
        return f"{args.games} games per lineup: minutes on 2 cores"
    return None


def named_files(words: list[str]) -> list[str]:
    """The files and folders a command reads: arguments that look like paths, inside mixtures too, outputs excepted."""
    out = []
    for i, word in enumerate(words[1:], 1):
        if words[i - 1] in OUTPUTS or word.startswith("-"):
            continue
        for part in re.split(r"[,]", word.removeprefix("mix:")):
            part = part.split("@")[0].removesuffix(":sample")
            if "/" in part or re.search(r"\.(json|yaml|pt|py|md)$", part):
                out.append(part)
    return out


def test_the_readme_has_commands_and_snippets():
    assert len(PYTHON) >= 3 and len(REVOLUTION) >= 10, (len(PYTHON), len(REVOLUTION))


@pytest.mark.parametrize("words", REVOLUTION, ids=command_id)
def test_a_revolution_command_parses_and_its_files_exist(words):
    try:
        build_parser().parse_args(words[1:])
    except SystemExit as exc:
        pytest.fail(f"{' '.join(words)}: the argument parser refuses it (exit {exc.code})")
    # a file the README's own commands write first (game.json, a folder's population.json) is not in the checkout
    written = {w for c in COMMANDS for i, w in enumerate(c) if i and c[i - 1] in OUTPUTS}
    missing = [
        f
        for f in named_files(words)
        if not any(f == w or f.startswith(w.rstrip("/") + "/") for w in written) and not (ROOT / f).exists()
    ]
    assert not missing, f"{' '.join(words)} names files that do not exist: {missing}"


@pytest.mark.parametrize("words", [c for c in COMMANDS if Path(c[0]).name != "revolution"], ids=command_id)
def test_another_command_is_what_the_repository_offers(words):
    """pip's extras exist, a script exists and its own parser takes the arguments, other tools are named only."""
    tool = Path(words[0]).name
    if tool == "pip" and "-e" in words:
        spec = words[words.index("-e") + 1]
        extras = set(re.findall(r"\[(.*)\]", spec)[0].split(",")) if "[" in spec else set()
        tomllib = pytest.importorskip("tomllib")  # Python 3.11 and later
        declared = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
        assert extras <= set(declared), f"{spec}: extras not in pyproject.toml: {extras - set(declared)}"
    elif tool in ("python", "python3") and words[1].endswith(".py"):
        script = ROOT / words[1]
        assert script.is_file(), words[1]
        parse_script_arguments(script, words[2:])
    elif tool in ("python", "python3") and words[1] == "-m":
        assert words[2] in ("venv", "pytest"), words  # the quick start's own steps
    elif tool == "sphinx-build":  # the documentation site: warnings as errors, with the repository's config
        assert "-W" in words and (ROOT / words[words.index("-c") + 1] / "conf.py").is_file(), words
    else:  # activating the venv, TensorBoard on a run's logs: not ours to run
        assert tool in ("source", "tensorboard"), f"a command the test does not know how to check: {words}"


class Parsed(Exception):
    """Raised by the patched ``parse_args`` once a script's own parser has accepted its arguments."""


def parse_script_arguments(script: Path, argv: list[str]) -> None:
    """Run ``script``'s ``main`` only as far as its argument parser: the real parser, nothing after it."""
    import runpy
    from unittest import mock

    original = argparse.ArgumentParser.parse_args

    def parse_then_stop(self, args=None, namespace=None):
        original(self, args, namespace)
        raise Parsed

    with (
        mock.patch.object(argparse.ArgumentParser, "parse_args", parse_then_stop),
        mock.patch.object(sys, "argv", [str(script), *argv]),
        pytest.raises(Parsed),
    ):
        runpy.run_path(str(script), run_name="__main__")


@pytest.fixture(scope="module")
def workdir(tmp_path_factory) -> Path:
    """A scratch folder that sees the repository's files, for commands that write where they are run."""
    work = tmp_path_factory.mktemp("readme")
    for entry in ("checkpoints", "configs", "docs", "examples", "experiments", "scripts", "tests", "README.md"):
        (work / entry).symlink_to(ROOT / entry)
    return work


def run(argv: list[str], cwd: Path, timeout: int = 300) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)


def test_the_cheap_revolution_commands_run(workdir):
    """In the README's order, so that a command may use what an earlier one wrote (``game.json``)."""
    ran = []
    for words in REVOLUTION:
        args = build_parser().parse_args(words[1:])
        if too_long(args):
            continue
        proc = run([sys.executable, "-m", "revolution_env", *words[1:]], workdir)
        assert proc.returncode == 0, f"{' '.join(words)}:\n{proc.stderr[-2000:]}"
        ran.append(args.command)
    assert {"scenario", "random", "eval"} <= set(ran), ran


@pytest.mark.parametrize("code", PYTHON, ids=lambda code: code.strip().splitlines()[-1][:60])
def test_a_python_snippet_runs(code, workdir):
    proc = run([sys.executable, "-c", code], workdir)
    assert proc.returncode == 0, proc.stderr[-2000:]


def test_every_subcommand_says_what_it_does():
    """``revolution CMD --help`` opens with a description, for every command the README sends a user to."""
    sub = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    bare = [name for name, parser in sub.choices.items() if not (parser.description or "").strip()]
    assert not bare, f"subcommands without a description: {bare}"


# --- a guide, not a notebook -------------------------------------------------------------------------------------


def readme_tables():
    """``scripts/readme_tables.py`` as a module."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("readme_tables", ROOT / "scripts" / "readme_tables.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_readme_tables_are_the_reports():
    """Every table of the README is generated from the reports and equal to what they give today."""
    tables = readme_tables()
    assert tables.BLOCK.search(README), "the README has no generated table"
    assert tables.stale(README) == [], "run: python scripts/readme_tables.py"


def test_the_table_check_finds_a_changed_figure():
    tables = readme_tables()
    block = tables.BLOCK.search(README)
    figure = re.search(r"\d+\.\d%", block.group(3)).group(0)
    changed = README.replace(block.group(3), block.group(3).replace(figure, "1" + figure, 1))
    assert tables.stale(changed) == ["results"]


DATE = re.compile(r"\b20\d\d-\d\d-\d\d\b")
COMMIT = re.compile(r"\bcommit [0-9a-f]{7,40}\b|`[0-9a-f]{7,40}`")
ISSUE = re.compile(r"\bissue \d+\b", re.IGNORECASE)


def outside_generated(text: str) -> str:
    return readme_tables().BLOCK.sub("", text)


def test_the_readme_is_a_guide():
    """At most 200 lines; no dates, commit hashes or issue numbers; no table typed by hand."""
    lines = README.splitlines()
    assert len(lines) <= 200, f"the README has {len(lines)} lines: move the detail to docs/"
    prose = outside_generated(README)
    for pattern in (DATE, COMMIT, ISSUE):
        assert not pattern.search(prose), f"the README holds history: {pattern.search(prose).group(0)!r}"
    typed = [line for line in prose.splitlines() if line.startswith("|")]
    assert not typed, f"a table typed by hand (generate it with scripts/readme_tables.py): {typed[0][:80]}"


def test_the_guide_checks_can_fail():
    assert DATE.search("(2026-11-27, ") and COMMIT.search("the run at commit 4eb955c") and ISSUE.search("(issue 32)")
    assert not DATE.search("1,024 games") and not COMMIT.search("a decade of games")
