// A NIC whose receive side is slower than its link (rx_drain_gbps): its buffer fills, and
// with PFC the host port pauses the switch, which in turn pauses the sender; without PFC
// the buffer overflows and drops. 2-host star, raw packets: host2 sends at its 100 Gb/s
// line rate to host1, whose receive buffer drains at 50 Gb/s.
#include <doctest/doctest.h>

#include <cmath>
#include <vector>

#include "sim/net/host_port.h"
#include "sim/net/pfc_frame.h"
#include "sim/net/switch.h"
#include "sim/topo/fabric_spec.h"
#include "tests/unit/fabric/incast.h"
#include "tests/unit/topo/helpers.h"

using namespace rdmasim;
using nlohmann::json;

namespace {

// Wire bytes of one 4096 B RoCEv2 packet: 4096 + 44 headers + 38 Ethernet framing.
constexpr uint32_t kWire = net::base_wire_bytes(net::LinkLayer::RoCEv2, 4096);
static_assert(kWire == 4178);

struct Sink : net::Node {
  Engine& e;
  explicit Sink(Engine& engine) : e(engine) {}
  uint64_t packets = 0, wire_bytes = 0;
  Time first = -1, last = 0;
  void receive(net::PacketPtr p, int) override {
    if (first < 0) first = e.now();
    last = e.now();
    ++packets;
    wire_bytes += p->wire_bytes;
  }
};

struct Run {
  Sink sink;
  json c;
  Time end = 0;
};

// host1 (NIC entry extra keys `host1_nic`) and host2 on sw0 (switch keys `sw`), 100 Gb/s
// links of 400 ns. Links in this order, so sw0/0 faces host1 and sw0/1 faces host2.
json star(const json& host1_nic, const json& sw) {
  json nic1 = host1_nic;
  nic1["name"] = "mlx5_0";
  return {{"link_layer", "roce"},
          {"hosts", {{{"name", "host1"}, {"ip", "127.0.1.1"}, {"nics", json::array({nic1})}},
                     {{"name", "host2"}, {"ip", "127.0.1.2"}}}},
          {"switches", {{{"name", "sw0"}, {"pfc", sw}}}},
          {"links", {{{"a", "host1"}, {"b", "sw0"}, {"rate_gbps", 100}, {"latency_ns", 400}},
                     {{"a", "host2"}, {"b", "sw0"}, {"rate_gbps", 100}, {"latency_ns", 400}}}}};
}

// host2 hands `n` packets of 4096 B to its port at once: its egress sends them back to back
// at 100 Gb/s (or as PFC lets it).
void run(Run& r, Engine& e, const json& config, int n) {
  auto f = topo::Fabric::build(e, config);
  f->attach_nic(0, &r.sink);
  for (int i = 0; i < n; ++i) {
    auto p = std::make_unique<net::Packet>();
    p->src = f->nics()[1].address;
    p->dst = f->nics()[0].address;
    p->payload_len = 4096;
    p->wire_bytes = kWire;
    f->nic_port(1).send(std::move(p));
  }
  e.run();
  r.c = f->counters();
  r.end = e.now();
}

uint64_t u(const json& j) { return j.get<uint64_t>(); }

uint64_t all_drops(const json& c) {
  uint64_t d = 0;
  for (const char* port : {"host1/mlx5_0", "host2/mlx5_0", "sw0/0", "sw0/1"})
    d += u(c[port]["drops"]) + u(c[port]["link_down_drops"]) + u(c[port]["headroom_drops"]);
  for (const json& l : c["links"]) d += u(l["a_to_b"]["lost_packets"]) + u(l["b_to_a"]["lost_packets"]);
  return d;
}

}  // namespace

