// The daemon's control socket: a listening SOCK_SEQPACKET Unix socket guarded by a lock
// file, one epoll set, connections of this uid only, one message in and one reply out.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <map>
#include <set>
#include <span>
#include <string>

#include "lib/ipc/proto.h"

namespace rdmasim::daemon {

// The peer of an accepted connection, as SO_PEERCRED tells it (never as the client claims).
struct Peer {
  pid_t pid = 0;
  uid_t uid = 0;
};

// What the server hands to its owner. Every call comes from inside SocketServer::poll()
// or drop(), on the daemon's one thread.
class ServerEvents {
 public:
  virtual ~ServerEvents() = default;
  // A connection was accepted as client `id` (ids count up from 1, never reused).
  virtual void on_connect(uint32_t id, const Peer& peer) = 0;
  // A well-formed request: right magic, header.body_len == the bytes received after it.
  virtual void on_request(uint32_t id, const ipc::MsgHeader& h, const uint8_t* body, size_t len) = 0;
  // Client `id` is going away (EOF, a socket error, or drop()); its socket closes after.
  virtual void on_disconnect(uint32_t id) = 0;
  // A counter fd given to watch_counter() was readable; the counter is already drained.
  virtual void on_signal(int fd) = 0;
};

struct ServerStats {
  uint64_t clients_accepted = 0;
  uint64_t requests = 0;   // messages received, malformed ones included
  uint64_t malformed = 0;  // shorter than a header, truncated, bad magic or body_len: EINVAL
};

class SocketServer {
 public:
  // Creates the epoll set; throws std::runtime_error when it cannot.
  SocketServer();
  // Closes the connections without callbacks (drop_all() first to get them), the listener
  // (unlinking its path), the lock file and the epoll set.
  ~SocketServer();
  SocketServer(const SocketServer&) = delete;
  SocketServer& operator=(const SocketServer&) = delete;

  // Takes `path`.lock (flock) and binds `path` (mode 0600; its directory made private when
  // missing; a /tmp/rdmasim-* directory must be private to this uid). Returns 0, or an
  // errno with a message in *why (EADDRINUSE when another daemon answers or holds the lock).
  int listen(const std::string& path, std::string* why);
  // Stops accepting: closes the listener and unlinks its path. Idempotent.
  void close_listener();
  // Watches an eventfd or timerfd the owner keeps: poll() drains it and calls on_signal.
  void watch_counter(int fd);

  // Waits up to `timeout_ms` (-1: until something happens) and dispatches what is ready:
  // accepts, up to 64 requests per readable client, hang-ups, counters. A malformed
  // message is answered EINVAL here and never reaches on_request.
  void poll(int timeout_ms, ServerEvents& events);
  // Answers `req` to client `id`: a nonzero status sends no body and no fds. A client that
  // does not read its socket loses the reply (non-blocking send; logged at debug level).
  void reply(uint32_t id, const ipc::MsgHeader& req, int status, const void* body, size_t len,
             std::span<const int> fds = {});
  // on_disconnect(id), then closes its socket. Unknown ids are ignored.
  void drop(uint32_t id, ServerEvents& events);
  void drop_all(ServerEvents& events);

  size_t connections() const { return sock_of_.size(); }
  const ServerStats& stats() const { return stats_; }

 private:
  void accept_all(ServerEvents& events);
  void serve(uint32_t id, int sock, ServerEvents& events);
  void watch(int fd);

  int epoll_fd_ = -1, listen_fd_ = -1, lock_fd_ = -1;
  std::string path_;
  uint32_t next_id_ = 1;
  std::map<uint32_t, int> sock_of_;   // client id -> socket
  std::map<int, uint32_t> id_of_;     // socket -> client id
  std::set<int> counters_;            // watched counter fds (not owned)
  ServerStats stats_;
};

}  // namespace rdmasim::daemon
