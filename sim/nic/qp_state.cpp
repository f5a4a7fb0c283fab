// The IBTA QP state machine: allowed transitions and their required/optional attribute
// masks per transport (the table of the kernel's ib_modify_qp_is_ok), and ERR/RESET entry.
#include "sim/nic/hca_impl.h"

namespace rdmasim::nic {
namespace {

struct Masks {
  bool valid = false;
  uint32_t req[5] = {0, 0, 0, 0, 0};  // index: RC, UC, UD, XRC initiator, XRC target
  uint32_t opt[5] = {0, 0, 0, 0, 0};
};

int tindex(QpType t) {
  switch (t) {
    case QpType::RC: return 0;
    case QpType::UC: return 1;
    case QpType::XrcSend: return 3;
    case QpType::XrcRecv: return 4;
    default: return 2;
  }
}

// Masks for cur -> next (besides kQpState itself).
Masks transition(QpState cur, QpState next) {
  using S = QpState;
  Masks m;
  if (next == S::Reset || next == S::Err) {  // from any state, state only
    m.valid = true;
    return m;
  }
  auto set = [&](uint32_t rc, uint32_t uc, uint32_t ud, uint32_t orc, uint32_t ouc,
                 uint32_t oud) {
    m.valid = true;
    m.req[0] = rc, m.req[1] = uc, m.req[2] = ud;
    m.opt[0] = orc, m.opt[1] = ouc, m.opt[2] = oud;
  };
  // The XRC columns: the initiator takes RC's requester attributes, the target RC's
  // responder ones (ib_modify_qp_is_ok's IB_QPT_XRC_INI / IB_QPT_XRC_TGT entries).
  auto xrc = [&](uint32_t ini, uint32_t tgt, uint32_t oini, uint32_t otgt) {
    m.req[3] = ini, m.req[4] = tgt;
    m.opt[3] = oini, m.opt[4] = otgt;
  };
  const uint32_t ppa = kQpPkeyIndex | kQpPort | kQpAccessFlags;
  const uint32_t ppq = kQpPkeyIndex | kQpPort | kQpQkey;
  if (cur == S::Reset && next == S::Init) {
    set(ppa, ppa, ppq, 0, 0, 0);
    xrc(ppa, ppa, 0, 0);
  } else if (cur == S::Init && next == S::Init) {
    set(0, 0, 0, ppa, ppa, ppq);
    xrc(0, 0, ppa, ppa);
  } else if (cur == S::Init && next == S::Rtr) {
    const uint32_t uc = kQpAv | kQpPathMtu | kQpDestQpn | kQpRqPsn;
    const uint32_t opt = kQpAltPath | kQpAccessFlags | kQpPkeyIndex;
    set(uc | kQpMaxDestRdAtomic | kQpMinRnrTimer, uc, 0, opt, opt, kQpPkeyIndex | kQpQkey);
    xrc(uc, uc | kQpMaxDestRdAtomic | kQpMinRnrTimer, opt, opt);
  } else if (cur == S::Rtr && next == S::Rts) {
    const uint32_t opt = kQpCurState | kQpAltPath | kQpAccessFlags | kQpPathMigState;
    set(kQpTimeout | kQpRetryCnt | kQpRnrRetry | kQpSqPsn | kQpMaxQpRdAtomic, kQpSqPsn,
        kQpSqPsn, opt | kQpMinRnrTimer, opt, kQpCurState | kQpQkey);
    xrc(kQpTimeout | kQpRetryCnt | kQpRnrRetry | kQpSqPsn | kQpMaxQpRdAtomic,
        kQpTimeout | kQpSqPsn, opt, opt | kQpMinRnrTimer);
  } else if ((cur == S::Rts || cur == S::Sqd) && next == S::Rts) {
    const uint32_t opt = kQpCurState | kQpAccessFlags | kQpAltPath | kQpPathMigState;
    set(0, 0, 0, opt | kQpMinRnrTimer, opt, kQpCurState | kQpQkey);
    xrc(0, 0, opt, opt | kQpMinRnrTimer);
  } else if (cur == S::Sqe && next == S::Rts) {
    set(0, 0, 0, 0, kQpCurState | kQpAccessFlags, kQpCurState | kQpQkey);
  } else if (cur == S::Rts && next == S::Sqd) {
    set(0, 0, 0, kQpEnSqdAsyncNotify, kQpEnSqdAsyncNotify, kQpEnSqdAsyncNotify);
    xrc(0, 0, kQpEnSqdAsyncNotify, kQpEnSqdAsyncNotify);
  } else if (cur == S::Sqd && next == S::Sqd) {
    // IBTA 11.2.1.2 / ib_modify_qp_is_ok: path and RC parameters may change while drained.
    const uint32_t uc = kQpAv | kQpAltPath | kQpAccessFlags | kQpPkeyIndex | kQpPathMigState;
    set(0, 0, 0,
        uc | kQpPort | kQpTimeout | kQpRetryCnt | kQpRnrRetry | kQpMaxQpRdAtomic |
            kQpMaxDestRdAtomic | kQpMinRnrTimer,
        uc, kQpPkeyIndex | kQpQkey);
    xrc(0, 0, uc | kQpPort | kQpTimeout | kQpRetryCnt | kQpRnrRetry | kQpMaxQpRdAtomic,
        uc | kQpPort | kQpTimeout | kQpMaxDestRdAtomic | kQpMinRnrTimer);
  }
  return m;
}

}  // namespace

Time rnr_timer(uint8_t code) {
  // IBTA table 45, in units of 10 us (code 0 = 655.36 ms).
  static constexpr uint32_t k10us[32] = {65536, 1,   2,   3,   4,    6,    8,    12,
                                         16,    24,  32,  48,  64,   96,   128,  192,
                                         256,   384, 512, 768, 1024, 1536, 2048, 3072,
                                         4096,  6144, 8192, 12288, 16384, 24576, 32768, 49152};
  return us(10) * k10us[code & 31];
}

int Hca::Impl::modify_qp(Qp& qp, const QpAttr& a, uint32_t mask) {
  const QpState cur = qp.attr.qp_state;
  const QpState next = (mask & kQpState) ? a.qp_state : cur;
  if (static_cast<uint8_t>(next) > static_cast<uint8_t>(QpState::Err)) return EINVAL;
  if ((mask & kQpCurState) && a.cur_qp_state != cur) return EINVAL;
  const Masks m = transition(cur, next);
  if (!m.valid) return EINVAL;
  const int t = tindex(qp.init.type);
  const uint32_t given = mask & ~kQpState;
  if ((given & m.req[t]) != m.req[t]) return EINVAL;       // a required attribute missing
  if (given & ~(m.req[t] | m.opt[t])) return EINVAL;       // an attribute not allowed here
  // Attribute values.
  if ((mask & kQpPort) && a.port_num != 1) return EINVAL;
  if ((mask & kQpPathMtu) &&
      (mtu_bytes(a.path_mtu) == 0 || mtu_bytes(a.path_mtu) > config.max_mtu))
    return EINVAL;
  if ((mask & kQpTimeout) && a.timeout > 31) return EINVAL;
  if ((mask & kQpRetryCnt) && a.retry_cnt > 7) return EINVAL;
  if ((mask & kQpRnrRetry) && a.rnr_retry > 7) return EINVAL;
  if ((mask & kQpMinRnrTimer) && a.min_rnr_timer > 31) return EINVAL;
  if ((mask & kQpMaxQpRdAtomic) && a.max_rd_atomic > config.max_qp_rd_atom) return EINVAL;
  if ((mask & kQpMaxDestRdAtomic) && a.max_dest_rd_atomic > config.max_qp_rd_atom)
    return EINVAL;
  if ((mask & kQpDestQpn) && a.dest_qp_num > 0xffffff) return EINVAL;
  if ((mask & kQpAv) && a.ah_attr.port_num > 1) return EINVAL;

  QpAttr& s = qp.attr;
  if (mask & kQpAccessFlags) s.qp_access_flags = a.qp_access_flags;
  if (mask & kQpPkeyIndex) s.pkey_index = a.pkey_index;
  if (mask & kQpPort) s.port_num = a.port_num;
  if (mask & kQpQkey) s.qkey = a.qkey;
  if (mask & kQpAv) s.ah_attr = a.ah_attr;
  if (mask & kQpPathMtu) {
    s.path_mtu = a.path_mtu;
    qp.mtu = mtu_bytes(a.path_mtu);
  }
  if (mask & kQpTimeout) s.timeout = a.timeout;
  if (mask & kQpRetryCnt) s.retry_cnt = a.retry_cnt;
  if (mask & kQpRnrRetry) s.rnr_retry = a.rnr_retry;
  if (mask & kQpRqPsn) {
    s.rq_psn = a.rq_psn & 0xffffff;
    qp.epsn = s.rq_psn;
  }
  if (mask & kQpMaxQpRdAtomic) s.max_rd_atomic = a.max_rd_atomic;
  if (mask & kQpAltPath) {
    s.alt_ah_attr = a.alt_ah_attr;
    s.alt_pkey_index = a.alt_pkey_index;
    s.alt_port_num = a.alt_port_num;
    s.alt_timeout = a.alt_timeout;
  }
  if (mask & kQpMinRnrTimer) s.min_rnr_timer = a.min_rnr_timer;
  if (mask & kQpSqPsn) {
    s.sq_psn = a.sq_psn & 0xffffff;
    qp.next_psn = s.sq_psn;
    qp.acked_psn = psn_add(s.sq_psn, -1);
    // Nothing before sq_psn was sent: PSNs from here on are first transmissions (24-bit
    // order, so an sq_psn at or above 2^23 is not "before" the initial 0).
    qp.retx_end = qp.sent_end = s.sq_psn;
  }
  if (mask & kQpMaxDestRdAtomic) s.max_dest_rd_atomic = a.max_dest_rd_atomic;
  if (mask & kQpPathMigState) s.path_mig_state = a.path_mig_state;
  if (mask & kQpDestQpn) s.dest_qp_num = a.dest_qp_num;
  if (mask & kQpEnSqdAsyncNotify) s.en_sqd_async_notify = a.en_sqd_async_notify;

  s.qp_state = s.cur_qp_state = next;
  if (next == QpState::Rts && cur == QpState::Rtr) {
    qp.retries_left = s.retry_cnt;
    qp.rnr_retries_left = s.rnr_retry;
  }
  if (next == QpState::Err && cur != QpState::Err) enter_error(qp);
  if (next == QpState::Reset && cur != QpState::Reset) reset_qp(qp);
  if (next == QpState::Sqd && cur == QpState::Rts) {
    // No new WQE starts (see has_tx_work); started ones finish and are retransmitted as
    // needed, then SQ_DRAINED.
    s.sq_draining = true;
    check_drained(qp);
  }
  if (next == QpState::Rts) {
    s.sq_draining = false;
    kick(qp);
  }
  return 0;
}

void Hca::Impl::qp_event(const Qp& qp, AsyncEventType type) {
  if (!async_sink) return;
  AsyncEvent ev;
  ev.type = type;
  ev.qpn = qp.qpn;
  async_sink(ev);
}

void Hca::Impl::enter_error(Qp& qp) {
  flush_write(qp);  // bytes accepted before the error were placed, as hardware does
  qp.attr.qp_state = qp.attr.cur_qp_state = QpState::Err;
  engine.cancel(qp.ack_timer);
  engine.cancel(qp.rnr_wait);
  qp.ack_timer = qp.rnr_wait = EventId{};
  qp.resp_queue.clear();
  qp.rd_atomic_held.clear();
  qp.irn_held.clear();
  irn_clear(qp);
  // Outstanding send WQEs complete in order with WR_FLUSH_ERR, signaled or not.
  std::deque<SendWqe> sq;
  sq.swap(qp.sq);
  qp.tx_wqe = 0;
  qp.tx_pkt = 0;
  for (const SendWqe& w : sq) complete_send(qp, w, WcStatus::WrFlushErr);
  std::deque<RecvWr> rq;
  rq.swap(qp.rq);
  if (qp.in_msg && qp.msg_is_send && !qp.cur_srq) rq.push_front(qp.cur_recv);
  qp.in_msg = false;
  for (const RecvWr& r : rq) {
    Completion c;
    c.wr_id = r.wr_id;
    c.status = WcStatus::WrFlushErr;
    c.opcode = WcOpcode::Recv;
    c.qp_num = qp.qpn;
    c.wqe_index = r.wqe_index;
    complete(qp.init.recv_cq, c);
  }
  // IBTA 11.6.3 (o11-5.2.x): a QP on an SRQ that enters ERR reports Last WQE Reached once
  // it will consume no more SRQ WQEs, so the owner knows when it may destroy the QP.
  if (qp.init.srq && !qp.last_wqe) {
    qp.last_wqe = true;
    qp_event(qp, AsyncEventType::QpLastWqeReached);
  }
}

// IBTA 10.3.1 (SQ Error state, all QP types but RC): a send WQE that completes in error
// stops the send queue; WRs already on it and WRs posted later complete with WR_FLUSH_ERR.
// C10-38: receives posted before keep being processed and new ones can be posted. Mellanox
// HCAs behave so: IPoIB (a UD QP) queries for IB_QPS_SQE after a failed send and moves it
// back to RTS (Linux drivers/infiniband/ulp/ipoib/ipoib_ib.c, ipoib_qp_state_validate_work).
// No affiliated async event: the error completion is the report.
void Hca::Impl::enter_sq_error(Qp& qp) {
  qp.attr.qp_state = qp.attr.cur_qp_state = QpState::Sqe;
  qp.attr.sq_draining = false;
  std::deque<SendWqe> sq;
  sq.swap(qp.sq);
  qp.tx_wqe = 0;
  qp.tx_pkt = 0;
  for (const SendWqe& w : sq) complete_send(qp, w, WcStatus::WrFlushErr);
}

void Hca::Impl::reset_qp(Qp& qp) {
  engine.cancel(qp.ack_timer);
  engine.cancel(qp.rnr_wait);
  const uint32_t qpn = qp.qpn;
  const QpInitAttr init = qp.init;
  const QpCaps caps = qp.attr.cap;
  qp = Qp{};
  qp.qpn = qpn;
  qp.init = init;
  qp.attr.cap = caps;
  qp.mtu = config.max_mtu;
}

}  // namespace rdmasim::nic
