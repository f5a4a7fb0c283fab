/* Shared by the two-process verbs checks (verify_ops.c, verify_mw.c): the TCP exchange of
 * QP numbers and keys, and the RC QP's RESET -> INIT -> RTR -> RTS transitions. Plain
 * verbs, so the programs run on rdmasim or on real NICs. */
#pragma once

#include <arpa/inet.h>
#include <infiniband/verbs.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

struct peer { uint32_t qpn, psn, rkey; uint16_t lid; uint8_t gid[16]; uint64_t addr; };

#ifndef PAIR_NAME
#define PAIR_NAME "verbs_pair"
#endif
static int die(const char *what) { fprintf(stderr, PAIR_NAME ": %s\n", what); exit(1); }

static int failures;

static void check(int cond, const char *what) {
  printf("%s: %s\n", cond ? "ok  " : "FAIL", what);
  if (!cond) failures++;
}

/* The next completion of `cq` (busy polling). */
static struct ibv_wc poll_one(struct ibv_cq *cq) {
  struct ibv_wc wc;
  int n;
  while ((n = ibv_poll_cq(cq, 1, &wc)) == 0) {}
  if (n < 0) die("poll_cq failed");
  return wc;
}

static void read_full(int fd, void *p, size_t n) {
  size_t got = 0;
  while (got < n) {
    ssize_t r = read(fd, (char *)p + got, n - got);
    if (r <= 0) die("read from peer");
    got += r;
  }
}

/* Client (host != NULL) connects, server accepts; both send `me` and read `them`. */
static int tcp_exchange(const char *host, int port, struct peer *me, struct peer *them) {
  int fd;
  if (host) {
    struct addrinfo hints = {.ai_family = AF_INET, .ai_socktype = SOCK_STREAM}, *res;
    char ps[16];
    snprintf(ps, sizeof ps, "%d", port);
    if (getaddrinfo(host, ps, &hints, &res)) die("getaddrinfo");
    fd = socket(AF_INET, SOCK_STREAM, 0);
    int ok = -1;
    for (int i = 0; i < 100 && ok; i++) {
      ok = connect(fd, res->ai_addr, res->ai_addrlen);
      if (ok) usleep(50000);
    }
    freeaddrinfo(res);
    if (ok) die("connect");
  } else {
    int ls = socket(AF_INET, SOCK_STREAM, 0), one = 1;
    setsockopt(ls, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(port), .sin_addr.s_addr = INADDR_ANY};
    if (bind(ls, (struct sockaddr *)&a, sizeof a) || listen(ls, 1)) die("bind/listen");
    fd = accept(ls, NULL, NULL);
    close(ls);
    if (fd < 0) die("accept");
  }
  if (write(fd, me, sizeof *me) != sizeof *me) die("write peer info");
  read_full(fd, them, sizeof *them);
  return fd;
}

static void qp_to_init(struct ibv_qp *qp, int access) {
  struct ibv_qp_attr a = {.qp_state = IBV_QPS_INIT, .port_num = 1, .qp_access_flags = access};
  if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS)) die("to INIT");
}

/* INIT -> RTR -> RTS towards `them`; `psn` is our send PSN. */
static void qp_to_rts(struct ibv_qp *qp, const struct ibv_port_attr *pa, int gidx, uint32_t psn,
                      const struct peer *them) {
  struct ibv_qp_attr a;
  memset(&a, 0, sizeof a);
  a.qp_state = IBV_QPS_RTR;
  a.path_mtu = pa->active_mtu;
  a.dest_qp_num = them->qpn;
  a.rq_psn = them->psn;
  a.max_dest_rd_atomic = 4;
  a.min_rnr_timer = 12;
  a.ah_attr.dlid = them->lid;
  a.ah_attr.port_num = 1;
  if (pa->link_layer == IBV_LINK_LAYER_ETHERNET) {
    a.ah_attr.is_global = 1;
    memcpy(a.ah_attr.grh.dgid.raw, them->gid, 16);
    a.ah_attr.grh.sgid_index = gidx;
    a.ah_attr.grh.hop_limit = 64;
  }
  if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
                                IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER)) die("to RTR");
  memset(&a, 0, sizeof a);
  a.qp_state = IBV_QPS_RTS;
  a.sq_psn = psn;
  a.timeout = 14;
  a.retry_cnt = 7;
  a.rnr_retry = 7;
  a.max_rd_atomic = 4;
  if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
                                IBV_QP_MAX_QP_RD_ATOMIC)) die("to RTS");
}

/* [-d DEV] [-g GIDX] [-p PORT] [SERVER]: server is NULL on the server side. */
struct pair_args { const char *dev, *server; int gidx, port; };
static struct pair_args parse_args(int argc, char **argv, int default_port) {
  struct pair_args a = {NULL, NULL, 0, default_port};
  int opt;
  while ((opt = getopt(argc, argv, "d:g:p:")) != -1) {
    if (opt == 'd') a.dev = optarg;
    else if (opt == 'g') a.gidx = atoi(optarg);
    else if (opt == 'p') a.port = atoi(optarg);
    else die("usage: [-d DEV] [-g GIDX] [-p PORT] [SERVER]");
  }
  a.server = optind < argc ? argv[optind] : NULL;
  return a;
}

/* The device named `dev` (or the first one) opened; *list must be freed by the caller. */
static struct ibv_context *open_named(const char *dev, struct ibv_device ***list) {
  int n;
  *list = ibv_get_device_list(&n);
  if (!*list || n == 0) die("no devices");
  struct ibv_device *d = (*list)[0];
  for (int i = 0; dev && i < n; i++)
    if (!strcmp(ibv_get_device_name((*list)[i]), dev)) d = (*list)[i];
  struct ibv_context *c = ibv_open_device(d);
  if (!c) die("open_device");
  return c;
}
