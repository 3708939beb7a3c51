"""Two-level collectives: one leader per cluster (its lowest rank) talks across the WAN; the
other ranks talk only inside their cluster.

Every collective below sends each piece of data over the long-haul link at most once per
(cluster, cluster) pair, instead of once per (rank, rank) pair as flat algorithms can:
- Bcast: root -> its leader -> other leaders (one WAN message each) -> ranks in each cluster.
- Reduce / Allreduce: reduce inside each cluster, combine across leaders, then deliver.
- Gather / Scatter: per-cluster blocks are gathered (scattered) by the leaders.
- Alltoall / Alltoallv: each leader aggregates what its cluster sends to another cluster into
  one message, exchanges it with the other leaders, and redistributes.
"""

from __future__ import annotations

import numpy as np
from mpi4py import MPI

from longhaul.mpi.topology import cluster_of_ranks


def _np(buf) -> np.ndarray:
    return buf if isinstance(buf, np.ndarray) else np.frombuffer(buf, dtype=np.uint8)


class HierComm:
    """A communicator split into clusters, with WAN-aware collectives (mpi4py buffer style)."""

    #: Bcast moves a larger message across the WAN as pieces of this size, each below the eager
    #: limits of common MPI transports (Open MPI's TCP BTL: btl_tcp_eager_limit = 64 KiB, header
    #: included), all in flight at once: no piece waits for a rendezvous round trip over the WAN.
    WAN_CHUNK_BYTES = 32 * 1024

    def __init__(self, comm=MPI.COMM_WORLD, cluster_map=None, pattern: str | None = None,
                 wan_chunk_bytes: int | None = None):
        self.wan_chunk_bytes = wan_chunk_bytes or self.WAN_CHUNK_BYTES
        self.comm = comm
        self.rank = comm.Get_rank()
        self.size = comm.Get_size()
        self.cluster = cluster_of_ranks(comm, cluster_map, pattern)
        self.nclusters = max(self.cluster) + 1
        me = self.cluster[self.rank]
        #: Global ranks of each cluster, in rank order; the first is the cluster's leader.
        self.members = [[r for r in range(self.size) if self.cluster[r] == c] for c in range(self.nclusters)]
        self.leaders = [m[0] for m in self.members]
        self.local = comm.Split(color=me, key=self.rank)
        self.is_leader = self.rank == self.leaders[me]
        self.wan = comm.Split(color=0 if self.is_leader else MPI.UNDEFINED, key=self.rank)
        self.my_cluster = me

    def free(self) -> None:
        self.local.Free()
        if self.wan != MPI.COMM_NULL:
            self.wan.Free()

    # ------------------------------------------------------------------ helpers
    def _local_rank(self, global_rank: int) -> int:
        return self.members[self.cluster[global_rank]].index(global_rank)

    def _move(self, buf, src: int, dst: int, tag: int) -> None:
        """Copy ``buf`` from global rank src to global rank dst (no-op when equal)."""
        if src == dst:
            return
        if self.rank == src:
            self.comm.Send(buf, dest=dst, tag=tag)
        elif self.rank == dst:
            self.comm.Recv(buf, source=src, tag=tag)

    # ------------------------------------------------------------------ bcast
    def Bcast(self, buf, root: int = 0) -> None:
        root_cluster = self.cluster[root]
        root_leader = self.leaders[root_cluster]
        self._move(buf, root, root_leader, tag=7101)
        if self.is_leader and self.nclusters > 1:
            # The root's leader starts the WAN transfer without waiting for it, and serves its
            # own cluster meanwhile.
            reqs = self._wan_bcast_start(buf, root_cluster)
            if self.rank != root_leader:
                MPI.Request.Waitall(reqs)
                self.local.Bcast(buf, root=0)
                return
            self.local.Bcast(buf, root=0)
            MPI.Request.Waitall(reqs)
            return
        self.local.Bcast(buf, root=0)

    def _wan_bcast_start(self, buf, root_cluster: int) -> list:
        """Leaders: start moving ``buf`` from the root's cluster to every other leader (leaders
        are ranked by cluster index in ``wan``). A message above one chunk goes as eager-sized
        pieces, all posted at once, so the long-haul round trip is paid once rather than once
        per rendezvous handshake; a smaller (or non-contiguous) one as one ``Ibcast``."""
        data = _np(buf)
        if data.nbytes <= self.wan_chunk_bytes or not data.flags.c_contiguous:
            return [self.wan.Ibcast(buf, root=root_cluster)]
        flat = data.reshape(-1).view(np.uint8)
        pieces = [flat[i:i + self.wan_chunk_bytes] for i in range(0, flat.size, self.wan_chunk_bytes)]
        if self.my_cluster == root_cluster:
            return [self.wan.Isend(p, dest=c, tag=7105) for c in range(self.nclusters) if c != root_cluster
                    for p in pieces]
        return [self.wan.Irecv(p, source=root_cluster, tag=7105) for p in pieces]

    # ------------------------------------------------------------------ reductions
    def Reduce(self, sendbuf, recvbuf, op=MPI.SUM, root: int = 0) -> None:
        send = _np(sendbuf)
        partial = np.empty_like(send)
        self.local.Reduce(send, partial, op=op, root=0)
        root_cluster = self.cluster[root]
        root_leader = self.leaders[root_cluster]
        total = np.empty_like(send) if self.is_leader else None
        if self.is_leader:
            if self.nclusters > 1:
                self.wan.Reduce(partial, total, op=op, root=root_cluster)
            else:
                assert total is not None  # every leader has one
                total[...] = partial
        if self.rank == root_leader and root == root_leader:
            _np(recvbuf)[...] = total
        elif self.rank == root_leader:
            self.comm.Send(total, dest=root, tag=7102)
        elif self.rank == root:
            self.comm.Recv(_np(recvbuf), source=root_leader, tag=7102)

    def Allreduce(self, sendbuf, recvbuf, op=MPI.SUM) -> None:
        send, recv = _np(sendbuf), _np(recvbuf)
        partial = np.empty_like(send)
        self.local.Reduce(send, partial, op=op, root=0)
        if self.is_leader:
            if self.nclusters > 1:
                self.wan.Allreduce(partial, recv, op=op)
            else:
                recv[...] = partial
        self.local.Bcast(recv, root=0)

    # ------------------------------------------------------------------ gather / scatter
    def Gather(self, sendbuf, recvbuf, root: int = 0) -> None:
        """recvbuf (at root) holds size blocks of len(sendbuf) elements, in global rank order."""
        send = _np(sendbuf)
        n = send.size
        mine = self.members[self.my_cluster]
        block = np.empty(len(mine) * n, dtype=send.dtype) if self.is_leader else None
        self.local.Gather(send, block, root=0)
        root_cluster = self.cluster[root]
        root_leader = self.leaders[root_cluster]
        if self.is_leader:
            counts = [len(m) * n for m in self.members]
            whole = np.empty(self.size * n, dtype=send.dtype) if self.rank == root_leader else None
            if self.nclusters > 1:
                recvspec = [whole, (counts, np.cumsum([0] + counts[:-1]).tolist())] if whole is not None else None
                self.wan.Gatherv(block, recvspec, root=root_cluster)
            else:
                whole = block
            if self.rank == root_leader:
                assert whole is not None  # the root's leader gathered it
                ordered = np.empty_like(whole)
                offset = 0
                for m in self.members:  # cluster-major -> rank order
                    for r in m:
                        ordered[r * n:(r + 1) * n] = whole[offset:offset + n]
                        offset += n
                if root == root_leader:
                    _np(recvbuf)[...] = ordered
                else:
                    self.comm.Send(ordered, dest=root, tag=7103)
        if self.rank == root and root != root_leader:
            self.comm.Recv(_np(recvbuf), source=root_leader, tag=7103)

    def Scatter(self, sendbuf, recvbuf, root: int = 0) -> None:
        """sendbuf (at root) holds size blocks of len(recvbuf) elements, in global rank order."""
        recv = _np(recvbuf)
        n = recv.size
        root_cluster = self.cluster[root]
        root_leader = self.leaders[root_cluster]
        if self.rank == root_leader:
            whole = np.empty(self.size * n, dtype=recv.dtype)
            if root == root_leader:
                whole[...] = _np(sendbuf).reshape(-1)[: self.size * n]
            else:
                self.comm.Recv(whole, source=root, tag=7104)
        elif self.rank == root:
            self.comm.Send(_np(sendbuf), dest=root_leader, tag=7104)
        mine = self.members[self.my_cluster]
        block = np.empty(len(mine) * n, dtype=recv.dtype) if self.is_leader else None
        if self.is_leader:
            counts = [len(m) * n for m in self.members]
            sendspec = None
            if self.rank == root_leader:
                cluster_major = np.concatenate([whole[r * n:(r + 1) * n] for m in self.members for r in m])
                sendspec = [cluster_major, (counts, np.cumsum([0] + counts[:-1]).tolist())]
            if self.nclusters > 1:
                self.wan.Scatterv(sendspec, block, root=root_cluster)
            else:
                # One cluster: its leader is the root's leader, which made sendspec.
                assert block is not None and sendspec is not None
                block[...] = sendspec[0]
        self.local.Scatter(block, recv, root=0)

    # ------------------------------------------------------------------ all-to-all
    def Alltoall(self, sendbuf, recvbuf) -> None:
        """Each rank sends len(sendbuf)/size elements to every rank (rank order)."""
        send = _np(sendbuf)
        n = send.size // self.size
        counts = [n] * self.size
        self.Alltoallv(send, counts, _np(recvbuf), counts)

    def Alltoallv(self, sendbuf, sendcounts, recvbuf, recvcounts) -> None:
        """Variable all-to-all with contiguous blocks in rank order (displacements implied).

        The leaders aggregate: one message per (cluster, cluster) pair crosses the WAN.
        """
        send, recv = _np(sendbuf), _np(recvbuf)
        sdispl = np.cumsum([0] + list(sendcounts[:-1]))
        # 1. every rank hands its blocks and counts to its leader
        my_blocks = {dst: send[sdispl[dst]:sdispl[dst] + sendcounts[dst]] for dst in range(self.size)}
        gathered = self.local.gather(my_blocks, root=0)
        # 2. leaders exchange, per destination cluster, everything their cluster sends there
        if self.is_leader:
            mine = self.members[self.my_cluster]
            outgoing = [{(src, dst): gathered[i][dst] for i, src in enumerate(mine) for dst in self.members[c]}
                        for c in range(self.nclusters)]
            incoming = self.wan.alltoall(outgoing) if self.nclusters > 1 else outgoing
            # 3. each local rank gets its blocks from every source, in source rank order
            per_rank = []
            for dst in mine:
                parts = {}
                for chunk in incoming:
                    for (src, d), data in chunk.items():
                        if d == dst:
                            parts[src] = data
                per_rank.append(np.concatenate([parts[s] for s in range(self.size)]) if parts else np.empty(0, send.dtype))
        else:
            per_rank = None
        result = self.local.scatter(per_rank, root=0)
        recv[: result.size] = result
        expected = int(np.sum(recvcounts))
        if result.size != expected:
            raise ValueError(f"Alltoallv: received {result.size} elements, recvcounts add up to {expected}")
