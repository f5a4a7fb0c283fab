// A mapping the daemon shares with a client: a memfd whose fd is passed to the client, or,
// for an in-process run (lib/inproc), plain memory the client uses where it is.
#pragma once

#include <cstddef>
#include <string>
#include <utility>

namespace rdmasim::daemon {

class SharedMap {
 public:
  SharedMap() = default;
  // Creates a zero-filled memfd of `len` bytes (rounded up to a page) mapped read-write.
  // Returns an empty map (!ok()) on failure.
  static SharedMap create(const std::string& name, size_t len);
  // The same without a file: zero-filled memory (page-aligned, from the heap) for a client
  // in this process (no fd to pass, no second mapping to make).
  static SharedMap create_local(size_t len);
  // create_local when `local`, else create.
  static SharedMap make(bool local, const std::string& name, size_t len) {
    return local ? create_local(len) : create(name, len);
  }
  SharedMap(SharedMap&& o) noexcept { *this = std::move(o); }
  SharedMap& operator=(SharedMap&& o) noexcept;
  SharedMap(const SharedMap&) = delete;
  SharedMap& operator=(const SharedMap&) = delete;
  ~SharedMap() { reset(); }

  bool ok() const { return addr_ != nullptr; }
  bool local() const { return local_; }
  int fd() const { return fd_; }
  void* addr() const { return addr_; }
  size_t size() const { return len_; }
  void reset();
  // Gives up the fd (to be passed to the client and closed then); the mapping stays.
  // Returns -1 when it was already given up.
  int release_fd() { return std::exchange(fd_, -1); }

 private:
  int fd_ = -1;
  void* addr_ = nullptr;
  size_t len_ = 0;
  bool local_ = false;
};

}  // namespace rdmasim::daemon
