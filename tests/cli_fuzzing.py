"""Hostile command lines for every `longhaul` command, run in this process (``longhaul.cli.main``),
and what counts as a finding. Shared by tests/test_fuzz_cli.py (hypothesis, in CI) and
bench/fuzz_cli.py (a longer run that prints its count and findings).

Nothing long or privileged runs: a simulation whose input passed validation, an emulator about to
start and a measured command about to run each stop with ``Accepted`` (a one-line error the
checks recognise), so every example ends within seconds whether its input is refused or not.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import os
import signal
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from unittest import mock

from longhaul.errors import UserError

#: Values no option should crash on: terminal escapes, line breaks, bidi controls, other scripts'
#: digits, numbers beyond every range or every float, empty and odd separators, and JSON fragments.
HOSTILE_TEXT = (
    "\x1b[2J\x1b[H", "a\nb", "1\r", "\u202e1", "\x7f", "\t", "\u0663", "\uff11\uff12", "\u0663\u066b\u0665", "1e400", "-1e400", "nan", "-inf",
    "9" * 5000, "-" + "9" * 40, "18446744073709551616", "-9223372036854775809", "0", "-1", "", " ", "0x10",
    "1_000", "1:", ":", ",", "1,,2", "1:0", "2:8M:3", "{}", "[]", '{"a":', "[" * 5000, '{"delay_us": {"a": 1}}',
    '{"delay_us": [' + "9" * 5000 + "]}", "K", "1K1", "4096", "65536", "1T", "-0", "true", "None",
)

#: Kinds of hostile file, made once per run by ``hostile_files``
FILE_KINDS = ("fifo", "dev_zero", "directory", "missing", "deep_json", "deep_toml", "big_int", "cross_5", "binary",
              "proc_mem", "empty", "escape")


def hostile_files(where: Path) -> list[str]:
    """One file (or non-file) of each of FILE_KINDS under ``where``."""
    where.mkdir(parents=True, exist_ok=True)
    fifo = where / "fifo"
    if not fifo.exists():
        os.mkfifo(fifo)
    (where / "dir.toml").mkdir(exist_ok=True)
    (where / "deep.json").write_text("[" * 100_000 + "]" * 100_000)
    (where / "deep.toml").write_text("a = " + "[" * 5000 + "]" * 5000 + "\n")
    (where / "big.toml").write_text("seed = " + "9" * 5000 + "\n")
    (where / "cross.toml").write_text("kind = \"tcp\"\ncross = 5\n")
    (where / "garbage.bin").write_bytes(bytes(range(256)) * 64)
    (where / "empty.json").write_text("")
    (where / "escape.toml").write_text("delay_us = \"\x1b[2J\"\n")
    return [str(fifo), "/dev/zero", str(where / "dir.toml"), str(where / "missing.toml"), str(where / "deep.json"),
            str(where / "deep.toml"), str(where / "big.toml"), str(where / "cross.toml"), str(where / "garbage.bin"),
            "/proc/self/mem", str(where / "empty.json"), str(where / "escape.toml")]


#: Commands not fuzzed: `docs` builds the documentation site (minutes, and it is its own test).
SKIPPED = {("docs",)}


def leaves(parser: argparse.ArgumentParser, path: tuple[str, ...] = ()) -> Iterator[tuple[tuple[str, ...], argparse.ArgumentParser]]:
    """Every command line's verb path and its parser (`results ls`, `sim mpi osu`, ...)."""
    subs = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    if not subs:
        if path not in SKIPPED:
            yield path, parser
        return
    for action in subs:
        seen = set()
        for name, sub in action.choices.items():
            if id(sub) not in seen:  # an alias (analyze = analyse) is the same parser
                seen.add(id(sub))
                yield from leaves(sub, (*path, name))


def commands() -> list[tuple[tuple[str, ...], argparse.ArgumentParser]]:
    from longhaul.cli import build_parser
    return list(leaves(build_parser()))


def value_options(parser: argparse.ArgumentParser) -> list[argparse.Action]:
    return [a for a in parser._actions if a.option_strings and a.nargs != 0 and not isinstance(a, argparse._HelpAction)]


