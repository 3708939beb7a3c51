/* liblonghaul_coll: two-level (WAN-aware) collectives; see longhaul_coll.h for the contract.
 *
 * Shape of every algorithm: ranks of one cluster talk over `local` (a communicator of the
 * cluster, in rank order, leader = local rank 0); leaders talk over `wan` (one rank per cluster,
 * wan rank = cluster index, because a cluster's index is the order of its first rank). Data
 * bound for another cluster is aggregated by the leaders so it crosses the long-haul link once.
 */
#include "longhaul_coll.h"

#include <stdlib.h>
#include <string.h>

enum { TAG_MOVE = 7101, TAG_WAN = 7102 };

typedef struct {
    int size, rank;
    int nclusters, my_cluster;
    int *cluster;     /* cluster index of each rank */
    int *first;       /* members of cluster c are members[first[c] .. first[c+1]) */
    int *members;     /* global ranks grouped by cluster, rank order inside a cluster */
    int *pos;         /* pos[g]: index of rank g inside its cluster */
    int contiguous;   /* every cluster holds consecutive ranks (keeps non-commutative order) */
    MPI_Comm local, wan;
} hier_t;

static int keyval = MPI_KEYVAL_INVALID;

static int hier_delete(MPI_Comm comm, int key, void *attr, void *extra) {
    (void)comm; (void)key; (void)extra;
    hier_t *h = attr;
    MPI_Comm_free(&h->local);
    if (h->wan != MPI_COMM_NULL) MPI_Comm_free(&h->wan);
    free(h->cluster); free(h->first); free(h->members); free(h->pos); free(h);
    return MPI_SUCCESS;
}

static int leader(const hier_t *h, int c) { return h->members[h->first[c]]; }
static int members_of(const hier_t *h, int c) { return h->first[c + 1] - h->first[c]; }

/* Builds the split from one id per rank (any values; indices by order of first appearance). */
static int hier_build(MPI_Comm comm, const int *ids, hier_t **out) {
    hier_t *h = calloc(1, sizeof *h);
    if (!h) return MPI_ERR_NO_MEM;
    MPI_Comm_size(comm, &h->size);
    MPI_Comm_rank(comm, &h->rank);
    int n = h->size;
    h->cluster = malloc(n * sizeof(int));
    h->first = calloc(n + 1, sizeof(int));
    h->members = malloc(n * sizeof(int));
    h->pos = malloc(n * sizeof(int));
    int *seen = malloc(n * sizeof(int));
    if (!h->cluster || !h->first || !h->members || !h->pos || !seen) return MPI_ERR_NO_MEM;
    for (int r = 0; r < n; r++) {
        int c = 0;
        while (c < h->nclusters && seen[c] != ids[r]) c++;
        if (c == h->nclusters) seen[h->nclusters++] = ids[r];
        h->cluster[r] = c;
    }
    free(seen);
    for (int r = 0; r < n; r++) h->first[h->cluster[r] + 1]++;
    for (int c = 0; c < h->nclusters; c++) h->first[c + 1] += h->first[c];
    int *fill = calloc(h->nclusters, sizeof(int));
    if (!fill) return MPI_ERR_NO_MEM;
    h->contiguous = 1;
    for (int r = 0; r < n; r++) {
        int c = h->cluster[r];
        h->pos[r] = fill[c]++;
        h->members[h->first[c] + h->pos[r]] = r;
        if (r > 0 && c != h->cluster[r - 1] && h->pos[r] != 0) h->contiguous = 0;
    }
    free(fill);
    h->my_cluster = h->cluster[h->rank];
    int rc = MPI_Comm_split(comm, h->my_cluster, h->rank, &h->local);
    if (rc == MPI_SUCCESS)
        rc = MPI_Comm_split(comm, h->pos[h->rank] == 0 ? 0 : MPI_UNDEFINED, h->rank, &h->wan);
    *out = h;
    return rc;
}

static int attach(MPI_Comm comm, hier_t *h) {
    if (keyval == MPI_KEYVAL_INVALID) {
        int rc = MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, hier_delete, &keyval, NULL);
        if (rc != MPI_SUCCESS) return rc;
    }
    return MPI_Comm_set_attr(comm, keyval, h);
}

