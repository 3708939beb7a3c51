/* liblonghaul_coll: WAN-aware two-level collectives over plain MPI calls.
 *
 * The ranks of a communicator are grouped into clusters (sites joined by a long-haul link).
 * Each cluster's lowest rank is its leader; only leaders talk across the WAN, and every piece of
 * data crosses it at most once per pair of clusters (the same algorithms as the Python
 * longhaul.mpi.HierComm). Every function takes an ordinary MPI_Comm and returns an MPI error
 * code; the cluster split is computed on first use and cached on the communicator (an MPI
 * attribute), so a code switches by renaming MPI_Bcast to LH_Bcast.
 *
 * Which ranks share a cluster, in order: LH_Comm_set_clusters (an explicit map); the environment
 * variable LONGHAUL_CLUSTER (set by `longhaul emu` in each emulated cluster); the host name
 * (MPI_Get_processor_name: each host its own cluster).
 *
 * LH_Bcast moves a message above 32 KiB (LONGHAUL_WAN_CHUNK_BYTES) across the WAN as pieces all
 * in flight at once, below common eager limits, so it pays no rendezvous round trip there.
 *
 * Limits: Reduce/Allreduce with a non-commutative op keep MPI's rank order only when each
 * cluster holds consecutive ranks; otherwise they fall back to the flat MPI call. Derived
 * datatypes work wherever MPI's own point-to-point calls accept them.
 */
#ifndef LONGHAUL_COLL_H
#define LONGHAUL_COLL_H

#include <mpi.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Collective over comm: cluster_of_rank[r] (one entry per rank, any non-negative ids, the same
 * array on every rank) replaces discovery for this communicator. */
int LH_Comm_set_clusters(MPI_Comm comm, const int *cluster_of_rank);
/* Number of clusters of comm and this rank's cluster index (0, 1, ... in order of first rank). */
int LH_Comm_clusters(MPI_Comm comm, int *nclusters, int *my_cluster);

int LH_Bcast(void *buf, int count, MPI_Datatype type, int root, MPI_Comm comm);
int LH_Reduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype type, MPI_Op op, int root,
              MPI_Comm comm);
int LH_Allreduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype type, MPI_Op op, MPI_Comm comm);
int LH_Gather(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf, int recvcount,
              MPI_Datatype recvtype, int root, MPI_Comm comm);
int LH_Scatter(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf, int recvcount,
               MPI_Datatype recvtype, int root, MPI_Comm comm);
int LH_Alltoall(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf, int recvcount,
                MPI_Datatype recvtype, MPI_Comm comm);

/* Fortran (mpif.h / use mpi integer handles): call lh_bcast(buf, count, type, root, comm, ierr). */
void lh_bcast_(void *buf, MPI_Fint *count, MPI_Fint *type, MPI_Fint *root, MPI_Fint *comm, MPI_Fint *ierr);
void lh_allreduce_(void *sendbuf, void *recvbuf, MPI_Fint *count, MPI_Fint *type, MPI_Fint *op, MPI_Fint *comm,
                   MPI_Fint *ierr);

#ifdef __cplusplus
}
#endif
#endif
