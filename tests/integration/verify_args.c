/* verify_args: the argument checks a NIC makes, through the libibverbs ABI, each with the
 * errno rdma-core's man pages (and mlx5 where they are silent) give:
 *   ibv_create_cq(3): cqe above max_cqe, comp_vector not below num_comp_vectors: EINVAL;
 *   ibv_create_ah: an AH without a GRH on an Ethernet (RoCE) port: EINVAL (mlx5_create_ah);
 *     on InfiniBand it is the usual LID-routed AH and is created;
 *   ibv_reg_mr(3): REMOTE_WRITE or REMOTE_ATOMIC without LOCAL_WRITE: EINVAL; ON_DEMAND
 *     is accepted exactly when odp_caps offer IBV_ODP_SUPPORT, else EOPNOTSUPP (the
 *     kernel's ib_check_mr_access; verify_odp.c moves data through ODP MRs);
 *   ibv_query_device_ex(3): phys_port_cnt_ex equals phys_port_cnt.
 *
 *   verify_args [-d DEV] [-g GIDX]
 *
 * Prints one "ok  :"/"FAIL:" line per check; exits 0 only if every check passed.
 */
#include <errno.h>

#define PAIR_NAME "verify_args"
#pragma GCC diagnostic ignored "-Wunused-function" /* the TCP exchange of verbs_pair.h */
#include "verbs_pair.h"

static int null_errno(const void *p, int err) { return p == NULL && errno == err; }

int main(int argc, char **argv) {
  const struct pair_args args = parse_args(argc, argv, 0);
  setvbuf(stdout, NULL, _IONBF, 0);
  struct ibv_device **list;
  struct ibv_context *ctx = open_named(args.dev, &list);
  struct ibv_device_attr da;
  struct ibv_device_attr_ex dx;
  struct ibv_port_attr port;
  union ibv_gid gid;
  if (ibv_query_device(ctx, &da) || ibv_query_device_ex(ctx, NULL, &dx) || ibv_query_port(ctx, 1, &port) ||
      ibv_query_gid(ctx, 1, args.gidx, &gid))
    die("queries");
  struct ibv_pd *pd = ibv_alloc_pd(ctx);
  if (!pd) die("alloc_pd");

  check(dx.phys_port_cnt_ex == da.phys_port_cnt && dx.orig_attr.max_cqe == da.max_cqe,
        "ibv_query_device_ex: phys_port_cnt_ex == phys_port_cnt, orig_attr as ibv_query_device");
  const int odp = (dx.odp_caps.general_caps & IBV_ODP_SUPPORT) != 0;

  /* CQ sizes and vectors. */
  struct ibv_cq *cq = ibv_create_cq(ctx, da.max_cqe, NULL, NULL, 0);
  check(cq != NULL, "ibv_create_cq with cqe == max_cqe is created");
  if (cq) ibv_destroy_cq(cq);
  errno = 0;
  check(null_errno(ibv_create_cq(ctx, da.max_cqe + 1, NULL, NULL, 0), EINVAL), "cqe == max_cqe + 1: EINVAL");
  errno = 0;
  check(null_errno(ibv_create_cq(ctx, 0, NULL, NULL, 0), EINVAL), "cqe 0: EINVAL");
  errno = 0;
  check(null_errno(ibv_create_cq(ctx, 16, NULL, NULL, ctx->num_comp_vectors), EINVAL),
        "comp_vector == num_comp_vectors: EINVAL");
  errno = 0;
  check(null_errno(ibv_create_cq(ctx, 16, NULL, NULL, -1), EINVAL), "comp_vector -1: EINVAL");
  struct ibv_cq_init_attr_ex cx = {.cqe = 16, .comp_vector = ctx->num_comp_vectors,
                                   .wc_flags = IBV_WC_STANDARD_FLAGS};
  errno = 0;
  check(null_errno(ibv_create_cq_ex(ctx, &cx), EINVAL), "ibv_create_cq_ex with comp_vector past the last: EINVAL");

  /* Address handles: RoCE addresses by GID, so no GRH is no address. */
  struct ibv_ah_attr aa = {.dlid = port.lid, .port_num = 1};
  errno = 0;
  struct ibv_ah *ah = ibv_create_ah(pd, &aa);
  if (port.link_layer == IBV_LINK_LAYER_ETHERNET) {
    check(null_errno(ah, EINVAL), "RoCE: ibv_create_ah without a GRH: EINVAL");
  } else {
    check(ah != NULL, "InfiniBand: ibv_create_ah without a GRH (LID routed) is created");
  }
  if (ah) ibv_destroy_ah(ah);
  aa.is_global = 1;
  aa.grh.dgid = gid;
  aa.grh.sgid_index = args.gidx;
  aa.grh.hop_limit = 64;
  ah = ibv_create_ah(pd, &aa);
  check(ah != NULL, "ibv_create_ah with a GRH is created");
  if (ah) ibv_destroy_ah(ah);
  aa.port_num = da.phys_port_cnt + 1;
  errno = 0;
  check(null_errno(ibv_create_ah(pd, &aa), EINVAL), "ibv_create_ah on a port past phys_port_cnt: EINVAL");
  aa.port_num = 1;
  aa.grh.sgid_index = port.gid_tbl_len;
  errno = 0;
  check(null_errno(ibv_create_ah(pd, &aa), EINVAL), "ibv_create_ah with sgid_index == gid_tbl_len: EINVAL");

  /* Access flags of memory regions. */
  static char buf[4096];
  errno = 0;
  check(null_errno(ibv_reg_mr(pd, buf, sizeof buf, IBV_ACCESS_REMOTE_WRITE), EINVAL),
        "ibv_reg_mr REMOTE_WRITE without LOCAL_WRITE: EINVAL");
  errno = 0;
  check(null_errno(ibv_reg_mr(pd, buf, sizeof buf, IBV_ACCESS_REMOTE_ATOMIC | IBV_ACCESS_REMOTE_READ), EINVAL),
        "ibv_reg_mr REMOTE_ATOMIC without LOCAL_WRITE: EINVAL");
  errno = 0;
  struct ibv_mr *odp_mr = ibv_reg_mr(pd, buf, sizeof buf, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_ON_DEMAND);
  if (odp)
    check(odp_mr != NULL, "ibv_reg_mr ON_DEMAND on a device offering IBV_ODP_SUPPORT is registered");
  else
    check(null_errno(odp_mr, EOPNOTSUPP), "ibv_reg_mr ON_DEMAND with no ODP capability: EOPNOTSUPP");
  if (odp_mr) ibv_dereg_mr(odp_mr);
  struct ibv_mr *mr = ibv_reg_mr(pd, buf, sizeof buf, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
  check(mr != NULL, "ibv_reg_mr LOCAL_WRITE | REMOTE_WRITE is registered");
  if (mr) ibv_dereg_mr(mr);

  ibv_dealloc_pd(pd);
  ibv_close_device(ctx);
  ibv_free_device_list(list);
  printf("verify_args: %d failures\n", failures);
  return failures ? 1 : 0;
}
