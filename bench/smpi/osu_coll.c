/* An osu_bcast / osu_alltoall-like loop for SimGrid SMPI (bench/mpi_bench.py's SMPI side).
 *
 * Timed the way longhaul's OSU model times a collective (crates/longhaul-sim/src/mpi/osu.rs):
 * every call sits between two clock reads and is followed by a barrier; the first WARMUP calls
 * are not timed, the next ITERATIONS are; each rank averages its timed calls, and rank 0 prints
 * the average over ranks with the fastest and slowest rank's average (as osu_bcast and
 * osu_alltoall print "Avg Latency(us)", "Min", "Max").
 *
 * Buffers come from SMPI_SHARED_MALLOC: every rank's buffer maps the same pages and SMPI skips
 * the copies, so the run holds no payload (4,096 ranks x 256 MiB of alltoall buffers would not
 * fit); longhaul holds none either.
 *
 * Usage: osu_coll bcast|alltoall SIZE_BYTES WARMUP ITERATIONS
 * Prints: lat_us AVG MIN MAX
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv)
{
  MPI_Init(&argc, &argv);
  int rank = 0;
  int ranks = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &ranks);
  if (argc != 5 || (strcmp(argv[1], "bcast") != 0 && strcmp(argv[1], "alltoall") != 0)) {
    if (rank == 0)
      fprintf(stderr, "usage: osu_coll bcast|alltoall SIZE_BYTES WARMUP ITERATIONS\n");
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  const int is_bcast = strcmp(argv[1], "bcast") == 0;
  const int size_bytes = atoi(argv[2]);
  const int warmup = atoi(argv[3]);
  const int iterations = atoi(argv[4]);
  const size_t buffer_bytes = is_bcast ? (size_t)size_bytes : (size_t)size_bytes * (size_t)ranks;
  char *send = SMPI_SHARED_MALLOC(buffer_bytes);
  char *recv = is_bcast ? send : SMPI_SHARED_MALLOC(buffer_bytes);

  double timed_s = 0.0;
  for (int i = 0; i < warmup + iterations; i++) {
    const double start = MPI_Wtime();
    if (is_bcast)
      MPI_Bcast(send, size_bytes, MPI_CHAR, 0, MPI_COMM_WORLD);
    else
      MPI_Alltoall(send, size_bytes, MPI_CHAR, recv, size_bytes, MPI_CHAR, MPI_COMM_WORLD);
    const double end = MPI_Wtime();
    if (i >= warmup)
      timed_s += end - start;
    MPI_Barrier(MPI_COMM_WORLD);
  }

  const double mine_us = timed_s / iterations * 1e6;
  double sum_us = 0.0;
  double min_us = 0.0;
  double max_us = 0.0;
  MPI_Reduce(&mine_us, &sum_us, 1, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
  MPI_Reduce(&mine_us, &min_us, 1, MPI_DOUBLE, MPI_MIN, 0, MPI_COMM_WORLD);
  MPI_Reduce(&mine_us, &max_us, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
  if (rank == 0)
    printf("lat_us %.3f %.3f %.3f\n", sum_us / ranks, min_us, max_us);
  if (!is_bcast)
    SMPI_SHARED_FREE(recv);
  SMPI_SHARED_FREE(send);
  MPI_Finalize();
  return 0;
}
