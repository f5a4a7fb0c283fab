/* Shared by the verbs checks (verify_ops.c, verify_mw.c, verify_status.c, iwarp_semantics.c):
 * check/die, the TCP exchange of QP numbers and keys, and the RC QP's RESET -> INIT -> RTR
 * -> RTS transitions (rc_to_init, rc_to_rts). Plain verbs, so the programs run on rdmasim
 * or on real NICs. */
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

/* What an RC QP's RTR and RTS transitions set besides its peer (man ibv_modify_qp: the ACK
 * timeout is 4.096 us * 2^timeout; rnr_retry 7 retries an RNR NAK forever). */
struct rc_params {
  uint8_t timeout, retry_cnt, rnr_retry, min_rnr_timer, max_rd_atomic, max_dest_rd_atomic;
};
static const struct rc_params rc_defaults = {14, 7, 7, 12, 4, 4};

/* An RC QP's peer: its QP number, the first PSN it sends, and the way to it. */
struct rc_peer { uint32_t qpn, psn; struct ibv_ah_attr ah; };

/* Port 1 toward LID `dlid` / GID `dgid`; with a GRH from source GID `gidx` when the port
 * is Ethernet (RoCE and iWARP address by GID, InfiniBand by LID). */
static struct ibv_ah_attr ah_to(const struct ibv_port_attr *pa, uint16_t dlid, const uint8_t *dgid, int gidx) {
  struct ibv_ah_attr ah;
  memset(&ah, 0, sizeof ah);
  ah.dlid = dlid;
  ah.port_num = 1;
  if (pa->link_layer == IBV_LINK_LAYER_ETHERNET) {
    ah.is_global = 1;
    memcpy(ah.grh.dgid.raw, dgid, 16);
    ah.grh.sgid_index = gidx;
    ah.grh.hop_limit = 64;
  }
  return ah;
}

/* RESET -> INIT of an RC QP on port 1: 0 or ibv_modify_qp's errno. */
static int rc_to_init(struct ibv_qp *qp, int access) {
  struct ibv_qp_attr a = {.qp_state = IBV_QPS_INIT, .port_num = 1, .qp_access_flags = access};
  return ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS);
}

/* INIT -> RTR -> RTS of an RC QP toward `peer` at path MTU `mtu`, sending from PSN
 * `sq_psn`, with the attributes each transition requires (IBTA 11.2.1, man ibv_modify_qp).
 * Returns 0 or the errno of the first transition refused. */
static int rc_to_rts(struct ibv_qp *qp, enum ibv_mtu mtu, const struct rc_peer *peer, uint32_t sq_psn,
                     const struct rc_params *p) {
  struct ibv_qp_attr a;
  memset(&a, 0, sizeof a);
  a.qp_state = IBV_QPS_RTR;
  a.path_mtu = mtu;
  a.dest_qp_num = peer->qpn;
  a.rq_psn = peer->psn;
  a.max_dest_rd_atomic = p->max_dest_rd_atomic;
  a.min_rnr_timer = p->min_rnr_timer;
  a.ah_attr = peer->ah;
  int rc = ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
                                     IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER);
  if (rc) return rc;
  memset(&a, 0, sizeof a);
  a.qp_state = IBV_QPS_RTS;
  a.sq_psn = sq_psn;
  a.timeout = p->timeout;
  a.retry_cnt = p->retry_cnt;
  a.rnr_retry = p->rnr_retry;
  a.max_rd_atomic = p->max_rd_atomic;
  return ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
                                   IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC);
}

static void qp_to_init(struct ibv_qp *qp, int access) {
  if (rc_to_init(qp, access)) die("to INIT");
}

/* INIT -> RTR -> RTS towards `them` (from the TCP exchange); `psn` is our send PSN. */
static void qp_to_rts(struct ibv_qp *qp, const struct ibv_port_attr *pa, int gidx, uint32_t psn,
                      const struct peer *them) {
  const struct rc_peer p = {them->qpn, them->psn, ah_to(pa, them->lid, them->gid, gidx)};
  if (rc_to_rts(qp, pa->active_mtu, &p, psn, &rc_defaults)) die("INIT -> RTR -> RTS");
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
