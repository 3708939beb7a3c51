"""Calling the Rust core from the model front ends: scenario dicts in and records out as JSON,
the core's one-line errors as ``UserError``, and many points on all cores (the core releases
the GIL while it simulates)."""

from __future__ import annotations

import contextlib
import functools
import json
import math
import os
import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

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


def workload_table(key: str, table: object, example: str) -> dict:
    """A scenario's workload table (``osu``, ``app``, ``trace``) without its unset entries, or a
    UserError when it is not a table (a sweep grid's ``{"osu": "bw"}``)."""
    if not isinstance(table, dict):
        raise UserError(f"{key}: give a table/object such as {example}, not {json.dumps(table)}")
    return {k: v for k, v in table.items() if v is not None}


def file_keys(tables: dict[str, Iterable[str]], renamed: dict[str, str] | None = None) -> dict[str, str]:
    """How a scenario file spells each parameter the core's messages name by its bare key
    (``streams`` -> ``tcp.streams``): ``tables`` maps a table to the keys it holds, ``renamed``
    gives keys spelled otherwise (``cross_gbps`` -> ``cross.gbps``)."""
    return {key: f"{table}.{key}" for table, keys in tables.items() for key in keys} | (renamed or {})


#: Cross traffic's parameters as the models' functions take them, and their keys in a scenario's
#: ``[cross]`` table (the same for every model with cross traffic: tcp, verbs).
CROSS_KEYS = {"cross_gbps": "gbps", "cross_start_s": "start_s", "cross_on_ms": "on_ms", "cross_off_ms": "off_ms",
              "cross_packet_bytes": "packet_bytes"}


def check_cross_table(sc: dict) -> None:
    """A scenario's ``cross`` must be a table (``cross = 5`` was a TypeError traceback)."""
    if not isinstance(sc.get("cross", {}), dict):
        raise UserError(f"scenario: 'cross' must be a table/object ({', '.join(CROSS_KEYS.values())}), "
                        f"got {type(sc['cross']).__name__}")


def set_cross(sc: dict, key: str, value: object) -> None:
    """Set cross-traffic parameter ``key`` (a ``CROSS_KEYS`` key) in scenario ``sc``;
    ``cross_gbps`` = 0 removes the cross traffic."""
    if key == "cross_gbps" and value == 0:
        sc.pop("cross", None)
        return
    sc.setdefault("cross", {})[CROSS_KEYS[key]] = value


def check_cross_rate(sc: dict) -> None:
    """Other cross options without the rate: one line, not the core's missing-field message."""
    if "cross" in sc and "gbps" not in sc["cross"]:
        raise UserError("cross_gbps: the cross-traffic rate is required when other cross options are given")


def unknown_parameter(model: str, key: str, valid: Iterable[str]) -> UserError:
    """The error for a parameter ``model``'s scenarios do not have: the closest valid name, if one
    is close (a typo), and every valid name."""
    import difflib

    names = sorted(set(valid))
    close = difflib.get_close_matches(key, names, n=1)
    hint = f"did you mean '{close[0]}'? " if close else ""
    return UserError(f"unknown {model}scenario parameter '{key}' ({hint}valid: {', '.join(names)})")


def cancel_runs(on: bool) -> None:
    """Cancel (``True``) the simulations running in the core, and any started until cleared
    (``False``): a point runs with the GIL released and can take minutes, so Ctrl-C alone would
    wait for it. Nothing to do when the core is not built."""
    try:
        from longhaul import _core
    except ImportError:
        return
    _core.cancel_runs(on)


@functools.cache
def _all_names() -> dict[str, tuple[str, ...]]:
    from longhaul import _core

    return {key: tuple(names) for key, names in _core.names().items()}


def names(key: str) -> tuple[str, ...]:
    """The names the core accepts for a name-valued scenario key (``verbs.transport``,
    ``mpi.osu.bench``, ...), read from its enums and profile tables: never a copy kept here."""
    return _all_names()[key]


def runs_progress() -> float:
    """The shares done of the simulations running in the core (0 to 1 each, summed; 0 when the
    core is not built): what a progress bar adds to the points finished while one takes minutes."""
    try:
        from longhaul import _core
    except ImportError:
        return 0.0
    return _core.runs_progress()


def on_main_thread() -> bool:
    return threading.current_thread() is threading.main_thread()


@contextlib.contextmanager
def cancel_on_interrupt() -> Iterator[None]:
    """Around waiting for simulations run by worker threads (inside the pool's ``with``, so it
    acts before the pool waits for its workers): runs start allowed and, on Ctrl-C, the ones
    still running are cancelled, so the pool closes at once."""
    if on_main_thread():
        cancel_runs(False)
    try:
        yield
    except KeyboardInterrupt:
        cancel_runs(True)
        raise


#: the widest whole numbers any parameter of the core takes (u64, i64)
_WHOLE_RANGE = (-(2**63), 2**64 - 1)


def _unrepresentable(value: object, path: str = "") -> str | None:
    """What is wrong with the first number in a scenario that the core cannot be handed, with its
    key path, or None: NaN or infinity (JSON has no such numbers, so the core could not name the
    parameter), or a whole number beyond 64 bits (JSON would carry it, but the core would read it
    as a float and call it one)."""
    if isinstance(value, float) and not math.isfinite(value):
        return f"{path}: not a finite number (give a value in its range; --help lists them)"
    if isinstance(value, int) and not isinstance(value, bool) and not _WHOLE_RANGE[0] <= value <= _WHOLE_RANGE[1]:
        return (f"{path}: {value} is out of range (no parameter takes a whole number outside "
                f"[{_WHOLE_RANGE[0]}, {_WHOLE_RANGE[1]}]; --help lists each one's range)")
    items = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
    for key, item in items:
        found = _unrepresentable(item, f"{path}.{key}" if path else str(key))
        if found is not None:
            return found
    return None


def call(entry: Callable[..., str], sc: dict, *args: object, **kwargs: object) -> Any:
    """``entry(json(sc), ...)`` decoded; a ValueError from the core is bad input. From the main
    thread the core runs in a worker, so that Ctrl-C reaches the main thread at once and cancels
    the run (the core then raises KeyboardInterrupt in the worker)."""
    bad = _unrepresentable(sc)
    if bad is not None:
        raise UserError(f"scenario: {bad}")
    text = json.dumps(sc)
    try:
        if on_main_thread():
            with ThreadPoolExecutor(max_workers=1) as worker, cancel_on_interrupt():
                out = worker.submit(entry, text, *args, **kwargs).result()
        else:
            out = entry(text, *args, **kwargs)
    except ValueError as err:
        raise UserError(str(err)) from None
    return json.loads(out) if isinstance(out, str) else out


def run_parallel(run: Callable[[dict], dict], validate: Callable[[dict], object], scenarios: Sequence[dict],
                 workers: int | None, show_progress: bool, description: str) -> list[dict]:
    """Validate every scenario first (bad input stops before any work), then run them in threads;
    records come back in input order."""
    if workers is not None and workers < 1:
        raise UserError(f"--workers: {workers} is out of range (1 or more)")
    for sc in scenarios:
        validate(sc)
    if not scenarios:
        return []
    workers = max(1, min(workers or os.cpu_count() or 1, len(scenarios)))
    with ThreadPoolExecutor(max_workers=workers) as pool, cancel_on_interrupt():
        results: Iterable[dict] = pool.map(run, scenarios)
        if show_progress:
            results = progress(results, len(scenarios), description, partial=runs_progress)
        return list(results)
