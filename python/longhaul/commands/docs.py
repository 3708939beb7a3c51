"""``longhaul docs``: build the documentation site of this checkout (docs/) and say where to open it."""

from __future__ import annotations

import argparse
import importlib.util
import subprocess
import sys
import webbrowser
from pathlib import Path

from longhaul.errors import UserError

#: The checkout this package runs from (an editable install: python/longhaul/ inside it).
CHECKOUT = Path(__file__).resolve().parents[3]


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "docs", help="build the documentation site (docs/) and print where to open it",
        description="Build the documentation site from this checkout's docs/ with Sphinx (installed by "
                    "scripts/bootstrap.sh) and print the path of its index.html. The build is strict: a broken "
                    "link, a missing page or an unknown reference fails it, naming each.")
    p.add_argument("--out", metavar="DIR", type=Path, default=CHECKOUT / "docs" / "_build" / "html",
                   help="directory to write the site into (default: docs/_build/html in the checkout)")
    p.add_argument("--open", action="store_true", help="open the built site in the default web browser")
    p.set_defaults(func=run)


def build(out: Path) -> subprocess.CompletedProcess:
    """Sphinx, strict (-W -n: every warning fails, every reference must resolve), warnings on stderr."""
    return subprocess.run([sys.executable, "-m", "sphinx", "-b", "html", "-W", "-n", "--keep-going", "-q",
                           str(CHECKOUT / "docs"), str(out)])


def run(args: argparse.Namespace) -> int:
    if not (CHECKOUT / "docs" / "conf.py").is_file():
        raise UserError(f"no docs/conf.py in {CHECKOUT}: the site is built from a source checkout of longhaul")
    if importlib.util.find_spec("sphinx") is None:
        raise UserError("Sphinx is not installed: source scripts/bootstrap.sh (it installs the pinned docs tools)")
    if args.out.exists() and not args.out.is_dir():
        raise UserError(f"--out: {args.out} is not a directory")
    if build(args.out).returncode != 0:
        sys.stderr.write("longhaul: the documentation build failed: the lines above name each problem\n")
        return 1
    index = args.out.resolve() / "index.html"
    print(index)
    if args.open:
        webbrowser.open(index.as_uri())
    return 0
