"""The documentation site: the repository's Markdown pages as they are, and an API reference from the docstrings.

Build it from the repository's root (``pip install -e ".[docs]"`` first)::

    sphinx-build -W --keep-going -c docs -b html . docs/_build/html

The source folder is the repository's root, not ``docs/``, so that every relative link of the pages (``rules.md``,
``../checkpoints/two_players.md``, ``docs/environment.md`` from the README) lands on the site where it lands on a
code host; ``include_patterns`` keeps the site to the pages listed there. The pages are Markdown (MyST); the API
pages (``docs/api/*.rst``) are reStructuredText, as the docstrings they show.
"""

from __future__ import annotations

from pathlib import Path

from docutils import nodes
from sphinx import addnodes
from sphinx.transforms.post_transforms import SphinxPostTransform

import revolution_env

ROOT = Path(__file__).resolve().parent.parent

project = "revolution-env"
author = "the revolution-env authors"
release = revolution_env.__version__
# The docstrings are plain reST: napoleon would read a field docstring "Players at the table: 2, 3 or 4" as a type.
extensions = ["myst_parser", "sphinx.ext.autodoc"]
source_suffix = {".md": "markdown", ".rst": "restructuredtext"}
root_doc = "docs/index"
include_patterns = [
    "README.md",
    "docs/*.md",
    "docs/api/*.rst",
    "docs/results/README.md",
    "docs/results/*/*.md",
    "checkpoints/*.md",
]
exclude_patterns = ["docs/_build"]

myst_heading_anchors = 4  # GitHub's anchors for headings: the pages link to each other's sections by them

autodoc_member_order = "bysource"
# The training modules import torch and SB3 (the `train` extra); the pages need their docstrings only. Without
# Numba the package runs as plain Python, so it needs no mock.
autodoc_mock_imports = ["torch", "stable_baselines3", "sb3_contrib", "tensorboard", "scipy", "ray"]

html_theme = "furo"
html_title = f"revolution-env {release}"


class FolderLinks(SphinxPostTransform):
    """A link to a folder of the repository (``[reports](results/)``) keeps its text and loses its target: a code
    host lists the folder, the site has no page for it. A link to anything that does not exist still warns."""

    default_priority = 5  # before MyST resolves (and warns about) the links it cannot place

    def run(self, **kwargs) -> None:
        here = (ROOT / self.env.docname).parent
        for node in list(self.document.findall(addnodes.pending_xref)):
            target = node.get("reftarget", "")
            if node.get("reftype") == "myst" and target.endswith("/") and (here / target).is_dir():
                node.replace_self(nodes.inline("", "", *node.children))


def redirect_to_index(app, exception) -> None:
    """``index.html`` at the site's root, sending a browser to the home page (``docs/index.html``)."""
    if exception is None and app.builder.format == "html":
        target = app.builder.get_target_uri(root_doc)
        (Path(app.outdir) / "index.html").write_text(
            f'<!DOCTYPE html><meta charset="utf-8"><meta http-equiv="refresh" content="0; url={target}">'
            f'<a href="{target}">{html_title}</a>\n',
            encoding="utf-8",
        )


def setup(app) -> None:
    app.add_post_transform(FolderLinks)
    app.connect("build-finished", redirect_to_index)
