"""Calling the Rust core from the model front ends: scenario dicts in and records out as JSON,
the core's one-line errors as ``UserError``, and many points on all cores (the core releases
the GIL while it simulates)."""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor

from longhaul.errors import UserError
from longhaul.output import progress


def base_copy(base: dict | None, tables: tuple[str, ...]) -> dict:
    """A deep copy of a scenario read from a file (or {}), checked to be a table whose ``tables``
    are tables too (created when missing)."""
    sc = json.loads(json.dumps(base or {}))
    if not isinstance(sc, dict):
        raise UserError(f"scenario: the file must hold a table/object (with {', '.join(tables)} tables)")
    for table in tables:
        sc.setdefault(table, {})
        if not isinstance(sc[table], dict):
            raise UserError(f"scenario: '{table}' must be a table/object, got {type(sc[table]).__name__}")
    return sc


def call(entry: Callable[..., str], sc: dict, *args, **kwargs):
    """``entry(json(sc), ...)`` decoded; a ValueError from the core is bad input."""
    try:
        out = entry(json.dumps(sc), *args, **kwargs)
    except ValueError as err:
        raise UserError(str(err)) from None
    return json.loads(out) if isinstance(out, str) else out


def run_parallel(run: Callable[[dict], dict], validate: Callable[[dict], object], scenarios: Sequence[dict],
                 workers: int | None, show_progress: bool, description: str) -> list[dict]:
    """Validate every scenario first (bad input stops before any work), then run them in threads;
    records come back in input order."""
    for sc in scenarios:
        validate(sc)
    if not scenarios:
        return []
    workers = max(1, min(workers or os.cpu_count() or 1, len(scenarios)))
    with ThreadPoolExecutor(max_workers=workers) as pool:
        results: Iterable[dict] = pool.map(run, scenarios)
        if show_progress:
            results = progress(results, len(scenarios), description)
        return list(results)
