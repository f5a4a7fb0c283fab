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

DaemonClient* DaemonClient::get() {
  static DaemonClient* client = nullptr;
  static int err = 0;
  static std::once_flag once;
  std::call_once(once, [] {
    auto* c = new DaemonClient();
    err = c->connect_and_hello();
    if (err == 0) client = c;
    else delete c;
  });
  if (!client) errno = err;
  return client;
}

int DaemonClient::connect_and_hello() {
  const std::string path = socket_path();
  sock_ = try_connect(path);
  if (sock_ < 0) {
    spawn_daemon();
    timespec start{};
    clock_gettime(CLOCK_MONOTONIC, &start);
    for (;;) {
      sock_ = try_connect(path);
      if (sock_ >= 0) break;
      timespec now{};
      clock_gettime(CLOCK_MONOTONIC, &now);
      if (now.tv_sec - start.tv_sec >= 5) return ECONNREFUSED;
      usleep(20000);
    }
  }
  ipc::HelloReq req{};
  if (const char* h = getenv("RDMASIM_HOST"); h && *h) {
    strncpy(req.host, h, sizeof(req.host) - 1);
  }
  int fds[4] = {-1, -1, -1, -1};
  int nfds = 0;
  int rc = call(ipc::Op::Hello, &req, sizeof(req), &hello_, sizeof(hello_), fds, 4, &nfds);
  if (rc != 0) return rc;
  if (nfds < 4) return EPROTO;
  client_page_ = static_cast<ipc::ClientPage*>(map_memfd(fds[0], nullptr, true));
  global_page_ = static_cast<const ipc::GlobalPage*>(map_memfd(fds[1], nullptr, false));
  close(fds[0]);
  close(fds[1]);
  wake_fd_ = fds[2];
  async_fd_ = fds[3];
  if (!client_page_ || !global_page_) return EPROTO;
  // Yama: let the daemon process_vm_readv/writev our registered memory.
  prctl(PR_SET_PTRACER, static_cast<unsigned long>(hello_.daemon_pid), 0, 0, 0);
  return 0;
}

int DaemonClient::call(ipc::Op op, const void* req, size_t req_len, void* resp, size_t resp_len,
                       int* fds, int max_fds, int* nfds) {
  std::lock_guard<std::mutex> lock(mu_);
  if (nfds) *nfds = 0;
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
    sent = send(sock_, out, sizeof(hdr) + req_len, MSG_NOSIGNAL);
  } while (sent < 0 && errno == EINTR);
  if (sent < 0) return errno == EPIPE ? ECONNRESET : errno;

  alignas(8) char in[ipc::kMaxMsgBytes];
  alignas(cmsghdr) char cbuf[CMSG_SPACE(sizeof(int) * 8)];
  for (;;) {
    iovec iov{in, sizeof(in)};
    msghdr msg{};
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    msg.msg_control = cbuf;
    msg.msg_controllen = sizeof(cbuf);
    ssize_t n = recvmsg(sock_, &msg, MSG_CMSG_CLOEXEC);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return errno;
    if (n == 0) return ECONNRESET;
    int got = 0;
    for (cmsghdr* c = CMSG_FIRSTHDR(&msg); c; c = CMSG_NXTHDR(&msg, c)) {
      if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS) continue;
      int count = static_cast<int>((c->cmsg_len - CMSG_LEN(0)) / sizeof(int));
      int* p = reinterpret_cast<int*>(CMSG_DATA(c));
      for (int i = 0; i < count; ++i) {
        if (fds && got < max_fds) fds[got++] = p[i];
        else close(p[i]);
      }
    }
    if (static_cast<size_t>(n) < sizeof(ipc::MsgHeader)) return EPROTO;
    ipc::MsgHeader rh;
    memcpy(&rh, in, sizeof(rh));
    if (rh.magic != ipc::kProtoMagic) return EPROTO;
    if (rh.seq != hdr.seq) {  // a stale answer: drop it and its fds
      for (int i = 0; i < got; ++i) close(fds[i]);
      continue;
    }
    if (nfds) *nfds = got;
    if (rh.status != 0) {
      for (int i = 0; i < got; ++i) close(fds[i]);
      if (nfds) *nfds = 0;
      return rh.status;
    }
    size_t body = static_cast<size_t>(n) - sizeof(ipc::MsgHeader);
    if (resp) {
      memset(resp, 0, resp_len);
      memcpy(resp, in + sizeof(ipc::MsgHeader), body < resp_len ? body : resp_len);
    }
    return 0;
  }
}

void DaemonClient::ring_doorbell() {
  client_page_->doorbell.fetch_add(1, std::memory_order_release);
  std::atomic_thread_fence(std::memory_order_seq_cst);
  if (global_page_->daemon_sleeping.load(std::memory_order_acquire) == 1) {
    uint64_t one = 1;
    ssize_t r = write(wake_fd_, &one, sizeof(one));
    (void)r;
  }
}

}  // namespace rdmasim::backend
