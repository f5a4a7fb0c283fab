// The Counters reply: the whole JSON in a sealed memfd, at any fabric size.
#include <doctest/doctest.h>

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <fstream>

#include <nlohmann/json.hpp>

#include "lib/daemon/sealed_text.h"
#include "tests/unit/daemon/test_daemon.h"

using namespace rdmasim;
using namespace rdmasim::daemon::test;

TEST_CASE("daemon counters: a k=4 fat tree's counters arrive whole, past one message's size") {
  std::ifstream f(RDMASIM_SOURCE_ROOT "/configs/fat_tree_roce.json");
  TestDaemon d(nlohmann::json::parse(f));
  REQUIRE(d.listen_rc() == 0);
  RawClient c(d.path());
  auto r = c.call_empty(ipc::Op::Counters);
  REQUIRE(r->hdr.status == 0);
  CHECK(r->body.empty());
  REQUIRE(r->fds.size() == 1);
  const std::string text = counters_text(*r);
  // More than a socket message may carry (kMaxMsgBytes): the reply that truncated here.
  CHECK(text.size() > ipc::kMaxMsgBytes);
  const auto j = nlohmann::json::parse(text);
  // A k-ary fat tree has k^3/4 hosts (Al-Fares et al., SIGCOMM 2008): 16, one NIC each.
  CHECK(j["nics"].size() == 16);
}

TEST_CASE("daemon counters: the memfd is sealed, so the reader sees a fixed snapshot") {
  TestDaemon d;
  RawClient c(d.path());
  auto r = c.call_empty(ipc::Op::Counters);
  REQUIRE(r->fds.size() == 1);
  const int fd = r->fds[0];
  CHECK(write(fd, "x", 1) == -1);
  CHECK(errno == EPERM);  // F_SEAL_WRITE (memfd_create(2))
  CHECK(ftruncate(fd, 0) == -1);
  CHECK(errno == EPERM);  // F_SEAL_SHRINK
  CHECK(nlohmann::json::parse(counters_text(*r))["daemon"]["clients"] == 1);
}

TEST_CASE("sealed text: round trip, and an unsealed memfd is refused") {
  const std::string text(100000, 'a');
  const int fd = daemon::make_sealed_text("t", text);
  REQUIRE(fd >= 0);
  std::string back;
  CHECK(daemon::read_sealed_text(fd, &back) == 0);
  CHECK(back == text);
  close(fd);

  const int open_fd = memfd_create("t", MFD_CLOEXEC);
  REQUIRE(open_fd >= 0);
  CHECK(write(open_fd, "{}", 2) == 2);
  CHECK(daemon::read_sealed_text(open_fd, &back) == EPERM);  // its sender could change it
  close(open_fd);
}
