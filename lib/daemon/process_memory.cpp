// DMA into a client process through process_vm_readv/writev.
#include "lib/daemon/process_memory.h"

#include <fcntl.h>
#include <sys/uio.h>
#include <unistd.h>

#include <cerrno>
#include <algorithm>
#include <cstring>
#include <memory>

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

namespace {

// Walks mappings in ascending address order (as the kernel lists them) over
// [addr, addr + len): each feed either settles the answer or asks for the next line.
class Coverage {
 public:
  Coverage(uint64_t addr, uint64_t len, bool need_write) : cur_(addr), end_(addr + len), write_(need_write) {}
  enum Verdict { kMore, kYes, kNo };
  Verdict feed(uint64_t lo, uint64_t hi, bool r, bool w) {
    if (hi <= cur_) return kMore;
    if (lo > cur_) return kNo;  // a hole
    if (!r || (write_ && !w)) return kNo;
    cur_ = hi;
    return cur_ >= end_ ? kYes : kMore;
  }

 private:
  uint64_t cur_, end_;
  bool write_;
};

// One line of the maps format: "lo-hi perms ...". False when it does not parse.
bool parse_line(const char* p, const char* end, uint64_t* lo, uint64_t* hi, bool* r, bool* w) {
  auto hex = [&](uint64_t* v) {
    const char* start = p;
    *v = 0;
    for (; p < end; ++p) {
      const char c = *p;
      const int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
      if (d < 0) break;
      *v = *v << 4 | static_cast<uint64_t>(d);
    }
    return p > start && p - start <= 16;
  };
  if (!hex(lo) || p >= end || *p++ != '-' || !hex(hi) || p >= end || *p++ != ' ') return false;
  if (end - p < 2) return false;
  *r = p[0] == 'r';
  *w = p[1] == 'w';
  return true;
}

// Feeds each complete line of text[0, len) to `cov`; returns the verdict, or kMore with
// *used set to the bytes consumed (an incomplete last line stays for the next chunk).
Coverage::Verdict feed_lines(Coverage& cov, const char* text, size_t len, size_t* used) {
  size_t pos = 0;
  while (pos < len) {
    const char* nl = static_cast<const char*>(std::memchr(text + pos, '\n', len - pos));
    if (!nl) break;
    uint64_t lo = 0, hi = 0;
    bool r = false, w = false;
    if (parse_line(text + pos, nl, &lo, &hi, &r, &w))
      if (Coverage::Verdict v = cov.feed(lo, hi, r, w); v != Coverage::kMore) return v;
    pos = static_cast<size_t>(nl - text) + 1;
  }
  *used = pos;
  return Coverage::kMore;
}

bool trivially(uint64_t addr, uint64_t len, bool* answer) {
  if (len == 0) return *answer = true;
  if (addr + len < addr) return !(*answer = false);  // wraps
  return false;
}

}  // namespace

bool range_mapped(const std::string& maps_text, uint64_t addr, uint64_t len, bool need_write) {
  if (bool answer; trivially(addr, len, &answer)) return answer;
  Coverage cov(addr, len, need_write);
  size_t used = 0;
  std::string text = maps_text;
  if (text.empty() || text.back() != '\n') text += '\n';
  return feed_lines(cov, text.data(), text.size(), &used) == Coverage::kYes;
}

// Reads /proc/<pid>/maps a chunk at a time and stops at the first line that settles the
// answer: the kernel formats only what is read, and a process that loaded many programs
// (an in-process study's fibers) has a long maps file that a registration need not walk.
bool range_mapped(pid_t pid, uint64_t addr, uint64_t len, bool need_write) {
  if (bool answer; trivially(addr, len, &answer)) return answer;
  const std::string path = "/proc/" + std::to_string(pid) + "/maps";
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  Coverage cov(addr, len, need_write);
  // The kernel formats as many lines as a read has room for, so reads start small (a range
  // in the heap is settled within the first few lines) and double up to 64 KiB.
  // The buffer grows with the reads (uninitialised: zero-filling 64 KiB up front cost more
  // than the read when a study registers an MR per program).
  size_t cap = 4096, have = 0, chunk = 1024;
  auto buf = std::make_unique_for_overwrite<char[]>(cap);
  Coverage::Verdict v = Coverage::kMore;
  for (;;) {
    if (have + chunk > cap) {  // also a line longer than the buffer so far
      const size_t grown = std::max(cap * 2, have + chunk);
      auto bigger = std::make_unique_for_overwrite<char[]>(grown);
      std::memcpy(bigger.get(), buf.get(), have);
      buf = std::move(bigger), cap = grown;
    }
    const ssize_t n = ::read(fd, buf.get() + have, chunk);
    chunk = std::min<size_t>(chunk * 2, 65536);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    have += static_cast<size_t>(n);
    size_t used = 0;
    v = feed_lines(cov, buf.get(), have, &used);
    if (v != Coverage::kMore) break;
    std::memmove(buf.get(), buf.get() + used, have - used);
    have -= used;
  }
  ::close(fd);
  return v == Coverage::kYes;
}

}  // namespace rdmasim::daemon
