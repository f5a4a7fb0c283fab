// Test fixtures for congestion control: connecting RC QPs of HCAs (on any Transmitter).
#pragma once

#include <doctest/doctest.h>

#include <array>
#include <cstdint>

#include "sim/nic/hca.h"

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
  QpAttr at;
  at.qp_state = QpState::Init;
  at.port_num = 1;
  at.qp_access_flags = kAccessLocalWrite | kAccessRemoteWrite | kAccessRemoteRead;
  REQUIRE(hca.modify_qp(qpn, at, kQpState | kQpPkeyIndex | kQpPort | kQpAccessFlags) == 0);
  at.qp_state = QpState::Rtr;
  at.path_mtu = 5;
  at.dest_qp_num = peer_qpn;
  at.rq_psn = 0;
  at.ah_attr.is_global = true;
  at.ah_attr.dgid = gid_of(peer_ip);
  at.max_dest_rd_atomic = 4;
  at.min_rnr_timer = 1;
  REQUIRE(hca.modify_qp(qpn, at, kQpState | kQpAv | kQpPathMtu | kQpDestQpn | kQpRqPsn |
                                     kQpMaxDestRdAtomic | kQpMinRnrTimer) == 0);
  at.qp_state = QpState::Rts;
  at.sq_psn = 0;
  at.timeout = 14;
  at.retry_cnt = 7;
  at.rnr_retry = 7;
  at.max_rd_atomic = 4;
  REQUIRE(hca.modify_qp(qpn, at, kQpState | kQpSqPsn | kQpTimeout | kQpRetryCnt | kQpRnrRetry |
                                     kQpMaxQpRdAtomic) == 0);
}

// A PD, one CQ feeding `sink`, and one RC QP with room for 64 send WRs.
inline uint32_t make_rc_qp(Hca& hca, uint32_t* pd, uint32_t* cq, CompletionSink sink) {
  REQUIRE(hca.alloc_pd(pd) == 0);
  REQUIRE(hca.create_cq(1024, std::move(sink), cq) == 0);
  QpInitAttr init;
  init.pd = *pd;
  init.type = QpType::RC;
  init.send_cq = init.recv_cq = *cq;
  init.caps = {64, 64, 4, 4, 64};
  uint32_t qpn = 0;
  REQUIRE(hca.create_qp(init, &qpn) == 0);
  return qpn;
}

}  // namespace rdmasim::nic::cctest
