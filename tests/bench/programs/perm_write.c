/* The permutation benchmark as a verbs program (rdmasim_main, oob.h): this rank WRITEs
 * `bytes` to rank `dst` in `message` B WRITEs with `window` outstanding, as the study
 * runner's built-in flows do (message, window and size from its flow keys), and is the
 * target of rank `src`. usage: perm_write DST SRC BYTES MESSAGE WINDOW */
#include <infiniband/verbs.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rdmasim/connect.h"
#include "rdmasim/oob.h"

struct end { uint32_t qpn, rkey; uint64_t addr; struct rdmasim_addr at; };

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
  struct ibv_pd *pd = ibv_alloc_pd(ctx);
  uint8_t *buf = calloc(1, msg);
  struct ibv_mr *mr = ibv_reg_mr(pd, buf, msg, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
  struct ibv_cq *cq = ibv_create_cq(ctx, 2 * window, NULL, NULL, 0);
  struct ibv_qp_init_attr qa = {.send_cq = cq, .recv_cq = cq, .qp_type = IBV_QPT_RC,
                                .cap = {.max_send_wr = (uint32_t)window, .max_recv_wr = 1,
                                        .max_send_sge = 1, .max_recv_sge = 1}};
  struct ibv_qp *sq = ibv_create_qp(pd, &qa), *rq = ibv_create_qp(pd, &qa);
  if (!mr || !sq || !rq) return 3;
  struct end me = {0, mr->rkey, (uintptr_t)buf, {0}}, them;
  if (rdmasim_port_addr(ctx, &me.at)) return 3;
  char key[32];
  me.qpn = sq->qp_num;
  snprintf(key, sizeof key, "send%d", rank);
  rdmasim_oob_put(key, &me, sizeof me);
  me.qpn = rq->qp_num;
  snprintf(key, sizeof key, "recv%d", rank);
  rdmasim_oob_put(key, &me, sizeof me);
  /* 4096 B MTU, the target grants REMOTE_WRITE, one READ/atomic each way (unused). */
  const struct rdmasim_rc_opts o = {IBV_MTU_4096, IBV_ACCESS_REMOTE_WRITE, 1, 0};
  snprintf(key, sizeof key, "recv%d", dst);
  if (rdmasim_oob_get(key, &them, sizeof them) || rdmasim_rc_connect(sq, them.qpn, &them.at, &o)) return 4;
  snprintf(key, sizeof key, "send%d", src);
  struct end from;
  if (rdmasim_oob_get(key, &from, sizeof from) || rdmasim_rc_connect(rq, from.qpn, &from.at, &o)) return 5;
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
