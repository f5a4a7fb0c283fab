// Test fixtures for congestion control: connecting RC QPs of HCAs (on any Transmitter).
#pragma once

#include <doctest/doctest.h>

#include <array>
#include <cstdint>
#include <memory>
#include <vector>

#include <nlohmann/json.hpp>

#include "sim/nic/connect.h"
#include "sim/nic/hca.h"
#include "sim/topo/fabric.h"

namespace rdmasim::nic::cctest {

inline std::array<uint8_t, 16> gid_of(uint32_t ip) {
  std::array<uint8_t, 16> g{};
  g[10] = g[11] = 0xff;
  g[12] = ip >> 24, g[13] = ip >> 16, g[14] = ip >> 8, g[15] = ip;
  return g;
}

// Takes RC QP `qpn` of `hca` from RESET to RTS, connected to `peer_qpn` at RoCEv2 `peer_ip`,
// path MTU 4096.
inline void connect_rc(Hca& hca, uint32_t qpn, uint32_t peer_qpn, uint32_t peer_ip) {
  AddressVector to_peer;
  to_peer.is_global = true;
  to_peer.dgid = gid_of(peer_ip);
  REQUIRE(modify_to_rts(hca, qpn, peer_qpn, to_peer) == 0);
}

// An RC QP on `pd` with both queues on `cq` and room for 64 send WRs.
inline uint32_t add_rc_qp(Hca& hca, uint32_t pd, uint32_t cq) {
  QpInitAttr init;
  init.pd = pd;
  init.type = QpType::RC;
  init.send_cq = init.recv_cq = cq;
  init.caps = {64, 64, 4, 4, 64};
  uint32_t qpn = 0;
  REQUIRE(hca.create_qp(init, &qpn) == 0);
  return qpn;
}

// A PD, one CQ feeding `sink`, and one RC QP with room for 64 send WRs.
inline uint32_t make_rc_qp(Hca& hca, uint32_t* pd, uint32_t* cq, CompletionSink sink) {
  REQUIRE(hca.alloc_pd(pd) == 0);
  REQUIRE(hca.create_cq(1024, std::move(sink), cq) == 0);
  return add_rc_qp(hca, *pd, *cq);
}

// A signaled RDMA WRITE or READ of one local range.
inline SendWr rdma_wr(WrOpcode op, uint64_t local, uint32_t len, uint32_t lkey, uint64_t remote,
                      uint32_t rkey) {
  SendWr wr;
  wr.opcode = op;
  wr.send_flags = kSendSignaled;
  wr.sgl = {Sge{local, len, lkey}};
  wr.remote_addr = remote;
  wr.rkey = rkey;
  return wr;
}

// Hosts s1, s2 and r (127.0.1.1..3) on one switch sw0, all links 100 Gb/s, 400 ns, RoCEv2,
// MTU 4096. `sw`: the "switch" defaults (ECN, PFC); `cc`: the NICs' "cc" (null: none).
// Switch ports follow link order: 0 -> s1, 1 -> s2, 2 -> r.
inline nlohmann::json star3_config(const nlohmann::json& sw, const nlohmann::json& cc,
                                   uint64_t seed) {
  nlohmann::json j = nlohmann::json::parse(R"({
    "name": "incast2", "link_layer": "roce", "mtu": 4096,
    "hosts": [
      {"name": "s1", "ip": "127.0.1.1"},
      {"name": "s2", "ip": "127.0.1.2"},
      {"name": "r", "ip": "127.0.1.3"}
    ],
    "switches": [{"name": "sw0"}],
    "links": [
      {"a": "s1", "b": "sw0", "rate_gbps": 100, "latency_ns": 400},
      {"a": "s2", "b": "sw0", "rate_gbps": 100, "latency_ns": 400},
      {"a": "r", "b": "sw0", "rate_gbps": 100, "latency_ns": 400}
    ]
  })");
  j["seed"] = seed;
  j["switch"] = sw;
  if (!cc.is_null()) j["nic"] = {{"cc", cc}};
  return j;
}

// One HCA per NIC of `fabric`, attached to its port.
inline std::vector<std::unique_ptr<Hca>> attach_hcas(Engine& engine, topo::Fabric& fabric) {
  std::vector<std::unique_ptr<Hca>> hca;
  for (size_t i = 0; i < fabric.nics().size(); ++i) {
    hca.push_back(std::make_unique<Hca>(engine, fabric.nics()[i].hca, fabric.nic_port(i)));
    fabric.attach_nic(i, hca.back().get());
  }
  return hca;
}

}  // namespace rdmasim::nic::cctest
