// Small helpers the control operations share: ring headers and alignment.
#pragma once

#include <cstddef>
#include <cstdint>
#include <new>

#include "lib/ipc/ring.h"

namespace rdmasim::daemon {

inline size_t align_up(size_t v, size_t a) { return (v + a - 1) / a * a; }

// Constructs a ring header of `size` slots of `slot_bytes` in fresh shared memory.
inline void init_ring(ipc::RingHeader* h, uint32_t size, uint32_t slot_bytes) {
  new (h) ipc::RingHeader();
  h->size = size;
  h->slot_bytes = slot_bytes;
}

}  // namespace rdmasim::daemon
