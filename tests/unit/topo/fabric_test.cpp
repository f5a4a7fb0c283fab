#include <doctest/doctest.h>


#include <nlohmann/json.hpp>

#include "sim/net/headers.h"
#include "sim/topo/fabric.h"
#include "tests/unit/topo/helpers.h"

using namespace rdmasim;
using nlohmann::json;
using topo_test::load;

namespace {

class Sink : public net::Node {
 public:
  explicit Sink(Engine& e) : e_(e) {}
  void receive(net::PacketPtr pkt, int port) override {
    at.push_back(e_.now());
    ports.push_back(port);
    pkts.push_back(std::move(pkt));
  }
  std::vector<Time> at;
  std::vector<int> ports;
  std::vector<net::PacketPtr> pkts;

 private:
  Engine& e_;
};

}  // namespace

TEST_CASE("fabric: the default config builds 2 RoCEv2 NICs with the right names and ips") {
  Engine e;
  auto f = topo::Fabric::build(e, topo::default_fabric_config());
  CHECK(f->name() == "default");
  CHECK(f->seed() == 1);
  const auto& nics = f->nics();
  REQUIRE(nics.size() == 2);
  CHECK(nics[0].host == "server");
  CHECK(nics[1].host == "client");
  for (const auto& n : nics) {
    CHECK(n.device == "mlx5_0");
    CHECK(n.hca.name == "mlx5_0");
    CHECK(n.link_layer == net::LinkLayer::RoCEv2);
    CHECK(n.rate == Rate::gbps(100));
    CHECK(n.mtu == 4096);
    CHECK(n.vendor_id == 0x02c9);       // Mellanox
    CHECK(n.vendor_part_id == 4123);    // ConnectX-6
    CHECK(n.lid == 0);
    CHECK(n.hca.address == n.address);
    CHECK(n.hca.node_guid == n.node_guid);
    CHECK(n.port_guid == n.node_guid + 1);
  }
  CHECK(nics[0].ip == "127.0.1.1");
  CHECK(nics[1].ip == "127.0.1.2");
  CHECK(nics[0].address == 0x7f000101u);  // 127.0.1.1 in host byte order
  CHECK(nics[1].address == 0x7f000102u);
  CHECK(nics[0].node_guid != nics[1].node_guid);
  CHECK(f->nic_port(0).rate() == Rate::gbps(100));
}

TEST_CASE("fabric: the IB config's subnet manager assigns LIDs 1 and 2, SM at LID 1") {
  Engine e;
  auto f = topo::Fabric::build(e, load("ib.json"));
  const auto& nics = f->nics();
  REQUIRE(nics.size() == 2);
  CHECK(nics[0].device == "mlx5_0");
  CHECK(nics[0].link_layer == net::LinkLayer::InfiniBand);
  CHECK(nics[0].lid == 1);
  CHECK(nics[1].lid == 2);
  for (const auto& n : nics) {
    CHECK(n.sm_lid == 1);
    CHECK(n.address == n.lid);
    CHECK(n.hca.address == n.lid);
    CHECK(n.hca.link_layer == net::LinkLayer::InfiniBand);
  }
}

