"""``longhaul compare KIND``: simulator vs emulator on the same scenario (see ``longhaul.compare``)."""

from __future__ import annotations

import argparse
import importlib
import pkgutil

from longhaul import compare


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("compare", help="the simulator's model vs the emulator on the same scenario",
                       description="Run one scenario in the simulator and through the emulator; print both.")
    kinds = p.add_subparsers(dest="kind", metavar="KIND", required=True)
    for info in sorted(pkgutil.iter_modules(compare.__path__), key=lambda m: m.name):
        importlib.import_module(f"longhaul.compare.{info.name}").register(kinds)
