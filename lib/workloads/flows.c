/* The study's flows as a verbs program (rdmasim_main, rdmasim/oob.h): what the runner's
 * built-in flow driver does with the HCA models directly, done here through ibv_* calls in
 * a fiber, in virtual time. One instance runs per host that takes part in a flow; argv lists
 * the flows this host is in, one argument each:
 *
 *   K:SRC:DST:OP:QP:MESSAGE:BYTES:START_NS:PRIORITY:WINDOW
 *
 * K the flow's index in the study, SRC/DST ranks, OP w|r|s (write, read, send), QP rc|uc|ud.
 * The requester (SRC, or DST for a READ) keeps WINDOW messages of MESSAGE bytes (the last
 * one shorter) posted from START_NS on, as the built-in driver does.
 *
 * Keys (lib/workloads/README.md): "wl.flow<K>.req" and "wl.flow<K>.rsp" carry each side's
 * struct wl_end (its first 4 bytes the QPN; the runner reads the receiving side's to time
 * the payload), "wl.flow<K>.done" the requester's struct wl_done when its last message
 * completed or one failed (the runner takes the put's virtual time as the flow's finish). The responder keeps its QP until it sees "done".
 */
#include <infiniband/verbs.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rdmasim/connect.h"
#include "rdmasim/oob.h"

enum { QKEY = 0x11111111, UD_GRH = 40 };

struct wl_end { uint32_t qpn, rkey; uint64_t addr; struct rdmasim_addr at; };
struct wl_done { uint64_t messages; int32_t status, pad; };   /* status 0, a wc status, -1 */

struct flow {
  int k, src, dst;
  char op, qp[3];
  uint32_t message, window;
  uint64_t bytes, messages, start_ns;
  uint8_t priority;
  int requester, receiver;        /* this host's roles */
  struct ibv_qp *q;
  struct ibv_ah *ah;              /* UD: towards the receiver */
  struct wl_end peer;
  uint64_t posted, completed, recvs_posted, recvs_done;
  int failed, finished, started;
};

static int parse(const char *s, struct flow *f) {
  char op[8], qp[8];
  unsigned long long bytes, start;
  unsigned prio;
  if (sscanf(s, "%d:%d:%d:%7[^:]:%7[^:]:%u:%llu:%llu:%u:%u", &f->k, &f->src, &f->dst, op, qp,
             &f->message, &bytes, &start, &prio, &f->window) != 10)
    return 1;
  f->op = op[0];
  memcpy(f->qp, qp, 3);
  f->qp[2] = 0;
  f->bytes = bytes;
  f->start_ns = start;
  f->priority = (uint8_t)prio;
  f->messages = (bytes + f->message - 1) / f->message;
  if (!strchr("wrs", f->op) || op[1] || (strcmp(f->qp, "rc") && strcmp(f->qp, "uc") && strcmp(f->qp, "ud")) ||
      !f->message || !f->window || prio > 7)
    return 1;
  const int rank = rdmasim_rank();
  const int req = f->op == 'r' ? f->dst : f->src;
  f->requester = rank == req;
  f->receiver = rank == f->dst && f->op == 's';
  return rank != f->src && rank != f->dst;
}

static enum ibv_qp_type qp_type(const struct flow *f) {
  return !strcmp(f->qp, "rc") ? IBV_QPT_RC : !strcmp(f->qp, "uc") ? IBV_QPT_UC : IBV_QPT_UD;
}

/* UC: the RC transitions without the reliability and READ attributes (man ibv_modify_qp);
 * UD: INIT with the qkey, RTR, RTS. */
static int connect_flow(struct ibv_pd *pd, struct flow *f) {
  if (qp_type(f) == IBV_QPT_RC) {
    const struct rdmasim_rc_opts o = {0, IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ, 16, f->priority};
    return rdmasim_rc_connect(f->q, f->peer.qpn, &f->peer.at, &o);
  }
  struct ibv_qp_attr a;
  memset(&a, 0, sizeof a);
  a.qp_state = IBV_QPS_INIT;
  a.port_num = 1;
  if (qp_type(f) == IBV_QPT_UD) {
    a.qkey = QKEY;
    if (ibv_modify_qp(f->q, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY)) return 1;
    a.qp_state = IBV_QPS_RTR;
    if (ibv_modify_qp(f->q, &a, IBV_QP_STATE)) return 2;
    a.qp_state = IBV_QPS_RTS;
    if (ibv_modify_qp(f->q, &a, IBV_QP_STATE | IBV_QP_SQ_PSN)) return 3;
    struct ibv_ah_attr av;
    rdmasim_fill_ah(&av, &f->peer.at, f->priority);
    if (f->requester && !(f->ah = ibv_create_ah(pd, &av))) return 4;
    return 0;
  }
  a.qp_access_flags = IBV_ACCESS_REMOTE_WRITE;
  if (ibv_modify_qp(f->q, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS)) return 1;
  memset(&a, 0, sizeof a);
  a.qp_state = IBV_QPS_RTR;
  a.path_mtu = (enum ibv_mtu)f->peer.at.mtu;
  a.dest_qp_num = f->peer.qpn;
  rdmasim_fill_ah(&a.ah_attr, &f->peer.at, f->priority);
  if (ibv_modify_qp(f->q, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN))
    return 2;
  a.qp_state = IBV_QPS_RTS;
  return ibv_modify_qp(f->q, &a, IBV_QP_STATE | IBV_QP_SQ_PSN) ? 3 : 0;
}

