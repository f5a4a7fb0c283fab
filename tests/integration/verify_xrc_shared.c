/* verify_xrc_shared: an XRC domain shared by two processes of one host through a file, as
 * MPI libraries use XRC (man ibv_open_xrcd: "processes that open the same file get the
 * same domain"). The child creates the domain (O_CREAT), an XRC SRQ and the XRC target
 * QP; the parent opens the domain through the same file, makes its own XRC SRQ in it,
 * opens the child's target (ibv_open_qp) and sends from its XRC initiator:
 *  1. to the child's SRQ: the child's CQ gets the receive, bytes checked by the child;
 *  2. after the child exited: to the parent's SRQ, through the target the child created,
 *     which lives while the parent's handle holds it;
 *  3. to the child's SRQ, gone with the child: NAK Invalid Request (REM_INV_REQ_ERR).
 * The processes coordinate over pipes; each opens its own device context after fork.
 *
 *   verify_xrc_shared [-d DEV] [-g GIDX]
 *
 * Prints one "ok  :"/"FAIL:" line per check; exits 0 only if every check passed.
 */
#define PAIR_NAME "verify_xrc_shared"
#pragma GCC diagnostic ignored "-Wunused-function" /* the TCP exchange of verbs_pair.h */
#include <fcntl.h>
#include <sys/wait.h>

#include "loopback.h"

#define LEN 3000

struct child_info { uint32_t tgt_qpn, srqn; };

static void fill(uint8_t *p, size_t n, uint8_t seed) {
  for (size_t i = 0; i < n; i++) p[i] = (uint8_t)(seed + i * 11);
}

static struct ibv_qp_attr rtr_to(uint32_t dest) {
  struct ibv_qp_attr a = {.qp_state = IBV_QPS_RTR, .path_mtu = port.active_mtu, .dest_qp_num = dest,
                          .max_dest_rd_atomic = 1, .min_rnr_timer = 12,
                          .ah_attr = ah_to(&port, port.lid, gid.raw, gidx)};
  return a;
}

/* The child: domain, SRQ and target; one receive checked byte for byte. */
static int child(int argc, char **argv, int fd, int to_parent, int from_parent) {
  lb_open(argc, argv);
  struct ibv_xrcd *x = lb_open_xrcd(fd, O_CREAT);
  struct ibv_cq *cq = ibv_create_cq(ctx, 8, NULL, NULL, 0);
  if (!x || !cq) die("child: xrcd, cq");
  struct ibv_srq *srq = lb_xrc_srq(x, cq);
  struct ibv_qp_init_attr_ex ta = {.qp_type = IBV_QPT_XRC_RECV, .comp_mask = IBV_QP_INIT_ATTR_XRCD, .xrcd = x};
  struct ibv_qp *tgt = ibv_create_qp_ex(ctx, &ta);
  uint8_t *buf = calloc(1, LEN);
  struct ibv_mr *mr = ibv_reg_mr(pd, buf, LEN, IBV_ACCESS_LOCAL_WRITE);
  if (!srq || !tgt || !buf || !mr || lb_post_srq_recv(srq, buf, LEN, mr->lkey, 1)) die("child: srq, target, mr");
  struct child_info me = {tgt->qp_num, 0};
  ibv_get_srq_num(srq, &me.srqn);
  if (rc_to_init(tgt, IBV_ACCESS_REMOTE_WRITE)) die("child: target to INIT");
  write(to_parent, &me, sizeof me);
  uint32_t ini = 0;
  if (read(from_parent, &ini, sizeof ini) != sizeof ini) die("child: no initiator");
  struct ibv_qp_attr a = rtr_to(ini);
  if (ibv_modify_qp(tgt, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
                                 IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER))
    die("child: target to RTR");
  char ready = 1;
  write(to_parent, &ready, 1);
  struct ibv_wc wc;
  uint8_t want[LEN];
  fill(want, LEN, 21);
  if (lb_poll(cq, &wc, "child: the parent's SEND to the child's SRQ") == 0)
    check(wc.status == IBV_WC_SUCCESS && wc.byte_len == LEN && wc.qp_num == tgt->qp_num &&
              memcmp(buf, want, LEN) == 0,
          "child: the parent's SEND lands in the child's SRQ buffer through the child's target, byte for byte");
  /* Exit without tearing down: the process's objects go with it, as on a crash. */
  printf("verify_xrc_shared child: %d failures\n", failures);
  return failures ? 1 : 0;
}

