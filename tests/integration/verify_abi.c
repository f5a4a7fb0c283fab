/* verify_abi: no NULL function pointer anywhere the library hands a program. Walks every
 * function pointer of the objects a verbs program receives (ibv_context::ops, the
 * verbs_context extension, ibv_cq_ex, ibv_qp_ex) and calls each one, checking it does
 * what rdma-core's man pages document: a supported call moves data (checked byte for
 * byte) or answers; an unsupported one returns EOPNOTSUPP (or NULL with errno EOPNOTSUPP)
 * and an object that cannot be made (ibv_wq, counters, flows)
 * is refused at creation. One process, QPs on one port connected to each other.
 *
 *   verify_abi [-d DEV] [-g GIDX]
 *
 * Prints one "ok  :"/"FAIL:" line per check; exits 0 only if every check passed.
 */
#include <errno.h>
#include <fcntl.h>

#define PAIR_NAME "verify_abi"
#pragma GCC diagnostic ignored "-Wunused-function" /* the TCP exchange of verbs_pair.h */
#include "verbs_pair.h"

#define BUF_SIZE 65536
#define ALL_ACCESS (IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ | \
                    IBV_ACCESS_REMOTE_ATOMIC | IBV_ACCESS_MW_BIND)

static struct ibv_context *ctx;
static struct verbs_context *vctx;
static struct ibv_pd *pd;
static struct ibv_port_attr port;
static int gidx;
static union ibv_gid gid;
static uint8_t *buf;
static struct ibv_mr *mr;

/* Every slot of an array of function pointers [first, end) is set. */
static int all_set(const void *first, const void *end, const char *what) {
  int missing = 0;
  for (const char *p = first; p < (const char *)end; p += sizeof(void (*)(void))) {
    void (*fn)(void);
    memcpy(&fn, p, sizeof fn);
    if (!fn) {
      printf("      %s: slot %zu is NULL\n", what, (size_t)(p - (const char *)first) / sizeof fn);
      missing++;
    }
  }
  return missing == 0;
}

static int null_eopnotsupp(const void *p) { return p == NULL && errno == EOPNOTSUPP; }

/* ---- the context: ibv_context_ops and verbs_context ---- */