static const char *side(int requester) { return requester ? "req" : "rsp"; }

struct host {
  struct ibv_context *ctx;
  struct ibv_pd *pd;
  struct ibv_cq *cq;
  struct ibv_mr *mr;
  uint8_t *buf;
  uint32_t buf_len;
};

static int post_recv(struct host *h, struct flow *f, int i) {
  struct ibv_sge s = {(uintptr_t)h->buf, f->message + (qp_type(f) == IBV_QPT_UD ? UD_GRH : 0), h->mr->lkey};
  struct ibv_recv_wr wr = {.wr_id = (uint64_t)i << 1 | 1, .sg_list = &s, .num_sge = 1}, *bad;
  if (ibv_post_recv(f->q, &wr, &bad)) return 1;
  f->recvs_posted++;
  return 0;
}

static int post_send(struct host *h, struct flow *f, int i) {
  const uint64_t off = f->posted * f->message;
  const uint32_t len = (uint32_t)(f->bytes - off < f->message ? f->bytes - off : f->message);
  struct ibv_sge s = {(uintptr_t)h->buf, len, h->mr->lkey};
  struct ibv_send_wr wr = {.wr_id = (uint64_t)i << 1, .sg_list = &s, .num_sge = 1,
                           .send_flags = IBV_SEND_SIGNALED}, *bad;
  wr.opcode = f->op == 'w' ? IBV_WR_RDMA_WRITE : f->op == 'r' ? IBV_WR_RDMA_READ : IBV_WR_SEND;
  wr.wr.rdma.remote_addr = f->peer.addr;
  wr.wr.rdma.rkey = f->peer.rkey;
  if (f->ah) {
    wr.wr.ud.ah = f->ah;
    wr.wr.ud.remote_qpn = f->peer.qpn;
    wr.wr.ud.remote_qkey = QKEY;
  }
  if (ibv_post_send(f->q, &wr, &bad)) return 1;
  f->posted++;
  return 0;
}

static void publish_done(struct flow *f, int status) {
  struct wl_done d = {f->completed, status, 0};
  char key[48];
  snprintf(key, sizeof key, "wl.flow%d.done", f->k);
  rdmasim_oob_put(key, &d, sizeof d);
}

/* Sets up every flow's QP and connects it; 0 or a step number. */
static int setup(struct host *h, struct flow *fl, int n) {
  struct ibv_device **list = ibv_get_device_list(NULL);
  if (!list || !list[0]) return 1;
  h->ctx = ibv_open_device(list[0]);
  ibv_free_device_list(list);
  if (!h->ctx) return 1;
  struct rdmasim_addr me;
  if (rdmasim_port_addr(h->ctx, &me)) return 2;
  int cqe = 16;
  h->buf_len = 0;
  for (int i = 0; i < n; i++) {
    cqe += (int)(fl[i].requester ? fl[i].window : 2 * fl[i].window);
    if (fl[i].message + UD_GRH > h->buf_len) h->buf_len = fl[i].message + UD_GRH;
  }
  h->pd = ibv_alloc_pd(h->ctx);
  h->cq = ibv_create_cq(h->ctx, cqe, NULL, NULL, 0);
  h->buf = calloc(1, h->buf_len);
  if (!h->pd || !h->cq || !h->buf) return 3;
  h->mr = ibv_reg_mr(h->pd, h->buf, h->buf_len,
                     IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ);
  if (!h->mr) return 3;
  char key[48];
  for (int i = 0; i < n; i++) {
    struct flow *f = &fl[i];
    struct ibv_qp_init_attr a = {.send_cq = h->cq, .recv_cq = h->cq, .qp_type = qp_type(f),
                                 .cap = {.max_send_wr = f->window, .max_recv_wr = 2 * f->window,
                                         .max_send_sge = 1, .max_recv_sge = 1}};
    if (!(f->q = ibv_create_qp(h->pd, &a))) return 4;
  }
  /* Requesters publish first (nothing to wait for), responders connect and publish once in
   * RTR, requesters connect: no side ever sends to a QP that is not ready, no deadlock. */
  struct wl_end mine = {0, h->mr->rkey, (uintptr_t)h->buf, me};
  for (int i = 0; i < n; i++) {
    if (!fl[i].requester) continue;
    mine.qpn = fl[i].q->qp_num;
    snprintf(key, sizeof key, "wl.flow%d.%s", fl[i].k, side(1));
    if (rdmasim_oob_put(key, &mine, sizeof mine)) return 5;
  }
  for (int r = 0; r < 2; r++)
    for (int i = 0; i < n; i++) {
      struct flow *f = &fl[i];
      if (f->requester != r) continue;
      snprintf(key, sizeof key, "wl.flow%d.%s", f->k, side(!r));
      if (rdmasim_oob_get(key, &f->peer, sizeof f->peer)) return 6;
      if (connect_flow(h->pd, f)) return 7;
      if (f->receiver)
        while (f->recvs_posted < f->messages && f->recvs_posted < 2 * f->window)
          if (post_recv(h, f, i)) return 8;
      if (!r) {
        mine.qpn = f->q->qp_num;
        snprintf(key, sizeof key, "wl.flow%d.%s", f->k, side(0));
        if (rdmasim_oob_put(key, &mine, sizeof mine)) return 5;
      }
    }
  return 0;
}