TEST_CASE("host pfc: a NIC draining at 50 Gb/s pauses the switch about half the time, losslessly") {
  constexpr int kPackets = 5000;  // 20.9 MB: 3.34 ms at 50 Gb/s
  Engine e(1);
  Run r{Sink(e)};
  run(r, e, star({{"rx_drain_gbps", 50}, {"rx_buffer_kb", 256}, {"pfc", {{"xoff_kb", 128}, {"xon_kb", 64}}}},
                 {{"xoff_kb", 64}, {"xon_kb", 32}}),
      kPackets);
  const json& h1 = r.c["host1/mlx5_0"];
  const json& s0 = r.c["sw0/0"];

  // Lossless: every packet delivered, nothing dropped or lost anywhere.
  CHECK(r.sink.packets == kPackets);
  CHECK(all_drops(r.c) == 0);

  // host1 sent pauses, and each reached the switch port facing it (nothing is lost on the
  // link); they are real frames, kEthernetMinWire bytes each on host1's egress, the only
  // thing host1 sends.
  const uint64_t sent = u(h1["pauses_sent"]);
  CHECK(sent > 0);
  CHECK(u(h1["classes"]["0"]["pauses_sent"]) == sent);
  CHECK(u(s0["pauses_received"]) == sent);
  CHECK(u(h1["tx_bytes"]) == sent * net::kEthernetMinWire);

  // Delivered at the drain rate: once the first packet is in, the buffer never empties
  // (arrivals run at 100 Gb/s; after XON the buffer still holds xon = 64 KiB, and only
  // 0.4 us x 50 Gb/s = 2.5 KB drain before the switch's data is back), so deliveries are
  // exactly one drain time apart: tx_time(50 Gb/s, 4178 B) = 668.48 ns.
  const Time drain = tx_time(Rate::gbps(50), kWire);
  CHECK(r.sink.last - r.sink.first == (kPackets - 1) * drain);
  const double gbps = static_cast<double>((kPackets - 1) * uint64_t{kWire} * 8) /
                      static_cast<double>(r.sink.last - r.sink.first) * 1e3;  // bits per ps -> Gb/s
  CHECK(std::abs(gbps - 50) <= 1e-6 * 50);

  // The switch port toward host1 sends at 100 Gb/s what host1 takes at 50, so over the run
  // (T = last delivery) it transmits B / 100 Gb/s = T / 2 and is paused for nearly all the
  // rest: expected fraction 0.5. Tolerance 0.025: the port is idle, not paused, before the
  // first packet (~1.5 us) and while host1 drains its last buffer (at most (xoff +
  // headroom) / 50 Gb/s ~ 22 us), 0.7% of 3.34 ms; and a pause that arrives while a frame
  // is serializing overlaps it by up to one frame (334 ns) per XOFF/XON cycle of >= 21 us
  // (64 KiB up at 50 Gb/s net, 64 KiB down at 50), at most 1.6%.
  const double paused = static_cast<double>(u(s0["classes"]["0"]["paused_ns"])) * 1e3 /
                        static_cast<double>(r.sink.last);
  CHECK(std::abs(paused - 0.5) <= 0.025);

  // The buffer crossed xoff, and what arrived after XOFF stayed within the 802.1Qbb
  // headroom for this link (rate x 2 x latency + 2 frames + PFC frame + response allowance).
  const json& rb = h1["rx_buffer"];
  CHECK(u(rb["max_bytes"]) > 128u * 1024);
  CHECK(u(rb["max_bytes"]) <= 128u * 1024 + net::pfc_headroom_bytes(Rate::gbps(100), ns(400), kWire,
                                                                  net::pfc_response_bits(Rate::gbps(100))));
  CHECK(u(rb["max_bytes_per_class"][0]) == u(rb["max_bytes"]));
  CHECK(u(rb["bytes"]) == 0);  // everything drained
  CHECK(u(rb["drops"]) == 0);

  // The pause propagates upstream: while sw0/0 is paused its queue holds host2's packets,
  // the switch ingress from host2 (sw0/1) exceeds its 64 KiB xoff, and host2 is paused.
  CHECK(u(r.c["sw0/1"]["pauses_sent"]) > 0);
  CHECK(u(r.c["host2/mlx5_0"]["pauses_received"]) > 0);
  CHECK(u(r.c["host2/mlx5_0"]["classes"]["0"]["paused_ns"]) > 0);
}

