/* The permutation benchmark as a verbs program (rdmasim_main, oob.h): this rank WRITEs
 * `bytes` to rank `dst` in `message` B WRITEs with `window` outstanding, as the study
 * runner's built-in flows do (message, window and size from its flow keys), and is the
 * target of rank `src`. usage: perm_write DST SRC BYTES MESSAGE WINDOW */
#include <infiniband/verbs.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rdmasim/oob.h"

struct end { uint32_t qpn, rkey; uint16_t lid; uint8_t gid[16]; uint64_t addr; };

static int to_rts(struct ibv_qp *qp, const struct end *p, int ethernet) {
  struct ibv_qp_attr a = {.qp_state = IBV_QPS_INIT, .port_num = 1,
                          .qp_access_flags = IBV_ACCESS_REMOTE_WRITE};
  if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS))
    return 1;
  memset(&a, 0, sizeof a);
  a.qp_state = IBV_QPS_RTR;
  a.path_mtu = IBV_MTU_4096;
  a.dest_qp_num = p->qpn;
  a.max_dest_rd_atomic = 1;
  a.min_rnr_timer = 12;
  a.ah_attr.dlid = p->lid;
  a.ah_attr.port_num = 1;
  if (ethernet) {
    a.ah_attr.is_global = 1;
    memcpy(a.ah_attr.grh.dgid.raw, p->gid, 16);
    a.ah_attr.grh.hop_limit = 64;
  }
  if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
                               IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER))
    return 2;
  memset(&a, 0, sizeof a);
  a.qp_state = IBV_QPS_RTS;
  a.timeout = 14;
  a.retry_cnt = 7;
  a.rnr_retry = 7;
  a.max_rd_atomic = 1;
  return ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
                                   IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC) ? 3 : 0;
}

int rdmasim_main(int argc, char **argv) {
  if (argc != 6) {
    fprintf(stderr, "usage: perm_write DST SRC BYTES MESSAGE WINDOW\n");
    return 2;
  }
  const int rank = rdmasim_rank(), dst = atoi(argv[1]), src = atoi(argv[2]);
  const uint64_t bytes = strtoull(argv[3], NULL, 10);
  const uint32_t msg = (uint32_t)atoi(argv[4]);
  const int window = atoi(argv[5]);
  struct ibv_device **list = ibv_get_device_list(NULL);
  struct ibv_context *ctx = ibv_open_device(list[0]);
  ibv_free_device_list(list);
  struct ibv_port_attr pa;
  ibv_query_port(ctx, 1, &pa);
  struct ibv_pd *pd = ibv_alloc_pd(ctx);
  uint8_t *buf = calloc(1, msg);
  struct ibv_mr *mr = ibv_reg_mr(pd, buf, msg, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
  struct ibv_cq *cq = ibv_create_cq(ctx, 2 * window, NULL, NULL, 0);
  struct ibv_qp_init_attr qa = {.send_cq = cq, .recv_cq = cq, .qp_type = IBV_QPT_RC,
                                .cap = {.max_send_wr = (uint32_t)window, .max_recv_wr = 1,
                                        .max_send_sge = 1, .max_recv_sge = 1}};
  struct ibv_qp *sq = ibv_create_qp(pd, &qa), *rq = ibv_create_qp(pd, &qa);
  if (!mr || !sq || !rq) return 3;
  union ibv_gid gid;
  ibv_query_gid(ctx, 1, 0, &gid);
  struct end me = {0, mr->rkey, pa.lid, {0}, (uintptr_t)buf}, them;
  memcpy(me.gid, gid.raw, 16);
  char key[32];
  me.qpn = sq->qp_num;
  snprintf(key, sizeof key, "send%d", rank);
  rdmasim_oob_put(key, &me, sizeof me);
  me.qpn = rq->qp_num;
  snprintf(key, sizeof key, "recv%d", rank);
  rdmasim_oob_put(key, &me, sizeof me);
  const int eth = pa.link_layer == IBV_LINK_LAYER_ETHERNET;
  snprintf(key, sizeof key, "recv%d", dst);
  if (rdmasim_oob_get(key, &them, sizeof them) || to_rts(sq, &them, eth)) return 4;
  snprintf(key, sizeof key, "send%d", src);
  struct end from;
  if (rdmasim_oob_get(key, &from, sizeof from) || to_rts(rq, &from, eth)) return 5;
  rdmasim_oob_barrier();
  const uint64_t messages = (bytes + msg - 1) / msg;
  uint64_t posted = 0, done = 0;
  while (done < messages) {
    while (posted < messages && posted - done < (uint64_t)window) {
      uint32_t len = posted + 1 == messages ? (uint32_t)(bytes - posted * msg) : msg;
      struct ibv_sge sge = {(uintptr_t)buf, len, mr->lkey};
      struct ibv_send_wr wr = {.wr_id = posted, .sg_list = &sge, .num_sge = 1,
                               .opcode = IBV_WR_RDMA_WRITE, .send_flags = IBV_SEND_SIGNALED}, *bad;
      wr.wr.rdma.remote_addr = them.addr;
      wr.wr.rdma.rkey = them.rkey;
      if (ibv_post_send(sq, &wr, &bad)) return 6;
      posted++;
    }
    struct ibv_wc wc[4];
    int n = ibv_poll_cq(cq, 4, wc);
    for (int i = 0; i < n; i++)
      if (wc[i].status != IBV_WC_SUCCESS) return 7;
    done += (uint64_t)(n > 0 ? n : 0);
  }
  printf("wrote %llu B to rank %d\n", (unsigned long long)bytes, dst);
  rdmasim_oob_barrier();  /* the target's QP stays until every sender is done */
  return 0;
}
