"""The docs the code cites are in the repository, and what they show is what the code does.

Every citation of a Markdown file (``docs/rules.md §5``, ``report.md``) anywhere in the repository names a file that
exists; a section cited as ``docs/X.md §N`` or ``§N "Heading"`` exists in it; every decision cited (``D9``) is one
of ``docs/rules.md``'s. The examples of ``docs/scenarios.md`` and the observation table of ``docs/environment.md``
are checked against the engine and the environment.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest

import revolution_env
from revolution_env.engine import Game, Rules, run_scenario, state_dict

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
SKIP_DIRS = {
    ".git",
    ".venv",
    ".venv-floor",
    ".venv-rllib",
    "runs",
    "__pycache__",
    "node_modules",
    ".pytest_cache",
    ".ruff_cache",
    ".hypothesis",
    "build",
    "_build",
    "dist",
}  # not ours, or written while the tests run (hypothesis's examples), or built (the site)
TEXT = {".py", ".md", ".yaml", ".yml", ".json", ".toml", ".txt", ".cfg", ".html", ".js", ".sh", ""}
# Files that commands write into their output folders: cited by name, never kept in the repository.
GENERATED = {"report.md", "exploit.md"}  # written by revolution eval and revolution exploit into their --out
MD = re.compile(r"(?<![\w./<>-])((?:[\w.-]+/)*[\w-]+\.md)\b")
SECTION = re.compile(r"docs/(\w+)\.md[`,]?\s+§(\d+)(?:\s*[–-]\s*§(\d+))?(?:,?\s+\"([^\"]+)\")?")
DECISION = re.compile(r"\bD(\d+)\b")


def text_files() -> list[Path]:
    out = []
    for path in ROOT.rglob("*"):
        if any(part in SKIP_DIRS or part.endswith(".egg-info") for part in path.relative_to(ROOT).parts):
            continue
        if path.is_file() and path.suffix in TEXT and path.stat().st_size < 2_000_000 and path != Path(__file__):
            out.append(path)
    return out


FILES = text_files()


def headings(doc: Path) -> list[str]:
    return [line.lstrip("#").strip() for line in doc.read_text(encoding="utf-8").splitlines() if line.startswith("#")]


def cited(path: Path, name: str) -> bool:
    """Whether a cited Markdown file exists: from the repository's root or from the citing file's folder."""
    return name in GENERATED or (ROOT / name).is_file() or (path.parent / name).is_file()


def test_every_cited_doc_is_in_the_repository():
    missing = []
    for path in FILES:
        text = path.read_text(encoding="utf-8", errors="replace")
        for m in MD.finditer(text):
            if not cited(path, m.group(1)):
                line = text.count("\n", 0, m.start()) + 1
                missing.append(f"{path.relative_to(ROOT)}:{line}: {m.group(1)}")
    assert not missing, "cited docs that are not in the repository:\n" + "\n".join(missing)


def test_every_cited_section_exists():
    wrong = []
    for path in FILES:
        text = path.read_text(encoding="utf-8", errors="replace")
        for m in SECTION.finditer(text):
            doc = DOCS / f"{m.group(1)}.md"
            where = f"{path.relative_to(ROOT)}:{text.count(chr(10), 0, m.start()) + 1}: {m.group(0)}"
            if not doc.is_file():
                wrong.append(where)
                continue
            heads = headings(doc)
            last = int(m.group(3) or m.group(2))
            for n in range(int(m.group(2)), last + 1):
                if not any(h.startswith(f"{n}. ") for h in heads):
                    wrong.append(f"{where} (no section {n})")
            if m.group(4) and not any(h.lower().startswith(m.group(4).lower()) for h in heads):
                wrong.append(f"{where} (no heading {m.group(4)!r})")
    assert not wrong, "citations of sections that do not exist:\n" + "\n".join(wrong)


def test_the_citation_checks_can_fail(tmp_path):
    """The patterns above find what they must: a citation of a file outside the repository and of a section that
    does not exist."""
    assert [m.group(1) for m in MD.finditer("see RULES.md §5 and docs/rules.md, not <name>.md")] == [
        "RULES.md",
        "docs/rules.md",
    ]
    assert not cited(ROOT / "README.md", "RULES.md")
    m = SECTION.search('(docs/environment.md §5 "Single agent")')
    assert m and m.groups() == ("environment", "5", None, "Single agent")
    assert SECTION.search("docs/rules.md §1–§7").group(3) == "7"
    assert slug('6. Two players: the puppet "Guy Fawkes"') == "6-two-players-the-puppet-guy-fawkes"
    assert slug("Decisions D1–D18") == "decisions-d1d18"


def test_rules_keep_the_numbering_of_sections_and_decisions():
    """docs/rules.md has §1-§8 and a row for each of D1-D18, so that every "§N" and "DN" in the code lands there."""
    heads = headings(DOCS / "rules.md")
    for n in range(1, 9):
        assert any(h.startswith(f"{n}. ") for h in heads), f"docs/rules.md has no section {n}"
    table = (DOCS / "rules.md").read_text(encoding="utf-8").split("## Decisions D1–D18", 1)[1]
    rows = {int(m) for m in re.findall(r"^\| D(\d+) \|", table, re.MULTILINE)}
    assert rows == set(range(1, 19))
    outside = sorted(
        {
            f"{path.relative_to(ROOT)}: D{m}"
            for path in FILES
            if path.suffix in (".py", ".md", ".yaml", ".json")
            for m in DECISION.findall(path.read_text(encoding="utf-8", errors="replace"))
            if int(m) not in rows
        }
    )
    assert not outside, f"decisions cited that docs/rules.md does not have: {outside}"


# --- what the docs show is what the code does -------------------------------------------------------------------


def json_blocks(doc: Path) -> list[str]:
    return re.findall(r"```json\n(.*?)```", doc.read_text(encoding="utf-8"), re.DOTALL)


def test_scenarios_doc_examples_play_as_shown():
    start, scenario, result = (json.loads(block) for block in json_blocks(DOCS / "scenarios.md"))
    assert state_dict(Game.new(Rules(players=3))) == start
    assert state_dict(run_scenario(scenario)) == result


def test_environment_doc_observation_table_is_the_layout():
    text = (DOCS / "environment.md").read_text(encoding="utf-8")
    table = re.search(r"```\n(feature .*?)```", text, re.DOTALL).group(1)
    assert table.strip() == revolution_env.observation_layout(players=3).describe().strip()


@pytest.mark.parametrize(
    "options, row", [({"players": 2}, "2 players"), ({"players": 3}, "3 players"), ({"players": 4}, "4 players")]
)
def test_environment_doc_action_sizes(options, row):
    text = (DOCS / "environment.md").read_text(encoding="utf-8")
    cells = re.search(rf"^\| {row}[^|]* \| (\d+) \| (\d+) \| (\d+) \| (\d+) \|$", text, re.MULTILINE).groups()
    env = revolution_env.raw_env(**options)
    nvec = env.action_space(env.possible_agents[0]).nvec
    assert [int(c) for c in cells] == [int(nvec[0]), int(nvec[1]), len(nvec), int(np.sum(nvec))]


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces as hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.lower()).replace(" ", "-")


def test_every_markdown_link_lands():
    """A link in a Markdown file goes to a file or folder of the repository, and its #anchor to a heading there."""
    broken = []
    for path in FILES:
        if path.suffix != ".md":
            continue
        for m in re.finditer(r"\]\(([^)\s]+)\)", path.read_text(encoding="utf-8")):
            target = m.group(1)
            if re.match(r"[a-z]+:", target):  # https:, mailto:
                continue
            file, _, anchor = target.partition("#")
            dest = (path.parent / file) if file else path
            if not dest.exists():
                broken.append(f"{path.relative_to(ROOT)}: {target}")
            elif anchor and anchor not in {slug(h) for h in headings(dest)}:
                broken.append(f"{path.relative_to(ROOT)}: {target} (no such heading)")
    assert not broken, "links that land nowhere:\n" + "\n".join(broken)


