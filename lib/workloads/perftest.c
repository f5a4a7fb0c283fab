/* perftest's bandwidth and latency tests as a verbs program in simulated time
 * (rdmasim_main, rdmasim/oob.h): two ranks, rank 0 the client (it issues the operations and
 * prints), rank 1 the server. Prints perftest 4.5's columns for each message size:
 *
 *   bw:  #bytes #iterations BW peak[MB/sec] BW average[MB/sec] MsgRate[Mpps]
 *   lat: #bytes #iterations t_min[usec] t_max[usec] t_typical[usec] t_avg[usec]
 *        t_stdev[usec] 99% percentile[usec] 99.9% percentile[usec]
 *
 * usage: perftest VERB MODE [-s BYTES | -a] [-n ITERS] [-t TX_DEPTH] [-p SPIN_NS]
 *   VERB: write | read | send | atomic (fetch-and-add, 8 bytes); MODE: bw | lat
 *   -a: sizes 2, 4, ... 8388608 (perftest's -a); atomics are 8 bytes whatever is asked
 *   -n: iterations (perftest's defaults: 5000 for bw, 1000 for lat), at most 1000000;
 *       bw's peak is searched up to 20000 (past it 0.00, as perftest's -N)
 *   -t: outstanding operations in bw mode (perftest's default 128; 1 in lat mode)
 *   -p: the cost of one look at a polled memory location (write lat), default 50 ns
 *
 * As perftest computes them (perftest_parameters.c, print_report_bw / print_report_lat):
 * - bw: every operation is signalled; tposted[i] is the time of its post, tcompleted[i] of
 *   the poll that returned its completion. BW average = size x iterations / (tcompleted[last]
 *   - tposted[0]); BW peak = size / min over i <= j of (tcompleted[j] - tposted[i]) /
 *   (j - i + 1); MsgRate = iterations / the same span. MB = 2^20 bytes, as perftest's MB/sec.
 *   SEND bw: the server keeps receives posted (RNR retries cover a late one).
 * - lat: write and send are a ping-pong (the client's sample is half the round trip, as
 *   perftest's); write's server and client see the peer's data by polling the last byte of
 *   their buffer (each look costs SPIN_NS of CPU time, charged with rdmasim_compute), send's
 *   by polling the receive CQ. read and atomic: each sample is one operation's post to its
 *   polled completion. t_typical is the median; a p-percentile is the sorted sample at index
 *   ceil(p x n) - 1.
 * Times are virtual (rdmasim_time_ns): the numbers are the simulated fabric's and NICs'.
 */
#include <infiniband/verbs.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rdmasim/connect.h"
#include "rdmasim/oob.h"

enum verb { WRITE, READ, SEND, ATOMIC };
static const char *verb_names[] = {"write", "read", "send", "atomic"};

struct end { uint32_t qpn, rkey; uint64_t addr; struct rdmasim_addr at; };

struct pt {
  enum verb verb;
  int bw, rank, iters, depth;
  uint64_t spin_ns;
  size_t max_size;
  struct ibv_context *dev;
  struct ibv_pd *pd;
  struct ibv_cq *cq;
  struct ibv_qp *qp;
  struct ibv_mr *mr;
  uint8_t *buf;              /* [0, max_size): what the peer writes or reads; then the send side */
  struct end peer;
  uint64_t *tposted, *tcompleted;
  int early_recvs;           /* SEND lat server: receives completed ahead of their turn */
  int recv_posted;           /* SEND lat: the standing receive is posted */
};

static int fail(const char *what) {
  fprintf(stderr, "perftest: %s failed\n", what);
  return 1;
}

static int usage(void) {
  fprintf(stderr, "usage: perftest write|read|send|atomic bw|lat [-s BYTES | -a] [-n ITERS] "
                  "[-t TX_DEPTH] [-p SPIN_NS]\n");
  return 2;
}

