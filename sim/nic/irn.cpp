// IRN loss recovery (HcaConfig::loss_recovery; Mittal et al., "Revisiting Network Support
// for RDMA", SIGCOMM 2018): selective repeat for RC on a lossy fabric, beside the IBTA's
// go-back-N.
//
// Responder: a request packet after a gap is kept (irn_held) and answered with a NACK whose
// BTH PSN is the expected PSN (the cumulative ACK) and whose sack_psn is the packet's own
// PSN. When the gap fills, the kept packets run in PSN order, exactly as if they had arrived
// in order, and one ACK covers them. (IRN places WRITE packets at once, each carrying a
// RETH; here they are placed when their turn comes, which gives the same bytes and, bar the
// DMA timing, the same times. The RETH's 16 B are on the wire: build_request.)
//
// Requester: the NACKs' selective ACKs go into a bitmap (irn_sacked). The first NACK starts
// loss recovery: the packets after the cumulative ACK and before the highest selectively
// acknowledged one that were not acknowledged are lost, and are resent once each (a READ or
// atomic request for its whole range) before any new packet; recovery ends when the
// cumulative ACK passes what had been sent when it began. A timeout resends every packet
// neither acknowledged nor selectively acknowledged. The timer is RTO_low while at most
// rto_low_packets are in flight, RTO_high otherwise; a timeout costs a retry (retry_cnt), a
// NACK does not. BDP flow control holds new packets while bdp_packets PSNs are in flight.
// READ responses are placed in order: a response after a gap asks for the rest of the READ
// again at once (irn_reread), instead of waiting for the timer.
// An RNR NAK falls back to go-back-N from its PSN (the responder drops what it kept).
// Without nack_gaps (a fabric that reorders: adaptive routing) a packet after a gap is kept
// and not NACKed; the gap is expected to fill, and only the requester's timeout resends.
// READ responses after a gap are placed at once (irn_read_ahead) instead of asking for the
// rest again; the READ completes when its last gap fills.
#include "sim/nic/hca_impl.h"

