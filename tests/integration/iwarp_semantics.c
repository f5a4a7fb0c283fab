/* iwarp_semantics: what an iWARP device says and refuses, through plain verbs on one host.
 *
 *   iwarp_semantics [-d DEV]
 *
 * Prints "ok  : ..." / "FAIL: ..." per check and exits 0 only when all pass. Expected values
 * are what iWARP devices (siw, iw_cxgb4) and their rdma-core providers report:
 * - ibv_device transport IWARP, node type RNIC; port link layer Ethernet; atomic_cap NONE;
 *   max_sge_rd 1 (an RDMAP Read Request names one sink buffer, RFC 5040 4.4);
 * - one GID: the port's MAC in bytes 0..5, zeros after (siw_query_gid, c4iw_query_gid);
 * - UD and UC QPs are not created: EOPNOTSUPP (siw_create_qp: "only RC QP's supported");
 * - atomics, immediate data and a READ into two SGEs are refused at post with EINVAL.
 * The RC QP used for the posts is connected to itself (its own GID and QPN): every post
 * checked here fails before anything is sent.
 */
#include <errno.h>

#define PAIR_NAME "iwarp_semantics"
#pragma GCC diagnostic ignored "-Wunused-function" /* the TCP exchange of verbs_pair.h */
#include "verbs_pair.h"

