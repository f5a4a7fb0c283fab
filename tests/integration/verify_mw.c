/* verify_mw: memory windows through the libibverbs ABI, between two processes. The server
 * owns the memory and binds a type 1 window (ibv_bind_mw) and a type 2 window (a BIND_MW
 * WR, later ibv_wr_bind_mw); the client reads and writes through them, invalidates one
 * with ibv_wr_send_inv, and finally finds a LOCAL_INV'd key refused. Control messages go
 * over the TCP socket. Expected values come from the man pages named beside each check.
 *
 *   server: verify_mw [-d DEV] [-g GIDX] [-p PORT]
 *   client: verify_mw [-d DEV] [-g GIDX] [-p PORT] SERVER_ADDR
 */
#include <errno.h>

#define PAIR_NAME "verify_mw"
#include "verbs_pair.h"

#define BUF_SIZE 65536
#define W1_OFF 0       /* type 1 window: [0, 4096), remote read */
#define W2_OFF 8192    /* type 2 window: [8192, 12288), remote write + read */
#define W_LEN 4096
#define RECV_OFF 32768
#define SEND_INV_LEN 16

struct keys { uint32_t k1, k2, k2_dead; uint64_t a1, a2; };

static struct ibv_cq *cq;
static struct ibv_qp *qp;
static struct ibv_mr *mr;
static uint8_t *buf;

static uint8_t pat(int client, size_t i) { return (uint8_t)(i * (client ? 7 : 13) + (client ? 3 : 5)); }
static struct ibv_wc next_wc(void) { return poll_one(cq); }

static int ok_wc(struct ibv_wc wc, enum ibv_wc_opcode op) { return wc.status == IBV_WC_SUCCESS && wc.opcode == op; }

static struct ibv_wc rdma(enum ibv_wr_opcode op, size_t loff, uint32_t len, uint64_t raddr, uint32_t rkey) {
  struct ibv_sge sge = {(uintptr_t)(buf + loff), len, mr->lkey};
  struct ibv_send_wr wr = {.wr_id = 300, .sg_list = &sge, .num_sge = 1, .opcode = op,
                           .send_flags = IBV_SEND_SIGNALED}, *bad;
  wr.wr.rdma.remote_addr = raddr;
  wr.wr.rdma.rkey = rkey;
  if (ibv_post_send(qp, &wr, &bad)) die("post_send (rdma)");
  return next_wc();
}

static void sync_byte(int fd) {
  char b = 1;
  if (write(fd, &b, 1) != 1) die("sync write");
  read_full(fd, &b, 1);
}

