// The requester side of the transport: segmentation, transmission round robin, ACK/NAK
// and response handling, the local ACK timer, go-back-N and RNR back-off.
#include <algorithm>

#include "sim/nic/hca_impl.h"

namespace rdmasim::nic {
namespace {

bool is_read_response(uint8_t opcode) { return ibta::info(opcode).op == ibta::Op::ReadResponse; }

// The operation bits of packet `first`/`last` of a SEND or RDMA WRITE message.
uint8_t message_operation(bool write, bool first, bool last, bool imm, bool inv) {
  if (write) {
    if (first) return last ? (imm ? ibta::kWriteOnlyImm : ibta::kWriteOnly) : ibta::kWriteFirst;
    return last ? (imm ? ibta::kWriteLastImm : ibta::kWriteLast) : ibta::kWriteMiddle;
  }
  if (first && last) return inv ? ibta::kSendOnlyInv : imm ? ibta::kSendOnlyImm : ibta::kSendOnly;
  if (first) return ibta::kSendFirst;
  return last ? (inv ? ibta::kSendLastInv : imm ? ibta::kSendLastImm : ibta::kSendLast)
              : ibta::kSendMiddle;
}

}  // namespace

const AddressVector& Hca::Impl::tx_av(const Qp& qp) const {
  if (qp.init.type == QpType::UD && qp.tx_wqe < qp.sq.size()) return qp.sq[qp.tx_wqe].wr.av;
  return qp.attr.ah_attr;
}

bool Hca::Impl::outstanding(const Qp& qp) const {
  return std::any_of(qp.sq.begin(), qp.sq.end(),
                     [](const SendWqe& w) { return w.started && !w.done; });
}

bool Hca::Impl::has_tx_work(const Qp& qp) const {
  if (!qp.resp_queue.empty()) return true;
  const QpState st = qp.attr.qp_state;
  if ((st != QpState::Rts && st != QpState::Sqd) || engine.is_pending(qp.rnr_wait)) return false;
  if (irn(qp) && irn_has_retx(qp)) return true;
  return has_new_work(qp);
}

bool Hca::Impl::has_new_work(const Qp& qp) const {
  const QpState st = qp.attr.qp_state;
  if (st != QpState::Rts && st != QpState::Sqd) return false;
  if (qp.tx_wqe >= qp.sq.size() || !qp.sq[qp.tx_wqe].eligible) return false;
  const SendWqe& w = qp.sq[qp.tx_wqe];
  if (st == QpState::Sqd && !w.started) return false;  // draining: nothing new starts
  if (reliable(qp.init.type) && w.is_read_or_atomic()) {
    // At most max_rd_atomic READ/atomic requests outstanding (the peer's responder limit).
    size_t n = 0;
    for (size_t i = 0; i < qp.tx_wqe; ++i)
      if (qp.sq[i].is_read_or_atomic() && !qp.sq[i].done) ++n;
    if (n >= std::max<uint32_t>(qp.attr.max_rd_atomic, 1)) return false;
  }
  if (irn(qp) && !w.is_local_op() && !irn_window_open(qp)) return false;
  if (!w.is_local_op() && !window_open(qp)) return false;  // HPCC: bytes in flight < W
  return true;
}

void Hca::Impl::kick(Qp& qp) {
  if (!qp.in_active && wants_tx(qp)) {
    qp.in_active = true;
    active.push_back(qp.qpn);
  }
  pump();
}

void Hca::Impl::pump() {
  if (pumping) {
    pump_again = true;
    return;
  }
  pumping = true;
  do {
    pump_again = false;
    size_t blocked = 0;  // consecutive QPs whose priority the port refused
    while (!active.empty() && blocked < active.size()) {
      const uint32_t qpn = active.front();
      active.pop_front();
      auto it = qps.find(qpn);
      if (it == qps.end()) continue;
      Qp& qp = *it->second;
      if (!wants_tx(qp)) {
        qp.in_active = false;
        continue;
      }
      // Congestion control paces a QP's requests and its RDMA READ response packets (the
      // responder's data; the requester's CNPs for CE-marked responses cut this QP's rate),
      // not ACKs. iWARP: TCP windows, no pacer.
      const bool request = qp.resp_queue.empty() && !qp.tcp;
      const bool paced = request || (!qp.tcp && !qp.resp_queue.empty() &&
                                     is_read_response(qp.resp_queue.front()->bth.opcode));
      if (paced && pace_hold(qp)) continue;  // not yet its send time
      if (dma_hold(qp)) continue;            // its payload is still crossing PCIe
      const uint8_t prio = !qp.resp_queue.empty() ? qp.resp_queue.front()->priority
                                                   : priority_of(tx_av(qp));
      active.push_back(qpn);
      if (port_active && !port.ready(prio)) {
        ++blocked;
        continue;
      }
      blocked = 0;
      RdmaPacketPtr p;
      if (qp.tcp) {
        p = iwarp_next(qp);  // iWARP: TCP decides what goes next
      } else if (!qp.resp_queue.empty()) {
        p = pop_response(qp);
      } else {
        p = next_request(qp);
      }
      if (!p) continue;
      if (paced) paced_sent(qp, *p);
      if (!port_active) continue;  // a down port loses what the NIC sends (RC then times out)
      counters.tx_packets++;
      counters.tx_bytes += p->wire_bytes;
      port.send(std::move(p));
    }
  } while (pump_again);
  pumping = false;
}

// Builds the next packet of sq[tx_wqe] and advances the cursor. Returns null when the WQE
// failed locally (it is then completed with an error and the QP is in ERR).
RdmaPacketPtr Hca::Impl::next_request(Qp& qp) {
  if (irn(qp)) {  // IRN: lost packets go first, then new ones as BDP-FC allows
    if (RdmaPacketPtr p = irn_retransmit(qp)) return p;
    if (!has_new_work(qp)) return nullptr;
  }
  SendWqe& w = qp.sq[qp.tx_wqe];
  const WrOpcode op = w.wr.opcode;
  const bool rc = reliable(qp.init.type);
  const uint32_t mtu = qp.mtu;
  if (w.is_local_op()) {
    // BIND_MW / LOCAL_INV run in the NIC when the send queue reaches them, once (a
    // go-back-N over an executed one skips it); they take no PSN and send nothing.
    if (!w.started) {
      w.started = true;
      w.first_psn = qp.next_psn;
      w.npsn = 0;
      const WcStatus st = op == WrOpcode::BindMw ? bind_mw(qp, w) : local_inv(qp, w.wr.invalidate_rkey);
      if (st != WcStatus::Success) {
        fail_wqe(qp, qp.tx_wqe, st);
        return nullptr;
      }
      w.done = true;
    }
    qp.tx_wqe++;
    complete_acked(qp);
    return nullptr;
  }
  if (!w.started) {
    // First transmission: check local buffers, gather the data, assign PSNs.
    WcStatus err = WcStatus::Success;
    if (w.is_read_or_atomic()) {
      uint64_t room = 0;
      for (const Sge& s : w.wr.sgl) {
        if (s.length && !check_local(qp.init.pd, s, kAccessLocalWrite)) err = WcStatus::LocProtErr;
        room += s.length;
      }
      if (err == WcStatus::Success && w.wr.opcode != WrOpcode::RdmaRead && room < 8)
        err = WcStatus::LocLenErr;
    } else {
      if (w.wr.send_flags & kSendInline) {
        w.data = std::make_shared<net::Bytes>(w.wr.inline_data.begin(), w.wr.inline_data.end());
      } else if (!start_gather(qp.init.pd, w)) {
        err = WcStatus::LocProtErr;
      }
    }
    if (qp.init.type == QpType::UD && w.length > mtu) err = WcStatus::LocLenErr;
    if (err != WcStatus::Success) {
      fail_wqe(qp, qp.tx_wqe, err);
      return nullptr;
    }
    w.started = true;
    w.first_psn = qp.next_psn;
    w.npsn = (op == WrOpcode::AtomicCmpAndSwp || op == WrOpcode::AtomicFetchAndAdd)
                 ? 1
                 : std::max<uint32_t>(1, (w.length + mtu - 1) / mtu);
    qp.next_psn = psn_add(qp.next_psn, w.npsn);
  }
  const bool last = w.is_read_or_atomic() || qp.tx_pkt + 1 == w.npsn;
  RdmaPacketPtr p = build_request(qp, qp.tx_wqe, qp.tx_pkt, false);
  if (!p) return nullptr;
  if (last) {
    qp.tx_pkt = 0;
    qp.tx_wqe++;
    if (!rc) {  // UC and UD complete once the last packet leaves
      w.done = true;
      complete_acked(qp);
    }
  } else {
    qp.tx_pkt++;
  }
  if (rc) arm_ack_timer(qp);
  return p;
}

RdmaPacketPtr Hca::Impl::build_request(Qp& qp, size_t i, uint32_t k, bool retx) {
  SendWqe& w = qp.sq[i];
  const WrOpcode op = w.wr.opcode;
  const bool rc = reliable(qp.init.type);
  const uint32_t mtu = qp.mtu;
  const uint32_t psn = psn_add(w.first_psn, k);
  if (retx || psn_diff(psn, qp.retx_end) < 0) counters.retransmitted_packets++;
  // A READ request covers its whole response range.
  const uint32_t end = op == WrOpcode::RdmaRead ? psn_add(w.last_psn(), 1) : psn_add(psn, 1);
  if (!qp.any_sent || psn_diff(end, qp.sent_end) > 0) qp.sent_end = end;
  qp.any_sent = true;
  const uint8_t tb = transport_bits(qp.init.type);
  const uint32_t dest = qp.init.type == QpType::UD ? w.wr.remote_qpn : qp.attr.dest_qp_num;
  RdmaPacketPtr p;
  bool last = false;
  if (op == WrOpcode::RdmaRead) {
    // One request for the rest of the read; a resumed read starts at the PSN it resumes.
    const uint32_t off = k * mtu;
    p = new_packet(qp, tx_av(qp), dest, tb | ibta::kReadRequest, psn);
    p->reth = {w.wr.remote_addr + off, w.wr.rkey, w.length - std::min(off, w.length)};
    last = true;
  } else if (op == WrOpcode::AtomicCmpAndSwp || op == WrOpcode::AtomicFetchAndAdd) {
    const uint8_t atomic = op == WrOpcode::AtomicCmpAndSwp ? ibta::kCompareSwap : ibta::kFetchAdd;
    p = new_packet(qp, tx_av(qp), dest, tb | atomic, psn);
    p->atomic.va = w.wr.remote_addr;
    p->atomic.rkey = w.wr.rkey;
    if (op == WrOpcode::AtomicCmpAndSwp) {
      p->atomic.compare = w.wr.compare_add;
      p->atomic.swap_add = w.wr.swap;
    } else {
      p->atomic.swap_add = w.wr.compare_add;
    }
    last = true;
  } else {
    const bool write = op == WrOpcode::RdmaWrite || op == WrOpcode::RdmaWriteWithImm;
    const bool imm = op == WrOpcode::RdmaWriteWithImm || op == WrOpcode::SendWithImm;
    const bool inv = op == WrOpcode::SendWithInv;
    const uint32_t off = k * mtu;
    const uint32_t len = std::min(mtu, w.length - std::min(off, w.length));
    const bool first = k == 0;
    last = k + 1 == w.npsn;
    net::Packet bytes;
    if (w.gather_by_packet) {
      // This packet's bytes, read from the MRs now (an MR deregistered since the WQE
      // started fails it as hardware's DMA read would: local protection error).
      if (!packet_bytes(qp, w, off, len, bytes)) {
        fail_wqe(qp, i, WcStatus::LocProtErr);
        return nullptr;
      }
    } else {
      bytes.payload = w.data;
      bytes.payload_offset = off;
    }
    // The opcode's headers (new_packet sets them from the table): RETH on a WRITE's first
    // packet, ImmDt or IETH on the last.
    p = new_packet(qp, tx_av(qp), dest, tb | message_operation(write, first, last, imm, inv), psn);
    if (write && first) p->reth = {w.wr.remote_addr, w.wr.rkey, w.length};
    if (imm && last) p->imm = w.wr.imm_data;
    if (inv && last) p->ieth_rkey = w.wr.invalidate_rkey;
    if (qp.init.type == QpType::UD) {
      // A Q_Key with the high bit set means "use the QP's own Q_Key" (IBTA 10.2.5).
      p->deth.qkey = (w.wr.remote_qkey & 0x80000000u) ? qp.attr.qkey : w.wr.remote_qkey;
      p->deth.src_qp = qp.qpn;
      if (config.link_layer == net::LinkLayer::InfiniBand && !w.wr.av.is_global)
        p->headers &= static_cast<uint16_t>(~net::kHasGrh);
    }
    p->payload = std::move(bytes.payload);
    p->held = std::move(bytes.held);
    p->payload_offset = bytes.payload_offset;
    p->payload_len = len;
    p->bth.solicited = last && (w.wr.send_flags & kSendSolicited);
  }
  // ACK request: on the last packet of a message and every ack_every packets within it;
  // an IRN resend asks for one, so that the ACK of the filled gap comes at once, and with
  // BDP-FC every half window at most, so that ACKs reopen the window before it closes.
  uint32_t every = std::max<uint32_t>(config.ack_every, 1);
  if (irn(qp) && config.loss_recovery.bdp_packets)
    every = std::min(every, std::max<uint32_t>(config.loss_recovery.bdp_packets / 2, 1));
  p->bth.ack_req = rc && (retx || last || (k + 1) % every == 0);
  if (qp.init.type == QpType::XrcSend) p->xrc_srqn = w.wr.xrc_srqn & 0xffffff;
  finish_packet(*p);
  if (irn(qp) && (op == WrOpcode::RdmaWrite || op == WrOpcode::RdmaWriteWithImm) && k > 0) {
    // IRN places out-of-order WRITE packets directly: each carries a RETH (16 B).
    p->wire_bytes += ibta::kRethBytes;
    p->frame_bytes += ibta::kRethBytes;
  }
  return p;
}

void Hca::Impl::arm_ack_timer(Qp& qp) {
  if (qp.attr.timeout == 0 || qp.tcp) {  // infinite; iWARP: TCP retransmits
    engine.cancel(qp.ack_timer);
    qp.ack_timer = EventId{};
    return;
  }
  qp.ack_deadline = engine.now() + (irn(qp) ? irn_rto(qp) : ack_timeout(qp.attr.timeout));
  if (qp.ack_timer && qp.ack_timer_at <= qp.ack_deadline) return;  // fires early, re-arms
  engine.cancel(qp.ack_timer);
  const uint32_t qpn = qp.qpn;
  qp.ack_timer_at = qp.ack_deadline;
  qp.ack_timer = later(qp.ack_deadline - engine.now(), [this, qpn] { on_ack_timeout(qpn); });
}

void Hca::Impl::on_ack_timeout(uint32_t qpn) {
  auto it = qps.find(qpn);
  if (it == qps.end()) return;
  Qp& qp = *it->second;
  qp.ack_timer = EventId{};
  if (engine.now() < qp.ack_deadline) {  // re-armed since this event was scheduled
    qp.ack_timer_at = qp.ack_deadline;
    qp.ack_timer = later(qp.ack_deadline - engine.now(), [this, qpn] { on_ack_timeout(qpn); });
    return;
  }
  if ((qp.attr.qp_state != QpState::Rts && qp.attr.qp_state != QpState::Sqd) || !outstanding(qp))
    return;
  counters.timeouts++;
  size_t i = 0;
  while (i < qp.sq.size() && qp.sq[i].done) ++i;
  if (qp.retries_left <= 0) {
    fail_wqe(qp, i, WcStatus::RetryExcErr);
    return;
  }
  qp.retries_left--;
  if (irn(qp)) return irn_on_timeout(qp);  // resend what was neither ACKed nor SACKed
  const SendWqe& w = qp.sq[i];
  uint32_t psn = w.first_psn;
  if (w.wr.opcode == WrOpcode::RdmaRead) {
    psn = psn_add(w.first_psn, w.resp_received / qp.mtu);
  } else if (!w.is_read_or_atomic() && psn_diff(qp.acked_psn, w.first_psn) >= 0) {
    psn = psn_add(qp.acked_psn, 1);
  }
  go_back(qp, psn);
}

void Hca::Impl::go_back(Qp& qp, uint32_t psn) {
  if (irn(qp)) irn_clear(qp);  // IRN after an RNR NAK: everything from psn goes again
  for (size_t i = 0; i < qp.sq.size(); ++i) {
    const SendWqe& w = qp.sq[i];
    if (!w.started) break;
    if (psn_diff(psn, w.first_psn) >= 0 && psn_diff(psn, w.last_psn()) <= 0) {
      // Only PSNs already transmitted are resent: the rest of a WQE that had not left yet
      // goes out for the first time.
      if (qp.any_sent && psn_diff(qp.sent_end, qp.retx_end) > 0) qp.retx_end = qp.sent_end;
      flight_rewind(qp, psn);
      qp.tx_wqe = i;
      qp.tx_pkt = static_cast<uint32_t>(psn_diff(psn, w.first_psn));
      kick(qp);
      return;
    }
  }
}

bool Hca::Impl::ack_upto(Qp& qp, uint32_t psn) {
  if (psn_diff(psn, qp.next_psn) >= 0) return false;  // acknowledges nothing we sent
  bool progress = psn_diff(psn, qp.acked_psn) > 0;
  if (progress) qp.acked_psn = psn;
  if (progress && irn(qp)) irn_on_acked(qp);
  if (progress) flight_acked(qp);
  for (SendWqe& w : qp.sq) {
    if (!w.started) break;
    if (!w.done && !w.is_read_or_atomic() && psn_diff(w.last_psn(), psn) <= 0) w.done = true;
  }
  return progress;
}

void Hca::Impl::handle_response(Qp& qp, RdmaPacket& p) {
  if (qp.attr.qp_state != QpState::Rts && qp.attr.qp_state != QpState::Sqd) return;
  const ibta::Opcode& op = ibta::info(p.bth.opcode);
  const uint32_t psn = p.bth.psn;
  bool progress = false;
  // The WQE whose PSN range holds psn.
  auto find = [&]() -> size_t {
    for (size_t i = 0; i < qp.sq.size() && qp.sq[i].started; ++i)
      if (psn_diff(psn, qp.sq[i].first_psn) >= 0 && psn_diff(psn, qp.sq[i].last_psn()) <= 0)
        return i;
    return qp.sq.size();
  };
  if (op.op == ibta::Op::ReadResponse) {
    progress = ack_upto(qp, psn_add(psn, -1));
    const size_t i = find();
    if (i == qp.sq.size()) return;
    SendWqe& w = qp.sq[i];
    if (w.wr.opcode != WrOpcode::RdmaRead || w.done) return;
    // Only the next expected response packet is accepted; others wait for a re-read (IRN
    // asks for it at once).
    const uint32_t expected = psn_add(w.first_psn, w.resp_received / qp.mtu);
    const bool reorder = irn(qp) && !config.loss_recovery.nack_gaps;
    if (psn != expected) {
      if (reorder && psn_diff(psn, expected) > 0) {
        if (!irn_read_ahead(qp, i, p)) return;
      } else {
        if (irn(qp) && psn_diff(psn, expected) > 0) irn_on_read_gap(qp, w, expected);
        return;
      }
    } else {
      if (!scatter(qp.init.pd, w.wr.sgl, w.resp_received, p.payload_data(), p.payload_len)) {
        fail_wqe(qp, i, WcStatus::LocProtErr);
        return;
      }
      pcie_placed(qp.qpn, p.payload_len);
      w.resp_received += p.payload_len;
      if (reorder) irn_read_catch_up(qp, w);
    }
    progress = true;
    if (psn == expected && op.ends_message()) {
      w.done = true;
      ack_upto(qp, psn);
    } else if (reorder && w.read_ahead.empty() && w.resp_received == w.length) {
      w.done = true;  // the last gap filled
      ack_upto(qp, w.last_psn());
    }
  } else if (op.op == ibta::Op::AtomicAck) {
    progress = ack_upto(qp, psn_add(psn, -1));
    const size_t i = find();
    if (i == qp.sq.size()) return;
    SendWqe& w = qp.sq[i];
    if (!w.is_read_or_atomic() || w.wr.opcode == WrOpcode::RdmaRead || w.done) return;
    const uint64_t orig = p.atomic_ack_orig;  // host order, as the verbs user reads it
    if (!scatter(qp.init.pd, w.wr.sgl, 0, reinterpret_cast<const uint8_t*>(&orig), 8)) {
      fail_wqe(qp, i, WcStatus::LocProtErr);
      return;
    }
    pcie_placed(qp.qpn, 8);
    w.done = true;
    ack_upto(qp, psn);
    progress = true;
  } else if (op.op == ibta::Op::Ack) {  // ACK, RNR NAK or NAK by AETH syndrome
    const uint8_t kind = p.aeth.syndrome >> 5;
    const uint8_t code = p.aeth.syndrome & 0x1f;
    if (kind == 0) {
      progress = ack_upto(qp, psn);
      cc_ack(qp, p);
    } else if (kind == 1) {  // RNR NAK: psn is the request the responder had no WQE for
      progress = ack_upto(qp, psn_add(psn, -1));
      const size_t i = find();
      if (i == qp.sq.size()) return;
      if (qp.attr.rnr_retry != 7) {  // 7 means retry forever
        if (qp.rnr_retries_left <= 0) {
          complete_acked(qp);
          fail_wqe(qp, find(), WcStatus::RnrRetryExcErr);
          return;
        }
        qp.rnr_retries_left--;
      }
      engine.cancel(qp.ack_timer);
      qp.ack_timer = EventId{};
      const uint32_t qpn = qp.qpn;
      qp.rnr_wait = later(rnr_timer(code), [this, qpn, psn] {
        auto q = qps.find(qpn);
        if (q == qps.end()) return;
        q->second->rnr_wait = EventId{};
        go_back(*q->second, psn);
        kick(*q->second);
      });
      complete_acked(qp);
      return;
    } else if (kind == 3) {
      progress = ack_upto(qp, psn_add(psn, -1));
      if (code == 0 && irn(qp)) {  // IRN NACK: psn is cumulative, sack_psn selective
        counters.out_of_sequence++;
        irn_on_nack(qp, p);
      } else if (code == 0) {  // PSN sequence error: resend from psn
        counters.out_of_sequence++;
        if (qp.retries_left <= 0) {
          complete_acked(qp);
          fail_wqe(qp, find(), WcStatus::RetryExcErr);
          return;
        }
        qp.retries_left--;
        go_back(qp, psn);
      } else {
        const WcStatus st = code == 1   ? WcStatus::RemInvReqErr
                            : code == 2 ? WcStatus::RemAccessErr
                                        : WcStatus::RemOpErr;
        complete_acked(qp);
        fail_wqe(qp, find(), st);
        return;
      }
    }
  }
  if (progress) {
    qp.retries_left = qp.attr.retry_cnt;
    qp.rnr_retries_left = qp.attr.rnr_retry;
  }
  complete_acked(qp);
  if (qp.attr.qp_state != QpState::Rts && qp.attr.qp_state != QpState::Sqd) return;
  if (outstanding(qp)) {
    if (progress) arm_ack_timer(qp);
  } else {
    engine.cancel(qp.ack_timer);
    qp.ack_timer = EventId{};
  }
  kick(qp);
}

void Hca::Impl::complete_acked(Qp& qp) {
  while (!qp.sq.empty() && qp.sq.front().done) {
    SendWqe w = std::move(qp.sq.front());
    qp.sq.pop_front();
    if (qp.tx_wqe > 0) qp.tx_wqe--;
    complete_send(qp, w, WcStatus::Success);
  }
  check_drained(qp);
}

void Hca::Impl::check_drained(Qp& qp) {
  if (qp.attr.qp_state != QpState::Sqd || !qp.attr.sq_draining || outstanding(qp)) return;
  qp.attr.sq_draining = false;
  if (qp.attr.en_sqd_async_notify && async_sink) {
    AsyncEvent ev;
    ev.type = AsyncEventType::SqDrained;
    ev.qpn = qp.qpn;
    async_sink(ev);
  }
}

void Hca::Impl::fail_wqe(Qp& qp, size_t i, WcStatus status) {
  for (size_t j = 0; j < i && !qp.sq.empty(); ++j) {
    SendWqe w = std::move(qp.sq.front());
    qp.sq.pop_front();
    complete_send(qp, w, w.done ? WcStatus::Success : WcStatus::WrFlushErr);
  }
  if (!qp.sq.empty()) {
    SendWqe w = std::move(qp.sq.front());
    qp.sq.pop_front();
    complete_send(qp, w, status);
  }
  qp.tx_wqe = 0;
  qp.tx_pkt = 0;
  if (reliable(qp.init.type)) {
    enter_error(qp);
  } else {
    enter_sq_error(qp);
  }
}

}  // namespace rdmasim::nic
