#include <doctest/doctest.h>

#include "sim/net/egress_port.h"
#include "sim/net/host_port.h"
#include "sim/net/link.h"
#include "tests/unit/net/recorder.h"

using namespace rdmasim;
using namespace rdmasim::net;

TEST_CASE("egress: strict priority, class 7 first; the packet on the wire is not preempted") {
  Engine e;
  EgressPort port(e, EgressConfig{.rate = Rate::gbps(100)});
  test::Recorder rx(e);
  LinkDirection link(e, port, rx, 0, 0);
  port.enqueue(test::roce_packet(1000, 0, 1, 2, 1));  // starts serializing at once
  port.enqueue(test::roce_packet(1000, 0, 1, 2, 2));
  port.enqueue(test::roce_packet(1000, 3, 1, 2, 3));
  port.enqueue(test::roce_packet(1000, 7, 1, 2, 4));
  port.enqueue(test::roce_packet(1000, 3, 1, 2, 5));
  e.run();
  REQUIRE(rx.arrivals.size() == 5);
  const uint64_t expected[] = {1, 4, 3, 5, 2};
  for (int i = 0; i < 5; ++i) CHECK(rx.arrivals[i].pkt->id == expected[i]);
}

TEST_CASE("egress: queue overflow drops are counted per class") {
  Engine e;
  EgressPort port(e, EgressConfig{.rate = Rate::gbps(100), .class_limit_bytes = 10'000});
  test::Recorder rx(e);
  LinkDirection link(e, port, rx, 0, 0);
  int accepted = 0;
  for (int i = 0; i < 5; ++i) accepted += port.enqueue(test::roce_packet(4096, 2));
  // first packet leaves the queue for the serializer; then 2 * 4178 = 8356 <= 10000 fit and
  // a third queued one would make 12534 > 10000: 1 + 2 accepted, 2 dropped
  CHECK(accepted == 3);
  CHECK(port.counters().drops == 2);
  CHECK(port.counters().classes[2].drops == 2);
  CHECK(port.counters().drop_bytes == 2 * 4178);
  e.run();
  CHECK(rx.arrivals.size() == 3);
}

TEST_CASE("egress: a PFC pause of 100 quanta at 100 Gb/s holds a class for 512 ns") {
  Engine e;
  EgressPort port(e, EgressConfig{.rate = Rate::gbps(100)});
  test::Recorder rx(e);
  LinkDirection link(e, port, rx, 0, 0);
  port.pause_class(3, 100);  // 100 * 512 bit / 100e9 b/s = 512 ns
  CHECK(port.paused(3));
  CHECK_FALSE(port.paused(2));
  port.enqueue(test::roce_packet(1000, 3, 1, 2, 1));
  port.enqueue(test::roce_packet(1000, 2, 1, 2, 2));  // not paused: goes first
  e.run();
  REQUIRE(rx.arrivals.size() == 2);
  const Time t1082 = tx_time(Rate::gbps(100), 1082);  // 1000 + 44 + 38 B = 86.56 ns
  CHECK(rx.arrivals[0].pkt->id == 2);
  CHECK(rx.arrivals[0].at == t1082);
  CHECK(rx.arrivals[1].pkt->id == 1);
  CHECK(rx.arrivals[1].at == ns(512) + t1082);
}

TEST_CASE("egress: XON (0 quanta) resumes a paused class at once") {
  Engine e;
  EgressPort port(e, EgressConfig{.rate = Rate::gbps(100)});
  test::Recorder rx(e);
  LinkDirection link(e, port, rx, 0, 0);
  port.pause_class(1, 0xffff);
  port.enqueue(test::roce_packet(1000, 1));
  e.run_until(ns(100));
  CHECK(rx.arrivals.empty());
  port.pause_class(1, 0);
  e.run();
  REQUIRE(rx.arrivals.size() == 1);
  CHECK(rx.arrivals[0].at == ns(100) + tx_time(Rate::gbps(100), 1082));
}

TEST_CASE("egress: ECN marks everything above Kmax and nothing below Kmin") {
  Engine e;
  EgressConfig cfg{.rate = Rate::gbps(100)};
  cfg.ecn[0] = EcnConfig{.enabled = true, .kmin_bytes = 5'000, .kmax_bytes = 10'000, .pmax = 0.5};
  EgressPort port(e, cfg);
  test::Recorder rx(e);
  LinkDirection link(e, port, rx, 0, 0);
  // queue (bytes before each enqueue): on wire, 0, 4178, 8356 (ramp), 12534, 16712
  for (int i = 0; i < 6; ++i) port.enqueue(test::roce_packet(4096, 0, 1, 2, i));
  e.run();
  REQUIRE(rx.arrivals.size() == 6);
  CHECK_FALSE(rx.arrivals[0].pkt->ce);
  CHECK_FALSE(rx.arrivals[1].pkt->ce);
  CHECK_FALSE(rx.arrivals[2].pkt->ce);
  CHECK(rx.arrivals[4].pkt->ce);
  CHECK(rx.arrivals[5].pkt->ce);
}

TEST_CASE("host port: ready() follows room and pause; the ready callback fires on drain") {
  Engine e;
  HostPort hp(e, EgressConfig{.rate = Rate::gbps(100), .class_limit_bytes = 5'000});
  test::Recorder rx(e);
  LinkDirection link(e, hp.egress(), rx, 0, 0);
  int callbacks = 0;
  hp.set_ready_callback([&] { ++callbacks; });
  CHECK(hp.ready(0));
  hp.send(test::roce_packet(4096));  // to the serializer
  hp.send(test::roce_packet(4096));  // queued: 4178 < 5000, still room
  CHECK(hp.ready(0));
  hp.send(test::roce_packet(4096));  // queued 8356 >= 5000: full, but send never drops
  CHECK_FALSE(hp.ready(0));
  CHECK(hp.ready(1));
  e.run();
  CHECK(rx.arrivals.size() == 3);
  CHECK(callbacks == 3);
  CHECK(hp.ready(0));
  CHECK(hp.egress().counters().drops == 0);
}

TEST_CASE("egress: DWRR weights 1 and 3 send 1 and 3 packets of 1 KiB per round") {
  Engine e;
  EgressConfig cfg{.rate = Rate::gbps(100)};
  cfg.dwrr_weights[1] = 1;  // quantum 1 * 1024 B: one 1024 B packet a round
  cfg.dwrr_weights[2] = 3;  // quantum 3 * 1024 B: three a round
  EgressPort port(e, cfg);
  test::Recorder rx(e);
  LinkDirection link(e, port, rx, 0, 0);
  auto kib = [](uint8_t prio) {
    auto p = test::roce_packet(0, prio);
    p->wire_bytes = 1024;
    return p;
  };
  port.enqueue(kib(7));  // strict class: goes first and occupies the wire meanwhile
  for (int i = 0; i < 8; ++i) port.enqueue(kib(1));
  for (int i = 0; i < 8; ++i) port.enqueue(kib(2));
  e.run();
  REQUIRE(rx.arrivals.size() == 17);
  // rounds: (1, 2 2 2), (1, 2 2 2), (1, 2 2: class 2 is empty), then class 1 alone
  const uint8_t expected[] = {7, 1, 2, 2, 2, 1, 2, 2, 2, 1, 2, 2, 1, 1, 1, 1, 1};
  for (size_t i = 0; i < 17; ++i) CHECK(rx.arrivals[i].pkt->priority == expected[i]);
}

TEST_CASE("egress: strict classes (weight 0) go before DWRR classes of any number") {
  Engine e;
  EgressConfig cfg{.rate = Rate::gbps(100)};
  cfg.dwrr_weights[6] = 1;
  EgressPort port(e, cfg);
  test::Recorder rx(e);
  LinkDirection link(e, port, rx, 0, 0);
  port.enqueue(test::roce_packet(100, 0, 1, 2, 1));  // on the wire at once
  port.enqueue(test::roce_packet(100, 6, 1, 2, 2));
  port.enqueue(test::roce_packet(100, 0, 1, 2, 3));
  e.run();
  REQUIRE(rx.arrivals.size() == 3);
  CHECK(rx.arrivals[1].pkt->id == 3);
  CHECK(rx.arrivals[2].pkt->id == 2);
}

TEST_CASE("egress: a PFC frame is a frame on the wire — it waits for the packet being sent and takes its own link time") {
  // A 4096 B RoCEv2 packet (4178 wire bytes: 334.24 ns at 100 Gb/s) starts at t = 0; an XOFF
  // queued at t = 0 goes next (control frames before data, but never preempting): its 84
  // wire bytes (64 B minimum frame + preamble and gap) take 6.72 ns; 500 ns of link.
  Engine e;
  EgressPort port(e, EgressConfig{.rate = Rate::gbps(100)});
  test::Recorder rx(e);
  LinkDirection link(e, port, rx, 0, ns(500));
  port.enqueue(test::roce_packet(4096));
  port.enqueue(test::roce_packet(4096, 0, 1, 2, 1));  // data queued behind: the frame overtakes it
  auto pfc = std::make_unique<Packet>();
  pfc->kind = PacketKind::PfcPause;
  pfc->pause_enable_mask = 1;
  pfc->pause_quanta[0] = 0xffff;
  pfc->wire_bytes = kEthernetMinWire;
  port.enqueue(std::move(pfc));
  e.run();
  REQUIRE(rx.arrivals.size() == 3);
  CHECK(rx.arrivals[0].at == ps(334'240) + ns(500));
  CHECK(rx.arrivals[1].pkt->kind == PacketKind::PfcPause);
  CHECK(rx.arrivals[1].at == ps(334'240) + ps(6'720) + ns(500));
  CHECK(rx.arrivals[2].at == 2 * ps(334'240) + ps(6'720) + ns(500));
  CHECK(port.counters().pauses_sent == 1);
}

TEST_CASE("egress: a tap that wants pauses only is told of pauses, not of packets") {
  // PacketTap::wants_transmits false (a study's port watch without a byte series): the port
  // skips on_transmit for every packet but still reports each PFC pause.
  struct Tap : PacketTap {
    bool transmits = true;
    int sent = 0, pauses = 0;
    void on_transmit(const Packet&, Time) override { ++sent; }
    void on_pause(uint8_t, Time, Time) override { ++pauses; }
    bool wants_transmits() const override { return transmits; }
  };
  for (bool transmits : {true, false}) {
    Engine e;
    EgressPort port(e, EgressConfig{.rate = Rate::gbps(100)});
    test::Recorder rx(e);
    LinkDirection link(e, port, rx, 0, 0);
    Tap tap;
    tap.transmits = transmits;
    port.set_tap(&tap);
    port.pause_class(3, 100);
    for (int i = 0; i < 3; ++i) port.enqueue(test::roce_packet(1000, 3));
    e.run();
    CHECK(rx.arrivals.size() == 3);
    CHECK(tap.sent == (transmits ? 3 : 0));
    CHECK(tap.pauses == 1);
  }
}
