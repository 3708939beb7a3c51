"""The ``longhaul`` command: parsing and printing only.

Each verb lives in a module of ``longhaul.commands`` that defines ``register(subparsers)``;
modules are discovered, so adding a verb never edits this file. Bad input of any kind ends
as one line on stderr and exit status 2 (``UserError``), never a traceback.
"""

from __future__ import annotations

import argparse
import importlib
import pkgutil
import re
import sys
from typing import Any, NoReturn

from longhaul import commands
from longhaul.errors import Terminated, UserError
from longhaul.safeio import printable


class Parser(argparse.ArgumentParser):
    """argparse with a one-line error (name of the problem and the valid range) and exit 2, with
    the prefix every other error has (``longhaul: error:``), whichever subcommand's parser found it."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        # A value that starts like a negative number is a value: argparse's own rule knows only
        # "-5" and "-.5", so "--delay-us -5,10" or "--stack -1,1,1" said "expected one argument"
        # instead of the option's range. No longhaul option looks like a negative number.
        self._negative_number_matcher = re.compile(r"^-\.?\d")

    def error(self, message: str) -> NoReturn:
        say_error(message)
        raise SystemExit(2)


def say_error(message: str) -> None:
    """The one error line, with what the user typed escaped (``--sizes $'\\e[2J'`` cleared the
    screen: a control character never reaches the terminal, a line break never splits the line)."""
    sys.stderr.write(f"longhaul: error: {printable(message)}\n")


def build_parser() -> Parser:
    parser = Parser(
        prog="longhaul",
        description="A lab for HPC communication between clusters joined by long-haul links.",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=Parser)
    sub.required = True
    for info in sorted(pkgutil.iter_modules(commands.__path__), key=lambda m: m.name):
        if info.ispkg:
            continue
        module = importlib.import_module(f"longhaul.commands.{info.name}")
        module.register(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = None
    try:
        # Inside the try: Ctrl-C while the commands are imported and parsed is an interrupt too.
        args = build_parser().parse_args(argv)
        return int(args.func(args) or 0)
    except UserError as err:
        say_error(str(err))
        return 2
    except KeyboardInterrupt:
        # Only sweeps and studies cache their points in the store, so only they resume.
        resumes = args is not None and args.command in ("sweep", "study")
        sys.stderr.write("longhaul: interrupted" + (" (completed points are kept; re-run to resume)" if resumes else "")
                         + "\n")
        return 130
    except Terminated as sig:
        sys.stderr.write(f"longhaul: stopped by {sig} ({sig.what})\n")
        return 128 + sig.signum
    except BrokenPipeError:
        return 0


if __name__ == "__main__":
    sys.exit(main())
