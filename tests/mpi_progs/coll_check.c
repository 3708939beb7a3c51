/* liblonghaul_coll against MPI's built-in collectives: the same buffers for every case.
 *
 *   coll_check SEED CASES
 *   coll_check wan-bcast BYTES lh|mpi
 *
 * Each case draws (from SEED, identically on every rank) a cluster map - block, cyclic or
 * random - a datatype, an op, a count and a root, runs one LH_ collective and its MPI
 * counterpart on the same input, and compares the bytes. Includes a non-commutative user op
 * (composition of affine maps, exact in integers) and the Fortran entry points. Prints
 * "OK <CASES> cases on <N> ranks" or the first difference (exit 1).
 * The wan-bcast form broadcasts BYTES from rank 0 once with LH_Bcast (clusters discovered, as in
 * `longhaul emu mpi run`) or MPI_Bcast, so a caller can count the bytes that crossed the link.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "longhaul_coll.h"

static uint64_t rng;
static uint64_t next(void) { rng ^= rng << 13; rng ^= rng >> 7; rng ^= rng << 17; return rng; }
static int pick(int n) { return (int)(next() % (uint64_t)n); }

enum { AFFINE_MOD = 1000003 };
/* (a, b) stands for x -> a x + b; inout = in o inout (in comes from lower ranks). */
static void affine(void *in, void *inout, int *len, MPI_Datatype *type) {
    (void)type;
    long *p = in, *q = inout;
    for (int i = 0; i < *len; i++, p += 2, q += 2) {
        long a = p[0] * q[0] % AFFINE_MOD, b = (p[0] * q[1] + p[1]) % AFFINE_MOD;
        q[0] = a; q[1] = b;
    }
}

static int rank, size;

static void fail(int c, const char *what, const char *detail) {
    fprintf(stderr, "case %d (%s) differs on rank %d: %s\n", c, what, rank, detail);
    MPI_Abort(MPI_COMM_WORLD, 1);
}

