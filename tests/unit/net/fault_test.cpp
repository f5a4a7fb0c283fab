// Link loss, bit errors, link down/up, and cut-through forwarding.
#include <doctest/doctest.h>

#include <cmath>

#include "sim/net/egress_port.h"
#include "sim/net/host_port.h"
#include "sim/net/link.h"
#include "sim/net/switch.h"
#include "tests/unit/net/recorder.h"

using namespace rdmasim;
using namespace rdmasim::net;

namespace {

// Sends n packets of `payload` B through one lossy direction; returns how many arrived.
size_t send_through(const LinkFaults& f, int n, uint32_t payload, LinkCounters* lc) {
  Engine e(7);
  EgressPort port(e, EgressConfig{.rate = Rate::gbps(100)});
  test::Recorder rx(e);
  LinkDirection link(e, port, rx, 0, ns(100), f);
  for (int i = 0; i < n; ++i) port.enqueue(test::roce_packet(payload), /*ignore_limit=*/true);
  e.run();
  *lc = link.counters();
  CHECK(lc->lost_packets + rx.arrivals.size() == static_cast<size_t>(n));
  return rx.arrivals.size();
}

}  // namespace

TEST_CASE("link: a loss rate drops that fraction of packets within 4 binomial sigmas") {
  const int n = 20000;
  const double p = 0.1;
  LinkCounters lc;
  send_through(LinkFaults{.loss_rate = p}, n, 64, &lc);
  // Binomial(n, p): mean n p = 2000, sigma = sqrt(n p (1 - p)) = 42.4
  const double sigma = std::sqrt(n * p * (1 - p));
  CHECK(std::abs(static_cast<double>(lc.lost_packets) - n * p) < 4 * sigma);
  CHECK(lc.lost_bytes == lc.lost_packets * base_wire_bytes(LinkLayer::RoCEv2, 64));
}

TEST_CASE("link: a bit-error rate loses 1 - (1 - ber)^bits of packets") {
  const int n = 20000;
  const double ber = 1e-5;
  // wire bytes = 918 + 82 = 1000 B = 8000 bits: p = 1 - (1 - 1e-5)^8000 = 0.07688
  const uint32_t payload = 1000 - base_wire_bytes(LinkLayer::RoCEv2, 0);
  const double p = 1 - std::pow(1 - ber, 8000);
  CHECK(loss_probability(LinkFaults{.ber = ber}, 1000) == doctest::Approx(p).epsilon(1e-12));
  LinkCounters lc;
  send_through(LinkFaults{.ber = ber}, n, payload, &lc);
  const double sigma = std::sqrt(n * p * (1 - p));  // 37.7
  CHECK(std::abs(static_cast<double>(lc.lost_packets) - n * p) < 4 * sigma);
}

TEST_CASE("link: loss and BER combine as independent events") {
  // survive both: (1 - 0.1) * (1 - 1e-5)^8000
  const double p = 1 - 0.9 * std::pow(1 - 1e-5, 8000);
  CHECK(loss_probability(LinkFaults{.loss_rate = 0.1, .ber = 1e-5}, 1000) == doctest::Approx(p));
  CHECK(loss_probability(LinkFaults{}, 1000) == 0);
}

TEST_CASE("link: PFC frames are lost on a lossy link too") {
  LinkCounters lc;
  Engine e(3);
  EgressPort port(e, EgressConfig{.rate = Rate::gbps(100)});
  test::Recorder rx(e);
  LinkDirection link(e, port, rx, 0, 0, LinkFaults{.loss_rate = 1.0});
  auto pfc = std::make_unique<Packet>();
  pfc->kind = PacketKind::PfcPause;
  pfc->wire_bytes = kEthernetMinWire;
  port.enqueue(std::move(pfc));
  e.run();
  CHECK(rx.arrivals.empty());
  CHECK(link.counters().lost_packets == 1);
}