TEST_CASE("host pfc: the NIC's pause frames cross the link like any frame, and a lossy link loses some") {
  // 10% loss per packet on host1's link, both directions: data to host1 (b_to_a) and its
  // pause frames to the switch (a_to_b) are lost alike. A lost XOFF lets the buffer overflow
  // (no refresh for 167.8 us) and a lost XON leaves the switch paused until the pause expires.
  constexpr int kPackets = 2000;
  Engine e(1);
  Run r{Sink(e)};
  json cfg = star({{"rx_drain_gbps", 50}, {"pfc", {{"xoff_kb", 128}, {"xon_kb", 64}}}}, {{"xoff_kb", 64}, {"xon_kb", 32}});
  cfg["links"][0]["loss_rate"] = 0.1;
  run(r, e, cfg, kPackets);
  const json& l0 = r.c["links"][0];
  const uint64_t sent = u(r.c["host1/mlx5_0"]["pauses_sent"]);
  const uint64_t lost_frames = u(l0["a_to_b"]["lost_packets"]);
  CHECK(lost_frames > 0);
  CHECK(u(r.c["sw0/0"]["pauses_received"]) + lost_frames == sent);
  // Every data packet is delivered, dropped by host1's buffer, or lost on the link.
  CHECK(r.sink.packets + u(r.c["host1/mlx5_0"]["drops"]) + u(l0["b_to_a"]["lost_packets"]) == kPackets);
}

TEST_CASE("host pfc: without PFC a small receive buffer overflows; delivered + dropped == sent") {
  constexpr int kPackets = 1000;
  Engine e(1);
  Run r{Sink(e)};
  run(r, e, star({{"rx_drain_gbps", 50}, {"rx_buffer_kb", 16}}, {{"enabled", false}}), kPackets);
  const json& h1 = r.c["host1/mlx5_0"];
  const uint64_t drops = u(h1["drops"]);
  CHECK(drops > 0);
  CHECK(r.sink.packets + drops == kPackets);
  CHECK(u(h1["drops_per_class"][0]) == drops);
  CHECK(u(h1["drop_bytes"]) == drops * kWire);
  CHECK(u(h1["rx_buffer"]["drops"]) == drops);
  CHECK(u(h1["pauses_sent"]) == 0);
  CHECK(u(r.c["sw0/0"]["pauses_received"]) == 0);
  // Arrivals are 334.24 ns apart (100 Gb/s) and a drain takes twice that, so while they last
  // (kPackets - 1) x 334.24 ns about (kPackets - 1) / 2 packets drain; then what the buffer
  // holds (at most 3 packets fit in 16 KiB: 3 x 4178 = 12534 B) and the one draining.
  CHECK(r.sink.packets >= (kPackets - 1) / 2);
  CHECK(r.sink.packets <= (kPackets - 1) / 2 + 3 + 1);
  CHECK(u(h1["rx_buffer"]["max_bytes"]) <= 16u * 1024);
}

TEST_CASE("host pfc: without rx_drain_gbps the host takes packets at line rate and never pauses") {
  constexpr int kPackets = 1000;
  Engine e(1);
  Run r{Sink(e)};
  run(r, e, star(json::object(), {{"xoff_kb", 64}, {"xon_kb", 32}}), kPackets);
  const json& h1 = r.c["host1/mlx5_0"];
  CHECK(r.sink.packets == kPackets);
  CHECK(u(h1["pauses_sent"]) == 0);
  CHECK(u(r.c["sw0/0"]["pauses_received"]) == 0);
  CHECK_FALSE(h1.contains("rx_buffer"));
  // Delivered as the link brings them: one 100 Gb/s frame time apart.
  CHECK(r.sink.last - r.sink.first == (kPackets - 1) * tx_time(Rate::gbps(100), kWire));
}

TEST_CASE("host pfc: the pfc classes choose the lossless class; other classes overflow") {
  // Class 3 lossless only: class-0 traffic gets no XOFF and overflows the 64 KiB buffer.
  constexpr int kPackets = 400;
  Engine e(1);
  Run r{Sink(e)};
  run(r, e, star({{"rx_drain_gbps", 50}, {"rx_buffer_kb", 64}, {"pfc", {{"xoff_kb", 32}, {"classes", {3}}}}},
                 {{"enabled", false}}),
      kPackets);
  const json& h1 = r.c["host1/mlx5_0"];
  CHECK(u(h1["pauses_sent"]) == 0);
  CHECK(u(h1["drops_per_class"][0]) > 0);
  CHECK(r.sink.packets + u(h1["drops"]) == kPackets);
}