static void server(int fd, struct ibv_pd *pd, struct ibv_mw *mw1, struct ibv_mw *mw2) {
  struct ibv_qp_ex *qpx = ibv_qp_to_qp_ex(qp);
  /* A receive for the client's SEND_WITH_INV. */
  struct ibv_sge rs = {(uintptr_t)(buf + RECV_OFF), 4096, mr->lkey};
  struct ibv_recv_wr rwr = {.wr_id = 50, .sg_list = &rs, .num_sge = 1}, *rbad;
  if (ibv_post_recv(qp, &rwr, &rbad)) die("post_recv");
  sync_byte(fd);

  /* man ibv_bind_mw: type 1 through ibv_bind_mw; "the R_key of the memory window after the
   * bind is returned in the mw_bind->mw->rkey field"; rdma-core's provider (mlx5) takes
   * ibv_inc_rkey() of the old key. The CQE opcode is IBV_WC_BIND_MW (man ibv_poll_cq). */
  uint32_t old = mw1->rkey;
  struct ibv_mw_bind b1 = {.wr_id = 1, .send_flags = IBV_SEND_SIGNALED,
                           .bind_info = {mr, (uintptr_t)(buf + W1_OFF), W_LEN, IBV_ACCESS_REMOTE_READ}};
  check(ibv_bind_mw(qp, mw1, &b1) == 0, "ibv_bind_mw (type 1) posts");
  check(mw1->rkey == ibv_inc_rkey(old), "type 1 bind: mw->rkey = ibv_inc_rkey(old rkey)");
  check(ok_wc(next_wc(), IBV_WC_BIND_MW), "type 1 bind completes: IBV_WC_BIND_MW, success");

  /* man ibv_bind_mw: "for type 2 MW, one should directly post bind WR to the QP". */
  uint32_t k2 = ibv_inc_rkey(mw2->rkey);
  struct ibv_send_wr wr = {.wr_id = 2, .opcode = IBV_WR_BIND_MW, .send_flags = IBV_SEND_SIGNALED}, *bad;
  wr.bind_mw.mw = mw2;
  wr.bind_mw.rkey = k2;
  wr.bind_mw.bind_info = (struct ibv_mw_bind_info){mr, (uintptr_t)(buf + W2_OFF), W_LEN,
                                                   IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ};
  check(ibv_post_send(qp, &wr, &bad) == 0, "IBV_WR_BIND_MW (type 2) posts");
  check(ok_wc(next_wc(), IBV_WC_BIND_MW), "type 2 bind completes: IBV_WC_BIND_MW, success");
  /* man ibv_alloc_mw: "ibv_dereg_mr() fails if any memory window is still bound". */
  check(ibv_dereg_mr(mr) == EBUSY, "ibv_dereg_mr of an MR with bound windows: EBUSY");

  struct keys k = {mw1->rkey, k2, 0, (uintptr_t)(buf + W1_OFF), (uintptr_t)(buf + W2_OFF)};
  if (write(fd, &k, sizeof k) != sizeof k) die("write keys");
  /* The client reads window 1, writes window 2, then SEND_WITH_INVs window 2. */
  struct ibv_wc wc = next_wc();
  check(ok_wc(wc, IBV_WC_RECV) && wc.byte_len == SEND_INV_LEN, "SEND_WITH_INV received, byte_len 16");
  /* man ibv_poll_cq: IBV_WC_WITH_INV "invalidated_rkey is valid". */
  check((wc.wc_flags & IBV_WC_WITH_INV) && wc.invalidated_rkey == k2,
        "receive has IBV_WC_WITH_INV and invalidated_rkey = the type 2 window's key");
  int same = 1;
  for (size_t i = 0; i < W_LEN; i++) same &= buf[W2_OFF + i] == pat(1, i);
  check(same, "RDMA WRITE through the type 2 window landed byte for byte");

  /* Window 2 is free again: bind it with ibv_wr_bind_mw and LOCAL_INV it with
   * ibv_wr_local_inv in one batch; two CQEs, IBV_WC_BIND_MW then IBV_WC_LOCAL_INV. */
  uint32_t k3 = ibv_inc_rkey(k2);
  struct ibv_mw_bind_info info = {mr, (uintptr_t)(buf + W2_OFF), W_LEN, IBV_ACCESS_REMOTE_READ};
  ibv_wr_start(qpx);
  qpx->wr_id = 3;
  qpx->wr_flags = IBV_SEND_SIGNALED;
  ibv_wr_bind_mw(qpx, mw2, k3, &info);
  qpx->wr_id = 4;
  ibv_wr_local_inv(qpx, k3);
  check(ibv_wr_complete(qpx) == 0, "ibv_wr_bind_mw + ibv_wr_local_inv batch posts");
  struct ibv_wc w3 = next_wc(), w4 = next_wc();
  check(ok_wc(w3, IBV_WC_BIND_MW) && w3.wr_id == 3, "ibv_wr_bind_mw completes: IBV_WC_BIND_MW");
  check(ok_wc(w4, IBV_WC_LOCAL_INV) && w4.wr_id == 4, "ibv_wr_local_inv completes: IBV_WC_LOCAL_INV");
  /* man ibv_alloc_mw: ibv_dealloc_mw "Unbinds in case was previously bound". */
  check(ibv_dealloc_mw(mw1) == 0, "ibv_dealloc_mw of a bound type 1 window");
  check(ibv_dereg_mr(mr) == 0, "ibv_dereg_mr once no window is bound");
  mr = NULL;
  k.k2_dead = k3;
  if (write(fd, &k, sizeof k) != sizeof k) die("write keys");
  sync_byte(fd);  /* the client has seen its REM_ACCESS_ERR */
  check(ibv_dealloc_mw(mw2) == 0, "ibv_dealloc_mw of a free type 2 window");
  (void)pd;
}

static void client(int fd) {
  struct ibv_qp_ex *qpx = ibv_qp_to_qp_ex(qp);
  sync_byte(fd);
  struct keys k;
  read_full(fd, &k, sizeof k);
  check(ok_wc(rdma(IBV_WR_RDMA_READ, 0, W_LEN, k.a1, k.k1), IBV_WC_RDMA_READ),
        "RDMA READ of 4096 B through the type 1 window");
  int same = 1;
  for (size_t i = 0; i < W_LEN; i++) same &= buf[i] == pat(0, W1_OFF + i);
  check(same, "READ through the type 1 window returns the server's bytes");
  for (size_t i = 0; i < W_LEN; i++) buf[4096 + i] = pat(1, i);
  check(ok_wc(rdma(IBV_WR_RDMA_WRITE, 4096, W_LEN, k.a2, k.k2), IBV_WC_RDMA_WRITE),
        "RDMA WRITE of 4096 B through the type 2 window");
  ibv_wr_start(qpx);
  qpx->wr_id = 10;
  qpx->wr_flags = IBV_SEND_SIGNALED;
  ibv_wr_send_inv(qpx, k.k2);
  ibv_wr_set_sge(qpx, mr->lkey, (uintptr_t)buf, SEND_INV_LEN);
  check(ibv_wr_complete(qpx) == 0, "ibv_wr_send_inv posts");
  /* man ibv_poll_cq: a SEND_WITH_INV completes as IBV_WC_SEND. */
  check(ok_wc(next_wc(), IBV_WC_SEND), "SEND_WITH_INV completes: IBV_WC_SEND, success");
  read_full(fd, &k, sizeof k);
  /* IBTA 10.6.7: an invalidated window's key is not valid; the responder NAKs with Remote
   * Access Error -> IBV_WC_REM_ACCESS_ERR (man ibv_poll_cq). */
  struct ibv_wc wc = rdma(IBV_WR_RDMA_READ, 0, 64, k.a2, k.k2_dead);
  check(wc.status == IBV_WC_REM_ACCESS_ERR, "READ with a LOCAL_INV'd window key: IBV_WC_REM_ACCESS_ERR");
  sync_byte(fd);
}

