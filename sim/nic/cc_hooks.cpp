// The HCA's congestion-control hooks: request pacing (requester), CNP generation at the
// notification point (receive path) and CNP reception at the reaction point.
//
// - The pacer holds a QP's requests and RDMA READ response packets (not its ACKs) until
//   next_tx, which advances by wire_bytes at the controller's current rate per packet sent.
//   With "none" there is no pacer: the port's own serialization is the only limit.
// - NP: when the HCA's algorithm is DCQCN and a RoCEv2 packet for a QP arrives CE-marked,
//   the QP sends a CNP to its peer QP unless it sent one less than cnp_interval ago.
// - HPCC: the requester's packets ask for INT (net::Packet::int_request) and carry the INT
//   header (kIntHeaderBytes); the responder's ACK echoes the hops of the packet it answers;
//   the requester hands them to the controller (cc_ack).
// - RP: a CNP for a QP goes to the QP's controller right away (no receive pipeline delay:
//   NICs handle CNPs in hardware).
// - TIMELY, Swift, DCTCP (wants_ack_samples): the requester logs each request packet's PSN,
//   send time (when it is handed to the port) and wire bytes; a positive ACK of PSN n takes
//   the entries up to n off the log and gives the controller an AckSample: the RTT of
//   packet n (now - its send time; none if n was retransmitted), the endpoint delay (the
//   ACK's ack_delay + this NIC's arrival-to-handling time, rx_latency), the bytes and
//   packets covered, and the ACK's ce_echo. The responder of a DCTCP NIC counts CE-marked
//   requests per QP instead of sending CNPs and echoes the count on its next ACK. With
//   none, dcqcn and hpcc none of this runs: no log, no stamps beyond the arrival time.
#include <algorithm>

#include "sim/nic/hca_impl.h"

