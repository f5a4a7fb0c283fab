// Shared memory for in-process clients: lent in the place of a memfd, used where it is.
#include <doctest/doctest.h>

#include <unistd.h>

#include <cstdint>

#include "lib/backend/daemon_client.h"
#include "lib/daemon/ops.h"
#include "lib/daemon/shm.h"

using namespace rdmasim;

TEST_CASE("shm: a local map is zero-filled, page-aligned and has no fd; a memfd one has one") {
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  daemon::SharedMap local = daemon::SharedMap::make(true, "t", 100);
  REQUIRE(local.ok());
  CHECK(local.local());
  CHECK(local.fd() == -1);
  CHECK(reinterpret_cast<uintptr_t>(local.addr()) % page == 0);
  CHECK(local.size() == page);  // 100 B rounded up to a page, as create() does
  const auto* b = static_cast<const uint8_t*>(local.addr());
  bool zero = true;
  for (size_t i = 0; i < local.size(); ++i) zero = zero && b[i] == 0;
  CHECK(zero);
  daemon::SharedMap file = daemon::SharedMap::make(false, "t", 100);
  REQUIRE(file.ok());
  CHECK_FALSE(file.local());
  CHECK(file.fd() >= 0);
}

TEST_CASE("shm: a reply lends a local map at its fd's place and passes a memfd's fd") {
  daemon::SharedMap local = daemon::SharedMap::create_local(64);
  daemon::SharedMap file = daemon::SharedMap::create("t", 64);
  REQUIRE((local.ok() && file.ok()));
  const int file_fd = file.fd();
  daemon::ReplyFds fds;
  fds.lend(7);           // an fd lent: index 0
  fds.pass_map(local);   // index 1: no fd, the mapping
  fds.pass_map(file);    // index 2: the memfd, given up by the map
  REQUIRE(fds.fds().size() == 3);
  CHECK(fds.fds()[0] == 7);
  CHECK(fds.fds()[1] == -1);
  CHECK(fds.fds()[2] == file_fd);
  CHECK(file.fd() == -1);
  REQUIRE(fds.local_maps().size() == 1);
  CHECK(fds.local_maps()[0].index == 1);
  CHECK(fds.local_maps()[0].addr == local.addr());
  CHECK(fds.local_maps()[0].len == local.size());
}

TEST_CASE("shm: map_passed uses a lent mapping as it is and never unmaps it") {
  daemon::SharedMap local = daemon::SharedMap::create_local(64);
  REQUIRE(local.ok());
  backend::Mapping lent{local.addr(), local.size(), false};
  backend::Mapping got;
  REQUIRE(backend::map_passed(-1, lent, &got));
  CHECK(got.base == local.addr());
  CHECK_FALSE(got.owned);
  got.unmap();  // not its to unmap: the memory stays usable
  static_cast<uint8_t*>(local.addr())[0] = 1;
  CHECK(static_cast<uint8_t*>(local.addr())[0] == 1);
  // Without a lent mapping an fd that does not map fails (EPROTO from map_memfd's fstat).
  CHECK_FALSE(backend::map_passed(-1, backend::Mapping{}, &got));
}
