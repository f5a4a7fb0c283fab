#include "sim/host/cpu.h"

#include <algorithm>
#include <cmath>

namespace rdmasim::host {

Time Cpu::run(uint32_t core, const std::string& cause, Time start, Time duration) {
  core = clamp(core);
  const Time s = std::max(start, free_[core]);
  const Time e = s + std::max<Time>(duration, 0);
  free_[core] = e;
  busy_[core][cause] += e - s;
  if (!recording_) return e;
  for (auto it = slices_.rbegin(); it != slices_.rend(); ++it) {
    if (it->core != core) continue;
    if (it->end == s && it->cause == cause) {
      it->end = e;
      return e;
    }
    break;
  }
  slices_.push_back({core, cause, s, e});
  return e;
}

Time Cpu::copy_time(uint64_t bytes, double gbytes_per_s) {
  if (gbytes_per_s <= 0) return kTimeNever;
  return static_cast<Time>(std::ceil(static_cast<double>(bytes) / gbytes_per_s * 1e3));  // ps
}

Time Cpu::busy(uint32_t core) const {
  Time t = 0;
  for (const auto& [cause, d] : busy_[clamp(core)]) t += d;
  return t;
}

Time Cpu::busy(uint32_t core, const std::string& cause) const {
  const auto& m = busy_[clamp(core)];
  auto it = m.find(cause);
  return it == m.end() ? 0 : it->second;
}

Time Cpu::busy_total() const {
  Time t = 0;
  for (uint32_t c = 0; c < cores(); ++c) t += busy(c);
  return t;
}

Time Cpu::busy_between(uint32_t core, Time from, Time to) const {
  Time t = 0;
  for (const CpuSlice& s : slices_)
    if (s.core == clamp(core)) t += std::max<Time>(0, std::min(s.end, to) - std::max(s.start, from));
  return t;
}

const std::map<std::string, Time>& Cpu::by_cause(uint32_t core) const { return busy_[clamp(core)]; }

}  // namespace rdmasim::host
