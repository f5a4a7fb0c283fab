/* Collective operations as AI training runs them over RDMA, in the manner of NCCL's ring
 * algorithms, as a verbs program (rdmasim_main, rdmasim/oob.h): every rank runs one
 * instance. Prints (rank 0) nccl-tests' columns for each size:
 *
 *   size count type redop root time algbw busbw #wrong
 *
 * usage: collectives OP [-b MIN_BYTES] [-e MAX_BYTES] [-f FACTOR] [-c SLICE_BYTES] [-n ITERS]
 *   OP: all_reduce | all_gather | reduce_scatter | all_to_all; floats, sum.
 *
 * Ring (all_reduce, all_gather, reduce_scatter): rank r WRITEs (with immediate) to rank r+1
 * only. The buffer of S bytes is N chunks; a chunk moves in slices of SLICE bytes, each slice
 * forwarded as soon as it arrived (and, while reducing, was added), so the ring streams.
 * All-reduce = reduce-scatter (N-1 steps, into a staging slot per step, then added) followed
 * by all-gather (N-1 steps, written in place). all_to_all: rank r WRITEs chunk p of its input
 * to rank p's output at chunk r, to every p at once (a QP per pair).
 *
 * Time: from a barrier to the rank's last completion, the largest over ranks; algbw = S /
 * time; busbw as nccl-tests defines it (doc/PERFORMANCE.md): all_reduce algbw x 2(N-1)/N,
 * the others algbw x (N-1)/N. #wrong: elements differing from the exact result (data are
 * small integers in floats, so sums are exact).
 */
#include <arpa/inet.h>
#include <infiniband/verbs.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rdmasim/connect.h"
#include "rdmasim/oob.h"

enum op { ALL_REDUCE, ALL_GATHER, REDUCE_SCATTER, ALL_TO_ALL };
static const char *op_names[] = {"all_reduce", "all_gather", "reduce_scatter", "all_to_all"};

struct end { uint32_t qpn, rkey; uint64_t data, stage; struct rdmasim_addr at; };

struct ctx {
  enum op op;
  int rank, n;
  struct ibv_context *dev;
  struct ibv_pd *pd;
  struct ibv_cq *cq;
  struct ibv_mr *mr;
  struct ibv_qp **qp;        /* ring: qp[0] to the successor, qp[1] from the predecessor; mesh: qp[p] */
  struct end *peer;          /* per QP: the far end */
  float *data, *stage;       /* data: S bytes (in/out); stage: N-1 chunks (reduce-scatter) */
  uint8_t *mem;
  size_t max_bytes, slice;
  int depth;
  /* sends waiting for room in the send queue, (step, slice) */
  int *pend_step, *pend_slice, pend_head, pend_tail, outstanding;
};

static size_t chunk_of(const struct ctx *c, size_t bytes) { return bytes / (size_t)c->n; }
static int mod(int a, int n) { return ((a % n) + n) % n; }

static float init_value(int rank, size_t i) { return (float)((rank + 1) + (int)(i % 7)); }

/* Element i of the result on this rank after the op (in a buffer of `count` floats). */
static float expected(const struct ctx *c, size_t i, size_t count) {
  const size_t per = count / (size_t)c->n;
  switch (c->op) {
    case ALL_REDUCE: return (float)(c->n * (c->n + 1) / 2 + c->n * (int)(i % 7));
    case ALL_GATHER: return init_value((int)(i / per), i);   /* chunk q comes from rank q */
    case REDUCE_SCATTER: return (float)(c->n * (c->n + 1) / 2 + c->n * (int)(i % 7));
    case ALL_TO_ALL: return init_value((int)(i / per), c->rank * per + i % per);
  }
  return 0;
}

static int post_write(struct ctx *c, int qi, uint64_t local_off, uint64_t remote_addr, uint32_t len, uint32_t imm) {
  struct ibv_sge s = {(uintptr_t)c->mem + local_off, len, c->mr->lkey};
  struct ibv_send_wr wr = {.wr_id = 0, .sg_list = &s, .num_sge = 1, .opcode = IBV_WR_RDMA_WRITE_WITH_IMM,
                           .send_flags = IBV_SEND_SIGNALED}, *bad;
  wr.imm_data = htonl(imm);
  wr.wr.rdma.remote_addr = remote_addr;
  wr.wr.rdma.rkey = c->peer[qi].rkey;
  if (ibv_post_send(c->qp[qi], &wr, &bad)) return 1;
  c->outstanding++;
  return 0;
}

static int post_recv(struct ctx *c, int qi) {
  struct ibv_recv_wr wr = {.wr_id = 1, .sg_list = NULL, .num_sge = 0}, *bad;
  return ibv_post_recv(c->qp[qi], &wr, &bad);
}

