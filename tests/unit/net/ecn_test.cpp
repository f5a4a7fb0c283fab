// ECN RED ramp on an egress class, with the queue held at a fixed depth.
#include <doctest/doctest.h>

#include <cmath>

#include "sim/net/egress_port.h"
#include "sim/net/link.h"
#include "tests/unit/net/recorder.h"

using namespace rdmasim;
using namespace rdmasim::net;

namespace {

// Marks among n ECT packets, each enqueued onto a paused class holding exactly `q` bytes
// (one non-ECT filler packet of q wire bytes; the queue is emptied between tries).
int marks_at(uint64_t q, int n) {
  Engine e(5);
  EgressConfig ec{.rate = Rate::gbps(100), .class_limit_bytes = 1ull << 30};
  ec.ecn = EcnConfig{.enabled = true, .kmin_bytes = 20'000, .kmax_bytes = 200'000, .pmax = 0.2};
  EgressPort port(e, ec);
  test::Recorder rx(e);
  LinkDirection link(e, port, rx, 0, 0);
  port.pause_class(0, 0xffff);  // nothing drains: the engine is never run
  int marked = 0;
  for (int i = 0; i < n; ++i) {
    port.flush_class(0);
    auto filler = test::roce_packet(0);
    filler->ect = false;
    filler->wire_bytes = static_cast<uint32_t>(q);
    port.enqueue(std::move(filler));
    REQUIRE(port.queued_bytes(0) == q);
    auto p = test::roce_packet(1000);
    Packet* raw = p.get();
    port.enqueue(std::move(p));
    marked += raw->ce;  // still queued (paused), so raw is valid
  }
  return marked;
}

}  // namespace

TEST_CASE("ecn: between Kmin and Kmax the marked fraction follows the RED ramp") {
  const int n = 20000;
  for (uint64_t q : {65'000ull, 110'000ull, 155'000ull}) {
    // p = pmax (q - Kmin) / (Kmax - Kmin) = 0.2 (q - 20000) / 180000: 0.05, 0.10, 0.15
    const double p = 0.2 * (static_cast<double>(q) - 20'000) / 180'000;
    const double sigma = std::sqrt(n * p * (1 - p));  // binomial: 30.8, 42.4, 50.5
    const int m = marks_at(q, n);
    CHECK(std::abs(m - n * p) < 4 * sigma);
  }
}

TEST_CASE("ecn: no marks at or below Kmin, every packet at or above Kmax") {
  CHECK(marks_at(10'000, 2000) == 0);
  CHECK(marks_at(20'000, 2000) == 0);     // q <= Kmin
  CHECK(marks_at(200'000, 2000) == 2000); // q >= Kmax
  CHECK(marks_at(500'000, 2000) == 2000);
}
