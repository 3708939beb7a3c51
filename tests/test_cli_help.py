"""Every command's --help: exit 0, and each option's default told at most once (never "None")."""

from __future__ import annotations

import argparse
import re

import pytest

from longhaul.cli import build_parser


def _parsers(parser: argparse.ArgumentParser, path: tuple[str, ...] = ()):
    yield path, parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from _parsers(sub, (*path, name))


PARSERS = list(_parsers(build_parser()))


def test_the_walk_reaches_every_model():
    paths = {" ".join(p) for p, _ in PARSERS}
    assert {"sim verbs", "sim tcp", "sim nfs", "sim mpi osu", "sim mpi tune", "compare tcp", "study"} <= paths


@pytest.mark.parametrize("path,parser", PARSERS, ids=[" ".join(p) or "longhaul" for p, _ in PARSERS])
def test_help_tells_each_default_once(path, parser):
    text = parser.format_help()
    assert "(default: None)" not in text
    # One entry per option: from its flags at two spaces' indent to the next option's.
    for entry in re.split(r"\n  (?=-)", text.split("options:", 1)[-1]):
        entry = re.sub(r"\s+", " ", entry)
        before, appended, _ = entry.partition("(default:")
        assert not (appended and "default" in before.lower()), f"longhaul {' '.join(path)}: {entry}"
