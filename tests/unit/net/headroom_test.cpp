// PFC headroom: the sizing formula, per-(port, class) headroom accounting at a switch's
// ingress, headroom-overflow drops, and the headroom reserved out of a shared buffer.
#include <doctest/doctest.h>

#include "sim/net/link.h"
#include "sim/net/switch.h"
#include "tests/unit/net/recorder.h"

using namespace rdmasim;
using namespace rdmasim::net;

TEST_CASE("headroom: the formula, term by term") {
  // 100 Gb/s, 10 us propagation, 4198 B frames (4096 B RoCEv2 payload + 44 B headers + 38 B
  // framing + RETH 16 + ImmDt 4), peer response 201728 bit times (802.1Qbb at 100 Gb/s):
  //   2 x 10 us x 100e9 b/s / 8 = 250000 B; + 2 x 4198; + 84 (PFC frame); + 201728 / 8 = 25216
  CHECK(pfc_headroom_bytes(Rate::gbps(100), us(10), 4198, 201728) == 250000 + 2 * 4198 + 84 + 25216);
  // 400 ns at 25 Gb/s: 2 x 400e-9 x 25e9 / 8 = 2500 B; response 40960 bits = 5120 B
  CHECK(pfc_headroom_bytes(Rate::gbps(25), ns(400), 4198, 40960) == 2500 + 2 * 4198 + 84 + 5120);
  // no propagation, no response: two frames and the pause frame
  CHECK(pfc_headroom_bytes(Rate::gbps(100), 0, 1000, 0) == 2 * 1000 + 84);
  // 802.1Qbb response bounds by rate (bit times); between two rates the higher applies
  CHECK(pfc_response_bits(Rate::gbps(10)) == 30720);
  CHECK(pfc_response_bits(Rate::gbps(25)) == 40960);
  CHECK(pfc_response_bits(Rate::gbps(40)) == 60416);
  CHECK(pfc_response_bits(Rate::gbps(50)) == 201728);
  CHECK(pfc_response_bits(Rate::gbps(100)) == 201728);
  CHECK(pfc_response_bits(Rate::gbps(400)) == 463360);
  CHECK(pfc_response_bits(Rate::gbps(800)) == 2 * 463360);
}

namespace {

// A switch whose port `in` receives `n` packets of 4096 B payload (4178 B on the wire) at
// once, all to a port `out` that is paused, so they all stay buffered.
struct Held {
  Engine e;
  std::unique_ptr<Switch> sw;
  test::Recorder rx{e}, up{e};
  int in = 0, out = 0;
  std::unique_ptr<LinkDirection> l1, l2;
  explicit Held(SwitchConfig sc) {
    sc.forwarding_latency = 0;
    sc.egress.class_limit_bytes = 1ull << 30;
    sw = std::make_unique<Switch>(e, sc);
    in = sw->add_port(Rate::gbps(100));
    out = sw->add_port(Rate::gbps(100));
    l1 = std::make_unique<LinkDirection>(e, sw->port(out), rx, 0, 0);
    l2 = std::make_unique<LinkDirection>(e, sw->port(in), up, 0, 0);  // PFC frames go here
    sw->set_route(2, {out});
    sw->port(out).pause_class(0, 0xffff);
  }
};

}  // namespace

TEST_CASE("headroom: arrivals after XOFF fill the headroom; beyond it they drop as headroom overflow") {
  // xoff 10000 B: packets 1..3 (3 x 4178 = 12534 > 10000) raise XOFF on the third; with
  // 10000 B of headroom packets 4 and 5 fit (8356 <= 10000), the 6th would make 12534: it
  // and every later one is dropped and counted as headroom overflow on the ingress port.
  SwitchConfig sc{.name = "sw"};
  sc.pfc = PfcConfig{.enabled = true, .xoff_bytes = 10'000, .xon_bytes = 5'000,
                     .headroom_limited = true, .headroom_bytes = 10'000};
  Held h(sc);
  for (int i = 0; i < 8; ++i) h.sw->receive(test::roce_packet(4096, 0, 1, 2), h.in);
  h.e.run_until(ns(1));
  const PortCounters& c = h.sw->counters(h.in);
  CHECK(c.headroom_drops == 3);
  CHECK(c.headroom_drop_bytes == 3 * 4178);
  CHECK(c.drops == 3);
  CHECK(c.classes[0].drops == 3);
  CHECK(c.headroom_max_bytes == 2 * 4178);
  CHECK(h.sw->headroom_used(h.in, 0) == 2 * 4178);
  CHECK(h.sw->headroom(h.in) == 10'000);
  // the held packets drain when the pause ends; the headroom empties with them
  h.sw->port(h.out).pause_class(0, 0);
  h.e.run();
  CHECK(h.rx.arrivals.size() == 5);
  CHECK(h.sw->headroom_used(h.in, 0) == 0);
}

TEST_CASE("headroom: without a limit (the default) nothing is dropped at ingress") {
  SwitchConfig sc{.name = "sw"};
  sc.pfc = PfcConfig{.enabled = true, .xoff_bytes = 10'000, .xon_bytes = 5'000};
  Held h(sc);
  for (int i = 0; i < 8; ++i) h.sw->receive(test::roce_packet(4096, 0, 1, 2), h.in);
  h.sw->port(h.out).pause_class(0, 0);
  h.e.run();
  CHECK(h.rx.arrivals.size() == 8);
  CHECK(h.sw->counters(h.in).headroom_drops == 0);
  CHECK(h.sw->headroom(h.in) == 0);
}

TEST_CASE("headroom: reserved out of a shared buffer, per port and lossless class; held packets do not use the pool") {
  // 2 ports; lossless classes 0 and 3; headroom 20000 B per (port, class):
  //   shared = 1 MiB - 2 ports x 2 classes x 20000 B; port 1's headroom set to 30000 B:
  //   1048576 - (20000 + 30000) x 2 = 948576.
  SwitchConfig sc{.name = "sw"};
  sc.buffer = BufferConfig{.total_bytes = 1 << 20};
  sc.pfc = PfcConfig{.enabled = true, .xoff_bytes = 10'000, .xon_bytes = 5'000, .class_mask = 0b1001,
                     .headroom_limited = true, .headroom_bytes = 20'000};
  Held h(sc);
  CHECK(h.sw->shared_size() == (1 << 20) - 2 * 2 * 20'000);
  h.sw->set_headroom(h.out, 30'000);
  CHECK(h.sw->shared_size() == (1 << 20) - (20'000 + 30'000) * 2);
  CHECK(h.sw->lossless(0));
  CHECK(h.sw->lossless(3));
  CHECK_FALSE(h.sw->lossless(1));
  // 5 packets: 3 before XOFF draw from the pool, 2 held in headroom do not
  for (int i = 0; i < 5; ++i) h.sw->receive(test::roce_packet(4096, 0, 1, 2), h.in);
  h.e.run_until(ns(1));
  CHECK(h.sw->shared_used() == 3 * 4178);
  CHECK(h.sw->headroom_used(h.in, 0) == 2 * 4178);
  h.sw->port(h.out).pause_class(0, 0);
  h.e.run();
  CHECK(h.rx.arrivals.size() == 5);
  CHECK(h.sw->shared_used() == 0);
  // class 1 is lossy: no XOFF, no headroom
  CHECK(h.sw->counters(h.in).pauses_sent == 2);  // XOFF and XON for class 0
}
