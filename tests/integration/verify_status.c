/* verify_status: provokes, through the libibverbs ABI, the completion statuses a verbs
 * program meets (man ibv_poll_cq), the ibv_post_send/ibv_post_recv errors with *bad_wr set
 * and ibv_modify_qp's EINVAL for a wrong attribute mask. One process: each case connects a
 * fresh pair of RC QPs on the same device to each other (loopback through the fabric), as
 * an error leaves both QPs in ERR. Plain verbs: it runs on rdmasim or a real NIC.
 *
 *   verify_status [-d DEV] [-g GIDX]
 *
 * Also the affiliated and unaffiliated asynchronous events (man ibv_get_async_event) of an
 * SRQ, a QP and a CQ, read from the context's async_fd with a timeout, and a UD QP's SQ
 * Error state (IBTA 10.3.1) after a failed send.
 *
 * Prints one "ok  :"/"FAIL:" line per check; exits 0 only if every check passed.
 */
#include <errno.h>
#include <poll.h>
#include <sys/mman.h>

#define PAIR_NAME "verify_status"
#pragma GCC diagnostic ignored "-Wunused-function" /* the TCP exchange of verbs_pair.h */
#include "verbs_pair.h"

#define BUF_SIZE 65536
#define ALL_REMOTE (IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC)

static struct ibv_context *ctx;
static struct ibv_pd *pd;
static struct ibv_port_attr port;
static int gidx;
static union ibv_gid gid;
static uint8_t *buf;
static struct ibv_mr *mr;    /* all of buf, every access */

/* Transport parameters of one pair (IBTA: timeout 4.096 us * 2^timeout). */
struct opts {
  uint8_t timeout, retry_cnt, rnr_retry, min_rnr_timer, max_rd_atomic, max_dest_rd_atomic;
  int b_access;              /* the responder QP's qp_access_flags */
  uint32_t max_send_wr;
  int cqe_a;                 /* the requester's CQ size (0: 64) */
};
static const struct opts defaults = {10, 2, 7, 1, 4, 4, ALL_REMOTE, 16, 0};

/* a sends to b; b is the responder. */
struct pair { struct ibv_cq *cqa, *cqb; struct ibv_qp *a, *b; };

static struct ibv_qp *new_qp(struct ibv_cq *cq, uint32_t max_send_wr) {
  struct ibv_qp_init_attr ia = {
      .send_cq = cq, .recv_cq = cq, .qp_type = IBV_QPT_RC,
      .cap = {.max_send_wr = max_send_wr, .max_recv_wr = 16, .max_send_sge = 2, .max_recv_sge = 1}};
  struct ibv_qp *qp = ibv_create_qp(pd, &ia);
  if (!qp) die("create_qp");
  return qp;
}

/* INIT -> RTR -> RTS towards QP number `dest` on this same port. */
static void to_rts(struct ibv_qp *qp, uint32_t dest, const struct opts *o) {
  const struct rc_params p = {o->timeout, o->retry_cnt, o->rnr_retry,
                              o->min_rnr_timer, o->max_rd_atomic, o->max_dest_rd_atomic};
  const struct rc_peer peer = {dest, 0, ah_to(&port, port.lid, gid.raw, gidx)};
  if (rc_to_rts(qp, port.active_mtu, &peer, 0, &p)) die("INIT -> RTR -> RTS");
}

static struct pair make_pair(const struct opts *o) {
  struct pair p;
  p.cqa = ibv_create_cq(ctx, o->cqe_a ? o->cqe_a : 64, NULL, NULL, 0);
  p.cqb = ibv_create_cq(ctx, 64, NULL, NULL, 0);
  if (!p.cqa || !p.cqb) die("create_cq");
  p.a = new_qp(p.cqa, o->max_send_wr);
  p.b = new_qp(p.cqb, 16);
  if (rc_to_init(p.a, ALL_REMOTE) || rc_to_init(p.b, o->b_access)) die("to INIT");
  to_rts(p.a, p.b->qp_num, o);
  to_rts(p.b, p.a->qp_num, o);
  return p;
}

static void free_pair(struct pair *p) {
  if (p->a) ibv_destroy_qp(p->a);
  if (p->b) ibv_destroy_qp(p->b);
  ibv_destroy_cq(p->cqa);
  ibv_destroy_cq(p->cqb);
}

static struct ibv_sge sge_at(size_t off, uint32_t len) {
  struct ibv_sge s = {(uintptr_t)(buf + off), len, mr->lkey};
  return s;
}

