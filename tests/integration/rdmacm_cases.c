/* rdma_cm paths the rdmacm-utils tools do not take, checked through the drop-in
 * librdmacm.so.1 on a simulated fabric (tests/integration/rdmacm_cases.sh runs the pairs).
 *
 *   rdmacm_cases server ADDR PORT    passive side, then for each of the client's connections:
 *     1. a REQ whose private data must read "req-1": rejected with private data "go away";
 *     2. a REQ with "req-2": accepted with "welcome"; ESTABLISHED; then DISCONNECTED when
 *        the client disconnects (its DREQ); then rdma_disconnect answers with the DREP;
 *     3. accepted; then DISCONNECTED when the client dies (the daemon's DREQ on its behalf).
 *   rdmacm_cases client ADDR PORT [hang]   active side of 1 and 2 (with "hang": of 3 only,
 *     printing "connected" and then sleeping until killed); before 1, a connection to
 *     PORT + 1, where nobody listens (REJECTED), and on iWARP a UD rdma_connect (EOPNOTSUPP).
 *
 * On iWARP the messages are the TCP handshake and the MPA Request/Reply (RFC 5044), whose
 * private data is exactly what the peer sent (no fixed-size MAD field), and a refusal is
 * REJECTED with -ECONNREFUSED, as the kernel's cma_iw_handler reports iw_cxgb4's connect
 * reply status for an MPA Reply with the R bit or a RST.
 *
 * Every event is awaited through epoll on the channel's fd set O_NONBLOCK (rdma_get_cm_event
 * must then say EAGAIN on an empty channel). Exit 0 when every check holds; each failure
 * prints "FAIL: ...".
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <rdma/rdma_cma.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <unistd.h>

static int fails;
#define CHECK(c, ...)                                    \
  do {                                                   \
    if (!(c)) {                                          \
      printf("FAIL: %s: ", #c);                          \
      printf(__VA_ARGS__);                               \
      printf("\n");                                      \
      fails++;                                           \
    }                                                    \
  } while (0)

static struct rdma_event_channel *ch;
static int ep;
static int iwarp; /* the id's device is an iWARP RNIC */

static void note_transport(struct rdma_cm_id *id) {
  if (id->verbs) iwarp = id->verbs->device->transport_type == IBV_TRANSPORT_IWARP;
}

/* The next event, waiting for it with epoll (up to 10 s). */
static struct rdma_cm_event *next_event(void) {
  struct rdma_cm_event *e = NULL;
  for (;;) {
    if (rdma_get_cm_event(ch, &e) == 0) return e;
    if (errno != EAGAIN) {
      printf("FAIL: rdma_get_cm_event: %s\n", strerror(errno));
      exit(1);
    }
    struct epoll_event ev;
    int n = epoll_wait(ep, &ev, 1, 10000);
    if (n <= 0) {
      printf("FAIL: no event within 10 s\n");
      exit(1);
    }
  }
}

static struct rdma_cm_event *expect(enum rdma_cm_event_type want) {
  struct rdma_cm_event *e = next_event();
  printf("event %s status %d\n", rdma_event_str(e->event), e->status);
  if (e->event != want) {
    printf("FAIL: expected %s\n", rdma_event_str(want));
    exit(1);
  }
  return e;
}

static void make_qp(struct rdma_cm_id *id) {
  struct ibv_qp_init_attr a;
  memset(&a, 0, sizeof a);
  a.qp_type = IBV_QPT_RC;
  a.cap.max_send_wr = a.cap.max_recv_wr = 4;
  a.cap.max_send_sge = a.cap.max_recv_sge = 1;
  if (rdma_create_qp(id, NULL, &a)) {
    printf("FAIL: rdma_create_qp: %s\n", strerror(errno));
    exit(1);
  }
}

static void setup(void) {
  ch = rdma_create_event_channel();
  if (!ch) {
    printf("FAIL: rdma_create_event_channel: %s\n", strerror(errno));
    exit(1);
  }
  int fl = fcntl(ch->fd, F_GETFL);
  fcntl(ch->fd, F_SETFL, fl | O_NONBLOCK);
  struct rdma_cm_event *e;
  CHECK(rdma_get_cm_event(ch, &e) == -1 && errno == EAGAIN, "an empty non-blocking channel: errno %d", errno);
  ep = epoll_create1(0);
  struct epoll_event ev = {.events = EPOLLIN};
  if (epoll_ctl(ep, EPOLL_CTL_ADD, ch->fd, &ev)) {
    printf("FAIL: epoll_ctl on the channel fd: %s\n", strerror(errno));
    exit(1);
  }
}

static struct sockaddr_in addr_of(const char *ip, const char *port) {
  struct sockaddr_in a;
  memset(&a, 0, sizeof a);
  a.sin_family = AF_INET;
  a.sin_port = htons((uint16_t)atoi(port));
  inet_pton(AF_INET, ip, &a.sin_addr);
  return a;
}