TEST_CASE("link: down loses packets on the wire and queued, up delivers again") {
  Engine e;
  EgressPort port(e, EgressConfig{.rate = Rate::gbps(100)});
  test::Recorder rx(e);
  LinkDirection link(e, port, rx, 0, us(1));
  const int n = 100;
  for (int i = 0; i < n; ++i) port.enqueue(test::roce_packet(4096, 0, 1, 2, i), true);
  const Time down = us(10), up = us(20);
  e.schedule_at(down, [&] { link.set_up(false); });
  e.schedule_at(up, [&] { link.set_up(true); });
  e.schedule_at(us(25), [&] {
    for (int i = 0; i < 10; ++i) port.enqueue(test::roce_packet(4096, 0, 1, 2, 1000 + i), true);
  });
  e.run();
  // Before `down`: packets whose last bit arrived by 10 us, i.e. (k * 334.24 ns + 1 us) <= 10 us
  // -> k <= 26.9: 26 packets. Packets serialized but still propagating at 10 us are lost.
  size_t before = 0, after = 0;
  for (const auto& a : rx.arrivals) {
    CHECK((a.at <= down || a.at > up));
    (a.at <= down ? before : after) += 1;
  }
  CHECK(before == 26);
  CHECK(after == 10);  // the 10 sent after `up` all arrive
  // every one of the first n is accounted: delivered, lost on the wire, or flushed from the queue
  CHECK(before + link.counters().down_drops + port.counters().link_down_drops == n);
  CHECK(link.counters().down_drops >= 1);  // ~3 were propagating (1 us / 334 ns)
}

TEST_CASE("switch: store-and-forward hops add one serialization each, cut-through does not") {
  // host -> sw1 -> sw2 -> host; links 100 ns, forwarding 200 ns, 4178 B wire at 100 Gb/s.
  const Time ser = ps(334'240), lat = ns(100), fwd = ns(200);
  const Time hdr = tx_time(Rate::gbps(100), 64);  // 64 B cut-through header = 5.12 ns
  for (bool ct : {false, true}) {
    Engine e;
    HostPort a(e, EgressConfig{.rate = Rate::gbps(100)});
    SwitchConfig sc{.name = "sw", .forwarding_latency = fwd, .cut_through = ct};
    Switch s1(e, sc), s2(e, sc);
    test::Recorder b(e);
    const int s1in = s1.add_port(Rate::gbps(100)), s1out = s1.add_port(Rate::gbps(100));
    const int s2in = s2.add_port(Rate::gbps(100)), s2out = s2.add_port(Rate::gbps(100));
    LinkDirection l1(e, a.egress(), s1, s1in, lat);
    LinkDirection l2(e, s1.port(s1out), s2, s2in, lat);
    LinkDirection l3(e, s2.port(s2out), b, 0, lat);
    s1.set_route(2, {s1out});
    s2.set_route(2, {s2out});
    a.send(test::roce_packet(4096, 0, 1, 2));
    e.run();
    REQUIRE(b.arrivals.size() == 1);
    // store and forward: 3 serializations; cut-through: 2 header times + 1 serialization
    const Time expect = ct ? 2 * hdr + ser + 3 * lat + 2 * fwd : 3 * ser + 3 * lat + 2 * fwd;
    CHECK(b.arrivals[0].at == expect);
    CHECK(s2.counters(s2out).tx_bytes == 4178);
  }
}

TEST_CASE("switch: cut-through into a faster link cannot finish before the last bit arrives") {
  // 25 Gb/s in, 100 Gb/s out: the egress ends at the ingress last bit (+ forwarding), not earlier.
  Engine e;
  HostPort a(e, EgressConfig{.rate = Rate::gbps(25)});
  Switch s(e, SwitchConfig{.name = "sw", .forwarding_latency = 0, .cut_through = true});
  test::Recorder b(e);
  const int in = s.add_port(Rate::gbps(25)), out = s.add_port(Rate::gbps(100));
  LinkDirection l1(e, a.egress(), s, in, 0);
  LinkDirection l2(e, s.port(out), b, 0, 0);
  s.set_route(2, {out});
  a.send(test::roce_packet(4096, 0, 1, 2));
  e.run();
  REQUIRE(b.arrivals.size() == 1);
  // last bit in at 4178 * 8 / 25e9 = 1336.96 ns; it leaves with it
  CHECK(b.arrivals[0].at == tx_time(Rate::gbps(25), 4178));
}
