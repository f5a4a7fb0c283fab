// The "observe" key: egress queue-depth time series of selected ports, checked against a
// 2:1 incast whose queue depth over time follows from the line rate.
#include <doctest/doctest.h>

#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "sim/core/engine.h"
#include "sim/net/headers.h"
#include "sim/topo/fabric.h"
#include "tests/unit/topo/helpers.h"

namespace rdmasim {
namespace {

using nlohmann::json;
using topo_test::has_error;

// Hosts s1, s2 and r on switch sw0 (ports in link order: 0 = s1, 1 = s2, 2 = r), every link
// 100 Gb/s with 400 ns propagation, forwarding 200 ns, store and forward, no PFC.
json two_to_one(json observe) {
  json j = {{"link_layer", "roce"},
            {"hosts", {{{"name", "s1"}, {"ip", "127.0.1.1"}},
                       {{"name", "s2"}, {"ip", "127.0.1.2"}},
                       {{"name", "r"}, {"ip", "127.0.1.3"}}}},
            {"switches", {{{"name", "sw0"}, {"forwarding_latency_ns", 200}}}},
            {"link", {{"rate_gbps", 100}, {"latency_ns", 400}}},
            {"links", {{{"a", "s1"}, {"b", "sw0"}}, {{"a", "s2"}, {"b", "sw0"}}, {{"a", "r"}, {"b", "sw0"}}}}};
  if (!observe.is_null()) j["observe"] = observe;
  return j;
}

class Discard : public net::Node {
 public:
  void receive(net::PacketPtr, int) override { ++packets; }
  uint64_t packets = 0;
};

TEST_CASE("observe: the queue toward r in a 2:1 incast grows one packet per serialization time, then drains") {
  constexpr uint32_t kPayload = 4096;
  constexpr int kN = 64;                 // packets per sender
  constexpr Time kInterval = ns(100);
  Engine e(1);
  auto f = topo::Fabric::build(e, two_to_one({{"queue_sample_ns", 100}, {"ports", {"sw0/2"}}}));
  Discard sink;
  f->attach_nic(2, &sink);
  for (size_t s = 0; s < 2; ++s) {
    for (int k = 0; k < kN; ++k) {
      auto p = std::make_unique<net::Packet>();
      p->link_layer = net::LinkLayer::RoCEv2;
      p->src = f->nics()[s].address;
      p->dst = f->nics()[2].address;
      p->payload_len = kPayload;
      p->wire_bytes = net::base_wire_bytes(net::LinkLayer::RoCEv2, kPayload);
      f->nic_port(s).send(std::move(p));
    }
  }
  e.run();
  REQUIRE(sink.packets == 2 * kN);
  net::EgressPort* port = nullptr;
  for (const topo::FabricPort& fp : f->egress_ports()) {
    if (fp.name == "sw0/2") port = fp.egress;
    else CHECK(fp.egress->queue_series().samples.empty());   // only the selected port samples
  }
  REQUIRE(port);
  port->flush_series();
  const net::QueueSeries& qs = port->queue_series();
  CHECK(qs.interval == kInterval);
  CHECK(qs.start == 0);

  // W = 4096 + RoCEv2 headers + Ethernet overhead; T = W * 8 bits / 100 Gb/s (334.24 ns).
  // Packet k of each sender is last-bit out of its NIC at (k + 1) T, at the switch L = 400 ns
  // later, in the egress toward r F = 200 ns after that: both senders' packet k enqueue at
  // t_k = t_0 + k T, t_0 = T + L + F. The egress toward r serves one packet per T, so two
  // arrive for each that leaves: during (t_k, t_k + T) for k < N the queue (waiting packets,
  // not the one serializing) holds (k + 1) W; after the last arrivals it loses one packet per
  // T, holding (N - 1 - m) W during (t_0 + (N + m) T, t_0 + (N + m + 1) T), empty from
  // t_0 + (2N - 1) T on. Peak: N W.
  const uint64_t W = net::base_wire_bytes(net::LinkLayer::RoCEv2, kPayload);
  const Time T = tx_time(Rate::gbps(100), W);
  const Time t0 = T + ns(400) + ns(200);
  auto expected = [&](Time t) -> int64_t {
    if (t <= t0) return 0;
    const int64_t k = (t - t0) / T;            // whole T periods since t_0
    if (k < kN) return (k + 1) * static_cast<int64_t>(W);
    const int64_t m = k - kN;
    return std::max<int64_t>(0, kN - 1 - m) * static_cast<int64_t>(W);
  };
  const Time end = t0 + (2 * kN) * T;
  REQUIRE(qs.samples.size() >= static_cast<size_t>(end / kInterval));
  uint64_t peak = 0;
  int checked = 0;
  for (size_t i = 0; i < qs.samples.size(); ++i) {
    const Time t = qs.start + static_cast<Time>(i) * qs.interval;
    if (t > t0 && (t - t0) % T == 0) continue;   // on an event instant: either side is right
    CHECK_MESSAGE(qs.samples[i][0] == expected(t), "sample " << i << " at " << to_ns(t) << " ns");
    for (int c = 1; c < 8; ++c) CHECK(qs.samples[i][c] == 0);
    peak = std::max<uint64_t>(peak, qs.samples[i][0]);
    ++checked;
  }
  CHECK(checked > 400);   // (2N + 1) T / 100 ns = 43.1 us / 100 ns = 431 instants
  CHECK(peak == kN * W);
  // The counters carry the series (total over classes) and the high-water mark.
  const json c = f->counters()["sw0/2"];
  CHECK(c["queue_series"]["interval_ns"] == 100);
  CHECK(c["queue_series"]["total_bytes"].size() == qs.samples.size());
  CHECK(c["classes"]["0"]["queue_max_bytes"] == kN * W);
  // Counters taken later (as the daemon's `rdmasim counters` does) are filled up to now
  // without flush_series: the queue is empty, so the samples due since are 0.
  e.schedule_at(us(100), [] {});
  e.run();
  const json later = f->counters()["sw0/2"]["queue_series"]["total_bytes"];
  REQUIRE(later.size() == 1001);   // t = 0, 100 ns, ..., 100 us
  CHECK(later[1000] == 0);
  CHECK(later[static_cast<size_t>((t0 + T / 2) / kInterval) + 1] == W);   // first T: one waiting
}

TEST_CASE("observe: port selections and max_samples") {
  Engine e(1);
  auto hosts = topo::Fabric::build(e, two_to_one({{"queue_sample_ns", 50}, {"ports", "hosts"},
                                                  {"max_samples", 3}}));
  for (const topo::FabricPort& fp : hosts->egress_ports()) {
    // Every port starts its series at build time (t = 0), NIC ports only.
    fp.egress->flush_series();
    CHECK(fp.egress->queue_series().interval == (fp.is_switch ? 0 : ns(50)));
  }
  e.schedule_at(us(10), [] {});
  e.run();
  for (const topo::FabricPort& fp : hosts->egress_ports()) {
    fp.egress->flush_series();
    // 10 us / 50 ns = 201 instants, capped at max_samples.
    CHECK(fp.egress->queue_series().samples.size() == (fp.is_switch ? 0u : 3u));
  }
  auto sw = topo::Fabric::build(e, two_to_one({{"queue_sample_ns", 50}, {"ports", {"sw0"}}}));
  for (const topo::FabricPort& fp : sw->egress_ports())
    CHECK(fp.egress->queue_series().interval == (fp.is_switch ? ns(50) : 0));
  auto off = topo::Fabric::build(e, two_to_one({{"ports", "all"}}));
  for (const topo::FabricPort& fp : off->egress_ports()) CHECK(fp.egress->queue_series().interval == 0);
}

TEST_CASE("observe: config errors name the path, the value and what was expected") {
  CHECK(has_error(two_to_one({{"queue_sample_ns", -5}}),
                  "fabric.observe.queue_sample_ns: -5 is negative"));
  CHECK(has_error(two_to_one({{"queue_sample_ns", 10}, {"ports", {"sw0/3"}}}),
                  "fabric.observe.ports[0]: \"sw0/3\" names no port of this fabric"));
  CHECK(has_error(two_to_one({{"ports", "some"}}), "fabric.observe.ports: \"some\" is not a port selection"));
  CHECK(has_error(two_to_one({{"ports", 3}}), "fabric.observe.ports: 3 is not a port selection"));
  CHECK(has_error(two_to_one({{"max_samples", 0}}), "fabric.observe.max_samples: 0"));
  CHECK(has_error(two_to_one({{"sample", 1}}), "fabric.observe.sample"));
  CHECK(has_error(two_to_one(json::array()), "fabric.observe"));
}

}  // namespace
}  // namespace rdmasim
