// ECN RED ramp on an egress class, with the queue held at a fixed depth.
#include <doctest/doctest.h>

#include <cmath>

#include "sim/net/egress_port.h"
#include "sim/net/link.h"
#include "tests/unit/net/recorder.h"

using namespace rdmasim;
using namespace rdmasim::net;

namespace {

const EcnConfig kRamp{.enabled = true, .kmin_bytes = 20'000, .kmax_bytes = 200'000, .pmax = 0.2};

std::array<EcnConfig, kNumClasses> all_classes(const EcnConfig& c) {
  std::array<EcnConfig, kNumClasses> a;
  a.fill(c);
  return a;
}

// Marks among n ECT packets of traffic class `cls`, each enqueued onto that paused class
// holding exactly `q` bytes (one non-ECT filler packet of q wire bytes; the queue is
// emptied between tries). `ecn`: the port's per-class settings.
int marks_at(uint64_t q, int n, uint8_t cls = 0,
             const std::array<EcnConfig, kNumClasses>& ecn = all_classes(kRamp)) {
  Engine e(5);
  EgressConfig ec{.rate = Rate::gbps(100), .class_limit_bytes = 1ull << 30};
  ec.ecn = ecn;
  EgressPort port(e, ec);
  test::Recorder rx(e);
  LinkDirection link(e, port, rx, 0, 0);
  port.pause_class(cls, 0xffff);  // nothing drains: the engine is never run
  int marked = 0;
  for (int i = 0; i < n; ++i) {
    port.flush_class(cls);
    auto filler = test::roce_packet(0);
    filler->ect = false;
    filler->priority = cls;
    filler->wire_bytes = static_cast<uint32_t>(q);
    port.enqueue(std::move(filler));
    REQUIRE(port.queued_bytes(cls) == q);
    auto p = test::roce_packet(1000);
    p->priority = cls;
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

TEST_CASE("ecn: each class marks on its own queue with its own thresholds") {
  // Class 3 (the RoCE class of a typical deployment) ramps from 50 KB to 100 KB with
  // pmax 1; class 0 has ECN off; the others keep the 20/200 KB ramp.
  std::array<EcnConfig, kNumClasses> ecn = all_classes(kRamp);
  ecn[0].enabled = false;
  ecn[3] = EcnConfig{.enabled = true, .kmin_bytes = 50'000, .kmax_bytes = 100'000, .pmax = 1.0};
  CHECK(marks_at(500'000, 2000, 0, ecn) == 0);     // off, however deep
  CHECK(marks_at(40'000, 2000, 3, ecn) == 0);      // below class 3's Kmin (the 20 KB ramp would mark)
  CHECK(marks_at(100'000, 2000, 3, ecn) == 2000);  // at class 3's Kmax (20/200 KB: p = 0.09)
  const int n = 20000;
  // class 3 at 75 KB: p = 1.0 (75000 - 50000) / 50000 = 0.5; class 5 at 75 KB: 0.2 * 55/180
  const double p3 = 0.5, p5 = 0.2 * 55'000.0 / 180'000;
  CHECK(std::abs(marks_at(75'000, n, 3, ecn) - n * p3) < 4 * std::sqrt(n * p3 * (1 - p3)));
  CHECK(std::abs(marks_at(75'000, n, 5, ecn) - n * p5) < 4 * std::sqrt(n * p5 * (1 - p5)));
}
