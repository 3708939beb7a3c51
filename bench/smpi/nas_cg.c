/* The communication skeleton of NAS CG for SimGrid SMPI (bench/mpi_bench.py's SMPI side): the
 * same pattern longhaul's CG skeleton plays (crates/longhaul-sim/src/mpi/apps.rs, `cg`), so both
 * simulators run the same messages.
 *
 * P = nprows x npcols ranks, npcols = 2^ceil(log2(P) / 2) (NPB 3.x cg.f's setup_proc_info).
 * Each outer iteration computes for COMPUTE_US (longhaul's per-iteration compute, taken from its
 * record) and then runs 25 inner iterations (cg.f's cgitmax), each:
 *   - the matrix-vector product's row reduction: log2(npcols) exchanges with the partner
 *     col ^ 2^i in the rank's row, of (na / nprows x 8 B) >> (i + 1) bytes;
 *   - the exchange with the transpose rank, na x 8 / P bytes (when npcols > 1);
 *   - two dot products: log2(npcols) exchanges of 8 B each with the same partners.
 * Every exchange is one MPI_Sendrecv, as longhaul plays it. Rank 0 prints the slowest rank's
 * simulated time per outer iteration.
 *
 * Usage: nas_cg NA OUTER_ITERATIONS COMPUTE_US
 * Prints: s_per_iter SECONDS
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

/* cg.f's inner iterations per outer iteration (cgitmax). */
#define INNER_ITERATIONS 25

static int log2_of(int n)
{
  int l = 0;
  while ((1 << (l + 1)) <= n)
    l++;
  return l;
}

static void exchange(char *send, char *recv, int bytes, int peer)
{
  MPI_Sendrecv(send, bytes, MPI_CHAR, peer, 0, recv, bytes, MPI_CHAR, peer, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
}

int main(int argc, char **argv)
{
  MPI_Init(&argc, &argv);
  int me = 0;
  int ranks = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &me);
  MPI_Comm_size(MPI_COMM_WORLD, &ranks);
  if (argc != 4 || ranks < 2 || (ranks & (ranks - 1)) != 0) {
    if (me == 0)
      fprintf(stderr, "usage: nas_cg NA OUTER_ITERATIONS COMPUTE_US (on a power-of-two number of ranks >= 2)\n");
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  const long na = atol(argv[1]);
  const int outer = atoi(argv[2]);
  const double compute_us = atof(argv[3]);

  const int l2 = log2_of(ranks);
  const int npcols = 1 << ((l2 + 1) / 2);
  const int nprows = ranks / npcols;
  const long row_bytes = na / nprows * 8;
  const int transpose_bytes = (int)(na * 8 / ranks);
  const int row0 = me / npcols * npcols;
  const int col = me - row0;
  const int transpose = npcols == nprows ? (me % nprows) * nprows + me / nprows
                                         : 2 * ((me / 2 % nprows) * nprows + me / 2 / nprows) + me % 2;
  char *send = SMPI_SHARED_MALLOC((size_t)row_bytes + 8);
  char *recv = SMPI_SHARED_MALLOC((size_t)row_bytes + 8);

  MPI_Barrier(MPI_COMM_WORLD);
  const double start = MPI_Wtime();
  for (int it = 0; it < outer; it++) {
    /* The host's speed is 1 Gflop/s (the platform file), so 1 us is 1000 flops. */
    smpi_execute_flops(compute_us * 1e3);
    for (int inner = 0; inner < INNER_ITERATIONS; inner++) {
      for (int i = 0; i < log2_of(npcols); i++)
        exchange(send, recv, (int)(row_bytes >> (i + 1)), row0 + (col ^ (1 << i)));
      if (npcols > 1)
        exchange(send, recv, transpose_bytes, transpose);
      for (int dot = 0; dot < 2; dot++)
        for (int i = 0; i < log2_of(npcols); i++)
          exchange(send, recv, 8, row0 + (col ^ (1 << i)));
    }
  }
  const double mine_s = (MPI_Wtime() - start) / outer;
  double slowest_s = 0.0;
  MPI_Reduce(&mine_s, &slowest_s, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
  if (me == 0)
    printf("s_per_iter %.9f\n", slowest_s);
  SMPI_SHARED_FREE(recv);
  SMPI_SHARED_FREE(send);
  MPI_Finalize();
  return 0;
}