static void context_pointers(void) {
  check(ctx->abi_compat == __VERBS_ABI_IS_EXTENDED && vctx && vctx->sz >= sizeof(*vctx),
        "the context is a verbs_context of the full rdma-core 44 size");
  check(all_set(&ctx->ops, &ctx->ops + 1, "ibv_context_ops"), "every ibv_context_ops entry is set");
  /* verbs_context from query_port up to priv, and from query_device_ex up to the
   * placeholder before sz (priv is data, _ABI_placeholder3 an integer). */
  check(all_set(&vctx->query_port, &vctx->priv, "verbs_context") &&
        all_set(&vctx->query_device_ex, &vctx->_ABI_placeholder3, "verbs_context"),
        "every verbs_context operation is set");

  /* The pre-1.1 entries: query_device/query_port answer as the 1.1 calls (rdma-core's
   * set_lib_ops points them there); the others no 1.1 program can call fail. */
  struct ibv_device_attr a1, a2;
  check(ctx->ops._compat_query_device(ctx, &a1) == 0 && ibv_query_device(ctx, &a2) == 0 &&
        a1.max_qp == a2.max_qp && a1.phys_port_cnt == a2.phys_port_cnt,
        "ops._compat_query_device answers as ibv_query_device");
  /* The pre-1.1 port attributes are ibv_port_attr up to port_cap_flags2 (rdma-core
   * leaves the struct incomplete in its header). */
  struct ibv_port_attr cp;
  memset(&cp, 0, sizeof cp);
  check(ctx->ops._compat_query_port(ctx, 1, (struct _compat_ibv_port_attr *)&cp) == 0 &&
        cp.state == port.state && cp.lid == port.lid,
        "ops._compat_query_port answers as ibv_query_port");
  void *(*compat[])(void) = {
      ctx->ops._compat_alloc_pd, ctx->ops._compat_dealloc_pd, ctx->ops._compat_reg_mr,
      ctx->ops._compat_rereg_mr, ctx->ops._compat_dereg_mr, ctx->ops._compat_create_cq,
      ctx->ops._compat_cq_event, ctx->ops._compat_resize_cq, ctx->ops._compat_destroy_cq,
      ctx->ops._compat_create_srq, ctx->ops._compat_modify_srq, ctx->ops._compat_query_srq,
      ctx->ops._compat_destroy_srq, ctx->ops._compat_create_qp, ctx->ops._compat_query_qp,
      ctx->ops._compat_modify_qp, ctx->ops._compat_destroy_qp, ctx->ops._compat_create_ah,
      ctx->ops._compat_destroy_ah, ctx->ops._compat_attach_mcast, ctx->ops._compat_detach_mcast,
      ctx->ops._compat_async_event};
  int bad = 0;
  for (size_t i = 0; i < sizeof compat / sizeof compat[0]; i++) {
    errno = 0;
    if (!null_eopnotsupp(compat[i]())) bad++;
  }
  check(bad == 0, "each other ops._compat_* entry returns NULL with errno EOPNOTSUPP");

  /* verbs_context: what is implemented answers; the rest is refused, and the objects it
   * would make never exist. */
  struct ibv_device_attr_ex ex;
  memset(&ex, 0xff, sizeof ex);
  check(ibv_query_device_ex(ctx, NULL, &ex) == 0 && ex.orig_attr.max_qp == a2.max_qp,
        "ibv_query_device_ex (query_device_ex) answers with the ibv_query_device attributes");
  /* ibv_query_device_ex(3): phys_port_cnt_ex is the port count, phys_port_cnt its 8-bit copy. */
  check(ex.phys_port_cnt_ex == a2.phys_port_cnt, "phys_port_cnt_ex == phys_port_cnt");
  struct ibv_port_attr pa;
  check(ibv_query_port(ctx, 1, &pa) == 0 && pa.state == IBV_PORT_ACTIVE, "ibv_query_port (query_port)");
  struct ibv_values_ex rt = {.comp_mask = IBV_VALUES_MASK_RAW_CLOCK};
  check(ibv_query_rt_values_ex(ctx, &rt) == 0 && rt.comp_mask == IBV_VALUES_MASK_RAW_CLOCK,
        "ibv_query_rt_values_ex (query_rt_values) reports the raw clock");

  struct ibv_sge sge = {(uintptr_t)buf, 64, mr->lkey};
  /* mlx5 odp.c: a prefetch through an MR that is not on-demand paging is -EINVAL
   * (verify_odp.c prefetches ODP MRs). */
  check(ibv_advise_mr(pd, IBV_ADVISE_MR_ADVICE_PREFETCH, 0, &sge, 1) == EINVAL,
        "ibv_advise_mr (advise_mr) of a pinned MR: EINVAL");
  errno = 0;
  check(null_eopnotsupp(ibv_alloc_null_mr(pd)), "ibv_alloc_null_mr (alloc_null_mr): NULL, EOPNOTSUPP");
  struct ibv_counters_init_attr cia = {0};
  errno = 0;
  check(null_eopnotsupp(ibv_create_counters(ctx, &cia)), "ibv_create_counters: NULL, EOPNOTSUPP");
  check(vctx->read_counters(NULL, NULL, 0, 0) == EOPNOTSUPP &&
        vctx->attach_counters_point_flow(NULL, NULL, NULL) == EOPNOTSUPP &&
        vctx->destroy_counters(NULL) == EOPNOTSUPP,
        "read_counters, attach_counters_point_flow, destroy_counters: EOPNOTSUPP");
  /* Device memory (verify_dm.c moves data through it): alloc_dm, the ibv_dm's two copy
   * pointers, reg_dm_mr and free_dm each called. */
  struct ibv_alloc_dm_attr dma = {.length = 4096};
  struct ibv_dm *dm = ibv_alloc_dm(ctx, &dma);
  check(dm && dm->memcpy_to_dm && dm->memcpy_from_dm, "ibv_alloc_dm (alloc_dm): a DM with both copy pointers set");
  if (dm) {
    uint32_t w = 0x12345678, r = 0;
    check(dm->memcpy_to_dm(dm, 0, &w, 4) == 0 && dm->memcpy_from_dm(&r, dm, 0, 4) == 0 && r == w,
          "ibv_dm memcpy_to_dm / memcpy_from_dm move 4 bytes");
    struct ibv_mr *dmr = vctx->reg_dm_mr(pd, dm, 0, 64, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_ZERO_BASED);
    check(dmr && ibv_dereg_mr(dmr) == 0, "reg_dm_mr: an MR (deregistered)");
    check(vctx->free_dm(dm) == 0, "free_dm: 0");
  }
  errno = 0;
  check(vctx->reg_dm_mr(pd, NULL, 0, 64, IBV_ACCESS_ZERO_BASED) == NULL && errno == EINVAL &&
        vctx->free_dm(NULL) == EINVAL, "reg_dm_mr / free_dm of no DM: EINVAL");
  struct ibv_flow_action_esp_attr esp;
  memset(&esp, 0, sizeof esp);
  errno = 0;
  check(null_eopnotsupp(ibv_create_flow_action_esp(ctx, &esp)) &&
        vctx->modify_flow_action_esp(NULL, &esp) == EOPNOTSUPP && vctx->destroy_flow_action(NULL) == EOPNOTSUPP,
        "flow actions (create/modify/destroy_flow_action_esp): refused with EOPNOTSUPP");
  struct ibv_wq_init_attr wqa = {.wq_type = IBV_WQT_RQ, .max_wr = 1, .max_sge = 1, .pd = pd};
  errno = 0;
  check(null_eopnotsupp(ibv_create_wq(ctx, &wqa)) && vctx->modify_wq(NULL, NULL) == EOPNOTSUPP &&
        vctx->destroy_wq(NULL) == EOPNOTSUPP,
        "ibv_create_wq: NULL, EOPNOTSUPP (no ibv_wq is ever handed out); modify_wq, destroy_wq: EOPNOTSUPP");
  struct ibv_rwq_ind_table_init_attr rwa = {0};
  errno = 0;
  check(null_eopnotsupp(ibv_create_rwq_ind_table(ctx, &rwa)) && vctx->destroy_rwq_ind_table(NULL) == EOPNOTSUPP,
        "ibv_create_rwq_ind_table: NULL, EOPNOTSUPP; destroy_rwq_ind_table: EOPNOTSUPP");
  struct ibv_xrcd_init_attr xa = {.comp_mask = IBV_XRCD_INIT_ATTR_FD | IBV_XRCD_INIT_ATTR_OFLAGS, .fd = -1,
                                  .oflags = O_CREAT};
  /* XRC (verify_xrc.c moves data): open_xrcd/close_xrcd answer; open_qp of a QP number
   * that is no target of the domain is EINVAL (ib_open_qp). */
  struct ibv_xrcd *xrcd = ibv_open_xrcd(ctx, &xa);
  struct ibv_qp_open_attr oa = {.comp_mask = IBV_QP_OPEN_ATTR_NUM | IBV_QP_OPEN_ATTR_XRCD |
                                             IBV_QP_OPEN_ATTR_TYPE, .qp_num = 0xffffff, .xrcd = xrcd,
                                .qp_type = IBV_QPT_XRC_RECV};
  errno = 0;
  check(xrcd && ibv_open_qp(ctx, &oa) == NULL && errno == EINVAL,
        "ibv_open_xrcd(-1, O_CREAT) answers; ibv_open_qp (open_qp) of no target: NULL, EINVAL");
  check(xrcd && ibv_close_xrcd(xrcd) == 0, "ibv_close_xrcd (close_xrcd): 0");
  check(vctx->ABI_placeholder1 == (void (*)(void))vctx->ibv_create_flow &&
        vctx->ABI_placeholder2 == (void (*)(void))vctx->ibv_destroy_flow,
        "ABI_placeholder1/2 are ibv_create_flow/ibv_destroy_flow (libibverbs 1.1.8 inline flow calls)");
  check(vctx->ibv_destroy_flow(NULL) == EOPNOTSUPP, "ibv_destroy_flow: EOPNOTSUPP");
}