int main(int argc, char **argv) {
  char path[] = "/tmp/verify_xrc_shared.XXXXXX";
  int fd = mkstemp(path);
  int up[2], down[2];
  if (fd < 0 || pipe(up) || pipe(down)) die("mkstemp, pipe");
  setvbuf(stdout, NULL, _IONBF, 0);
  pid_t pid = fork();  /* before any verbs call: each process has its own connection */
  if (pid < 0) die("fork");
  if (pid == 0) _exit(child(argc, argv, fd, up[1], down[0]));

  lb_open(argc, argv);
  struct child_info c;
  if (read(up[0], &c, sizeof c) != sizeof c) die("parent: no word from the child");
  struct ibv_xrcd *x = lb_open_xrcd(fd, 0);
  check(x != NULL, "parent: ibv_open_xrcd(fd, 0) finds the domain the child created through the file");
  if (!x) die("parent: open_xrcd");
  struct ibv_cq *cq = ibv_create_cq(ctx, 8, NULL, NULL, 0), *cqi = ibv_create_cq(ctx, 8, NULL, NULL, 0);
  struct ibv_srq *srq = cq ? lb_xrc_srq(x, cq) : NULL;
  struct ibv_qp_open_attr oa = {.comp_mask = IBV_QP_OPEN_ATTR_NUM | IBV_QP_OPEN_ATTR_XRCD | IBV_QP_OPEN_ATTR_TYPE,
                                .qp_num = c.tgt_qpn, .xrcd = x, .qp_type = IBV_QPT_XRC_RECV};
  struct ibv_qp *opened = ibv_open_qp(ctx, &oa);
  check(opened && opened->qp_num == c.tgt_qpn, "parent: ibv_open_qp of the child's target through the shared domain");
  struct ibv_qp_init_attr_ex ia = {.send_cq = cqi, .qp_type = IBV_QPT_XRC_SEND, .cap = {.max_send_wr = 8, .max_send_sge = 1},
                                   .comp_mask = IBV_QP_INIT_ATTR_PD, .pd = pd};
  struct ibv_qp *ini = cqi ? ibv_create_qp_ex(ctx, &ia) : NULL;
  uint8_t *src = calloc(1, LEN), *dst = calloc(1, LEN);
  struct ibv_mr *ms = ibv_reg_mr(pd, src, LEN, 0), *md = ibv_reg_mr(pd, dst, LEN, IBV_ACCESS_LOCAL_WRITE);
  uint32_t my_srqn = 0;
  if (!srq || !opened || !ini || !ms || !md || ibv_get_srq_num(srq, &my_srqn)) die("parent: objects");
  check(my_srqn != c.srqn, "parent: its XRC SRQ in the shared domain has a number of its own");
  if (rc_to_init(ini, 0)) die("parent: initiator to INIT");
  write(down[1], &ini->qp_num, sizeof ini->qp_num);
  char ready;
  if (read(up[0], &ready, 1) != 1) die("parent: the child did not get ready");
  struct ibv_qp_attr a = rtr_to(c.tgt_qpn);
  if (ibv_modify_qp(ini, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN))
    die("parent: initiator to RTR");
  struct ibv_qp_attr r = {.qp_state = IBV_QPS_RTS, .timeout = 14, .retry_cnt = 7, .rnr_retry = 7, .max_rd_atomic = 1};
  if (ibv_modify_qp(ini, &r, IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
                                 IBV_QP_MAX_QP_RD_ATOMIC))
    die("parent: initiator to RTS");

  /* 1. To the child's SRQ. */
  fill(src, LEN, 21);
  lb_post_to(ini, IBV_WR_SEND, src, LEN, ms->lkey, 0, 0, 1, c.srqn);
  lb_expect(cqi, IBV_WC_SUCCESS, 1, "parent: SEND to the child's SRQ");
  int status = 0;
  check(waitpid(pid, &status, 0) == pid && WIFEXITED(status) && WEXITSTATUS(status) == 0,
        "the child checked its receive and exited 0");

  /* 2. The child is gone; its target lives on the parent's handle. */
  fill(src, LEN, 77);
  check(lb_post_srq_recv(srq, dst, LEN, md->lkey, 1) == 0, "parent: a receive on its own SRQ");
  lb_post_to(ini, IBV_WR_SEND, src, LEN, ms->lkey, 0, 0, 2, my_srqn);
  lb_expect(cqi, IBV_WC_SUCCESS, 2, "parent: SEND to its own SRQ through the target the exited child created");
  struct ibv_wc wc;
  if (lb_poll(cq, &wc, "parent: its receive") == 0)
    check(wc.status == IBV_WC_SUCCESS && wc.byte_len == LEN && wc.qp_num == c.tgt_qpn && memcmp(dst, src, LEN) == 0,
          "parent: the receive completes on its SRQ's CQ with the target's number, byte for byte");

  /* 3. The child's SRQ went with it. */
  lb_post_to(ini, IBV_WR_SEND, src, 64, ms->lkey, 0, 0, 3, c.srqn);
  lb_expect(cqi, IBV_WC_REM_INV_REQ_ERR, 3, "parent: SEND to the SRQ of the exited child");

  check(ibv_destroy_qp(ini) == 0 && ibv_destroy_qp(opened) == 0, "parent: destroys its initiator and its target handle");
  check(ibv_destroy_srq(srq) == 0 && ibv_close_xrcd(x) == 0, "parent: destroys its SRQ and closes the domain");
  ibv_dereg_mr(ms);
  ibv_dereg_mr(md);
  ibv_destroy_cq(cq);
  ibv_destroy_cq(cqi);
  free(src);
  free(dst);
  close(fd);
  unlink(path);
  lb_close();
  printf("verify_xrc_shared: %d failures\n", failures);
  return failures ? 1 : 0;
}
