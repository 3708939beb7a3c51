"""Sphinx configuration of the longhaul documentation site (built by ``longhaul docs``, checked by tests/test_docs.py).

Why Sphinx with MyST (docs/explanation/contributing.md says it for readers): pages stay Markdown, as the README is;
the per-command reference is rendered from the argparse parsers themselves by sphinx-argparse, so it cannot drift
from ``longhaul --help``; ``-W -n`` turns every broken link, missing page or unknown anchor into a failed build;
and it is what the field's simulators (ns-3, SimGrid) document themselves with.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent / "_ext"))

project = "longhaul"
author = "the longhaul developers"
copyright = "the longhaul developers"

extensions = ["myst_parser", "sphinxarg.ext", "scenario_keys"]
source_suffix = {".md": "markdown"}
root_doc = "index"
exclude_patterns = ["_build", "_ext"]

# Links to a heading of another page (`page.md#a-heading`) are checked: the anchors of levels 1-4 exist.
myst_heading_anchors = 4
myst_enable_extensions = ["colon_fence"]

# Every warning fails the build (tests run it with -W): a broken link is a failed test, not a 404 later.
nitpicky = True

html_theme = "furo"
html_title = "longhaul"
html_copy_source = False
html_show_sourcelink = False
# Nothing fetched at view time: furo uses the system's fonts and ships its scripts, so the site works offline.