/* Ring step t (0 .. steps-1), slice j of a chunk, for an op on `bytes`: what to send where. */
static int ring_send(struct ctx *c, size_t bytes, int t, int j) {
  const size_t chunk = chunk_of(c, bytes), off = (size_t)j * c->slice;
  const uint32_t len = (uint32_t)(chunk - off < c->slice ? chunk - off : c->slice);
  const int r = c->rank, n = c->n;
  const int rs = c->op == ALL_GATHER ? 0 : n - 1;   /* reduce-scatter steps first */
  const uint64_t data = (uintptr_t)c->data - (uintptr_t)c->mem;
  if (t < rs) {  /* reduce-scatter: chunk r - t to the successor's staging slot t */
    const size_t q = (size_t)mod(r - t, n);
    return post_write(c, 0, data + q * chunk + off, c->peer[0].stage + (size_t)t * chunk + off, len,
                      (uint32_t)(t << 16 | j));
  }
  const int u = t - rs;  /* all-gather: chunk r + a - u into the successor's data */
  const size_t q = (size_t)mod(r + (rs ? 1 : 0) - u, n);
  return post_write(c, 0, data + q * chunk + off, c->peer[0].data + q * chunk + off, len, (uint32_t)(t << 16 | j));
}

static int flush_pending(struct ctx *c, size_t bytes) {
  while (c->pend_head < c->pend_tail && c->outstanding < c->depth) {
    if (ring_send(c, bytes, c->pend_step[c->pend_head], c->pend_slice[c->pend_head])) return 1;
    c->pend_head++;
  }
  return 0;
}

static void queue_send(struct ctx *c, int t, int j) {
  c->pend_step[c->pend_tail] = t;
  c->pend_slice[c->pend_tail] = j;
  c->pend_tail++;
}

/* One collective on `bytes` (a multiple of 4 N); returns its time on this rank in ns or 0 on error. */
static uint64_t run_once(struct ctx *c, size_t bytes) {
  const int n = c->n, r = c->rank;
  const size_t count = bytes / 4, chunk = chunk_of(c, bytes), per = count / (size_t)n;
  for (size_t i = 0; i < count; i++) c->data[i] = init_value(r, i);
  if (c->op == ALL_GATHER)   /* the input is this rank's chunk, in place */
    for (size_t i = 0; i < count; i++) c->data[i] = i / per == (size_t)r ? init_value(r, i) : 0;
  float *in = c->stage;      /* all_to_all: the input moves to the staging area */
  if (c->op == ALL_TO_ALL)
    for (size_t i = 0; i < count; i++) in[i] = init_value(r, i);
  const int slices = (int)((chunk + c->slice - 1) / c->slice);
  const int steps = c->op == ALL_REDUCE ? 2 * (n - 1) : n - 1;
  int expect_recv = c->op == ALL_TO_ALL ? n - 1 : steps * slices;
  int sends = c->op == ALL_TO_ALL ? n - 1 : steps * slices;
  if (c->op == ALL_TO_ALL) {   /* one WRITE with immediate from each peer, on its QP */
    for (int p = 0; p < n; p++)
      if (p != r && post_recv(c, p)) return 0;
  } else {
    for (int k = 0; k < expect_recv; k++)
      if (post_recv(c, 1)) return 0;
  }
  rdmasim_oob_barrier();
  const uint64_t t0 = rdmasim_time_ns();
  c->pend_head = c->pend_tail = 0;
  if (c->op == ALL_TO_ALL) {
    const uint64_t in_off = (uintptr_t)in - (uintptr_t)c->mem;
    for (int k = 1; k < n; k++) {   /* peers r+1, r+2, ...: no two ranks start on the same one */
      const int p = (r + k) % n;
      if (post_write(c, p, in_off + (size_t)p * chunk, c->peer[p].data + (size_t)r * chunk, (uint32_t)chunk,
                     (uint32_t)r))
        return 0;
    }
    memcpy((uint8_t *)c->data + (size_t)r * chunk, (uint8_t *)in + (size_t)r * chunk, chunk);
  } else {
    for (int j = 0; j < slices; j++) queue_send(c, 0, j);
    if (flush_pending(c, bytes)) return 0;
  }
  struct ibv_wc wc[16];
  while (expect_recv > 0 || sends > 0) {
    const int got = ibv_poll_cq(c->cq, 16, wc);
    if (got < 0) return 0;
    for (int k = 0; k < got; k++) {
      if (wc[k].status != IBV_WC_SUCCESS) {
        fprintf(stderr, "collectives: %s\n", ibv_wc_status_str(wc[k].status));
        return 0;
      }
      if (wc[k].opcode != IBV_WC_RECV_RDMA_WITH_IMM) {
        sends--;
        c->outstanding--;
        continue;
      }
      expect_recv--;
      if (c->op == ALL_TO_ALL) continue;
      const uint32_t imm = ntohl(wc[k].imm_data);
      const int t = (int)(imm >> 16), j = (int)(imm & 0xffff);
      if (c->op != ALL_GATHER && t < n - 1) {   /* reduce the slice that arrived in slot t */
        const size_t q = (size_t)mod(r - 1 - t, n), off = (size_t)j * c->slice;
        const size_t len = chunk - off < c->slice ? chunk - off : c->slice;
        float *dst = c->data + (q * chunk + off) / 4;
        const float *src = c->stage + ((size_t)t * chunk + off) / 4;
        for (size_t e = 0; e < len / 4; e++) dst[e] += src[e];
      }
      if (t + 1 < steps) queue_send(c, t + 1, j);
    }
    if (flush_pending(c, bytes)) return 0;
  }
  const uint64_t took = rdmasim_time_ns() - t0;
  return took ? took : 1;
}

