// InfiniBand virtual lanes on an egress port: SL-to-VL mapping (IBTA vol 1 7.6.6) and VL
// arbitration with high/low tables and LimitOfHighPriority (7.6.9).
#include <doctest/doctest.h>

#include <map>

#include "sim/net/egress_port.h"
#include "sim/net/link.h"
#include "tests/unit/net/recorder.h"

using namespace rdmasim;
using namespace rdmasim::net;

namespace {

// An InfiniBand packet of exactly `wire` bytes on SL `sl`.
PacketPtr ib_packet(uint32_t wire, uint8_t sl, uint64_t id = 0) {
  auto p = std::make_unique<Packet>();
  p->id = id;
  p->link_layer = LinkLayer::InfiniBand;
  p->src = 1;
  p->dst = 2;
  p->priority = sl;
  p->wire_bytes = wire;
  return p;
}

EgressConfig ib_port(IbVlConfig vls) {
  EgressConfig c{.rate = Rate::gbps(100), .class_limit_bytes = 64 << 20};
  c.ib = std::move(vls);
  return c;
}

// VLs of the first `n` packets to arrive.
std::vector<uint8_t> first_vls(const test::Recorder& rx, size_t n) {
  std::vector<uint8_t> v;
  for (size_t i = 0; i < n && i < rx.arrivals.size(); ++i) v.push_back(rx.arrivals[i].pkt->vl);
  return v;
}

}  // namespace

TEST_CASE("vl: the default SL-to-VL table is SL mod data VLs (identity below the VL count)") {
  for (uint8_t n : {1, 2, 4, 8}) {
    CAPTURE(int{n});
    const IbVlConfig v = default_ib_vls(n);
    CHECK(v.enabled);
    for (int sl = 0; sl < kMaxSl; ++sl) CHECK(v.sl2vl[sl] == sl % n);
    // one low-priority entry of 64 units (4096 B) per data VL, no high-priority entries
    REQUIRE(v.low.size() == n);
    for (uint8_t vl = 0; vl < n; ++vl) CHECK(v.low[vl] == VlArbEntry{vl, 64});
    CHECK(v.high.empty());
  }
}

TEST_CASE("vl: a packet is queued, counted and sent on the VL its SL maps to") {
  Engine e;
  IbVlConfig v = default_ib_vls(4);
  v.sl2vl[5] = 3;  // a configured entry overrides SL 5 -> 1
  EgressPort port(e, ib_port(v));
  test::Recorder rx(e);
  LinkDirection link(e, port, rx, 0, 0);
  CHECK(port.class_of(2) == 2);
  CHECK(port.class_of(6) == 2);   // 6 mod 4
  CHECK(port.class_of(5) == 3);
  CHECK(port.class_of(15) == 3);  // 15 mod 4
  port.enqueue(ib_packet(100, 6));
  port.enqueue(ib_packet(100, 5));
  e.run();
  REQUIRE(rx.arrivals.size() == 2);
  CHECK(rx.arrivals[0].pkt->vl == 2);
  CHECK(rx.arrivals[0].pkt->priority == 6);  // the SL travels unchanged
  CHECK(rx.arrivals[1].pkt->vl == 3);
  CHECK(port.counters().classes[2].tx_packets == 1);
  CHECK(port.counters().classes[3].tx_packets == 1);
}

TEST_CASE("vl: low-priority weights 1:3 share a saturated port 25/75") {
  // Both VLs backlogged; each entry sends whole packets while its weight (x 64 B) lasts.
  // (a) weights 16 and 48 (1 KiB and 3 KiB) with 1024 B packets: one round is exactly
  //     1 + 3 packets, so VL1 gets 3/4 of the bytes.
  // (b) weights 1 and 3 (64 B and 192 B) with 64 B packets: the same 1 + 3 per round.
  // (c) weights 64 and 192 with 4122 B packets (a 4096 B payload + 26 B headers): VL0's
  //     entry sends 1 packet (4096 - 4122 < 0 ends it), VL1's sends 3 (12288 - 2 * 4122 > 0
  //     allows a third), so again 1:3.
  // Over the first 400 packets (100 rounds) the share is exact; the tolerance of 1% covers
  // a partial round if the count is not a multiple of 4.
  struct Case { uint8_t w0, w1; uint32_t wire; };
  for (const Case c : {Case{16, 48, 1024}, Case{1, 3, 64}, Case{64, 192, 4122}}) {
    CAPTURE(int{c.w0});
    Engine e;
    IbVlConfig v = default_ib_vls(2);
    v.low = {{0, c.w0}, {1, c.w1}};
    EgressPort port(e, ib_port(v));
    test::Recorder rx(e);
    LinkDirection link(e, port, rx, 0, 0);
    for (int i = 0; i < 400; ++i) {
      port.enqueue(ib_packet(c.wire, 0));
      port.enqueue(ib_packet(c.wire, 1));
    }
    e.run();
    REQUIRE(rx.arrivals.size() == 800);
    std::map<uint8_t, double> bytes;
    for (size_t i = 0; i < 400; ++i) bytes[rx.arrivals[i].pkt->vl] += rx.arrivals[i].pkt->wire_bytes;
    const double total = bytes[0] + bytes[1];
    CHECK(bytes[0] / total == doctest::Approx(0.25).epsilon(0.01));
    CHECK(bytes[1] / total == doctest::Approx(0.75).epsilon(0.01));
    // and the sequence is the exact round: VL0, VL1, VL1, VL1
    CHECK(first_vls(rx, 8) == std::vector<uint8_t>{0, 1, 1, 1, 0, 1, 1, 1});
  }
}

