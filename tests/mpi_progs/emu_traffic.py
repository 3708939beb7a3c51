"""Known traffic for tests/test_emu_mpi_link.py: rank 0 (first of cluster A) sends CROSS_BYTES to
the first rank of cluster B; inside each cluster, the first rank sends LOCAL_BYTES to the second.
Every rank prints "rank <r> host <hostname> cluster <$LONGHAUL_CLUSTER>"."""

import os
import socket
import sys

import numpy as np
from mpi4py import MPI

from longhaul.mpi import cluster_of_ranks

cross_bytes, local_bytes = int(sys.argv[1]), int(sys.argv[2])
comm = MPI.COMM_WORLD
rank = comm.Get_rank()
clusters = cluster_of_ranks(comm)
members = {c: [r for r, x in enumerate(clusters) if x == c] for c in sorted(set(clusters))}
a, b = (members[c] for c in sorted(members))
print(f"rank {rank} host {socket.gethostname()} cluster {os.environ.get('LONGHAUL_CLUSTER')}", flush=True)
buf = np.zeros(max(cross_bytes, local_bytes), dtype=np.uint8)
if rank == a[0]:
    comm.Send(buf[:cross_bytes], dest=b[0])
elif rank == b[0]:
    comm.Recv(buf[:cross_bytes], source=a[0])
for group in (a, b):
    if len(group) > 1 and rank == group[0]:
        comm.Send(buf[:local_bytes], dest=group[1])
    elif len(group) > 1 and rank == group[1]:
        comm.Recv(buf[:local_bytes], source=group[0])
comm.Barrier()
