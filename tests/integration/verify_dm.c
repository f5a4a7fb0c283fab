/* verify_dm: device memory through the libibverbs ABI (man ibv_alloc_dm): max_dm_size in
 * ibv_query_device_ex, ibv_alloc_dm / ibv_free_dm, ibv_memcpy_to_dm / ibv_memcpy_from_dm
 * and ibv_reg_dm_mr, whose zero-based MR is used by RDMA WRITE, READ, an atomic (remote
 * side) and a SEND (local side) between a pair of RC QPs on one port; the bytes are
 * checked through ibv_memcpy_from_dm. Plus the refusals, each with its errno.
 *
 *   verify_dm [-d DEV] [-g GIDX]
 *
 * Prints one "ok  :"/"FAIL:" line per check; exits 0 only if every check passed.
 */
#define PAIR_NAME "verify_dm"
#pragma GCC diagnostic ignored "-Wunused-function" /* the TCP exchange of verbs_pair.h */
#include "loopback.h"

#define DM_SIZE 8192
#define MR_OFF 4096  /* the DM MR covers the DM's second half */
#define MR_LEN 4096
#define DM_ACCESS (IBV_ACCESS_LOCAL_WRITE | ALL_REMOTE | IBV_ACCESS_ZERO_BASED)

static int null_errno(const void *p, int want) { return p == NULL && errno == want; }

static void fill(uint8_t *p, size_t n, uint8_t seed) {
  for (size_t i = 0; i < n; i++) p[i] = (uint8_t)(seed + i * 7);
}