static int setup(struct pt *p) {
  struct ibv_device **list = ibv_get_device_list(NULL);
  if (!list || !list[0]) return fail("ibv_get_device_list");
  p->dev = ibv_open_device(list[0]);
  ibv_free_device_list(list);
  if (!p->dev) return fail("ibv_open_device");
  struct ibv_device_attr da;
  if (ibv_query_device(p->dev, &da)) return fail("ibv_query_device");
  if (!(p->pd = ibv_alloc_pd(p->dev))) return fail("ibv_alloc_pd");
  const int cqe = 2 * p->depth + 2;
  if (!(p->cq = ibv_create_cq(p->dev, cqe, NULL, NULL, 0))) return fail("ibv_create_cq");
  struct ibv_qp_init_attr ia = {.send_cq = p->cq, .recv_cq = p->cq, .qp_type = IBV_QPT_RC,
                                .cap = {.max_send_wr = (uint32_t)p->depth, .max_recv_wr = (uint32_t)p->depth,
                                        .max_send_sge = 1, .max_recv_sge = 1}};
  if (!(p->qp = ibv_create_qp(p->pd, &ia))) return fail("ibv_create_qp");
  p->buf = aligned_alloc(4096, (2 * p->max_size + 4095) / 4096 * 4096);
  if (!p->buf) return fail("aligned_alloc");
  memset(p->buf, 0, 2 * p->max_size);
  const int access = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
                     IBV_ACCESS_REMOTE_ATOMIC;
  if (!(p->mr = ibv_reg_mr(p->pd, p->buf, 2 * p->max_size, access))) return fail("ibv_reg_mr");

  struct end me = {p->qp->qp_num, p->mr->rkey, (uintptr_t)p->buf, {0}};
  if (rdmasim_port_addr(p->dev, &me.at)) return fail("rdmasim_port_addr");
  char key[32];
  snprintf(key, sizeof key, "perftest.%d", p->rank);
  if (rdmasim_oob_put(key, &me, sizeof me)) return fail("rdmasim_oob_put");
  snprintf(key, sizeof key, "perftest.%d", 1 - p->rank);
  if (rdmasim_oob_get(key, &p->peer, sizeof p->peer)) return fail("rdmasim_oob_get");
  const uint8_t rd = (uint8_t)(da.max_qp_rd_atom < 16 ? da.max_qp_rd_atom : 16);
  struct rdmasim_rc_opts o = {.mtu = 0, .access = (unsigned)access & ~IBV_ACCESS_LOCAL_WRITE,
                              .rd_atomic = rd, .priority = 0};
  if (rdmasim_rc_connect(p->qp, p->peer.qpn, &p->peer.at, &o)) return fail("rdmasim_rc_connect");
  p->tposted = calloc((size_t)p->iters, sizeof *p->tposted);
  p->tcompleted = calloc((size_t)p->iters, sizeof *p->tcompleted);
  if (!p->tposted || !p->tcompleted) return fail("calloc");
  return rdmasim_oob_barrier() ? fail("rdmasim_oob_barrier") : 0;
}

/* Posts operation `id` of `size` bytes: the source or target is the send half of the buffer
 * for SEND and WRITE, the first half for READ (the peer's data lands there). */
static int post_op(struct pt *p, uint64_t id, size_t size) {
  struct ibv_sge s = {(uintptr_t)p->buf + (p->verb == READ ? 0 : p->max_size), (uint32_t)size, p->mr->lkey};
  struct ibv_send_wr wr = {.wr_id = id, .sg_list = &s, .num_sge = 1, .send_flags = IBV_SEND_SIGNALED}, *bad;
  switch (p->verb) {
    case WRITE: wr.opcode = IBV_WR_RDMA_WRITE; break;
    case READ: wr.opcode = IBV_WR_RDMA_READ; break;
    case SEND: wr.opcode = IBV_WR_SEND; break;
    case ATOMIC: wr.opcode = IBV_WR_ATOMIC_FETCH_AND_ADD; s.length = 8; break;
  }
  if (p->verb == ATOMIC) {
    wr.wr.atomic.remote_addr = p->peer.addr;
    wr.wr.atomic.rkey = p->peer.rkey;
    wr.wr.atomic.compare_add = 1;
  } else if (p->verb != SEND) {
    wr.wr.rdma.remote_addr = p->peer.addr;
    wr.wr.rdma.rkey = p->peer.rkey;
  }
  return ibv_post_send(p->qp, &wr, &bad);
}