/* ---- queues: CQ, SRQ and QP operations of the context and of verbs_context ---- */

static struct ibv_qp *rc_qp(struct ibv_cq *cq, struct ibv_srq *srq, uint64_t send_ops) {
  struct ibv_qp_init_attr_ex a = {
      .send_cq = cq, .recv_cq = cq, .srq = srq, .qp_type = IBV_QPT_RC,
      .cap = {.max_send_wr = 16, .max_recv_wr = srq ? 0 : 16, .max_send_sge = 2, .max_recv_sge = 2,
              .max_inline_data = 64},
      .comp_mask = IBV_QP_INIT_ATTR_PD | (send_ops ? IBV_QP_INIT_ATTR_SEND_OPS_FLAGS : 0),
      .pd = pd, .send_ops_flags = send_ops};
  return ibv_create_qp_ex(ctx, &a);
}

static void connect_pair(struct ibv_qp *a, struct ibv_qp *b) {
  const struct rc_peer pa = {b->qp_num, 0, ah_to(&port, port.lid, gid.raw, gidx)};
  const struct rc_peer pb = {a->qp_num, 0, ah_to(&port, port.lid, gid.raw, gidx)};
  if (rc_to_init(a, ALL_ACCESS & ~IBV_ACCESS_MW_BIND) || rc_to_init(b, ALL_ACCESS & ~IBV_ACCESS_MW_BIND))
    die("to INIT");
  if (rc_to_rts(a, port.active_mtu, &pa, 0, &rc_defaults) || rc_to_rts(b, port.active_mtu, &pb, 0, &rc_defaults))
    die("to RTS");
}

/* The next completion of an extended CQ (start_poll/next_poll/end_poll, busy polling). */
struct cqe { uint64_t wr_id; enum ibv_wc_status status; enum ibv_wc_opcode opcode; uint32_t byte_len, qp_num;
             unsigned wc_flags; __be32 imm; uint64_t ts, wall; };
static struct cqe poll_ex(struct ibv_cq_ex *cq) {
  struct ibv_poll_cq_attr pa = {0};
  while (ibv_start_poll(cq, &pa) == ENOENT) {}
  struct cqe e = {cq->wr_id, cq->status, ibv_wc_read_opcode(cq), ibv_wc_read_byte_len(cq),
                  ibv_wc_read_qp_num(cq), ibv_wc_read_wc_flags(cq), 0,
                  ibv_wc_read_completion_ts(cq), ibv_wc_read_completion_wallclock_ns(cq)};
  if (e.wc_flags & IBV_WC_WITH_IMM) e.imm = ibv_wc_read_imm_data(cq);
  ibv_end_poll(cq);
  return e;
}

