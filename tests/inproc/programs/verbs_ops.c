/* A verbs program for rdmasim studies (rdmasim_main, oob.h): ranks pair up (0-1, 2-3, ...),
 * and each pair runs the operations named in argv over its own RC and UD QPs, checking every
 * byte that moves. Even ranks act, odd ranks are the target. Prints "ok   <what>" or
 * "FAIL <what>" per check and returns the number of failures (so a failed check fails the
 * run with this host named). Built against the system <infiniband/verbs.h>.
 *
 * Operations: write, read, send, atomic, ud, channel (a receive awaited with
 * ibv_req_notify_cq + ibv_get_cq_event instead of polling), resize (ibv_resize_cq with
 * completions not yet polled), dm (device memory written and read back). */
#include <infiniband/verbs.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rdmasim/connect.h"
#include "rdmasim/oob.h"

enum { BUF = 65536, MSG = 4096, UD_MSG = 256, GRH = 40, QKEY = 0x11111111 };
enum { OFF_WRITE = 0, OFF_READ_SRC = 8192, OFF_READ_DST = 16384, OFF_SEND = 24576,
       OFF_ATOMIC = 32768, OFF_ATOMIC_RET = 32776, OFF_UD = 40960, OFF_CHAN = 49152 };

struct peer { uint32_t rc_qpn, ud_qpn, rkey; uint64_t addr; struct rdmasim_addr at; };

static int failures;
static void check(int cond, const char *what) {
  printf("%s %s\n", cond ? "ok  " : "FAIL", what);
  if (!cond) failures++;
}

struct ctx {
  struct ibv_context *dev;
  struct ibv_pd *pd;
  struct ibv_mr *mr;
  struct ibv_comp_channel *chan;
  struct ibv_cq *cq, *chan_cq;
  struct ibv_qp *rc, *ud;
  struct ibv_ah *ah;
  uint8_t *buf;
};

/* Byte i of what rank r writes: differs per rank and per position. */
static uint8_t pattern(int r, int i) { return (uint8_t)(i * 7 + r * 13 + 1); }

static int poll_one(struct ibv_cq *cq, struct ibv_wc *wc) {
  int n;
  while ((n = ibv_poll_cq(cq, 1, wc)) == 0) {}
  return n == 1 && wc->status == IBV_WC_SUCCESS;
}

static int post(struct ctx *c, struct ibv_qp *qp, enum ibv_wr_opcode op, int off, int len,
                const struct peer *p, int remote_off) {
  struct ibv_sge sge = {(uintptr_t)(c->buf + off), (uint32_t)len, c->mr->lkey};
  struct ibv_send_wr wr = {.wr_id = (uint64_t)op, .sg_list = &sge, .num_sge = 1, .opcode = op,
                           .send_flags = IBV_SEND_SIGNALED}, *bad;
  if (op == IBV_WR_RDMA_WRITE || op == IBV_WR_RDMA_READ) {
    wr.wr.rdma.remote_addr = p->addr + remote_off;
    wr.wr.rdma.rkey = p->rkey;
  }
  if (qp == c->ud) {
    wr.wr.ud.ah = c->ah;
    wr.wr.ud.remote_qpn = p->ud_qpn;
    wr.wr.ud.remote_qkey = QKEY;
  }
  return ibv_post_send(qp, &wr, &bad);
}

static int post_atomic(struct ctx *c, enum ibv_wr_opcode op, uint64_t cmp_add, uint64_t swap,
                       const struct peer *p) {
  struct ibv_sge sge = {(uintptr_t)(c->buf + OFF_ATOMIC_RET), 8, c->mr->lkey};
  struct ibv_send_wr wr = {.sg_list = &sge, .num_sge = 1, .opcode = op,
                           .send_flags = IBV_SEND_SIGNALED}, *bad;
  wr.wr.atomic.remote_addr = p->addr + OFF_ATOMIC;
  wr.wr.atomic.rkey = p->rkey;
  wr.wr.atomic.compare_add = cmp_add;
  wr.wr.atomic.swap = swap;
  return ibv_post_send(c->rc, &wr, &bad);
}

