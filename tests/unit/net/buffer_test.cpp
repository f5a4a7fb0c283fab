// Shared switch buffer with dynamic thresholds.
#include <doctest/doctest.h>

#include <cmath>

#include "sim/net/link.h"
#include "sim/net/switch.h"
#include "tests/unit/net/recorder.h"

using namespace rdmasim;
using namespace rdmasim::net;

TEST_CASE("buffer: one queue grows to alpha * free shared buffer, within one packet") {
  for (double alpha : {1.0, 0.5, 2.0}) {
    Engine e;
    SwitchConfig sc{.name = "sw", .forwarding_latency = 0};
    sc.egress.class_limit_bytes = 1ull << 30;
    sc.buffer = BufferConfig{.total_bytes = 1 << 20, .reserved_bytes = 0, .alpha = alpha};
    Switch sw(e, sc);
    test::Recorder rx(e);
    const int in = sw.add_port(Rate::gbps(100)), out = sw.add_port(Rate::gbps(100));
    LinkDirection l(e, sw.port(out), rx, 0, 0);
    sw.set_route(2, {out});
    const int n = 400;
    for (int i = 0; i < n; ++i) sw.receive(test::roce_packet(4096, 0, 1, 2), in);
    e.run_until(ps(1));  // through the (zero) forwarding latency; the first is serializing
    const uint64_t b = 4178;
    // Admitted while q + b <= alpha * (S - q) (the queue's excess is the whole shared use):
    // the queue settles at q = alpha * S / (1 + alpha), where q = alpha * free, free = S - q.
    const double S = 1 << 20;
    const double q_star = alpha * S / (1 + alpha);
    const uint64_t q = sw.port(out).queued_bytes(0);
    CHECK(std::abs(static_cast<double>(q) - q_star) <= b);
    CHECK(std::abs(static_cast<double>(q) - alpha * (S - q)) <= (1 + alpha) * b);
    CHECK(sw.shared_used() == q);
    // one packet serializing, q / b queued, the rest dropped and counted
    CHECK(sw.counters(out).drops == n - 1 - q / b);
    e.run();
    CHECK(rx.arrivals.size() == static_cast<size_t>(n) - sw.counters(out).drops);
    CHECK(sw.shared_used() == 0);
  }
}

TEST_CASE("buffer: reserved bytes are admitted even when the shared pool is full") {
  Engine e;
  SwitchConfig sc{.name = "sw", .forwarding_latency = 0};
  sc.egress.class_limit_bytes = 1ull << 30;
  // 3 ports * 8 classes * 10000 B reserved = 240000 B; shared = 250000 - 240000 = 10000 B
  sc.buffer = BufferConfig{.total_bytes = 250'000, .reserved_bytes = 10'000, .alpha = 0};
  Switch sw(e, sc);
  test::Recorder r1(e), r2(e);
  const int in = sw.add_port(Rate::gbps(100)), o1 = sw.add_port(Rate::gbps(100)), o2 = sw.add_port(Rate::gbps(100));
  LinkDirection l1(e, sw.port(o1), r1, 0, 0);
  LinkDirection l2(e, sw.port(o2), r2, 0, 0);
  sw.set_route(2, {o1});
  sw.set_route(3, {o2});
  CHECK(sw.shared_size() == 10'000);
  // o1 fills its reserve (2 x 4178 queued) and the shared pool (2 more): 1 + 4 admitted
  for (int i = 0; i < 10; ++i) sw.receive(test::roce_packet(4096, 0, 1, 2), in);
  e.run_until(ps(1));
  // queued 4 * 4178 = 16712: reserve 10000 + shared 6712 (a 5th would need 10890 > 10000)
  CHECK(sw.port(o1).queued_bytes(0) == 4 * 4178);
  CHECK(sw.shared_used() == 4 * 4178 - 10'000);
  // Shared free = 10000 - 6712 = 3288 < one packet, yet o2 gets its reserve: 1 serializing,
  // 2 in the reserve (8356 B), a 3rd with 12534 - 10000 = 2534 B from the pool (<= 3288),
  // and the 4th queued one would need 4178 more: dropped.
  for (int i = 0; i < 5; ++i) sw.receive(test::roce_packet(4096, 0, 1, 3), in);
  e.run_until(ps(2));
  CHECK(sw.port(o2).queued_bytes(0) == 3 * 4178);
  CHECK(sw.counters(o2).drops == 1);
  CHECK(sw.shared_used() == 10'000 - 3288 + 2534);
  e.run();
}
