/* rdmasim/oob.h for real processes (a program run through the daemon with `rdmasim exec`):
 * the same calls over TCP on 127.0.0.1. Rank 0 serves the keys and the barrier from a
 * thread; every rank, 0 included, is its client. Environment: RDMASIM_RANK, RDMASIM_SIZE,
 * RDMASIM_OOB_PORT (rank 0 listens there). rdmasim_compute does nothing: a real process
 * computes for real. rdmasim_time_ns is CLOCK_MONOTONIC. */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "rdmasim/oob.h"

enum { PUT = 1, GET = 2, BARRIER = 3, MAX_KEYS = 4096, MAX_CLIENTS = 1024 };
struct msg { uint32_t op, key_len, val_len, status; };

static int sock = -1, my_rank = -1, nranks = 0;
static pthread_mutex_t sock_mu = PTHREAD_MUTEX_INITIALIZER;

static int env_int(const char *name, int def) {
  const char *v = getenv(name);
  return v && *v ? atoi(v) : def;
}

static int full(int fd, void *p, size_t n, int writing) {
  size_t done = 0;
  while (done < n) {
    ssize_t r = writing ? write(fd, (char *)p + done, n - done) : read(fd, (char *)p + done, n - done);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return -1;
    done += (size_t)r;
  }
  return 0;
}

/* ---- rank 0's server: a table of keys, the clients waiting for keys, the barrier ---- */
struct key { char *name; void *val; uint32_t len; };
static struct key keys[MAX_KEYS];
static int nkeys;
struct waiter { int fd; char *name; };
static struct waiter waiters[MAX_CLIENTS];
static int nwaiters, barrier_fds[MAX_CLIENTS], nbarrier;

static struct key *find(const char *name) {
  for (int i = 0; i < nkeys; i++)
    if (!strcmp(keys[i].name, name)) return &keys[i];
  return NULL;
}

static void answer(int fd, uint32_t status, const void *val, uint32_t len) {
  struct msg m = {0, 0, len, status};
  full(fd, &m, sizeof m, 1);
  if (len) full(fd, (void *)val, len, 1);
}

static void serve_one(int fd) {
  struct msg m;
  if (full(fd, &m, sizeof m, 0)) return;
  char *name = calloc(1, m.key_len + 1);
  void *val = m.val_len ? malloc(m.val_len) : NULL;
  if (full(fd, name, m.key_len, 0) || (m.val_len && full(fd, val, m.val_len, 0))) return;
  if (m.op == PUT) {
    if (find(name) || nkeys == MAX_KEYS) {
      answer(fd, EEXIST, NULL, 0);
      return;
    }
    keys[nkeys++] = (struct key){name, val, m.val_len};
    answer(fd, 0, NULL, 0);
    for (int i = 0; i < nwaiters; i++)
      if (!strcmp(waiters[i].name, name)) {
        answer(waiters[i].fd, 0, val, m.val_len);
        waiters[i--] = waiters[--nwaiters];
      }
  } else if (m.op == GET) {
    struct key *k = find(name);
    if (k) answer(fd, 0, k->val, k->len);
    else waiters[nwaiters++] = (struct waiter){fd, name};
  } else if (m.op == BARRIER) {
    barrier_fds[nbarrier++] = fd;
    if (nbarrier == nranks) {
      for (int i = 0; i < nbarrier; i++) answer(barrier_fds[i], 0, NULL, 0);
      nbarrier = 0;
    }
  }
}

static void *server(void *arg) {
  int ls = (int)(intptr_t)arg, fds[MAX_CLIENTS], n = 0;
  while (n < nranks) fds[n++] = accept(ls, NULL, NULL);
  close(ls);
  for (;;) {
    fd_set set;
    FD_ZERO(&set);
    int top = -1;
    for (int i = 0; i < n; i++)
      if (fds[i] >= 0) {
        FD_SET(fds[i], &set);
        if (fds[i] > top) top = fds[i];
      }
    if (top < 0 || select(top + 1, &set, NULL, NULL, NULL) < 0) return NULL;
    for (int i = 0; i < n; i++)
      if (fds[i] >= 0 && FD_ISSET(fds[i], &set)) {
        char c;
        if (recv(fds[i], &c, 1, MSG_PEEK) <= 0) {
          close(fds[i]);
          fds[i] = -1;
        } else {
          serve_one(fds[i]);
        }
      }
  }
}

static int connect_once(void) {
  if (sock >= 0) return 0;
  my_rank = env_int("RDMASIM_RANK", 0);
  nranks = env_int("RDMASIM_SIZE", 1);
  const int port = env_int("RDMASIM_OOB_PORT", 18600);
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (my_rank == 0) {
    int ls = socket(AF_INET, SOCK_STREAM, 0), one = 1;
    setsockopt(ls, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (bind(ls, (struct sockaddr *)&a, sizeof a) || listen(ls, MAX_CLIENTS)) return errno;
    pthread_t t;
    pthread_create(&t, NULL, server, (void *)(intptr_t)ls);
    pthread_detach(t);
  }
  for (int i = 0; i < 200; i++) {  /* rank 0 may start last: retry for 10 s */
    sock = socket(AF_INET, SOCK_STREAM, 0);
    if (connect(sock, (struct sockaddr *)&a, sizeof a) == 0) break;
    close(sock);
    sock = -1;
    usleep(50000);
  }
  if (sock < 0) return ECONNREFUSED;
  int one = 1;
  setsockopt(sock, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  return 0;
}

static int call(uint32_t op, const char *key, const void *val, uint32_t len, void *out, size_t out_len) {
  pthread_mutex_lock(&sock_mu);
  int rc = connect_once();
  struct msg m = {op, key ? (uint32_t)strlen(key) : 0, len, 0};
  if (!rc && (full(sock, &m, sizeof m, 1) || (m.key_len && full(sock, (void *)key, m.key_len, 1)) ||
              (len && full(sock, (void *)val, len, 1)) || full(sock, &m, sizeof m, 0)))
    rc = EPIPE;
  if (!rc && m.val_len) {
    char *buf = malloc(m.val_len);
    rc = full(sock, buf, m.val_len, 0) ? EPIPE : 0;
    if (!rc && m.val_len != out_len) rc = EMSGSIZE;
    else if (!rc) memcpy(out, buf, out_len);
    free(buf);
  } else if (!rc && op == GET && out_len) {
    rc = EMSGSIZE;
  }
  if (!rc) rc = (int)m.status;
  pthread_mutex_unlock(&sock_mu);
  return rc;
}

int rdmasim_rank(void) { return env_int("RDMASIM_RANK", 0); }
int rdmasim_size(void) { return env_int("RDMASIM_SIZE", 1); }
int rdmasim_oob_put(const char *key, const void *val, size_t len) {
  if (!key || strlen(key) > 255 || len > 65536) return EINVAL;
  return call(PUT, key, val, (uint32_t)len, NULL, 0);
}
int rdmasim_oob_get(const char *key, void *val, size_t len) {
  if (!key || strlen(key) > 255) return EINVAL;
  return call(GET, key, NULL, 0, val, len);
}
int rdmasim_oob_barrier(void) { return call(BARRIER, "", NULL, 0, NULL, 0); }
int rdmasim_compute(uint64_t ns) {
  (void)ns;
  return 0;
}
uint64_t rdmasim_time_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}