int rdmasim_main(int argc, char **argv) {
  const uint64_t t0 = rdmasim_time_ns();
  const int n = argc - 1;
  struct flow *fl = calloc((size_t)(n > 0 ? n : 1), sizeof *fl);
  for (int i = 0; i < n; i++)
    if (parse(argv[i + 1], &fl[i])) {
      fprintf(stderr, "flows: bad flow '%s' (expected K:SRC:DST:w|r|s:rc|uc|ud:MESSAGE:BYTES:START_NS:PRIORITY:WINDOW "
                      "with this rank %d as SRC or DST)\n", argv[i + 1], rdmasim_rank());
      return 2;
    }
  struct host h = {0};
  const int step = setup(&h, fl, n);
  if (step) {
    fprintf(stderr, "flows: set-up failed at step %d\n", step);
    return 10 + step;
  }
  /* Work left: requested messages to complete, received messages to see. */
  int left = 0;
  for (int i = 0; i < n; i++) left += fl[i].requester + fl[i].receiver;
  struct ibv_wc wc[16];
  while (left > 0) {
    int waiting_start = 0, outstanding = 0;
    uint64_t now = 0, next = UINT64_MAX;
    for (int i = 0; i < n; i++)
      if (fl[i].requester && !fl[i].failed && !fl[i].started) waiting_start = 1;
    /* The clock is read only while a flow waits for its start: a read ends the coalescing
     * of an empty-poll loop (lib/inproc/README.md), so each empty poll is then an event. */
    if (waiting_start) now = rdmasim_time_ns() - t0;
    for (int i = 0; i < n; i++) {
      struct flow *f = &fl[i];
      if (f->requester && !f->failed) {
        if (!f->started && f->start_ns > now) {
          if (f->start_ns < next) next = f->start_ns;
        } else {
          f->started = 1;
          while (f->posted < f->messages && f->posted - f->completed < f->window)
            if (post_send(&h, f, i)) {
              fprintf(stderr, "flows: flow %d: post_send refused message %llu\n", f->k,
                      (unsigned long long)f->posted);
              f->failed = 1;
              publish_done(f, -1);
              left--;
              break;
            }
        }
        outstanding += (int)(f->posted - f->completed);
      }
      if (f->receiver && !f->finished) outstanding += 1;
    }
    const int got = ibv_poll_cq(h.cq, 16, wc);
    if (got < 0) {
      fprintf(stderr, "flows: ibv_poll_cq failed\n");
      return 3;
    }
    if (got == 0 && !outstanding && next != UINT64_MAX) rdmasim_compute(next - now);
    for (int c = 0; c < got; c++) {
      struct flow *f = &fl[wc[c].wr_id >> 1];
      const int recv = (int)(wc[c].wr_id & 1);
      if (f->failed) continue;
      if (wc[c].status != IBV_WC_SUCCESS) {
        fprintf(stderr, "flows: flow %d: %s %s\n", f->k, recv ? "receive" : "message",
                ibv_wc_status_str(wc[c].status));
        f->failed = 1;
        if (f->requester) publish_done(f, (int)wc[c].status);
        left--;
        continue;
      }
      if (recv) {
        if (++f->recvs_done == f->messages) {
          f->finished = 1;
          left--;
        } else if (f->recvs_posted < f->messages && post_recv(&h, f, (int)(wc[c].wr_id >> 1))) {
          fprintf(stderr, "flows: flow %d: post_recv refused\n", f->k);
          f->failed = 1;
          left--;
        }
      } else if (++f->completed == f->messages) {
        publish_done(f, 0);
        left--;
      }
    }
  }
  /* A responder keeps its QP (READ data, ACKs) until its requester is done. */
  char key[48];
  struct wl_done d;
  for (int i = 0; i < n; i++) {
    if (fl[i].requester) continue;
    snprintf(key, sizeof key, "wl.flow%d.done", fl[i].k);
    rdmasim_oob_get(key, &d, sizeof d);
  }
  int failed = 0;
  for (int i = 0; i < n; i++) {
    failed += fl[i].failed;
    if (fl[i].ah) ibv_destroy_ah(fl[i].ah);
    ibv_destroy_qp(fl[i].q);
  }
  ibv_dereg_mr(h.mr);
  ibv_destroy_cq(h.cq);
  ibv_dealloc_pd(h.pd);
  ibv_close_device(h.ctx);
  free(h.buf);
  free(fl);
  return failed ? 1 : 0;
}