int main(int argc, char **argv) {
  const struct pair_args args = parse_args(argc, argv, 18650);
  const char *dev = args.dev, *srv = args.server;
  const int gidx = args.gidx, port = args.port, is_client = srv != NULL;
  struct ibv_device **list;
  struct ibv_context *ctx = open_named(dev, &list);
  struct ibv_device_attr da;
  if (ibv_query_device(ctx, &da)) die("query_device");
  /* mlx5 reports both flags and max_mw = 1 << log_max_mkey (mlx5_ib_query_device). */
  check((da.device_cap_flags & IBV_DEVICE_MEM_WINDOW) && (da.device_cap_flags & IBV_DEVICE_MEM_WINDOW_TYPE_2B),
        "device_cap_flags has MEM_WINDOW and MEM_WINDOW_TYPE_2B");
  check(da.max_mw > 0, "max_mw > 0");
  struct ibv_port_attr pa;
  if (ibv_query_port(ctx, 1, &pa)) die("query_port");
  struct ibv_pd *pd = ibv_alloc_pd(ctx);
  if (!pd || !(cq = ibv_create_cq(ctx, 64, NULL, NULL, 0))) die("alloc_pd/create_cq");
  if (posix_memalign((void **)&buf, 4096, BUF_SIZE)) die("memalign");
  for (size_t i = 0; i < BUF_SIZE; i++) buf[i] = pat(is_client, i);
  mr = ibv_reg_mr(pd, buf, BUF_SIZE, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
                                         IBV_ACCESS_REMOTE_READ | (is_client ? 0 : IBV_ACCESS_MW_BIND));
  if (!mr) die("reg_mr");
  struct ibv_qp_init_attr_ex ia = {
      .send_cq = cq, .recv_cq = cq, .qp_type = IBV_QPT_RC, .pd = pd,
      .cap = {.max_send_wr = 16, .max_recv_wr = 16, .max_send_sge = 1, .max_recv_sge = 1},
      .comp_mask = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS,
      .send_ops_flags = IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_RDMA_READ | IBV_QP_EX_WITH_RDMA_WRITE |
                        IBV_QP_EX_WITH_SEND_WITH_INV | IBV_QP_EX_WITH_BIND_MW | IBV_QP_EX_WITH_LOCAL_INV};
  if (!(qp = ibv_create_qp_ex(ctx, &ia))) die("create_qp_ex");

  struct ibv_mw *mw1 = NULL, *mw2 = NULL;
  if (!is_client) {
    /* ib_uverbs_alloc_mw: a type other than 1 or 2 is EINVAL. */
    errno = 0;
    check(ibv_alloc_mw(pd, (enum ibv_mw_type)3) == NULL && errno == EINVAL, "ibv_alloc_mw type 3: NULL, EINVAL");
    mw1 = ibv_alloc_mw(pd, IBV_MW_TYPE_1);
    mw2 = ibv_alloc_mw(pd, IBV_MW_TYPE_2);
    check(mw1 && mw2 && mw1->type == IBV_MW_TYPE_1 && mw2->type == IBV_MW_TYPE_2, "ibv_alloc_mw types 1 and 2");
    if (!mw1 || !mw2) die("alloc_mw");
    /* verbs.h ibv_bind_mw: only type 1 windows (EINVAL otherwise). */
    struct ibv_mw_bind b = {.bind_info = {mr, (uintptr_t)buf, 64, IBV_ACCESS_REMOTE_READ}};
    check(ibv_bind_mw(qp, mw2, &b) == EINVAL, "ibv_bind_mw of a type 2 window: EINVAL");
  }

  struct peer me = {.qpn = qp->qp_num, .psn = is_client ? 100 : 200, .lid = pa.lid}, them;
  union ibv_gid gid;
  if (ibv_query_gid(ctx, 1, gidx, &gid)) die("query_gid");
  memcpy(me.gid, gid.raw, 16);
  int fd = tcp_exchange(srv, port, &me, &them);
  qp_to_init(qp, IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ);
  qp_to_rts(qp, &pa, gidx, me.psn, &them);
  if (is_client) client(fd);
  else server(fd, pd, mw1, mw2);

  close(fd);
  ibv_destroy_qp(qp);
  if (mr) ibv_dereg_mr(mr);
  ibv_destroy_cq(cq);
  ibv_dealloc_pd(pd);
  ibv_close_device(ctx);
  ibv_free_device_list(list);
  printf("%s: %d failures\n", is_client ? "client" : "server", failures);
  return failures ? 1 : 0;
}
