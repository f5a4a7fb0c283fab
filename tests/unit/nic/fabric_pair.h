// A Pair whose HCAs sit on the default fabric: server and client, each on its own 100 Gb/s
// link to one switch. Link 0 (server <-> sw0) takes `link0` keys (loss_rate, ber,
// schedule); link 1 (client <-> sw0) is clean.
#pragma once

#include <nlohmann/json.hpp>

#include "sim/topo/fabric.h"
#include "tests/unit/nic/test_wire.h"

namespace rdmasim::nic::test {

// configs/default.json's fabric (topo::default_fabric_config) with `seed` and `link0`'s keys
// on link 0, by default without the host PCIe model ("pcie": false): most of these tests
// time the transport's recovery from the first send at wqe_latency after the post (as the
// TestWire pairs do); PCIe's own costs are checked in tests/unit/host, pcie_test.cpp here
// and on the fabric's default timing by the study, perftest and hello checks.
inline nlohmann::json two_host_fabric(const nlohmann::json& link0, uint64_t seed, bool pcie = false,
                                      const nlohmann::json& nic = nlohmann::json::object()) {
  nlohmann::json c = topo::default_fabric_config();
  c["nic"]["pcie"] = pcie;
  c["nic"].update(nic);
  c["seed"] = seed;
  c["links"][0].update(link0);
  return c;
}

// a = server (sends through the faulty link 0), b = client.
struct FabricPair : PairBase {
  std::unique_ptr<topo::Fabric> fabric;

  // `nic`: NIC keys over the default fabric's (e.g. "loss_recovery").
  explicit FabricPair(const nlohmann::json& link0, QpParams qp = {}, uint64_t seed = 5, bool pcie = false,
                      const nlohmann::json& nic = nlohmann::json::object())
      : PairBase(net::LinkLayer::RoCEv2, seed) {
    fabric = topo::Fabric::build(engine, two_host_fabric(link0, seed, pcie, nic));
    Side* sides[2] = {&a, &b};
    for (size_t i = 0; i < 2; ++i) {
      sides[i]->hca = std::make_unique<Hca>(engine, fabric->nics()[i].hca, fabric->nic_port(i));
      topo::attach_hca(*fabric, i, *sides[i]->hca);  // as the daemon: the port follows the link
    }
    addr_a = fabric->nics()[0].address;
    addr_b = fabric->nics()[1].address;
    start(qp);
  }
  ~FabricPair() {  // the HCAs hold the fabric's ports
    a.hca.reset();
    b.hca.reset();
  }

  // Link 0's counters in one direction: "a_to_b" (server -> switch) or "b_to_a".
  uint64_t link0(const char* dir, const char* key) const {
    return fabric->counters()["links"][0][dir][key].get<uint64_t>();
  }
};

}  // namespace rdmasim::nic::test
