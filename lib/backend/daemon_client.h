// The one client of the fabric daemon's socket protocol (lib/ipc/proto.h): a SOCK_SEQPACKET
// connection, the shared pages from HELLO, and round trips. libibverbs.so.1 uses the
// process-wide one (get()); the rdmasim CLI and the daemon's tests open one on a path.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <mutex>
#include <string>
#include <vector>

#include "lib/backend/backend.h"
#include "lib/ipc/doorbell.h"
#include "lib/ipc/proto.h"

namespace rdmasim::backend {

// One message as it arrived: header, body (up to kMaxMsgBytes) and the fds it carried,
// which the Reply owns and closes. An in-process reply may carry shared memory as the
// handler's own mapping instead of a memfd: at its index, fds holds -1 and maps the mapping
// (not owned); maps is empty or shorter elsewhere.
struct Reply {
  ipc::MsgHeader hdr{};
  std::vector<uint8_t> body;
  std::vector<int> fds;
  std::vector<Mapping> maps;
  Reply() = default;
  Reply(const Reply&) = delete;
  Reply& operator=(const Reply&) = delete;
  ~Reply();
  // The body as a T (zero-filled where the body is shorter).
  template <typename T>
  T as() const {
    T t{};
    std::memcpy(&t, body.data(), body.size() < sizeof t ? body.size() : sizeof t);
    return t;
  }
};

class DaemonClient {
 public:
  // The process-wide connection for libibverbs.so.1: RDMASIM_SOCKET (or the per-user
  // default), starting `rdmasim fabric --auto` when nobody answers, HELLO as RDMASIM_HOST.
  // nullptr with errno set when no daemon can be reached.
  static DaemonClient* get();

  // A connection to the daemon at `socket_path`; never starts a daemon and sends nothing.
  // connect_error() says whether it connected.
  explicit DaemonClient(const std::string& socket_path);
  virtual ~DaemonClient();
  DaemonClient(const DaemonClient&) = delete;
  DaemonClient& operator=(const DaemonClient&) = delete;

  // 0 when connected, else the errno of connect().
  int connect_error() const { return connect_error_; }
  // A reply that does not come within `seconds` fails the call with EAGAIN (0: wait forever).
  void set_reply_timeout(int seconds);
  // Closes the connection; the daemon sees EOF and destroys this client's objects.
  void disconnect();

  // HELLO as `host` ("" lets the daemon pick) and maps the pages it returns: 0 or the
  // daemon's status (EPROTO when the fds are missing).
  int say_hello(const std::string& host);

  // One request/response round trip. Returns 0 or a positive errno (transport failure or
  // the daemon's status). Copies at most resp_len bytes of the body; received fds go to
  // `fds` (up to max_fds, the rest are closed), their count to *nfds, and lent mappings
  // (Reply::maps) to the same places of `maps` when given (map_passed takes either).
  int call(ipc::Op op, const void* req, size_t req_len, void* resp, size_t resp_len,
           int* fds = nullptr, int max_fds = 0, int* nfds = nullptr, Mapping* maps = nullptr);
  // The same round trip keeping the whole reply (any status, body, fds): 0 or the transport
  // errno; the daemon's status is out->hdr.status.
  // The in-process client (inproc_backend.h) replaces the socket with a simcall here.
  virtual int call(ipc::Op op, const void* req, size_t req_len, Reply* out);
  // The waiter of contexts opened through this client: none for the daemon.
  virtual Waiter* waiter() const { return nullptr; }

  // For protocol tests: sends exactly these bytes as one message / a well-formed request
  // without waiting; receive() takes the next message whatever its seq. 0 or errno.
  int send_raw(const void* data, size_t len);
  int send(ipc::Op op, const void* req, size_t req_len);
  int receive(Reply* out);

  const ipc::HelloResp& hello() const { return hello_; }
  int async_fd() const { return async_fd_; }
  ipc::ClientPage* client_page() const { return static_cast<ipc::ClientPage*>(client_map_.base); }
  // The data path's doorbell on the pages of HELLO.
  ipc::Doorbell doorbell() const {
    return {client_page(), static_cast<const ipc::GlobalPage*>(global_map_.base), wake_fd_};
  }

 protected:
  DaemonClient() = default;

 private:
  int connect_path(const std::string& path);
  int send_locked(ipc::Op op, const void* req, size_t req_len, uint32_t* seq);
  int receive_locked(Reply* out);

  std::mutex mu_;          // serializes control-path round trips
  int sock_ = -1;
  int connect_error_ = ENOTCONN;
  uint32_t seq_ = 0;
  ipc::HelloResp hello_{};
  Mapping client_map_, global_map_;  // the pages of HELLO
  int wake_fd_ = -1;
  int async_fd_ = -1;
};

// Maps a whole memfd read-write (or read-only); nullptr on failure. *len gets its size.
void* map_memfd(int fd, size_t* len, bool writable = true);
// The memory a reply passed at one place: the lent mapping when it has one (in-process),
// else a new mapping of the memfd `fd`. Closes nothing. False when fd does not map.
bool map_passed(int fd, const Mapping& lent, Mapping* out, bool writable = true);

}  // namespace rdmasim::backend
