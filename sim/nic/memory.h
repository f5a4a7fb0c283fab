// How the HCA's DMA engine reaches the memory of the process that owns a memory region.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

namespace rdmasim::nic {

// One address space the HCA may DMA into. The daemon implements it with
// process_vm_readv/writev on the owning process; the in-process backend and the unit tests
// use the process's own memory. The HCA checks every access against a registered MR
// before calling these; an implementation may still fail (the process died, the pages
// were unmapped) and then returns false.
class MemorySpace {
 public:
  virtual ~MemorySpace() = default;
  virtual bool read(uint64_t addr, void* dst, size_t len) = 0;
  virtual bool write(uint64_t addr, const void* src, size_t len) = 0;
  // True when a read costs no more than a memcpy: the HCA then reads a message's bytes a
  // packet at a time, when each packet is built, as hardware does (a retransmission reads
  // them again). False (another process's memory, a syscall per access): read once per
  // message when it starts.
  virtual bool reads_by_packet() const { return false; }
};

// This process's own memory: addresses are plain pointers.
class LocalMemory final : public MemorySpace {
 public:
  bool read(uint64_t addr, void* dst, size_t len) override {
    std::memcpy(dst, reinterpret_cast<const void*>(addr), len);
    return true;
  }
  bool write(uint64_t addr, const void* src, size_t len) override {
    // memmove: a loopback WRITE may place bytes it holds in place (HeldBytes) onto themselves.
    std::memmove(reinterpret_cast<void*>(addr), src, len);
    ++writes;
    return true;
  }
  bool reads_by_packet() const override { return true; }
  uint64_t writes = 0;  // DMA writes that reached this memory (tests count coalescing)
};

}  // namespace rdmasim::nic