int main(int argc, char **argv) {
  const char *dev_name = argc > 2 && strcmp(argv[1], "-d") == 0 ? argv[2] : NULL;
  int n = 0;
  struct ibv_device **list = ibv_get_device_list(&n);
  if (!list || n == 0) die("no devices");
  struct ibv_device *dev = list[0];
  for (int i = 0; dev_name && i < n; ++i)
    if (strcmp(ibv_get_device_name(list[i]), dev_name) == 0) dev = list[i];
  check(dev->transport_type == IBV_TRANSPORT_IWARP, "transport_type IBV_TRANSPORT_IWARP");
  check(dev->node_type == IBV_NODE_RNIC, "node_type IBV_NODE_RNIC");
  struct ibv_context *ctx = ibv_open_device(dev);
  if (!ctx) die("open_device failed");

  struct ibv_device_attr da;
  if (ibv_query_device(ctx, &da)) die("query_device failed");
  check(da.atomic_cap == IBV_ATOMIC_NONE, "atomic_cap IBV_ATOMIC_NONE");
  check(da.max_sge_rd == 1, "max_sge_rd 1");
  check(!(da.device_cap_flags & IBV_DEVICE_RC_RNR_NAK_GEN), "no RC_RNR_NAK_GEN (no RNR on iWARP)");
  struct ibv_port_attr pa;
  if (ibv_query_port(ctx, 1, &pa)) die("query_port failed");
  check(pa.link_layer == IBV_LINK_LAYER_ETHERNET, "link_layer Ethernet");
  check(pa.gid_tbl_len == 1, "gid_tbl_len 1");
  union ibv_gid gid;
  if (ibv_query_gid(ctx, 1, 0, &gid)) die("query_gid failed");
  int zeros = 1;
  for (int i = 6; i < 16; ++i) zeros &= gid.raw[i] == 0;
  /* The simulated MACs are locally administered 02:00:a:b:c:d (bit 1 of byte 0 set). */
  check(gid.raw[0] == 0x02 && gid.raw[1] == 0x00 && zeros, "GID 0 = MAC 02:00:.. in bytes 0..5, zeros after");
  printf("gid: %02x:%02x:%02x:%02x:%02x:%02x\n", gid.raw[0], gid.raw[1], gid.raw[2], gid.raw[3],
         gid.raw[4], gid.raw[5]);

  struct ibv_pd *pd = ibv_alloc_pd(ctx);
  struct ibv_cq *cq = ibv_create_cq(ctx, 16, NULL, NULL, 0);
  if (!pd || !cq) die("pd/cq failed");
  struct ibv_qp_init_attr init = {.send_cq = cq, .recv_cq = cq,
                                  .cap = {.max_send_wr = 8, .max_recv_wr = 8, .max_send_sge = 2, .max_recv_sge = 2}};
  init.qp_type = IBV_QPT_UD;
  errno = 0;
  struct ibv_qp *bad = ibv_create_qp(pd, &init);
  check(!bad && errno == EOPNOTSUPP, "UD QP: create fails with EOPNOTSUPP");
  init.qp_type = IBV_QPT_UC;
  errno = 0;
  bad = ibv_create_qp(pd, &init);
  check(!bad && errno == EOPNOTSUPP, "UC QP: create fails with EOPNOTSUPP");

  init.qp_type = IBV_QPT_RC;
  struct ibv_qp *qp = ibv_create_qp(pd, &init);
  if (!qp) die("RC create_qp failed");
  static uint8_t buf[4096];
  struct ibv_mr *mr = ibv_reg_mr(pd, buf, sizeof buf, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
                                                     IBV_ACCESS_REMOTE_READ);
  if (!mr) die("reg_mr failed");
  if (rc_to_init(qp, IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ)) die("modify INIT failed");
  /* Connected to itself; one READ outstanding (an iWARP device's IRD/ORD here). */
  const struct rc_params one_read = {14, 7, 7, 12, 1, 1};
  const struct rc_peer self = {qp->qp_num, 0, ah_to(&pa, 0, gid.raw, 0)};
  if (rc_to_rts(qp, IBV_MTU_1024, &self, 0, &one_read)) die("modify RTR/RTS failed");

  struct ibv_sge sge[2] = {{(uintptr_t)buf, 8, mr->lkey}, {(uintptr_t)buf + 8, 8, mr->lkey}};
  struct ibv_send_wr wr, *bad_wr = NULL;
  const struct { enum ibv_wr_opcode op; int nsge; const char *what; } refused[] = {
      {IBV_WR_ATOMIC_FETCH_AND_ADD, 1, "ATOMIC_FETCH_AND_ADD: post fails with EINVAL"},
      {IBV_WR_ATOMIC_CMP_AND_SWP, 1, "ATOMIC_CMP_AND_SWP: post fails with EINVAL"},
      {IBV_WR_RDMA_WRITE_WITH_IMM, 1, "RDMA_WRITE_WITH_IMM: post fails with EINVAL"},
      {IBV_WR_SEND_WITH_IMM, 1, "SEND_WITH_IMM: post fails with EINVAL"},
      {IBV_WR_RDMA_READ, 2, "RDMA_READ into 2 SGEs: post fails with EINVAL"},
  };
  for (size_t i = 0; i < sizeof refused / sizeof refused[0]; ++i) {
    memset(&wr, 0, sizeof wr);
    wr.wr_id = i;
    wr.opcode = refused[i].op;
    wr.sg_list = sge;
    wr.num_sge = refused[i].nsge;
    wr.send_flags = IBV_SEND_SIGNALED;
    wr.wr.atomic.remote_addr = (uintptr_t)buf;
    wr.wr.atomic.rkey = mr->rkey;
    if (refused[i].op == IBV_WR_RDMA_READ || refused[i].op == IBV_WR_RDMA_WRITE_WITH_IMM) {
      wr.wr.rdma.remote_addr = (uintptr_t)buf + 64;
      wr.wr.rdma.rkey = mr->rkey;
    }
    bad_wr = NULL;
    int rc = ibv_post_send(qp, &wr, &bad_wr);
    check(rc == EINVAL && bad_wr == &wr, refused[i].what);
  }
  struct ibv_wc wc;
  check(ibv_poll_cq(cq, 1, &wc) == 0, "nothing refused at post completes");

  ibv_destroy_qp(qp);
  ibv_dereg_mr(mr);
  ibv_destroy_cq(cq);
  ibv_dealloc_pd(pd);
  ibv_close_device(ctx);
  ibv_free_device_list(list);
  printf("%s\n", failures ? "iwarp_semantics: FAILED" : "iwarp_semantics: all checks passed");
  return failures ? 1 : 0;
}
