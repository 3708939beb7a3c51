"""Every model against the published points, one test per point so a report names what drifted.
Numbers within the point's tolerance; claims as shape assertions. A point the model does not
reproduce yet carries `known_gap` in its points file: the test then checks that it still fails
(so a fix is noticed) and reports it as an expected failure with the reason."""

from __future__ import annotations

import pytest

from longhaul import validation


@pytest.mark.parametrize("point_id", list(validation.CHECKS))
def test_published_point(point_id):
    row = validation.check(point_id)
    gap = validation.points()[point_id].get("known_gap")
    if gap:
        assert not row["passed"], f"{point_id} now passes: remove its known_gap"
        pytest.xfail(f"known gap: {gap} (expected {row['expected']}, model {row['model']})")
    assert row["passed"], f"{point_id}: expected {row['expected']}, model {row['model']} ({row['detail']})"


def test_validation_data_carries_citations():
    for p in validation.points().values():
        assert p["source"].startswith(("S1", "S2", "S3")) and p["what"]


def test_model_code_reads_no_published_values():
    """The published values live only in validation data, never in the models."""
    import pathlib

    root = pathlib.Path(validation.__file__).resolve().parents[3] / "crates"
    model_text = "\n".join(p.read_text() for p in root.rglob("*.rs") if "tests" not in p.parts)
    for p in validation.points().values():
        for key in ("value_MBps", "value_Mmsgs"):
            if key in p:
                assert f"{p[key]}.0" not in model_text and f" {p[key]} " not in model_text, (p["id"], key)