TEST_CASE("fabric: server to client through the default switch takes 2 serializations + 1 us") {
  Engine e;
  auto f = topo::Fabric::build(e, topo::default_fabric_config());
  Sink client(e);
  f->attach_nic(1, &client);
  auto p = std::make_unique<net::Packet>();
  p->src = f->nics()[0].address;
  p->dst = f->nics()[1].address;
  p->wire_bytes = net::base_wire_bytes(net::LinkLayer::RoCEv2, 4096);  // 4096 + 44 + 38 = 4178 B
  REQUIRE(f->nic_port(0).ready(0));
  f->nic_port(0).send(std::move(p));
  e.run();
  REQUIRE(client.at.size() == 1);
  // 2 * 334.24 ns (4178 B at 100 Gb/s) + 400 ns + 200 ns forwarding + 400 ns propagation
  CHECK(client.at[0] == 2 * ps(334'240) + ns(1000));
  CHECK(client.ports[0] == 1);
  const json c = f->counters();
  CHECK(c["server/mlx5_0"]["tx_packets"] == 1);
  CHECK(c["client/mlx5_0"]["rx_bytes"] == 4178);
  CHECK(c["sw0/0"]["rx_packets"] == 1);
  CHECK(c["sw0/1"]["tx_packets"] == 1);
}

TEST_CASE("fabric: a star of 4 hosts delivers between every pair") {
  Engine e;
  auto f = topo::Fabric::build(e, json{{"topology", {{"type", "star"}, {"hosts", 4}}}});
  std::vector<std::unique_ptr<Sink>> sinks;
  for (size_t i = 0; i < 4; ++i) {
    sinks.push_back(std::make_unique<Sink>(e));
    f->attach_nic(i, sinks.back().get());
  }
  for (size_t a = 0; a < 4; ++a)
    for (size_t b = 0; b < 4; ++b) {
      if (a == b) continue;
      auto p = std::make_unique<net::Packet>();
      p->src = f->nics()[a].address;
      p->dst = f->nics()[b].address;
      p->wire_bytes = 100;
      f->nic_port(a).send(std::move(p));
    }
  e.run();
  for (size_t i = 0; i < 4; ++i) CHECK(sinks[i]->at.size() == 3);
}

TEST_CASE("fabric: leaf-spine crosses 4 links and spreads flows over both spines") {
  Engine e;
  auto f = topo::Fabric::build(
      e, json{{"topology", {{"type", "leaf_spine"}, {"leaves", 2}, {"spines", 2}, {"hosts_per_leaf", 1}}},
              {"switch", {{"forwarding_latency_ns", 200}}},
              {"link", {{"rate_gbps", 100}, {"latency_ns", 400}}}});
  REQUIRE(f->nics().size() == 2);
  Sink dst(e);
  f->attach_nic(1, &dst);
  for (uint16_t i = 0; i < 32; ++i) {
    auto p = std::make_unique<net::Packet>();
    p->src = f->nics()[0].address;
    p->dst = f->nics()[1].address;
    p->udp_src_port = static_cast<uint16_t>(49152 + i);
    p->wire_bytes = 1250;  // 100 ns at 100 Gb/s
    f->nic_port(0).send(std::move(p));
  }
  e.run();
  REQUIRE(dst.at.size() == 32);
  // first packet: 4 hops * (100 ns serialization + 400 ns propagation) + 3 switches * 200 ns
  CHECK(dst.at[0] == 4 * ns(500) + 3 * ns(200));
  const json c = f->counters();
  // leaf1's ports: 0 = host1, 1 = spine1, 2 = spine2 (in link order)
  const uint64_t via1 = c["leaf1/1"]["tx_packets"], via2 = c["leaf1/2"]["tx_packets"];
  CHECK(via1 + via2 == 32);
  CHECK(via1 > 0);
  CHECK(via2 > 0);
}

TEST_CASE("fabric: IB delivers through credit flow control and returns credits") {
  Engine e;
  auto f = topo::Fabric::build(e, load("ib.json"));
  Sink client(e);
  f->attach_nic(1, &client);
  for (int i = 0; i < 100; ++i) {  // 100 * 4122 B = 412 KB, more than one 128 KiB VL buffer
    auto p = std::make_unique<net::Packet>();
    p->link_layer = net::LinkLayer::InfiniBand;
    p->src = f->nics()[0].address;
    p->dst = f->nics()[1].address;
    p->wire_bytes = net::base_wire_bytes(net::LinkLayer::InfiniBand, 4096);  // 4096 + 26 B
    f->nic_port(0).send(std::move(p));
  }
  e.run();
  CHECK(client.at.size() == 100);
  const json c = f->counters();
  CHECK(c["sw0/1"]["drops"] == 0);
  CHECK(c["sw0/0"]["tx_packets"] == 100);        // a credit update per packet released
  CHECK(c["client/mlx5_0"]["tx_packets"] == 100); // the client's credits back to the switch
}

TEST_CASE("fabric: each egress port's peer is the port at the other end of its link") {
  Engine e;
  auto f = topo::Fabric::build(e, topo::default_fabric_config());
  const auto ports = f->egress_ports();
  // default.json: links server-sw0 then client-sw0, so sw0's port 0 faces the server and
  // port 1 the client; egress_ports() lists the NICs first, then sw0/0 and sw0/1.
  REQUIRE(ports.size() == 4);
  CHECK(ports[0].name == "server/mlx5_0");
  CHECK(ports[2].name == "sw0/0");
  CHECK(ports[0].peer == ports[2].egress);
  CHECK(ports[2].peer == ports[0].egress);
  CHECK(ports[1].name == "client/mlx5_0");
  CHECK(ports[3].name == "sw0/1");
  CHECK(ports[1].peer == ports[3].egress);
  CHECK(ports[3].peer == ports[1].egress);
}