static void cq_ex_pointers(void) {
  struct ibv_cq_init_attr_ex ca = {.cqe = 64, .wc_flags = IBV_WC_STANDARD_FLAGS |
      IBV_WC_EX_WITH_COMPLETION_TIMESTAMP | IBV_WC_EX_WITH_COMPLETION_TIMESTAMP_WALLCLOCK};
  struct ibv_cq_ex *cq = ibv_create_cq_ex(ctx, &ca);
  if (!cq) die("create_cq_ex");
  check(all_set(&cq->start_poll, (&cq->read_completion_wallclock_ns) + 1, "ibv_cq_ex"),
        "every ibv_cq_ex function pointer is set (start_poll .. read_completion_wallclock_ns)");
  struct ibv_poll_cq_attr pa = {0};
  check(ibv_start_poll(cq, &pa) == ENOENT, "start_poll on an empty CQ: ENOENT");
  const uint64_t bad_flags[] = {IBV_WC_EX_WITH_CVLAN, IBV_WC_EX_WITH_FLOW_TAG, IBV_WC_EX_WITH_TM_INFO};
  int refused = 0;
  for (int i = 0; i < 3; i++) {
    struct ibv_cq_init_attr_ex b = {.cqe = 4, .wc_flags = bad_flags[i]};
    errno = 0;
    refused += null_eopnotsupp(ibv_create_cq_ex(ctx, &b));
  }
  check(refused == 3, "create_cq_ex asking for CVLAN, FLOW_TAG or TM_INFO: NULL, EOPNOTSUPP");

  struct ibv_srq_init_attr_ex sa = {.attr = {.max_wr = 16, .max_sge = 1},
                                    .comp_mask = IBV_SRQ_INIT_ATTR_PD | IBV_SRQ_INIT_ATTR_TYPE,
                                    .srq_type = IBV_SRQT_BASIC, .pd = pd};
  struct ibv_srq *srq = vctx->create_srq_ex(ctx, &sa);
  check(srq != NULL, "verbs_context create_srq_ex makes a basic SRQ");
  struct ibv_srq_init_attr_ex xs = sa;
  xs.srq_type = IBV_SRQT_XRC;
  errno = 0;
  check(ibv_create_srq_ex(ctx, &xs) == NULL && errno == EINVAL,
        "ibv_create_srq_ex of an XRC SRQ without its domain and CQ: NULL, EINVAL");
  uint32_t srqn = 0;
  check(ibv_get_srq_num(srq, &srqn) == 0 && srqn != 0, "ibv_get_srq_num (get_srq_num): 0 and the SRQ's number");
  struct ibv_ops_wr op = {.opcode = IBV_WR_TAG_ADD}, *bad_op = NULL;
  check(ibv_post_srq_ops(srq, &op, &bad_op) == EOPNOTSUPP && bad_op == &op,
        "ibv_post_srq_ops (tag matching): EOPNOTSUPP, *bad_op the op");

  /* a: the requester with every RC ibv_wr_* op; b: its responder, receiving from the SRQ. */
  const uint64_t rc_ops = IBV_QP_EX_WITH_RDMA_WRITE | IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM | IBV_QP_EX_WITH_SEND |
      IBV_QP_EX_WITH_SEND_WITH_IMM | IBV_QP_EX_WITH_RDMA_READ | IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP |
      IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD | IBV_QP_EX_WITH_LOCAL_INV | IBV_QP_EX_WITH_BIND_MW |
      IBV_QP_EX_WITH_SEND_WITH_INV;
  struct ibv_cq *cqb = ibv_create_cq(ctx, 64, NULL, NULL, 0);
  struct ibv_qp *a = rc_qp(ibv_cq_ex_to_cq(cq), NULL, rc_ops), *b = rc_qp(cqb, srq, 0);
  if (!a || !b || !cqb) die("create the RC pair");
  errno = 0;
  check(null_eopnotsupp(rc_qp(cqb, NULL, IBV_QP_EX_WITH_ATOMIC_WRITE)),
        "create_qp_ex with IBV_QP_EX_WITH_ATOMIC_WRITE: NULL, EOPNOTSUPP");
  errno = 0;
  check(null_eopnotsupp(rc_qp(cqb, NULL, IBV_QP_EX_WITH_TSO)), "create_qp_ex with IBV_QP_EX_WITH_TSO: NULL, EOPNOTSUPP");
  connect_pair(a, b);
  struct ibv_qp_ex *qx = ibv_qp_to_qp_ex(a);
  check(all_set(&qx->wr_atomic_cmp_swp, (&qx->wr_atomic_write) + 1, "ibv_qp_ex"),
        "every ibv_qp_ex function pointer is set (wr_atomic_cmp_swp .. wr_atomic_write)");

  /* ops.post_srq_recv / post_send (through the inline wrappers) and the ibv_wr_* builder. */
  uint8_t *src = buf, *dst = buf + 4096;
  for (int i = 0; i < 256; i++) src[i] = (uint8_t)(i * 7 + 1);
  memset(dst, 0, 4096);
  struct ibv_sge rs = {(uintptr_t)dst, 256, mr->lkey};
  struct ibv_recv_wr rwr[3] = {{.wr_id = 100, .sg_list = &rs, .num_sge = 1, .next = &rwr[1]},
                               {.wr_id = 101, .sg_list = &rs, .num_sge = 1, .next = &rwr[2]},
                               {.wr_id = 102, .sg_list = &rs, .num_sge = 1}};
  struct ibv_recv_wr *bad_r = NULL;
  check(ibv_post_srq_recv(srq, rwr, &bad_r) == 0, "ops.post_srq_recv: 3 receives");
  struct ibv_values_ex rt = {.comp_mask = IBV_VALUES_MASK_RAW_CLOCK};
  ibv_query_rt_values_ex(ctx, &rt);

  ibv_wr_start(qx);
  qx->wr_id = 1; qx->wr_flags = IBV_SEND_SIGNALED;
  ibv_wr_send(qx);
  ibv_wr_set_sge(qx, mr->lkey, (uintptr_t)src, 256);
  qx->wr_id = 2;
  ibv_wr_send_imm(qx, htonl(0x1234));
  struct ibv_sge two[2] = {{(uintptr_t)src, 100, mr->lkey}, {(uintptr_t)src + 100, 156, mr->lkey}};
  ibv_wr_set_sge_list(qx, 2, two);
  qx->wr_id = 3;
  ibv_wr_send(qx);
  struct ibv_data_buf ib[2] = {{src, 20}, {src + 20, 12}};
  ibv_wr_set_inline_data_list(qx, 2, ib);
  check(ibv_wr_complete(qx) == 0, "wr_start, wr_send + wr_set_sge, wr_send_imm + wr_set_sge_list, "
                                  "wr_send + wr_set_inline_data_list, wr_complete");
  struct cqe e1 = poll_ex(cq), e2 = poll_ex(cq), e3 = poll_ex(cq);
  check(e1.wr_id == 1 && e1.status == IBV_WC_SUCCESS && e1.opcode == IBV_WC_SEND && e1.qp_num == a->qp_num &&
        e2.wr_id == 2 && e2.status == IBV_WC_SUCCESS && e3.wr_id == 3 && e3.status == IBV_WC_SUCCESS,
        "three SEND completions read through read_opcode / read_qp_num");
  /* A completion cannot precede the post that caused it, nor a later one an earlier one. */
  check(e1.ts >= (uint64_t)rt.raw_clock.tv_nsec && e2.ts >= e1.ts && e3.ts >= e2.ts && e1.ts > 0,
        "read_completion_ts: after the raw clock read before posting, non-decreasing");
  check(e1.wall == e1.ts && e3.wall == e3.ts,
        "read_completion_wallclock_ns: the same simulated ns (1 GHz HCA clock)");
  struct ibv_wc w[3];
  int got = 0;
  while (got < 3) got += ibv_poll_cq(cqb, 3 - got, w + got);  /* ops.poll_cq */
  check(w[0].status == IBV_WC_SUCCESS && w[0].wr_id == 100 && w[0].byte_len == 256 &&
        w[1].wr_id == 101 && (w[1].wc_flags & IBV_WC_WITH_IMM) && w[1].imm_data == htonl(0x1234) &&
        w[2].wr_id == 102 && w[2].byte_len == 32 && memcmp(dst, src, 32) == 0,
        "ops.poll_cq: the SRQ receives, with the immediate, bytes as sent");

  /* WRITE, WRITE_IMM (needs a receive), READ, both atomics, inline data. */
  memset(dst, 0, 4096);
  uint64_t *atom = (uint64_t *)(buf + 8192), *fetched = (uint64_t *)(buf + 8200);
  *atom = 40;
  check(ibv_post_srq_recv(srq, rwr + 2, &bad_r) == 0, "ops.post_srq_recv: one more");
  ibv_wr_start(qx);
  qx->wr_id = 10;
  ibv_wr_rdma_write(qx, mr->rkey, (uintptr_t)dst);
  ibv_wr_set_sge(qx, mr->lkey, (uintptr_t)src, 128);
  qx->wr_id = 11;
  ibv_wr_rdma_write_imm(qx, mr->rkey, (uintptr_t)dst + 128, htonl(7));
  ibv_wr_set_inline_data(qx, src + 128, 16);
  qx->wr_id = 12;
  ibv_wr_rdma_read(qx, mr->rkey, (uintptr_t)src);
  ibv_wr_set_sge(qx, mr->lkey, (uintptr_t)dst + 1024, 64);
  qx->wr_id = 13;
  ibv_wr_atomic_fetch_add(qx, mr->rkey, (uintptr_t)atom, 2);
  ibv_wr_set_sge(qx, mr->lkey, (uintptr_t)fetched, 8);
  qx->wr_id = 14;
  ibv_wr_atomic_cmp_swp(qx, mr->rkey, (uintptr_t)atom, 42, 99);
  ibv_wr_set_sge(qx, mr->lkey, (uintptr_t)fetched, 8);
  check(ibv_wr_complete(qx) == 0, "wr_rdma_write, wr_rdma_write_imm + wr_set_inline_data, wr_rdma_read, "
                                  "wr_atomic_fetch_add, wr_atomic_cmp_swp");
  int ok = 1;
  for (int i = 0; i < 5; i++) {
    struct cqe e = poll_ex(cq);
    ok &= e.status == IBV_WC_SUCCESS && e.wr_id == (uint64_t)(10 + i);
  }
  check(ok, "five completions, in order, all successful");
  /* 40 + 2 = 42 (fetch_add), then 42 == 42 so 99 is swapped in; the swap fetched 42. */
  check(memcmp(dst, src, 144) == 0 && memcmp(dst + 1024, src, 64) == 0 && *atom == 99 && *fetched == 42,
        "the written, read and atomic bytes: as the operations define them");
  got = ibv_poll_cq(cqb, 1, w);
  while (got == 0) got = ibv_poll_cq(cqb, 1, w);
  check(w[0].opcode == IBV_WC_RECV_RDMA_WITH_IMM && w[0].imm_data == htonl(7), "WRITE_IMM consumed a receive");

  /* Memory window type 2 bound through wr_bind_mw, used remotely, then invalidated
   * locally (wr_local_inv): a WRITE through the dead key is a remote access error. */
  struct ibv_mr *bmr = ibv_reg_mr(pd, buf + 16384, 4096, ALL_ACCESS);
  struct ibv_mw *mw = ibv_alloc_mw(pd, IBV_MW_TYPE_2);  /* ops.alloc_mw */
  check(bmr && mw, "ops.alloc_mw: a type 2 window");
  if (bmr && mw) {
    uint32_t key = ibv_inc_rkey(mw->rkey);
    /* LOCAL_WRITE among the rights, as programs pass them: mlx5 maps it into the mkey. */
    struct ibv_mw_bind_info bi = {bmr, (uintptr_t)buf + 16384, 4096,
                                  IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE};
    ibv_wr_start(qx);
    qx->wr_id = 20;
    ibv_wr_bind_mw(qx, mw, key, &bi);
    check(ibv_wr_complete(qx) == 0, "wr_bind_mw posted");
    struct cqe e = poll_ex(cq);
    check(e.status == IBV_WC_SUCCESS && e.opcode == IBV_WC_BIND_MW, "the type 2 bind completes successfully");
    /* A type 2 window belongs to the QP that bound it (IBTA 10.6.7.2.2): b's WRITE to a. */
    struct ibv_sge ws = {(uintptr_t)src, 64, mr->lkey};
    struct ibv_send_wr ww = {.wr_id = 21, .sg_list = &ws, .num_sge = 1, .opcode = IBV_WR_RDMA_WRITE,
                             .send_flags = IBV_SEND_SIGNALED,
                             .wr.rdma = {(uintptr_t)buf + 16384, key}};
    struct ibv_send_wr *bad_w = NULL;
    check(ibv_post_send(b, &ww, &bad_w) == 0, "ops.post_send: a WRITE from the peer through the window");
    while (ibv_poll_cq(cqb, 1, w) == 0) {}
    check(w[0].wr_id == 21 && w[0].status == IBV_WC_SUCCESS && memcmp(buf + 16384, src, 64) == 0,
          "the WRITE through the window lands");
    ibv_wr_start(qx);
    qx->wr_id = 22;
    ibv_wr_local_inv(qx, key);
    ibv_wr_complete(qx);
    e = poll_ex(cq);
    check(e.status == IBV_WC_SUCCESS && e.opcode == IBV_WC_LOCAL_INV, "wr_local_inv of the window completes");
    check(ibv_dealloc_mw(mw) == 0, "ops.dealloc_mw");
  }
  /* What the builder cannot build fails the batch at wr_complete, posting nothing (an XRC
   * SRQ number on an RC QP included: mlx5 installs wr_set_xrc_srqn on XRC_SEND QPs only). */
  const char *names[] = {"wr_send_tso", "wr_set_xrc_srqn", "wr_atomic_write"};
  for (int i = 0; i < 3; i++) {
    uint64_t v = 1;
    ibv_wr_start(qx);
    qx->wr_id = 30 + i;
    if (i == 0) ibv_wr_send_tso(qx, src, 16, 1000);
    if (i == 1) { ibv_wr_send(qx); ibv_wr_set_xrc_srqn(qx, 1); }
    if (i == 2) ibv_wr_atomic_write(qx, mr->rkey, (uintptr_t)atom, &v);
    char what[96];
    snprintf(what, sizeof what, "%s: wr_complete EOPNOTSUPP", names[i]);
    check(ibv_wr_complete(qx) == EOPNOTSUPP, what);
  }
  /* wr_abort posts nothing; then a SEND with Invalidate of a type 2 window the responder
   * bound (ibv_post_send BIND_MW on b): b's receive reports the invalidated key. */
  struct ibv_mw *mw2 = ibv_alloc_mw(pd, IBV_MW_TYPE_2);
  if (bmr && mw2) {
    uint32_t key2 = ibv_inc_rkey(mw2->rkey);
    struct ibv_send_wr bw = {.wr_id = 50, .opcode = IBV_WR_BIND_MW, .send_flags = IBV_SEND_SIGNALED,
                             .bind_mw = {mw2, key2, {bmr, (uintptr_t)buf + 16384, 4096, IBV_ACCESS_REMOTE_READ}}};
    struct ibv_send_wr *bad_s = NULL;
    check(ibv_post_send(b, &bw, &bad_s) == 0, "ops.post_send: BIND_MW of a type 2 window on the responder");
    while (ibv_poll_cq(cqb, 1, w) == 0) {}
    check(w[0].wr_id == 50 && w[0].status == IBV_WC_SUCCESS, "the responder's bind completes successfully");
    check(ibv_post_srq_recv(srq, rwr + 2, &bad_r) == 0, "ops.post_srq_recv for the SEND_WITH_INV");
    ibv_wr_start(qx);
    ibv_wr_send(qx);
    ibv_wr_abort(qx);
    ibv_wr_start(qx);
    qx->wr_id = 40;
    ibv_wr_send_inv(qx, key2);
    ibv_wr_set_sge(qx, mr->lkey, (uintptr_t)src, 8);
    check(ibv_wr_complete(qx) == 0, "wr_abort, then wr_send_inv posted");
    while (ibv_poll_cq(ibv_cq_ex_to_cq(cq), 1, w) == 0) {}
    check(w[0].wr_id == 40 && w[0].status == IBV_WC_SUCCESS,
          "nothing of the aborted batch was posted; the SEND_WITH_INV completed");
    while (ibv_poll_cq(cqb, 1, w) == 0) {}
    check(w[0].status == IBV_WC_SUCCESS && (w[0].wc_flags & IBV_WC_WITH_INV) &&
          w[0].invalidated_rkey == key2, "the responder's receive: IBV_WC_WITH_INV, invalidated_rkey the window's key");
    check(ibv_dealloc_mw(mw2) == 0, "ops.dealloc_mw of the invalidated window");
  }

  /* ops.req_notify_cq answers. */
  check(ibv_req_notify_cq(cqb, 0) == 0 && ibv_req_notify_cq(cqb, 1) == 0, "ops.req_notify_cq");
  struct ibv_modify_cq_attr mca = {.attr_mask = IBV_CQ_ATTR_MODERATE, .moderate = {1, 1}};
  check(ibv_modify_cq(cqb, &mca) == EOPNOTSUPP, "ibv_modify_cq (modify_cq, moderation): EOPNOTSUPP");
  struct ibv_qp_rate_limit_attr rla = {.rate_limit = 1000};
  check(ibv_modify_qp_rate_limit(a, &rla) == EOPNOTSUPP, "ibv_modify_qp_rate_limit: EOPNOTSUPP");
  struct ibv_flow_attr fa = {.size = sizeof fa, .port = 1};
  errno = 0;
  check(null_eopnotsupp(ibv_create_flow(a, &fa)), "ibv_create_flow: NULL, EOPNOTSUPP");

  ibv_destroy_qp(a);
  ibv_destroy_qp(b);
  ibv_destroy_srq(srq);
  ibv_destroy_cq(ibv_cq_ex_to_cq(cq));
  ibv_destroy_cq(cqb);
  if (bmr) ibv_dereg_mr(bmr);
}