TEST_CASE("host pfc config: defaults, and each bad key names the path, the value and what was expected") {
  using topo_test::has_error;
  const json good = star({{"rx_drain_gbps", 50}, {"pfc", json::object()}}, {{"xoff_kb", 64}});
  const topo::FabricSpec s = topo::parse_fabric(good);
  const net::HostRxConfig& rx = s.nics[0].rx;
  CHECK(rx.drain_rate == Rate::gbps(50));
  CHECK(rx.buffer_bytes == 256 * 1024);   // rx_buffer_kb default
  CHECK(rx.pfc);                          // "enabled" defaults to true when pfc is given
  CHECK(rx.xoff_bytes == 128 * 1024);     // half the buffer
  CHECK(rx.xon_bytes == 64 * 1024);       // half of xoff
  CHECK(rx.class_mask == 0xff);
  CHECK(s.nics[1].rx.drain_rate.bps == 0);  // host2: absent, infinitely fast
  // The "nic" defaults object takes the same keys.
  json d = star(json::object(), {{"xoff_kb", 64}});
  d["nic"] = {{"rx_drain_gbps", 25}, {"rx_buffer_kb", 64}};
  CHECK(topo::parse_fabric(d).nics[1].rx.buffer_bytes == 64 * 1024);

  const std::string p = "fabric.hosts[0].nics[0].";
  auto bad = [&](const json& nic) { return star(nic, {{"xoff_kb", 64}}); };
  CHECK(has_error(bad({{"rx_drain_gbps", 0}}), p + "rx_drain_gbps: 0 is zero; expected a drain rate toward the host in Gb/s > 0"));
  CHECK(has_error(bad({{"rx_drain_gbps", -5}}), p + "rx_drain_gbps: -5 is negative"));
  CHECK(has_error(bad({{"rx_drain_gbps", "fast"}}), p + "rx_drain_gbps: \"fast\" is not a number"));
  CHECK(has_error(bad({{"rx_drain_gbps", 50}, {"rx_buffer_kb", 0}}),
                  p + "rx_buffer_kb: 0 is out of range; expected a receive buffer size in KiB >= 1"));
  CHECK(has_error(bad({{"rx_drain_gbps", 50}, {"rx_buffer_kb", 1.5}}), p + "rx_buffer_kb: 1.5 is not an integer"));
  CHECK(has_error(bad({{"rx_buffer_kb", 64}}), p + "rx_buffer_kb: 64 has no effect without rx_drain_gbps"));
  CHECK(has_error(bad({{"pfc", {{"xoff_kb", 64}}}}), p + "pfc: has no effect without rx_drain_gbps"));
  CHECK(has_error(bad({{"rx_drain_gbps", 50}, {"pfc", 1}}), p + "pfc: 1 is not an object"));
  CHECK(has_error(bad({{"rx_drain_gbps", 50}, {"pfc", {{"headroom_kb", 8}}}}),
                  p + "pfc.headroom_kb: unknown key; expected one of enabled, xoff_kb, xon_kb, classes"));
  CHECK(has_error(bad({{"rx_drain_gbps", 50}, {"pfc", {{"enabled", "yes"}}}}), p + "pfc.enabled: \"yes\""));
  CHECK(has_error(bad({{"rx_drain_gbps", 50}, {"pfc", {{"xoff_kb", -1}}}}), p + "pfc.xoff_kb: -1 is negative"));
  CHECK(has_error(bad({{"rx_drain_gbps", 50}, {"pfc", {{"xoff_kb", 256}}}}),
                  p + "pfc.xoff_kb: 256 is not below rx_buffer_kb (256); expected xoff_kb < rx_buffer_kb"));
  CHECK(has_error(bad({{"rx_drain_gbps", 50}, {"pfc", {{"xoff_kb", 64}, {"xon_kb", 65}}}}),
                  p + "pfc.xon_kb: 65 is above xoff_kb (64); expected xon_kb <= xoff_kb"));
  CHECK(has_error(bad({{"rx_drain_gbps", 50}, {"pfc", {{"xon_kb", "low"}}}}), p + "pfc.xon_kb: \"low\" is not an integer"));
  CHECK(has_error(bad({{"rx_drain_gbps", 50}, {"pfc", {{"classes", {8}}}}}),
                  p + "pfc.classes[0]: 8 is not a traffic class; expected an integer 0..7"));
  CHECK(has_error(bad({{"rx_drain_gbps", 50}, {"pfc", {{"classes", json::array()}}}}),
                  p + "pfc.classes: [] is not a list of classes"));
  CHECK(has_error(bad({{"rx_drian_gbps", 50}}), p + "rx_drian_gbps: unknown key"));
  json dn = star(json::object(), {{"xoff_kb", 64}});
  dn["nic"] = {{"rx_drain_gbps", 0}};
  CHECK(has_error(dn, "fabric.nic.rx_drain_gbps: 0 is zero"));
  // InfiniBand returns credits: the keys are errors there.
  json ib = bad({{"rx_drain_gbps", 50}, {"rx_buffer_kb", 64}, {"pfc", {{"xoff_kb", 32}}}});
  ib["link_layer"] = "ib";
  ib["switches"][0].erase("pfc");
  for (const char* key : {"rx_drain_gbps", "rx_buffer_kb", "pfc"})
    CHECK(has_error(ib, p + key + ": " + ib["hosts"][0]["nics"][0][key].dump() +
                            " is the Ethernet receive model (an InfiniBand NIC returns credits)"));
}

