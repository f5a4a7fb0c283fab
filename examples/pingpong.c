/* Pingpong over RC SEND/RECV between ranks 0 and 1: rank 0 sends SIZE bytes, rank 1 answers
 * with the same bytes, ITERS times; rank 0 checks every reply and prints the mean round trip
 * (rdmasim_time_ns: virtual time in a study, the monotonic clock in a real process).
 * usage: pingpong [ITERS [SIZE]] (defaults 100, 64) */
#include "common.h"

int rdmasim_main(int argc, char **argv) {
  const int iters = argc > 1 ? atoi(argv[1]) : 100;
  const uint32_t size = argc > 2 ? (uint32_t)atoi(argv[2]) : 64;
  const int rank = rdmasim_rank();
  if (rdmasim_size() != 2 || iters < 1 || size < 1 || size > 65536) {
    fprintf(stderr, "%s: needs 2 processes, ITERS >= 1, 1 <= SIZE <= 65536\n", argv[0]);
    return 2;
  }
  struct ex_dev d;
  struct ibv_qp *qp;
  if (ex_open(&d, 2 * (size_t)size, 4) || !(qp = ex_qp(&d, 2))) return 3;
  if (ex_connect(&d, qp, rank ? "pong" : "ping", rank ? "ping" : "pong")) return 4;
  /* The receive for the first message is posted before either side sends. */
  if (ex_post_recv(&d, qp, size, size, 0)) return 5;
  rdmasim_oob_barrier();
  struct ibv_wc wc;
  uint64_t start = rdmasim_time_ns();
  int bad = 0;
  for (int i = 0; i < iters; i++) {
    if (rank == 0) {
      for (uint32_t k = 0; k < size; k++) d.buf[k] = (uint8_t)(i + k);
      if (ex_post_send(&d, qp, 0, size, 1)) return 6;
      int got = 0, sent = 0;
      while (!(got && sent)) {  /* the send's and the reply's completions, either order */
        if (ex_wait(&d, &wc)) return 7;
        if (wc.opcode == IBV_WC_RECV) got = 1;
        else sent = 1;
      }
      bad += memcmp(d.buf, d.buf + size, size) != 0;
      if (i + 1 < iters && ex_post_recv(&d, qp, size, size, 0)) return 8;
    } else {
      do {
        if (ex_wait(&d, &wc)) return 7;
      } while (wc.opcode != IBV_WC_RECV);
      if (i + 1 < iters && ex_post_recv(&d, qp, size, size, 0)) return 8;
      memcpy(d.buf, d.buf + size, size);
      if (ex_post_send(&d, qp, 0, size, 1)) return 6;
      do {
        if (ex_wait(&d, &wc)) return 7;
      } while (wc.opcode != IBV_WC_SEND);
    }
  }
  if (rank == 0) {
    const double rtt_us = (double)(rdmasim_time_ns() - start) / iters / 1000.0;
    printf("%s: %d round trips of %u B, %d bad replies, mean round trip %.3f us\n", argv[0],
           iters, size, bad, rtt_us);
  }
  rdmasim_oob_barrier();
  ibv_destroy_qp(qp);
  ex_close(&d);
  return bad ? 1 : 0;
}
