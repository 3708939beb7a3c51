"""The MPI validation data: citations, and no published value inside the MPI model's code.
(The points themselves run in tests/test_validation.py with every other model's.)"""

from __future__ import annotations

from longhaul import validation
from longhaul.validation import mpi as mpi_checks


def test_mpi_points_carry_citations_and_model_reads_no_published_values():
    import pathlib

    pts = {k: v for k, v in validation.points().items() if v["model_name"] == "mpi"}
    assert set(pts) == set(mpi_checks.CHECKS)
    root = pathlib.Path(validation.__file__).resolve().parents[3] / "crates" / "longhaul-sim" / "src" / "mpi"
    text = "\n".join(p.read_text() for p in root.glob("*.rs"))
    for p in pts.values():
        assert p["source"].startswith(("S1", "S2")) and p["what"]
        for key in ("value_MBps", "value_uni_MBps", "value_bi_MBps"):
            if key in p:
                assert str(p[key]) not in text, (p["id"], key)
