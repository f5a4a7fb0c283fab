// InfiniBand VLs through a fabric built from JSON: two senders on different SLs share the
// receiver's link by the switch's VL arbitration weights; credits never go negative.
#include <doctest/doctest.h>

#include <map>

#include <nlohmann/json.hpp>

#include "sim/net/headers.h"
#include "sim/topo/fabric.h"
#include "tests/unit/fabric/incast.h"

using namespace rdmasim;
using nlohmann::json;

namespace {

// Records bytes per sender up to the moment the first sender's last packet arrives.
struct Sink : net::Node {
  explicit Sink(Engine& e, uint64_t per_sender) : e(e), per_sender(per_sender) {}
  void receive(net::PacketPtr p, int) override {
    uint64_t& b = bytes[p->src];
    b += p->wire_bytes;
    ++vl_packets[p->vl];
    if (b >= per_sender && at_first_done.empty()) at_first_done = bytes;
  }
  Engine& e;
  uint64_t per_sender;
  std::map<net::Address, uint64_t> bytes, at_first_done;
  std::map<uint8_t, uint64_t> vl_packets;
};


}  // namespace

TEST_CASE("fabric vl: SL 0 and SL 1 into one port share it 25/75 by the switch's VL weights 1:3") {
  // host1 sends on SL 0, host2 on SL 1, both at line rate into host3 through sw0; the
  // switch has 2 data VLs (SL s -> VL s mod 2) and low-priority weights 64 : 192 (4 KiB :
  // 12 KiB), so with 4122 B packets its port to host3 sends 1 VL0 packet then 3 VL1 packets
  // per round (see tests/unit/net/vl_test.cpp). While both are backlogged host2 gets 3/4 of
  // the link; when host2 (the faster) has delivered all its bytes, host1 should have
  // delivered 1/3 of that, within 1% (a partial round plus the credit round trip at start).
  const json cfg = {
      {"link_layer", "ib"},
      {"topology", {{"type", "star"}, {"hosts", 3}}},
      {"link", {{"rate_gbps", 100}, {"latency_ns", 400}}},
      {"switch", {{"vls", {{"data_vls", 2},
                           {"low", json::array({{{"vl", 0}, {"weight", 64}}, {{"vl", 1}, {"weight", 192}}})}}}}}};
  Engine e(1);
  auto f = topo::Fabric::build(e, cfg);
  REQUIRE(f->nics().size() == 3);
  constexpr int kPackets = 1000;
  const uint32_t wire = net::base_wire_bytes(net::LinkLayer::InfiniBand, 4096);
  Sink sink(e, uint64_t{kPackets} * wire);
  f->attach_nic(2, &sink);
  test::CreditWatch tap;  // after every packet a port sends: the lowest credit of any VL
  tap.watch(*f);
  for (size_t s = 0; s < 2; ++s)
    for (int i = 0; i < kPackets; ++i) {
      auto p = std::make_unique<net::Packet>();
      p->link_layer = net::LinkLayer::InfiniBand;
      p->src = f->nics()[s].address;
      p->dst = f->nics()[2].address;
      p->priority = static_cast<uint8_t>(s);  // SL
      p->wire_bytes = wire;
      f->nic_port(s).send(std::move(p));
    }
  e.run();
  REQUIRE(sink.bytes.size() == 2);
  CHECK(sink.bytes[f->nics()[0].address] == uint64_t{kPackets} * wire);
  CHECK(sink.bytes[f->nics()[1].address] == uint64_t{kPackets} * wire);
  REQUIRE(sink.at_first_done.size() == 2);
  const double b1 = sink.at_first_done[f->nics()[0].address], b2 = sink.at_first_done[f->nics()[1].address];
  CHECK(b2 == kPackets * double{wire});  // host2 finished first
  CHECK(b1 / (b1 + b2) == doctest::Approx(0.25).epsilon(0.01));
  CHECK(sink.vl_packets[0] == kPackets);  // delivered on the VLs the SLs map to
  CHECK(sink.vl_packets[1] == kPackets);
  // the per-VL counters of the switch port to host3 (port 2: star links in host order)
  const json c = f->counters();
  CHECK(c["sw0/2"]["classes"]["0"]["tx_packets"] == kPackets);
  CHECK(c["sw0/2"]["classes"]["1"]["tx_packets"] == kPackets);
  CHECK(tap.checks > 2 * kPackets);
  CHECK(tap.min_credit >= 0);
}