def positionals(parser: argparse.ArgumentParser) -> list[argparse.Action]:
    return [a for a in parser._actions if not a.option_strings]


def argv_for(path: Sequence[str], parser: argparse.ArgumentParser, pick: Callable[[Sequence], object],
             values: Sequence[str]) -> list[str]:
    """A command line: the verb path, hostile values for the options ``pick`` chooses (1..3 of them)
    and for every positional; ``pick(seq)`` chooses one item of ``seq``."""
    argv = list(path)
    options = value_options(parser)
    if options:
        for _ in range(int(pick((1, 2, 3)))):  # type: ignore[call-overload]
            action = pick(options)
            argv += [str(pick(action.option_strings)), str(pick(values))]  # type: ignore[attr-defined]
    rest = positionals(parser)
    if rest:
        argv.append("--")
        for action in rest:
            if action.nargs == argparse.REMAINDER or action.dest == "command":
                argv += [str(pick(values)), "true"]
            else:
                argv.append(str(pick(values)))
    return argv


class Accepted(UserError):
    """The input passed validation: the work it would start is not started."""

    def __init__(self, what: str = "the run") -> None:
        super().__init__(f"{ACCEPTED} ({what})")


ACCEPTED = "fuzz: accepted, not run"


class TookTooLong(BaseException):
    """An example ran past its time: a hang (a finding)."""


@contextlib.contextmanager
def no_real_work() -> Iterator[None]:
    """Simulations stop after validating (the core's validation-only calls still run), the emulator
    before it needs root, a measured command before it starts."""
    import longhaul.emu.system
    import longhaul.measure
    import longhaul.sim.core as core

    original = core.call

    def validating_only(entry, sc, *args, **kwargs):
        if args[:1] == (True,) or kwargs.get("validate_only"):
            return original(entry, sc, *args, **kwargs)
        raise Accepted("a simulation")

    def emulator(*_a, **_k):
        raise Accepted("an emulator")

    def measured(*_a, **_k):
        raise Accepted("a measured command")

    with mock.patch.object(core, "call", validating_only), \
            mock.patch.object(longhaul.emu.system, "require_privileges", emulator), \
            mock.patch.object(longhaul.measure, "run", measured):
        yield


def run(argv: list[str], timeout_s: float = 20.0) -> tuple[int, str, str, float]:
    """(exit status, stdout, stderr, seconds) of ``longhaul ARGV`` in this process, stopped after
    ``timeout_s`` (TookTooLong) where Python runs; call within ``no_real_work``."""
    from longhaul.cli import main

    def too_long(signum, frame):
        raise TookTooLong(" ".join(argv)[:200])

    out, err = io.StringIO(), io.StringIO()
    old = signal.signal(signal.SIGALRM, too_long)
    signal.setitimer(signal.ITIMER_REAL, timeout_s)
    started = time.monotonic()
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                status = main(argv)
            except SystemExit as exit_:  # argparse's own errors
                status = exit_.code if isinstance(exit_.code, int) else 2
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)
    return status, out.getvalue(), err.getvalue(), time.monotonic() - started


def findings(status: int, stderr: str) -> list[str]:
    """What is wrong with an outcome: a status other than 0 (done) or 2 (refused); a refusal that is
    not exactly one `longhaul: error:` line, last; a traceback; a control character on stderr."""
    problems = []
    lines = stderr.splitlines()
    errors = [line for line in lines if line.startswith("longhaul: error:")]
    if status not in (0, 2):
        problems.append(f"exit status {status}")
    if status == 2 and (len(errors) != 1 or lines[-1] != errors[0]):
        problems.append(f"{len(errors)} error lines, the last line {lines[-1][:120] if lines else 'missing'!r}")
    if status == 0 and errors:
        problems.append("an error line with exit status 0")
    if "Traceback" in stderr:
        problems.append("a traceback")
    if any((ord(c) < 32 and c not in "\n") or ord(c) == 127 or c == "\u202e" for c in stderr):
        problems.append("a control character on stderr")
    return problems
