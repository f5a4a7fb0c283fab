// Depth accounting of one work queue (SQ, RQ or SRQ) as the client sees it: a WQE slot is
// outstanding from its post until a polled CQE names a later-or-equal wqe_index of the
// same queue (completions of unsignaled WQEs are implied by a later signaled one).
#pragma once

#include <atomic>
#include <cstdint>

namespace rdmasim::verbs {

class WqAccounting {
 public:
  explicit WqAccounting(uint32_t depth = 0) : depth_(depth) {}
  void set_depth(uint32_t depth) { depth_ = depth; }
  uint32_t depth() const { return depth_; }

  // Posting thread only. Counters wrap at 2^32; the difference stays exact.
  uint32_t posted() const { return posted_.load(std::memory_order_relaxed); }
  uint32_t outstanding() const {
    return posted_.load(std::memory_order_relaxed) - done_.load(std::memory_order_acquire);
  }
  uint32_t free_slots() const { return depth_ - outstanding(); }
  bool full() const { return outstanding() >= depth_; }
  // The wqe_index the next post gets.
  void on_post(uint32_t n = 1) {
    posted_.store(posted_.load(std::memory_order_relaxed) + n, std::memory_order_release);
  }

  // Polling thread: a CQE for `wqe_index` retires it and every earlier WQE. Indices that
  // are not in (done, posted] (stale, duplicate or bogus) change nothing.
  void on_complete(uint32_t wqe_index) {
    uint32_t done = done_.load(std::memory_order_relaxed);
    uint32_t posted = posted_.load(std::memory_order_acquire);
    uint32_t next = wqe_index + 1;
    if (next - done == 0 || next - done > posted - done) return;
    done_.store(next, std::memory_order_release);
  }

 private:
  uint32_t depth_;
  std::atomic<uint32_t> posted_{0};
  std::atomic<uint32_t> done_{0};
};

}  // namespace rdmasim::verbs
