"""Every command's --help: exit 0, and each option's default told at most once (never "None"); every
parser's errors: one line with one prefix."""

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
    for raw in re.split(r"\n  (?=-)", text.split("options:", 1)[-1]):
        entry = re.sub(r"\s+", " ", raw)
        before, appended, _ = entry.partition("(default:")
        assert not (appended and "default" in before.lower()), f"longhaul {' '.join(path)}: {entry}"


@pytest.mark.parametrize("args, message", [
    (["sim", "mpi", "osu", "--bench", "foo"], "argument --bench: invalid choice: 'foo'"),
    (["sim", "verbs", "--bogus"], "unrecognized arguments: --bogus"),
    (["analyse", "profile", "--format"], "argument --format: expected one argument"),
    (["sim", "verbs", "--sizes", "abc"], "--sizes: 'abc' is not a size"),
])
def test_every_error_has_one_prefix_whichever_parser_finds_it(cli, args, message):
    # argparse's own errors said `longhaul sim mpi osu: error:`, longhaul's `longhaul: error:`.
    p = cli(*args)
    assert p.returncode == 2 and p.stderr.startswith(f"longhaul: error: {message}") and p.stderr.count("\n") == 1, \
        p.stderr


@pytest.mark.parametrize("args, message", [
    # argparse took a list starting with a minus sign for an unknown option: "expected one argument".
    (["sim", "mpi", "osu", "--bench", "bw", "--delay-us", "-5,10"], "--delay-us: -5 is out of range [0, 200000]"),
    (["compare", "mpi", "--stack", "-1,1,1"], "--stack: per-segment cost -1 is out of range [0, 1000]"),
    (["sim", "verbs", "--sizes", "-1K,2K"], "--sizes: '-1K' is not a size"),
])
def test_a_value_starting_with_a_minus_is_checked_as_a_value(cli, args, message):
    p = cli(*args)
    assert p.returncode == 2 and p.stderr.startswith(f"longhaul: error: {message}") and p.stderr.count("\n") == 1, \
        p.stderr


def test_top_help_names_the_real_subcommands(cli):
    # analyse's help once advertised "profiles, decrease-per-mile, calibration", which analyse refuses
    text = " ".join(cli("--help", check=True).stdout.split())
    assert "(profile, stability, dpm, balance, calibrate, compare)" in text
    assert "(verbs, tcp, mpi)" in text and "calibration" not in text
    for word in ("calibrate", "dpm"):
        assert cli("analyse", word, "--help").returncode == 0


def test_version_names_the_package_and_the_model(cli):
    import longhaul
    from longhaul.results import model_fingerprint

    out = cli("--version", check=True).stdout
    assert out.startswith(f"longhaul {longhaul.__version__}") and f"model {model_fingerprint()}" in out
    assert out.count("\n") == 1


def test_a_command_loads_only_its_own_module():
    """A short simulation pays at start-up for the simulator only: `longhaul sim ...` imports neither
    the emulator nor the results store, and the alias `analyze` finds `analyse`'s module."""
    import subprocess
    import sys

    code = ("import sys; from longhaul.cli import main\n"
            "main(['sim', 'verbs', '--delay-us', '0', '--sizes', '4096', '--format', 'csv'])\n"
            "print(sorted(m for m in ('longhaul.emu', 'longhaul.results', 'longhaul.commands.emu') if m in sys.modules))")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert proc.stdout.splitlines()[-1] == "[]", proc.stdout[-300:]
    from longhaul.cli import _command_named

    assert _command_named(["analyze", "dpm"]) == "analyse" and _command_named(["--version"]) is None
    assert _command_named(["bogus"]) is None  # the whole parser, whose error lists every command
