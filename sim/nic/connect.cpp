// The RESET -> INIT -> RTR -> RTS sequence every connected QP goes through.
#include "sim/nic/connect.h"

#include "sim/nic/hca.h"

namespace rdmasim::nic {

int modify_to_rts(Hca& hca, uint32_t qpn, uint32_t peer_qpn, const AddressVector& to_peer,
                  const ConnectParams& p, const char** failed) {
  const bool ud = p.type == QpType::UD;
  const bool is_rc = p.type == QpType::RC;
  auto step = [&](const char* name, const QpAttr& at, uint32_t mask) {
    const int err = hca.modify_qp(qpn, at, mask);
    if (err != 0 && failed) *failed = name;
    return err;
  };
  QpAttr at;
  at.qp_state = QpState::Init;
  at.port_num = p.port_num;
  at.pkey_index = p.pkey_index;
  at.qp_access_flags = p.access;
  at.qkey = p.qkey;
  if (int r = step("INIT", at, kQpState | kQpPkeyIndex | kQpPort | (ud ? kQpQkey : kQpAccessFlags)))
    return r;

  at.qp_state = QpState::Rtr;
  uint32_t mask = kQpState;
  if (!ud) {
    at.path_mtu = p.path_mtu;
    at.dest_qp_num = peer_qpn;
    at.rq_psn = p.psn;
    at.ah_attr = to_peer;
    at.max_dest_rd_atomic = p.max_dest_rd_atomic;
    at.min_rnr_timer = p.min_rnr_timer;
    mask |= kQpAv | kQpPathMtu | kQpDestQpn | kQpRqPsn;
    if (is_rc) mask |= kQpMaxDestRdAtomic | kQpMinRnrTimer;
  }
  if (int r = step("RTR", at, mask)) return r;

  at.qp_state = QpState::Rts;
  at.sq_psn = p.psn;
  at.timeout = p.timeout;
  at.retry_cnt = p.retry_cnt;
  at.rnr_retry = p.rnr_retry;
  at.max_rd_atomic = p.max_rd_atomic;
  mask = kQpState | kQpSqPsn;
  if (is_rc) mask |= kQpTimeout | kQpRetryCnt | kQpRnrRetry | kQpMaxQpRdAtomic;
  return step("RTS", at, mask);
}

int connect_qps(const QpEnd& a, const QpEnd& b, const ConnectParams& p, const char** failed) {
  if (int rc = modify_to_rts(*a.hca, a.qpn, b.qpn, b.av, p, failed)) return rc;
  return modify_to_rts(*b.hca, b.qpn, a.qpn, a.av, p, failed);
}

}  // namespace rdmasim::nic
