/* verify_xrc: XRC through the libibverbs ABI (man ibv_open_xrcd, ibv_create_srq_ex,
 * ibv_create_qp_ex, ibv_open_qp, ibv_get_srq_num, ibv_post_send's qp_type.xrc.remote_srqn,
 * ibv_wr_set_xrc_srqn). One process on one port: an XRC initiator (IBV_QPT_XRC_SEND) sends
 * to an XRC target (IBV_QPT_XRC_RECV), and each request's remote SRQ number chooses the
 * XRC SRQ, so the CQ, its receive lands in. Bytes are checked for SEND, RDMA WRITE, READ
 * and a fetch-and-add; the refusals and remote errors are the kernel's and IBTA's:
 *  - ib_uverbs_open_xrcd: a file with no domain and no O_CREAT is EAGAIN, O_EXCL on an
 *    existing one EINVAL; two opens of one file are one domain (a target created in one is
 *    opened through the other);
 *  - an XRC target lives while any handle holds it (ibv_open_qp's, after its creator's is
 *    destroyed);
 *  - a request naming no XRC SRQ of the target's domain: NAK Invalid Request, seen by the
 *    initiator as IBV_WC_REM_INV_REQ_ERR; a remote access to an MR outside the PD of the
 *    SRQ named: NAK Remote Access, IBV_WC_REM_ACCESS_ERR (the XRC SRQ's PD protects it).
 *
 *   verify_xrc [-d DEV] [-g GIDX]
 *
 * Prints one "ok  :"/"FAIL:" line per check; exits 0 only if every check passed.
 */
#define PAIR_NAME "verify_xrc"
#pragma GCC diagnostic ignored "-Wunused-function" /* the TCP exchange of verbs_pair.h */
#include <fcntl.h>
#include <sys/stat.h>

#include "loopback.h"

#define BUF 8192

static int null_errno(const void *p, int want) { return p == NULL && errno == want; }

static struct ibv_qp *initiator(struct ibv_cq *cq, uint64_t send_ops) {
  struct ibv_qp_init_attr_ex a = {
      .send_cq = cq, .qp_type = IBV_QPT_XRC_SEND,
      .cap = {.max_send_wr = 16, .max_send_sge = 1},
      .comp_mask = IBV_QP_INIT_ATTR_PD | (send_ops ? IBV_QP_INIT_ATTR_SEND_OPS_FLAGS : 0),
      .pd = pd, .send_ops_flags = send_ops};
  return ibv_create_qp_ex(ctx, &a);
}

static struct ibv_qp *target(struct ibv_xrcd *x) {
  struct ibv_qp_init_attr_ex a = {.qp_type = IBV_QPT_XRC_RECV, .comp_mask = IBV_QP_INIT_ATTR_XRCD,
                                  .xrcd = x};
  return ibv_create_qp_ex(ctx, &a);
}

/* The two halves connected: the initiator to RTS, the target to RTR (a responder only),
 * each with the attributes ibv_modify_qp(3) requires of its type. 0 or the first errno. */
static int connect_xrc(struct ibv_qp *ini, struct ibv_qp *tgt) {
  const int access = ALL_REMOTE;
  if (rc_to_init(ini, 0) || rc_to_init(tgt, access)) return -1;
  struct ibv_qp_attr a = {.qp_state = IBV_QPS_RTR, .path_mtu = port.active_mtu,
                          .dest_qp_num = tgt->qp_num, .rq_psn = 0,
                          .ah_attr = ah_to(&port, port.lid, gid.raw, gidx)};
  int rc = ibv_modify_qp(ini, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
                                      IBV_QP_RQ_PSN);
  if (rc) return rc;
  a.dest_qp_num = ini->qp_num;
  a.max_dest_rd_atomic = 4;
  a.min_rnr_timer = 12;
  rc = ibv_modify_qp(tgt, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
                                  IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER);
  if (rc) return rc;
  struct ibv_qp_attr r = {.qp_state = IBV_QPS_RTS, .sq_psn = 0, .timeout = 14, .retry_cnt = 7,
                          .rnr_retry = 7, .max_rd_atomic = 4};
  return ibv_modify_qp(ini, &r, IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
                                    IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC);
}

/* One signaled request of `op` from the initiator to XRC SRQ `srqn` (loopback.h). */
static int xpost(struct ibv_qp *qp, enum ibv_wr_opcode op, void *addr, uint32_t len, uint32_t lkey,
                 uint32_t srqn, uint64_t raddr, uint32_t rkey, uint64_t wr_id) {
  return lb_post_to(qp, op, addr, len, lkey, raddr, rkey, wr_id, srqn);
}