namespace rdmasim::nic {
namespace {

// Packets further than this after the expected PSN are not kept (the requester's timer
// recovers them): bounds the responder's memory when no BDP cap holds the requester.
constexpr int32_t kMaxHeldAhead = 1 << 16;

// The PSN a READ's request asks from now: its first response not yet placed.
uint32_t read_resume_psn(const SendWqe& w, uint32_t mtu) {
  return psn_add(w.first_psn, w.resp_received / mtu);
}

}  // namespace

bool Hca::Impl::irn_next_lost(const Qp& qp, size_t* wqe, uint32_t* k) const {
  if (!qp.irn_recovery) return false;
  uint32_t from = qp.irn_retx_from;
  const uint32_t after_ack = psn_add(qp.acked_psn, 1);
  if (psn_diff(from, after_ack) < 0) from = after_ack;
  const uint32_t limit = qp.irn_retx_limit;
  for (size_t i = 0; i < qp.sq.size() && psn_diff(from, limit) < 0; ++i) {
    const SendWqe& w = qp.sq[i];
    if (!w.started) break;
    if (w.done || w.npsn == 0 || psn_diff(w.last_psn(), from) < 0) continue;
    if (psn_diff(w.first_psn, limit) >= 0) break;
    if (w.is_read_or_atomic()) {
      const uint32_t at = w.wr.opcode == WrOpcode::RdmaRead ? read_resume_psn(w, qp.mtu) : w.first_psn;
      if (psn_diff(at, from) >= 0 && psn_diff(at, limit) < 0 && !qp.irn_sacked.count(at)) {
        *wqe = i;
        *k = static_cast<uint32_t>(psn_diff(at, w.first_psn));
        qp.irn_retx_from = from;
        return true;
      }
      from = psn_add(w.last_psn(), 1);
      continue;
    }
    uint32_t psn = psn_diff(w.first_psn, from) > 0 ? w.first_psn : from;
    for (; psn_diff(psn, w.last_psn()) <= 0 && psn_diff(psn, limit) < 0; psn = psn_add(psn, 1)) {
      if (!qp.irn_sacked.count(psn)) {
        *wqe = i;
        *k = static_cast<uint32_t>(psn_diff(psn, w.first_psn));
        qp.irn_retx_from = psn;
        return true;
      }
    }
    from = psn;
  }
  // Nothing before `from` is lost: later scans start there (a cursor, not state).
  qp.irn_retx_from = from;
  return false;
}

bool Hca::Impl::irn_has_retx(const Qp& qp) const {
  for (const SendWqe& w : qp.sq) {
    if (!w.started) break;
    if (w.irn_reread && !w.done) return true;
  }
  size_t i = 0;
  uint32_t k = 0;
  return irn_next_lost(qp, &i, &k);
}

RdmaPacketPtr Hca::Impl::irn_retransmit(Qp& qp) {
  for (size_t i = 0; i < qp.sq.size() && qp.sq[i].started; ++i) {
    SendWqe& w = qp.sq[i];
    if (!w.irn_reread) continue;
    w.irn_reread = false;
    if (w.done) continue;
    RdmaPacketPtr p = build_request(qp, i, w.resp_received / qp.mtu, true);
    if (p) arm_ack_timer(qp);
    return p;  // null: the WQE failed locally
  }
  size_t i = 0;
  uint32_t k = 0;
  if (!irn_next_lost(qp, &i, &k)) return nullptr;
  const SendWqe& w = qp.sq[i];
  qp.irn_retx_from = w.is_read_or_atomic() ? psn_add(w.last_psn(), 1) : psn_add(w.first_psn, k + 1);
  RdmaPacketPtr p = build_request(qp, i, k, true);
  if (p) arm_ack_timer(qp);
  return p;
}

bool Hca::Impl::irn_window_open(const Qp& qp) const {
  const uint32_t cap = config.loss_recovery.bdp_packets;
  if (cap == 0 || qp.tx_wqe >= qp.sq.size()) return true;
  const SendWqe& w = qp.sq[qp.tx_wqe];
  const uint32_t next = w.started ? psn_add(w.first_psn, qp.tx_pkt) : qp.next_psn;
  // In flight: acked_psn + 1 .. next - 1, fewer than cap.
  return psn_diff(next, qp.acked_psn) <= static_cast<int32_t>(cap);
}

Time Hca::Impl::irn_rto(const Qp& qp) const {
  const LossRecoveryConfig& c = config.loss_recovery;
  const int64_t in_flight = int64_t{psn_diff(qp.sent_end, qp.acked_psn)} - 1 -
                            static_cast<int64_t>(qp.irn_sacked.size());
  return in_flight <= int64_t{c.rto_low_packets} ? c.rto_low : c.rto_high;
}

void Hca::Impl::irn_on_nack(Qp& qp, const RdmaPacket& nack) {
  if (!nack.has_sack || !qp.any_sent) return;
  const uint32_t s = nack.sack_psn;
  // Only a PSN sent and not yet cumulatively acknowledged says anything.
  if (psn_diff(s, qp.acked_psn) <= 0 || psn_diff(s, qp.sent_end) >= 0) return;
  qp.irn_sacked.insert(s);
  if (!qp.irn_recovery) {
    qp.irn_recovery = true;
    qp.irn_recovery_end = qp.sent_end;
    qp.irn_retx_from = qp.irn_retx_limit = psn_add(qp.acked_psn, 1);
  }
  if (psn_diff(psn_add(s, 1), qp.irn_retx_limit) > 0) qp.irn_retx_limit = psn_add(s, 1);
}

void Hca::Impl::irn_on_timeout(Qp& qp) {
  // Everything sent that is neither acknowledged nor selectively acknowledged is resent. A
  // READ or atomic without its response is asked again even if its request was
  // acknowledged (the response is what is missing): by the scan when the request is after
  // the cumulative ACK, else directly (irn_reread).
  for (SendWqe& w : qp.sq) {
    if (!w.started) break;
    if (w.done || !w.is_read_or_atomic()) continue;
    const uint32_t at = w.wr.opcode == WrOpcode::RdmaRead ? read_resume_psn(w, qp.mtu) : w.first_psn;
    if (psn_diff(at, qp.acked_psn) <= 0) w.irn_reread = true;
    else qp.irn_sacked.erase(at);
  }
  qp.irn_recovery = true;
  qp.irn_recovery_end = qp.sent_end;
  qp.irn_retx_from = psn_add(qp.acked_psn, 1);
  qp.irn_retx_limit = qp.sent_end;
  kick(qp);
  if (outstanding(qp) && !qp.ack_timer) arm_ack_timer(qp);  // nothing went: wait again
}

void Hca::Impl::irn_on_acked(Qp& qp) {
  while (!qp.irn_sacked.empty() && psn_diff(*qp.irn_sacked.begin(), qp.acked_psn) <= 0)
    qp.irn_sacked.erase(qp.irn_sacked.begin());
  if (qp.irn_recovery && psn_diff(psn_add(qp.acked_psn, 1), qp.irn_recovery_end) >= 0)
    qp.irn_recovery = false;
}

void Hca::Impl::irn_on_read_gap(Qp& qp, SendWqe& w, uint32_t expected) {
  if (w.irn_reread_at == expected) return;  // asked again for this gap already
  w.irn_reread_at = expected;
  w.irn_reread = true;
  counters.out_of_sequence++;
  kick(qp);
}

bool Hca::Impl::irn_read_ahead(Qp& qp, size_t i, const RdmaPacket& p) {
  SendWqe& w = qp.sq[i];
  const auto k = static_cast<uint32_t>(psn_diff(p.bth.psn, w.first_psn));
  if (w.read_ahead.count(k)) return true;  // a re-read's copy of a placed response
  if (!scatter(qp.init.pd, w.wr.sgl, k * qp.mtu, p.payload_data(), p.payload_len)) {
    fail_wqe(qp, i, WcStatus::LocProtErr);
    return false;
  }
  pcie_placed(qp.qpn, p.payload_len);
  w.read_ahead.emplace(k, p.payload_len);
  counters.out_of_sequence++;
  return true;
}

void Hca::Impl::irn_read_catch_up(Qp& qp, SendWqe& w) {
  for (auto it = w.read_ahead.begin(); it != w.read_ahead.end();) {
    const uint32_t next = w.resp_received / qp.mtu;
    if (it->first > next) break;
    if (it->first == next) w.resp_received += it->second;
    it = w.read_ahead.erase(it);  // below next: taken in already
  }
}

void Hca::Impl::irn_clear(Qp& qp) {
  qp.irn_sacked.clear();
  qp.irn_recovery = false;
  for (SendWqe& w : qp.sq) w.irn_reread = false;
}

void Hca::Impl::irn_receive(Qp& qp, const std::shared_ptr<RdmaPacket>& pkt) {
  RdmaPacket& p = *pkt;
  const QpState st = qp.attr.qp_state;
  const bool receiving = st == QpState::Rtr || st == QpState::Rts || st == QpState::Sqd;
  const int32_t d = psn_diff(p.bth.psn, qp.epsn);
  if (d > 0 && receiving) {
    counters.out_of_sequence++;
    // After an RNR NAK the requester resends from its PSN: nothing after it is kept.
    if (qp.nak_sent) return;
    if (d < kMaxHeldAhead) qp.irn_held.try_emplace(p.bth.psn, pkt);
    if (config.loss_recovery.nack_gaps) send_ack(qp, kNakSeq, qp.epsn, p.bth.psn);
    return;
  }
  if (d != 0 || qp.irn_held.empty()) return handle_request(qp, p);
  // The gap before the kept packets fills: this packet and those it puts in order run,
  // and one ACK covers them (the ACKs they would ask for on their own are not sent).
  irn_quiet = true;
  handle_request(qp, p);
  while (!qp.irn_held.empty()) {
    const QpState now = qp.attr.qp_state;
    if (now != QpState::Rtr && now != QpState::Rts && now != QpState::Sqd) break;
    auto it = qp.irn_held.begin();
    const int32_t dd = psn_diff(it->first, qp.epsn);
    if (dd > 0) break;
    std::shared_ptr<RdmaPacket> h = std::move(it->second);
    qp.irn_held.erase(it);
    if (dd < 0) continue;  // inside a range run since (a READ's responses)
    rx_pkt = h.get();
    handle_request(qp, *h);
  }
  irn_quiet = false;
  rx_pkt = &p;
  const QpState now = qp.attr.qp_state;
  if (qp.since_ack > 0 && (now == QpState::Rtr || now == QpState::Rts || now == QpState::Sqd))
    send_ack(qp, kAckSyndrome, psn_add(qp.epsn, -1));
}

}  // namespace rdmasim::nic