static int post_recv(struct ctx *c, struct ibv_qp *qp, int off, int len) {
  struct ibv_sge sge = {(uintptr_t)(c->buf + off), (uint32_t)len, c->mr->lkey};
  struct ibv_recv_wr wr = {.wr_id = (uint64_t)off, .sg_list = &sge, .num_sge = 1}, *bad;
  return ibv_post_recv(qp, &wr, &bad);
}

static int setup(struct ctx *c) {
  int n = 0;
  struct ibv_device **list = ibv_get_device_list(&n);
  if (!list || n < 1) return 1;
  c->dev = ibv_open_device(list[0]);
  ibv_free_device_list(list);
  if (!c->dev) return 2;
  c->pd = ibv_alloc_pd(c->dev);
  c->buf = calloc(1, BUF);
  c->mr = ibv_reg_mr(c->pd, c->buf, BUF, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
                                             IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC);
  c->chan = ibv_create_comp_channel(c->dev);
  c->cq = ibv_create_cq(c->dev, 64, NULL, NULL, 0);
  c->chan_cq = c->chan ? ibv_create_cq(c->dev, 8, NULL, c->chan, 0) : NULL;
  if (!c->pd || !c->mr || !c->cq || !c->chan_cq) return 4;
  struct ibv_qp_init_attr rc = {.send_cq = c->cq, .recv_cq = c->chan_cq, .qp_type = IBV_QPT_RC,
                                .cap = {.max_send_wr = 16, .max_recv_wr = 16, .max_send_sge = 1,
                                        .max_recv_sge = 1}};
  struct ibv_qp_init_attr ud = rc;
  ud.qp_type = IBV_QPT_UD;
  ud.recv_cq = c->cq;
  c->rc = ibv_create_qp(c->pd, &rc);
  c->ud = ibv_create_qp(c->pd, &ud);
  return c->rc && c->ud ? 0 : 5;
}

/* RC: RESET -> INIT -> RTR -> RTS to the peer; UD: to RTS with the qkey (man ibv_modify_qp). */
static int connect(struct ctx *c, const struct peer *p) {
  const struct rdmasim_rc_opts o = {IBV_MTU_4096, IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
                                                      IBV_ACCESS_REMOTE_ATOMIC, 4, 0};
  const int step = rdmasim_rc_connect(c->rc, p->rc_qpn, &p->at, &o);
  if (step) return step;
  struct ibv_qp_attr u = {.qp_state = IBV_QPS_INIT, .port_num = 1, .qkey = QKEY};
  if (ibv_modify_qp(c->ud, &u, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY)) return 4;
  u.qp_state = IBV_QPS_RTR;
  if (ibv_modify_qp(c->ud, &u, IBV_QP_STATE)) return 5;
  u.qp_state = IBV_QPS_RTS;
  u.sq_psn = 0;
  if (ibv_modify_qp(c->ud, &u, IBV_QP_STATE | IBV_QP_SQ_PSN)) return 6;
  struct ibv_ah_attr av;
  rdmasim_fill_ah(&av, &p->at, 0);
  c->ah = ibv_create_ah(c->pd, &av);
  return c->ah ? 0 : 7;
}

static int has(int argc, char **argv, const char *op) {
  for (int i = 1; i < argc; i++)
    if (!strcmp(argv[i], op) || !strcmp(argv[i], "all")) return 1;
  return 0;
}

static int bytes_match(const uint8_t *b, int r, int len) {
  for (int i = 0; i < len; i++)
    if (b[i] != pattern(r, i)) return 0;
  return 1;
}

