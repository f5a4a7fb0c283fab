// DMA into a client process: process_vm_readv/writev on its pid, and /proc/<pid>/maps checks.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>

#include "sim/nic/memory.h"

namespace rdmasim::daemon {

// The memory of another process, reached without its CPU. The pid comes from
// SO_PEERCRED. Fails (returns false) when the process died or the range is unmapped.
class ProcessMemory final : public nic::MemorySpace {
 public:
  explicit ProcessMemory(pid_t pid) : pid_(pid) {}
  bool read(uint64_t addr, void* dst, size_t len) override;
  bool write(uint64_t addr, const void* src, size_t len) override;
  pid_t pid() const { return pid_; }

 private:
  pid_t pid_;
};

// True when [addr, addr + len) is covered by contiguous mappings of `maps_text` (the
// format of /proc/<pid>/maps, lines in ascending address order) that are all readable,
// and writable too if `need_write`.
bool range_mapped(const std::string& maps_text, uint64_t addr, uint64_t len, bool need_write);

// The same check on /proc/<pid>/maps itself, read only as far as the answer needs;
// false when the file cannot be read (the process is gone).
bool range_mapped(pid_t pid, uint64_t addr, uint64_t len, bool need_write);

}  // namespace rdmasim::daemon
