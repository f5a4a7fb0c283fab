// The daemon's control socket: listen, accept, receive, reply.
#include "lib/daemon/socket_server.h"

#include <fcntl.h>
#include <sys/epoll.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <stdexcept>

#include <spdlog/spdlog.h>

namespace rdmasim::daemon {

namespace {
constexpr int kMaxMessagesPerClient = 64;  // then the others get their turn
constexpr size_t kMaxReplyFds = 8;

void drain_counter(int fd) {
  uint64_t v;
  while (::read(fd, &v, sizeof v) == sizeof v) {
  }
}

// Closes any fds a message carried: clients never send fds.
void close_passed_fds(msghdr& msg) {
  for (cmsghdr* cm = CMSG_FIRSTHDR(&msg); cm; cm = CMSG_NXTHDR(&msg, cm)) {
    if (cm->cmsg_level != SOL_SOCKET || cm->cmsg_type != SCM_RIGHTS) continue;
    const size_t nfd = (cm->cmsg_len - CMSG_LEN(0)) / sizeof(int);
    for (size_t k = 0; k < nfd; ++k) {
      int f;
      std::memcpy(&f, CMSG_DATA(cm) + k * sizeof(int), sizeof f);
      close(f);
    }
  }
}
}  // namespace

SocketServer::SocketServer() {
  epoll_fd_ = epoll_create1(EPOLL_CLOEXEC);
  if (epoll_fd_ < 0) throw std::runtime_error(std::string("epoll_create1 failed: ") + strerror(errno));
}

SocketServer::~SocketServer() {
  for (const auto& [id, sock] : sock_of_) close(sock);
  close_listener();
  if (lock_fd_ >= 0) close(lock_fd_);
  close(epoll_fd_);
}

void SocketServer::watch(int fd) {
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.fd = fd;
  epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, fd, &ev);
}

void SocketServer::watch_counter(int fd) {
  counters_.insert(fd);
  watch(fd);
}

