"""The argument parser of every longhaul entry point (the ``longhaul`` command, ``python -m
longhaul.sweep``): bad input is one line and exit status 2, as every other error."""

from __future__ import annotations

import argparse
import re
import sys
from typing import Any, NoReturn

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