TEST_CASE("host pfc: XOFF is re-sent every half pause time while it holds, then XON") {
  // 40 packets arrive at once at a port draining at 1 Gb/s (tx_time(1 Gb/s, 4178 B) =
  // 33.424 us each). The 32nd takes class 0 past xoff = 128 KiB (32 x 4178 = 133696 B), so
  // XOFF goes at t = 0. XON when the buffer falls to xon = 64 KiB: from 40 x 4178 = 167120 B
  // that takes 25 drains (167120 - 25 x 4178 = 62670 <= 65536; after 24, 66848 is not), at
  // 25 x 33.424 = 835.6 us. Refreshes every pfc_xoff_refresh_interval(100 Gb/s) = 0xffff x
  // 64 B / 100 Gb/s / 2 = 167.77 us: at 1..4 x 167.77 us (5 x 167.77 = 838.8 is after XON).
  Engine e(1);
  net::HostRxConfig rx{.drain_rate = Rate::gbps(1), .buffer_bytes = 256 * 1024, .pfc = true,
                       .xoff_bytes = 128 * 1024, .xon_bytes = 64 * 1024};
  net::HostPort port(e, net::EgressConfig{.rate = Rate::gbps(100)}, rx);
  Sink sink(e);
  port.attach(&sink);
  struct Frame { Time at; uint16_t quanta; };
  std::vector<Frame> frames;
  port.egress().set_sink([&](net::PacketPtr p) {
    REQUIRE(p->kind == net::PacketKind::PfcPause);
    CHECK(p->pause_enable_mask == 1);
    frames.push_back({e.now(), p->pause_quanta[0]});
  });
  for (int i = 0; i < 40; ++i) {
    auto p = std::make_unique<net::Packet>();
    p->wire_bytes = kWire;
    port.receive(std::move(p), 0);
    CHECK(port.xoff_sent(0) == (i >= 31));
  }
  e.run();
  const Time frame = tx_time(Rate::gbps(100), net::kEthernetMinWire);  // each leaves after its serialization
  const Time refresh = net::pfc_xoff_refresh_interval(Rate::gbps(100));
  CHECK(refresh == tx_time(Rate::gbps(100), 64ull * 0xffff) / 2);
  REQUIRE(frames.size() == 6);
  CHECK(frames[0].at == frame);
  CHECK(frames[0].quanta == 0xffff);
  for (int k = 1; k <= 4; ++k) {
    CHECK(frames[k].at == k * refresh + frame);
    CHECK(frames[k].quanta == 0xffff);
  }
  const Time drain = tx_time(Rate::gbps(1), kWire);
  CHECK(frames[5].at == 25 * drain + frame);
  CHECK(frames[5].quanta == 0);
  CHECK(sink.packets == 40);
  CHECK(sink.last == 40 * drain);
  CHECK(port.counters().pauses_sent == 6);
  CHECK(port.rx_buffer_counters().max_bytes == 40u * kWire);
}
