"""Run under mpirun: every hierarchical collective of longhaul.mpi against MPI's own, over
random cases drawn from one seed (the same on every rank): cluster maps, datatypes, operations,
counts and roots. Exit status 1 with a message on the first mismatch."""

import sys

import numpy as np
from mpi4py import MPI

from longhaul.mpi import HierComm

comm = MPI.COMM_WORLD
rank, size = comm.Get_rank(), comm.Get_size()
seed = int(sys.argv[1]) if len(sys.argv) > 1 else 1
cases = int(sys.argv[2]) if len(sys.argv) > 2 else 20
rng = np.random.default_rng(seed)  # same draws on every rank
mine = np.random.default_rng(seed * 1000 + rank)  # this rank's data

INT_TYPES = [np.int8, np.int32, np.int64, np.uint16, np.uint64]
FLOAT_TYPES = [np.float32, np.float64]
INT_OPS = [MPI.SUM, MPI.PROD, MPI.MAX, MPI.MIN, MPI.BAND, MPI.BOR, MPI.BXOR]
FLOAT_OPS = [MPI.SUM, MPI.MAX, MPI.MIN]


def data(dtype, n):
    # Small integer values (also for floats) keep sums and products exact in every order.
    return mine.integers(-3 if np.issubdtype(dtype, np.signedinteger) or dtype in FLOAT_TYPES else 0, 4, n).astype(dtype)


def fail(what):
    print(f"rank {rank}: MISMATCH {what}", flush=True)
    comm.Abort(1)


for case in range(cases):
    nclusters = int(rng.integers(1, min(size, 3) + 1))
    cmap = rng.integers(0, nclusters, size).tolist()
    # Small WAN chunks make Bcast take its piecewise path even for these short buffers.
    h = HierComm(comm, cluster_map=cmap, wan_chunk_bytes=int(rng.choice([7, 24, 1 << 15])))
    dtype = [*INT_TYPES, *FLOAT_TYPES][int(rng.integers(0, 7))]
    ops = FLOAT_OPS if dtype in FLOAT_TYPES else INT_OPS
    op = ops[int(rng.integers(0, len(ops)))]
    n = int(rng.integers(1, 40))
    root = int(rng.integers(0, size))
    tag = f"case {case}: map {cmap} {np.dtype(dtype).name} {op} n={n} root={root}"

    a = data(dtype, n) if rank == root else np.zeros(n, dtype)
    b = a.copy()
    h.Bcast(a, root=root)
    comm.Bcast(b, root=root)
    if not np.array_equal(a, b):
        fail(f"Bcast {tag}")

    x = data(dtype, n)
    r1, r2 = np.zeros(n, dtype), np.zeros(n, dtype)
    h.Reduce(x, r1, op=op, root=root)
    comm.Reduce(x, r2, op=op, root=root)
    if rank == root and not np.array_equal(r1, r2):
        fail(f"Reduce {tag}")
    h.Allreduce(x, r1, op=op)
    comm.Allreduce(x, r2, op=op)
    if not np.array_equal(r1, r2):
        fail(f"Allreduce {tag}")

    g1, g2 = np.zeros(n * size, dtype), np.zeros(n * size, dtype)
    h.Gather(x, g1, root=root)
    comm.Gather(x, g2, root=root)
    if rank == root and not np.array_equal(g1, g2):
        fail(f"Gather {tag}")

    s = data(dtype, n * size)
    s1, s2 = np.zeros(n, dtype), np.zeros(n, dtype)
    h.Scatter(s, s1, root=root)
    comm.Scatter(s, s2, root=root)
    if not np.array_equal(s1, s2):
        fail(f"Scatter {tag}")

    t = data(dtype, n * size)
    t1, t2 = np.zeros(n * size, dtype), np.zeros(n * size, dtype)
    h.Alltoall(t, t1)
    comm.Alltoall(t, t2)
    if not np.array_equal(t1, t2):
        fail(f"Alltoall {tag}")

    counts = rng.integers(0, 5, (size, size))  # counts[src][dst], same table on every rank
    sc, rc = counts[rank].tolist(), counts[:, rank].tolist()
    v = data(dtype, int(sum(sc)))
    v1, v2 = np.zeros(int(sum(rc)), dtype), np.zeros(int(sum(rc)), dtype)
    h.Alltoallv(v, sc, v1, rc)
    sd = np.cumsum([0] + sc[:-1]).tolist()
    rd = np.cumsum([0] + rc[:-1]).tolist()
    comm.Alltoallv([v, (sc, sd)], [v2, (rc, rd)])
    if not np.array_equal(v1, v2):
        fail(f"Alltoallv {tag}")
    h.free()

if rank == 0:
    print(f"OK {cases} cases on {size} ranks", flush=True)