int LH_Comm_set_clusters(MPI_Comm comm, const int *cluster_of_rank) {
    hier_t *h;
    int rc = hier_build(comm, cluster_of_rank, &h);
    return rc != MPI_SUCCESS ? rc : attach(comm, h);
}

/* Discovery: LONGHAUL_CLUSTER, else the processor (host) name; agreed by an allgather. */
static int hier_get(MPI_Comm comm, hier_t **out) {
    int flag = 0;
    if (keyval != MPI_KEYVAL_INVALID) {
        MPI_Comm_get_attr(comm, keyval, out, &flag);
        if (flag) return MPI_SUCCESS;
    }
    char label[MPI_MAX_PROCESSOR_NAME] = {0};
    const char *env = getenv("LONGHAUL_CLUSTER");
    if (env && *env) {
        strncpy(label, env, sizeof label - 1);
    } else {
        int len;
        MPI_Get_processor_name(label, &len);
    }
    int n;
    MPI_Comm_size(comm, &n);
    char *all = malloc((size_t)n * MPI_MAX_PROCESSOR_NAME);
    int *ids = malloc(n * sizeof(int));
    if (!all || !ids) return MPI_ERR_NO_MEM;
    int rc = MPI_Allgather(label, MPI_MAX_PROCESSOR_NAME, MPI_CHAR, all, MPI_MAX_PROCESSOR_NAME, MPI_CHAR, comm);
    for (int r = 0; rc == MPI_SUCCESS && r < n; r++) {
        ids[r] = r;
        for (int q = 0; q < r; q++)
            if (!strcmp(all + (size_t)q * MPI_MAX_PROCESSOR_NAME, all + (size_t)r * MPI_MAX_PROCESSOR_NAME)) {
                ids[r] = ids[q];
                break;
            }
    }
    free(all);
    hier_t *h = NULL;
    if (rc == MPI_SUCCESS) rc = hier_build(comm, ids, &h);
    free(ids);
    if (rc == MPI_SUCCESS) rc = attach(comm, h);
    *out = h;
    return rc;
}

int LH_Comm_clusters(MPI_Comm comm, int *nclusters, int *my_cluster) {
    hier_t *h;
    int rc = hier_get(comm, &h);
    if (rc == MPI_SUCCESS) { *nclusters = h->nclusters; *my_cluster = h->my_cluster; }
    return rc;
}

/* ------------------------------------------------------------------ buffers of typed blocks */
/* A block = `count` elements of `type`; intermediate buffers hold n blocks back to back. */
typedef struct { MPI_Datatype blk; MPI_Aint ext; } block_t;

static block_t block(int count, MPI_Datatype type) {
    block_t b;
    MPI_Aint lb;
    MPI_Type_contiguous(count, type, &b.blk);
    MPI_Type_commit(&b.blk);
    MPI_Type_get_extent(b.blk, &lb, &b.ext);
    return b;
}

static void *alloc_blocks(int n, block_t b, void **mem) {
    MPI_Aint tlb, text;
    MPI_Type_get_true_extent(b.blk, &tlb, &text);
    size_t bytes = n > 0 ? (size_t)(n - 1) * (size_t)b.ext + (size_t)text : 1;
    *mem = malloc(bytes ? bytes : 1);
    return *mem ? (char *)*mem - tlb : NULL;
}

static char *at(void *base, int i, block_t b) { return (char *)base + (MPI_Aint)i * b.ext; }

/* Copies one block between buffers, converting between type maps of the same signature. */
static int copy_block(const void *src, block_t sb, void *dst, block_t db) {
    return MPI_Sendrecv(src, 1, sb.blk, 0, TAG_MOVE, dst, 1, db.blk, 0, TAG_MOVE, MPI_COMM_SELF, MPI_STATUS_IGNORE);
}

/* An MPI type selecting blocks idx[0..n) of a buffer, in that order (zero-copy send/recv). */
static MPI_Datatype picked(int n, const int *idx, block_t b) {
    MPI_Datatype t;
    MPI_Type_create_indexed_block(n, 1, idx, b.blk, &t);
    MPI_Type_commit(&t);
    return t;
}

