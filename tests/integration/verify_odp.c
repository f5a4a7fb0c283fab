/* verify_odp: on-demand paging through the libibverbs ABI: odp_caps in
 * ibv_query_device_ex, an explicit ODP MR (IBV_ACCESS_ON_DEMAND) over pages never touched
 * before registration, an implicit ODP MR (ibv_reg_mr(pd, NULL, SIZE_MAX, ...ON_DEMAND))
 * used as lkey and rkey for any address of the process, data moved through both by RDMA
 * WRITE, READ, SEND and an atomic between a pair of RC QPs on one port, and
 * ibv_advise_mr (man ibv_advise_mr) with its refusals.
 *
 *   verify_odp [-d DEV] [-g GIDX]
 *
 * Prints one "ok  :"/"FAIL:" line per check; exits 0 only if every check passed.
 */
#include <sys/mman.h>

#define PAIR_NAME "verify_odp"
#pragma GCC diagnostic ignored "-Wunused-function" /* the TCP exchange of verbs_pair.h */
#include "loopback.h"

#define ODP_LEN (64 * 1024)
#define ODP_ACCESS (IBV_ACCESS_LOCAL_WRITE | ALL_REMOTE | IBV_ACCESS_ON_DEMAND)

static void fill(uint8_t *p, size_t n, uint8_t seed) {
  for (size_t i = 0; i < n; i++) p[i] = (uint8_t)(seed + i * 13);
}