/* Thread and parent domains (ibv_alloc_td(3), ibv_alloc_parent_domain(3)): a parent
 * domain stands for its PD everywhere a PD is taken; a CQ can name it. */
static void parent_domains(void) {
  struct ibv_td_init_attr tda = {0};
  struct ibv_td *td = ibv_alloc_td(ctx, &tda);  /* verbs_context alloc_td */
  check(td != NULL, "ibv_alloc_td (alloc_td)");
  struct ibv_td_init_attr bad_td = {.comp_mask = 1};
  errno = 0;
  check(ibv_alloc_td(ctx, &bad_td) == NULL && errno == EINVAL, "ibv_alloc_td with an unknown comp_mask: EINVAL");
  struct ibv_parent_domain_init_attr pda = {.pd = pd, .td = td};
  struct ibv_pd *pdom = ibv_alloc_parent_domain(ctx, &pda);  /* alloc_parent_domain */
  check(pdom != NULL, "ibv_alloc_parent_domain over the PD with the thread domain");
  struct ibv_parent_domain_init_attr nested = {.pd = pdom};
  errno = 0;
  check(ibv_alloc_parent_domain(ctx, &nested) == NULL && errno == EINVAL,
        "a parent domain over a parent domain: EINVAL");
  if (!td || !pdom) return;
  struct ibv_cq_init_attr_ex ca = {.cqe = 16, .wc_flags = IBV_WC_STANDARD_FLAGS,
                                   .comp_mask = IBV_CQ_INIT_ATTR_MASK_PD, .parent_domain = pdom};
  struct ibv_cq_ex *cqx = ibv_create_cq_ex(ctx, &ca);
  check(cqx != NULL, "ibv_create_cq_ex naming the parent domain");
  ca.parent_domain = pd;
  errno = 0;
  check(ibv_create_cq_ex(ctx, &ca) == NULL && errno == EINVAL, "ibv_create_cq_ex naming a plain PD as parent: EINVAL");
  if (!cqx) return;
  struct ibv_cq *cq = ibv_cq_ex_to_cq(cqx);
  struct ibv_qp_init_attr ia = {.send_cq = cq, .recv_cq = cq, .qp_type = IBV_QPT_RC,
                                .cap = {.max_send_wr = 4, .max_recv_wr = 4, .max_send_sge = 1, .max_recv_sge = 1}};
  struct ibv_qp *a = ibv_create_qp(pdom, &ia), *b = ibv_create_qp(pdom, &ia);
  check(a && b && a->pd == pdom, "RC QPs created on the parent domain (qp->pd is it)");
  if (!a || !b) return;
  connect_pair(a, b);
  uint8_t *src = buf + 40960, *dst = buf + 45056;
  for (int i = 0; i < 512; i++) src[i] = (uint8_t)(255 - i);
  memset(dst, 0, 512);
  /* The MR of the PD serves QPs of its parent domain: one protection domain. */
  struct ibv_sge rs = {(uintptr_t)dst, 512, mr->lkey}, ss = {(uintptr_t)src, 512, mr->lkey};
  struct ibv_recv_wr rw = {.wr_id = 1, .sg_list = &rs, .num_sge = 1}, *bad_r;
  struct ibv_send_wr sw = {.wr_id = 2, .sg_list = &ss, .num_sge = 1, .opcode = IBV_WR_SEND,
                           .send_flags = IBV_SEND_SIGNALED}, *bad_s;
  check(ibv_post_recv(b, &rw, &bad_r) == 0 && ibv_post_send(a, &sw, &bad_s) == 0, "post on the parent domain's QPs");
  struct ibv_wc w[2];
  int got = 0;
  while (got < 2) got += ibv_poll_cq(cq, 2 - got, w + got);
  check(w[0].status == IBV_WC_SUCCESS && w[1].status == IBV_WC_SUCCESS && memcmp(dst, src, 512) == 0,
        "a SEND between them lands, bytes as sent");
  ibv_destroy_qp(a);
  ibv_destroy_qp(b);
  ibv_destroy_cq(cq);
  /* mlx5 refcounts: the PD and the thread domain outlive the parent domain. */
  check(ibv_dealloc_pd(pd) == EBUSY, "ibv_dealloc_pd of the PD under a parent domain: EBUSY");
  check(ibv_dealloc_td(td) == EBUSY, "ibv_dealloc_td of a thread domain in use: EBUSY");
  check(ibv_dealloc_pd(pdom) == 0, "ibv_dealloc_pd of the parent domain");
  check(ibv_dealloc_td(td) == 0, "ibv_dealloc_td (dealloc_td) once unused");
}

