/* What the examples share: one device, a PD, a registered buffer, a CQ and RC QPs connected
 * through rdmasim/oob.h (each side publishes its QP under a key and reads the peer's) and
 * rdmasim/connect.h. Plain verbs: the same code runs in a study (virtual time), through the
 * daemon, or on a real NIC. */
#pragma once

#include <infiniband/verbs.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rdmasim/connect.h"
#include "rdmasim/oob.h"

struct ex_dev {
  struct ibv_context *ctx;
  struct ibv_pd *pd;
  struct ibv_cq *cq;
  struct ibv_mr *mr;
  uint8_t *buf;
  size_t len;
  struct rdmasim_addr addr;
};

struct ex_end { uint32_t qpn; struct rdmasim_addr addr; };

static int ex_open(struct ex_dev *d, size_t len, int cqe) {
  struct ibv_device **list = ibv_get_device_list(NULL);
  if (!list || !list[0]) return 1;
  d->ctx = ibv_open_device(list[0]);
  ibv_free_device_list(list);
  if (!d->ctx) return 2;
  if (rdmasim_port_addr(d->ctx, &d->addr)) return 3;
  d->pd = ibv_alloc_pd(d->ctx);
  d->cq = ibv_create_cq(d->ctx, cqe, NULL, NULL, 0);
  d->len = len;
  d->buf = calloc(1, len);
  d->mr = d->pd && d->buf ? ibv_reg_mr(d->pd, d->buf, len, IBV_ACCESS_LOCAL_WRITE) : NULL;
  return d->cq && d->mr ? 0 : 5;
}

static void ex_close(struct ex_dev *d) {
  ibv_dereg_mr(d->mr);
  ibv_destroy_cq(d->cq);
  ibv_dealloc_pd(d->pd);
  ibv_close_device(d->ctx);
  free(d->buf);
}

static struct ibv_qp *ex_qp(struct ex_dev *d, int depth) {
  struct ibv_qp_init_attr a = {.send_cq = d->cq, .recv_cq = d->cq, .qp_type = IBV_QPT_RC,
                               .cap = {.max_send_wr = (uint32_t)depth, .max_recv_wr = (uint32_t)depth,
                                       .max_send_sge = 1, .max_recv_sge = 1}};
  return ibv_create_qp(d->pd, &a);
}

/* Publishes qp as `mine`, reads `theirs` (waiting for it) and takes qp to RTS towards it
 * (rdmasim/connect.h: 1024 B MTU, no remote access, no READs). */
static int ex_connect(struct ex_dev *d, struct ibv_qp *qp, const char *mine, const char *theirs) {
  struct ex_end me = {qp->qp_num, d->addr}, peer;
  if (rdmasim_oob_put(mine, &me, sizeof me) || rdmasim_oob_get(theirs, &peer, sizeof peer)) return 1;
  const struct rdmasim_rc_opts o = {IBV_MTU_1024, 0, 0, 0};
  const int step = rdmasim_rc_connect(qp, peer.qpn, &peer.addr, &o);
  return step ? 1 + step : 0;
}

static int ex_post_recv(struct ex_dev *d, struct ibv_qp *qp, size_t off, uint32_t len, uint64_t id) {
  struct ibv_sge s = {(uintptr_t)(d->buf + off), len, d->mr->lkey};
  struct ibv_recv_wr wr = {.wr_id = id, .sg_list = &s, .num_sge = 1}, *bad;
  return ibv_post_recv(qp, &wr, &bad);
}

static int ex_post_send(struct ex_dev *d, struct ibv_qp *qp, size_t off, uint32_t len, uint64_t id) {
  struct ibv_sge s = {(uintptr_t)(d->buf + off), len, d->mr->lkey};
  struct ibv_send_wr wr = {.wr_id = id, .sg_list = &s, .num_sge = 1, .opcode = IBV_WR_SEND,
                           .send_flags = IBV_SEND_SIGNALED}, *bad;
  return ibv_post_send(qp, &wr, &bad);
}

/* The next successful completion (busy polling); 0, or -1 on a completion error. */
static int ex_wait(struct ex_dev *d, struct ibv_wc *wc) {
  int n;
  while ((n = ibv_poll_cq(d->cq, 1, wc)) == 0) {}
  if (n < 0 || wc->status != IBV_WC_SUCCESS) {
    fprintf(stderr, "completion error: %s\n", n < 0 ? "poll failed" : ibv_wc_status_str(wc->status));
    return -1;
  }
  return 0;
}
