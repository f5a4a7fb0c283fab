/* Shared by the single-process verbs checks (verify_resize.c, verify_dm.c, verify_odp.c):
 * one device opened from [-d DEV] [-g GIDX], a PD, and pairs of RC QPs on port 1 connected
 * to each other (loopback through the fabric), each side with its own CQ. A poll with a
 * deadline, so a completion that never comes fails the check instead of hanging. Plain
 * verbs: the programs run on rdmasim or on a real NIC. */
#pragma once

#include <errno.h>
#include <time.h>

#include "verbs_pair.h"

#define ALL_REMOTE (IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC)

static struct ibv_context *ctx;
static struct ibv_pd *pd;
static struct ibv_port_attr port;
static int gidx;
static union ibv_gid gid;
static struct ibv_device **dev_list;

static void lb_open(int argc, char **argv) {
  const struct pair_args args = parse_args(argc, argv, 0);
  setvbuf(stdout, NULL, _IONBF, 0); /* progress is visible if a case hangs */
  gidx = args.gidx;
  ctx = open_named(args.dev, &dev_list);
  if (ibv_query_port(ctx, 1, &port)) die("query_port");
  if (ibv_query_gid(ctx, 1, gidx, &gid)) die("query_gid");
  pd = ibv_alloc_pd(ctx);
  if (!pd) die("alloc_pd");
}

static void lb_close(void) {
  ibv_dealloc_pd(pd);
  ibv_close_device(ctx);
  ibv_free_device_list(dev_list);
}

/* a sends to b; each has its own CQ (send and receive). */
struct lb_pair { struct ibv_cq *cqa, *cqb; struct ibv_qp *a, *b; };

static struct ibv_qp *lb_qp(struct ibv_cq *cq) {
  struct ibv_qp_init_attr ia = {
      .send_cq = cq, .recv_cq = cq, .qp_type = IBV_QPT_RC,
      .cap = {.max_send_wr = 32, .max_recv_wr = 32, .max_send_sge = 2, .max_recv_sge = 2}};
  struct ibv_qp *qp = ibv_create_qp(pd, &ia);
  if (!qp) die("create_qp");
  return qp;
}

/* Both QPs to RTS toward each other, every remote right granted. cqa/cqb: NULL makes one
 * of 64 entries. */
static struct lb_pair lb_make_pair(struct ibv_cq *cqa, struct ibv_cq *cqb) {
  struct lb_pair p;
  p.cqa = cqa ? cqa : ibv_create_cq(ctx, 64, NULL, NULL, 0);
  p.cqb = cqb ? cqb : ibv_create_cq(ctx, 64, NULL, NULL, 0);
  if (!p.cqa || !p.cqb) die("create_cq");
  p.a = lb_qp(p.cqa);
  p.b = lb_qp(p.cqb);
  if (rc_to_init(p.a, ALL_REMOTE) || rc_to_init(p.b, ALL_REMOTE)) die("to INIT");
  const struct rc_peer to_b = {p.b->qp_num, 0, ah_to(&port, port.lid, gid.raw, gidx)};
  const struct rc_peer to_a = {p.a->qp_num, 0, ah_to(&port, port.lid, gid.raw, gidx)};
  if (rc_to_rts(p.a, port.active_mtu, &to_b, 0, &rc_defaults) ||
      rc_to_rts(p.b, port.active_mtu, &to_a, 0, &rc_defaults))
    die("INIT -> RTR -> RTS");
  return p;
}

static void lb_free_pair(struct lb_pair *p) {
  ibv_destroy_qp(p->a);
  ibv_destroy_qp(p->b);
  ibv_destroy_cq(p->cqa);
  ibv_destroy_cq(p->cqb);
}

/* One signaled WR of `op` with one SGE (an atomic adds or compares 1), naming XRC SRQ
 * `srqn` when `qp` is an XRC initiator; 0 or ibv_post_send's errno. */