/* A UD QP's wr_set_ud_addr, the only builder call an RC QP does not reach. */
static void ud_builder(void) {
  struct ibv_cq *cq = ibv_create_cq(ctx, 16, NULL, NULL, 0);
  struct ibv_qp_init_attr_ex a = {
      .send_cq = cq, .recv_cq = cq, .qp_type = IBV_QPT_UD,
      .cap = {.max_send_wr = 4, .max_recv_wr = 4, .max_send_sge = 1, .max_recv_sge = 1},
      .comp_mask = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS, .pd = pd,
      .send_ops_flags = IBV_QP_EX_WITH_SEND};
  struct ibv_qp *qp = ibv_create_qp_ex(ctx, &a);
  check(qp != NULL, "ibv_create_qp_ex of a UD QP with IBV_QP_EX_WITH_SEND");
  struct ibv_qp_init_attr_ex bad = a;
  bad.send_ops_flags = IBV_QP_EX_WITH_RDMA_WRITE;
  errno = 0;
  check(null_eopnotsupp(ibv_create_qp_ex(ctx, &bad)), "a UD QP asking for RDMA WRITE: NULL, EOPNOTSUPP");
  if (!qp || !cq) return;
  struct ibv_qp_attr at = {.qp_state = IBV_QPS_INIT, .port_num = 1, .qkey = 0x11111111};
  int rc = ibv_modify_qp(qp, &at, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY);
  at.qp_state = IBV_QPS_RTR;
  rc = rc ? rc : ibv_modify_qp(qp, &at, IBV_QP_STATE);
  at.qp_state = IBV_QPS_RTS;
  at.sq_psn = 0;
  rc = rc ? rc : ibv_modify_qp(qp, &at, IBV_QP_STATE | IBV_QP_SQ_PSN);
  check(rc == 0, "UD QP to RTS");
  uint8_t *dst = buf + 32768, *src = buf;
  memset(dst, 0, 128);
  struct ibv_sge rs = {(uintptr_t)dst, 40 + 64, mr->lkey};  /* 40 bytes of GRH first */
  struct ibv_recv_wr rw = {.wr_id = 7, .sg_list = &rs, .num_sge = 1}, *bad_r;
  ibv_post_recv(qp, &rw, &bad_r);  /* ops.post_recv */
  struct ibv_ah_attr aa = ah_to(&port, port.lid, gid.raw, gidx);
  struct ibv_ah *ah = ibv_create_ah(pd, &aa);
  if (!ah) die("create_ah");
  struct ibv_qp_ex *qx = ibv_qp_to_qp_ex(qp);
  ibv_wr_start(qx);
  qx->wr_id = 8;
  qx->wr_flags = IBV_SEND_SIGNALED;
  ibv_wr_send(qx);
  ibv_wr_set_ud_addr(qx, ah, qp->qp_num, 0x11111111);
  ibv_wr_set_sge(qx, mr->lkey, (uintptr_t)src, 64);
  check(ibv_wr_complete(qx) == 0, "wr_send + wr_set_ud_addr on UD");
  struct ibv_wc w[2];
  int got = 0;
  while (got < 2) got += ibv_poll_cq(cq, 2 - got, w + got);
  const struct ibv_wc *r = w[0].wr_id == 7 ? &w[0] : &w[1];
  check(w[0].status == IBV_WC_SUCCESS && w[1].status == IBV_WC_SUCCESS && r->byte_len == 40 + 64 &&
        r->src_qp == qp->qp_num && memcmp(dst + 40, src, 64) == 0,
        "the UD datagram reached its own QP: byte_len GRH + 64, src_qp, bytes");
  ibv_destroy_ah(ah);
  ibv_destroy_qp(qp);
  ibv_destroy_cq(cq);
}

int main(int argc, char **argv) {
  const struct pair_args args = parse_args(argc, argv, 0);
  setvbuf(stdout, NULL, _IONBF, 0);
  gidx = args.gidx;
  struct ibv_device **list;
  ctx = open_named(args.dev, &list);
  vctx = verbs_get_ctx(ctx);
  if (ibv_query_port(ctx, 1, &port)) die("query_port");
  if (ibv_query_gid(ctx, 1, gidx, &gid)) die("query_gid");
  pd = ibv_alloc_pd(ctx);
  if (!pd) die("alloc_pd");
  if (posix_memalign((void **)&buf, 4096, BUF_SIZE)) die("memalign");
  memset(buf, 0, BUF_SIZE);
  mr = ibv_reg_mr(pd, buf, BUF_SIZE, ALL_ACCESS & ~IBV_ACCESS_MW_BIND);
  if (!mr) die("reg_mr");

  context_pointers();
  cq_ex_pointers();
  parent_domains();
  ud_builder();

  ibv_dereg_mr(mr);
  ibv_dealloc_pd(pd);
  ibv_close_device(ctx);
  ibv_free_device_list(list);
  printf("verify_abi: %d failures\n", failures);
  return failures ? 1 : 0;
}
