// Small helpers the control operations share: ring headers, alignment, QP ring memory.
#pragma once

#include <cstddef>
#include <cstdint>
#include <new>

#include "lib/daemon/client.h"
#include "lib/ipc/proto.h"
#include "lib/ipc/ring.h"

namespace rdmasim::daemon {

inline size_t align_up(size_t v, size_t a) { return (v + a - 1) / a * a; }

// Constructs a ring header of `size` slots of `slot_bytes` in fresh shared memory.
inline void init_ring(ipc::RingHeader* h, uint32_t size, uint32_t slot_bytes) {
  new (h) ipc::RingHeader();
  h->size = size;
  h->slot_bytes = slot_bytes;
}

// A QP's shared memory: [RingView<SqWqe> of sq_size] at 0, [RingView<RqWqe> of rq_size] at
// out->rq_offset (none when rq_size is 0), plain memory when `local` (SharedMap::make). Fills
// qp's map and rings and out's sizes; false when the memory could not be made
// (ops_queues.cpp).
bool make_qp_memory(bool local, uint32_t sq_size, uint32_t rq_size, Qp* qp, ipc::CreateQpResp* out);

}  // namespace rdmasim::daemon