/* ------------------------------------------------------------------ bcast */
/* A message above this crosses the WAN as pieces all posted at once, each below the eager
 * limits of common transports (Open MPI's TCP BTL: 64 KiB with the header), so no piece waits
 * for a rendezvous round trip over the long-haul link. Environment: LONGHAUL_WAN_CHUNK_BYTES. */
enum { WAN_CHUNK_BYTES = 32 * 1024, TAG_PIECE = 7105 };

static int wan_chunk_bytes(void) {
    const char *env = getenv("LONGHAUL_WAN_CHUNK_BYTES");
    long v = env ? strtol(env, NULL, 10) : 0;
    return v > 0 && v < (1L << 30) ? (int)v : WAN_CHUNK_BYTES;
}

/* Leaders: start moving buf from cluster rcl to every other leader; *reqs is malloc'ed. */
static int wan_bcast_start(hier_t *h, void *buf, int count, MPI_Datatype type, int rcl, MPI_Request **reqs, int *n) {
    int tsize;
    MPI_Aint lb, ext;
    MPI_Type_size(type, &tsize);
    MPI_Type_get_extent(type, &lb, &ext);
    int per = tsize > 0 ? wan_chunk_bytes() / tsize : count;
    if (per < 1) per = 1;
    int pieces = count > per ? (count + per - 1) / per : 1;
    int peers = h->my_cluster == rcl ? h->nclusters - 1 : 1;
    *reqs = malloc((size_t)pieces * peers * sizeof(MPI_Request));
    if (!*reqs) return MPI_ERR_NO_MEM;
    if (pieces == 1) { *n = 1; return MPI_Ibcast(buf, count, type, rcl, h->wan, *reqs); }
    *n = 0;
    for (int c = 0; c < h->nclusters; c++) {
        if (h->my_cluster == rcl ? c == rcl : c != h->my_cluster) continue;
        for (int i = 0; i < count; i += per) {
            char *at_i = (char *)buf + (MPI_Aint)i * ext;
            int k = count - i < per ? count - i : per, rc;
            if (h->my_cluster == rcl) rc = MPI_Isend(at_i, k, type, c, TAG_PIECE, h->wan, *reqs + (*n)++);
            else rc = MPI_Irecv(at_i, k, type, rcl, TAG_PIECE, h->wan, *reqs + (*n)++);
            if (rc != MPI_SUCCESS) return rc;
        }
    }
    return MPI_SUCCESS;
}

int LH_Bcast(void *buf, int count, MPI_Datatype type, int root, MPI_Comm comm) {
    hier_t *h;
    int rc = hier_get(comm, &h);
    if (rc != MPI_SUCCESS) return rc;
    if (h->nclusters == 1) return MPI_Bcast(buf, count, type, root, comm);
    int rcl = h->cluster[root], rl = leader(h, rcl);
    if (root != rl) {
        if (h->rank == root) rc = MPI_Send(buf, count, type, rl, TAG_MOVE, comm);
        if (h->rank == rl) rc = MPI_Recv(buf, count, type, root, TAG_MOVE, comm, MPI_STATUS_IGNORE);
    }
    if (h->wan != MPI_COMM_NULL) {
        /* The root's leader starts the WAN transfer and serves its own cluster meanwhile. */
        MPI_Request *reqs = NULL;
        int n = 0;
        rc = wan_bcast_start(h, buf, count, type, rcl, &reqs, &n);
        if (rc == MPI_SUCCESS && h->rank != rl) rc = MPI_Waitall(n, reqs, MPI_STATUSES_IGNORE);
        if (rc == MPI_SUCCESS) rc = MPI_Bcast(buf, count, type, 0, h->local);
        if (rc == MPI_SUCCESS && h->rank == rl) rc = MPI_Waitall(n, reqs, MPI_STATUSES_IGNORE);
        free(reqs);
        return rc;
    }
    return MPI_Bcast(buf, count, type, 0, h->local);
}