TEST_CASE("vl: a weight below one packet still sends one whole packet per turn (IBTA packet granularity)") {
  // Weights 1 and 3 (64 B, 192 B) with 1024 B packets: each entry's first packet uses up
  // its weight, so both VLs send one packet a turn: 50/50, not 25/75.
  Engine e;
  IbVlConfig v = default_ib_vls(2);
  v.low = {{0, 1}, {1, 3}};
  EgressPort port(e, ib_port(v));
  test::Recorder rx(e);
  LinkDirection link(e, port, rx, 0, 0);
  for (int i = 0; i < 10; ++i) {
    port.enqueue(ib_packet(1024, 0));
    port.enqueue(ib_packet(1024, 1));
  }
  e.run();
  CHECK(first_vls(rx, 6) == std::vector<uint8_t>{0, 1, 0, 1, 0, 1});
}

TEST_CASE("vl: the high-priority table starves the low one only up to LimitOfHighPriority") {
  // High: VL1; low: VL0; 1024 B packets, both backlogged. High may send while the bytes it
  // sent since the last low packet are < limit * 4096 (the crossing packet completes, and
  // at least one packet goes when limit = 0), then one low packet goes:
  //   limit 1: ceil(4096 / 1024) = 4 high, 1 low; low share 1/5.
  //   limit 2: 8 high, 1 low; low share 1/9.
  //   limit 0: 1 high, 1 low.
  //   limit 255: unlimited, low waits until the high VL is empty.
  struct Case { uint8_t limit; size_t high_per_low; };
  for (const Case c : {Case{1, 4}, Case{2, 8}, Case{0, 1}}) {
    CAPTURE(int{c.limit});
    Engine e;
    IbVlConfig v = default_ib_vls(2);
    v.high = {{1, 255}};
    v.low = {{0, 255}};
    v.high_limit = c.limit;
    EgressPort port(e, ib_port(v));
    test::Recorder rx(e);
    LinkDirection link(e, port, rx, 0, 0);
    for (int i = 0; i < 200; ++i) {
      port.enqueue(ib_packet(1024, 1));  // high first: it starts at once and is counted
      port.enqueue(ib_packet(1024, 0));
    }
    e.run();
    REQUIRE(rx.arrivals.size() == 400);
    // While both are backlogged (the first 180 packets: at most 200 low or high gone), the
    // pattern is high_per_low high packets then one low.
    const size_t period = c.high_per_low + 1;
    for (size_t i = 0; i < 180 / period * period; ++i) {
      CAPTURE(i);
      CHECK(rx.arrivals[i].pkt->vl == (i % period == c.high_per_low ? 0 : 1));
    }
  }
  // limit 255: all 200 high packets go before the first low one
  Engine e;
  IbVlConfig v = default_ib_vls(2);
  v.high = {{1, 255}};
  v.low = {{0, 255}};
  v.high_limit = kVlHighLimitUnbounded;
  EgressPort port(e, ib_port(v));
  test::Recorder rx(e);
  LinkDirection link(e, port, rx, 0, 0);
  for (int i = 0; i < 200; ++i) {
    port.enqueue(ib_packet(1024, 1));
    port.enqueue(ib_packet(1024, 0));
  }
  e.run();
  REQUIRE(rx.arrivals.size() == 400);
  size_t high_first = 0;
  while (high_first < 400 && rx.arrivals[high_first].pkt->vl == 1) ++high_first;
  CHECK(high_first == 200);
}

TEST_CASE("vl: arbitration skips a VL without credit and never sends beyond the credit limit") {
  // VL0 has credit for two 1024 B packets only; VL1 plenty. With weights 1:1 the port
  // alternates until VL0 runs out, then sends VL1 alone; credits_available never drops
  // below 0 (checked after every packet leaves).
  Engine e;
  IbVlConfig v = default_ib_vls(2);
  v.low = {{0, 16}, {1, 16}};
  EgressPort port(e, ib_port(v));
  port.enable_credits(2 * 1024);
  struct Tap : PacketTap {
    EgressPort* port = nullptr;
    int64_t min_credit = INT64_MAX;
    void on_transmit(const Packet&, Time) override {
      for (uint8_t vl = 0; vl < 2; ++vl) min_credit = std::min(min_credit, port->credits_available(vl));
    }
  } tap;
  tap.port = &port;
  port.set_tap(&tap);
  test::Recorder rx(e);
  LinkDirection link(e, port, rx, 0, 0);
  for (int i = 0; i < 2; ++i) port.enqueue(ib_packet(1024, 1));  // VL1's limit is 2 packets too
  for (int i = 0; i < 5; ++i) port.enqueue(ib_packet(1024, 0));
  e.run();
  CHECK(first_vls(rx, 4) == std::vector<uint8_t>{1, 0, 1, 0});
  CHECK(rx.arrivals.size() == 4);  // VL0's other 3 wait for credit
  CHECK(tap.min_credit >= 0);
  CHECK(port.credits_available(0) == 0);
  Packet fc;
  fc.kind = PacketKind::IbCredit;
  fc.vl = 0;
  fc.credits = 5 * 1024;  // FCCL: room for all five
  port.apply_credit(fc);
  e.run();
  CHECK(rx.arrivals.size() == 7);
  CHECK(tap.min_credit >= 0);
}
