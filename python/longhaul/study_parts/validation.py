"""Validation: every published point with the model's value, relative error and verdict
(``longhaul.validation.check_all``), and the sources cited in full by the report."""

from __future__ import annotations

import importlib

from longhaul.errors import UserError
from longhaul.study import PartResult, SkipPart, StudyContext, StudyPart
from longhaul.study_parts._common import cached_json


def run(ctx: StudyContext) -> PartResult:
    from longhaul.analysis import load_published

    try:
        points = load_published()
    except UserError as err:
        raise SkipPart(str(err)) from None
    reason = ""
    try:
        validation = importlib.import_module("longhaul.validation")
        # --quick checks the fast verbs points only; the full study checks every model.
        models = QUICK_VALIDATION_MODELS if ctx.quick else None
        rows = _cached_check_all(ctx, lambda: validation.check_all(models=models), models)
    except Exception as err:  # noqa: BLE001 - the report says why the validation part is empty
        rows, reason = [], f"longhaul.validation.check_all is not available ({type(err).__name__}: {err})"
    by_id = {r.get("id"): r for r in rows}
    table = []
    for p in points:
        r = by_id.get(p["id"])
        if r is None:
            table.append({"id": p["id"], "source": p.get("source", ""), "what": p.get("what", ""),
                          "expected": _expected(p), "model": None, "rel_err": None,
                          "passed": None, "detail": reason or (
                              "checked by the full study (not in --quick)" if p["id"] in _checked_elsewhere(ctx)
                              else "no check for this point yet")})
        else:
            table.append({k: r.get(k) for k in _VALIDATION_KEYS})
    for r in rows:  # checks of points not in the file (kept, not lost)
        if r.get("id") not in {p["id"] for p in points}:
            table.append({k: r.get(k) for k in _VALIDATION_KEYS})
    out = PartResult(validation=table, skipped_reason=reason)
    out.notes.append(f"{len(table)} published points: see the validation section of this report.")
    out.commands.append("python -c 'import longhaul.validation as v; print(v.check_all())'")
    return out


QUICK_VALIDATION_MODELS = ["verbs"]
#: a validation row as the report shows it; ``known_gap`` (the points file's reason, or None) marks a
#: point the model is known not to reproduce yet
_VALIDATION_KEYS = ("id", "source", "what", "expected", "model", "rel_err", "passed", "known_gap", "detail")


def _checked_elsewhere(ctx: StudyContext) -> set[str]:
    """Points that have a check which this (quick) run left out."""
    if not ctx.quick:
        return set()
    try:
        validation = importlib.import_module("longhaul.validation")
    except Exception:  # noqa: BLE001 - no validation module: no checks to list (the validation part says why)
        return set()
    return set(getattr(validation, "CHECKS", {}))


def _cached_check_all(ctx: StudyContext, check_all, models: list[str] | None = None) -> list[dict]:
    """check_all() rows, cached in the store like any run."""
    key = {"kind": "validation", "fn": "longhaul.validation.check_all", "models": models}
    return cached_json(ctx, key, check_all, "study-validation")[0]


def _expected(p: dict) -> str:
    vals = [f"{k}={v}" for k, v in p.items() if k.startswith("value")]
    return "; ".join(vals) if vals else str(p.get("claim", ""))[:160]



PART = StudyPart("validation", "Validation against every published point", run, order=80)