/* A receive takes the whole landing half: one reposted at one size serves the next. */
static int post_recv(struct pt *p) {
  struct ibv_sge s = {(uintptr_t)p->buf, (uint32_t)p->max_size, p->mr->lkey};
  struct ibv_recv_wr wr = {.wr_id = 0, .sg_list = &s, .num_sge = 1}, *bad;
  return ibv_post_recv(p->qp, &wr, &bad);
}

/* One completion (waiting for it); 0, or 1 after printing a bad status. */
static int poll_one(struct pt *p, struct ibv_wc *wc) {
  int n;
  while ((n = ibv_poll_cq(p->cq, 1, wc)) == 0) {}
  if (n < 0) return fail("ibv_poll_cq");
  if (wc->status != IBV_WC_SUCCESS) {
    fprintf(stderr, "perftest: completion %s\n", ibv_wc_status_str(wc->status));
    return 1;
  }
  return 0;
}

/* The peak's search is quadratic in the iterations: past this many it is not made and the
 * peak prints 0.00, as perftest's does with -N (no peak). */
enum { kPeakIters = 20000 };

static double mib_per_s(double bytes, double ns) { return bytes / ns * 1e9 / 1048576.0; }

static int client_bw(struct pt *p, size_t size) {
  int posted = 0, done = 0;
  struct ibv_wc wc;
  while (done < p->iters) {
    while (posted < p->iters && posted - done < p->depth) {
      p->tposted[posted] = rdmasim_time_ns();
      if (post_op(p, (uint64_t)posted, size)) return fail("ibv_post_send");
      posted++;
    }
    if (poll_one(p, &wc)) return 1;
    p->tcompleted[done++] = rdmasim_time_ns();
  }
  uint64_t best = 0;   /* perftest's peak: the best rate over any run of operations */
  for (int i = 0; i < (p->iters <= kPeakIters ? p->iters : 0); ++i)
    for (int j = i; j < p->iters; ++j) {
      const uint64_t t = (p->tcompleted[j] - p->tposted[i]) / (uint64_t)(j - i + 1);
      if (!best || t < best) best = t;
    }
  const double span = (double)(p->tcompleted[p->iters - 1] - p->tposted[0]);
  const double bytes = (double)size * p->iters;
  printf(" %-10zu %-10d       %-10.2f         %-10.2f\t   %.6f\n", size, p->iters,
         best ? mib_per_s((double)size, (double)best) : 0.0, mib_per_s(bytes, span),
         p->iters / span * 1e3);
  return 0;
}

/* The server of SEND bw: keeps `depth` receives posted until the client's iterations came. */
static int server_send_bw(struct pt *p) {
  struct ibv_wc wc;
  int posted = 0;
  for (; posted < p->depth && posted < p->iters; ++posted)
    if (post_recv(p)) return fail("ibv_post_recv");
  for (int got = 0; got < p->iters; ++got) {
    if (poll_one(p, &wc)) return 1;
    if (posted < p->iters) {
      if (post_recv(p)) return fail("ibv_post_recv");
      posted++;
    }
  }
  return 0;
}

/* Write lat: waits until the last byte of the landing half reads `v`, looking every spin_ns. */
static void wait_byte(struct pt *p, size_t size, uint8_t v) {
  volatile uint8_t *last = p->buf + size - 1;
  while (*last != v) rdmasim_compute(p->spin_ns);
}

