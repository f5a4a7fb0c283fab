/* verify_ops: checks byte for byte that RDMA WRITE, READ, SEND and the two atomics move
 * the right data between two processes. Plain verbs, so it runs on rdmasim or real NICs.
 *
 *   server: verify_ops [-d DEV] [-g GIDX] [-p PORT]
 *   client: verify_ops [-d DEV] [-g GIDX] [-p PORT] SERVER_ADDR
 *
 * The client drives; after each operation the side that received data checks it and the
 * server reports its verdict in a SEND. Exit 0 only if every check passed.
 */
#define PAIR_NAME "verify_ops"
#include "verbs_pair.h"

#define BUF_SIZE (1u << 20)
#define MSG_OFF (BUF_SIZE - 8192) /* outgoing control messages live near the end */
#define ATOMIC_OFF (BUF_SIZE - 64)
#define WRITE_LEN (65536 + 123)   /* not a multiple of the MTU: 17 packets at 4096 */
#define READ_OFF (512 * 1024)
#define READ_LEN (3 * 4096 + 7)
#define SEND_LEN 10000            /* three packets at MTU 4096 */
#define RECV_OFF (768 * 1024)   /* receive slots, see post_recv_msg */

struct msg { uint32_t type, len; uint64_t value; uint32_t ok; };
enum { M_WROTE = 1, M_SENT_DATA, M_ATOMICS, M_VERDICT, M_BYE };

static uint8_t pat(int which, size_t i) { return (uint8_t)(i * (which == 0 ? 7 : 13) + (which == 0 ? 3 : 5)); }

static struct ibv_context *ctx;
static struct ibv_pd *pd;
static struct ibv_cq *cq;
static struct ibv_qp *qp;
static struct ibv_mr *mr;
static uint8_t *buf;
static struct ibv_wc wait_wc(void) {
  struct ibv_wc wc = poll_one(cq);
  if (wc.status != IBV_WC_SUCCESS) {
    fprintf(stderr, "verify_ops: completion error %s (wr_id %llu)\n", ibv_wc_status_str(wc.status),
            (unsigned long long)wc.wr_id);
    exit(1);
  }
  return wc;
}

/* Receives cycle through RECV_SLOTS buffers of 16 KiB at RECV_OFF; wr_id is the slot. */
#define RECV_SLOTS 4
#define SLOT_BYTES 16384
static unsigned next_slot;
static uint8_t *slot_buf(uint64_t slot) { return buf + RECV_OFF + slot * SLOT_BYTES; }
static void post_recv_msg(void) {
  uint64_t slot = next_slot++ % RECV_SLOTS;
  memset(slot_buf(slot), 0, SLOT_BYTES);
  struct ibv_sge sge = {(uintptr_t)slot_buf(slot), SLOT_BYTES, mr->lkey};
  struct ibv_recv_wr wr = {.wr_id = slot, .sg_list = &sge, .num_sge = 1}, *bad;
  if (ibv_post_recv(qp, &wr, &bad)) die("post_recv");
}

static void send_msg(struct msg m) {
  memcpy(buf + MSG_OFF + 4096, &m, sizeof m);
  struct ibv_sge sge = {(uintptr_t)(buf + MSG_OFF + 4096), sizeof m, mr->lkey};
  struct ibv_send_wr wr = {.wr_id = 200, .sg_list = &sge, .num_sge = 1, .opcode = IBV_WR_SEND,
                           .send_flags = IBV_SEND_SIGNALED}, *bad;
  if (ibv_post_send(qp, &wr, &bad)) die("post_send");
  wait_wc();
}

static struct ibv_wc last_recv;
static struct msg recv_msg(void) {
  struct ibv_wc wc = wait_wc();
  if (wc.opcode != IBV_WC_RECV || wc.wr_id >= RECV_SLOTS) die("expected a receive completion");
  last_recv = wc;
  struct msg m;
  memcpy(&m, slot_buf(wc.wr_id), sizeof m);
  post_recv_msg();
  return m;
}

