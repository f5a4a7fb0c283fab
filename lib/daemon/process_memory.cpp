// DMA into a client process through process_vm_readv/writev.
#include "lib/daemon/process_memory.h"

#include <sys/uio.h>

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <vector>

namespace rdmasim::daemon {

bool ProcessMemory::read(uint64_t addr, void* dst, size_t len) {
  size_t done = 0;
  while (done < len) {
    iovec local{static_cast<char*>(dst) + done, len - done};
    iovec remote{reinterpret_cast<void*>(addr + done), len - done};
    ssize_t n = process_vm_readv(pid_, &local, 1, &remote, 1, 0);
    if (n <= 0) return false;
    done += static_cast<size_t>(n);
  }
  return true;
}

bool ProcessMemory::write(uint64_t addr, const void* src, size_t len) {
  size_t done = 0;
  while (done < len) {
    iovec local{const_cast<char*>(static_cast<const char*>(src)) + done, len - done};
    iovec remote{reinterpret_cast<void*>(addr + done), len - done};
    ssize_t n = process_vm_writev(pid_, &local, 1, &remote, 1, 0);
    if (n <= 0) return false;
    done += static_cast<size_t>(n);
  }
  return true;
}

bool range_mapped(const std::string& maps_text, uint64_t addr, uint64_t len, bool need_write) {
  if (len == 0) return true;
  if (addr + len < addr) return false;  // wraps
  struct Range { uint64_t lo, hi; bool r, w; };
  std::vector<Range> ranges;
  std::istringstream in(maps_text);
  std::string line;
  while (std::getline(in, line)) {
    uint64_t lo = 0, hi = 0;
    char perms[8] = {};
    if (std::sscanf(line.c_str(), "%" SCNx64 "-%" SCNx64 " %7s", &lo, &hi, perms) != 3) continue;
    ranges.push_back({lo, hi, perms[0] == 'r', perms[1] == 'w'});
  }
  std::sort(ranges.begin(), ranges.end(), [](const Range& a, const Range& b) { return a.lo < b.lo; });
  uint64_t cur = addr;
  const uint64_t end = addr + len;
  for (const Range& r : ranges) {
    if (r.hi <= cur) continue;
    if (r.lo > cur) return false;  // a hole
    if (!r.r || (need_write && !r.w)) return false;
    cur = r.hi;
    if (cur >= end) return true;
  }
  return false;
}

std::string read_maps(pid_t pid) {
  std::ifstream f("/proc/" + std::to_string(pid) + "/maps");
  if (!f) return {};
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

}  // namespace rdmasim::daemon
