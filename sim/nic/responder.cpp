// The responder side of the transport: PSN checks, placing SEND/WRITE data, READ responses,
// atomics (executed once per PSN), ACK coalescing, NAKs, RNR NAKs, and UD receives.
#include <algorithm>

#include "sim/nic/hca_impl.h"

namespace rdmasim::nic {
namespace {

constexpr size_t kAtomicHistory = 64;   // executed atomics remembered for duplicates

// The operation bits of READ response packet k of n.
uint8_t read_response_operation(uint32_t k, uint32_t n) {
  const uint8_t op = n == 1       ? ibta::kReadResponseOnly
                     : k == 0     ? ibta::kReadResponseFirst
                     : k + 1 == n ? ibta::kReadResponseLast
                                  : ibta::kReadResponseMiddle;
  return op;
}

}  // namespace

bool Hca::Impl::take_recv(Qp& qp, RecvWr* wr, uint32_t* srqn) {
  if (const uint32_t srq = recv_srq(qp)) {
    auto it = srqs.find(srq);
    if (it == srqs.end() || it->second.queue.empty()) return false;
    Srq& s = it->second;
    *wr = std::move(s.queue.front());
    s.queue.pop_front();
    *srqn = srq;
    // The limit event fires once when the SRQ drops below srq_limit, then disarms.
    if (s.limit_armed && s.queue.size() < s.attr.srq_limit) {
      s.limit_armed = false;
      if (async_sink) {
        AsyncEvent ev;
        ev.type = AsyncEventType::SrqLimitReached;
        ev.srq = srq;
        async_sink(ev);
      }
    }
    return true;
  }
  if (qp.rq.empty()) return false;
  *wr = std::move(qp.rq.front());
  qp.rq.pop_front();
  *srqn = 0;
  return true;
}

void Hca::Impl::recv_complete(Qp& qp, const RecvWr& wr, uint32_t srqn, WcStatus st,
                              WcOpcode op, uint32_t byte_len, uint32_t imm, uint32_t flags,
                              uint32_t src_qp) {
  Completion c;
  c.wr_id = wr.wr_id;
  c.status = st;
  c.opcode = op;
  c.byte_len = st == WcStatus::Success ? byte_len : 0;
  c.imm_data = imm;
  c.wc_flags = flags;
  c.qp_num = qp.qpn;
  c.src_qp = src_qp;
  c.wqe_index = wr.wqe_index;
  c.srqn = srqn;
  c.solicited = rx_pkt && rx_pkt->bth.solicited;
  if (rx_pkt && rx_pkt->link_layer == net::LinkLayer::InfiniBand) {
    c.slid = static_cast<uint16_t>(rx_pkt->src);
    c.sl = rx_pkt->priority;  // the SL (see priority_of)
  }
  complete(recv_cq(qp, srqn), c);
}

void Hca::Impl::send_ack(Qp& qp, uint8_t syndrome, uint32_t psn, int64_t sack) {
  if (qp.tcp) return iwarp_control(qp, syndrome, psn);
  auto p = new_packet(qp, qp.attr.ah_attr, qp.attr.dest_qp_num,
                      transport_bits(qp.init.type) | ibta::kAcknowledge, psn);
  p->aeth = {syndrome, qp.msn & 0xffffff};
  if (sack >= 0) {
    p->has_sack = true;
    p->sack_psn = static_cast<uint32_t>(sack) & 0xffffff;
  }
  finish_packet(*p);
  echo_int(*p);
  stamp_ack(qp, *p);
  if ((syndrome >> 5) == 0) counters.acks_sent++;
  else if ((syndrome >> 5) == 1) counters.rnr_naks_sent++;
  else counters.naks_sent++;
  counters.tx_packets++;
  counters.tx_bytes += p->wire_bytes;
  qp.since_ack = 0;
  if (port_active) port.send(std::move(p));  // control packets may bypass ready()
}

void Hca::Impl::respond_read(Qp& qp, const RdmaPacket& req, uint32_t psn) {
  const uint32_t len = req.reth.dma_len;
  const uint32_t n = std::max<uint32_t>(1, (len + qp.mtu - 1) / qp.mtu);
  const Mr* mr = len ? check_remote(qp, req.reth.rkey, req.reth.va, len, kAccessRemoteRead)
                     : nullptr;
  // Timing-only memory (timing_memory.h) gives the responses no bytes to carry.
  const bool bytes = len && !is_timing_only(mr->mem);
  std::shared_ptr<net::Bytes> buf;
  if (bytes) buf = std::make_shared<net::Bytes>(len);
  if (bytes && !mr->mem->read(mr->addr + (req.reth.va - mr->iova), buf->data(), len)) {
    // The MR is valid but its memory cannot be read (unmapped after registration): Remote
    // Operational Error, and the responder QP cannot go on (like fatal_nak).
    send_ack(qp, kNakRemOp, psn);
    enter_error(qp);
    qp_event(qp, AsyncEventType::QpFatal);
    return;
  }
  const size_t first_pkt = qp.resp_queue.size();
  for (uint32_t k = 0; k < n; ++k) {
    auto p = new_packet(qp, qp.attr.ah_attr, qp.attr.dest_qp_num, transport_bits(qp.init.type) | read_response_operation(k, n),
                        psn_add(psn, k));
    if (p->headers & net::kHasAeth) p->aeth = {kAckSyndrome, qp.msn & 0xffffff};  // not MIDDLE
    p->payload = buf;
    p->payload_offset = k * qp.mtu;
    p->payload_len = std::min(qp.mtu, len - k * qp.mtu);
    finish_packet(*p);
    qp.resp_queue.push_back(std::move(p));
  }
  pcie_read_response(qp, static_cast<uint32_t>(first_pkt));
  kick(qp);
}

RdmaPacketPtr Hca::Impl::pop_response(Qp& qp) {
  RdmaPacketPtr p = std::move(qp.resp_queue.front());
  qp.resp_queue.pop_front();
  const ibta::Opcode& op = ibta::info(p->bth.opcode);
  // READ RESPONSE LAST/ONLY or ATOMIC ACKNOWLEDGE of the oldest held resource: it is done.
  const bool ends = (op.op == ibta::Op::ReadResponse && op.ends_message()) ||
                    op.op == ibta::Op::AtomicAck;
  if (ends && !qp.rd_atomic_held.empty() &&
      qp.rd_atomic_held.front() == p->bth.psn)
    qp.rd_atomic_held.pop_front();
  return p;
}

void Hca::Impl::handle_request(Qp& qp, RdmaPacket& p) {
  const QpState st = qp.attr.qp_state;
  // SQE (UC only; RC never enters it): the receive side works on (IBTA C10-38).
  if (st != QpState::Rtr && st != QpState::Rts && st != QpState::Sqd && st != QpState::Sqe) return;
  // IBTA 11.6.3: Communication Established, once, for the first packet received in RTR.
  if (st == QpState::Rtr && !qp.comm_est && qp.init.type != QpType::UD) {
    qp.comm_est = true;
    qp_event(qp, AsyncEventType::CommEst);
  }
  const bool rc = reliable(qp.init.type);
  const ibta::Opcode& op = ibta::info(p.bth.opcode);
  const uint32_t psn = p.bth.psn;
  const int32_t d = psn_diff(psn, qp.epsn);
  // XRC target: the request's XRCETH chooses the SRQ and the PD (checked below).
  const bool xrc_ok = qp.init.type != QpType::XrcRecv || xrc_accept(qp, p);
  const uint32_t pd = access_pd(qp);
  // Responder errors (class C, RC): NAK the request and move the QP to ERR.
  // UC has no NAKs: the responder silently drops the rest of the message and stays up.
  // An error not reported through a receive completion is also an affiliated async event
  // of the responder QP (IBTA 11.6.3): Invalid Request -> QP_REQ_ERR, access violation ->
  // QP_ACCESS_ERR (what mlx5 reports for WQ_INVAL_REQ / WQ_ACCESS errors).
  auto fatal_nak = [&](uint8_t syndrome, bool completed = false) {
    if (!rc) {
      qp.in_msg = false;
      qp.epsn = psn_add(psn, 1);
      return;
    }
    send_ack(qp, syndrome, psn);
    enter_error(qp);
    if (!completed)
      qp_event(qp, syndrome == kNakRemAccess ? AsyncEventType::QpAccessErr
                   : syndrome == kNakInvReq  ? AsyncEventType::QpReqErr
                                             : AsyncEventType::QpFatal);
  };
  // RNR NAK: ePSN stays; later packets of the message are dropped without a sequence NAK
  // (nak_sent) until the requester resends from psn after its RNR back-off.
  auto rnr_nak = [&] {
    send_ack(qp, static_cast<uint8_t>(0x20 | (qp.attr.min_rnr_timer & 0x1f)), psn);
    qp.nak_sent = true;
    qp.irn_held.clear();  // IRN: the requester goes back to psn
  };

  if (!xrc_ok) {
    // An XRCETH naming no XRC SRQ of the target's domain: an Invalid Request (a packet out
    // of sequence is dropped; the requester's resend meets this check in order).
    if (d == 0) fatal_nak(kNakInvReq);
    return;
  }
  if (rc && d > 0) {  // a gap: one NAK per expected PSN, then silence until it arrives
    counters.out_of_sequence++;
    if (!qp.nak_sent) {
      qp.nak_sent = true;
      send_ack(qp, kNakSeq, qp.epsn);
    }
    return;
  }
  if (rc && d < 0) {  // a duplicate: answer it without executing anything twice
    counters.duplicates++;
    if (op.op == ibta::Op::ReadRequest) {
      // READs are idempotent: respond again from memory.
      if (check_remote(qp, p.reth.rkey, p.reth.va, p.reth.dma_len, kAccessRemoteRead) ||
          p.reth.dma_len == 0)
        respond_read(qp, p, psn);
    } else if (op.op == ibta::Op::Atomic) {
      auto it = qp.atomic_results.find(psn);
      if (it != qp.atomic_results.end()) {
        auto a = new_packet(qp, qp.attr.ah_attr, qp.attr.dest_qp_num,
                            transport_bits(qp.init.type) | ibta::kAtomicAcknowledge, psn);
        a->aeth = {kAckSyndrome, qp.msn & 0xffffff};
        a->atomic_ack_orig = it->second;
        finish_packet(*a);
        qp.resp_queue.push_back(std::move(a));
        kick(qp);
      }
    } else {
      send_ack(qp, kAckSyndrome, psn_add(qp.epsn, -1));
    }
    return;
  }
  if (!rc && d != 0) {  // UC: a lost packet breaks the message; resync at a first/only
    counters.out_of_sequence++;
    flush_write(qp);  // what arrived before the loss stays placed
    if (qp.in_msg && qp.msg_is_send && !qp.cur_srq) qp.rq.push_front(qp.cur_recv);
    qp.in_msg = false;
    if (!op.starts_message()) {
      qp.epsn = psn_add(psn, 1);
      return;
    }
    qp.epsn = psn;
  }
  if (!rc && !op.starts_message() && !qp.in_msg) {  // rest of a dropped UC message
    qp.epsn = psn_add(psn, 1);
    return;
  }

  const bool inv = rc && op.invalidate;  // SEND LAST/ONLY with Invalidate
  const bool send = op.op == ibta::Op::Send && (!op.invalidate || inv);
  const bool write = op.op == ibta::Op::Write;
  if (op.op == ibta::Op::ReadRequest || op.op == ibta::Op::Atomic) {
    if (!rc) return;
    // Responder resources: a requester with more READ/atomic requests outstanding than the
    // max_dest_rd_atomic it was told about breaks the protocol. Treated as an Invalid
    // Request (class C: NAK, responder QP to ERR) as rxe does (RESPST_ERR_TOO_MANY_RDMA_ATM_REQ);
    // mlx5 fails such operations too. The IBTA compliance statement for it (chapter 9,
    // responder resources) could not be quoted from the sources at hand.
    if (qp.rd_atomic_held.size() >= qp.attr.max_dest_rd_atomic) {
      fatal_nak(kNakInvReq);
      return;
    }
    if (op.op == ibta::Op::ReadRequest) {
      const uint32_t len = p.reth.dma_len;
      if (!(qp.attr.qp_access_flags & kAccessRemoteRead) ||
          (len && !check_remote(qp, p.reth.rkey, p.reth.va, len, kAccessRemoteRead))) {
        fatal_nak(kNakRemAccess);
        return;
      }
      qp.msn++;
      qp.nak_sent = false;
      const uint32_t n = std::max<uint32_t>(1, (len + qp.mtu - 1) / qp.mtu);
      qp.rd_atomic_held.push_back(psn_add(psn, n - 1));
      respond_read(qp, p, psn);
      qp.epsn = psn_add(psn, n);
      return;
    }
    if (p.atomic.va % 8) {
      fatal_nak(kNakInvReq);
      return;
    }
    const Mr* mr = check_remote(qp, p.atomic.rkey, p.atomic.va, 8, kAccessRemoteAtomic);
    if (!(qp.attr.qp_access_flags & kAccessRemoteAtomic) || !mr) {
      fatal_nak(kNakRemAccess);
      return;
    }
    const uint64_t at = mr->addr + (p.atomic.va - mr->iova);
    uint64_t orig = 0;
    if (!mr->mem->read(at, &orig, 8)) {
      fatal_nak(kNakRemOp);
      return;
    }
    uint64_t val = orig;
    if ((op.code & ibta::kOperationMask) == ibta::kCompareSwap) {
      if (orig == p.atomic.compare) val = p.atomic.swap_add;
    } else {
      val = orig + p.atomic.swap_add;
    }
    if (val != orig && !mr->mem->write(at, &val, 8)) {
      fatal_nak(kNakRemOp);
      return;
    }
    qp.atomic_results[psn] = orig;
    if (qp.atomic_results.size() > kAtomicHistory) qp.atomic_results.erase(qp.atomic_results.begin());
    qp.msn++;
    qp.nak_sent = false;
    qp.epsn = psn_add(psn, 1);
    qp.rd_atomic_held.push_back(psn);
    auto a = new_packet(qp, qp.attr.ah_attr, qp.attr.dest_qp_num,
                        transport_bits(qp.init.type) | ibta::kAtomicAcknowledge, psn);
    a->aeth = {kAckSyndrome, qp.msn & 0xffffff};
    a->atomic_ack_orig = orig;
    finish_packet(*a);
    qp.resp_queue.push_back(std::move(a));
    kick(qp);
    return;
  }
  if (!send && !write) {
    if (rc) fatal_nak(kNakInvReq);
    return;
  }
  // Opcode sequence: FIRST/ONLY start a message, MIDDLE/LAST continue one.
  const bool first = op.starts_message();
  const bool last = op.ends_message();
  if (first == qp.in_msg) {
    if (rc) fatal_nak(kNakInvReq);
    return;
  }
  const bool imm = op.immediate;
  const uint8_t* data = p.payload_data();
  const uint32_t len = p.payload_len;

  if (send) {
    if (first) {
      if (!take_recv(qp, &qp.cur_recv, &qp.cur_srq)) {
        if (rc) {
          rnr_nak();
        } else {
          qp.epsn = psn_add(psn, 1);  // UC: the message is dropped
        }
        return;
      }
      qp.in_msg = true;
      qp.msg_is_send = true;
      qp.msg_bytes = 0;
    }
    if (!scatter(pd, qp.cur_recv.sgl, qp.msg_bytes, data, len)) {
      uint64_t room = 0;
      for (const Sge& s : qp.cur_recv.sgl) room += s.length;
      const WcStatus err = qp.msg_bytes + len > room ? WcStatus::LocLenErr : WcStatus::LocProtErr;
      recv_complete(qp, qp.cur_recv, qp.cur_srq, err, WcOpcode::Recv, 0, 0, 0, qp.attr.dest_qp_num);
      qp.in_msg = false;
      fatal_nak(kNakInvReq, true);
      return;
    }
    pcie_placed(qp.qpn, len);
    qp.msg_bytes += len;
    if (last && inv && !remote_inv(qp, p.ieth_rkey)) {
      // The IETH names no type 2 window bound to this QP: IBTA class J. The receive
      // completes in error (REM_INV_REQ_ERR, as rxe reports it), the requester gets NAK
      // Invalid Request and the responder QP goes to ERR.
      qp.in_msg = false;
      recv_complete(qp, qp.cur_recv, qp.cur_srq, WcStatus::RemInvReqErr, WcOpcode::Recv, 0, 0, 0,
                    qp.attr.dest_qp_num);
      fatal_nak(kNakInvReq, true);
      return;
    }
    if (last) {
      qp.in_msg = false;
      qp.msn++;
      // With invalidate: wc.invalidated_rkey (host order) shares imm_data's place.
      const uint32_t flags = imm ? uint32_t{kWcWithImm} : inv ? uint32_t{kWcWithInv} : 0u;
      recv_complete(qp, qp.cur_recv, qp.cur_srq, WcStatus::Success, WcOpcode::Recv,
                    qp.msg_bytes, imm ? p.imm : inv ? p.ieth_rkey : 0, flags, qp.attr.dest_qp_num);
    }
  } else {  // RDMA WRITE
    if (first) {
      const uint32_t dlen = p.reth.dma_len;
      if (!(qp.attr.qp_access_flags & kAccessRemoteWrite) ||
          (dlen && !check_remote(qp, p.reth.rkey, p.reth.va, dlen, kAccessRemoteWrite))) {
        fatal_nak(kNakRemAccess);
        return;
      }
      qp.in_msg = true;
      qp.msg_is_send = false;
      qp.msg_bytes = 0;
      qp.write_va = p.reth.va;
      qp.write_rkey = p.reth.rkey;
      qp.write_len = dlen;
    }
    if (qp.msg_bytes + len > qp.write_len) {
      fatal_nak(kNakInvReq);
      return;
    }
    // WRITE WITH IMM consumes a receive WQE: without one, RNR before placing the data.
    RecvWr rwr;
    uint32_t srqn = 0;
    if (imm && !take_recv(qp, &rwr, &srqn)) {
      if (rc) {
        rnr_nak();
      } else {
        qp.in_msg = false;
        qp.epsn = psn_add(psn, 1);
      }
      return;
    }
    if (len) {
      const Mr* mr = check_remote(qp, qp.write_rkey, qp.write_va + qp.msg_bytes, len,
                                  kAccessRemoteWrite);
      if (!mr ||
          !stage_write(qp, mr->mem, mr->addr + (qp.write_va + qp.msg_bytes - mr->iova), p, len)) {
        fatal_nak(kNakRemAccess);
        return;
      }
    }
    if (last && !flush_write(qp)) {
      fatal_nak(kNakRemAccess);
      return;
    }
    pcie_placed(qp.qpn, len);
    qp.msg_bytes += len;
    if (last) {
      qp.in_msg = false;
      qp.msn++;
      if (imm)
        recv_complete(qp, rwr, srqn, WcStatus::Success, WcOpcode::RecvRdmaWithImm, qp.msg_bytes,
                      p.imm, kWcWithImm, qp.attr.dest_qp_num);
    }
  }
  qp.epsn = psn_add(psn, 1);
  qp.nak_sent = false;
  qp.since_ack++;
  if (rc && !irn_quiet && (p.bth.ack_req || last || qp.since_ack >= config.ack_every))
    send_ack(qp, kAckSyndrome, psn);
}

bool Hca::Impl::stage_write(Qp& qp, MemorySpace* mem, uint64_t addr, const RdmaPacket& p,
                             uint32_t len) {
  Qp::PendingWrite& w = qp.pending_write;
  if (w.len && w.mem == mem && w.addr + w.len == addr && w.keep == p.payload &&
      w.held == p.held && w.offset + w.len == p.payload_offset) {
    w.len += len;
    return true;
  }
  if (!flush_write(qp)) return false;
  w.mem = mem;
  w.addr = addr;
  w.keep = p.payload;
  w.held = p.held;
  w.offset = p.payload_offset;
  w.len = len;
  return true;
}

bool Hca::Impl::flush_write(Qp& qp) {
  Qp::PendingWrite& w = qp.pending_write;
  if (!w.len) return true;
  const uint8_t* src = w.held ? w.held->at + w.offset : w.keep ? w.keep->data() + w.offset : nullptr;
  const bool ok = write_dma(*w.mem, w.addr, src, w.len);
  w = Qp::PendingWrite{};
  return ok;
}

void Hca::Impl::flush_all_writes() {
  for (auto& [qpn, qp] : qps) flush_write(*qp);
}

void Hca::Impl::handle_ud(Qp& qp, RdmaPacket& p) {
  const QpState st = qp.attr.qp_state;
  if (st != QpState::Rtr && st != QpState::Rts && st != QpState::Sqd && st != QpState::Sqe) return;
  const ibta::Opcode& op = ibta::info(p.bth.opcode);
  if (op.op != ibta::Op::Send || op.position != ibta::Position::Only || op.invalidate) return;
  if (p.deth.qkey != qp.attr.qkey) return;  // Q_Key mismatch: silently dropped
  RecvWr wr;
  uint32_t srqn = 0;
  if (!take_recv(qp, &wr, &srqn)) return;   // no receive posted: UD drops
  // man ibv_post_recv: on a UD QP the first 40 bytes of the buffer are for the GRH "in all
  // cases": the message starts at offset 40 whether or not a GRH arrived (without one the
  // 40 bytes are left undefined; here untouched). byte_len counts those 40 bytes either way
  // (man ibv_poll_cq's IBV_WC_GRH says only whether they hold a GRH).
  constexpr uint32_t kGrhSpace = 40;
  const bool grh = p.headers & net::kHasGrh;
  uint64_t room = 0;
  for (const Sge& s : wr.sgl) room += s.length;
  if (room < uint64_t{kGrhSpace} + p.payload_len) {
    recv_complete(qp, wr, srqn, WcStatus::LocLenErr, WcOpcode::Recv, 0, 0, 0, p.deth.src_qp);
    return;
  }
  if (grh) {
    // The GRH space receives the GRH. On RoCEv2/IPv4 the last 20 of its bytes hold the
    // IPv4 header (as mlx5 does); on IB a GRH with the GIDs.
    uint8_t g[kGrhSpace] = {};
    if (p.link_layer == net::LinkLayer::InfiniBand) {
      g[0] = 0x60;
      const uint16_t plen = static_cast<uint16_t>(p.payload_len + 12 + 8 + 4);
      g[4] = plen >> 8, g[5] = plen & 0xff, g[6] = 0x1b, g[7] = 64;
      std::copy(p.sgid.begin(), p.sgid.end(), g + 8);
      std::copy(p.dgid.begin(), p.dgid.end(), g + 24);
    } else {
      uint8_t* ip = g + 20;
      const uint16_t tot = static_cast<uint16_t>(20 + 8 + 12 + 8 + p.payload_len + 4);
      ip[0] = 0x45, ip[1] = static_cast<uint8_t>(p.dscp << 2), ip[2] = tot >> 8, ip[3] = tot & 0xff;
      ip[8] = 64, ip[9] = 17;
      for (int k = 0; k < 4; ++k) {
        ip[12 + k] = static_cast<uint8_t>(p.src >> (24 - 8 * k));
        ip[16 + k] = static_cast<uint8_t>(p.dst >> (24 - 8 * k));
      }
    }
    if (!scatter(qp.init.pd, wr.sgl, 0, g, kGrhSpace)) {
      recv_complete(qp, wr, srqn, WcStatus::LocProtErr, WcOpcode::Recv, 0, 0, 0, p.deth.src_qp);
      return;
    }
  }
  if (!scatter(qp.init.pd, wr.sgl, kGrhSpace, p.payload_data(), p.payload_len)) {
    recv_complete(qp, wr, srqn, WcStatus::LocProtErr, WcOpcode::Recv, 0, 0, 0, p.deth.src_qp);
    return;
  }
  pcie_placed(qp.qpn, p.payload_len);
  const bool imm = op.immediate;
  recv_complete(qp, wr, srqn, WcStatus::Success, WcOpcode::Recv, kGrhSpace + p.payload_len,
                imm ? p.imm : 0, (grh ? uint32_t{kWcGrh} : 0u) | (imm ? uint32_t{kWcWithImm} : 0u), p.deth.src_qp);
}

}  // namespace rdmasim::nic
