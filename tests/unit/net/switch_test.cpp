#include <doctest/doctest.h>

#include <algorithm>
#include <memory>
#include <set>
#include <vector>

#include "sim/net/host_port.h"
#include "sim/net/link.h"
#include "sim/net/switch.h"
#include "tests/unit/net/recorder.h"

using namespace rdmasim;
using namespace rdmasim::net;

TEST_CASE("switch: two store-and-forward hops add one serialization per hop") {
  Engine e;
  HostPort a(e, EgressConfig{.rate = Rate::gbps(100)});
  Switch sw(e, SwitchConfig{.name = "sw0", .forwarding_latency = ns(200)});
  test::Recorder b(e);
  const int pa = sw.add_port(Rate::gbps(100));
  const int pb = sw.add_port(Rate::gbps(100));
  LinkDirection a_sw(e, a.egress(), sw, pa, ns(500));
  LinkDirection sw_b(e, sw.port(pb), b, 0, ns(500));
  sw.set_route(2, {pb});
  a.send(test::roce_packet(4096, 0, 1, 2));
  e.run();
  REQUIRE(b.arrivals.size() == 1);
  // 2 * 334.24 ns serialization (4178 B at 100 Gb/s) + 2 * 500 ns propagation + 200 ns forwarding
  CHECK(b.arrivals[0].at == 2 * ps(334'240) + 2 * ns(500) + ns(200));
  CHECK(sw.counters(pa).rx_packets == 1);
  CHECK(sw.counters(pb).tx_packets == 1);
  CHECK(sw.counters(pb).tx_bytes == 4178);
}

TEST_CASE("switch: egress overflow drops are counted on the egress port") {
  Engine e;
  SwitchConfig cfg{.name = "sw0", .forwarding_latency = 0};
  cfg.egress.class_limit_bytes = 10'000;
  Switch sw(e, cfg);
  test::Recorder out(e);
  const int in1 = sw.add_port(Rate::gbps(100));
  const int in2 = sw.add_port(Rate::gbps(100));
  const int o = sw.add_port(Rate::gbps(100));
  LinkDirection l(e, sw.port(o), out, 0, 0);
  sw.set_route(9, {o});
  // 6 packets arrive at once from two ingresses for one egress: 1 serializing + 2 queued
  for (int i = 0; i < 3; ++i) {
    sw.receive(test::roce_packet(4096, 0, 1, 9), in1);
    sw.receive(test::roce_packet(4096, 0, 1, 9), in2);
  }
  e.run();
  CHECK(out.arrivals.size() == 3);
  CHECK(sw.counters(o).drops == 3);
  CHECK(sw.counters(in1).rx_packets == 3);
}

TEST_CASE("switch: ECMP keeps one flow on one port and spreads flows over all ports") {
  Engine e;
  Switch sw(e, SwitchConfig{.name = "sw0", .forwarding_latency = 0});
  test::Recorder r0(e), r1(e);
  const int in = sw.add_port(Rate::gbps(100));
  const int p0 = sw.add_port(Rate::gbps(100));
  const int p1 = sw.add_port(Rate::gbps(100));
  LinkDirection l0(e, sw.port(p0), r0, 0, 0);
  LinkDirection l1(e, sw.port(p1), r1, 0, 0);
  sw.set_route(2, {p0, p1});
  for (int rep = 0; rep < 2; ++rep) {
    for (uint16_t port = 0; port < 64; ++port) {
      auto p = test::roce_packet(100, 0, 1, 2);
      p->udp_src_port = static_cast<uint16_t>(49152 + port);
      sw.receive(std::move(p), in);
    }
  }
  e.run();
  CHECK(r0.arrivals.size() + r1.arrivals.size() == 128);
  CHECK(r0.arrivals.size() > 0);
  CHECK(r1.arrivals.size() > 0);
  std::set<uint16_t> on0, on1;
  for (auto& a : r0.arrivals) on0.insert(a.pkt->udp_src_port);
  for (auto& a : r1.arrivals) on1.insert(a.pkt->udp_src_port);
  for (uint16_t p : on0) CHECK(on1.count(p) == 0);  // a flow never splits
}

TEST_CASE("switch: on RoCEv2 ECMP hashes header fields only — the UDP source port picks the path") {
  // 64 packets of one 5-tuple (same IPs, same UDP source port) whose simulator-internal
  // flow_hash differs: a switch cannot see flow_hash, so all take one port. Then the same
  // 64 flow_hash values on iWARP (where it stands for the TCP ports): they spread.
  auto run = [](LinkLayer ll) {
    Engine e;
    Switch sw(e, SwitchConfig{.name = "sw0", .forwarding_latency = 0});
    test::Recorder r0(e), r1(e);
    const int in = sw.add_port(Rate::gbps(100));
    const int p0 = sw.add_port(Rate::gbps(100));
    const int p1 = sw.add_port(Rate::gbps(100));
    LinkDirection l0(e, sw.port(p0), r0, 0, 0);
    LinkDirection l1(e, sw.port(p1), r1, 0, 0);
    sw.set_route(2, {p0, p1});
    for (uint32_t h = 0; h < 64; ++h) {
      auto p = test::roce_packet(100, 0, 1, 2);
      p->link_layer = ll;
      p->udp_src_port = 49152;
      p->flow_hash = h * 0x9e3779b1u;
      sw.receive(std::move(p), in);
    }
    e.run();
    return std::pair(r0.arrivals.size(), r1.arrivals.size());
  };
  const auto [a0, a1] = run(LinkLayer::RoCEv2);
  CHECK(a0 + a1 == 64);
  CHECK((a0 == 0 || a1 == 0));
  // iWARP: 64 flows on 2 ports; all on one would have probability 2 x 2^-64.
  const auto [b0, b1] = run(LinkLayer::IWarp);
  CHECK(b0 > 0);
  CHECK(b1 > 0);
}

TEST_CASE("switch: PFC XOFF goes upstream above xoff, XON once drained to xon") {
  Engine e;
  SwitchConfig cfg{.name = "sw0", .forwarding_latency = 0};
  cfg.pfc = PfcConfig{.enabled = true, .xoff_bytes = 10'000, .xon_bytes = 5'000};
  Switch sw(e, cfg);
  HostPort up(e, EgressConfig{.rate = Rate::gbps(100)});
  test::Recorder down(e);
  const int in = sw.add_port(Rate::gbps(100));
  const int o = sw.add_port(Rate::gbps(25));  // slower egress: the buffer fills
  LinkDirection up_sw(e, up.egress(), sw, in, 0);
  LinkDirection sw_up(e, sw.port(in), up, 0, 0);
  LinkDirection sw_down(e, sw.port(o), down, 0, 0);
  sw.set_route(2, {o});
  for (int i = 0; i < 10; ++i) up.send(test::roce_packet(4096, 3, 1, 2, i));
  e.run();
  CHECK(down.arrivals.size() == 10);
  CHECK(sw.counters(o).drops == 0);
  // every XOFF is followed by an XON once the queue drains
  CHECK(sw.counters(in).pauses_sent >= 2);
  CHECK(sw.counters(in).pauses_sent % 2 == 0);
  CHECK(up.counters().pauses_received == sw.counters(in).pauses_sent);
}

TEST_CASE("switch: XOFF is refreshed every half pause time while the buffer stays full") {
  Engine e;
  SwitchConfig cfg{.name = "sw0", .forwarding_latency = 0};
  cfg.pfc = PfcConfig{.enabled = true, .xoff_bytes = 10'000, .xon_bytes = 5'000};
  Switch sw(e, cfg);
  HostPort up(e, EgressConfig{.rate = Rate::gbps(100)});
  test::Recorder down(e);
  const int in = sw.add_port(Rate::gbps(100));
  const int o = sw.add_port(Rate::mbps(100));  // 4178 B take 334.24 us: the buffer stays full
  LinkDirection up_sw(e, up.egress(), sw, in, 0);
  LinkDirection sw_up(e, sw.port(in), up, 0, 0);
  LinkDirection sw_down(e, sw.port(o), down, 0, 0);
  sw.set_route(2, {o});
  for (int i = 0; i < 10; ++i) up.send(test::roce_packet(4096, 3, 1, 2, i));
  // a single XOFF would expire at ~335.5 us (65535 * 512 bit / 100e9 b/s); at 400 us the
  // refresh sent at ~167.8 us (and ~335.5 us) still holds the upstream
  e.run_until(us(400));
  CHECK(sw.counters(in).pauses_sent == 3);  // XOFF at ~1 us, refreshes at +167.8 and +335.5 us
  CHECK(up.egress().paused(3));
  e.run();
  CHECK(down.arrivals.size() == 10);
  CHECK(sw.counters(o).drops == 0);
  CHECK_FALSE(up.egress().paused(3));
}

TEST_CASE("switch: IB credits make a full egress lossless where the same queue drops") {
  for (const bool credits : {false, true}) {
    Engine e;
    SwitchConfig cfg{.name = "sw0", .forwarding_latency = 0};
    cfg.egress.class_limit_bytes = 10'000;
    cfg.ib_vl_buffer_bytes = credits ? 10'000 : 0;
    Switch sw(e, cfg);
    HostPort a(e, EgressConfig{.rate = Rate::gbps(100)});
    HostPort b(e, EgressConfig{.rate = Rate::gbps(100)});
    test::Recorder rx(e);
    b.attach(&rx);
    if (credits) {
      a.enable_credits(10'000, 10'000);
      b.enable_credits(10'000, 10'000);
    }
    const int in = sw.add_port(Rate::gbps(100), 10'000);
    const int o = sw.add_port(Rate::gbps(25), 10'000);  // 4 times slower: the queue fills
    LinkDirection a_sw(e, a.egress(), sw, in, ns(100));
    LinkDirection sw_a(e, sw.port(in), a, 0, ns(100));
    LinkDirection sw_b(e, sw.port(o), b, 0, ns(100));
    LinkDirection b_sw(e, b.egress(), sw, o, ns(100));
    sw.set_route(2, {o});
    for (int i = 0; i < 10; ++i) a.send(test::roce_packet(4096, 0, 1, 2, i));
    e.run();
    if (credits) {
      // the egress queue holds at most what the ingress VL buffer admits: 10000 B
      CHECK(sw.counters(o).drops == 0);
      CHECK(rx.arrivals.size() == 10);
      CHECK(sw.counters(in).tx_packets == 10);  // one credit update per packet released
      CHECK(sw.counters(o).rx_packets == 10);   // b returned one per packet delivered
    } else {
      CHECK(sw.counters(o).drops > 0);
      CHECK(rx.arrivals.size() == 10 - sw.counters(o).drops);
    }
  }
}

TEST_CASE("egress: a VL without credit waits; a credit update releases it") {
  Engine e;
  EgressPort port(e, EgressConfig{.rate = Rate::gbps(100)});
  test::Recorder rx(e);
  LinkDirection link(e, port, rx, 0, 0);
  port.enable_credits(5'000);  // room for one 4178 B packet, not two
  port.enqueue(test::roce_packet(4096, 0, 1, 2, 1));
  port.enqueue(test::roce_packet(4096, 0, 1, 2, 2));
  e.run();
  CHECK(rx.arrivals.size() == 1);
  Packet fc;
  fc.kind = PacketKind::IbCredit;
  fc.vl = 0;
  fc.credits = 5'000 + 4178;  // FCCL after the receiver freed the first packet
  port.apply_credit(fc);
  e.run();
  CHECK(rx.arrivals.size() == 2);
}

TEST_CASE("switch: an egress class serves its ingress ports round robin, or in arrival order with fifo") {
  // Ingress 0 gets 3 packets, then ingress 1 gets 3, all at once to a paused egress.
  // Round robin sends one per ingress in turn: 0,1,0,1,0,1; fifo in arrival order: 0,0,0,1,1,1.
  for (const bool rr : {true, false}) {
    CAPTURE(rr);
    Engine e;
    SwitchConfig cfg{.name = "sw0", .forwarding_latency = 0};
    cfg.ingress_round_robin = rr;
    Switch sw(e, cfg);
    const int a = sw.add_port(Rate::gbps(100)), b = sw.add_port(Rate::gbps(100)), o = sw.add_port(Rate::gbps(100));
    test::Recorder rx(e);
    LinkDirection link(e, sw.port(o), rx, 0, 0);
    sw.set_route(2, {o});
    sw.port(o).pause_class(0, 0xffff);
    for (int i = 0; i < 3; ++i) sw.receive(test::roce_packet(100, 0, 1, 2, 10 + i), a);
    for (int i = 0; i < 3; ++i) sw.receive(test::roce_packet(100, 0, 1, 2, 20 + i), b);
    e.run_until(ns(1));
    sw.port(o).pause_class(0, 0);
    e.run();
    REQUIRE(rx.arrivals.size() == 6);
    std::vector<uint64_t> ids;
    for (const auto& x : rx.arrivals) ids.push_back(x.pkt->id);
    CHECK(ids == (rr ? std::vector<uint64_t>{10, 20, 11, 21, 12, 22} : std::vector<uint64_t>{10, 11, 12, 20, 21, 22}));
  }
}

TEST_CASE("switch: a lossless (PFC) class is admitted at ingress and never dropped by the egress limit") {
  // The same 6 packets for one egress as above, with class 0 lossless: the 10000 B egress
  // limit binds lossy classes only, so all 6 are forwarded; class 1 stays lossy and drops 3.
  Engine e;
  SwitchConfig cfg{.name = "sw0", .forwarding_latency = 0};
  cfg.egress.class_limit_bytes = 10'000;
  cfg.pfc = PfcConfig{.enabled = true, .xoff_bytes = 1 << 20, .xon_bytes = 1 << 19, .class_mask = 0b01};
  Switch sw(e, cfg);
  test::Recorder out(e);
  const int in1 = sw.add_port(Rate::gbps(100));
  const int in2 = sw.add_port(Rate::gbps(100));
  const int o = sw.add_port(Rate::gbps(100));
  LinkDirection l(e, sw.port(o), out, 0, 0);
  sw.set_route(9, {o});
  for (uint8_t prio : {0, 1}) {
    for (int i = 0; i < 3; ++i) {
      sw.receive(test::roce_packet(4096, prio, 1, 9), in1);
      sw.receive(test::roce_packet(4096, prio, 1, 9), in2);
    }
    e.run();
  }
  CHECK(out.arrivals.size() == 6 + 3);
  CHECK(sw.counters(o).classes[0].drops == 0);
  CHECK(sw.counters(o).classes[1].drops == 3);
}

namespace {

// A switch with one ingress and three egress ports p0..p2 (ports 1..3), each to a recorder;
// packets to address 2 may leave by any of the three, to address 3 only by p0.
struct ThreeWays {
  Engine e;
  Switch sw;
  test::Recorder r[3] = {test::Recorder(e), test::Recorder(e), test::Recorder(e)};
  std::vector<std::unique_ptr<LinkDirection>> links;
  int in = 0;
  explicit ThreeWays(bool adaptive)
      : sw(e, SwitchConfig{.name = "sw0", .forwarding_latency = 0, .adaptive_routing = adaptive}) {
    in = sw.add_port(Rate::gbps(100));
    std::vector<int> out;
    for (auto& rec : r) {
      out.push_back(sw.add_port(Rate::gbps(100)));
      links.push_back(std::make_unique<LinkDirection>(e, sw.port(out.back()), rec, 0, 0));
    }
    sw.set_route(2, out);
    sw.set_route(3, {out[0]});
  }
  // `n` packets of one flow (same headers) to `dst`, all arriving at once.
  void burst(int n, Address dst) {
    for (int i = 0; i < n; ++i) sw.receive(test::roce_packet(4096, 0, 1, dst), in);
  }
};

}  // namespace

TEST_CASE("switch: adaptive routing sends each packet of one flow to the emptiest equal-cost port") {
  // 9 packets of one flow at once. ECMP hashes the flow to one port: all 9 there. Adaptive:
  // each packet joins the shortest queue, so no queue gets two packets ahead of another:
  // 3 per port.
  ThreeWays ecmp(false);
  ecmp.burst(9, 2);
  ecmp.e.run();
  const size_t most = std::max({ecmp.r[0].arrivals.size(), ecmp.r[1].arrivals.size(), ecmp.r[2].arrivals.size()});
  CHECK(most == 9);

  ThreeWays ar(true);
  ar.burst(9, 2);
  ar.e.run();
  for (const auto& rec : ar.r) CHECK(rec.arrivals.size() == 3);
}

TEST_CASE("switch: adaptive routing keeps off a port whose queue is longer") {
  // 4 packets to address 3 can only take p0: one serializes, 3 wait there. Then 6 packets
  // to address 2: p1 and p2 take them in turn (at most 1 serializing + 2 queued each), never
  // reaching p0's 3 queued, so p0 gets none of them.
  ThreeWays ar(true);
  ar.burst(4, 3);
  ar.burst(6, 2);
  ar.e.run();
  size_t to2_on_p0 = 0;
  for (const auto& a : ar.r[0].arrivals) to2_on_p0 += a.pkt->dst == 2;
  CHECK(to2_on_p0 == 0);
  CHECK(ar.r[1].arrivals.size() == 3);
  CHECK(ar.r[2].arrivals.size() == 3);
}
