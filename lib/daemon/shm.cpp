// Shared mappings: memfd-backed, or plain memory for a client in this process.
#include "lib/daemon/shm.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <utility>

namespace rdmasim::daemon {

namespace {
size_t page_size() { return static_cast<size_t>(sysconf(_SC_PAGESIZE)); }

// `len` rounded up to whole pages, at least one.
size_t whole_pages(size_t len) {
  const size_t page = page_size();
  len = (len + page - 1) / page * page;
  return len == 0 ? page : len;
}
}  // namespace

SharedMap SharedMap::create(const std::string& name, size_t len) {
  SharedMap m;
  len = whole_pages(len);
  int fd = memfd_create(name.c_str(), MFD_CLOEXEC);
  if (fd < 0) return m;
  if (ftruncate(fd, static_cast<off_t>(len)) != 0) {
    close(fd);
    return m;
  }
  void* p = mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (p == MAP_FAILED) {
    close(fd);
    return m;
  }
  m.fd_ = fd;
  m.addr_ = p;
  m.len_ = len;
  return m;
}

SharedMap SharedMap::create_local(size_t len) {
  SharedMap m;
  len = whole_pages(len);
  // From the heap: a study makes one per queue of each of its programs, and a mapping each
  // (with its unmapping) cost more than the allocations.
  void* p = std::aligned_alloc(page_size(), len);
  if (!p) return m;
  std::memset(p, 0, len);
  m.addr_ = p;
  m.len_ = len;
  m.local_ = true;
  return m;
}

SharedMap& SharedMap::operator=(SharedMap&& o) noexcept {
  if (this != &o) {
    reset();
    fd_ = std::exchange(o.fd_, -1);
    addr_ = std::exchange(o.addr_, nullptr);
    len_ = std::exchange(o.len_, 0);
    local_ = std::exchange(o.local_, false);
  }
  return *this;
}

void SharedMap::reset() {
  if (addr_ && local_) std::free(addr_);
  else if (addr_) munmap(addr_, len_);
  if (fd_ >= 0) close(fd_);
  fd_ = -1;
  addr_ = nullptr;
  len_ = 0;
  local_ = false;
}

}  // namespace rdmasim::daemon
