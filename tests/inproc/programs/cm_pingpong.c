/* An rdma_cm program run as fibers in a study (virtual time): rank 0 listens, rank 1
 * connects with private data, and the two exchange messages over the RC QP the CM set up.
 * Built against the system <rdma/rdma_cma.h>; the study loads the drop-in librdmacm.
 *
 * usage (argv[1..]): server PORT ROUNDS | client SERVER_IP PORT ROUNDS | noone IP PORT [iwarp]
 *   server: bind 0.0.0.0:PORT, listen, publish "cm.listening", accept with private data
 *           "srv-hello", echo ROUNDS messages, expect DISCONNECTED.
 *   client: wait for "cm.listening", resolve, connect with private data "cli-hello", check
 *           the server's private data, ROUNDS ping-pongs of 64 B with byte checks, disconnect.
 *   noone:  connect to IP:PORT where nobody listens: expect REJECTED. InfiniBand and
 *           RoCE: status 8, the IBTA CM REJ reason "Invalid Service ID" that a CM with no
 *           listener for the service answers (the kernel's IB_CM_REJ_INVALID_SERVICE_ID);
 *           iWARP ("iwarp"): the peer's TCP answers the SYN with a RST, and the kernel's
 *           cma_iw_handler reports -ECONNREFUSED (-111).
 * Prints "ok <what>" or "FAIL <what>" lines with the virtual time; returns the failures. */
#include <arpa/inet.h>
#include <rdma/rdma_cma.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rdmasim/oob.h"

#define MSG 64

static int failures;

static void check(int ok, const char *what) {
  printf("%s %s at %llu ns\n", ok ? "ok" : "FAIL", what, (unsigned long long)rdmasim_time_ns());
  if (!ok) failures++;
}

/* The next event on ch; it must be `want` (the event is acked; private data copied). */
static int expect(struct rdma_event_channel *ch, enum rdma_cm_event_type want,
                  struct rdma_cm_id **id, char *pdata, size_t pdata_len) {
  struct rdma_cm_event *e;
  if (rdma_get_cm_event(ch, &e)) {
    printf("FAIL rdma_get_cm_event: %m\n");
    failures++;
    return -1;
  }
  int ok = e->event == want;
  if (!ok) printf("got %s (status %d), want %s\n", rdma_event_str(e->event), e->status, rdma_event_str(want));
  if (id) *id = e->id;
  if (pdata && e->param.conn.private_data && e->param.conn.private_data_len) {
    size_t n = e->param.conn.private_data_len < pdata_len ? e->param.conn.private_data_len : pdata_len;
    memcpy(pdata, e->param.conn.private_data, n);
    pdata[n - 1] = 0;
  }
  int status = e->status;
  rdma_ack_cm_event(e);
  check(ok, rdma_event_str(want));
  return ok ? status : -1;
}

struct conn {
  struct ibv_pd *pd;
  struct ibv_cq *cq;
  struct ibv_mr *mr;
  char *buf;  /* [0, MSG): receive, [MSG, 2 MSG): send */
};

static int setup_qp(struct rdma_cm_id *id, struct conn *c) {
  c->pd = ibv_alloc_pd(id->verbs);
  c->cq = ibv_create_cq(id->verbs, 16, NULL, NULL, 0);
  c->buf = calloc(2, MSG);
  if (!c->pd || !c->cq || !c->buf) return -1;
  c->mr = ibv_reg_mr(c->pd, c->buf, 2 * MSG, IBV_ACCESS_LOCAL_WRITE);
  struct ibv_qp_init_attr a = {.send_cq = c->cq, .recv_cq = c->cq, .qp_type = IBV_QPT_RC,
                               .cap = {.max_send_wr = 4, .max_recv_wr = 4, .max_send_sge = 1, .max_recv_sge = 1}};
  return c->mr ? rdma_create_qp(id, c->pd, &a) : -1;
}