# --- each fact once ----------------------------------------------------------------------------------------------


def test_the_version_is_written_once():
    """``revolution_env.__version__`` is the version: pyproject.toml reads it (no version of its own), and the
    installed package's metadata says the same."""
    import importlib.metadata

    tomllib = pytest.importorskip("tomllib")  # Python 3.11 and later
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    assert "version" not in pyproject["project"] and "version" in pyproject["project"]["dynamic"]
    assert pyproject["tool"]["setuptools"]["dynamic"]["version"] == {"attr": "revolution_env.__version__"}
    assert importlib.metadata.version("revolution-env") == revolution_env.__version__


def option_listings(text: str) -> list[str]:
    """The paragraphs (or tables) of a Markdown text that name most of the environment's options."""
    from revolution_env.env.core import OPTIONS

    return [
        part[:80]
        for part in re.split(r"\n\s*\n", text)
        if sum(f"`{option}`" in part for option in OPTIONS) > len(OPTIONS) // 2
    ]


def test_the_env_options_are_described_once():
    """The docstring of ``revolution_env.env`` describes every option the environments take, one entry each, and
    no page lists them again (the site shows the docstring; the README and the pages point to it)."""
    import inspect

    from revolution_env.env.core import OPTIONS

    assert re.findall(r"^``(\w+)``$", inspect.getdoc(revolution_env.env), re.MULTILINE) == list(OPTIONS)
    pages = [ROOT / "README.md", *DOCS.glob("*.md")]
    again = {str(p.relative_to(ROOT)): found for p in pages if (found := option_listings(p.read_text("utf-8")))}
    assert not again, f"the env options listed again (point to help(revolution_env.env) instead): {again}"


