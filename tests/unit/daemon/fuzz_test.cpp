// Random control messages (seeded, so reproducible) never stop the daemon from serving.
#include <doctest/doctest.h>

#include <random>

#include "tests/unit/daemon/test_daemon.h"

using namespace rdmasim;
using namespace rdmasim::daemon::test;

TEST_CASE("daemon fuzz: 3000 random requests all get a reply and the daemon still serves") {
  TestDaemon d;
  RawClient c(d.path());
  REQUIRE(c.hello() == 0);
  std::mt19937 rng(12345);
  std::vector<uint8_t> body(512);
  int replies = 0;
  for (int i = 0; i < 3000; ++i) {
    auto op = static_cast<ipc::Op>(1 + rng() % 20);  // Hello .. Counters; never Shutdown
    const size_t len = rng() % body.size();
    for (auto& b : body) b = static_cast<uint8_t>(rng() % 4 == 0 ? rng() : rng() % 8);  // small values hit real handles
    // Keep CQ sizes sane: a huge CQ is a resource question, not a parsing one.
    if (op == ipc::Op::CreateCq && len >= 8) body[5] = body[6] = body[7] = 0;
    c.send_op(op, body.data(), len);
    if (c.receive()->hdr.status >= 0) ++replies;
  }
  CHECK(replies == 3000);
  CHECK(c.alloc_pd() != 0);
  RawClient other(d.path());
  CHECK(other.hello() == 0);
}