static int post_recv(struct rdma_cm_id *id, struct conn *c) {
  struct ibv_sge s = {(uintptr_t)c->buf, MSG, c->mr->lkey};
  struct ibv_recv_wr wr = {.wr_id = 1, .sg_list = &s, .num_sge = 1}, *bad;
  return ibv_post_recv(id->qp, &wr, &bad);
}

static int send_msg(struct rdma_cm_id *id, struct conn *c) {
  struct ibv_sge s = {(uintptr_t)c->buf + MSG, MSG, c->mr->lkey};
  struct ibv_send_wr wr = {.wr_id = 2, .sg_list = &s, .num_sge = 1, .opcode = IBV_WR_SEND,
                           .send_flags = IBV_SEND_SIGNALED}, *bad;
  return ibv_post_send(id->qp, &wr, &bad);
}

/* Polls until one completion of wr_id `want` (busy-polling: virtual time moves per poll). */
static int wait_wc(struct conn *c, uint64_t want) {
  struct ibv_wc wc;
  for (;;) {
    int n = ibv_poll_cq(c->cq, 1, &wc);
    if (n < 0) return -1;
    if (n == 0) continue;
    if (wc.status != IBV_WC_SUCCESS) {
      printf("FAIL wc %s\n", ibv_wc_status_str(wc.status));
      return -1;
    }
    if (wc.wr_id == want) return 0;
  }
}

static void fill(char *p, int round, int from_server) {
  for (int i = 0; i < MSG; i++) p[i] = (char)(round * 7 + i + (from_server ? 100 : 0));
}

static int server(int port, int rounds) {
  struct rdma_event_channel *ch = rdma_create_event_channel();
  struct rdma_cm_id *listen_id, *id;
  check(ch != NULL, "create_event_channel");
  if (!ch || rdma_create_id(ch, &listen_id, NULL, RDMA_PS_TCP)) return 1;
  struct sockaddr_in sin = {.sin_family = AF_INET, .sin_port = htons(port)};
  check(rdma_bind_addr(listen_id, (struct sockaddr *)&sin) == 0, "bind 0.0.0.0");
  check(rdma_listen(listen_id, 4) == 0, "listen");
  rdmasim_oob_put("cm.listening", "1", 1);
  char pdata[32] = "";
  if (expect(ch, RDMA_CM_EVENT_CONNECT_REQUEST, &id, pdata, sizeof pdata) < 0) return 1;
  check(strcmp(pdata, "cli-hello") == 0, "client's private data in the request");
  struct conn c;
  if (setup_qp(id, &c)) return 1;
  check(post_recv(id, &c) == 0, "post_recv before accept");
  struct rdma_conn_param p = {.private_data = "srv-hello", .private_data_len = 10,
                              .responder_resources = 1, .initiator_depth = 1};
  check(rdma_accept(id, &p) == 0, "accept");
  if (expect(ch, RDMA_CM_EVENT_ESTABLISHED, NULL, NULL, 0) < 0) return 1;
  int good = 0;
  for (int r = 0; r < rounds; r++) {
    if (wait_wc(&c, 1)) break;
    char want[MSG];
    fill(want, r, 0);
    good += memcmp(c.buf, want, MSG) == 0;
    post_recv(id, &c);
    fill(c.buf + MSG, r, 1);
    if (send_msg(id, &c) || wait_wc(&c, 2)) break;
  }
  check(good == rounds, "every ping's bytes");
  expect(ch, RDMA_CM_EVENT_DISCONNECTED, NULL, NULL, 0);
  rdma_destroy_qp(id);
  rdma_destroy_id(id);
  rdma_destroy_id(listen_id);
  rdma_destroy_event_channel(ch);
  return 0;
}