static void fill(uint8_t *p, size_t n, uint8_t seed) {
  for (size_t i = 0; i < n; i++) p[i] = (uint8_t)(seed + i * 13);
}

/* A fresh initiator and target in `x`, connected; for the cases that leave them in ERR. */
static void fresh(struct ibv_cq *cq, struct ibv_xrcd *x, struct ibv_qp **ini, struct ibv_qp **tgt) {
  *ini = initiator(cq, 0);
  *tgt = target(x);
  if (!*ini || !*tgt || connect_xrc(*ini, *tgt)) die("a fresh XRC pair");
}

int main(int argc, char **argv) {
  lb_open(argc, argv);
  struct ibv_device_attr da;
  if (ibv_query_device(ctx, &da)) die("query_device");
  check((da.device_cap_flags & IBV_DEVICE_XRC) != 0, "ibv_query_device reports IBV_DEVICE_XRC");

  /* Domains. The file names the domain every process opening it shares. */
  char path[] = "/tmp/verify_xrc.XXXXXX";
  int fd = mkstemp(path);
  if (fd < 0) die("mkstemp");
  struct ibv_xrcd_init_attr no_oflags = {.comp_mask = IBV_XRCD_INIT_ATTR_FD, .fd = -1};
  errno = 0;
  check(null_errno(ibv_open_xrcd(ctx, &no_oflags), EINVAL),
        "ibv_open_xrcd without IBV_XRCD_INIT_ATTR_OFLAGS: NULL, EINVAL (ibv_cmd_open_xrcd)");
  errno = 0;
  check(null_errno(lb_open_xrcd(fd, 0), EAGAIN), "ibv_open_xrcd of a file with no domain, no O_CREAT: NULL, EAGAIN");
  int closed_fd = dup(fd);
  close(closed_fd);
  errno = 0;
  check(null_errno(lb_open_xrcd(closed_fd, O_CREAT), EBADF), "ibv_open_xrcd of a closed fd: NULL, EBADF");
  struct ibv_xrcd *x = lb_open_xrcd(fd, O_CREAT);
  check(x != NULL && x->context == ctx, "ibv_open_xrcd(fd, O_CREAT) makes the file's domain");
  if (!x) die("open_xrcd");
  errno = 0;
  check(null_errno(lb_open_xrcd(fd, O_CREAT | O_EXCL), EINVAL),
        "ibv_open_xrcd(O_CREAT | O_EXCL) of a file that has a domain: NULL, EINVAL");
  struct ibv_xrcd *x2 = lb_open_xrcd(fd, 0);
  check(x2 != NULL, "ibv_open_xrcd(fd, 0) opens the file's domain again");
  struct ibv_xrcd *own = lb_open_xrcd(-1, O_CREAT);
  check(own != NULL, "ibv_open_xrcd(-1, O_CREAT): a domain of its own");
  if (!x2 || !own) die("open_xrcd");

  /* XRC SRQs: two in x, each with its CQ, and one in the private domain. */
  struct ibv_cq *cqi = ibv_create_cq(ctx, 64, NULL, NULL, 0);
  struct ibv_cq *cq1 = ibv_create_cq(ctx, 64, NULL, NULL, 0);
  struct ibv_cq *cq2 = ibv_create_cq(ctx, 64, NULL, NULL, 0);
  if (!cqi || !cq1 || !cq2) die("create_cq");
  struct ibv_srq_init_attr_ex no_cq = {
      .attr = {.max_wr = 4, .max_sge = 1},
      .comp_mask = IBV_SRQ_INIT_ATTR_TYPE | IBV_SRQ_INIT_ATTR_PD | IBV_SRQ_INIT_ATTR_XRCD,
      .srq_type = IBV_SRQT_XRC, .pd = pd, .xrcd = x};
  errno = 0;
  check(null_errno(ibv_create_srq_ex(ctx, &no_cq), EINVAL), "an XRC SRQ without its CQ: NULL, EINVAL");
  struct ibv_srq *s1 = lb_xrc_srq(x, cq1), *s2 = lb_xrc_srq(x, cq2), *s_own = lb_xrc_srq(own, cq2);
  check(s1 && s2 && s_own, "ibv_create_srq_ex makes XRC SRQs");
  if (!s1 || !s2 || !s_own) die("xrc srq");
  uint32_t n1 = 0, n2 = 0, n_own = 0;
  check(ibv_get_srq_num(s1, &n1) == 0 && ibv_get_srq_num(s2, &n2) == 0 &&
        ibv_get_srq_num(s_own, &n_own) == 0 && n1 != n2 && n1 != n_own && n2 != n_own,
        "ibv_get_srq_num: each XRC SRQ has its own number");

  /* QPs. */
  struct ibv_qp_init_attr_ex no_xrcd = {.qp_type = IBV_QPT_XRC_RECV, .comp_mask = IBV_QP_INIT_ATTR_PD, .pd = pd};
  errno = 0;
  check(null_errno(ibv_create_qp_ex(ctx, &no_xrcd), EINVAL), "an XRC target without IBV_QP_INIT_ATTR_XRCD: NULL, EINVAL");
  struct ibv_qp *ini = initiator(cqi, 0), *tgt = target(x);
  check(ini && ini->qp_type == IBV_QPT_XRC_SEND && tgt && tgt->qp_type == IBV_QPT_XRC_RECV,
        "ibv_create_qp_ex makes an XRC initiator and an XRC target");
  if (!ini || !tgt) die("xrc qps");
  check(rc_to_init(ini, 0) == 0, "initiator RESET -> INIT");
  struct ibv_qp_attr bad = {.qp_state = IBV_QPS_RTR, .path_mtu = port.active_mtu, .dest_qp_num = tgt->qp_num,
                            .max_dest_rd_atomic = 4, .ah_attr = ah_to(&port, port.lid, gid.raw, gidx)};
  check(ibv_modify_qp(ini, &bad, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
                                     IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC) == EINVAL,
        "initiator INIT -> RTR with MAX_DEST_RD_ATOMIC (a responder attribute it has not): EINVAL");
  struct ibv_qp_attr back = {.qp_state = IBV_QPS_RESET};
  ibv_modify_qp(ini, &back, IBV_QP_STATE);
  check(connect_xrc(ini, tgt) == 0, "initiator to RTS and target to RTR with their types' attributes");

  uint8_t *src = calloc(1, BUF), *dst1 = calloc(1, BUF), *dst2 = calloc(1, BUF), *mem = calloc(1, BUF);
  struct ibv_pd *pd2 = ibv_alloc_pd(ctx);
  if (!src || !dst1 || !dst2 || !mem || !pd2) die("alloc");
  struct ibv_mr *msrc = ibv_reg_mr(pd, src, BUF, IBV_ACCESS_LOCAL_WRITE);
  struct ibv_mr *m1 = ibv_reg_mr(pd, dst1, BUF, IBV_ACCESS_LOCAL_WRITE);
  struct ibv_mr *m2 = ibv_reg_mr(pd, dst2, BUF, IBV_ACCESS_LOCAL_WRITE);
  struct ibv_mr *mmem = ibv_reg_mr(pd, mem, BUF, IBV_ACCESS_LOCAL_WRITE | ALL_REMOTE);
  struct ibv_mr *mother = ibv_reg_mr(pd2, mem, BUF, IBV_ACCESS_LOCAL_WRITE | ALL_REMOTE);
  if (!msrc || !m1 || !m2 || !mmem || !mother) die("reg_mr");

  /* SENDs: the remote SRQ number picks the SRQ, and so the CQ the receive completes on. */
  struct ibv_wc wc;
  fill(src, BUF, 1);
  lb_post_srq_recv(s1, dst1, BUF, m1->lkey, 101);
  lb_post_srq_recv(s2, dst2, BUF, m2->lkey, 201);
  xpost(ini, IBV_WR_SEND, src, 5000, msrc->lkey, n2, 0, 0, 1);  /* two packets at MTU 4096 */
  lb_expect(cqi, IBV_WC_SUCCESS, 1, "SEND to the second XRC SRQ completes at the initiator");
  if (lb_poll(cq2, &wc, "receive on the second SRQ's CQ") == 0)
    check(wc.status == IBV_WC_SUCCESS && wc.wr_id == 201 && wc.opcode == IBV_WC_RECV &&
          wc.byte_len == 5000 && wc.qp_num == tgt->qp_num && memcmp(dst2, src, 5000) == 0,
          "the SEND lands in the second SRQ's buffer, byte for byte; its CQ reports the target's QP number");
  fill(src, BUF, 2);
  xpost(ini, IBV_WR_SEND, src, 300, msrc->lkey, n1, 0, 0, 2);
  lb_expect(cqi, IBV_WC_SUCCESS, 2, "SEND to the first XRC SRQ completes at the initiator");
  if (lb_poll(cq1, &wc, "receive on the first SRQ's CQ") == 0)
    check(wc.status == IBV_WC_SUCCESS && wc.wr_id == 101 && wc.byte_len == 300 && memcmp(dst1, src, 300) == 0,
          "the SEND lands in the first SRQ's buffer, byte for byte");
  check(ibv_poll_cq(cq1, 1, &wc) == 0 && ibv_poll_cq(cq2, 1, &wc) == 0, "each receive completed once, on its own CQ");

  /* RDMA through the target: the MR is checked in the PD of the SRQ the request names. */
  fill(src, BUF, 3);
  xpost(ini, IBV_WR_RDMA_WRITE, src, 6000, msrc->lkey, n1, (uintptr_t)mem, mmem->rkey, 3);
  lb_expect(cqi, IBV_WC_SUCCESS, 3, "RDMA WRITE through the target");
  check(memcmp(mem, src, 6000) == 0, "the WRITE's bytes are in place");
  memset(dst1, 0, BUF);
  struct ibv_mr *rd = m1;
  xpost(ini, IBV_WR_RDMA_READ, dst1, 6000, rd->lkey, n1, (uintptr_t)mem, mmem->rkey, 4);
  lb_expect(cqi, IBV_WC_SUCCESS, 4, "RDMA READ through the target");
  check(memcmp(dst1, mem, 6000) == 0, "the READ brings the same bytes back");
  uint64_t *counter = (uint64_t *)(mem + 4096);
  *counter = 37;
  uint64_t *orig = (uint64_t *)dst1;
  *orig = 0;
  xpost(ini, IBV_WR_ATOMIC_FETCH_AND_ADD, orig, 8, m1->lkey, n1, (uintptr_t)counter, mmem->rkey, 5);
  lb_expect(cqi, IBV_WC_SUCCESS, 5, "fetch-and-add through the target");
  check(*orig == 37 && *counter == 38, "the atomic returns 37 and leaves 37 + 1 = 38");

  /* The ibv_wr_* path: ibv_wr_set_xrc_srqn names the SRQ. */
  struct ibv_qp *inix = initiator(cqi, IBV_QP_EX_WITH_SEND);
  struct ibv_qp *tgtx = target(x);
  check(inix && tgtx && connect_xrc(inix, tgtx) == 0, "an ibv_qp_ex initiator and its target connect");
  if (inix && tgtx) {
    struct ibv_qp_ex *qx = ibv_qp_to_qp_ex(inix);
    fill(src, BUF, 4);
    lb_post_srq_recv(s2, dst2, BUF, m2->lkey, 202);
    ibv_wr_start(qx);
    qx->wr_id = 6;
    qx->wr_flags = IBV_SEND_SIGNALED;
    ibv_wr_send(qx);
    ibv_wr_set_xrc_srqn(qx, n2);
    ibv_wr_set_sge(qx, msrc->lkey, (uintptr_t)src, 700);
    check(ibv_wr_complete(qx) == 0, "ibv_wr_send + ibv_wr_set_xrc_srqn: wr_complete 0");
    lb_expect(cqi, IBV_WC_SUCCESS, 6, "the ibv_wr_* SEND completes");
    if (lb_poll(cq2, &wc, "its receive") == 0)
      check(wc.wr_id == 202 && wc.byte_len == 700 && wc.qp_num == tgtx->qp_num && memcmp(dst2, src, 700) == 0,
            "it lands in the SRQ ibv_wr_set_xrc_srqn named, byte for byte");
  }

  /* Queues a type does not have. */
  struct ibv_recv_wr rw = {.wr_id = 9}, *bad_r;
  check(ibv_post_recv(ini, &rw, &bad_r) == EINVAL, "ibv_post_recv on an XRC initiator: EINVAL (it has no receive queue)");
  struct ibv_send_wr sw = {.wr_id = 9, .opcode = IBV_WR_SEND}, *bad_s;
  check(ibv_post_send(tgt, &sw, &bad_s) == EINVAL, "ibv_post_send on an XRC target: EINVAL (it has no send queue)");

  /* ibv_open_qp: the target through the other open of the same file's domain. */
  struct ibv_qp_open_attr oa = {.comp_mask = IBV_QP_OPEN_ATTR_NUM | IBV_QP_OPEN_ATTR_XRCD | IBV_QP_OPEN_ATTR_TYPE,
                                .qp_num = tgt->qp_num, .xrcd = x2, .qp_type = IBV_QPT_XRC_RECV};
  struct ibv_qp *opened = ibv_open_qp(ctx, &oa);
  check(opened && opened->qp_num == tgt->qp_num && opened->qp_type == IBV_QPT_XRC_RECV &&
        opened->state == IBV_QPS_RTR,
        "ibv_open_qp through the file's second open: the same target, in RTR");
  struct ibv_qp_open_attr wrong = oa;
  wrong.xrcd = own;
  errno = 0;
  check(null_errno(ibv_open_qp(ctx, &wrong), EINVAL), "ibv_open_qp of a target of another domain: NULL, EINVAL");
  wrong = oa;
  wrong.qp_type = IBV_QPT_RC;
  errno = 0;
  check(null_errno(ibv_open_qp(ctx, &wrong), EINVAL), "ibv_open_qp of a type other than XRC_RECV: NULL, EINVAL");
  check(ibv_destroy_qp(tgt) == 0, "ibv_destroy_qp of the creator's handle");
  fill(src, BUF, 5);
  lb_post_srq_recv(s1, dst1, BUF, m1->lkey, 102);
  xpost(ini, IBV_WR_SEND, src, 64, msrc->lkey, n1, 0, 0, 7);
  lb_expect(cqi, IBV_WC_SUCCESS, 7, "a SEND after the creator's handle is gone: the opened handle keeps the target");
  if (lb_poll(cq1, &wc, "its receive") == 0)
    check(wc.wr_id == 102 && memcmp(dst1, src, 64) == 0, "and it lands, byte for byte");
  check(ibv_destroy_qp(opened) == 0, "ibv_destroy_qp of the last handle");
  check(ibv_destroy_qp(ini) == 0, "ibv_destroy_qp of the initiator");

  /* Remote errors. An SRQ of another domain (or none): Invalid Request. */
  fresh(cqi, x, &ini, &tgt);
  xpost(ini, IBV_WR_SEND, src, 64, msrc->lkey, n_own, 0, 0, 8);
  lb_expect(cqi, IBV_WC_REM_INV_REQ_ERR, 8, "a SEND naming an XRC SRQ of another domain");
  ibv_destroy_qp(ini);
  ibv_destroy_qp(tgt);
  fresh(cqi, x, &ini, &tgt);
  xpost(ini, IBV_WR_SEND, src, 64, msrc->lkey, 0xfffff0, 0, 0, 9);
  lb_expect(cqi, IBV_WC_REM_INV_REQ_ERR, 9, "a SEND naming no XRC SRQ at all");
  ibv_destroy_qp(ini);
  ibv_destroy_qp(tgt);
  /* An MR of another PD than the named SRQ's: Remote Access. */
  fresh(cqi, x, &ini, &tgt);
  xpost(ini, IBV_WR_RDMA_WRITE, src, 64, msrc->lkey, n1, (uintptr_t)mem, mother->rkey, 10);
  lb_expect(cqi, IBV_WC_REM_ACCESS_ERR, 10, "a WRITE to an MR outside the named SRQ's PD");
  ibv_destroy_qp(ini);
  ibv_destroy_qp(tgt);

  /* Teardown order: a domain in use is busy. */
  check(ibv_close_xrcd(x) == EBUSY, "ibv_close_xrcd while its SRQs exist: EBUSY");
  if (inix) ibv_destroy_qp(inix);
  if (tgtx) ibv_destroy_qp(tgtx);
  check(ibv_destroy_srq(s1) == 0 && ibv_destroy_srq(s2) == 0 && ibv_destroy_srq(s_own) == 0, "ibv_destroy_srq of the XRC SRQs");
  check(ibv_close_xrcd(x) == 0 && ibv_close_xrcd(x2) == 0 && ibv_close_xrcd(own) == 0, "ibv_close_xrcd of every open");
  ibv_dereg_mr(msrc);
  ibv_dereg_mr(m1);
  ibv_dereg_mr(m2);
  ibv_dereg_mr(mmem);
  ibv_dereg_mr(mother);
  ibv_dealloc_pd(pd2);
  ibv_destroy_cq(cqi);
  ibv_destroy_cq(cq1);
  ibv_destroy_cq(cq2);
  close(fd);
  unlink(path);
  free(src);
  free(dst1);
  free(dst2);
  free(mem);
  lb_close();
  printf("verify_xrc: %d failures\n", failures);
  return failures ? 1 : 0;
}
