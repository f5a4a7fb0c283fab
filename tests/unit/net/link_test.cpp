#include <doctest/doctest.h>

#include "sim/net/egress_port.h"
#include "sim/net/link.h"
#include "tests/unit/net/recorder.h"

using namespace rdmasim;
using namespace rdmasim::net;

TEST_CASE("link: 4096 B + RoCEv2 headers at 100 Gb/s arrive after serialization + propagation") {
  Engine e;
  EgressPort port(e, EgressConfig{.rate = Rate::gbps(100)});
  test::Recorder rx(e);
  LinkDirection link(e, port, rx, 3, ns(500));
  port.enqueue(test::roce_packet(4096));
  e.run();
  REQUIRE(rx.arrivals.size() == 1);
  // wire = 4096 + 44 (IPv4+UDP+BTH+ICRC) + 38 (MAC+FCS+preamble+IFG) = 4178 B
  CHECK(rx.arrivals[0].pkt->wire_bytes == 4178);
  // 4178 B * 8 / 100e9 b/s = 334.24 ns; + 500 ns propagation
  CHECK(rx.arrivals[0].at == ps(334'240) + ns(500));
  CHECK(rx.arrivals[0].port == 3);
  CHECK(port.counters().tx_packets == 1);
  CHECK(port.counters().tx_bytes == 4178);
}

TEST_CASE("link: back-to-back packets are spaced by one serialization time") {
  Engine e;
  EgressPort port(e, EgressConfig{.rate = Rate::gbps(100)});
  test::Recorder rx(e);
  LinkDirection link(e, port, rx, 0, ns(1000));
  for (int i = 0; i < 3; ++i) port.enqueue(test::roce_packet(4096, 0, 1, 2, i));
  e.run();
  REQUIRE(rx.arrivals.size() == 3);
  for (int i = 0; i < 3; ++i) {
    // packet i finishes serializing at (i + 1) * 334.24 ns, then 1 us of propagation
    CHECK(rx.arrivals[i].at == (i + 1) * ps(334'240) + us(1));
    CHECK(rx.arrivals[i].pkt->id == static_cast<uint64_t>(i));
  }
  // at most one pending event per direction: the engine is empty at the end
  CHECK(e.pending() == 0);
}

TEST_CASE("link: 1500 B at 100 Gb/s serializes in 120 ns") {
  Engine e;
  EgressPort port(e, EgressConfig{.rate = Rate::gbps(100)});
  test::Recorder rx(e);
  LinkDirection link(e, port, rx, 0, 0);
  auto p = test::roce_packet(0);
  p->wire_bytes = 1500;
  port.enqueue(std::move(p));
  e.run();
  REQUIRE(rx.arrivals.size() == 1);
  CHECK(rx.arrivals[0].at == ns(120));  // 1500 * 8 / 100e9 s
}