static void fill(void *buf, size_t bytes, int salt, int kind) {
    unsigned char *p = buf;
    if (kind == 1) {   /* doubles: small integers keep sums exact in any order */
        double *d = buf;
        for (size_t i = 0; i < bytes / sizeof(double); i++) d[i] = (double)((i * 7 + salt * 13) % 97) - 40.0;
    } else if (kind == 2) {   /* affine pairs */
        long *l = buf;
        for (size_t i = 0; i < bytes / sizeof(long); i++) l[i] = (long)((i * 31 + salt * 17) % 997) + 1;
    } else {
        for (size_t i = 0; i < bytes; i++) p[i] = (unsigned char)((i * 11 + salt * 29) % 7 + 1);
    }
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (argc > 3 && !strcmp(argv[1], "wan-bcast")) {
        int bytes = atoi(argv[2]), ncl, mine;
        char *buf = calloc(1, bytes);
        LH_Comm_clusters(MPI_COMM_WORLD, &ncl, &mine);
        if (!strcmp(argv[3], "lh")) LH_Bcast(buf, bytes, MPI_BYTE, 0, MPI_COMM_WORLD);
        else MPI_Bcast(buf, bytes, MPI_BYTE, 0, MPI_COMM_WORLD);
        MPI_Barrier(MPI_COMM_WORLD);
        if (rank == 0) printf("wan-bcast %d bytes with %s over %d clusters\n", bytes, argv[3], ncl);
        free(buf);
        MPI_Finalize();
        return 0;
    }
    rng = 0x9E3779B97F4A7C15ull ^ (uint64_t)atoll(argc > 1 ? argv[1] : "1");
    int cases = argc > 2 ? atoi(argv[2]) : 20;
    MPI_Datatype pair;
    MPI_Type_contiguous(2, MPI_LONG, &pair);
    MPI_Type_commit(&pair);
    MPI_Op affine_op;
    MPI_Op_create(affine, 0, &affine_op);
    static const int counts[] = {1, 3, 100, 4096, 70000};
    const char *names[] = {"bcast", "reduce", "allreduce", "gather", "scatter", "alltoall", "fortran"};
    int *map = malloc(size * sizeof(int));
    for (int c = 0; c < cases; c++) {
        int layout = pick(3), k = 2 + pick(size > 2 ? 2 : 1);
        for (int r = 0; r < size; r++) map[r] = layout == 0 ? r * k / size : layout == 1 ? r % k : pick(k);
        MPI_Comm comm;   /* a fresh communicator per case: each caches its own cluster split */
        MPI_Comm_dup(MPI_COMM_WORLD, &comm);
        LH_Comm_set_clusters(comm, map);
        int coll = c % 7, count = counts[pick(5)], root = pick(size);
        int kind = pick(3);   /* 0: int, 1: double, 2: affine pairs (reductions only, non-commutative) */
        if (coll != 1 && coll != 2 && kind == 2) kind = 0;
        MPI_Datatype type = kind == 0 ? MPI_INT : kind == 1 ? MPI_DOUBLE : pair;
        MPI_Op op = kind == 2 ? affine_op : (pick(2) ? MPI_SUM : MPI_MAX);
        int per = coll >= 3 && coll <= 5 ? size : 1;   /* blocks per buffer on the many-block side */
        MPI_Aint lb, ext;
        MPI_Type_get_extent(type, &lb, &ext);
        size_t one = (size_t)count * ext, many = one * per;
        unsigned char *in = malloc(many), *a = calloc(1, many), *b = calloc(1, many);
        fill(in, many, rank + c, kind);
        switch (coll) {
        case 0: case 6:
            memcpy(a, in, one); memcpy(b, in, one);
            if (rank != root) { memset(a, 0, one); memset(b, 0, one); }
            if (coll == 0) {
                LH_Bcast(a, count, type, root, comm);
            } else {
                MPI_Fint fc = count, ft = MPI_Type_c2f(type), fr = root, fm = MPI_Comm_c2f(comm), err;
                lh_bcast_(a, &fc, &ft, &fr, &fm, &err);
                if (err != MPI_SUCCESS) fail(c, names[coll], "lh_bcast_ returned an error");
            }
            MPI_Bcast(b, count, type, root, comm);
            break;
        case 1:
            LH_Reduce(in, a, count, type, op, root, comm);
            MPI_Reduce(in, b, count, type, op, root, comm);
            if (rank != root) memset(a, 0, one), memset(b, 0, one);
            break;
        case 2:
            if (pick(2)) {   /* MPI_IN_PLACE */
                memcpy(a, in, one); memcpy(b, in, one);
                LH_Allreduce(MPI_IN_PLACE, a, count, type, op, comm);
                MPI_Allreduce(MPI_IN_PLACE, b, count, type, op, comm);
            } else {
                LH_Allreduce(in, a, count, type, op, comm);
                MPI_Allreduce(in, b, count, type, op, comm);
            }
            break;
        case 3:
            LH_Gather(in, count, type, a, count, type, root, comm);
            MPI_Gather(in, count, type, b, count, type, root, comm);
            if (rank != root) memset(a, 0, many), memset(b, 0, many);
            break;
        case 4:
            LH_Scatter(in, count, type, a, count, type, root, comm);
            MPI_Scatter(in, count, type, b, count, type, root, comm);
            break;
        case 5:
            LH_Alltoall(in, count, type, a, count, type, comm);
            MPI_Alltoall(in, count, type, b, count, type, comm);
            break;
        }
        if (memcmp(a, b, many)) {
            char detail[160];
            snprintf(detail, sizeof detail, "layout %d, %d clusters, count %d, kind %d, root %d", layout, k, count, kind, root);
            fail(c, names[coll], detail);
        }
        free(in); free(a); free(b);
        MPI_Comm_free(&comm);
    }
    /* Discovery without a map: LONGHAUL_CLUSTER (set by `longhaul emu`) or the host name. */
    int ncl, mine;
    LH_Comm_clusters(MPI_COMM_WORLD, &ncl, &mine);
    if (rank == 0) printf("OK %d cases on %d ranks (discovered %d cluster(s))\n", cases, size, ncl);
    MPI_Op_free(&affine_op);
    MPI_Type_free(&pair);
    free(map);
    MPI_Finalize();
    return 0;
}
