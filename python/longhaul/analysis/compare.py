"""Comparison tables: model vs published point vs measured, with relative errors."""

from __future__ import annotations

import math
import os
from collections.abc import Mapping, Sequence
from pathlib import Path

from longhaul import safeio
from longhaul.errors import UserError

ENV_PUBLISHED = "LONGHAUL_PUBLISHED"


def rel_err(value: float | None, reference: float | None) -> float | None:
    """(value - reference) / |reference|, or None when either is missing or the reference is 0."""
    if value is None or reference is None or reference == 0:
        return None
    if not (math.isfinite(value) and math.isfinite(reference)):
        return None
    return (value - reference) / abs(reference)


def published_points_path() -> Path | None:
    """$LONGHAUL_PUBLISHED, else shared/reference/ beside the repo (the complete list); None
    means: use the points the models are validated against (``longhaul.validation``)."""
    env = os.environ.get(ENV_PUBLISHED)
    if env:
        return Path(env)
    repo = Path(__file__).resolve().parents[3]
    p = repo.parent / "shared" / "reference" / "published-points.toml"
    return p if p.is_file() else None


def load_published(path: str | os.PathLike | None = None) -> list[dict]:
    """The [[point]] tables of published-points.toml (id, source, what, value_* ..., claim)."""
    p = Path(path) if path else published_points_path()
    if p is None and path is None:
        from longhaul import validation

        return list(validation.points().values())
    if p is None:
        raise UserError(f"published points: file not found (set ${ENV_PUBLISHED}); expected published-points.toml")
    data = safeio.read_file(p, "published points", safeio.DOCUMENT_BYTES, "the published-points.toml file")
    text = data.decode("utf-8-sig", errors="replace")   # a byte that is not UTF-8 is not TOML either: said so
    doc = safeio.parse_toml(text, f"published points: '{p}'")
    points = doc.get("point")
    if not isinstance(points, list) or not points or not all(isinstance(q, dict) and "id" in q for q in points):
        raise UserError(f"published points: '{p}' has no [[point]] tables with an id "
                        "(expected published-points.toml: [[point]] id = ..., value_MBps = ...)")
    return points


def comparison_table(rows: Sequence[Mapping]) -> list[dict]:
    """Rows with ``id``, ``what``, ``unit`` and any of ``published``, ``model``, ``measured`` ->
    plus ``model_rel_err`` (model vs published), ``measured_rel_err`` (measured vs published) and
    ``model_vs_measured_rel_err``."""
    out = []
    for r in rows:
        pub, mod, mea = r.get("published"), r.get("model"), r.get("measured")
        out.append({**r,
                    "model_rel_err": rel_err(mod, pub),
                    "measured_rel_err": rel_err(mea, pub),
                    "model_vs_measured_rel_err": rel_err(mod, mea)})
    return out


def scalar_points(points: Sequence[Mapping]) -> list[dict]:
    """Published points that carry one number in MB/s (value_MBps scalar): id, what, published."""
    out = []
    for p in points:
        v = p.get("value_MBps")
        if isinstance(v, (int, float)):
            out.append({"id": p["id"], "what": p.get("what", ""), "unit": "MB/s", "published": float(v)})
    return out