int rdmasim_main(int argc, char **argv) {
  const int rank = rdmasim_rank(), size = rdmasim_size();
  const int active = rank % 2 == 0, peer_rank = rank ^ 1;
  struct ctx c = {0};
  char key[32], what[128];
  if (size % 2 || size < 2) {
    fprintf(stderr, "%s: needs an even number of processes, has %d\n", argv[0], size);
    return 2;
  }
  int rc = setup(&c);
  if (rc) {
    fprintf(stderr, "%s: set-up failed at step %d\n", argv[0], rc);
    return 10 + rc;
  }
  struct peer me = {c.rc->qp_num, c.ud->qp_num, c.mr->rkey, (uintptr_t)c.buf, {0}}, them;
  if (rdmasim_port_addr(c.dev, &me.at)) return 19;
  snprintf(key, sizeof key, "peer%d", rank);
  rdmasim_oob_put(key, &me, sizeof me);
  snprintf(key, sizeof key, "peer%d", peer_rank);
  if (rdmasim_oob_get(key, &them, sizeof them)) return 20;
  if ((rc = connect(&c, &them))) {
    fprintf(stderr, "%s: connect failed at step %d\n", argv[0], rc);
    return 30 + rc;
  }
  /* The target's memory: what READ fetches, the atomic's start value, posted receives. */
  for (int i = 0; i < MSG; i++) c.buf[OFF_READ_SRC + i] = pattern(rank, i);
  *(uint64_t *)(c.buf + OFF_ATOMIC) = 100;
  if (!active) {
    post_recv(&c, c.rc, OFF_SEND, MSG);
    post_recv(&c, c.ud, OFF_UD, GRH + UD_MSG);
  }
  rdmasim_oob_barrier();
  struct ibv_wc wc;
  for (int i = 0; i < MSG; i++) c.buf[OFF_WRITE + i] = pattern(rank, i);

  if (has(argc, argv, "write")) {
    if (active) {
      check(post(&c, c.rc, IBV_WR_RDMA_WRITE, OFF_WRITE, MSG, &them, OFF_WRITE) == 0 &&
                poll_one(c.cq, &wc) && wc.opcode == IBV_WC_RDMA_WRITE,
            "write: 4096 B RDMA WRITE completes");
    }
    rdmasim_oob_barrier();
    if (!active) {
      snprintf(what, sizeof what, "write: the 4096 bytes from rank %d arrived intact", peer_rank);
      check(bytes_match(c.buf + OFF_WRITE, peer_rank, MSG), what);
    }
  }
  if (has(argc, argv, "read") && active) {
    int ok = post(&c, c.rc, IBV_WR_RDMA_READ, OFF_READ_DST, MSG, &them, OFF_READ_SRC) == 0 &&
             poll_one(c.cq, &wc) && wc.opcode == IBV_WC_RDMA_READ;
    check(ok && bytes_match(c.buf + OFF_READ_DST, peer_rank, MSG),
          "read: 4096 B RDMA READ brings the peer's bytes");
  }
  if (has(argc, argv, "send")) {
    if (active) {
      check(post(&c, c.rc, IBV_WR_SEND, OFF_WRITE, MSG, &them, 0) == 0 && poll_one(c.cq, &wc) &&
                wc.opcode == IBV_WC_SEND,
            "send: 4096 B SEND completes");
    } else {
      int ok = poll_one(c.chan_cq, &wc) && wc.opcode == IBV_WC_RECV && wc.byte_len == MSG;
      check(ok && bytes_match(c.buf + OFF_SEND, peer_rank, MSG),
            "send: the receive completes with byte_len 4096 and the sender's bytes");
    }
  }
  if (has(argc, argv, "atomic")) {
    if (active) {
      /* FETCH_ADD returns the old value (100) and leaves 105; CMP_SWP(105 -> 7) returns 105. */
      int ok = post_atomic(&c, IBV_WR_ATOMIC_FETCH_AND_ADD, 5, 0, &them) == 0 && poll_one(c.cq, &wc);
      check(ok && *(uint64_t *)(c.buf + OFF_ATOMIC_RET) == 100, "atomic: FETCH_ADD 5 returns 100");
      ok = post_atomic(&c, IBV_WR_ATOMIC_CMP_AND_SWP, 105, 7, &them) == 0 && poll_one(c.cq, &wc);
      check(ok && *(uint64_t *)(c.buf + OFF_ATOMIC_RET) == 105, "atomic: CMP_SWP 105->7 returns 105");
    }
    rdmasim_oob_barrier();
    if (!active) check(*(uint64_t *)(c.buf + OFF_ATOMIC) == 7, "atomic: the target holds 7");
  }
  if (has(argc, argv, "ud")) {
    if (active) {
      check(post(&c, c.ud, IBV_WR_SEND, OFF_WRITE, UD_MSG, &them, 0) == 0 && poll_one(c.cq, &wc),
            "ud: 256 B UD SEND completes");
    } else {
      /* man ibv_post_recv: a UD receive's first 40 bytes are the GRH, the payload follows. */
      int ok = poll_one(c.cq, &wc) && wc.opcode == IBV_WC_RECV && wc.byte_len == GRH + UD_MSG;
      check(ok && bytes_match(c.buf + OFF_UD + GRH, peer_rank, UD_MSG),
            "ud: the datagram arrives after the 40-byte GRH, byte_len 296");
    }
  }
  if (has(argc, argv, "channel")) {
    if (!active) {
      post_recv(&c, c.rc, OFF_CHAN, MSG);
      ibv_req_notify_cq(c.chan_cq, 0);
    }
    rdmasim_oob_barrier();
    if (active) {
      rdmasim_compute(10000); /* the target waits in ibv_get_cq_event meanwhile */
      check(post(&c, c.rc, IBV_WR_SEND, OFF_WRITE, MSG, &them, 0) == 0 && poll_one(c.cq, &wc),
            "channel: SEND completes");
    } else {
      struct ibv_cq *ev_cq;
      void *ev_ctx;
      int ok = ibv_get_cq_event(c.chan, &ev_cq, &ev_ctx) == 0 && ev_cq == c.chan_cq;
      if (ok) ibv_ack_cq_events(ev_cq, 1);
      ok = ok && ibv_poll_cq(c.chan_cq, 1, &wc) == 1 && wc.status == IBV_WC_SUCCESS &&
           wc.byte_len == MSG;
      check(ok && bytes_match(c.buf + OFF_CHAN, peer_rank, MSG),
            "channel: ibv_get_cq_event wakes for the receive, which holds the sender's bytes");
    }
  }
  if (has(argc, argv, "resize") && active) {
    /* man ibv_resize_cq: the CQ keeps its completions; three WRITEs complete unpolled (their
     * round trip is a few us, the compute 20 us), the CQ grows, the three come out in order,
     * and a WRITE posted after completes on the grown CQ. */
    int ok = 1;
    for (int i = 0; i < 3 && ok; i++) ok = post(&c, c.rc, IBV_WR_RDMA_WRITE, OFF_WRITE, 64, &them, OFF_WRITE) == 0;
    rdmasim_compute(20000);
    ok = ok && ibv_resize_cq(c.cq, 256) == 0 && c.cq->cqe >= 256;
    for (int i = 0; i < 3 && ok; i++) ok = poll_one(c.cq, &wc) && wc.opcode == IBV_WC_RDMA_WRITE;
    ok = ok && post(&c, c.rc, IBV_WR_RDMA_WRITE, OFF_WRITE, 64, &them, OFF_WRITE) == 0 &&
         poll_one(c.cq, &wc) && wc.opcode == IBV_WC_RDMA_WRITE;
    check(ok, "resize: ibv_resize_cq keeps 3 unpolled completions; the grown CQ takes the next");
  }
  if (has(argc, argv, "dm")) {
    /* man ibv_alloc_dm: device memory is copied to and from with ibv_memcpy_to/from_dm. */
    struct ibv_alloc_dm_attr da = {.length = MSG};
    struct ibv_dm *dm = ibv_alloc_dm(c.dev, &da);
    uint8_t src[MSG], back[MSG];
    for (int i = 0; i < MSG; i++) src[i] = pattern(rank, i);
    memset(back, 0, sizeof back);
    int ok = dm && ibv_memcpy_to_dm(dm, 0, src, MSG) == 0 &&
             ibv_memcpy_from_dm(back, dm, 0, MSG) == 0 && bytes_match(back, rank, MSG);
    if (dm) ibv_free_dm(dm);
    check(ok, "dm: 4096 B copied into device memory come back intact");
  }
  rdmasim_oob_barrier();
  ibv_destroy_ah(c.ah);
  ibv_destroy_qp(c.ud);
  ibv_destroy_qp(c.rc);
  ibv_destroy_cq(c.chan_cq);
  ibv_destroy_cq(c.cq);
  ibv_destroy_comp_channel(c.chan);
  ibv_dereg_mr(c.mr);
  ibv_dealloc_pd(c.pd);
  ibv_close_device(c.dev);
  free(c.buf);
  printf("%d failures\n", failures);
  return failures;
}
