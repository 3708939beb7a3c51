"""`--algo default` runs each MPI library's own collective selection (docs/models/mpi.md,
"Collective selection per library"): MPICH2 1.0's rules for MVAPICH2 1.0 and 2.3, Open MPI 4.1's
coll/tuned fixed decision rules for openmpi-ucx; the record's `algo` names what ran."""

from __future__ import annotations

import json

from hypothesis import given, settings, strategies as st

from longhaul.sim import mpi

#: the algorithms each library's default can pick, per benchmark
PICKS = {
    "mpich": {"bcast": {"binomial", "scatter-rd", "scatter-ring"},
              "allreduce": {"recursive-doubling", "rabenseifner"},
              "alltoall": {"bruck", "scattered", "pairwise"},
              "scatter": {"binomial"}},
    "openmpi": {"bcast": {"linear", "chain", "binary-tree", "binomial", "knomial", "scatter-rd", "scatter-ring"},
                "allreduce": {"recursive-doubling", "rabenseifner"},
                "alltoall": {"linear", "bruck", "pairwise"},
                "scatter": {"binomial", "linear"}},
}
RULES = {"mvapich2-1.0": "mpich", "mvapich2-2.3": "mpich", "openmpi-ucx": "openmpi"}


def algos(cli, *args):
    proc = cli("sim", "mpi", "osu", *args, "--format", "json", check=True)
    return {(r["ranks"], r["size_bytes"]): r["algo"] for r in json.loads(proc.stdout)}


def test_open_mpi_bcast_follows_the_fixed_rule_by_size_on_ndr(cli):
    # 8 nodes x 1 rank per cluster = 16 ranks: ompi_coll_tuned_bcast_intra_dec_fixed picks knomial below
    # 4 KiB, binomial below 1 MiB, scatter_allgather from 1 MiB (scatter + recursive doubling on 16 ranks).
    got = algos(cli, "--bench", "bcast", "--mpi-library", "openmpi-ucx", "--profile", "ndr", "--nodes", "8",
                "--ppn", "1", "--sizes", "1K,64K,1M")
    assert got == {(16, 1024): "knomial", (16, 65536): "binomial", (16, 1 << 20): "scatter-rd"}
    # The same run under MVAPICH2 1.0 keeps MPICH2's choice.
    old = algos(cli, "--bench", "bcast", "--mpi-library", "mvapich2-1.0", "--profile", "ndr", "--nodes", "8",
                "--ppn", "1", "--sizes", "1K,64K,1M")
    assert old == {(16, 1024): "binomial", (16, 65536): "scatter-rd", (16, 1 << 20): "scatter-ring"}


def test_open_mpi_alltoall_and_allreduce_picks(cli):
    # 8 ranks: linear_sync (every request at once) below 256 KiB, linear above; allreduce recursive
    # doubling below 8 KiB, Rabenseifner from there.
    a2a = algos(cli, "--bench", "alltoall", "--mpi-library", "openmpi-ucx", "--nodes", "2", "--ppn", "2",
                "--sizes", "1K,512K")
    assert set(a2a.values()) == {"linear"}
    red = algos(cli, "--bench", "allreduce", "--mpi-library", "openmpi-ucx", "--nodes", "2", "--ppn", "2",
                "--sizes", "4K,64K")
    assert red == {(8, 4096): "recursive-doubling", (8, 65536): "rabenseifner"}


def test_the_new_algorithms_can_be_pinned(cli):
    for algo in ("linear", "chain", "binary-tree", "knomial"):
        got = algos(cli, "--bench", "bcast", "--algo", algo, "--nodes", "2", "--ppn", "2", "--sizes", "4K")
        assert got == {(8, 4096): algo}
    assert set(algos(cli, "--bench", "alltoall", "--algo", "linear", "--nodes", "2", "--ppn", "2",
                     "--sizes", "64").values()) == {"linear"}


@settings(max_examples=25, deadline=None)
@given(library=st.sampled_from(sorted(RULES)), bench=st.sampled_from(["bcast", "allreduce", "alltoall", "scatter"]),
       nodes=st.integers(1, 12), ppn=st.integers(1, 2), size_exp=st.integers(0, 21))
def test_every_default_pick_is_one_of_the_library_s_algorithms(library, bench, nodes, ppn, size_exp):
    sc = mpi.scenario(osu={"bench": bench, "size_bytes": 1 << size_exp, "iterations": 1, "warmup": 0},
                      library=library, nodes=nodes, ppn=ppn)
    rec = mpi.run(sc)
    assert rec["status"] == "ok"
    assert rec["algo"] in PICKS[RULES[library]][bench], rec["algo"]