/* One iteration of a ping-pong on either side; the client returns the round trip in ns.
 * The server of SEND may see the client's next message before its own send's completion
 * (the message can overtake the ACK): it keeps that receive for the next iteration. */
static int pingpong(struct pt *p, size_t size, int i, uint64_t *rtt) {
  struct ibv_wc wc;
  const uint8_t v = (uint8_t)(i + 1);
  int send_done = 0;
  const uint64_t t0 = rdmasim_time_ns();
  if (p->rank == 1) {       /* the server answers */
    if (p->verb == WRITE) wait_byte(p, size, v);
    else if (p->early_recvs) p->early_recvs--;
    else if (poll_one(p, &wc)) return 1;
    else if (wc.opcode != IBV_WC_RECV) return fail("completion order");
    if (p->verb == SEND && post_recv(p)) return fail("ibv_post_recv");
  }
  p->buf[p->max_size + size - 1] = v;
  if (post_op(p, (uint64_t)i, size)) return fail("ibv_post_send");
  if (p->rank == 0) {
    if (p->verb == WRITE) wait_byte(p, size, v);
    else {                  /* the reply's receive completion (our send's may come first) */
      for (;;) {
        if (poll_one(p, &wc)) return 1;
        if (wc.opcode == IBV_WC_RECV) break;
        send_done = 1;
      }
      if (post_recv(p)) return fail("ibv_post_recv");
    }
    *rtt = rdmasim_time_ns() - t0;
  }
  while (!send_done) {      /* this iteration's send completion */
    if (poll_one(p, &wc)) return 1;
    if (wc.opcode != IBV_WC_RECV) send_done = 1;
    else if (p->rank == 1) p->early_recvs++;
    else return fail("completion order");
  }
  return 0;
}

static int cmp_u64(const void *a, const void *b) {
  const uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return x < y ? -1 : x > y;
}

static uint64_t pct(const uint64_t *s, int n, double q) {
  int k = (int)ceil(q * n) - 1;
  return s[k < 0 ? 0 : k];
}

static int run_lat(struct pt *p, size_t size) {
  uint64_t *t = p->tposted;   /* 2 x each sample in ns: a ping-pong's round trip, twice a READ's */
  struct ibv_wc wc;
  if (p->verb == SEND && !p->recv_posted) {   /* one receive stays posted across the sizes */
    if (post_recv(p)) return fail("ibv_post_recv");
    p->recv_posted = 1;
  }
  if (rdmasim_oob_barrier()) return fail("rdmasim_oob_barrier");
  for (int i = 0; i < p->iters; ++i) {
    if (p->verb == WRITE || p->verb == SEND) {
      if (pingpong(p, size, i, &t[i])) return 1;
    } else if (p->rank == 0) {
      const uint64_t t0 = rdmasim_time_ns();
      if (post_op(p, (uint64_t)i, size) || poll_one(p, &wc)) return 1;
      t[i] = 2 * (rdmasim_time_ns() - t0);
    }
  }
  if (p->verb == SEND && p->rank == 1 && ibv_poll_cq(p->cq, 1, &wc) < 0) return fail("ibv_poll_cq");
  if (p->rank != 0) return 0;
  qsort(t, (size_t)p->iters, sizeof *t, cmp_u64);
  double sum = 0, sq = 0;
  for (int i = 0; i < p->iters; ++i) sum += (double)t[i] / 2e3;
  const double avg = sum / p->iters;
  for (int i = 0; i < p->iters; ++i) sq += ((double)t[i] / 2e3 - avg) * ((double)t[i] / 2e3 - avg);
  printf(" %-7zu %-10d    %-7.2f        %-7.2f      %-7.2f     \t       %-7.2f     \t%-7.2f \t\t%-7.2f \t\t%-7.2f\n",
         size, p->iters, t[0] / 2e3, t[p->iters - 1] / 2e3, t[p->iters / 2] / 2e3, avg,
         sqrt(sq / p->iters), pct(t, p->iters, 0.99) / 2e3, pct(t, p->iters, 0.999) / 2e3);
  return 0;
}

