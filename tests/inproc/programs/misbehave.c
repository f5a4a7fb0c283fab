/* A verbs-program stand-in for the runtime's failure and scale tests: argv[1] says what to
 * do. ok: return 0; exit3: return 3; segv: write through a null pointer; overflow: recurse
 * until the stack's guard page; hang_poll: poll an empty CQ forever (only the time limit
 * ends it); hang_oob: wait for a key nobody publishes; ring: rank r publishes r, reads rank
 * (r + 1) % size's value, computes r ns, meets the others at a barrier, prints what it read;
 * tunables: prints $GLIBC_TUNABLES (the study's own environment, which it shares). */
#include <infiniband/verbs.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rdmasim/oob.h"

static int deep(volatile char *prev, int n) {
  volatile char frame[4096];
  frame[0] = (char)n;
  frame[4095] = prev ? prev[0] : 0;
  return deep(frame, n + 1) + frame[100];  /* not a tail call: every frame stays */
}

int rdmasim_main(int argc, char **argv) {
  const char *what = argc > 1 ? argv[1] : "ok";
  printf("%s starts as rank %d of %d\n", what, rdmasim_rank(), rdmasim_size());
  if (!strcmp(what, "exit3")) return 3;
  if (!strcmp(what, "tunables")) {
    const char *t = getenv("GLIBC_TUNABLES");
    printf("GLIBC_TUNABLES=%s\n", t ? t : "(unset)");
    return 0;
  }
  if (!strcmp(what, "segv")) {
    volatile int *p = NULL;
    *p = 1;
  }
  if (!strcmp(what, "overflow")) return deep(NULL, 0);
  if (!strcmp(what, "hang_poll")) {
    struct ibv_device **list = ibv_get_device_list(NULL);
    struct ibv_context *ctx = list ? ibv_open_device(list[0]) : NULL;
    struct ibv_cq *cq = ctx ? ibv_create_cq(ctx, 4, NULL, NULL, 0) : NULL;
    struct ibv_wc wc;
    if (!cq) return 9;
    while (ibv_poll_cq(cq, 1, &wc) == 0) {}
    return 0;
  }
  if (!strcmp(what, "hang_oob")) {
    int v;
    return rdmasim_oob_get("nobody-puts-this", &v, sizeof v);
  }
  if (!strcmp(what, "ring")) {
    const int r = rdmasim_rank(), n = rdmasim_size();
    char key[32];
    int got = -1;
    snprintf(key, sizeof key, "rank%d", r);
    if (rdmasim_oob_put(key, &r, sizeof r)) return 4;
    snprintf(key, sizeof key, "rank%d", (r + 1) % n);
    if (rdmasim_oob_get(key, &got, sizeof got)) return 5;
    rdmasim_compute((unsigned)r);
    if (rdmasim_oob_barrier()) return 6;
    printf("read %d\n", got);
    return got == (r + 1) % n ? 0 : 7;
  }
  return 0;
}
