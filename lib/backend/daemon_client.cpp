// The daemon client: connection (and auto-start), HELLO, framing of requests and replies.
#include "lib/backend/daemon_client.h"

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#ifndef RDMASIM_DAEMON_PATH
#define RDMASIM_DAEMON_PATH "rdmasim"
#endif

namespace rdmasim::backend {
namespace {

std::string socket_path() {
  if (const char* p = getenv("RDMASIM_SOCKET"); p && *p) return p;
  return "/tmp/rdmasim-" + std::to_string(getuid()) + "/fabric.sock";
}

int try_connect(const std::string& path) {
  int s = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
  if (s < 0) return -1;
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (path.size() >= sizeof(addr.sun_path)) {
    close(s);
    errno = ENAMETOOLONG;
    return -1;
  }
  memcpy(addr.sun_path, path.c_str(), path.size() + 1);
  if (connect(s, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    int e = errno;
    close(s);
    errno = e;
    return -1;
  }
  return s;
}

// Starts `rdmasim fabric --auto` fully detached (double fork, setsid, stdio to /dev/null).
// RDMASIM_FABRIC, if set, is its config (and stays in its environment).
void spawn_daemon() {
  const char* exe = getenv("RDMASIM_DAEMON");
  if (!exe || !*exe) exe = RDMASIM_DAEMON_PATH;
  pid_t child = fork();
  if (child < 0) return;
  if (child == 0) {
    if (fork() != 0) _exit(0);
    setsid();
    int null_fd = open("/dev/null", O_RDWR);
    if (null_fd >= 0) {
      dup2(null_fd, 0);
      dup2(null_fd, 1);
      dup2(null_fd, 2);
      if (null_fd > 2) close(null_fd);
    }
    const char* fabric = getenv("RDMASIM_FABRIC");
    if (fabric && *fabric)
      execl(exe, "rdmasim", "fabric", "--auto", fabric, static_cast<char*>(nullptr));
    else
      execl(exe, "rdmasim", "fabric", "--auto", static_cast<char*>(nullptr));
    _exit(127);
  }
  int st = 0;
  while (waitpid(child, &st, 0) < 0 && errno == EINTR) {
  }
}

}  // namespace

void* map_memfd(int fd, size_t* len, bool writable) {
  struct stat st{};
  if (fstat(fd, &st) != 0 || st.st_size <= 0) {
    errno = EPROTO;
    return nullptr;
  }
  void* p = mmap(nullptr, static_cast<size_t>(st.st_size),
                 writable ? PROT_READ | PROT_WRITE : PROT_READ, MAP_SHARED, fd, 0);
  if (p == MAP_FAILED) return nullptr;
  if (len) *len = static_cast<size_t>(st.st_size);
  return p;
}

bool map_passed(int fd, const Mapping& lent, Mapping* out, bool writable) {
  if (lent.base) {
    *out = lent;
    return true;
  }
  out->base = map_memfd(fd, &out->len, writable);
  out->owned = true;
  return out->base != nullptr;
}

Reply::~Reply() {
  for (int fd : fds)
    if (fd >= 0) close(fd);
}

DaemonClient::DaemonClient(const std::string& socket_path) { connect_path(socket_path); }

DaemonClient::~DaemonClient() {
  disconnect();
  client_map_.unmap();
  global_map_.unmap();
  if (wake_fd_ >= 0) close(wake_fd_);
  if (async_fd_ >= 0) close(async_fd_);
}

int DaemonClient::connect_path(const std::string& path) {
  sock_ = try_connect(path);
  connect_error_ = sock_ < 0 ? errno : 0;
  return connect_error_;
}

void DaemonClient::disconnect() {
  std::lock_guard<std::mutex> lock(mu_);
  if (sock_ >= 0) close(sock_);
  sock_ = -1;
}

void DaemonClient::set_reply_timeout(int seconds) {
  timeval tv{seconds, 0};
  if (sock_ >= 0) setsockopt(sock_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
}

DaemonClient* DaemonClient::get() {
  static DaemonClient* client = nullptr;
  static int err = 0;
  static std::once_flag once;
  std::call_once(once, [] {
    auto* c = new DaemonClient();
    const std::string path = socket_path();
    if (c->connect_path(path) != 0) {
      spawn_daemon();
      timespec start{};
      clock_gettime(CLOCK_MONOTONIC, &start);
      while (c->connect_path(path) != 0) {
        timespec now{};
        clock_gettime(CLOCK_MONOTONIC, &now);
        if (now.tv_sec - start.tv_sec >= 5) break;
        usleep(20000);
      }
    }
    const char* host = getenv("RDMASIM_HOST");
    err = c->connect_error() ? ECONNREFUSED : c->say_hello(host ? host : "");
    if (err == 0) client = c;
    else delete c;
  });
  if (!client) errno = err;
  return client;
}

int DaemonClient::say_hello(const std::string& host) {
  ipc::HelloReq req{};
  strncpy(req.host, host.c_str(), sizeof(req.host) - 1);
  int fds[4] = {-1, -1, -1, -1};
  Mapping lent[4];
  int nfds = 0;
  int rc = call(ipc::Op::Hello, &req, sizeof(req), &hello_, sizeof(hello_), fds, 4, &nfds, lent);
  if (rc != 0) return rc;
  if (nfds < 4) {
    for (int i = 0; i < nfds; ++i) close(fds[i]);
    return EPROTO;
  }
  const bool mapped = map_passed(fds[0], lent[0], &client_map_, true) &&
                      map_passed(fds[1], lent[1], &global_map_, false) &&
                      client_map_.len >= sizeof(ipc::ClientPage) &&
                      global_map_.len >= sizeof(ipc::GlobalPage);
  for (int i : {0, 1})
    if (fds[i] >= 0) close(fds[i]);
  wake_fd_ = fds[2];
  async_fd_ = fds[3];
  if (!mapped) return EPROTO;
  // Yama: let the daemon process_vm_readv/writev our registered memory.
  prctl(PR_SET_PTRACER, static_cast<unsigned long>(hello_.daemon_pid), 0, 0, 0);
  return 0;
}

int DaemonClient::send_raw(const void* data, size_t len) {
  std::lock_guard<std::mutex> lock(mu_);
  if (sock_ < 0) return ENOTCONN;
  ssize_t sent;
  do {
    sent = ::send(sock_, data, len, MSG_NOSIGNAL);
  } while (sent < 0 && errno == EINTR);
  if (sent < 0) return errno == EPIPE ? ECONNRESET : errno;
  return 0;
}

int DaemonClient::send_locked(ipc::Op op, const void* req, size_t req_len, uint32_t* seq) {
  if (sock_ < 0) return ENOTCONN;
  if (req_len + sizeof(ipc::MsgHeader) > ipc::kMaxMsgBytes) return EINVAL;
  alignas(8) char out[ipc::kMaxMsgBytes];
  ipc::MsgHeader hdr{};
  hdr.op = op;
  hdr.seq = ++seq_;
  hdr.body_len = static_cast<uint32_t>(req_len);
  memcpy(out, &hdr, sizeof(hdr));
  if (req_len) memcpy(out + sizeof(hdr), req, req_len);
  ssize_t sent;
  do {
    sent = ::send(sock_, out, sizeof(hdr) + req_len, MSG_NOSIGNAL);
  } while (sent < 0 && errno == EINTR);
  if (sent < 0) return errno == EPIPE ? ECONNRESET : errno;
  if (seq) *seq = hdr.seq;
  return 0;
}

int DaemonClient::send(ipc::Op op, const void* req, size_t req_len) {
  std::lock_guard<std::mutex> lock(mu_);
  return send_locked(op, req, req_len, nullptr);
}

int DaemonClient::receive_locked(Reply* out) {
  if (sock_ < 0) return ENOTCONN;
  alignas(8) char in[ipc::kMaxMsgBytes];
  alignas(cmsghdr) char cbuf[CMSG_SPACE(sizeof(int) * 8)];
  for (int fd : out->fds) close(fd);
  out->fds.clear();
  out->body.clear();
  for (;;) {
    iovec iov{in, sizeof(in)};
    msghdr msg{};
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    msg.msg_control = cbuf;
    msg.msg_controllen = sizeof(cbuf);
    ssize_t n = recvmsg(sock_, &msg, MSG_CMSG_CLOEXEC);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return errno == EWOULDBLOCK ? EAGAIN : errno;
    if (n == 0) return ECONNRESET;
    for (cmsghdr* c = CMSG_FIRSTHDR(&msg); c; c = CMSG_NXTHDR(&msg, c)) {
      if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS) continue;
      const size_t count = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
      for (size_t i = 0; i < count; ++i) {
        int fd;
        memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof fd);
        out->fds.push_back(fd);
      }
    }
    if (msg.msg_flags & (MSG_TRUNC | MSG_CTRUNC)) return EMSGSIZE;  // never half a reply
    if (static_cast<size_t>(n) < sizeof(ipc::MsgHeader)) return EPROTO;
    memcpy(&out->hdr, in, sizeof(out->hdr));
    if (out->hdr.magic != ipc::kProtoMagic) return EPROTO;
    out->body.assign(in + sizeof(ipc::MsgHeader), in + n);
    return 0;
  }
}

int DaemonClient::receive(Reply* out) {
  std::lock_guard<std::mutex> lock(mu_);
  return receive_locked(out);
}

int DaemonClient::call(ipc::Op op, const void* req, size_t req_len, Reply* out) {
  std::lock_guard<std::mutex> lock(mu_);
  uint32_t seq = 0;
  if (int rc = send_locked(op, req, req_len, &seq)) return rc;
  for (;;) {
    if (int rc = receive_locked(out)) return rc;
    if (out->hdr.seq == seq) return 0;
    // A stale answer (its request's caller gave up): drop it and its fds.
  }
}

int DaemonClient::call(ipc::Op op, const void* req, size_t req_len, void* resp, size_t resp_len,
                       int* fds, int max_fds, int* nfds, Mapping* maps) {
  if (nfds) *nfds = 0;
  Reply r;
  if (int rc = call(op, req, req_len, &r)) return rc;
  if (r.hdr.status != 0) return r.hdr.status;
  int got = 0;
  for (size_t i = 0; i < r.fds.size(); ++i) {
    if (fds && got < max_fds) {
      if (maps) maps[got] = i < r.maps.size() ? r.maps[i] : Mapping{};
      fds[got++] = r.fds[i];
    } else if (r.fds[i] >= 0) {
      close(r.fds[i]);
    }
  }
  r.fds.clear();
  if (nfds) *nfds = got;
  if (resp) {
    memset(resp, 0, resp_len);
    memcpy(resp, r.body.data(), r.body.size() < resp_len ? r.body.size() : resp_len);
  }
  return 0;
}

}  // namespace rdmasim::backend