/* ------------------------------------------------------------------ reductions */
static int commutes(MPI_Op op) { int c = 1; MPI_Op_commutative(op, &c); return c; }

int LH_Reduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype type, MPI_Op op, int root,
              MPI_Comm comm) {
    hier_t *h;
    int rc = hier_get(comm, &h);
    if (rc != MPI_SUCCESS) return rc;
    if (h->nclusters == 1 || (!commutes(op) && !h->contiguous))
        return MPI_Reduce(sendbuf, recvbuf, count, type, op, root, comm);
    const void *sb = sendbuf == MPI_IN_PLACE ? recvbuf : sendbuf;   /* only the root may pass IN_PLACE */
    int rcl = h->cluster[root], rl = leader(h, rcl);
    block_t b = block(count, type);
    void *m1 = NULL, *m2 = NULL;
    void *part = h->wan != MPI_COMM_NULL ? alloc_blocks(1, b, &m1) : NULL;
    rc = MPI_Reduce(sb, part, count, type, op, 0, h->local);
    if (rc == MPI_SUCCESS && h->wan != MPI_COMM_NULL) {
        void *res = h->rank == root ? recvbuf : (h->rank == rl ? alloc_blocks(1, b, &m2) : NULL);
        rc = MPI_Reduce(part, res, count, type, op, rcl, h->wan);
        if (rc == MPI_SUCCESS && h->rank == rl && root != rl) rc = MPI_Send(res, count, type, root, TAG_MOVE, comm);
    }
    if (rc == MPI_SUCCESS && h->rank == root && root != rl)
        rc = MPI_Recv(recvbuf, count, type, rl, TAG_MOVE, comm, MPI_STATUS_IGNORE);
    free(m1); free(m2);
    MPI_Type_free(&b.blk);
    return rc;
}

int LH_Allreduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype type, MPI_Op op, MPI_Comm comm) {
    hier_t *h;
    int rc = hier_get(comm, &h);
    if (rc != MPI_SUCCESS) return rc;
    if (h->nclusters == 1 || (!commutes(op) && !h->contiguous))
        return MPI_Allreduce(sendbuf, recvbuf, count, type, op, comm);
    const void *sb = sendbuf == MPI_IN_PLACE ? recvbuf : sendbuf;
    block_t b = block(count, type);
    void *mem = NULL;
    void *part = h->wan != MPI_COMM_NULL ? alloc_blocks(1, b, &mem) : NULL;
    rc = MPI_Reduce(sb, part, count, type, op, 0, h->local);
    if (rc == MPI_SUCCESS && h->wan != MPI_COMM_NULL) rc = MPI_Allreduce(part, recvbuf, count, type, op, h->wan);
    if (rc == MPI_SUCCESS) rc = MPI_Bcast(recvbuf, count, type, 0, h->local);
    free(mem);
    MPI_Type_free(&b.blk);
    return rc;
}

/* ------------------------------------------------------------------ gather / scatter */
/* Both assume, as most codes do, the same sendtype (gather) / recvtype (scatter) on every rank;
 * MPI_IN_PLACE falls back to the flat call. */