/* Wrong elements of the result: all of it, or for a reduce-scatter the chunk the ring leaves
 * reduced on this rank (chunk r + 1; NCCL numbers its output chunks so that it is chunk r). */
static size_t check(const struct ctx *c, size_t bytes) {
  const size_t count = bytes / 4, per = count / (size_t)c->n;
  size_t wrong = 0, from = 0, to = count;
  if (c->op == REDUCE_SCATTER) {
    from = (size_t)mod(c->rank + 1, c->n) * per;
    to = from + per;
  }
  for (size_t i = from; i < to; i++)
    if (c->data[i] != expected(c, i, count)) wrong++;
  return wrong;
}

static int setup(struct ctx *c) {
  struct ibv_device **list = ibv_get_device_list(NULL);
  if (!list || !list[0]) return 1;
  c->dev = ibv_open_device(list[0]);
  ibv_free_device_list(list);
  if (!c->dev) return 1;
  struct rdmasim_addr me;
  if (rdmasim_port_addr(c->dev, &me)) return 2;
  const int n = c->n, nqp = c->op == ALL_TO_ALL ? n : 2;
  const size_t slices = (chunk_of(c, c->max_bytes) + c->slice - 1) / c->slice;
  c->depth = (int)(2 * (size_t)(n - 1) * slices + (size_t)n + 16);
  if (c->depth > 16384) c->depth = 16384;
  c->pend_step = calloc((size_t)c->depth * 2 + 2 * (size_t)n * slices, sizeof(int));
  c->pend_slice = calloc((size_t)c->depth * 2 + 2 * (size_t)n * slices, sizeof(int));
  /* data S, and a staging area of (N-1) chunks (ring) or S (all_to_all's input) */
  const size_t total = 2 * c->max_bytes;
  c->mem = calloc(1, total);
  c->data = (float *)c->mem;
  c->stage = (float *)(c->mem + c->max_bytes);
  c->pd = ibv_alloc_pd(c->dev);
  c->cq = ibv_create_cq(c->dev, 4 * c->depth + 64, NULL, NULL, 0);
  if (!c->mem || !c->pd || !c->cq || !c->pend_step || !c->pend_slice) return 3;
  c->mr = ibv_reg_mr(c->pd, c->mem, total, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
  if (!c->mr) return 3;
  c->qp = calloc((size_t)nqp, sizeof *c->qp);
  c->peer = calloc((size_t)nqp, sizeof *c->peer);
  char key[64];
  for (int i = 0; i < nqp; i++) {
    if (c->op == ALL_TO_ALL && i == c->rank) continue;
    struct ibv_qp_init_attr a = {.send_cq = c->cq, .recv_cq = c->cq, .qp_type = IBV_QPT_RC,
                                 .cap = {.max_send_wr = (uint32_t)c->depth, .max_recv_wr = (uint32_t)c->depth,
                                         .max_send_sge = 1, .max_recv_sge = 1}};
    if (!(c->qp[i] = ibv_create_qp(c->pd, &a))) return 4;
    /* ring: "to" is QP 0 (towards r+1), "from" QP 1 (from r-1); mesh: QP p towards p */
    struct end e = {c->qp[i]->qp_num, c->mr->rkey, (uintptr_t)c->data, (uintptr_t)c->stage, me};
    if (c->op == ALL_TO_ALL) snprintf(key, sizeof key, "coll.%d.%d", c->rank, i);
    else snprintf(key, sizeof key, "coll.%d.%s", c->rank, i == 0 ? "to" : "from");
    if (rdmasim_oob_put(key, &e, sizeof e)) return 5;
  }
  const struct rdmasim_rc_opts o = {0, IBV_ACCESS_REMOTE_WRITE, 0, 0};
  for (int i = 0; i < nqp; i++) {
    if (c->op == ALL_TO_ALL && i == c->rank) continue;
    if (c->op == ALL_TO_ALL) snprintf(key, sizeof key, "coll.%d.%d", i, c->rank);
    else if (i == 0) snprintf(key, sizeof key, "coll.%d.from", (c->rank + 1) % n);
    else snprintf(key, sizeof key, "coll.%d.to", (c->rank + n - 1) % n);
    if (rdmasim_oob_get(key, &c->peer[i], sizeof c->peer[i])) return 6;
    if (rdmasim_rc_connect(c->qp[i], c->peer[i].qpn, &c->peer[i].at, &o)) return 7;
  }
  return 0;
}

int rdmasim_main(int argc, char **argv) {
  struct ctx c = {0};
  c.rank = rdmasim_rank();
  c.n = rdmasim_size();
  size_t minb = 1 << 20, maxb = 1 << 20, factor = 2, slice = 262144;
  int iters = 1, opi = -1;
  for (int i = 0; i < 4; i++)
    if (argc > 1 && !strcmp(argv[1], op_names[i])) opi = i;
  for (int i = 2; i + 1 < argc; i += 2) {
    const unsigned long long v = strtoull(argv[i + 1], NULL, 10);
    if (!strcmp(argv[i], "-b")) minb = v;
    else if (!strcmp(argv[i], "-e")) maxb = v;
    else if (!strcmp(argv[i], "-f")) factor = v;
    else if (!strcmp(argv[i], "-c")) slice = v;
    else if (!strcmp(argv[i], "-n")) iters = (int)v;
    else opi = -1;
  }
  if (opi < 0 || (argc - 2) % 2 || c.n < 2 || minb < (size_t)(4 * c.n) || maxb < minb || factor < 2 ||
      slice < 4 || slice % 4 || iters < 1 || minb % (size_t)(4 * c.n)) {
    fprintf(stderr, "usage: collectives all_reduce|all_gather|reduce_scatter|all_to_all [-b MIN] [-e MAX] "
                    "[-f FACTOR] [-c SLICE] [-n ITERS]: sizes multiples of 4 x ranks (%d), at least 2 ranks, "
                    "SLICE a multiple of 4\n", c.n);
    return 2;
  }
  c.op = (enum op)opi;
  c.max_bytes = maxb;
  c.slice = slice;
  const int step = setup(&c);
  if (step) {
    fprintf(stderr, "collectives: set-up failed at step %d\n", step);
    return 10 + step;
  }
  if (c.rank == 0) {
    printf("# %s, %d ranks, slices of %zu B, %d iteration(s)\n", op_names[c.op], c.n, c.slice, iters);
    printf("#%11s %12s %6s %6s %6s %9s %7s %7s %6s\n", "size", "count", "type", "redop", "root", "time",
           "algbw", "busbw", "#wrong");
    printf("#%11s %12s %6s %6s %6s %9s %7s %7s %6s\n", "(B)", "(elements)", "", "", "", "(us)", "(GB/s)",
           "(GB/s)", "");
  }
  int bad = 0;
  const double bus = c.op == ALL_REDUCE ? 2.0 * (c.n - 1) / c.n : (double)(c.n - 1) / c.n;
  for (size_t bytes = minb; bytes <= maxb; bytes *= factor) {
    if (bytes % (size_t)(4 * c.n)) break;
    uint64_t total = 0;
    size_t wrong = 0;
    for (int it = 0; it < iters; it++) {
      const uint64_t ns = run_once(&c, bytes);
      if (!ns) return 3;
      total += ns;
      wrong += check(&c, bytes);
    }
    /* The slowest rank's mean time, and the wrong elements of all ranks. */
    char key[64];
    uint64_t mine[2] = {total, wrong}, theirs[2];
    snprintf(key, sizeof key, "coll.result.%zu.%d", bytes, c.rank);
    rdmasim_oob_put(key, mine, sizeof mine);
    if (c.rank == 0) {
      uint64_t worst = 0, all_wrong = 0;
      for (int p = 0; p < c.n; p++) {
        snprintf(key, sizeof key, "coll.result.%zu.%d", bytes, p);
        if (rdmasim_oob_get(key, theirs, sizeof theirs)) return 4;
        if (theirs[0] > worst) worst = theirs[0];
        all_wrong += theirs[1];
      }
      const double us = (double)worst / iters / 1000.0, algbw = (double)bytes / (us * 1000.0);
      printf("%12zu %12zu %6s %6s %6d %9.2f %7.2f %7.2f %6llu\n", bytes, bytes / 4, "float",
             c.op == ALL_GATHER || c.op == ALL_TO_ALL ? "none" : "sum", -1, us, algbw, algbw * bus,
             (unsigned long long)all_wrong);
      bad += all_wrong != 0;
    }
    if (bytes > maxb / factor) break;
  }
  rdmasim_oob_barrier();   /* every rank's QPs stay until all are done */
  return bad ? 1 : 0;
}
