// The control-path client of the fabric daemon: one SOCK_SEQPACKET connection per process,
// opened lazily (starting the daemon if nobody answers), plus the shared pages from HELLO.
#pragma once

#include <cstddef>
#include <cstdint>
#include <mutex>
#include <string>

#include "lib/ipc/proto.h"

namespace rdmasim::backend {

class DaemonClient {
 public:
  // The process-wide connection; nullptr with errno set when no daemon can be reached.
  static DaemonClient* get();

  // A client without a socket, on pages the caller maps: for driving the data path in
  // unit tests. Control calls on it fail with ENOTCONN.
  DaemonClient(ipc::ClientPage* client_page, const ipc::GlobalPage* global_page, int wake_fd)
      : client_page_(client_page), global_page_(global_page), wake_fd_(wake_fd) {}

  // One request/response round trip. Returns 0 or a positive errno (transport failure or
  // the daemon's status). Copies at most resp_len bytes of the body; received fds go to
  // `fds` (up to max_fds, the rest are closed), their count to *nfds.
  int call(ipc::Op op, const void* req, size_t req_len, void* resp, size_t resp_len,
           int* fds = nullptr, int max_fds = 0, int* nfds = nullptr);

  const ipc::HelloResp& hello() const { return hello_; }
  int async_fd() const { return async_fd_; }
  ipc::ClientPage* client_page() const { return client_page_; }

  // Fast path: publish new work to the daemon. Release order after the ring's producer
  // store; a system call only when the daemon says it sleeps.
  void ring_doorbell();

 private:
  DaemonClient() = default;
  int connect_and_hello();

  std::mutex mu_;          // serializes control-path round trips
  int sock_ = -1;
  uint32_t seq_ = 0;
  ipc::HelloResp hello_{};
  ipc::ClientPage* client_page_ = nullptr;
  const ipc::GlobalPage* global_page_ = nullptr;
  int wake_fd_ = -1;
  int async_fd_ = -1;
};

// Maps a whole memfd read-write (or read-only); nullptr on failure. *len gets its size.
void* map_memfd(int fd, size_t* len, bool writable = true);

}  // namespace rdmasim::backend