static int lb_post_to(struct ibv_qp *qp, enum ibv_wr_opcode op, void *addr, uint32_t len, uint32_t lkey,
                      uint64_t raddr, uint32_t rkey, uint64_t wr_id, uint32_t srqn) {
  struct ibv_sge s = {(uintptr_t)addr, len, lkey};
  struct ibv_send_wr wr = {.wr_id = wr_id, .sg_list = &s, .num_sge = 1, .opcode = op,
                           .send_flags = IBV_SEND_SIGNALED}, *bad;
  wr.qp_type.xrc.remote_srqn = srqn;
  if (op == IBV_WR_ATOMIC_FETCH_AND_ADD || op == IBV_WR_ATOMIC_CMP_AND_SWP) {
    wr.wr.atomic.remote_addr = raddr;
    wr.wr.atomic.rkey = rkey;
    wr.wr.atomic.compare_add = 1;
  } else {
    wr.wr.rdma.remote_addr = raddr;
    wr.wr.rdma.rkey = rkey;
  }
  return ibv_post_send(qp, &wr, &bad);
}

static int lb_post(struct ibv_qp *qp, enum ibv_wr_opcode op, void *addr, uint32_t len, uint32_t lkey,
                   uint64_t raddr, uint32_t rkey, uint64_t wr_id) {
  return lb_post_to(qp, op, addr, len, lkey, raddr, rkey, wr_id, 0);
}

/* XRC (verify_xrc.c, verify_xrc_shared.c): a domain (fd -1: one of its own, else the
 * file's), an XRC SRQ of 16 WRs in `x` on the PD completing on `cq`, and a receive on an SRQ. */
static struct ibv_xrcd *lb_open_xrcd(int fd, int oflags) {
  struct ibv_xrcd_init_attr a = {.comp_mask = IBV_XRCD_INIT_ATTR_FD | IBV_XRCD_INIT_ATTR_OFLAGS,
                                 .fd = fd, .oflags = oflags};
  return ibv_open_xrcd(ctx, &a);
}

static struct ibv_srq *lb_xrc_srq(struct ibv_xrcd *x, struct ibv_cq *cq) {
  struct ibv_srq_init_attr_ex a = {
      .attr = {.max_wr = 16, .max_sge = 1},
      .comp_mask = IBV_SRQ_INIT_ATTR_TYPE | IBV_SRQ_INIT_ATTR_PD | IBV_SRQ_INIT_ATTR_XRCD |
                   IBV_SRQ_INIT_ATTR_CQ,
      .srq_type = IBV_SRQT_XRC, .pd = pd, .xrcd = x, .cq = cq};
  return ibv_create_srq_ex(ctx, &a);
}

static int lb_post_srq_recv(struct ibv_srq *srq, void *addr, uint32_t len, uint32_t lkey, uint64_t wr_id) {
  struct ibv_sge s = {(uintptr_t)addr, len, lkey};
  struct ibv_recv_wr wr = {.wr_id = wr_id, .sg_list = &s, .num_sge = 1}, *bad;
  return ibv_post_srq_recv(srq, &wr, &bad);
}

static int lb_post_recv(struct ibv_qp *qp, void *addr, uint32_t len, uint32_t lkey, uint64_t wr_id) {
  struct ibv_sge s = {(uintptr_t)addr, len, lkey};
  struct ibv_recv_wr wr = {.wr_id = wr_id, .sg_list = &s, .num_sge = 1}, *bad;
  return ibv_post_recv(qp, &wr, &bad);
}

/* The next completion of `cq` within 10 s; 0, or -1 (and a FAIL line) when none came. */
static int lb_poll(struct ibv_cq *cq, struct ibv_wc *wc, const char *what) {
  struct timespec t0, t;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  for (;;) {
    int n = ibv_poll_cq(cq, 1, wc);
    if (n == 1) return 0;
    if (n < 0) die("poll_cq failed");
    clock_gettime(CLOCK_MONOTONIC, &t);
    if (t.tv_sec - t0.tv_sec > 10) {
      char line[256];
      snprintf(line, sizeof line, "%s: no completion within 10 s", what);
      check(0, line);
      return -1;
    }
  }
}

/* Polls the next completion and checks its status and wr_id. */
static int lb_expect(struct ibv_cq *cq, enum ibv_wc_status want, uint64_t wr_id, const char *what) {
  struct ibv_wc wc;
  if (lb_poll(cq, &wc, what)) return -1;
  char line[256];
  snprintf(line, sizeof line, "%s: %s (got %s, wr_id %llu)", what, ibv_wc_status_str(want),
           ibv_wc_status_str(wc.status), (unsigned long long)wc.wr_id);
  check(wc.status == want && wc.wr_id == wr_id, line);
  return 0;
}