int main(int argc, char **argv) {
  lb_open(argc, argv);
  struct ibv_device_attr_ex ex;
  if (ibv_query_device_ex(ctx, NULL, &ex)) die("query_device_ex");
  check(ex.max_dm_size >= DM_SIZE, "max_dm_size reported by ibv_query_device_ex (at least the 8 KiB used here)");

  /* Refusals at allocation. mlx5_alloc_dm: a length above max_dm_size EINVAL; a comp_mask
   * bit it does not know EINVAL (check_comp_mask). */
  struct ibv_alloc_dm_attr too_big = {.length = ex.max_dm_size + 1};
  errno = 0;
  check(null_errno(ibv_alloc_dm(ctx, &too_big), EINVAL), "ibv_alloc_dm above max_dm_size: NULL, EINVAL");
  struct ibv_alloc_dm_attr bad_mask = {.length = 4096, .comp_mask = 1};
  errno = 0;
  check(null_errno(ibv_alloc_dm(ctx, &bad_mask), EINVAL), "ibv_alloc_dm with an unknown comp_mask bit: NULL, EINVAL");
  /* The device's memory is finite: all of it held, another allocation fails ENOMEM. */
  struct ibv_alloc_dm_attr all = {.length = ex.max_dm_size};
  struct ibv_dm *whole = ibv_alloc_dm(ctx, &all);
  check(whole != NULL, "ibv_alloc_dm of max_dm_size");
  struct ibv_alloc_dm_attr small = {.length = 4096};
  errno = 0;
  check(null_errno(ibv_alloc_dm(ctx, &small), ENOMEM), "ibv_alloc_dm with the device memory all taken: NULL, ENOMEM");
  if (whole) check(ibv_free_dm(whole) == 0, "ibv_free_dm of it: 0");

  struct ibv_alloc_dm_attr da = {.length = DM_SIZE, .log_align_req = 3};
  struct ibv_dm *dm = ibv_alloc_dm(ctx, &da);
  if (!dm) die("alloc_dm");
  check(dm->context == ctx, "the DM belongs to the context");

  /* Copies: round trip, then mlx5_copy_to_dm / mlx5_copy_from_dm's refusals: past the end
   * EFAULT; offset or length not a multiple of 4 EINVAL (from_dm: the offset only). */
  static uint8_t host[DM_SIZE], back[DM_SIZE];
  fill(host, DM_SIZE, 1);
  check(ibv_memcpy_to_dm(dm, 0, host, DM_SIZE) == 0, "ibv_memcpy_to_dm of the whole DM");
  memset(back, 0, DM_SIZE);
  check(ibv_memcpy_from_dm(back, dm, 0, DM_SIZE) == 0 && memcmp(host, back, DM_SIZE) == 0,
        "ibv_memcpy_from_dm reads the same bytes back");
  check(ibv_memcpy_to_dm(dm, DM_SIZE - 4, host, 8) == EFAULT, "memcpy_to_dm past the end: EFAULT");
  check(ibv_memcpy_from_dm(back, dm, DM_SIZE - 4, 8) == EFAULT, "memcpy_from_dm past the end: EFAULT");
  check(ibv_memcpy_to_dm(dm, 2, host, 8) == EINVAL, "memcpy_to_dm at an offset not a multiple of 4: EINVAL");
  check(ibv_memcpy_to_dm(dm, 0, host, 6) == EINVAL, "memcpy_to_dm of a length not a multiple of 4: EINVAL");
  check(ibv_memcpy_from_dm(back, dm, 2, 8) == EINVAL, "memcpy_from_dm at an offset not a multiple of 4: EINVAL");
  check(ibv_memcpy_from_dm(back, dm, 4, 5) == 0 && memcmp(back, host + 4, 5) == 0,
        "memcpy_from_dm of 5 bytes (any length)");

  /* ibv_reg_dm_mr refusals: ibv_cmd_reg_dm_mr needs IBV_ACCESS_ZERO_BASED (EINVAL);
   * mlx5_reg_dm_mr allows no MW_BIND (EINVAL); uverbs: offset + length past the DM EINVAL. */
  errno = 0;
  check(null_errno(ibv_reg_dm_mr(pd, dm, 0, 4096, IBV_ACCESS_LOCAL_WRITE), EINVAL),
        "ibv_reg_dm_mr without IBV_ACCESS_ZERO_BASED: NULL, EINVAL");
  errno = 0;
  check(null_errno(ibv_reg_dm_mr(pd, dm, 0, 4096, DM_ACCESS | IBV_ACCESS_MW_BIND), EINVAL),
        "ibv_reg_dm_mr with IBV_ACCESS_MW_BIND: NULL, EINVAL");
  errno = 0;
  check(null_errno(ibv_reg_dm_mr(pd, dm, 4096, DM_SIZE, DM_ACCESS), EINVAL),
        "ibv_reg_dm_mr past the end of the DM: NULL, EINVAL");

  struct ibv_mr *dmr = ibv_reg_dm_mr(pd, dm, MR_OFF, MR_LEN, DM_ACCESS);
  if (!dmr) die("reg_dm_mr");
  check(dmr->addr == NULL && dmr->length == MR_LEN, "the DM MR is zero-based: addr NULL, length as asked");
  check(ibv_free_dm(dm) == EBUSY, "ibv_free_dm with an MR on it: EBUSY");

  static uint8_t buf[16384];
  struct ibv_mr *mr = ibv_reg_mr(pd, buf, sizeof buf, IBV_ACCESS_LOCAL_WRITE | ALL_REMOTE);
  if (!mr) die("reg_mr");
  struct lb_pair p = lb_make_pair(NULL, NULL);

  /* RDMA WRITE into the DM MR at its (zero-based) address 0x100: DM bytes MR_OFF + 0x100... */
  fill(buf, 256, 50);
  lb_post(p.a, IBV_WR_RDMA_WRITE, buf, 256, mr->lkey, 0x100, dmr->rkey, 1);
  lb_expect(p.cqa, IBV_WC_SUCCESS, 1, "RDMA WRITE of 256 B to the DM MR at 0x100");
  check(ibv_memcpy_from_dm(back, dm, MR_OFF + 0x100, 256) == 0 && memcmp(back, buf, 256) == 0,
        "the written bytes are in the DM at MR offset + 0x100");
  /* RDMA READ of the DM MR's first 512 B: what memcpy_to_dm put at DM offset MR_OFF. */
  memset(buf + 4096, 0, 512);
  lb_post(p.a, IBV_WR_RDMA_READ, buf + 4096, 512, mr->lkey, 0, dmr->rkey, 2);
  lb_expect(p.cqa, IBV_WC_SUCCESS, 2, "RDMA READ of 512 B from the DM MR at 0");
  check(memcmp(buf + 4096, host + MR_OFF, 0x100) == 0 && memcmp(buf + 4096 + 0x100, buf, 256) == 0,
        "READ returns the DM's bytes (the copied pattern, then the WRITE at 0x100)");
  /* Fetch-and-add 1 at DM MR address 0x800 (8-byte aligned): the old value comes back, the
   * DM holds old + 1 (IBTA 9.4.5; the operand's byte order is the host's, as libibverbs'). */
  uint64_t old, now, expect_old;
  memcpy(&expect_old, host + MR_OFF + 0x800, 8);
  lb_post(p.a, IBV_WR_ATOMIC_FETCH_AND_ADD, buf + 8192, 8, mr->lkey, 0x800, dmr->rkey, 3);
  lb_expect(p.cqa, IBV_WC_SUCCESS, 3, "FETCH_AND_ADD on the DM MR at 0x800");
  memcpy(&old, buf + 8192, 8);
  check(ibv_memcpy_from_dm(&now, dm, MR_OFF + 0x800, 8) == 0 && old == expect_old && now == expect_old + 1,
        "the atomic returned the DM's value and left it incremented by 1");
  /* A SEND gathered from the DM MR (local SGE at zero-based 0x200) into a host receive. */
  memset(buf + 12288, 0, 1024);
  if (lb_post_recv(p.b, buf + 12288, 1024, mr->lkey, 4)) die("post_recv");
  lb_post(p.a, IBV_WR_SEND, (void *)(uintptr_t)0x200, 1024, dmr->lkey, 0, 0, 5);
  lb_expect(p.cqa, IBV_WC_SUCCESS, 5, "SEND of 1 KiB gathered from the DM MR at 0x200");
  lb_expect(p.cqb, IBV_WC_SUCCESS, 4, "its receive");
  check(ibv_memcpy_from_dm(back, dm, MR_OFF + 0x200, 1024) == 0 && memcmp(buf + 12288, back, 1024) == 0,
        "the receive holds the DM's bytes from MR offset 0x200");
  /* Past the DM MR's end: NAK Remote Access (man ibv_poll_cq IBV_WC_REM_ACCESS_ERR). */
  lb_post(p.a, IBV_WR_RDMA_WRITE, buf, 64, mr->lkey, MR_LEN - 8, dmr->rkey, 6);
  lb_expect(p.cqa, IBV_WC_REM_ACCESS_ERR, 6, "WRITE past the end of the DM MR");

  lb_free_pair(&p);
  check(ibv_dereg_mr(dmr) == 0, "ibv_dereg_mr of the DM MR");
  check(ibv_free_dm(dm) == 0, "ibv_free_dm once no MR is on it: 0");
  ibv_dereg_mr(mr);
  lb_close();
  printf("verify_dm: %d failures\n", failures);
  return failures ? 1 : 0;
}