int rdmasim_main(int argc, char **argv) {
  struct pt p = {.iters = 0, .depth = 0, .spin_ns = 50, .rank = rdmasim_rank()};
  if (argc < 3) return usage();
  int v = -1;
  for (int i = 0; i < 4; ++i)
    if (!strcmp(argv[1], verb_names[i])) v = i;
  if (v < 0 || (strcmp(argv[2], "bw") && strcmp(argv[2], "lat"))) return usage();
  p.verb = (enum verb)v;
  p.bw = !strcmp(argv[2], "bw");
  size_t one = 65536;
  int all = 0;
  for (int i = 3; i < argc; ++i) {
    const int more = i + 1 < argc;
    char *end = NULL;
    if (!strcmp(argv[i], "-a")) all = 1;
    else if (more && !strcmp(argv[i], "-s")) one = strtoull(argv[++i], &end, 10);
    else if (more && !strcmp(argv[i], "-n")) p.iters = (int)strtol(argv[++i], &end, 10);
    else if (more && !strcmp(argv[i], "-t")) p.depth = (int)strtol(argv[++i], &end, 10);
    else if (more && !strcmp(argv[i], "-p")) p.spin_ns = strtoull(argv[++i], &end, 10);
    else return usage();
    if (end && *end) return usage();
  }
  if (rdmasim_size() != 2) {
    fprintf(stderr, "perftest: runs on 2 hosts, not %d\n", rdmasim_size());
    return 2;
  }
  if (!p.iters) p.iters = p.bw ? 5000 : 1000;
  if (!p.depth) p.depth = p.bw ? 128 : 1;
  if (!p.bw) p.depth = 4;   /* a ping-pong holds at most one send and one receive */
  if (p.iters < 1 || p.iters > 1000000 || p.depth < 1 || p.depth > 4096 || one < 1 ||
      one > (1u << 30) || p.spin_ns < 1)
    return usage();
  if (p.verb == ATOMIC) { one = 8; all = 0; }
  p.max_size = all ? 8388608 : one;
  if (setup(&p)) return 1;

  if (p.rank == 0) {
    printf("---------------------------------------------------------------------------------------\n");
    printf("                    RDMA_%s %s Test (rdmasim, simulated time)\n",
           p.verb == WRITE ? "Write" : p.verb == READ ? "Read" : p.verb == SEND ? "Send" : "Atomic FETCH_AND_ADD",
           p.bw ? "BW" : "Latency");
    printf(" Connection type : RC    TX depth : %d    Iterations : %d\n", p.bw ? p.depth : 1, p.iters);
    printf("---------------------------------------------------------------------------------------\n");
    if (p.bw) printf(" #bytes     #iterations    BW peak[MB/sec]    BW average[MB/sec]   MsgRate[Mpps]\n");
    else printf(" #bytes #iterations    t_min[usec]    t_max[usec]  t_typical[usec]    t_avg[usec]    "
                "t_stdev[usec]   99%% percentile[usec]   99.9%% percentile[usec] \n");
  }
  for (size_t size = all ? 2 : one; size <= p.max_size; size *= 2) {
    int rc;
    if (p.bw) {
      rc = p.rank == 0 ? client_bw(&p, size) : p.verb == SEND ? server_send_bw(&p) : 0;
    } else {
      rc = run_lat(&p, size);
    }
    /* the server's QP must live until the client's last operation completed */
    if (rc || rdmasim_oob_barrier()) return 1;
    if (!all) break;
  }
  if (p.rank == 0)
    printf("---------------------------------------------------------------------------------------\n");
  return 0;
}
