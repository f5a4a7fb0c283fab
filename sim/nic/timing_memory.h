// Memory that only times: an address space with no bytes behind it.
#pragma once

#include <cstring>

#include "sim/nic/memory.h"

namespace rdmasim::nic {

// For a study's built-in flows, whose payload bytes nobody reads. Every address reads as
// zeros and writes are dropped, so an MR needs no buffer behind it. The HCA recognises it
// (is_timing_only, hca_impl.h) and gathers no bytes for a message from it: its packets
// carry a null payload with their real payload_len, and null payload bytes are zeros
// wherever they land (the HCA writes zeros into memory that holds bytes; it never passes
// a null source to MemorySpace::write). The HCA's timing (packets, sizes, PSNs, the DMA
// model) is the same as with real memory.
class TimingMemory final : public MemorySpace {
 public:
  bool read(uint64_t, void* dst, size_t len) override {
    std::memset(dst, 0, len);
    return true;
  }
  bool write(uint64_t, const void*, size_t) override { return true; }
};

}  // namespace rdmasim::nic
