// Connecting QPs: RESET -> INIT -> RTR -> RTS with the attributes a verbs program sets.
#pragma once

#include <cstdint>

#include "sim/nic/types.h"

namespace rdmasim::nic {

class Hca;

// What a connection sets besides the peer. The defaults are common verbs-program choices:
// port 1, path MTU 4096, retry_cnt 7 and rnr_retry 7 (man ibv_modify_qp: 7 retries an RNR
// NAK forever), timeout 14 (4.096 us * 2^14 = 67 ms per try, same page).
struct ConnectParams {
  QpType type = QpType::RC;
  uint8_t port_num = 1;
  uint16_t pkey_index = 0;
  uint32_t access = kAccessLocalWrite | kAccessRemoteWrite | kAccessRemoteRead;  // RC, UC
  uint32_t qkey = 0;         // UD
  uint8_t path_mtu = 5;      // enum ibv_mtu: 3 = 1024 (iWARP at Ethernet MTU 1500), 5 = 4096
  uint32_t psn = 0;          // the first PSN each side sends, and so the one its peer expects
  uint8_t timeout = 14;
  uint8_t retry_cnt = 7;
  uint8_t rnr_retry = 7;
  uint8_t min_rnr_timer = 1;
  uint8_t max_rd_atomic = 4;       // READ/atomic requests outstanding (requester)
  uint8_t max_dest_rd_atomic = 4;  // responder resources
};

// One side: takes QP `qpn` of `hca` from RESET to RTS with exactly the attribute masks IBTA
// 11.2.1 requires of its type on each transition (as the kernel's ib_modify_qp_is_ok has them); an RC or UC QP is connected to
// QP `peer_qpn` reached through `to_peer` (both ignored for UD). Returns 0, or the errno of
// the first transition refused, naming it in *failed ("INIT", "RTR" or "RTS") if given.
int modify_to_rts(Hca& hca, uint32_t qpn, uint32_t peer_qpn, const AddressVector& to_peer,
                  const ConnectParams& p = {}, const char** failed = nullptr);

// A QP and how its peer addresses it.
struct QpEnd {
  Hca* hca = nullptr;
  uint32_t qpn = 0;
  AddressVector av;  // the address vector that reaches this QP's port
};

// Both sides: a to b, then b to a (modify_to_rts on each). Returns 0 or the first errno.
int connect_qps(const QpEnd& a, const QpEnd& b, const ConnectParams& p = {},
                const char** failed = nullptr);

}  // namespace rdmasim::nic