static int private_is(const struct rdma_conn_param *p, const char *s) {
  return p->private_data && p->private_data_len >= strlen(s) + 1 &&
         memcmp(p->private_data, s, strlen(s) + 1) == 0;
}

static int server(const char *ip, const char *port) {
  struct rdma_cm_id *listen_id;
  struct sockaddr_in a = addr_of(ip, port);
  if (rdma_create_id(ch, &listen_id, NULL, RDMA_PS_TCP) || rdma_bind_addr(listen_id, (struct sockaddr *)&a) ||
      rdma_listen(listen_id, 4)) {
    printf("FAIL: listen: %s\n", strerror(errno));
    return 1;
  }
  printf("listening\n");
  fflush(stdout);
  /* 1: reject with private data. */
  struct rdma_cm_event *e = expect(RDMA_CM_EVENT_CONNECT_REQUEST);
  note_transport(e->id);
  /* The kernel's cma reports the REQ's whole private data field past rdma_cm's header:
   * IB_CM_REQ_PRIVATE_DATA_SIZE 92 - 36 = 56 bytes; on iWARP the MPA Request's private
   * data length: "req-1" and its NUL, 6 bytes. */
  CHECK(private_is(&e->param.conn, "req-1"), "REQ private data");
  CHECK(e->param.conn.private_data_len == (iwarp ? 6u : 56u), "REQ private data length %u",
        e->param.conn.private_data_len);
  struct rdma_cm_id *id = e->id;
  rdma_ack_cm_event(e);
  CHECK(rdma_reject(id, "go away", 8) == 0, "rdma_reject: %s", strerror(errno));
  rdma_destroy_id(id);
  /* 2: accept with private data; the client disconnects. */
  e = expect(RDMA_CM_EVENT_CONNECT_REQUEST);
  CHECK(private_is(&e->param.conn, "req-2"), "REQ private data");
  id = e->id;
  rdma_ack_cm_event(e);
  make_qp(id);
  struct rdma_conn_param cp;
  memset(&cp, 0, sizeof cp);
  cp.private_data = "welcome";
  cp.private_data_len = 8;
  CHECK(rdma_accept(id, &cp) == 0, "rdma_accept: %s", strerror(errno));
  rdma_ack_cm_event(expect(RDMA_CM_EVENT_ESTABLISHED));
  e = expect(RDMA_CM_EVENT_DISCONNECTED);
  CHECK(e->status == 0, "DISCONNECTED status %d", e->status);
  rdma_ack_cm_event(e);
  CHECK(rdma_disconnect(id) == 0, "rdma_disconnect after the DREQ (the DREP): %s", strerror(errno));
  rdma_destroy_qp(id);
  rdma_destroy_id(id);
  /* 3: the client is killed while connected. */
  e = expect(RDMA_CM_EVENT_CONNECT_REQUEST);
  id = e->id;
  rdma_ack_cm_event(e);
  make_qp(id);
  CHECK(rdma_accept(id, NULL) == 0, "rdma_accept: %s", strerror(errno));
  rdma_ack_cm_event(expect(RDMA_CM_EVENT_ESTABLISHED));
  printf("connected\n");
  fflush(stdout);
  e = expect(RDMA_CM_EVENT_DISCONNECTED);
  CHECK(e->status == 0, "DISCONNECTED status %d", e->status);
  rdma_ack_cm_event(e);
  rdma_disconnect(id);
  rdma_destroy_qp(id);
  rdma_destroy_id(id);
  rdma_destroy_id(listen_id);
  printf("server done, %d failures\n", fails);
  return fails != 0;
}

static struct rdma_cm_id *connect_to(const char *ip, const char *port, const char *pdata) {
  struct rdma_cm_id *id;
  struct sockaddr_in a = addr_of(ip, port);
  if (rdma_create_id(ch, &id, NULL, RDMA_PS_TCP) || rdma_resolve_addr(id, NULL, (struct sockaddr *)&a, 2000)) {
    printf("FAIL: resolve_addr: %s\n", strerror(errno));
    exit(1);
  }
  rdma_ack_cm_event(expect(RDMA_CM_EVENT_ADDR_RESOLVED));
  CHECK(rdma_resolve_route(id, 2000) == 0, "rdma_resolve_route: %s", strerror(errno));
  rdma_ack_cm_event(expect(RDMA_CM_EVENT_ROUTE_RESOLVED));
  note_transport(id);
  make_qp(id);
  struct rdma_conn_param cp;
  memset(&cp, 0, sizeof cp);
  cp.private_data = pdata;
  cp.private_data_len = pdata ? (uint8_t)(strlen(pdata) + 1) : 0;
  cp.retry_count = 7;
  cp.rnr_retry_count = 7;
  CHECK(rdma_connect(id, &cp) == 0, "rdma_connect: %s", strerror(errno));
  return id;
}

