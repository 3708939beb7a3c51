"""The ``longhaul`` command: parsing and printing only.

Each verb lives in a module of ``longhaul.commands`` that defines ``register(subparsers)``;
modules are discovered, so adding a verb never edits this file. Bad input of any kind ends
as one line on stderr and exit status 2 (``UserError``), never a traceback.
"""

from __future__ import annotations

import argparse
import atexit
import importlib
import os
import pkgutil
import sys
import threading
from typing import NoReturn

from longhaul import commands, output
from longhaul.errors import Terminated, UserError
from longhaul.parser import Parser, say_error

#: command names that are not their module's name
_ALIASES = {"analyze": "analyse"}


def build_parser(command: str | None = None) -> Parser:
    """The whole parser, or, given the ``command`` a command line names, one with that command's
    module only: each module imports what its commands run (the emulator, plots, the store), and
    a short simulation should not pay for the others at start-up."""
    parser = Parser(
        prog="longhaul",
        description="A lab for HPC communication between clusters joined by long-haul links.",
    )
    parser.add_argument("--version", action=_Version)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=Parser)
    sub.required = True
    for info in sorted(pkgutil.iter_modules(commands.__path__), key=lambda m: m.name):
        if info.ispkg or command not in (None, info.name):
            continue
        module = importlib.import_module(f"longhaul.commands.{info.name}")
        module.register(sub)
    _name_subcommands(sub)
    _add_wide(parser)
    return parser


def _add_wide(parser: argparse.ArgumentParser) -> None:
    """``--wide`` beside every ``--format`` that offers a table: the table shows every field."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in dict.fromkeys(action.choices.values()):
                _add_wide(sub)
        elif "--format" in action.option_strings and "table" in (action.choices or ()):
            parser.add_argument("--wide", action="store_true", default=False,
                                help="table: every field, as csv carries them, not only the columns a reader needs")


def _name_subcommands(sub: argparse._SubParsersAction) -> None:
    """Each command's line in ``longhaul --help`` ends with its subcommands' real names, taken
    from its parser (a help text that listed them by hand went stale)."""
    for choice in sub._choices_actions:
        inner = [a for a in sub.choices[choice.dest]._actions if isinstance(a, argparse._SubParsersAction)]
        if inner:
            names = [c.dest for c in inner[0]._choices_actions]
            choice.help = f"{choice.help} ({', '.join(names)})"


class _Version(argparse.Action):
    """``--version``: the package's version, its git commit when run from a checkout, and the
    fingerprint of the model code (the built core included) that the store's cache keys carry."""

    def __init__(self, option_strings: list[str], dest: str = argparse.SUPPRESS, **kwargs: object) -> None:
        super().__init__(option_strings, dest=dest, default=argparse.SUPPRESS, nargs=0,
                         help="print the version and the model's fingerprint, then exit")

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, values: object,
                 option_string: str | None = None) -> None:
        from longhaul import _core
        from longhaul.results import software_version

        print(f"{software_version()}, core {_core.__version__}")
        parser.exit()


def main(argv: list[str] | None = None) -> int:
    args = None
    try:
        # Inside the try: Ctrl-C while the commands are imported and parsed is an interrupt too.
        args = build_parser(_command_named(sys.argv[1:] if argv is None else argv)).parse_args(argv)
        output.WIDE = bool(getattr(args, "wide", False))
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


def _command_named(argv: list[str]) -> str | None:
    """The command module a command line names (its first word, the top-level parser taking no
    option with a value), or None (none or an unknown one: the whole parser, for its help or its
    error listing every command)."""
    first = next((a for a in argv if not a.startswith("-")), None)
    name = _ALIASES.get(first or "", first)
    known = {info.name for info in pkgutil.iter_modules(commands.__path__) if not info.ispkg}
    return name if name in known else None


def run() -> NoReturn:
    """The ``longhaul`` program: ``main()``, then the interpreter's own shutdown steps (waiting for
    threads, the ``atexit`` handlers, flushing), and an exit that skips the destruction of native
    libraries' static objects: Arrow's thread pools, torn down there while a worker still runs, abort
    the process now and then after its work is done ('terminate called without an active exception',
    exit 134, about one run in 150 on a loaded machine; apache/arrow#34314)."""
    code = main()
    if "mpi4py.MPI" in sys.modules:   # a sweep across MPI ranks: MPI is finalised in the interpreter's exit
        sys.exit(code)
    getattr(threading, "_shutdown", lambda: None)()   # what the interpreter does first at exit
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):  # a closed pipe (`| head`): what was written is all it takes
            pass
    os._exit(code)


if __name__ == "__main__":
    run()
