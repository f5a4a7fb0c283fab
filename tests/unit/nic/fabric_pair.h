// A Pair whose HCAs sit on a fabric built from JSON: server and client, each on its own
// 100 Gb/s link to one switch. Link 0 (server <-> sw0) takes `link0` keys (loss_rate, ber,
// schedule); link 1 (client <-> sw0) is clean.
#pragma once

#include <nlohmann/json.hpp>

#include "sim/topo/fabric.h"
#include "tests/unit/nic/test_wire.h"

namespace rdmasim::nic::test {

inline nlohmann::json two_host_fabric(const nlohmann::json& link0, uint64_t seed) {
  nlohmann::json l0 = {{"a", "server/mlx5_0"}, {"b", "sw0"}, {"rate_gbps", 100}, {"latency_ns", 400}};
  l0.update(link0);
  return {{"link_layer", "roce"},
          {"seed", seed},
          {"hosts",
           {{{"name", "server"}, {"ip", "127.0.1.1"}, {"nics", {{{"name", "mlx5_0"}}}}},
            {{"name", "client"}, {"ip", "127.0.1.2"}, {"nics", {{{"name", "mlx5_0"}}}}}}},
          {"switches", {{{"name", "sw0"}, {"forwarding_latency_ns", 200}}}},
          {"links",
           {l0, {{"a", "client/mlx5_0"}, {"b", "sw0"}, {"rate_gbps", 100}, {"latency_ns", 400}}}}};
}

// a = server (sends through the faulty link 0), b = client.
struct FabricPair : PairBase {
  std::unique_ptr<topo::Fabric> fabric;

  explicit FabricPair(const nlohmann::json& link0, QpParams qp = {}, uint64_t seed = 5)
      : PairBase(net::LinkLayer::RoCEv2, seed) {
    fabric = topo::Fabric::build(engine, two_host_fabric(link0, seed));
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
