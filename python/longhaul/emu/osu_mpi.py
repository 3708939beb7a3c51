"""OSU-style MPI benchmarks in mpi4py, run by ``longhaul emu mpi osu`` inside the emulated
clusters (and usable under any mpirun). Prints the OSU micro-benchmarks column layout, so
``longhaul.ingest.osu`` parses it.

    python osu_mpi.py BENCH --sizes 1,1024,65536 --iterations 100 --warmup 10 [--window 64]
                      [--pairs K] [--algo default|hierarchical]

Measurement follows the OSU sources (osu_latency, osu_bw, osu_bibw, osu_mbw_mr, osu_bcast,
osu_allreduce, osu_alltoall): warm-up iterations are left out; bw posts a window of
non-blocking sends answered by a 4-byte reply; collectives time each call between barriers and
print the average over ranks of the per-rank average, and the fastest and slowest rank's.
Point-to-point pairs cross the clusters: the i-th rank of cluster A with the i-th of cluster B
(clusters from $LONGHAUL_CLUSTER, see longhaul.mpi). Buffers are numpy arrays, so mpi4py passes
them without copies; what mpi4py adds per call is reported by bench/emu_mpi_bench.py.
"""

from __future__ import annotations

import argparse
import sys

import numpy as np
from mpi4py import MPI

from longhaul.mpi import HierComm, cluster_of_ranks
from longhaul.osu_text import PORTED, TITLES, header, row

ACK_BYTES = 4  # osu_bw's reply after each window


def pairs_of(comm, within: bool = False) -> list[tuple[int, int]]:
    """(A rank, B rank) pairs: the i-th rank of the first cluster with the i-th of the second;
    with ``within``, the first two ranks of the first cluster (a path that avoids the link)."""
    clusters = cluster_of_ranks(comm)
    labels = sorted(set(clusters))
    if len(labels) != 2:
        raise SystemExit(f"osu_mpi: point-to-point tests need ranks in exactly 2 clusters, found {len(labels)}")
    a = [r for r, c in enumerate(clusters) if c == labels[0]]
    b = [r for r, c in enumerate(clusters) if c == labels[1]]
    if within:
        if len(a) < 2:
            raise SystemExit("osu_mpi: --within needs 2 ranks in the first cluster")
        return [(a[0], a[1])]
    return list(zip(a, b))


def latency(comm, size, iters, warmup, peer, sender):
    buf = np.zeros(max(size, 1), dtype=np.uint8)[:size]
    for i in range(warmup + iters):
        if i == warmup:
            t0 = MPI.Wtime()
        if sender:
            comm.Send(buf, dest=peer)
            comm.Recv(buf, source=peer)
        else:
            comm.Recv(buf, source=peer)
            comm.Send(buf, dest=peer)
    return (MPI.Wtime() - t0) * 1e6 / (2 * iters)


def stream(comm, size, iters, warmup, window, peer, sender, both):
    """Seconds for `iters` windows (osu_bw; with `both`, osu_bibw: each side sends a window)."""
    sbuf = np.zeros(max(size, 1), dtype=np.uint8)[:size]
    rbuf = np.zeros(max(size, 1), dtype=np.uint8)[:size]
    ack = np.zeros(ACK_BYTES, dtype=np.uint8)
    for i in range(warmup + iters):
        if i == warmup:
            t0 = MPI.Wtime()
        reqs = []
        if both or not sender:
            reqs += [comm.Irecv(rbuf, source=peer, tag=10) for _ in range(window)]
        if both or sender:
            reqs += [comm.Isend(sbuf, dest=peer, tag=10) for _ in range(window)]
        MPI.Request.Waitall(reqs)
        if sender:
            comm.Recv(ack, source=peer, tag=11)
        else:
            comm.Send(ack, dest=peer, tag=11)
    return MPI.Wtime() - t0


