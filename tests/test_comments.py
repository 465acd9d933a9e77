"""Comments say why, not how fast: no measured timing, date or before/after figure in a comment, a docstring or a
config's comment. A figure measured once is stale by the next commit; it belongs in the commit message or in
``docs/experiments.md``, where it has its command and its day. A comment that chose a way for speed says which way
is faster and where the measurement is.

Only comments and docstrings are read (``tokenize`` and ``ast``), so a string the code prints (``"12.3 ms"``) or a
default in a signature is not a comment.
"""

from __future__ import annotations

import ast
import io
import re
import tokenize
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
# The code and the configs a reader meets; tests/ is read too, this file aside (it spells the patterns out).
FOLDERS = ("revolution_env", "training", "scripts", "examples", "experiments", "configs", "tests", ".ci")

_NUMBER = r"\d[\d,]*(?:\.\d+)?"
_TIME = r"(?:ns|µs|us|ms)"  # a sub-second time in code text is a measurement
_SPAN = r"(?:s|sec|secs|seconds?|min|mins|minutes?|h|hours?)"
PATTERNS = {
    "a sub-second timing": re.compile(rf"(?<![\w.]){_NUMBER}\s*{_TIME}\b"),
    "a before/after figure": re.compile(
        rf"(?<![\w.]){_NUMBER}\s*\S{{0,3}}\s*(?:->|→)\s*{_NUMBER}\s*(?:{_TIME}|{_SPAN}|%|x|×)(?!\w)"
        rf"|(?<![\w.])\d+\.\d+\s*(?:->|→)\s*\d+\.\d+"
    ),
    "a measured duration": re.compile(
        rf"\b(?:took|takes|taking|in|about|around|within|under|over|some|costs?|spent|saves?|gains?|after)\s+(?:about\s+)?"
        rf"{_NUMBER}\s*{_SPAN}\b(?!\s*(?:timeout|limit|budget|deadline|of (?:idle|waiting)))"
    ),
    "a time on a machine": re.compile(
        rf"(?<![\w.]){_NUMBER}\s*{_SPAN}\s+(?:on|of)\s+(?:\d+|one|two|a)\s+(?:CPU\s+)?(?:cores?|threads?|machines?)"
    ),
    "a measured win rate": re.compile(rf"(?<![\w.]){_NUMBER}\s*%\s+(?:in|against|at|of (?:its|the) games)\b"),
    "a measured rate": re.compile(rf"(?<![\w.]){_NUMBER}\s*(?:k|K|M)?\s*(?:steps|decisions|games|rows|bids)/s\b"),
    "a speed-up figure": re.compile(
        rf"(?<![\w.]){_NUMBER}\s*(?:x|×|%)\s+(?:as fast|faster|slower|quicker|more steps|fewer steps|of the time|less)"
    ),
    "a date": re.compile(
        r"\b20\d\d-[01]\d-[0-3]\d\b|\b(?:January|February|March|April|May|June|July|August|September|October"
        r"|November|December)\s+\d{1,2},?\s+20\d\d\b"
    ),
}


def _files() -> list[Path]:
    out = []
    for folder in FOLDERS:
        base = ROOT / folder
        if not base.exists():
            continue
        for path in sorted(base.rglob("*")):
            if any(part.startswith((".venv", "__pycache__")) for part in path.relative_to(ROOT).parts):
                continue
            if path.is_file() and path != Path(__file__) and path.suffix in {".py", ".yaml", ".yml", ""}:
                if path.suffix == "" and folder != ".ci":
                    continue
                out.append(path)
    return out


def python_comments(source: str) -> list[tuple[int, str]]:
    """Each comment and docstring of a module (a module's, a class's, a function's, and a field's: a string standing
    alone after an assignment, as TrainConfig's fields have), with its first line."""
    out = [
        (t.start[0], t.string)
        for t in tokenize.generate_tokens(io.StringIO(source).readline)
        if t.type == tokenize.COMMENT
    ]

    def text(stmt: ast.stmt) -> str | None:
        is_string = isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant)
        return stmt.value.value if is_string and isinstance(stmt.value.value, str) else None

    for node in ast.walk(ast.parse(source)):
        body = getattr(node, "body", None)
        if not isinstance(body, list):
            continue
        for i, stmt in enumerate(body):
            first = i == 0 and isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
            after_assignment = i > 0 and isinstance(body[i - 1], (ast.Assign, ast.AnnAssign))
            if (first or after_assignment) and text(stmt) is not None:
                out.append((stmt.lineno, text(stmt)))
    return out


def hash_comments(source: str) -> list[tuple[int, str]]:
    """The ``#`` comments of a YAML file or a shell script (a ``#`` outside quotes)."""
    out = []
    for number, line in enumerate(source.splitlines(), 1):
        match = re.search(r"(?:^|\s)#.*", line)
        if match and line.count('"', 0, match.start()) % 2 == 0 and line.count("'", 0, match.start()) % 2 == 0:
            out.append((number, match.group().strip()))
    return out


def findings(path: Path) -> list[str]:
    source = path.read_text(encoding="utf-8")
    comments = python_comments(source) if path.suffix == ".py" else hash_comments(source)
    out = []
    for line, text in comments:
        flat = " ".join(text.split())
        for what, pattern in PATTERNS.items():
            for match in pattern.finditer(flat):
                out.append(f"{path.relative_to(ROOT)}:{line}: {what}: ...{match.group()}...")
    return out


@pytest.mark.parametrize("what, text", [
    ("a sub-second timing", "# about 1.3 ms a decision"),
    ("a sub-second timing", "# 250 us a call"),
    ("a before/after figure", "# step_many 3.45 -> 3.27 ms"),
    ("a before/after figure", "# 5.53 -> 4.42 a round"),
    ("a before/after figure", "# 0.92x -> 1.04x"),
    ("a measured duration", "# compiling takes about 50 s of one core"),
    ("a measured rate", "# 716,050 steps/s"),
    ("a time on a machine", "# 8M steps: 70 min on 2 cores"),
    ("a measured win rate", "# 35.6% in the round robin against 22.8% at 80k"),
    ("a speed-up figure", "# 28% more steps/s"),
    ("a speed-up figure", "# 1.3x as fast on two cores"),
    ("a date", "# measured 2026-11-27"),
    ("a date", "# on November 27, 2026"),
])  # fmt: skip
def test_each_pattern_catches_what_it_names(what: str, text: str) -> None:
    assert PATTERNS[what].search(" ".join(text.split())), (what, text)


@pytest.mark.parametrize("text", [
    "# the seat's 3 tokens -> 2 characters at most",
    "# waits up to 300 s before it fails (a timeout)",
    "# D9: tie on scheming gold",
    "# 4,096 games stepped in one call",
    "# x -> y",
    "# value 4 seats in 10, bargain and area 2",
    "# a 5% gap",
])  # fmt: skip
def test_a_comment_without_a_measurement_passes(text: str) -> None:
    flagged = [what for what, pattern in PATTERNS.items() if pattern.search(" ".join(text.split()))]
    assert not flagged, (text, flagged)


def test_no_comment_or_docstring_carries_a_timing_or_a_date() -> None:
    found = [finding for path in _files() for finding in findings(path)]
    assert not found, "comments say why, not how fast (the figure goes in docs/experiments.md):\n" + "\n".join(found)
