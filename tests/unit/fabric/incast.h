// A 15:1 incast over a star built from JSON: 15 line-rate senders (host egress ports that
// honour PFC pause and IB credits) to one receiver. Shared by the scenario tests and the
// fabric benchmark.
#pragma once

#include <algorithm>
#include <climits>
#include <functional>
#include <map>
#include <memory>
#include <vector>

#include <nlohmann/json.hpp>

#include "sim/net/headers.h"
#include "sim/topo/fabric.h"

namespace rdmasim::test {

struct IncastResult {
  std::map<net::Address, uint64_t> bytes_by_src;       // delivered to the receiver
  std::map<net::Address, uint64_t> bytes_at_first_end; // delivered when the first sender completed
  Time first_arrival = -1, last_arrival = 0, first_sender_done = 0;
  uint64_t rx_bytes = 0, rx_packets = 0, sent_packets = 0, ce_packets = 0;
  nlohmann::json counters;
  uint64_t events = 0;
};

class IncastSink : public net::Node {
 public:
  IncastSink(Engine& e, IncastResult& r, uint64_t per_sender) : e_(e), r_(r), per_sender_(per_sender) {}
  void receive(net::PacketPtr pkt, int) override {
    if (r_.first_arrival < 0) r_.first_arrival = e_.now();
    r_.last_arrival = e_.now();
    r_.rx_bytes += pkt->wire_bytes;
    ++r_.rx_packets;
    r_.ce_packets += pkt->ce;
    uint64_t& b = r_.bytes_by_src[pkt->src];
    b += pkt->payload_len;
    if (b >= per_sender_ && r_.first_sender_done == 0) {
      r_.first_sender_done = e_.now();
      r_.bytes_at_first_end = r_.bytes_by_src;
    }
  }

 private:
  Engine& e_;
  IncastResult& r_;
  uint64_t per_sender_;
};

// 16 hosts on one switch; hosts 1..15 each send `bytes` in 4096 B packets to host 16.
// `setup` (optional) sees the built fabric before the run, e.g. to set taps.
inline IncastResult run_incast(const nlohmann::json& config, uint64_t bytes, uint32_t mtu = 4096,
                               const std::function<void(topo::Fabric&)>& setup = {}) {
  Engine e(1);
  auto f = topo::Fabric::build(e, config);
  if (setup) setup(*f);
  IncastResult r;
  const size_t n = f->nics().size();
  IncastSink sink(e, r, bytes);
  f->attach_nic(n - 1, &sink);
  const net::LinkLayer ll = f->nics()[0].link_layer;
  for (size_t s = 0; s + 1 < n; ++s) {
    for (uint64_t off = 0; off < bytes; off += mtu) {
      auto p = std::make_unique<net::Packet>();
      p->link_layer = ll;
      p->src = f->nics()[s].address;
      p->dst = f->nics()[n - 1].address;
      p->payload_len = static_cast<uint32_t>(std::min<uint64_t>(mtu, bytes - off));
      p->ect = true;  // ECN-capable, as RoCEv2 NICs send
      p->wire_bytes = net::base_wire_bytes(ll, p->payload_len);
      f->nic_port(s).send(std::move(p));
      ++r.sent_packets;
    }
  }
  e.run();
  r.counters = f->counters();
  r.events = e.events_run();
  return r;
}

// Checks every listed port's credit on every VL each time any packet leaves a tapped port.
struct CreditWatch : net::PacketTap {
  std::vector<net::EgressPort*> ports;
  int64_t min_credit = INT64_MAX;
  uint64_t checks = 0;
  void on_transmit(const net::Packet&, Time) override {
    for (net::EgressPort* p : ports)
      for (uint8_t vl = 0; vl < 8; ++vl) min_credit = std::min(min_credit, p->credits_available(vl));
    ++checks;
  }
  // Taps and watches every egress port of `f`.
  void watch(topo::Fabric& f) {
    for (const topo::FabricPort& p : f.egress_ports()) {
      ports.push_back(p.egress);
      p.egress->set_tap(this);
    }
  }
};

inline nlohmann::json incast_star(nlohmann::json sw, const char* link_layer = "roce") {
  return {{"link_layer", link_layer},
          {"topology", {{"type", "star"}, {"hosts", 16}}},
          {"link", {{"rate_gbps", 100}, {"latency_ns", 400}}},
          {"switch", sw}};
}

}  // namespace rdmasim::test
