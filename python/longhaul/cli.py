"""The ``longhaul`` command: parsing and printing only.

Each verb lives in a module of ``longhaul.commands`` that defines ``register(subparsers)``;
modules are discovered, so adding a verb never edits this file. Bad input of any kind ends
as one line on stderr and exit status 2 (``UserError``), never a traceback.
"""

from __future__ import annotations

import importlib
import pkgutil
import sys

from longhaul import commands
from longhaul.errors import Terminated, UserError
from longhaul.parser import Parser, say_error


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
