/* Ping-pong in C for bench/emu_mpi_bench.py: the same measurement as
 * python/longhaul/emu/osu_mpi.py latency (OSU osu_latency: half the round trip, warm-up left
 * out), so the difference between the two is what mpi4py adds per call.
 * Usage: emu_mpi_pingpong SIZE ITERATIONS WARMUP  (ranks 0 and size/2 talk; others wait) */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, nranks;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nranks);
    if (argc != 4) {
        if (rank == 0) fprintf(stderr, "usage: %s SIZE ITERATIONS WARMUP\n", argv[0]);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    int size = atoi(argv[1]), iters = atoi(argv[2]), warmup = atoi(argv[3]);
    int peer = rank == 0 ? nranks / 2 : 0;  /* block placement: rank nranks/2 is B0 */
    char *buf = calloc(size > 0 ? size : 1, 1);
    double t0 = 0.0;
    if (rank == 0 || rank == nranks / 2) {
        for (int i = 0; i < warmup + iters; i++) {
            if (i == warmup) t0 = MPI_Wtime();
            if (rank == 0) {
                MPI_Send(buf, size, MPI_CHAR, peer, 1, MPI_COMM_WORLD);
                MPI_Recv(buf, size, MPI_CHAR, peer, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            } else {
                MPI_Recv(buf, size, MPI_CHAR, peer, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                MPI_Send(buf, size, MPI_CHAR, peer, 1, MPI_COMM_WORLD);
            }
        }
    }
    if (rank == 0) {
        printf("# OSU MPI Latency Test\n# longhaul C ping-pong\n# Size          Latency (us)\n");
        printf("%-10d %17.2f\n", size, (MPI_Wtime() - t0) * 1e6 / (2.0 * iters));
    }
    free(buf);
    MPI_Finalize();
    return 0;
}
