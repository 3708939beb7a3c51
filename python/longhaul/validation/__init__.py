"""Validation of the models against published measurements.

Each model has a points file ``points_<model>.toml`` (the points it is checked against, copied
with their citations from the shared reference list) and a module ``<model>.py`` whose ``CHECKS``
maps a point id to a check function ``(point, quiet) -> row``. A check runs the simulator the way
the study ran its benchmark and compares: numbers within the point's tolerance, claims as shape
assertions. Rows: id, source, what, expected, model, rel_err, passed, detail.
"""

from __future__ import annotations

import importlib
import os
import tomllib
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from longhaul.sim.core import cancel_on_interrupt

HERE = Path(__file__).parent
MODELS = sorted(p.stem.removeprefix("points_") for p in HERE.glob("points_*.toml"))


def points() -> dict[str, dict]:
    """Every validation point of every model, by id."""
    out: dict[str, dict] = {}
    for model in MODELS:
        with (HERE / f"points_{model}.toml").open("rb") as f:
            for p in tomllib.load(f)["point"]:
                out[p["id"]] = {**p, "model_name": model}
    return out


def checks() -> dict[str, Callable[[dict, bool], dict]]:
    out: dict[str, Callable[[dict, bool], dict]] = {}
    for model in MODELS:
        out.update(importlib.import_module(f"longhaul.validation.{model}").CHECKS)
    return out


CHECKS = checks()


def _with_gap(row: dict, point: dict) -> dict:
    """A point the model does not reproduce yet says so (``known_gap`` in its points file)."""
    gap = point.get("known_gap", "")
    if gap and not row["passed"]:
        row = {**row, "known_gap": gap, "detail": f"{row['detail']}; known gap: {gap}"}
    return row


def check(point_id: str, quiet: bool = True) -> dict:
    point = points()[point_id]
    return _with_gap(CHECKS[point_id](point, quiet), point)


def check_all(quiet: bool = True, models: list[str] | None = None) -> list[dict]:
    """Every check the models can run today (one row each; only those of ``models`` if given),
    several at a time: the simulator releases the GIL, so threads use every core."""
    pts = points()
    todo = [(pid, fn) for pid, fn in CHECKS.items() if models is None or pts[pid]["model_name"] in models]
    with ThreadPoolExecutor(max_workers=os.cpu_count() or 1) as pool, cancel_on_interrupt():
        return list(pool.map(lambda item: _with_gap(item[1](pts[item[0]], quiet), pts[item[0]]), todo))