static void rdma(enum ibv_wr_opcode op, size_t loff, uint32_t len, uint64_t raddr, uint32_t rkey,
                 uint64_t cmp_add, uint64_t swap) {
  struct ibv_sge sge = {(uintptr_t)(buf + loff), len, mr->lkey};
  struct ibv_send_wr wr = {.wr_id = 300, .sg_list = &sge, .num_sge = 1, .opcode = op,
                           .send_flags = IBV_SEND_SIGNALED}, *bad;
  if (op == IBV_WR_ATOMIC_CMP_AND_SWP || op == IBV_WR_ATOMIC_FETCH_AND_ADD) {
    wr.wr.atomic.remote_addr = raddr;
    wr.wr.atomic.rkey = rkey;
    wr.wr.atomic.compare_add = cmp_add;
    wr.wr.atomic.swap = swap;
  } else {
    wr.wr.rdma.remote_addr = raddr;
    wr.wr.rdma.rkey = rkey;
  }
  if (ibv_post_send(qp, &wr, &bad)) die("post_send (rdma)");
  wait_wc();
}

int main(int argc, char **argv) {
  const struct pair_args args = parse_args(argc, argv, 18600);
  const char *dev = args.dev, *server = args.server;
  const int gidx = args.gidx, port = args.port, is_client = server != NULL;
  struct ibv_device **list;
  ctx = open_named(dev, &list);
  struct ibv_port_attr pa;
  if (ibv_query_port(ctx, 1, &pa)) die("query_port");
  if (!(pd = ibv_alloc_pd(ctx))) die("alloc_pd");
  if (!(cq = ibv_create_cq(ctx, 64, NULL, NULL, 0))) die("create_cq");
  if (posix_memalign((void **)&buf, 4096, BUF_SIZE)) die("memalign");
  for (size_t i = 0; i < BUF_SIZE; i++) buf[i] = pat(is_client ? 0 : 1, i);
  uint64_t atomic_init = 0x1111111111111111ull;
  memcpy(buf + ATOMIC_OFF, &atomic_init, 8);
  mr = ibv_reg_mr(pd, buf, BUF_SIZE, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
                                         IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC);
  if (!mr) die("reg_mr");
  struct ibv_qp_init_attr ia = {.send_cq = cq, .recv_cq = cq, .qp_type = IBV_QPT_RC,
                                .cap = {.max_send_wr = 16, .max_recv_wr = 16, .max_send_sge = 1, .max_recv_sge = 1}};
  if (!(qp = ibv_create_qp(pd, &ia))) die("create_qp");

  struct peer me = {.qpn = qp->qp_num, .psn = is_client ? 100 : 200, .rkey = mr->rkey, .lid = pa.lid,
                    .addr = (uintptr_t)buf}, them;
  union ibv_gid gid;
  if (ibv_query_gid(ctx, 1, gidx, &gid)) die("query_gid");
  memcpy(me.gid, gid.raw, 16);
  int fd = tcp_exchange(server, port, &me, &them);

  qp_to_init(qp, IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC);
  for (int i = 0; i < RECV_SLOTS - 1; i++) post_recv_msg();
  qp_to_rts(qp, &pa, gidx, me.psn, &them);
  /* Both QPs are ready before the client sends anything. */
  char sync = 1;
  if (write(fd, &sync, 1) != 1 || read(fd, &sync, 1) != 1) die("sync");

  if (is_client) {
    struct msg m;
    /* WRITE: our pattern A, [0, WRITE_LEN), lands at the server's offset 0. */
    rdma(IBV_WR_RDMA_WRITE, 0, WRITE_LEN, them.addr, them.rkey, 0, 0);
    send_msg((struct msg){.type = M_WROTE, .len = WRITE_LEN});
    m = recv_msg();
    check(m.type == M_VERDICT && m.ok, "RDMA WRITE of 65659 B: server sees every byte");
    /* READ: the server's pattern B at READ_OFF into our buffer at 256 KiB. */
    rdma(IBV_WR_RDMA_READ, 256 * 1024, READ_LEN, them.addr + READ_OFF, them.rkey, 0, 0);
    int same = 1;
    for (size_t i = 0; i < READ_LEN; i++) same &= buf[256 * 1024 + i] == pat(1, READ_OFF + i);
    check(same, "RDMA READ of 12295 B: every byte is the server's");
    /* SEND: SEND_LEN bytes of pattern A from offset 4096 into the server's posted receive. */
    send_msg((struct msg){.type = M_SENT_DATA, .len = SEND_LEN});
    m = recv_msg(); /* the server has posted its data receive */
    {
      struct ibv_sge sge = {(uintptr_t)(buf + 4096), SEND_LEN, mr->lkey};
      struct ibv_send_wr wr = {.wr_id = 201, .sg_list = &sge, .num_sge = 1, .opcode = IBV_WR_SEND,
                               .send_flags = IBV_SEND_SIGNALED}, *bad;
      if (ibv_post_send(qp, &wr, &bad)) die("post_send data");
      wait_wc();
    }
    m = recv_msg();
    check(m.type == M_VERDICT && m.ok, "SEND of 10000 B: the receive holds every byte, byte_len 10000");
    /* Atomics on the server's 8 bytes at ATOMIC_OFF, which start as 0x1111111111111111. */
    uint64_t orig;
    rdma(IBV_WR_ATOMIC_CMP_AND_SWP, 8192, 8, them.addr + ATOMIC_OFF, them.rkey, 0x1111111111111111ull, 0x2222);
    memcpy(&orig, buf + 8192, 8);
    check(orig == 0x1111111111111111ull, "CMP_AND_SWP (match) returns the original value");
    rdma(IBV_WR_ATOMIC_CMP_AND_SWP, 8192, 8, them.addr + ATOMIC_OFF, them.rkey, 0x9999, 0x3333);
    memcpy(&orig, buf + 8192, 8);
    check(orig == 0x2222, "CMP_AND_SWP (mismatch) returns the current value and leaves it");
    rdma(IBV_WR_ATOMIC_FETCH_AND_ADD, 8192, 8, them.addr + ATOMIC_OFF, them.rkey, 5, 0);
    memcpy(&orig, buf + 8192, 8);
    check(orig == 0x2222, "FETCH_AND_ADD returns the value before the add");
    /* 0x1111.. -> swap -> 0x2222; mismatch leaves 0x2222; +5 -> 0x2227. */
    send_msg((struct msg){.type = M_ATOMICS, .value = 0x2227});
    m = recv_msg();
    check(m.type == M_VERDICT && m.ok, "server's atomic target holds 0x2227");
    send_msg((struct msg){.type = M_BYE});
  } else {
    for (;;) {
      struct msg m = recv_msg(), v = {.type = M_VERDICT, .ok = 1};
      if (m.type == M_BYE) break;
      if (m.type == M_WROTE) {
        for (size_t i = 0; i < m.len; i++) v.ok &= buf[i] == pat(0, i);
        v.ok &= buf[m.len] == pat(1, m.len); /* not one byte more */
        check(v.ok, "RDMA WRITE landed byte for byte, nothing past its end");
        send_msg(v);
      } else if (m.type == M_SENT_DATA) {
        uint32_t len = m.len;
        send_msg(v); /* ready: a receive slot is posted */
        recv_msg();
        struct ibv_wc wc = last_recv;
        v.ok = wc.byte_len == len;
        for (size_t i = 0; i < len; i++) v.ok &= slot_buf(wc.wr_id)[i] == pat(0, 4096 + i);
        check(v.ok, "SEND data received byte for byte with byte_len 10000");
        send_msg(v);
      } else if (m.type == M_ATOMICS) {
        uint64_t now;
        memcpy(&now, buf + ATOMIC_OFF, 8);
        v.ok = now == m.value;
        check(v.ok, "atomic target holds 0x2227");
        send_msg(v);
      }
    }
  }
  close(fd);
  ibv_destroy_qp(qp);
  ibv_dereg_mr(mr);
  ibv_destroy_cq(cq);
  ibv_dealloc_pd(pd);
  ibv_close_device(ctx);
  ibv_free_device_list(list);
  printf("%s: %d failures\n", is_client ? "client" : "server", failures);
  return failures ? 1 : 0;
}