static int post(struct ibv_qp *qp, enum ibv_wr_opcode op, struct ibv_sge *s, uint64_t raddr, uint32_t rkey,
                uint64_t wr_id) {
  struct ibv_send_wr wr = {.wr_id = wr_id, .sg_list = s, .num_sge = 1, .opcode = op,
                           .send_flags = IBV_SEND_SIGNALED}, *bad;
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

static void post_recv_at(struct ibv_qp *qp, size_t off, uint32_t len, uint64_t wr_id) {
  struct ibv_sge s = sge_at(off, len);
  struct ibv_recv_wr wr = {.wr_id = wr_id, .sg_list = &s, .num_sge = 1}, *bad;
  if (ibv_post_recv(qp, &wr, &bad)) die("post_recv");
}

static const char *st(enum ibv_wc_status s) { return ibv_wc_status_str(s); }

/* Checks that the next completion of `cq` has `want` status (and wr_id). */
static void expect(struct ibv_cq *cq, enum ibv_wc_status want, uint64_t wr_id, const char *what) {
  struct ibv_wc wc = poll_one(cq);
  char line[256];
  snprintf(line, sizeof line, "%s: %s (got %s, wr_id %llu)", what, st(want), st(wc.status),
           (unsigned long long)wc.wr_id);
  check(wc.status == want && wc.wr_id == wr_id, line);
}

static enum ibv_qp_state state_of(struct ibv_qp *qp) {
  struct ibv_qp_attr a;
  struct ibv_qp_init_attr ia;
  if (ibv_query_qp(qp, &a, IBV_QP_STATE, &ia)) die("query_qp");
  return a.qp_state;
}

/* --- the cases --- */

static void local_errors(void) {
  /* man ibv_poll_cq: IBV_WC_LOC_PROT_ERR "the posted buffer ... is not a valid registered
   * memory region" (a bad lkey). */
  struct pair p = make_pair(&defaults);
  struct ibv_sge s = sge_at(0, 64);
  s.lkey = mr->lkey + 0x1000;
  post(p.a, IBV_WR_RDMA_WRITE, &s, (uintptr_t)(buf + 4096), mr->rkey, 1);
  expect(p.cqa, IBV_WC_LOC_PROT_ERR, 1, "WRITE from an unknown lkey");
  /* IBTA 10.3.1 / man ibv_poll_cq IBV_WC_WR_FLUSH_ERR: once in ERR, WRs complete flushed. */
  s = sge_at(0, 64);
  post(p.a, IBV_WR_RDMA_WRITE, &s, (uintptr_t)(buf + 4096), mr->rkey, 2);
  expect(p.cqa, IBV_WC_WR_FLUSH_ERR, 2, "WRITE posted after the error");
  check(state_of(p.a) == IBV_QPS_ERR, "requester QP in ERR after LOC_PROT_ERR");
  free_pair(&p);

  /* LOC_LEN_ERR at the requester: an atomic needs an 8-byte local buffer (mlx5 and rxe). */
  p = make_pair(&defaults);
  s = sge_at(0, 4);
  post(p.a, IBV_WR_ATOMIC_FETCH_AND_ADD, &s, (uintptr_t)(buf + 8192), mr->rkey, 3);
  expect(p.cqa, IBV_WC_LOC_LEN_ERR, 3, "atomic into a 4-byte buffer");
  free_pair(&p);

  /* LOC_QP_OP_ERR: a LOCAL_INV of a key that is no memory window (rxe: "invalid key"). */
  p = make_pair(&defaults);
  struct ibv_send_wr wr = {.wr_id = 4, .opcode = IBV_WR_LOCAL_INV, .send_flags = IBV_SEND_SIGNALED,
                           .invalidate_rkey = 0x00fedc00}, *bad;
  check(ibv_post_send(p.a, &wr, &bad) == 0, "LOCAL_INV of an unknown key is accepted at post");
  expect(p.cqa, IBV_WC_LOC_QP_OP_ERR, 4, "LOCAL_INV of an unknown key");
  free_pair(&p);
}

static void responder_errors(void) {
  /* man ibv_poll_cq: IBV_WC_LOC_LEN_ERR at the receiver whose buffer is too small; the
   * sender gets IBV_WC_REM_INV_REQ_ERR (NAK Invalid Request, as mlx5 reports it). */
  struct pair p = make_pair(&defaults);
  post_recv_at(p.b, 32768, 16, 10);
  post_recv_at(p.b, 32768 + 1024, 1024, 11);
  struct ibv_sge s = sge_at(0, 64);
  post(p.a, IBV_WR_SEND, &s, 0, 0, 12);
  expect(p.cqb, IBV_WC_LOC_LEN_ERR, 10, "64-byte SEND into a 16-byte receive (receiver)");
  expect(p.cqb, IBV_WC_WR_FLUSH_ERR, 11, "the next receive of the responder in ERR");
  expect(p.cqa, IBV_WC_REM_INV_REQ_ERR, 12, "64-byte SEND into a 16-byte receive (sender)");
  free_pair(&p);

  /* IBV_WC_REM_ACCESS_ERR (NAK Remote Access): a bad rkey, a range beyond the MR, an MR
   * without the remote right, a QP without the remote right. */
  struct ibv_mr *ro = ibv_reg_mr(pd, buf + 16384, 4096, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
  if (!ro) die("reg_mr (no remote read)");
  struct { const char *what; enum ibv_wr_opcode op; uint64_t raddr; uint32_t rkey; int b_access; } acc[] = {
      {"WRITE with a bad rkey", IBV_WR_RDMA_WRITE, (uintptr_t)buf, 0, ALL_REMOTE},
      {"WRITE beyond the end of the MR", IBV_WR_RDMA_WRITE, (uintptr_t)(buf + BUF_SIZE - 32), 1, ALL_REMOTE},
      {"READ from an MR without REMOTE_READ", IBV_WR_RDMA_READ, (uintptr_t)(buf + 16384), 2, ALL_REMOTE},
      {"WRITE to a QP without IBV_ACCESS_REMOTE_WRITE", IBV_WR_RDMA_WRITE, (uintptr_t)buf, 1,
       IBV_ACCESS_REMOTE_READ},
  };
  for (size_t i = 0; i < sizeof acc / sizeof acc[0]; i++) {
    struct opts o = defaults;
    o.b_access = acc[i].b_access;
    p = make_pair(&o);
    const uint32_t rkey = acc[i].rkey == 0 ? mr->rkey + 0x1000 : acc[i].rkey == 1 ? mr->rkey : ro->rkey;
    s = sge_at(0, 64);
    post(p.a, acc[i].op, &s, acc[i].raddr, rkey, 20 + i);
    expect(p.cqa, IBV_WC_REM_ACCESS_ERR, 20 + i, acc[i].what);
    check(state_of(p.b) == IBV_QPS_ERR, "responder QP in ERR after a remote access error");
    free_pair(&p);
  }
  ibv_dereg_mr(ro);

  /* REM_INV_REQ_ERR: an atomic at a VA that is not 8-byte aligned (IBTA 9.4.5: Invalid
   * Request), and a READ beyond the responder's max_dest_rd_atomic = 0 resources. */
  p = make_pair(&defaults);
  s = sge_at(0, 8);
  post(p.a, IBV_WR_ATOMIC_FETCH_AND_ADD, &s, (uintptr_t)(buf + 8192 + 4), mr->rkey, 30);
  expect(p.cqa, IBV_WC_REM_INV_REQ_ERR, 30, "atomic at a misaligned VA");
  free_pair(&p);
  struct opts o = defaults;
  o.max_dest_rd_atomic = 0;
  p = make_pair(&o);
  s = sge_at(0, 64);
  post(p.a, IBV_WR_RDMA_READ, &s, (uintptr_t)(buf + 4096), mr->rkey, 31);
  expect(p.cqa, IBV_WC_REM_INV_REQ_ERR, 31, "READ at a responder with max_dest_rd_atomic 0");
  free_pair(&p);

  /* REM_OP_ERR (NAK Remote Operational Error): the responder's MR is valid but its pages
   * are gone after registration, so its DMA engine cannot read them. They are replaced by
   * an inaccessible mapping rather than unmapped, so no later mmap (a CQ ring) reuses the
   * address. */
  uint8_t *gone = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (gone == MAP_FAILED) die("mmap");
  memset(gone, 1, 4096);
  struct ibv_mr *gmr = ibv_reg_mr(pd, gone, 4096, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ);
  if (!gmr) die("reg_mr (to be unmapped)");
  if (mmap(gone, 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0) != gone) die("mmap PROT_NONE");
  p = make_pair(&defaults);
  s = sge_at(0, 64);
  post(p.a, IBV_WR_RDMA_READ, &s, (uintptr_t)gone, gmr->rkey, 40);
  expect(p.cqa, IBV_WC_REM_OP_ERR, 40, "READ of an MR whose pages were unmapped");
  free_pair(&p);
  ibv_dereg_mr(gmr);
  munmap(gone, 4096);
}

static void retry_errors(void) {
  /* IBV_WC_RETRY_EXC_ERR: no ACK within (retry_cnt + 1) local ACK timeouts — the peer QP
   * was destroyed, or the QP points at a QP number nobody has. timeout 8 = 1.05 ms. */
  struct opts o = defaults;
  o.timeout = 8;
  o.retry_cnt = 1;
  struct pair p = make_pair(&o);
  ibv_destroy_qp(p.b);
  p.b = NULL;
  struct ibv_sge s = sge_at(0, 64);
  post(p.a, IBV_WR_RDMA_WRITE, &s, (uintptr_t)(buf + 4096), mr->rkey, 50);
  expect(p.cqa, IBV_WC_RETRY_EXC_ERR, 50, "WRITE to a destroyed peer QP");
  free_pair(&p);

  p.cqa = ibv_create_cq(ctx, 64, NULL, NULL, 0);
  p.cqb = ibv_create_cq(ctx, 64, NULL, NULL, 0);
  p.a = new_qp(p.cqa, 16);
  p.b = NULL;
  if (rc_to_init(p.a, ALL_REMOTE)) die("to INIT");
  to_rts(p.a, 0xabcde, &o);
  post(p.a, IBV_WR_RDMA_WRITE, &s, (uintptr_t)(buf + 4096), mr->rkey, 51);
  expect(p.cqa, IBV_WC_RETRY_EXC_ERR, 51, "WRITE to a QP number nobody has");
  free_pair(&p);

  /* IBV_WC_RNR_RETRY_EXC_ERR: no receive posted, rnr_retry 1 with min_rnr_timer 1 (10 us). */
  o = defaults;
  o.rnr_retry = 1;
  p = make_pair(&o);
  post(p.a, IBV_WR_SEND, &s, 0, 0, 52);
  expect(p.cqa, IBV_WC_RNR_RETRY_EXC_ERR, 52, "SEND with no receive posted");
  free_pair(&p);
}

static void post_errors(void) {
  /* man ibv_post_send: on failure *bad_wr points at the WR that failed. A QP in RESET or
   * INIT refuses sends (IBTA 10.8.2, EINVAL as mlx5); RESET refuses receives. */
  struct ibv_cq *cq = ibv_create_cq(ctx, 64, NULL, NULL, 0);
  struct ibv_qp *qp = new_qp(cq, 4);
  struct ibv_sge s = sge_at(0, 64);
  struct ibv_send_wr w[2] = {{.wr_id = 1, .sg_list = &s, .num_sge = 1, .opcode = IBV_WR_SEND},
                             {.wr_id = 2, .sg_list = &s, .num_sge = 1, .opcode = IBV_WR_SEND}};
  w[0].next = &w[1];
  struct ibv_send_wr *bad = NULL;
  check(ibv_post_send(qp, w, &bad) == EINVAL && bad == &w[0], "post_send in RESET: EINVAL, bad_wr = first");
  struct ibv_recv_wr r = {.wr_id = 3, .sg_list = &s, .num_sge = 1}, *rbad = NULL;
  check(ibv_post_recv(qp, &r, &rbad) == EINVAL && rbad == &r, "post_recv in RESET: EINVAL, bad_wr = it");
  if (rc_to_init(qp, ALL_REMOTE)) die("to INIT");
  bad = NULL;
  check(ibv_post_send(qp, w, &bad) == EINVAL && bad == &w[0], "post_send in INIT: EINVAL, bad_wr = first");

  /* Too many SGEs for the QP's max_send_sge: that WR fails, the ones before it are posted. */
  ibv_destroy_qp(qp);
  struct opts o = defaults;
  o.max_send_wr = 4;
  struct pair p = make_pair(&o);
  struct ibv_qp_attr qa;
  struct ibv_qp_init_attr ia;
  if (ibv_query_qp(p.a, &qa, IBV_QP_CAP, &ia)) die("query_qp");
  struct ibv_sge many[8];
  for (int i = 0; i < 8; i++) many[i] = sge_at(i * 8, 8);
  struct ibv_send_wr m[2] = {
      {.wr_id = 60, .sg_list = many, .num_sge = 1, .opcode = IBV_WR_RDMA_WRITE, .send_flags = IBV_SEND_SIGNALED},
      {.wr_id = 61, .sg_list = many, .num_sge = (int)qa.cap.max_send_sge + 1, .opcode = IBV_WR_RDMA_WRITE}};
  m[0].wr.rdma.remote_addr = m[1].wr.rdma.remote_addr = (uintptr_t)(buf + 4096);
  m[0].wr.rdma.rkey = m[1].wr.rdma.rkey = mr->rkey;
  m[0].next = &m[1];
  bad = NULL;
  check(qa.cap.max_send_sge + 1 <= 8 && ibv_post_send(p.a, m, &bad) == EINVAL && bad == &m[1],
        "post_send with max_send_sge + 1 SGEs: EINVAL, bad_wr = that WR");
  expect(p.cqa, IBV_WC_SUCCESS, 60, "the WR before it was posted and completes");

  /* A full send queue: max_send_wr WRs fit, the next is ENOMEM (mlx5 returns ENOMEM). */
  const uint32_t cap = qa.cap.max_send_wr;
  struct ibv_send_wr chain[64];
  check(cap + 1 <= 64, "max_send_wr small enough for the chain");
  for (uint32_t i = 0; i <= cap && i < 64; i++) {
    chain[i] = m[0];
    chain[i].wr_id = 100 + i;
    chain[i].send_flags = IBV_SEND_SIGNALED;
    chain[i].next = i < cap ? &chain[i + 1] : NULL;
  }
  bad = NULL;
  int rc = ibv_post_send(p.a, chain, &bad);
  char line[128];
  snprintf(line, sizeof line, "post_send of max_send_wr + 1 = %u WRs: ENOMEM, bad_wr = the last", cap + 1);
  check(rc == ENOMEM && bad == &chain[cap], line);
  for (uint32_t i = 0; i < cap; i++) expect(p.cqa, IBV_WC_SUCCESS, 100 + i, "a queued WR of the full queue");

  /* A full receive queue likewise. */
  if (ibv_query_qp(p.b, &qa, IBV_QP_CAP, &ia)) die("query_qp");
  const uint32_t rcap = qa.cap.max_recv_wr;
  struct ibv_recv_wr rchain[64];
  struct ibv_sge rs = sge_at(32768, 64);
  check(rcap + 1 <= 64, "max_recv_wr small enough for the chain");
  for (uint32_t i = 0; i <= rcap && i < 64; i++) {
    rchain[i] = (struct ibv_recv_wr){.wr_id = 200 + i, .sg_list = &rs, .num_sge = 1};
    rchain[i].next = i < rcap ? &rchain[i + 1] : NULL;
  }
  rbad = NULL;
  rc = ibv_post_recv(p.b, rchain, &rbad);
  snprintf(line, sizeof line, "post_recv of max_recv_wr + 1 = %u WRs: ENOMEM, bad_wr = the last", rcap + 1);
  check(rc == ENOMEM && rbad == &rchain[rcap], line);
  free_pair(&p);
  ibv_destroy_cq(cq);
}

/* --- asynchronous events (man ibv_get_async_event) --- */

/* Waits up to `ms` for an event on ctx->async_fd and reads it; 0 when none came (so a
 * missing event fails its check instead of blocking ibv_get_async_event forever). */
static int next_event(int ms, struct ibv_async_event *ev) {
  struct pollfd pfd = {.fd = ctx->async_fd, .events = POLLIN};
  if (poll(&pfd, 1, ms) != 1 || !(pfd.revents & POLLIN)) return 0;
  if (ibv_get_async_event(ctx, ev)) die("ibv_get_async_event");
  return 1;
}

/* Checks that the next event is `type` for `elem` (compared as a pointer), and acks it. */
static void expect_event(enum ibv_event_type type, const void *elem, const char *what) {
  struct ibv_async_event ev;
  char line[256];
  if (!next_event(5000, &ev)) {
    snprintf(line, sizeof line, "%s: %s (none within 5 s)", what, ibv_event_type_str(type));
    check(0, line);
    return;
  }
  const void *got = type == IBV_EVENT_SRQ_LIMIT_REACHED || type == IBV_EVENT_SRQ_ERR ? (const void *)ev.element.srq
                    : type == IBV_EVENT_CQ_ERR                                        ? (const void *)ev.element.cq
                                                                                      : (const void *)ev.element.qp;
  snprintf(line, sizeof line, "%s: %s (got %s)", what, ibv_event_type_str(type), ibv_event_type_str(ev.event_type));
  check(ev.event_type == type && got == elem, line);
  ibv_ack_async_event(&ev);
}

static void no_event(int ms, const char *what) {
  struct ibv_async_event ev;
  const int got = next_event(ms, &ev);
  char line[256];
  snprintf(line, sizeof line, "%s (got %s)", what, got ? ibv_event_type_str(ev.event_type) : "none");
  check(!got, line);
  if (got) ibv_ack_async_event(&ev);
}

static void async_events(void) {
  struct ibv_async_event ev;
  while (next_event(0, &ev)) ibv_ack_async_event(&ev); /* nothing of earlier cases is left */

  /* man ibv_modify_srq: setting srq_limit "arms the SRQ to produce an
   * IBV_EVENT_SRQ_LIMIT_REACHED 'low watermark' asynchronous event once the number of WRs in
   * the SRQ drops below srq_limit". 4 receives, limit 3: the first SEND leaves 3 (not
   * below), the second leaves 2 (below): the event, for that SRQ. */
  struct ibv_cq *cqa = ibv_create_cq(ctx, 64, NULL, NULL, 0), *cqb = ibv_create_cq(ctx, 64, NULL, NULL, 0);
  struct ibv_srq_init_attr sia = {.attr = {.max_wr = 16, .max_sge = 1}};
  struct ibv_srq *srq = ibv_create_srq(pd, &sia);
  if (!cqa || !cqb || !srq) die("create_cq / create_srq");
  struct ibv_qp_init_attr ia = {.send_cq = cqb, .recv_cq = cqb, .srq = srq, .qp_type = IBV_QPT_RC,
                                .cap = {.max_send_wr = 4, .max_send_sge = 1}};
  struct ibv_qp *a = new_qp(cqa, 16), *b = ibv_create_qp(pd, &ia);
  if (!b) die("create_qp on the SRQ");
  if (rc_to_init(a, ALL_REMOTE) || rc_to_init(b, ALL_REMOTE)) die("to INIT");
  to_rts(a, b->qp_num, &defaults);
  to_rts(b, a->qp_num, &defaults);
  for (int i = 0; i < 4; i++) {
    struct ibv_sge rs = sge_at(32768 + 64 * i, 64);
    struct ibv_recv_wr rw = {.wr_id = 70 + i, .sg_list = &rs, .num_sge = 1}, *rbad;
    if (ibv_post_srq_recv(srq, &rw, &rbad)) die("post_srq_recv");
  }
  struct ibv_srq_attr sa = {.srq_limit = 3};
  check(ibv_modify_srq(srq, &sa, IBV_SRQ_LIMIT) == 0, "ibv_modify_srq arms srq_limit 3 with 4 WRs posted");
  no_event(100, "no SRQ event while 4 WRs remain");
  struct ibv_sge s = sge_at(0, 64);
  post(a, IBV_WR_SEND, &s, 0, 0, 74);
  expect(cqb, IBV_WC_SUCCESS, 70, "SEND 1 into the SRQ (receiver)");
  expect(cqa, IBV_WC_SUCCESS, 74, "SEND 1 into the SRQ (sender)");
  no_event(100, "no SRQ event with 3 WRs left (not below the limit 3)");
  post(a, IBV_WR_SEND, &s, 0, 0, 75);
  expect(cqb, IBV_WC_SUCCESS, 71, "SEND 2 into the SRQ (receiver)");
  expect_event(IBV_EVENT_SRQ_LIMIT_REACHED, srq, "2 WRs left, below srq_limit 3");
  /* Armed "once": a third SEND (1 WR left) raises no second event until re-armed. */
  post(a, IBV_WR_SEND, &s, 0, 0, 76);
  expect(cqb, IBV_WC_SUCCESS, 72, "SEND 3 into the SRQ (receiver)");
  no_event(100, "no second SRQ event without re-arming");
  ibv_destroy_qp(a);
  ibv_destroy_qp(b);
  ibv_destroy_srq(srq);
  ibv_destroy_cq(cqa);
  ibv_destroy_cq(cqb);

  /* An affiliated QP error (IBTA 11.6.3): a WRITE with a bad rkey is a remote access
   * violation at the responder, which reports IBV_EVENT_QP_ACCESS_ERR for its QP (the
   * requester learns it from its completion, REM_ACCESS_ERR, and gets no event). */
  struct pair p = make_pair(&defaults);
  post(p.a, IBV_WR_RDMA_WRITE, &s, (uintptr_t)(buf + 4096), mr->rkey + 0x1000, 77);
  expect(p.cqa, IBV_WC_REM_ACCESS_ERR, 77, "WRITE with a bad rkey");
  expect_event(IBV_EVENT_QP_ACCESS_ERR, p.b, "the responder of the bad-rkey WRITE");
  no_event(100, "no event for the requester QP");
  free_pair(&p);

  /* CQ overrun (man ibv_get_async_event: IBV_EVENT_CQ_ERR "CQ is in error (CQ overrun)"):
   * more completions than the CQ can hold, none polled. The CQ holds cq->cqe entries and a
   * provider may round up to (a power of two) - 1, so 2 * (cqe + 1) + 1 surely overflows. */
  struct opts o = defaults;
  o.max_send_wr = 32;
  o.cqe_a = 4;
  p = make_pair(&o);
  const int n = 2 * (p.cqa->cqe + 1) + 1;
  char line[128];
  snprintf(line, sizeof line, "a CQ of %d entries overflows with %d completions within max_send_wr 32", p.cqa->cqe, n);
  check(n <= 32, line);
  for (int i = 0; i < n && i < 32; i++) post(p.a, IBV_WR_RDMA_WRITE, &s, (uintptr_t)(buf + 4096), mr->rkey, 80 + i);
  expect_event(IBV_EVENT_CQ_ERR, p.cqa, "signaled WRITEs into a CQ nobody polls");
  free_pair(&p);
}

/* A UD QP of this port, in RTS (QP and CQ on `cq`). */
static struct ibv_qp *ud_qp(struct ibv_cq *cq) {
  struct ibv_qp_init_attr ia = {.send_cq = cq, .recv_cq = cq, .qp_type = IBV_QPT_UD,
                                .cap = {.max_send_wr = 4, .max_recv_wr = 4, .max_send_sge = 1, .max_recv_sge = 1}};
  struct ibv_qp *qp = ibv_create_qp(pd, &ia);
  if (!qp) die("create_qp UD");
  struct ibv_qp_attr a = {.qp_state = IBV_QPS_INIT, .port_num = 1, .qkey = 0x11111111};
  if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY)) die("UD to INIT");
  a.qp_state = IBV_QPS_RTR;
  if (ibv_modify_qp(qp, &a, IBV_QP_STATE)) die("UD to RTR");
  a.qp_state = IBV_QPS_RTS;
  a.sq_psn = 0;
  if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN)) die("UD to RTS");
  return qp;
}

