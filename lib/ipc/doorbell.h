// The doorbell a client rings after publishing work: the contract of proto.h's data path.
#pragma once

#include <unistd.h>

#include <atomic>
#include <cstdint>

#include "lib/ipc/proto.h"

namespace rdmasim::ipc {

// Call after the ring's producer store (release). Bumps the client page's counter and
// writes the wake eventfd only when the global page says the daemon sleeps, so a post makes
// no system call while the daemon runs. The fence orders the bump before the sleep check
// against the daemon's "set sleeping, then re-scan doorbells".
struct Doorbell {
  ClientPage* page = nullptr;
  const GlobalPage* global = nullptr;
  int wake_fd = -1;

  void ring() const {
    page->doorbell.fetch_add(1, std::memory_order_release);
    std::atomic_thread_fence(std::memory_order_seq_cst);
    if (global->daemon_sleeping.load(std::memory_order_acquire) == 1) {
      const uint64_t one = 1;
      ssize_t r = ::write(wake_fd, &one, sizeof one);
      (void)r;
    }
  }
};

}  // namespace rdmasim::ipc
