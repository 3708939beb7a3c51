"""The typed binding: python/longhaul/_core.pyi describes every function the Rust extension
exports, with the same parameters and defaults, so mypy checks callers against what the core
really takes."""

from __future__ import annotations

import ast
import inspect
from pathlib import Path

from longhaul import _core

STUB = Path(__file__).resolve().parents[1] / "python" / "longhaul" / "_core.pyi"


def _stub_functions() -> dict[str, list[tuple[str, str | None]]]:
    """Each function of the stub: its parameters as (name, default's source or None)."""
    tree = ast.parse(STUB.read_text())
    out = {}
    for node in tree.body:
        if isinstance(node, ast.FunctionDef):
            args = node.args.args
            defaults = [None] * (len(args) - len(node.args.defaults)) + [ast.unparse(d) for d in node.args.defaults]
            out[node.name] = [(a.arg, d) for a, d in zip(args, defaults)]
    return out


def _core_functions() -> dict[str, list[tuple[str, str | None]]]:
    out = {}
    for name, fn in vars(_core).items():
        if name.startswith("_") or not callable(fn):
            continue
        params = inspect.signature(fn).parameters.values()
        out[name] = [(p.name, None if p.default is inspect.Parameter.empty else repr(p.default)) for p in params]
    return out


def test_the_stub_names_every_function_of_the_core_with_its_parameters():
    assert _stub_functions() == _core_functions()


def test_the_package_says_it_is_typed():
    assert (STUB.parent / "py.typed").is_file()