static int ud_post(struct ibv_qp *qp, struct ibv_ah *ah, uint32_t dest, size_t off, uint32_t len, uint64_t wr_id) {
  struct ibv_sge s = sge_at(off, len);
  struct ibv_send_wr wr = {.wr_id = wr_id, .sg_list = &s, .num_sge = 1, .opcode = IBV_WR_SEND,
                           .send_flags = IBV_SEND_SIGNALED}, *bad;
  wr.wr.ud.ah = ah;
  wr.wr.ud.remote_qpn = dest;
  wr.wr.ud.remote_qkey = 0x11111111;
  return ibv_post_send(qp, &wr, &bad);
}

static void send_queue_error(void) {
  /* IBTA 10.3.1: a UD (or UC) send WR that completes in error moves the QP to the SQ Error
   * state, not ERR: later sends are flushed, receives still work, and ibv_modify_qp
   * SQE->RTS (IBV_QP_STATE alone) recovers. The error: a message above the path MTU. */
  struct ibv_cq *cq1 = ibv_create_cq(ctx, 16, NULL, NULL, 0), *cq2 = ibv_create_cq(ctx, 16, NULL, NULL, 0);
  if (!cq1 || !cq2) die("create_cq");
  struct ibv_qp *q1 = ud_qp(cq1), *q2 = ud_qp(cq2);
  struct ibv_ah_attr aa = {.dlid = port.lid, .port_num = 1};
  if (port.link_layer == IBV_LINK_LAYER_ETHERNET) {
    aa.is_global = 1;
    aa.grh.dgid = gid;
    aa.grh.sgid_index = gidx;
    aa.grh.hop_limit = 64;
  }
  struct ibv_ah *ah = ibv_create_ah(pd, &aa);
  if (!ah) die("create_ah");
  const uint32_t mtu = 128u << port.active_mtu; /* IBV_MTU_256 = 1 ... IBV_MTU_4096 = 5 */
  check(ud_post(q1, ah, q2->qp_num, 0, mtu + 1, 90) == 0, "UD SEND of path MTU + 1 bytes is accepted at post");
  expect(cq1, IBV_WC_LOC_LEN_ERR, 90, "UD SEND above the path MTU");
  check(state_of(q1) == IBV_QPS_SQE, "the UD QP is in SQE after its send error");
  ud_post(q1, ah, q2->qp_num, 0, 64, 91);
  expect(cq1, IBV_WC_WR_FLUSH_ERR, 91, "a SEND posted in SQE");
  /* Its receive queue works on: q2 sends to it (the payload after the 40 B GRH space). */
  post_recv_at(q1, 32768, 40 + 64, 92);
  ud_post(q2, ah, q1->qp_num, 0, 64, 93);
  expect(cq2, IBV_WC_SUCCESS, 93, "q2's SEND to the QP in SQE");
  expect(cq1, IBV_WC_SUCCESS, 92, "the QP in SQE receives");
  struct ibv_qp_attr a = {.qp_state = IBV_QPS_RTS};
  check(ibv_modify_qp(q1, &a, IBV_QP_STATE) == 0, "ibv_modify_qp SQE->RTS: 0");
  check(state_of(q1) == IBV_QPS_RTS, "the UD QP is in RTS again");
  post_recv_at(q2, 32768 + 4096, 40 + 64, 94);
  ud_post(q1, ah, q2->qp_num, 0, 64, 95);
  expect(cq1, IBV_WC_SUCCESS, 95, "a SEND after SQE->RTS");
  expect(cq2, IBV_WC_SUCCESS, 94, "and its receive");
  ibv_destroy_ah(ah);
  ibv_destroy_qp(q1);
  ibv_destroy_qp(q2);
  ibv_destroy_cq(cq1);
  ibv_destroy_cq(cq2);
}