int LH_Gather(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf, int recvcount,
              MPI_Datatype recvtype, int root, MPI_Comm comm) {
    hier_t *h;
    int rc = hier_get(comm, &h);
    if (rc != MPI_SUCCESS) return rc;
    if (h->nclusters == 1 || sendbuf == MPI_IN_PLACE || recvbuf == MPI_IN_PLACE)
        return MPI_Gather(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, root, comm);
    int rcl = h->cluster[root], rl = leader(h, rcl), me = h->my_cluster, n = members_of(h, me);
    block_t sb = block(sendcount, sendtype);
    void *mine_mem = NULL, *all_mem = NULL;
    /* 1. each leader gathers its cluster's blocks (local rank order) */
    void *mine = h->wan != MPI_COMM_NULL ? alloc_blocks(n, sb, &mine_mem) : NULL;
    rc = MPI_Gather(sendbuf, sendcount, sendtype, mine, sendcount, sendtype, 0, h->local);
    /* 2. one WAN message per cluster to the root's leader, landing at the members' rank slots */
    if (rc == MPI_SUCCESS && h->wan != MPI_COMM_NULL) {
        if (h->rank != rl) {
            rc = MPI_Send(mine, n, sb.blk, rcl, TAG_WAN, h->wan);
        } else {
            block_t db = h->rank == root ? block(recvcount, recvtype) : sb;
            void *all = h->rank == root ? recvbuf : alloc_blocks(h->size, sb, &all_mem);
            for (int c = 0; rc == MPI_SUCCESS && c < h->nclusters; c++) {
                MPI_Datatype slots = picked(members_of(h, c), h->members + h->first[c], db);
                if (c == me)
                    rc = MPI_Sendrecv(mine, n, sb.blk, 0, TAG_MOVE, all, 1, slots, 0, TAG_MOVE, MPI_COMM_SELF,
                                      MPI_STATUS_IGNORE);
                else
                    rc = MPI_Recv(all, 1, slots, c, TAG_WAN, h->wan, MPI_STATUS_IGNORE);
                MPI_Type_free(&slots);
            }
            if (rc == MPI_SUCCESS && root != rl) rc = MPI_Send(all, h->size, sb.blk, root, TAG_MOVE, comm);
            if (h->rank == root) MPI_Type_free(&db.blk);
        }
    }
    if (rc == MPI_SUCCESS && h->rank == root && root != rl)
        rc = MPI_Recv(recvbuf, h->size * recvcount, recvtype, rl, TAG_MOVE, comm, MPI_STATUS_IGNORE);
    free(mine_mem); free(all_mem);
    MPI_Type_free(&sb.blk);
    return rc;
}

int LH_Scatter(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf, int recvcount,
               MPI_Datatype recvtype, int root, MPI_Comm comm) {
    hier_t *h;
    int rc = hier_get(comm, &h);
    if (rc != MPI_SUCCESS) return rc;
    if (h->nclusters == 1 || sendbuf == MPI_IN_PLACE || recvbuf == MPI_IN_PLACE)
        return MPI_Scatter(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, root, comm);
    int rcl = h->cluster[root], rl = leader(h, rcl), me = h->my_cluster, n = members_of(h, me);
    block_t rb = block(recvcount, recvtype);
    void *all_mem = NULL, *mine_mem = NULL;
    void *mine = h->wan != MPI_COMM_NULL ? alloc_blocks(n, rb, &mine_mem) : NULL;
    if (h->rank == root && root != rl) rc = MPI_Send(sendbuf, h->size * sendcount, sendtype, rl, TAG_MOVE, comm);
    if (rc == MPI_SUCCESS && h->wan != MPI_COMM_NULL) {
        if (h->rank != rl) {
            rc = MPI_Recv(mine, n, rb.blk, rcl, TAG_WAN, h->wan, MPI_STATUS_IGNORE);
        } else {
            /* the root's leader holds every block in rank order; each cluster gets its own in one message */
            block_t src = h->rank == root ? block(sendcount, sendtype) : rb;
            const void *all = sendbuf;
            if (h->rank != root) {
                all = alloc_blocks(h->size, rb, &all_mem);
                rc = MPI_Recv((void *)all, h->size, rb.blk, root, TAG_MOVE, comm, MPI_STATUS_IGNORE);
            }
            for (int c = 0; rc == MPI_SUCCESS && c < h->nclusters; c++) {
                MPI_Datatype slots = picked(members_of(h, c), h->members + h->first[c], src);
                if (c == me)
                    rc = MPI_Sendrecv(all, 1, slots, 0, TAG_MOVE, mine, n, rb.blk, 0, TAG_MOVE, MPI_COMM_SELF,
                                      MPI_STATUS_IGNORE);
                else
                    rc = MPI_Send(all, 1, slots, c, TAG_WAN, h->wan);
                MPI_Type_free(&slots);
            }
            if (h->rank == root) MPI_Type_free(&src.blk);
        }
    }
    if (rc == MPI_SUCCESS) rc = MPI_Scatter(mine, recvcount, recvtype, recvbuf, recvcount, recvtype, 0, h->local);
    free(all_mem); free(mine_mem);
    MPI_Type_free(&rb.blk);
    return rc;
}