static int client(const char *ip, const char *port, int hang) {
  if (!hang) {
    /* 0: nobody listens on PORT + 1. IB/RoCE: the remote CM's REJ, reason 8 "invalid
     * service ID" (IBTA 12.6.7), as the status; iWARP: the peer's RST, -ECONNREFUSED. */
    char other[16];
    snprintf(other, sizeof other, "%d", atoi(port) + 1);
    struct rdma_cm_id *id = connect_to(ip, other, "nobody");
    struct rdma_cm_event *e = expect(RDMA_CM_EVENT_REJECTED);
    CHECK(e->status == (iwarp ? -ECONNREFUSED : 8), "REJECTED (no listener) status %d", e->status);
    rdma_ack_cm_event(e);
    rdma_destroy_qp(id);
    rdma_destroy_id(id);
    if (iwarp) {  /* UD has no iWARP connection: rdma_connect fails (the kernel: EOPNOTSUPP) */
      struct sockaddr_in a = addr_of(ip, port);
      CHECK(rdma_create_id(ch, &id, NULL, RDMA_PS_UDP) == 0, "rdma_create_id UDP: %s", strerror(errno));
      CHECK(rdma_resolve_addr(id, NULL, (struct sockaddr *)&a, 2000) == 0, "resolve_addr: %s", strerror(errno));
      rdma_ack_cm_event(expect(RDMA_CM_EVENT_ADDR_RESOLVED));
      CHECK(rdma_resolve_route(id, 2000) == 0, "rdma_resolve_route: %s", strerror(errno));
      rdma_ack_cm_event(expect(RDMA_CM_EVENT_ROUTE_RESOLVED));
      struct rdma_conn_param cp;
      memset(&cp, 0, sizeof cp);
      CHECK(rdma_connect(id, &cp) == -1 && errno == EOPNOTSUPP, "UD rdma_connect on iWARP: errno %d", errno);
      rdma_destroy_id(id);
    }
    /* 1: REJECTED, status 28 (IBTA REJ reason "consumer reject", which rdma_cm reports as the
     * status), with the listener's private data: the REJ's whole private data field,
     * IB_CM_REJ_PRIVATE_DATA_SIZE 148 bytes, as the kernel's cma reports it. iWARP: the MPA
     * Reply with R set, -ECONNREFUSED, its private data as sent ("go away" and NUL, 8). */
    id = connect_to(ip, port, "req-1");
    e = expect(RDMA_CM_EVENT_REJECTED);
    CHECK(e->status == (iwarp ? -ECONNREFUSED : 28), "REJECTED status %d", e->status);
    CHECK(private_is(&e->param.conn, "go away"), "REJ private data");
    CHECK(e->param.conn.private_data_len == (iwarp ? 8u : 148u), "REJ private data length %u",
          e->param.conn.private_data_len);
    rdma_ack_cm_event(e);
    rdma_destroy_qp(id);
    rdma_destroy_id(id);
    /* 2: ESTABLISHED with the REP's private data (IB_CM_REP_PRIVATE_DATA_SIZE 196), then
     * disconnect: DISCONNECTED when the DREP comes. */
    id = connect_to(ip, port, "req-2");
    e = expect(RDMA_CM_EVENT_ESTABLISHED);
    CHECK(private_is(&e->param.conn, "welcome"), "REP private data");
    CHECK(e->param.conn.private_data_len == (iwarp ? 8u : 196u), "REP private data length %u",
          e->param.conn.private_data_len);
    rdma_ack_cm_event(e);
    CHECK(rdma_disconnect(id) == 0, "rdma_disconnect: %s", strerror(errno));
    e = expect(RDMA_CM_EVENT_DISCONNECTED);
    CHECK(e->status == 0, "DISCONNECTED status %d", e->status);
    rdma_ack_cm_event(e);
    rdma_destroy_qp(id);
    rdma_destroy_id(id);
    printf("client done, %d failures\n", fails);
    return fails != 0;
  }
  connect_to(ip, port, NULL);
  rdma_ack_cm_event(expect(RDMA_CM_EVENT_ESTABLISHED));
  printf("connected pid %d\n", (int)getpid());
  fflush(stdout);
  for (;;) pause();
}

int main(int argc, char **argv) {
  setvbuf(stdout, NULL, _IOLBF, 0);
  if (argc < 4) {
    fprintf(stderr, "usage: %s server|client ADDR PORT [hang]\n", argv[0]);
    return 2;
  }
  setup();
  if (strcmp(argv[1], "server") == 0) return server(argv[2], argv[3]);
  return client(argv[2], argv[3], argc > 4 && strcmp(argv[4], "hang") == 0);
}