static void modify_errors(void) {
  /* man ibv_modify_qp: the required and optional attributes per transition (IBTA 11.2.1
   * table); a missing required one or one not allowed is EINVAL, and the QP is unchanged. */
  struct ibv_cq *cq = ibv_create_cq(ctx, 16, NULL, NULL, 0);
  struct ibv_qp *qp = new_qp(cq, 4);
  struct ibv_qp_attr a = {.qp_state = IBV_QPS_INIT, .port_num = 1, .qp_access_flags = 0};
  check(ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_ACCESS_FLAGS) == EINVAL,
        "RESET->INIT without IBV_QP_PORT: EINVAL");
  check(state_of(qp) == IBV_QPS_RESET, "the QP stays in RESET");
  check(ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS |
                                  IBV_QP_SQ_PSN) == EINVAL,
        "RESET->INIT with IBV_QP_SQ_PSN (not allowed there): EINVAL");
  check(rc_to_init(qp, 0) == 0, "RESET->INIT with the right mask: 0");
  memset(&a, 0, sizeof a);
  a.qp_state = IBV_QPS_RTR;
  a.path_mtu = port.active_mtu;
  check(ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PATH_MTU) == EINVAL,
        "INIT->RTR without AV, DEST_QPN, RQ_PSN...: EINVAL");
  a.qp_state = IBV_QPS_RTS;
  check(ibv_modify_qp(qp, &a, IBV_QP_STATE) == EINVAL, "INIT->RTS (no such transition): EINVAL");
  check(state_of(qp) == IBV_QPS_INIT, "the QP stays in INIT");
  ibv_destroy_qp(qp);
  ibv_destroy_cq(cq);
}

int main(int argc, char **argv) {
  const struct pair_args args = parse_args(argc, argv, 0);
  setvbuf(stdout, NULL, _IONBF, 0); /* progress is visible if a case hangs */
  gidx = args.gidx;
  struct ibv_device **list;
  ctx = open_named(args.dev, &list);
  if (ibv_query_port(ctx, 1, &port)) die("query_port");
  if (ibv_query_gid(ctx, 1, gidx, &gid)) die("query_gid");
  pd = ibv_alloc_pd(ctx);
  if (!pd) die("alloc_pd");
  if (posix_memalign((void **)&buf, 4096, BUF_SIZE)) die("memalign");
  memset(buf, 0x5a, BUF_SIZE);
  mr = ibv_reg_mr(pd, buf, BUF_SIZE, IBV_ACCESS_LOCAL_WRITE | ALL_REMOTE);
  if (!mr) die("reg_mr");

  async_events();
  local_errors();
  responder_errors();
  retry_errors();
  post_errors();
  modify_errors();
  send_queue_error();

  ibv_dereg_mr(mr);
  ibv_dealloc_pd(pd);
  ibv_close_device(ctx);
  ibv_free_device_list(list);
  printf("verify_status: %d failures\n", failures);
  return failures ? 1 : 0;
}