int SocketServer::listen(const std::string& path, std::string* why) {
  sockaddr_un addr{};
  if (path.size() >= sizeof addr.sun_path) {
    *why = "socket path too long: " + path;
    return ENAMETOOLONG;
  }
  // The socket's directory is created private to this uid when missing; a /tmp/rdmasim-*
  // directory must be private (another user could otherwise plant a socket there).
  const std::string dir = path.substr(0, path.rfind('/'));
  if (!dir.empty() && path.find('/') != std::string::npos) {
    if (mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST) {
      *why = "cannot create " + dir + ": " + strerror(errno);
      return errno;
    }
    if (dir.rfind("/tmp/rdmasim-", 0) == 0) {
      struct stat st{};
      if (stat(dir.c_str(), &st) != 0 || st.st_uid != getuid() || (st.st_mode & 0077) != 0) {
        *why = dir + " is not a private directory of this user";
        return EPERM;
      }
    }
  }
  const std::string lock_path = path + ".lock";
  lock_fd_ = open(lock_path.c_str(), O_CREAT | O_RDWR | O_CLOEXEC, 0600);
  if (lock_fd_ < 0) {
    *why = "cannot open " + lock_path + ": " + strerror(errno);
    return errno;
  }
  if (flock(lock_fd_, LOCK_EX | LOCK_NB) != 0) {
    *why = "another daemon holds " + lock_path;
    return EADDRINUSE;
  }
  addr.sun_family = AF_UNIX;
  std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
  {
    int probe = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
    const bool answers = probe >= 0 && connect(probe, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0;
    if (probe >= 0) close(probe);
    if (answers) {
      *why = "another daemon answers at " + path;
      return EADDRINUSE;
    }
  }
  unlink(path.c_str());
  listen_fd_ = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (listen_fd_ < 0 || bind(listen_fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
      chmod(path.c_str(), 0600) != 0 || ::listen(listen_fd_, 128) != 0) {
    int e = errno;
    *why = "cannot listen on " + path + ": " + strerror(e);
    return e;
  }
  path_ = path;
  watch(listen_fd_);
  return 0;
}

void SocketServer::close_listener() {
  if (listen_fd_ < 0) return;
  close(listen_fd_);
  listen_fd_ = -1;
  unlink(path_.c_str());
}

void SocketServer::poll(int timeout_ms, ServerEvents& events) {
  epoll_event evs[64];
  const int n = epoll_wait(epoll_fd_, evs, 64, timeout_ms);
  for (int i = 0; i < n; ++i) {
    const int fd = evs[i].data.fd;
    if (fd == listen_fd_) {
      accept_all(events);
    } else if (counters_.count(fd)) {
      drain_counter(fd);
      events.on_signal(fd);
    } else if (auto it = id_of_.find(fd); it != id_of_.end()) {
      serve(it->second, fd, events);
    }
  }
}

void SocketServer::accept_all(ServerEvents& events) {
  for (;;) {
    int fd = accept4(listen_fd_, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) return;
    ucred cred{};
    socklen_t len = sizeof cred;
    if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0 || cred.uid != getuid()) {
      close(fd);  // only this user's processes may drive this daemon
      continue;
    }
    const uint32_t id = next_id_++;
    sock_of_[id] = fd;
    id_of_[fd] = id;
    watch(fd);
    stats_.clients_accepted++;
    events.on_connect(id, Peer{cred.pid, cred.uid});
  }
}

void SocketServer::serve(uint32_t id, int sock, ServerEvents& events) {
  alignas(8) uint8_t buf[sizeof(ipc::MsgHeader) + ipc::kMaxMsgBytes];
  for (int i = 0; i < kMaxMessagesPerClient; ++i) {
    iovec iov{buf, sizeof buf};
    alignas(cmsghdr) char cbuf[CMSG_SPACE(sizeof(int) * 16)];
    msghdr msg{};
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    msg.msg_control = cbuf;
    msg.msg_controllen = sizeof cbuf;
    ssize_t n = recvmsg(sock, &msg, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) return;
    if (n <= 0) {
      drop(id, events);
      return;
    }
    close_passed_fds(msg);
    stats_.requests++;
    ipc::MsgHeader h{};
    if (static_cast<size_t>(n) < sizeof h || (msg.msg_flags & MSG_TRUNC)) {
      std::memcpy(&h, buf, std::min(static_cast<size_t>(n), sizeof h));
      stats_.malformed++;
      reply(id, h, EINVAL, nullptr, 0);
      continue;
    }
    std::memcpy(&h, buf, sizeof h);
    const size_t body_len = static_cast<size_t>(n) - sizeof h;
    if (h.magic != ipc::kProtoMagic || h.body_len != body_len) {
      stats_.malformed++;
      reply(id, h, EINVAL, nullptr, 0);
      continue;
    }
    events.on_request(id, h, buf + sizeof h, body_len);
    if (!sock_of_.count(id)) return;  // the request dropped its own client
  }
}

void SocketServer::reply(uint32_t id, const ipc::MsgHeader& req, int status, const void* body,
                         size_t len, std::span<const int> fds) {
  auto it = sock_of_.find(id);
  if (it == sock_of_.end()) return;
  if (status != 0) {
    len = 0;
    fds = {};
  }
  if (fds.size() > kMaxReplyFds) throw std::logic_error("a reply carries at most 8 fds");
  ipc::MsgHeader h{};
  h.magic = ipc::kProtoMagic;
  h.op = req.op;
  h.seq = req.seq;
  h.status = status;
  h.body_len = static_cast<uint32_t>(len);
  h.nfds = static_cast<uint32_t>(fds.size());
  iovec iov[2] = {{&h, sizeof h}, {const_cast<void*>(body), len}};
  msghdr msg{};
  msg.msg_iov = iov;
  msg.msg_iovlen = len ? 2 : 1;
  alignas(cmsghdr) char cbuf[CMSG_SPACE(sizeof(int) * kMaxReplyFds)];
  if (!fds.empty()) {
    msg.msg_control = cbuf;
    msg.msg_controllen = CMSG_SPACE(sizeof(int) * fds.size());
    cmsghdr* cm = CMSG_FIRSTHDR(&msg);
    cm->cmsg_level = SOL_SOCKET;
    cm->cmsg_type = SCM_RIGHTS;
    cm->cmsg_len = CMSG_LEN(sizeof(int) * fds.size());
    std::memcpy(CMSG_DATA(cm), fds.data(), sizeof(int) * fds.size());
  }
  if (sendmsg(it->second, &msg, MSG_NOSIGNAL | MSG_DONTWAIT) < 0)
    spdlog::debug("rdmasim: reply to client {} failed: {}", id, strerror(errno));
}

void SocketServer::drop(uint32_t id, ServerEvents& events) {
  auto it = sock_of_.find(id);
  if (it == sock_of_.end()) return;
  const int sock = it->second;
  events.on_disconnect(id);
  epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, sock, nullptr);
  id_of_.erase(sock);
  sock_of_.erase(id);
  close(sock);
}

void SocketServer::drop_all(ServerEvents& events) {
  while (!sock_of_.empty()) drop(sock_of_.begin()->first, events);
}

}  // namespace rdmasim::daemon