def test_an_option_listing_is_found():
    listing = (
        "Options: `players` (2, 3, 4), `bid_refunds`, `area_control_bonus`, `first_edition`, `max_rounds`, `reward`"
    )
    assert option_listings(f"# Title\n\n{listing}\n\nOther text.") == [listing[:80]]


WIDTH = 120  # pyproject.toml's line length, prose included


def long_prose_lines(text: str) -> list[int]:
    """The lines of a Markdown text over ``WIDTH`` columns, outside code blocks and tables."""
    long, fence = [], False
    for number, line in enumerate(text.split("\n"), 1):
        if line.lstrip().startswith(("```", "~~~")):
            fence = not fence
        elif not fence and len(line) > WIDTH and not line.lstrip().startswith("|"):
            long.append(number)
    return long


def test_markdown_prose_is_wrapped():
    """The guide and the pages are wrapped at 120 columns, as the code is (tables and code blocks aside). The cards
    (``checkpoints/*.md``) and the reports under ``docs/results/`` are written by commands, not by hand."""
    pages = [
        ROOT / "README.md",
        *DOCS.glob("*.md"),
        DOCS / "results" / "README.md",
        ROOT / "checkpoints/heldout/README.md",
    ]
    long = {str(p.relative_to(ROOT)): lines for p in pages if (lines := long_prose_lines(p.read_text("utf-8")))}
    assert not long, f"Markdown lines over {WIDTH} columns (file: line numbers): {long}"


def test_a_long_prose_line_is_found():
    text = "\n".join(["# Title", "x" * 121, "```", "y" * 200, "```", "| " + "z" * 200, "short"])
    assert long_prose_lines(text) == [2]


def test_every_page_is_on_the_site():
    """The site's home page (``docs/index.md``) lists every page of ``docs/``, every card and the README, so that a
    new page is not left off the site (Sphinx would only warn of it at build time, in CI)."""
    listed = set()
    for block in re.findall(r"```\{toctree\}\n(.*?)```", (DOCS / "index.md").read_text("utf-8"), re.DOTALL):
        entries = [line.strip() for line in block.splitlines() if line.strip() and not line.startswith(":")]
        listed |= {re.sub(r".*<(.*)>$", r"\1", entry) for entry in entries}  # "Title <target>" or "target"
    pages = {p.stem for p in DOCS.glob("*.md")} - {"index"}
    cards = {f"/checkpoints/{p.stem}" for p in (ROOT / "checkpoints").glob("*.md")}
    missing = sorted((pages | cards | {"/README", "results/README"}) - listed)
    assert not missing, f"pages missing from the toctrees of docs/index.md: {missing}"
    api = {f"api/{p.stem}" for p in (DOCS / "api").glob("*.rst")}
    assert api <= listed, f"API pages missing from docs/index.md: {sorted(api - listed)}"