static int resolve(struct rdma_event_channel *ch, struct rdma_cm_id *id, const char *ip, int port) {
  struct sockaddr_in dst = {.sin_family = AF_INET, .sin_port = htons(port)};
  inet_pton(AF_INET, ip, &dst.sin_addr);
  if (rdma_resolve_addr(id, NULL, (struct sockaddr *)&dst, 2000)) return -1;
  if (expect(ch, RDMA_CM_EVENT_ADDR_RESOLVED, NULL, NULL, 0) < 0) return -1;
  if (rdma_resolve_route(id, 2000)) return -1;
  return expect(ch, RDMA_CM_EVENT_ROUTE_RESOLVED, NULL, NULL, 0) < 0 ? -1 : 0;
}

static int client(const char *ip, int port, int rounds) {
  char one;
  rdmasim_oob_get("cm.listening", &one, 1);
  struct rdma_event_channel *ch = rdma_create_event_channel();
  struct rdma_cm_id *id;
  if (!ch || rdma_create_id(ch, &id, NULL, RDMA_PS_TCP) || resolve(ch, id, ip, port)) return 1;
  struct conn c;
  if (setup_qp(id, &c)) return 1;
  check(post_recv(id, &c) == 0, "post_recv before connect");
  struct rdma_conn_param p = {.private_data = "cli-hello", .private_data_len = 10,
                              .responder_resources = 1, .initiator_depth = 1, .retry_count = 7};
  check(rdma_connect(id, &p) == 0, "connect");
  char pdata[32] = "";
  if (expect(ch, RDMA_CM_EVENT_ESTABLISHED, NULL, pdata, sizeof pdata) < 0) return 1;
  check(strcmp(pdata, "srv-hello") == 0, "server's private data in the reply");
  int good = 0;
  unsigned long long t0 = rdmasim_time_ns();
  for (int r = 0; r < rounds; r++) {
    fill(c.buf + MSG, r, 0);
    if (send_msg(id, &c) || wait_wc(&c, 2) || wait_wc(&c, 1)) break;
    char want[MSG];
    fill(want, r, 1);
    good += memcmp(c.buf, want, MSG) == 0;
    post_recv(id, &c);
  }
  check(good == rounds, "every pong's bytes");
  printf("%d round trips of %d B in %llu ns\n", rounds, MSG, (unsigned long long)(rdmasim_time_ns() - t0));
  check(rdma_disconnect(id) == 0, "disconnect");
  rdma_destroy_qp(id);
  rdma_destroy_id(id);
  rdma_destroy_event_channel(ch);
  return 0;
}

static int noone(const char *ip, int port, int iwarp) {
  struct rdma_event_channel *ch = rdma_create_event_channel();
  struct rdma_cm_id *id;
  if (!ch || rdma_create_id(ch, &id, NULL, RDMA_PS_TCP) || resolve(ch, id, ip, port)) return 1;
  struct conn c;
  if (setup_qp(id, &c)) return 1;
  check(rdma_connect(id, NULL) == 0, "connect (nobody listens)");
  int want = iwarp ? -111 : 8;
  check(expect(ch, RDMA_CM_EVENT_REJECTED, NULL, NULL, 0) == want,
        iwarp ? "status -111 (ECONNREFUSED: RST)" : "status 8 (Invalid Service ID)");
  rdma_destroy_qp(id);
  rdma_destroy_id(id);
  rdma_destroy_event_channel(ch);
  return 0;
}

int rdmasim_main(int argc, char **argv) {
  int rc = 2;
  if (argc == 4 && !strcmp(argv[1], "server")) rc = server(atoi(argv[2]), atoi(argv[3]));
  else if (argc == 5 && !strcmp(argv[1], "client")) rc = client(argv[2], atoi(argv[3]), atoi(argv[4]));
  else if ((argc == 4 || (argc == 5 && !strcmp(argv[4], "iwarp"))) && !strcmp(argv[1], "noone"))
    rc = noone(argv[2], atoi(argv[3]), argc == 5);
  else fprintf(stderr, "usage: server PORT ROUNDS | client IP PORT ROUNDS | noone IP PORT [iwarp]\n");
  printf("%d failures\n", failures);
  return rc ? rc : failures;
}