namespace rdmasim::nic {

// The HPCC simulator's INT header: 2 bytes of hop count and 8 bytes per hop for 5 hops
// (IntHeader::GetStaticSize in its int-header.h; the paper's section 4.1: "42 bytes").
constexpr uint32_t kIntHeaderBytes = 42;

CongestionControl& Hca::Impl::cc_of(Qp& qp) {
  if (!qp.cc) qp.cc = make_cc(engine, config.cc, port.rate());
  return *qp.cc;
}

bool Hca::Impl::pace_hold(Qp& qp) {
  if (config.cc.algorithm == CcAlgorithm::None || engine.now() >= qp.next_tx) return false;
  qp.in_active = false;
  if (!engine.is_pending(qp.pace_wake)) {
    const uint32_t qpn = qp.qpn;
    qp.pace_wake = later(qp.next_tx - engine.now(), [this, qpn] {
      auto it = qps.find(qpn);
      if (it == qps.end()) return;
      it->second->pace_wake = EventId{};
      kick(*it->second);
    });
  }
  return true;
}

void Hca::Impl::paced_sent(Qp& qp, RdmaPacket& p) {
  if (config.cc.algorithm == CcAlgorithm::None) return;
  CongestionControl& cc = cc_of(qp);
  if (cc.wants_int() && config.link_layer == net::LinkLayer::RoCEv2 && !p.int_request) {
    p.int_request = true;
    p.int_hops.reserve(net::kMaxIntHops);
    p.wire_bytes += kIntHeaderBytes;
    p.frame_bytes += kIntHeaderBytes;
  }
  qp.next_tx = std::max(engine.now(), qp.next_tx) + tx_time(cc.current_rate(), p.wire_bytes);
  qp.paced_bytes = p.wire_bytes;
  cc.on_packet_sent(p.wire_bytes);
  const bool request = !ibta::info(p.bth.opcode).is_response();
  if (cc.wants_ack_samples() && request) log_sent(qp, p);
  if (request && inflight_cap(qp) > 0) flight_sent(qp, p);
}

// The HPCC simulator's ChangeRate: a new rate applies to the gap after the last packet too
// (next_tx moves by that packet's time at the new rate minus at the old one), so a window
// update takes effect at the next packet rather than the one after.
void Hca::Impl::retime_pacer(Qp& qp, Rate before, Rate after) {
  if (before.bps == after.bps || engine.now() >= qp.next_tx || qp.paced_bytes == 0) return;
  const Time moved = tx_time(after, qp.paced_bytes) - tx_time(before, qp.paced_bytes);
  qp.next_tx += moved;
  // An earlier send time needs an earlier wake-up: handle_response kicks the QP after this,
  // and pace_hold arms the wake-up again at the new time.
  if (moved < 0 && engine.is_pending(qp.pace_wake)) {
    engine.cancel(qp.pace_wake);
    qp.pace_wake = EventId{};
  }
}

uint64_t Hca::Impl::inflight_cap(const Qp& qp) const {
  if (!qp.cc || qp.init.type != QpType::RC || qp.tcp ||
      config.link_layer != net::LinkLayer::RoCEv2)
    return 0;
  return qp.cc->inflight_cap();
}

// The HPCC simulator's IsWinBound: a new packet goes while the bytes in flight are below W,
// so after it they are below W + its own bytes.
bool Hca::Impl::window_open(const Qp& qp) const {
  const uint64_t cap = inflight_cap(qp);
  return cap == 0 || qp.flight_bytes < cap;
}

void Hca::Impl::flight_sent(Qp& qp, const RdmaPacket& p) {
  const uint32_t psn = p.bth.psn;
  if (!qp.flight.empty() && psn_diff(psn, qp.flight.back().psn) <= 0) {
    if (irn(qp)) return;  // an IRN resend of a packet still counted
    flight_rewind(qp, psn);
  }
  qp.flight.push_back({psn, p.wire_bytes});
  qp.flight_bytes += p.wire_bytes;
}

void Hca::Impl::flight_acked(Qp& qp) {
  while (!qp.flight.empty() && psn_diff(qp.flight.front().psn, qp.acked_psn) <= 0) {
    qp.flight_bytes -= qp.flight.front().bytes;
    qp.flight.pop_front();
  }
}

void Hca::Impl::flight_rewind(Qp& qp, uint32_t psn) {
  while (!qp.flight.empty() && psn_diff(qp.flight.back().psn, psn) >= 0) {
    qp.flight_bytes -= qp.flight.back().bytes;
    qp.flight.pop_back();
  }
}

// The log stays in PSN order: a retransmission of PSN n (n at or before the highest PSN
// logged) replaces the entries from n on, and carries no send time.
void Hca::Impl::log_sent(Qp& qp, const RdmaPacket& p) {
  const uint32_t psn = p.bth.psn;
  Time at = engine.now();
  if (qp.sent_any && psn_diff(psn, qp.sent_hi) <= 0 && irn(qp)) {
    // IRN resends one packet: only its own entry loses its send time (Karn's rule).
    for (size_t i = qp.sent_log.size(); i-- > 0;)
      if (qp.sent_log[i].psn == psn) {
        qp.sent_log[i].at = -1;
        break;
      }
    return;
  }
  if (qp.sent_any && psn_diff(psn, qp.sent_hi) <= 0) {
    while (!qp.sent_log.empty() && psn_diff(qp.sent_log.back().psn, psn) >= 0) qp.sent_log.pop_back();
    at = -1;
  } else {
    qp.sent_hi = psn;
    qp.sent_any = true;
  }
  // READ requests are answered by responses, not ACKs: a log of only them would grow.
  constexpr size_t kMaxLog = 1 << 16;
  if (qp.sent_log.size() >= kMaxLog) qp.sent_log.pop_front();
  qp.sent_log.push_back({psn, at, p.wire_bytes});
}

void Hca::Impl::notify_congestion(Qp& qp, const RdmaPacket& p) {
  if (config.cc.algorithm == CcAlgorithm::Dctcp) {
    if (!ibta::info(p.bth.opcode).is_response()) qp.ce_since_ack++;
    return;
  }
  if (config.cc.algorithm != CcAlgorithm::Dcqcn || config.link_layer != net::LinkLayer::RoCEv2)
    return;
  const DcqcnParams& d = config.cc.dcqcn;
  const Time now = engine.now();
  if (qp.last_cnp >= 0 && now - qp.last_cnp < d.cnp_interval) return;
  const uint32_t dest = qp.init.type == QpType::UD ? p.deth.src_qp : qp.attr.dest_qp_num;
  AddressVector av;
  av.is_global = true;
  av.dgid = p.sgid;
  av.traffic_class = static_cast<uint8_t>(d.cnp_dscp << 2);
  RdmaPacketPtr cnp = new_packet(qp, av, dest, ibta::kRoceCnp, 0);
  cnp->kind = net::PacketKind::Cnp;
  cnp->dst = p.src;
  cnp->priority = d.cnp_priority & 7;
  cnp->dscp = d.cnp_dscp;
  // RoCEv2 CNP (IBTA annex A17): BTH with opcode 0x81, then 16 reserved bytes, then ICRC.
  // The reserved bytes are sized but carry no buffer: a packet without one reads as zeros.
  cnp->payload_len = 16;
  finish_packet(*cnp);
  qp.last_cnp = now;
  counters.cnps_sent++;
  if (!port_active) return;
  counters.tx_packets++;
  counters.tx_bytes += cnp->wire_bytes;
  port.send(std::move(cnp));
}

void Hca::Impl::receive_cnp(const RdmaPacket& p) {
  counters.cnps_received++;
  auto it = qps.find(p.bth.dest_qp);
  if (it == qps.end()) return;
  CongestionControl& cc = cc_of(*it->second);
  const uint64_t cuts = cc.stats().rate_cuts;
  cc.on_cnp();
  counters.rate_cuts += cc.stats().rate_cuts - cuts;
}

void Hca::Impl::echo_int(RdmaPacket& ack) const {
  if (!rx_pkt || !rx_pkt->int_request) return;
  ack.int_echo = rx_pkt->int_hops;
  ack.wire_bytes += kIntHeaderBytes;
  ack.frame_bytes += kIntHeaderBytes;
}

void Hca::Impl::stamp_ack(Qp& qp, RdmaPacket& ack) {
  const CcAlgorithm a = config.cc.algorithm;
  if (a != CcAlgorithm::Timely && a != CcAlgorithm::Swift && a != CcAlgorithm::Dctcp) return;
  if (rx_pkt) ack.ack_delay = engine.now() - rx_pkt->nic_rx_at;
  ack.ce_echo = qp.ce_since_ack;
  qp.ce_since_ack = 0;
}

void Hca::Impl::cc_ack(Qp& qp, const RdmaPacket& ack) {
  if (!qp.cc) return;
  CongestionControl& cc = *qp.cc;
  const uint64_t cuts = cc.stats().rate_cuts;
  // snd_nxt: after the last packet sent (qp.next_psn runs ahead: PSNs are given per WQE).
  const uint32_t snd_nxt = qp.any_sent ? qp.sent_end : qp.next_psn;
  if (!ack.int_echo.empty()) {
    const Rate before = cc.current_rate();
    cc.on_ack(ack.bth.psn, snd_nxt, ack.int_echo);
    retime_pacer(qp, before, cc.current_rate());
  }
  if (cc.wants_ack_samples()) {
    AckSample s;
    s.ack_psn = ack.bth.psn;
    s.snd_nxt = psn_add(qp.sent_hi, 1);  // qp.next_psn runs ahead: PSNs are given per WQE
    s.ce_packets = ack.ce_echo;
    while (!qp.sent_log.empty() && psn_diff(qp.sent_log.front().psn, ack.bth.psn) <= 0) {
      const Qp::SentPacket& e = qp.sent_log.front();
      s.acked_bytes += e.bytes;
      s.acked_packets++;
      if (e.psn == ack.bth.psn && e.at >= 0) s.rtt = engine.now() - e.at;
      qp.sent_log.pop_front();
    }
    if (s.rtt >= 0 && ack.ack_delay >= 0)
      s.endpoint_delay = ack.ack_delay + (engine.now() - ack.nic_rx_at);
    if (s.acked_packets > 0) cc.on_ack_sample(s);
  }
  counters.rate_cuts += cc.stats().rate_cuts - cuts;
}

std::vector<QpCcReport> Hca::cc_report() const {
  std::vector<QpCcReport> out;
  for (const auto& [qpn, qp] : impl_->qps) {
    if (!qp->cc) continue;
    const CongestionControl& cc = *qp->cc;
    out.push_back({qpn, cc.algorithm(), cc.current_rate(), cc.target_rate(), cc.alpha(),
                   cc.window_bytes(), qp->flight_bytes, cc.last_rtt(), cc.stats(), cc.samples()});
  }
  return out;
}

}  // namespace rdmasim::nic
