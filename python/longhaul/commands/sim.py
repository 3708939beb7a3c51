"""``longhaul sim MODEL``: the embedded simulator. Models live in ``commands/simmodels/``."""

from __future__ import annotations

import argparse
import importlib
import pkgutil

from longhaul.commands import simmodels


def register(sub: argparse._SubParsersAction) -> None:
    sim = sub.add_parser("sim", help="run the embedded simulator", description="Run the embedded simulator.")
    models = sim.add_subparsers(dest="model", metavar="MODEL", required=True)
    # A module whose name starts with "_" holds what several models share (their common options).
    for info in sorted(pkgutil.iter_modules(simmodels.__path__), key=lambda m: m.name):
        if info.name.startswith("_"):
            continue
        importlib.import_module(f"longhaul.commands.simmodels.{info.name}").register(models)