int main(int argc, char **argv) {
  lb_open(argc, argv);
  struct ibv_device_attr_ex ex;
  if (ibv_query_device_ex(ctx, NULL, &ex)) die("query_device_ex");
  /* What a ConnectX-5 reports (mlx5_ib_internal_fill_odp_caps): ODP with implicit MRs, and
   * on RC every operation this test uses. */
  const uint32_t rc_need = IBV_ODP_SUPPORT_SEND | IBV_ODP_SUPPORT_RECV | IBV_ODP_SUPPORT_WRITE |
                           IBV_ODP_SUPPORT_READ | IBV_ODP_SUPPORT_ATOMIC;
  check((ex.odp_caps.general_caps & IBV_ODP_SUPPORT) && (ex.odp_caps.general_caps & IBV_ODP_SUPPORT_IMPLICIT),
        "odp_caps.general_caps: IBV_ODP_SUPPORT | IBV_ODP_SUPPORT_IMPLICIT");
  check((ex.odp_caps.per_transport_caps.rc_odp_caps & rc_need) == rc_need,
        "odp_caps rc: SEND, RECV, WRITE, READ, ATOMIC");

  /* A plain MR for the other side of each transfer. */
  static uint8_t host[16384];
  struct ibv_mr *hmr = ibv_reg_mr(pd, host, sizeof host, IBV_ACCESS_LOCAL_WRITE | ALL_REMOTE);
  if (!hmr) die("reg_mr");

  /* Explicit ODP over fresh anonymous pages: no page exists yet (nothing pinned at
   * registration, ib_umem_odp_get). */
  uint8_t *odp = mmap(NULL, ODP_LEN, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (odp == MAP_FAILED) die("mmap");
  struct ibv_mr *omr = ibv_reg_mr(pd, odp, ODP_LEN, ODP_ACCESS);
  check(omr != NULL, "ibv_reg_mr with IBV_ACCESS_ON_DEMAND over untouched pages");
  if (!omr) die("ODP reg_mr");
  struct lb_pair p = lb_make_pair(NULL, NULL);

  fill(host, 4096, 3);
  lb_post(p.a, IBV_WR_RDMA_WRITE, host, 4096, hmr->lkey, (uintptr_t)(odp + 8192), omr->rkey, 1);
  lb_expect(p.cqa, IBV_WC_SUCCESS, 1, "RDMA WRITE of 4 KiB into the explicit ODP MR");
  check(memcmp(odp + 8192, host, 4096) == 0, "the bytes are in the ODP pages");
  fill(odp + 20000, 3000, 9);
  memset(host + 4096, 0, 3000);
  lb_post(p.a, IBV_WR_RDMA_READ, host + 4096, 3000, hmr->lkey, (uintptr_t)(odp + 20000), omr->rkey, 2);
  lb_expect(p.cqa, IBV_WC_SUCCESS, 2, "RDMA READ of 3000 B from the explicit ODP MR");
  check(memcmp(host + 4096, odp + 20000, 3000) == 0, "READ returns the ODP pages' bytes");
  /* SEND gathered from the ODP MR into a receive in the ODP MR. */
  fill(odp + 40000, 1500, 21);
  memset(odp + 50000, 0, 1500);
  if (lb_post_recv(p.b, odp + 50000, 1500, omr->lkey, 3)) die("post_recv");
  lb_post(p.a, IBV_WR_SEND, odp + 40000, 1500, omr->lkey, 0, 0, 4);
  lb_expect(p.cqa, IBV_WC_SUCCESS, 4, "SEND from the ODP MR");
  lb_expect(p.cqb, IBV_WC_SUCCESS, 3, "its receive into the ODP MR");
  check(memcmp(odp + 50000, odp + 40000, 1500) == 0, "the receive in the ODP MR holds the sent bytes");

  /* ibv_advise_mr (man ibv_advise_mr). Prefetch of an ODP range: 0. */
  struct ibv_sge sge = {(uintptr_t)odp, ODP_LEN, omr->lkey};
  check(ibv_advise_mr(pd, IBV_ADVISE_MR_ADVICE_PREFETCH, 0, &sge, 1) == 0, "advise_mr PREFETCH of the ODP MR: 0");
  check(ibv_advise_mr(pd, IBV_ADVISE_MR_ADVICE_PREFETCH_WRITE, IBV_ADVISE_MR_FLAG_FLUSH, &sge, 1) == 0,
        "advise_mr PREFETCH_WRITE with IBV_ADVISE_MR_FLAG_FLUSH: 0");
  check(ibv_advise_mr(pd, IBV_ADVISE_MR_ADVICE_PREFETCH_NO_FAULT, 0, &sge, 1) == 0,
        "advise_mr PREFETCH_NO_FAULT: 0");
  /* mlx5 odp.c: prefetch through an MR that is not ODP: -EINVAL. */
  struct ibv_sge pinned = {(uintptr_t)host, 64, hmr->lkey};
  check(ibv_advise_mr(pd, IBV_ADVISE_MR_ADVICE_PREFETCH, 0, &pinned, 1) == EINVAL,
        "advise_mr of a pinned (non-ODP) MR: EINVAL");
  /* man ibv_advise_mr: EFAULT "when the range requested is out of the MR bounds" and when
   * "one of the lkeys provided ... is invalid"; EINVAL "the flags are invalid". */
  struct ibv_sge beyond = {(uintptr_t)odp + ODP_LEN - 64, 128, omr->lkey};
  check(ibv_advise_mr(pd, IBV_ADVISE_MR_ADVICE_PREFETCH, 0, &beyond, 1) == EFAULT,
        "advise_mr past the end of the MR: EFAULT");
  struct ibv_sge badkey = {(uintptr_t)odp, 64, omr->lkey ^ 0x00ffff00};
  check(ibv_advise_mr(pd, IBV_ADVISE_MR_ADVICE_PREFETCH, 0, &badkey, 1) == EFAULT,
        "advise_mr with an lkey of no MR: EFAULT");
  check(ibv_advise_mr(pd, IBV_ADVISE_MR_ADVICE_PREFETCH, 0x2, &sge, 1) == EINVAL,
        "advise_mr with an unknown flag: EINVAL");

  /* Implicit ODP: the whole address space under one key (length SIZE_MAX, address NULL). */
  struct ibv_mr *imr = ibv_reg_mr(pd, NULL, SIZE_MAX, ODP_ACCESS);
  check(imr != NULL, "implicit ODP: ibv_reg_mr(pd, NULL, SIZE_MAX, ...ON_DEMAND)");
  if (imr) {
    /* Memory registered nowhere else: a heap buffer and a stack buffer. */
    uint8_t *heap = malloc(8192);
    uint8_t stack_buf[2048];
    if (!heap) die("malloc");
    fill(heap, 8192, 77);
    memset(stack_buf, 0, sizeof stack_buf);
    lb_post(p.a, IBV_WR_RDMA_WRITE, heap, 2048, imr->lkey, (uintptr_t)stack_buf, imr->rkey, 5);
    lb_expect(p.cqa, IBV_WC_SUCCESS, 5, "WRITE heap -> stack through the implicit ODP MR (lkey and rkey)");
    check(memcmp(stack_buf, heap, 2048) == 0, "the stack buffer holds the heap bytes");
    memset(heap + 4096, 0, 2048);
    lb_post(p.a, IBV_WR_RDMA_READ, heap + 4096, 2048, imr->lkey, (uintptr_t)(odp + 8192), imr->rkey, 6);
    lb_expect(p.cqa, IBV_WC_SUCCESS, 6, "READ through the implicit ODP MR");
    check(memcmp(heap + 4096, host, 2048) == 0, "READ returns the bytes written earlier");
    /* Fetch-and-add 1 on a heap word (IBTA 9.4.5: the old value returns, memory + 1). */
    uint64_t word = 0x1000, fetched = 0;
    lb_post(p.a, IBV_WR_ATOMIC_FETCH_AND_ADD, &fetched, 8, imr->lkey, (uintptr_t)&word, imr->rkey, 7);
    lb_expect(p.cqa, IBV_WC_SUCCESS, 7, "FETCH_AND_ADD through the implicit ODP MR");
    check(fetched == 0x1000 && word == 0x1001, "the atomic returned 0x1000 and left 0x1001");
    struct ibv_sge isge = {(uintptr_t)heap, 8192, imr->lkey};
    check(ibv_advise_mr(pd, IBV_ADVISE_MR_ADVICE_PREFETCH, IBV_ADVISE_MR_FLAG_FLUSH, &isge, 1) == 0,
          "advise_mr PREFETCH of a heap range through the implicit MR: 0");
    check(ibv_dereg_mr(imr) == 0, "ibv_dereg_mr of the implicit ODP MR");
    free(heap);
  }

  lb_free_pair(&p);
  check(ibv_dereg_mr(omr) == 0, "ibv_dereg_mr of the explicit ODP MR");
  munmap(odp, ODP_LEN);
  ibv_dereg_mr(hmr);
  lb_close();
  printf("verify_odp: %d failures\n", failures);
  return failures ? 1 : 0;
}
