// A host's CPU as the model sees it: busy time per core, by cause, and memory copies.
//
// The simulator does not run the host's software; whatever models a piece of host work
// (a verbs call, a system call, an interrupt handler, a copy) charges it here, so a report
// can say who worked and for how long. The HCA charges nothing: its DMA is not CPU time.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "sim/core/time.h"

namespace rdmasim::host {

// One interval of work on a core.
struct CpuSlice {
  uint32_t core = 0;
  std::string cause;
  Time start = 0, end = 0;
};

class Cpu {
 public:
  explicit Cpu(uint32_t cores = 1) : busy_(cores == 0 ? 1 : cores) {}

  uint32_t cores() const { return static_cast<uint32_t>(busy_.size()); }
  // `core` works on `cause` for `duration` from `start` (a core past the last: the last).
  // Returns the end. Work on one core does not overlap: it starts when the core is free.
  Time run(uint32_t core, const std::string& cause, Time start, Time duration);
  // Time a copy of `bytes` takes at `gbps` of memory copy bandwidth (GB/s = 1e9 B/s).
  static Time copy_time(uint64_t bytes, double gbytes_per_s);

  Time busy(uint32_t core) const;                             // all causes
  Time busy(uint32_t core, const std::string& cause) const;
  Time busy_total() const;
  // Keeps the slices of work from now on (off by default: a long run of polls would grow
  // them without bound); back-to-back slices of one cause on one core are kept as one.
  void record(bool on) { recording_ = on; }
  // Busy time of `core` that falls inside [from, to), of the slices recorded.
  Time busy_between(uint32_t core, Time from, Time to) const;
  const std::map<std::string, Time>& by_cause(uint32_t core) const;
  const std::vector<CpuSlice>& slices() const { return slices_; }

 private:
  uint32_t clamp(uint32_t core) const { return core < busy_.size() ? core : cores() - 1; }
  std::vector<std::map<std::string, Time>> busy_;
  std::vector<Time> free_ = std::vector<Time>(busy_.size(), 0);
  std::vector<CpuSlice> slices_;
  bool recording_ = false;
};

}  // namespace rdmasim::host
