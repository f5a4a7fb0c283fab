// PFC head-of-line blocking: the classic victim flow.
#include <doctest/doctest.h>

#include <map>

#include <nlohmann/json.hpp>

#include "sim/net/headers.h"
#include "sim/topo/fabric.h"

using namespace rdmasim;
using nlohmann::json;

namespace {

// Hosts (config order): 0 h1, 1 v on sw0; 2 l1, 3 l2, 4 l3, 5 r, 6 u on sw1; sw0 - sw1.
json victim_fabric() {
  json hosts = json::array(), links = json::array();
  const char* names[] = {"h1", "v", "l1", "l2", "l3", "r", "u"};
  for (int i = 0; i < 7; ++i) {
    hosts.push_back({{"name", names[i]}, {"ip", "127.0.2." + std::to_string(i + 1)}});
    links.push_back({{"a", names[i]}, {"b", i < 2 ? "sw0" : "sw1"}});
  }
  links.push_back({{"a", "sw0"}, {"b", "sw1"}});
  return {{"hosts", hosts},
          {"switches", {{{"name", "sw0"}}, {{"name", "sw1"}}}},
          {"switch", {{"queue_kb", 4096}, {"pfc", {{"xoff_kb", 64}, {"xon_kb", 32}}}}},
          {"link", {{"rate_gbps", 100}, {"latency_ns", 400}}},
          {"links", links}};
}

class Done : public net::Node {
 public:
  explicit Done(Engine& e) : e_(e) {}
  void receive(net::PacketPtr p, int) override {
    bytes[p->src] += p->payload_len;
    last[p->src] = e_.now();
  }
  std::map<net::Address, uint64_t> bytes;
  std::map<net::Address, Time> last;

 private:
  Engine& e_;
};

struct VictimRun {
  Time done = 0;   // when the victim's last byte arrived
  json counters;   // the fabric's, at the end
};

// The time the victim v -> u (512 KiB, priority `victim_prio`) completes, with or without
// the incast h1, l1, l2, l3 -> r (2 MiB each, priority 0) running at the same time.
VictimRun victim_run(bool incast, uint8_t victim_prio) {
  Engine e;
  auto f = topo::Fabric::build(e, victim_fabric());
  std::vector<std::unique_ptr<Done>> sinks;
  for (size_t i = 0; i < 7; ++i) {
    sinks.push_back(std::make_unique<Done>(e));
    f->attach_nic(i, sinks.back().get());
  }
  auto flow = [&](size_t s, size_t d, uint64_t bytes, uint8_t prio) {
    for (uint64_t off = 0; off < bytes; off += 4096) {
      auto p = std::make_unique<net::Packet>();
      p->src = f->nics()[s].address;
      p->dst = f->nics()[d].address;
      p->priority = prio;
      p->payload_len = 4096;
      p->wire_bytes = net::base_wire_bytes(net::LinkLayer::RoCEv2, 4096);
      f->nic_port(s).send(std::move(p));
    }
  };
  if (incast)
    for (size_t s : {0, 2, 3, 4}) flow(s, 5, 2048 * 1024, 0);
  flow(1, 6, 512 * 1024, victim_prio);
  e.run();
  const net::Address v = f->nics()[1].address;
  REQUIRE(sinks[6]->bytes[v] == 512 * 1024);
  return {sinks[6]->last[v], f->counters()};
}

Time victim_time(bool incast, uint8_t victim_prio) { return victim_run(incast, victim_prio).done; }

}  // namespace

TEST_CASE("pfc: a victim flow behind a paused upstream link is slowed; in another priority it is not") {
  // Alone: 128 packets back to back, the last one serialized 3 times (host, sw0, sw1; store
  // and forward), 3 links of 400 ns and 2 forwarding latencies of 200 ns:
  // (128 + 2) * 334.24 ns + 1200 ns + 400 ns = 45051.2 ns.
  const Time alone = victim_time(false, 0);
  CHECK(alone == 130 * ps(334'240) + ns(1600));
  // Same priority: r's port at sw1 is shared by 4 senders, so sw1 pauses sw0's uplink for
  // class 0, and v's packets wait in sw0's paused class-0 queue behind h1's: the uplink
  // carries class 0 at about r's quarter share, so v takes several times longer.
  const VictimRun same_run = victim_run(true, 0);
  const Time same = same_run.done;
  CHECK(same > 2 * alone);
  // The pause travels two hops upstream. Switch ports are numbered in link order: sw1's
  // port 5 and sw0's port 2 are the inter-switch link, sw0's port 0 faces h1.
  const json& c = same_run.counters;
  CHECK(c["sw1/5"]["pauses_sent"].get<uint64_t>() > 0);      // sw1 pauses sw0's uplink
  CHECK(c["sw0/2"]["pauses_received"].get<uint64_t>() > 0);  // ... which honours it
  CHECK(c["sw0/2"]["classes"]["0"]["paused_ns"].get<double>() > 0);
  CHECK(c["sw0/0"]["pauses_sent"].get<uint64_t>() > 0);      // sw0's ingress from h1 fills: h1 paused
  CHECK(c["h1/mlx5_0"]["pauses_received"].get<uint64_t>() > 0);
  CHECK(c["v/mlx5_0"]["pauses_received"].get<uint64_t>() > 0);      // the victim's host too (same class)
  // Priority 3: its own queue at sw0, never paused, and strict priority over class 0.
  const Time other = victim_time(true, 3);
  CHECK(other <= alone + alone / 20);
}