/* ------------------------------------------------------------------ alltoall */
/* Leaders gather their members' whole send buffers, send each other leader one message with
 * every block bound for its cluster, and hand each member its receive buffer. */
int LH_Alltoall(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf, int recvcount,
                MPI_Datatype recvtype, MPI_Comm comm) {
    hier_t *h;
    int rc = hier_get(comm, &h);
    if (rc != MPI_SUCCESS) return rc;
    if (h->nclusters == 1 || sendbuf == MPI_IN_PLACE)
        return MPI_Alltoall(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm);
    int P = h->size, me = h->my_cluster, n = members_of(h, me), K = h->nclusters;
    block_t sb = block(sendcount, sendtype), rb = block(recvcount, recvtype);
    void *out_mem = NULL, *in_mem = NULL, *res_mem = NULL;
    int is_leader = h->wan != MPI_COMM_NULL;
    /* out: n members x P blocks (member i's send buffer); res: n members x P blocks to deliver */
    void *out = is_leader ? alloc_blocks(n * P, sb, &out_mem) : NULL;
    void *res = is_leader ? alloc_blocks(n * P, rb, &res_mem) : NULL;
    rc = MPI_Gather(sendbuf, P * sendcount, sendtype, out, P * sendcount, sendtype, 0, h->local);
    if (rc == MPI_SUCCESS && is_leader) {
        int maxn = 0;
        for (int c = 0; c < K; c++) if (members_of(h, c) > maxn) maxn = members_of(h, c);
        void *in = alloc_blocks(maxn * n, rb, &in_mem);
        int *idx = malloc((size_t)(maxn > n ? maxn : n) * P * sizeof(int));
        if (!in || !idx) rc = MPI_ERR_NO_MEM;
        /* cluster c's blocks from member i of src to member j of dst sit at out[i*P + members_c[j]] */
        for (int step = 0; rc == MPI_SUCCESS && step < K; step++) {
            int to = (me + step) % K, from = (me - step + K) % K;
            int nt = members_of(h, to), nf = members_of(h, from);
            for (int i = 0; i < n; i++)
                for (int j = 0; j < nt; j++) idx[i * nt + j] = i * P + h->members[h->first[to] + j];
            MPI_Datatype pick = picked(n * nt, idx, sb);
            /* what `from` sends us arrives as nf x n blocks (sender member i, our member j) */
            rc = MPI_Sendrecv(out, 1, pick, to, TAG_WAN, in, nf * n, rb.blk, from, TAG_WAN, h->wan,
                              MPI_STATUS_IGNORE);
            MPI_Type_free(&pick);
            for (int i = 0; rc == MPI_SUCCESS && i < nf; i++)
                for (int j = 0; rc == MPI_SUCCESS && j < n; j++)
                    rc = copy_block(at(in, i * n + j, rb), rb, at(res, j * P + h->members[h->first[from] + i], rb), rb);
        }
        free(idx);
    }
    if (rc == MPI_SUCCESS)
        rc = MPI_Scatter(res, P * recvcount, recvtype, recvbuf, P * recvcount, recvtype, 0, h->local);
    free(out_mem); free(in_mem); free(res_mem);
    MPI_Type_free(&sb.blk);
    MPI_Type_free(&rb.blk);
    return rc;
}

/* ------------------------------------------------------------------ Fortran */
void lh_bcast_(void *buf, MPI_Fint *count, MPI_Fint *type, MPI_Fint *root, MPI_Fint *comm, MPI_Fint *ierr) {
    *ierr = LH_Bcast(buf, *count, MPI_Type_f2c(*type), *root, MPI_Comm_f2c(*comm));
}

void lh_allreduce_(void *sendbuf, void *recvbuf, MPI_Fint *count, MPI_Fint *type, MPI_Fint *op, MPI_Fint *comm,
                   MPI_Fint *ierr) {
    *ierr = LH_Allreduce(sendbuf, recvbuf, *count, MPI_Type_f2c(*type), MPI_Op_f2c(*op), MPI_Comm_f2c(*comm));
}
