/* A small RPC service over RC SEND/RECV: rank 0 is the server, every other rank a client
 * with its own QP to it. A request is {client, seq, a, b}; the server answers
 * {client, seq, a + b}. Each client makes CALLS calls, one at a time, checks every answer
 * and prints how many were right and the mean call time. The server prints how many it
 * served. usage: rpc [CALLS] (default 10) */
#include "common.h"

struct request { uint32_t client, seq; uint64_t a, b; };
struct reply { uint32_t client, seq; uint64_t sum; };
enum { SLOT = 64 };   /* bytes per message slot in the buffer */

int rdmasim_main(int argc, char **argv) {
  const int calls = argc > 1 ? atoi(argv[1]) : 10;
  const int rank = rdmasim_rank(), n = rdmasim_size();
  char mine[32], theirs[32];
  if (n < 2 || n > 256 || calls < 1) {
    fprintf(stderr, "%s: needs 2..256 processes and CALLS >= 1\n", argv[0]);
    return 2;
  }
  struct ex_dev d;
  if (rank == 0) {
    /* Slot 2c holds client c's request, slot 2c + 1 the reply to it. */
    if (ex_open(&d, (size_t)SLOT * 2 * (size_t)n, 2 * n)) return 3;
    struct ibv_qp **qps = calloc((size_t)n, sizeof *qps);
    for (int c = 1; c < n; c++) {
      snprintf(mine, sizeof mine, "server-for-%d", c);
      snprintf(theirs, sizeof theirs, "client-%d", c);
      if (!(qps[c] = ex_qp(&d, 2)) || ex_connect(&d, qps[c], mine, theirs)) return 4;
      if (ex_post_recv(&d, qps[c], (size_t)SLOT * 2 * c, SLOT, (uint64_t)c)) return 5;
    }
    rdmasim_oob_barrier();
    int served = 0;
    while (served < calls * (n - 1)) {
      struct ibv_wc wc;
      if (ex_wait(&d, &wc)) return 6;
      if (wc.opcode != IBV_WC_RECV) continue;
      const int c = (int)wc.wr_id;
      struct request q;
      memcpy(&q, d.buf + (size_t)SLOT * 2 * c, sizeof q);
      struct reply r = {q.client, q.seq, q.a + q.b};
      memcpy(d.buf + (size_t)SLOT * (2 * c + 1), &r, sizeof r);
      if (ex_post_recv(&d, qps[c], (size_t)SLOT * 2 * c, SLOT, (uint64_t)c) ||
          ex_post_send(&d, qps[c], (size_t)SLOT * (2 * c + 1), sizeof r, 0))
        return 7;
      served++;
    }
    printf("%s: server served %d calls from %d clients\n", argv[0], served, n - 1);
    rdmasim_oob_barrier();
    for (int c = 1; c < n; c++) ibv_destroy_qp(qps[c]);
    free(qps);
    ex_close(&d);
    return 0;
  }
  /* A client: slot 0 its request, slot 1 the reply. */
  struct ibv_qp *qp;
  if (ex_open(&d, 2 * SLOT, 4) || !(qp = ex_qp(&d, 2))) return 3;
  snprintf(mine, sizeof mine, "client-%d", rank);
  snprintf(theirs, sizeof theirs, "server-for-%d", rank);
  if (ex_connect(&d, qp, mine, theirs)) return 4;
  rdmasim_oob_barrier();
  int right = 0;
  const uint64_t start = rdmasim_time_ns();
  for (int i = 0; i < calls; i++) {
    struct request q = {(uint32_t)rank, (uint32_t)i, 1000u * (uint64_t)rank, (uint64_t)i};
    memcpy(d.buf, &q, sizeof q);
    if (ex_post_recv(&d, qp, SLOT, SLOT, 1) || ex_post_send(&d, qp, 0, sizeof q, 0)) return 5;
    int got = 0, sent = 0;
    struct ibv_wc wc;
    while (!(got && sent)) {
      if (ex_wait(&d, &wc)) return 6;
      if (wc.opcode == IBV_WC_RECV) got = 1;
      else sent = 1;
    }
    struct reply r;
    memcpy(&r, d.buf + SLOT, sizeof r);
    right += r.client == (uint32_t)rank && r.seq == (uint32_t)i && r.sum == q.a + q.b;
  }
  printf("%s: client %d: %d of %d answers right, mean call %.3f us\n", argv[0], rank, right, calls,
         (double)(rdmasim_time_ns() - start) / calls / 1000.0);
  rdmasim_oob_barrier();
  ibv_destroy_qp(qp);
  ex_close(&d);
  return right == calls ? 0 : 1;
}
