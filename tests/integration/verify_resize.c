/* verify_resize: ibv_resize_cq through the libibverbs ABI (man ibv_resize_cq): a CQ grown
 * and shrunk keeps the completions it held, in order, and receives new ones; a size below
 * the unpolled completions, above max_cqe or below 1 is refused with EINVAL. One process:
 * a pair of RC QPs on one port connected to each other; b's receive CQ is the one resized.
 *
 *   verify_resize [-d DEV] [-g GIDX]
 *
 * Prints one "ok  :"/"FAIL:" line per check; exits 0 only if every check passed.
 */
#define PAIR_NAME "verify_resize"
#pragma GCC diagnostic ignored "-Wunused-function" /* the TCP exchange of verbs_pair.h */
#include "loopback.h"

#define MSG 256
#define SLOTS 32
static uint8_t *src, *dst;
static struct ibv_mr *src_mr, *dst_mr;

/* Sends messages first..first+n-1 from a to b (message i: MSG bytes of value i), each into
 * its own receive slot of b, and waits for the n send completions: by then b's receive
 * completions are in its CQ (the responder completes the receive before it acknowledges). */
static void send_n(struct lb_pair *p, int first, int n) {
  for (int i = first; i < first + n; i++) {
    const int slot = i % SLOTS;
    memset(src + slot * MSG, i & 0xff, MSG);
    memset(dst + slot * MSG, 0, MSG);
    if (lb_post_recv(p->b, dst + slot * MSG, MSG, dst_mr->lkey, 1000 + i)) die("post_recv");
    if (lb_post(p->a, IBV_WR_SEND, src + slot * MSG, MSG, src_mr->lkey, 0, 0, i)) die("post_send");
  }
  for (int i = first; i < first + n; i++) lb_expect(p->cqa, IBV_WC_SUCCESS, i, "SEND completes");
}

/* Polls n receive completions of messages first.. and checks order, status, length and bytes. */
static void recv_n(struct lb_pair *p, int first, int n, const char *what) {
  int good = 0;
  for (int i = first; i < first + n; i++) {
    struct ibv_wc wc;
    if (lb_poll(p->cqb, &wc, what)) return;
    const uint8_t *d = dst + (i % SLOTS) * MSG;
    int bytes_ok = 1;
    for (int k = 0; k < MSG; k++) bytes_ok &= d[k] == (i & 0xff);
    good += wc.status == IBV_WC_SUCCESS && wc.wr_id == (uint64_t)(1000 + i) && wc.opcode == IBV_WC_RECV &&
            wc.byte_len == MSG && bytes_ok;
  }
  char line[256];
  snprintf(line, sizeof line, "%s: %d/%d receives in order with their bytes", what, good, n);
  check(good == n, line);
}

static int empty(struct ibv_cq *cq) {
  struct ibv_wc wc;
  return ibv_poll_cq(cq, 1, &wc) == 0;
}

int main(int argc, char **argv) {
  lb_open(argc, argv);
  struct ibv_device_attr da;
  if (ibv_query_device(ctx, &da)) die("query_device");
  if (posix_memalign((void **)&src, 4096, SLOTS * MSG) || posix_memalign((void **)&dst, 4096, SLOTS * MSG))
    die("memalign");
  src_mr = ibv_reg_mr(pd, src, SLOTS * MSG, IBV_ACCESS_LOCAL_WRITE);
  dst_mr = ibv_reg_mr(pd, dst, SLOTS * MSG, IBV_ACCESS_LOCAL_WRITE);
  if (!src_mr || !dst_mr) die("reg_mr");

  struct ibv_cq *cq = ibv_create_cq(ctx, 4, NULL, NULL, 0);
  if (!cq) die("create_cq 4");
  struct lb_pair p = lb_make_pair(NULL, cq);

  /* Four completions queued in a CQ of (at least) 4. */
  send_n(&p, 0, 4);
  /* man ibv_resize_cq: "cqe must be at least the number of unpolled entries in the CQ";
   * mlx4_ib_resize_cq / mlx5_ib_resize_cq return -EINVAL otherwise. */
  check(ibv_resize_cq(cq, 3) == EINVAL, "resize below the 4 unpolled CQEs: EINVAL");
  /* mlx5_ib_resize_cq: entries > 1 << log_max_cq_sz: -EINVAL (max_cqe is that bound). */
  check(ibv_resize_cq(cq, da.max_cqe + 1) == EINVAL, "resize above max_cqe: EINVAL");
  /* mlx5_resize_cq: cqe < 0 EINVAL; mlx5_ib_resize_cq: entries < 1 EINVAL. */
  check(ibv_resize_cq(cq, 0) == EINVAL, "resize to 0: EINVAL");
  check(ibv_resize_cq(cq, -1) == EINVAL, "resize to -1: EINVAL");

  /* Grow: the queued completions survive, in order; the CQ takes the larger load. */
  check(ibv_resize_cq(cq, 16) == 0, "grow 4 -> 16 with 4 unpolled CQEs");
  check(cq->cqe >= 16, "cq->cqe is at least the size asked (man ibv_resize_cq)");
  recv_n(&p, 0, 4, "the 4 CQEs queued before the grow");
  check(empty(cq), "nothing else in the CQ");
  send_n(&p, 4, 16);
  recv_n(&p, 4, 16, "16 completions after the grow");

  /* Shrink with completions queued: 2 unpolled, resized to 2. */
  send_n(&p, 20, 2);
  check(ibv_resize_cq(cq, 1) == EINVAL, "shrink below the 2 unpolled CQEs: EINVAL");
  check(ibv_resize_cq(cq, 2) == 0, "shrink 16 -> 2 with 2 unpolled CQEs");
  check(cq->cqe >= 2, "cq->cqe is at least 2");
  recv_n(&p, 20, 2, "the 2 CQEs queued before the shrink");
  send_n(&p, 22, 2);
  recv_n(&p, 22, 2, "2 completions after the shrink");
  check(empty(cq), "the CQ is empty at the end");

  lb_free_pair(&p);
  ibv_dereg_mr(src_mr);
  ibv_dereg_mr(dst_mr);
  free(src);
  free(dst);
  lb_close();
  printf("verify_resize: %d failures\n", failures);
  return failures ? 1 : 0;
}