def collective(comm, bench, algo, size, iters, warmup):
    """Per-rank average latency (us) of one collective call."""
    h = HierComm(comm) if algo == "hierarchical" else None
    n = comm.Get_size()
    if bench == "allreduce":
        count = max(size // 4, 1)  # osu_allreduce: float elements
        sbuf, rbuf = np.ones(count, dtype=np.float32), np.zeros(count, dtype=np.float32)
    elif bench == "alltoall":
        sbuf, rbuf = np.zeros(size * n, dtype=np.uint8), np.zeros(size * n, dtype=np.uint8)
    else:
        sbuf = np.zeros(size, dtype=np.uint8)
    total = 0.0
    for i in range(warmup + iters):
        comm.Barrier()
        t = MPI.Wtime()
        if bench == "bcast":
            (h or comm).Bcast(sbuf, root=0)
        elif bench == "allreduce":
            (h or comm).Allreduce(sbuf, rbuf, op=MPI.SUM)
        else:
            (h or comm).Alltoall(sbuf, rbuf)
        if i >= warmup:
            total += MPI.Wtime() - t
    return total * 1e6 / iters


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("bench", choices=PORTED)
    ap.add_argument("--sizes", required=True, help="comma list of message sizes, bytes")
    ap.add_argument("--iterations", type=int, default=100)
    ap.add_argument("--warmup", type=int, default=10)
    ap.add_argument("--window", type=int, default=64)
    ap.add_argument("--pairs", type=int, default=0, help="mbw_mr: pairs (0 = as many as both clusters have)")
    ap.add_argument("--algo", choices=["default", "hierarchical"], default="default")
    ap.add_argument("--within", action="store_true", help="pt2pt: pair two ranks of the same cluster")
    a = ap.parse_args(argv)
    sizes = [int(s) for s in a.sizes.split(",")]
    comm = MPI.COMM_WORLD
    rank = comm.Get_rank()
    columns = TITLES[a.bench][1]
    pairs = pairs_of(comm, a.within) if columns else []
    if a.bench == "mbw_mr" and a.pairs:
        pairs = pairs[:a.pairs]
    elif a.bench in ("latency", "bw", "bibw"):
        pairs = pairs[:1]
    if rank == 0:
        print("\n".join(header(a.bench, [(f"longhaul mpi4py port ({MPI.Get_library_version().splitlines()[0].strip()}); "
                                          f"ranks: {comm.Get_size()}, algo: {a.algo}")], len(pairs), a.window,
                                 made_by="mpi4py port")),
              flush=True)
    mine = next(((p, q) for p, q in pairs if rank in (p, q)), None)
    for size in sizes:
        if columns is None:
            lat = collective(comm, a.bench, a.algo, size, a.iterations, a.warmup)
            avg, lo, hi = comm.reduce(lat, op=MPI.SUM), comm.reduce(lat, op=MPI.MIN), comm.reduce(lat, op=MPI.MAX)
            if rank == 0:
                assert avg is not None and lo is not None and hi is not None  # the root's reductions
                print(row(size, avg / comm.Get_size(), lo, hi, iterations=a.iterations), flush=True)
            continue
        comm.Barrier()
        value = None
        if mine is not None:
            sender, peer = rank == mine[0], mine[1] if rank == mine[0] else mine[0]
            if a.bench == "latency":
                value = latency(comm, size, a.iterations, a.warmup, peer, sender)
            else:
                t = stream(comm, size, a.iterations, a.warmup, a.window, peer, sender, a.bench == "bibw")
                value = t if sender else None
            value = value if sender else None  # the sender's clock measures the whole exchange
        values = comm.gather(value, root=0)
        if rank != 0:
            continue
        assert values is not None  # the root's gather
        times = [v for v in values if v is not None]
        if a.bench == "latency":
            print(row(size, times[0]), flush=True)
            continue
        mb = size / 1e6 * a.iterations * a.window * (2 if a.bench == "bibw" else 1)
        if a.bench == "mbw_mr":  # osu_mbw_mr: aggregate over pairs with the average sender time
            bw = mb * len(times) / (sum(times) / len(times))
            print(row(size, bw, bw * 1e6 / max(size, 1)), flush=True)
        else:
            print(row(size, mb / times[0]), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
