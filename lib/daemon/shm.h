// A memfd-backed shared mapping: created by the daemon, its fd passed to a client.
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
  SharedMap(SharedMap&& o) noexcept { *this = std::move(o); }
  SharedMap& operator=(SharedMap&& o) noexcept;
  SharedMap(const SharedMap&) = delete;
  SharedMap& operator=(const SharedMap&) = delete;
  ~SharedMap() { reset(); }

  bool ok() const { return addr_ != nullptr; }
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
};

}  // namespace rdmasim::daemon
