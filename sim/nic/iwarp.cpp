// iWARP: RC QPs of an iWARP NIC as FPDUs over a TCP connection; see iwarp.h for the model.
#include "sim/nic/iwarp.h"

#include <algorithm>

#include "sim/nic/hca_impl.h"
#include "sim/net/wire.h"

namespace rdmasim::nic {
namespace {

constexpr uint8_t kFlagPsh = 0x08, kFlagAck = 0x10, kFlagEce = 0x40;
constexpr uint32_t kMpaStartFrame = 16 + 1 + 1 + 2;  // key, flags, revision, private data length
constexpr uint8_t kWindowScale = 7;                   // 2^7: 64 KiB * 128 = 8 MiB reachable

uint32_t mix(uint32_t a, uint32_t b) {
  uint32_t h = a * 0x9e3779b1u ^ (b + 0x7f4a7c15u) * 0x85ebca6bu;
  h ^= h >> 15;
  return h * 0xc2b2ae35u;
}

uint16_t port_of(uint32_t qpn) { return static_cast<uint16_t>(49152 + qpn % 16384); }

net::Address peer_address(const Qp& qp) { return iwarp::address_of_gid(qp.attr.ah_attr.dgid); }


}  // namespace

namespace iwarp {

uint32_t size_fpdu(IwarpFpdu& f, uint32_t payload_len) {
  uint32_t hdr = f.tagged ? kTaggedHeader : kUntaggedHeader;
  if (f.rdmap_opcode == kRdmapReadRequest) hdr += kReadRequestHeader;
  if (f.rdmap_opcode == kRdmapTerminate) hdr += kTerminateHeader;
  f.ulpdu_len = static_cast<uint16_t>(hdr + payload_len);
  f.mpa_pad = static_cast<uint8_t>((4 - (2 + f.ulpdu_len) % 4) % 4);
  return 2 + f.ulpdu_len + f.mpa_pad + 4;
}

void size_segment(RdmaPacket& seg) {
  // Ethernet 14 + IPv4 20 + TCP (with options) + payload + FCS 4, padded to 64 bytes.
  seg.frame_bytes = std::max<uint32_t>(14 + 20 + kTcpHeader + seg.tcp.len + 4, 64);
  seg.wire_bytes = seg.frame_bytes + 8 + 12;  // preamble/SFD and inter-frame gap
}

}  // namespace iwarp

net::Address Hca::Impl::iwarp_resolve_peer(const AddressVector& av, uint32_t dest_qpn) const {
  const auto& g = av.dgid;
  bool mac_gid = g[0] == 0x02 && g[1] == 0x00;
  for (size_t i = 6; i < 16; ++i) mac_gid &= g[i] == 0;
  if (mac_gid && iwarp::address_of_gid(g) != 0) return iwarp::address_of_gid(g);
  // An IPv4-mapped GID (::ffff:a.b.c.d, the RoCEv2 form) from callers inside the simulator
  // (the study runner) names the address too.
  bool mapped = g[10] == 0xff && g[11] == 0xff;
  for (size_t i = 0; i < 10; ++i) mapped &= g[i] == 0;
  const net::Address v4 = uint32_t{g[12]} << 24 | uint32_t{g[13]} << 16 | uint32_t{g[14]} << 8 | g[15];
  if (mapped && v4 != 0) return v4;
  const uint32_t host = dest_qpn >> 16;
  if (config.qpn_base && host > 0 && host < config.iwarp_hosts.size()) return config.iwarp_hosts[host];
  return 0;
}

std::vector<QpTcpReport> Hca::tcp_report() const {
  std::vector<QpTcpReport> out;
  for (const auto& [qpn, qp] : impl_->qps) {
    if (!qp->tcp) continue;
    const iwarp::TcpConnection& t = qp->tcp->tcp;
    out.push_back({qpn, t.cwnd(), t.ssthresh(), t.dctcp_alpha(), t.srtt(), t.counters()});
  }
  return out;
}

void Hca::Impl::iwarp_on_modify(Qp& qp) {
  const QpState st = qp.attr.qp_state;
  if (st == QpState::Reset) {
    if (qp.tcp) engine.cancel(qp.tcp->rto_timer);
    qp.tcp.reset();
    qp.mpa_request_seen = false;
    iwarp_unbind(qp);
    return;
  }
  if (qp.init.type != QpType::RC || (st != QpState::Rtr && st != QpState::Rts)) return;
  const iwarp::TcpConfig& tc = config.tcp;
  // FPDUs are sized by the TCP MSS, one per segment; path_mtu plays no part (siw and
  // iw_cxgb4 ignore it too).
  qp.mtu = iwarp::max_fpdu_payload(tc.mss);
  if (qp.tcp) {
    // RTR -> RTS: the initiator opens the connection now (its MPA Request).
    if (st == QpState::Rts && qp.tcp->initiator && !qp.tcp->start_sent) iwarp_send_start(qp);
    return;
  }
  // rdma_cm's QPs: the CM's TCP handshake and MPA exchange made the stream, which the QP
  // continues (iwarp_cm.cpp); a QP moved to RTR with no peer QPN waits for it.
  if (qp.cm_stream) return iwarp_start_stream(qp);
  if (qp.attr.dest_qp_num == 0) return;
  // From here on the address vector names the peer by its MAC GID, whichever way it was
  // found (modify_qp refused RTR when neither gave one).
  const net::Address peer = iwarp_resolve_peer(qp.attr.ah_attr, qp.attr.dest_qp_num);
  const auto mac = net::mac_of(peer);
  qp.attr.ah_attr.dgid.fill(0);
  std::copy(mac.begin(), mac.end(), qp.attr.ah_attr.dgid.begin());
  // Connection setup (TCP handshake, MPA Request/Reply) is taken as done out of band, as
  // rdma_cm does it before RTS: each stream starts after its MPA start frame.
  const uint32_t isn = mix(config.address, qp.qpn);
  const uint32_t peer_isn = mix(peer_address(qp), qp.attr.dest_qp_num);
  qp.tcp = std::make_unique<iwarp::Conn>(tc, isn + kMpaStartFrame, peer_isn + kMpaStartFrame);
  qp.tcp->local_port = port_of(qp.qpn);
  qp.tcp->peer_port = port_of(qp.attr.dest_qp_num);
  qp.tcp->isn = isn;
  qp.tcp->peer_isn = peer_isn;
  // The start frame still goes on the wire once, unacknowledged and ignored by the peer, so
  // a capture shows the stream's beginning (Wireshark's MPA dissector needs it, the Request
  // before the Reply). The side with the lower (address, QPN) plays the initiator: the
  // connection forms when it reaches RTS, with its Request; the other side's half exists
  // from RTR (it may receive as soon as the peer is in RTS) and sends the Reply once it
  // has seen the Request (at once if it came before this RTR).
  qp.tcp->initiator = std::pair(config.address, qp.qpn) < std::pair(peer_address(qp), qp.attr.dest_qp_num);
  if (qp.tcp->initiator) {
    if (st == QpState::Rts) iwarp_send_start(qp);
  } else if (qp.mpa_request_seen) {
    iwarp_send_start(qp);
  } else {
    qp.tcp->reply_pending = true;
  }
}

void Hca::Impl::iwarp_send_start(Qp& qp) {
  iwarp::Conn& c = *qp.tcp;
  c.reply_pending = false;
  c.start_sent = true;
  auto start = std::make_shared<RdmaPacket>();
  start->fpdu.mpa_request = c.initiator;
  start->fpdu.mpa_reply = !c.initiator;
  RdmaPacketPtr s = iwarp_segment(qp, start.get(), c.isn, kMpaStartFrame);
  // The Request goes before the Reply is received: it acknowledges only the peer's ISN (the
  // handshake); the Reply answers a received Request, so it acknowledges its 20 bytes.
  if (c.initiator) s->tcp.ack = c.peer_isn;
  counters.tx_packets++;
  counters.tx_bytes += s->wire_bytes;
  if (port_active) port.send(std::move(s));
}

bool Hca::Impl::iwarp_has_tx_work(const Qp& qp) const {
  const iwarp::Conn& c = *qp.tcp;
  if (c.aborted) return false;
  if (c.tcp.can_send()) return true;
  if (c.tcp.has_unsent()) return false;  // waiting for the window
  return has_tx_work(qp) && c.tcp.window_allows(config.tcp.mss);
}

void Hca::Impl::iwarp_frame(Qp& qp, RdmaPacket& p) {
  iwarp::Conn& c = *qp.tcp;
  IwarpFpdu& f = p.fpdu;
  const ibta::Opcode& op = ibta::info(p.bth.opcode);
  f.last = op.ends_message();
  if (op.op == ibta::Op::Send) {
    if (op.starts_message()) ++c.send_msn;
    f.rdmap_opcode = f.last && p.bth.solicited ? iwarp::kRdmapSendSe : iwarp::kRdmapSend;
    f.qn = 0;
    f.msn = c.send_msn;
    f.mo = p.payload_offset;
  } else if (op.op == ibta::Op::Write) {
    if (op.starts_message()) {
      c.write_stag = p.reth.rkey;
      c.write_to = p.reth.va;
    }
    f.rdmap_opcode = iwarp::kRdmapWrite;
    f.tagged = true;
    f.stag = c.write_stag;
    f.to = c.write_to + p.payload_offset;
  } else if (op.op == ibta::Op::ReadRequest) {  // the sink is the WQE's first local buffer
    f.rdmap_opcode = iwarp::kRdmapReadRequest;
    f.qn = 1;
    f.msn = ++c.read_msn;
    for (const SendWqe& w : qp.sq) {
      if (w.started && w.first_psn == p.bth.psn && !w.wr.sgl.empty()) {
        f.sink_stag = w.wr.sgl[0].lkey;
        f.sink_to = w.wr.sgl[0].addr;
      }
    }
  } else if (op.op == ibta::Op::ReadResponse) {  // tagged into the requester's sink
    if (op.starts_message()) {
      if (!c.read_sinks.empty()) {
        c.cur_sink = c.read_sinks.front();
        c.read_sinks.pop_front();
      }
    }
    f.rdmap_opcode = iwarp::kRdmapReadResponse;
    f.tagged = true;
    f.stag = c.cur_sink.stag;
    f.to = c.cur_sink.to + p.payload_offset;
  } else {  // ACKNOWLEDGE carrying a NAK syndrome: a Terminate
    f.rdmap_opcode = iwarp::kRdmapTerminate;
    f.qn = 2;
    f.msn = ++c.term_msn;
    f.last = true;
  }
}

RdmaPacketPtr Hca::Impl::iwarp_segment(Qp& qp, const RdmaPacket* fpdu, uint32_t seq,
                                        uint32_t len) {
  iwarp::Conn& c = *qp.tcp;
  RdmaPacketPtr s;
  if (fpdu && !fpdu->fpdu.mpa_request && !fpdu->fpdu.mpa_reply) {
    s = std::make_unique<RdmaPacket>(*fpdu);
    s->id = uint64_t{config.address} << 32 | next_packet_id++;
    s->created = engine.now();
  } else {
    s = new_packet(qp, qp.attr.ah_attr, qp.attr.dest_qp_num, 0, 0);
    if (fpdu) s->fpdu = fpdu->fpdu;
  }
  s->link_layer = net::LinkLayer::IWarp;
  s->ect = config.tcp.ecn;
  s->ce = false;
  s->tcp.src_port = c.local_port;
  s->tcp.dst_port = c.peer_port;
  s->tcp.seq = seq;
  s->tcp.ack = c.tcp.rcv_nxt();
  s->tcp.flags = kFlagAck | (len ? kFlagPsh : 0);
  s->tcp.wscale = kWindowScale;
  s->tcp.window = static_cast<uint16_t>(std::min<uint32_t>(c.tcp.advertised_window() >> kWindowScale, 0xffff));
  // Timestamps option: TSval in microseconds of simulated time.
  s->tcp.ts_val = static_cast<uint32_t>(engine.now() / kMicrosecond);
  s->tcp.len = len;
  iwarp::size_segment(*s);
  return s;
}

RdmaPacketPtr Hca::Impl::iwarp_next(Qp& qp) {
  iwarp::Conn& c = *qp.tcp;
  if (c.aborted) return nullptr;
  if (!c.tcp.can_send()) {
    if (c.tcp.has_unsent() || !has_tx_work(qp)) return nullptr;
    RdmaPacketPtr f;
    if (!qp.resp_queue.empty()) {
      f = pop_response(qp);
    } else {
      f = next_request(qp);
    }
    if (!f) return nullptr;
    iwarp_frame(qp, *f);
    const uint32_t len = iwarp::size_fpdu(f->fpdu, f->payload_len);
    c.tcp.push(len, std::shared_ptr<const RdmaPacket>(f.release()));
  }
  const iwarp::TxSegment* s = c.tcp.next_segment(engine.now());
  if (!s) return nullptr;
  if (s->retransmitted) counters.retransmitted_packets++;  // by TCP (the RC layer never resends)
  RdmaPacketPtr seg = iwarp_segment(qp, s->fpdu.get(), s->seq, s->len);
  iwarp_sync_timer(qp);
  return seg;
}

void Hca::Impl::iwarp_send_ack(Qp& qp, bool ece) {
  RdmaPacketPtr a = iwarp_segment(qp, nullptr, qp.tcp->tcp.snd_nxt(), 0);
  if (ece) a->tcp.flags |= kFlagEce;
  a->ect = false;  // RFC 3168 6.1.4: pure ACKs are not sent ECN-capable
  counters.acks_sent++;
  counters.tx_packets++;
  counters.tx_bytes += a->wire_bytes;
  if (port_active) port.send(std::move(a));  // control packets may bypass ready()
}

void Hca::Impl::iwarp_sync_timer(Qp& qp) {
  iwarp::Conn& c = *qp.tcp;
  const Time at = c.tcp.rto_deadline();
  if (at == c.rto_at) return;
  engine.cancel(c.rto_timer);
  c.rto_timer = EventId{};
  c.rto_at = at;
  if (at == kTimeNever) return;
  const uint32_t qpn = qp.qpn;
  c.rto_timer = later(std::max<Time>(at - engine.now(), 0), [this, qpn] { iwarp_on_rto(qpn); });
}

void Hca::Impl::iwarp_on_rto(uint32_t qpn) {
  auto it = qps.find(qpn);
  if (it == qps.end() || !it->second->tcp) return;
  Qp& qp = *it->second;
  iwarp::Conn& c = *qp.tcp;
  c.rto_timer = EventId{};
  c.rto_at = kTimeNever;
  counters.timeouts++;
  if (!c.tcp.on_rto(engine.now())) {
    // The connection is lost: the QP fails like an RC QP past its retry budget.
    c.aborted = true;
    complete_acked(qp);
    if (qp.attr.qp_state != QpState::Err) {
      size_t i = 0;
      while (i < qp.sq.size() && qp.sq[i].done) ++i;
      fail_wqe(qp, i, WcStatus::RetryExcErr);
    }
    return;
  }
  iwarp_sync_timer(qp);
  kick(qp);
}

void Hca::Impl::iwarp_receive(Qp& qp, const std::shared_ptr<RdmaPacket>& seg) {
  if (seg->fpdu.mpa_request) {  // setup is out of band; the Request only releases the Reply
    qp.mpa_request_seen = true;
    if (qp.tcp && qp.tcp->reply_pending) iwarp_send_start(qp);
    return;
  }
  if (!qp.tcp || qp.tcp->aborted) return;  // no connection: dropped
  iwarp::Conn& c = *qp.tcp;
  const TcpHeader& h = seg->tcp;
  if (seg->fpdu.mpa_reply) return;
  // The ACK half: what the peer acknowledged completes SENDs and WRITEs.
  std::vector<iwarp::TxSegment> acked =
      c.tcp.on_ack(h.ack, uint32_t{h.window} << h.wscale, h.flags & kFlagEce, h.len > 0, engine.now());
  bool progress = false;
  for (const iwarp::TxSegment& s : acked) {
    const RdmaPacket& f = *s.fpdu;
    const ibta::Opcode& op = ibta::info(f.bth.opcode);
    if (op.is_request() && op.op != ibta::Op::ReadRequest && op.ends_message())
      progress |= ack_upto(qp, f.bth.psn);
  }
  if (progress && qp.attr.qp_state != QpState::Err) {
    qp.retries_left = qp.attr.retry_cnt;
    complete_acked(qp);
  }
  // The data half: in-order FPDUs go to the RDMA layers.
  if (h.len) {
    iwarp::TcpConnection::Delivered d = c.tcp.on_data(h.seq, h.len, seg, seg->ce);
    if (d.send_ack) iwarp_send_ack(qp, d.ece && config.tcp.ecn);
    for (const auto& f : d.fpdus) {
      if (!qp.tcp) break;
      iwarp_deliver(qp, *f);
    }
  }
  if (!qp.tcp) return;
  iwarp_sync_timer(qp);
  kick(qp);
}

void Hca::Impl::iwarp_deliver(Qp& qp, const RdmaPacket& f) {
  const QpState st = qp.attr.qp_state;
  if (st == QpState::Err || st == QpState::Reset) return;
  RdmaPacket p = f;  // the handlers take a mutable packet
  const ibta::Opcode& op = ibta::info(p.bth.opcode);
  if (op.op == ibta::Op::ReadResponse && iwarp_sink_refused(qp, f)) return;
  if (op.is_response()) {
    handle_response(qp, p);
  } else {
    if (op.op == ibta::Op::ReadRequest) qp.tcp->read_sinks.push_back({f.fpdu.sink_stag, f.fpdu.sink_to});
    handle_request(qp, p);
  }
}

bool Hca::Impl::iwarp_sink_refused(Qp& qp, const RdmaPacket& f) {
  // A Read Response is a tagged DDP message into the sink STag the Read Request named
  // (RFC 5040 4.4: the requester's lkey, iwarp_frame). An iWARP RNIC places it as any
  // tagged message, so that STag must grant remote write (Linux's rw.c registers iWARP READ
  // sinks with REMOTE_WRITE; svcrdma: "iWARP requires remote write access for the data sink
  // of an RDMA_READ. IB does not."). On iw_cxgb4 the failed placement is an error CQE of the
  // READ_RESP that libcxgb4 turns into the READ's completion (T4_ERR_ACCESS or T4_ERR_STAG:
  // IBV_WC_LOC_ACCESS_ERR), with the QP_ACCESS_ERR event and a Terminate (RDMAP, remote
  // protection, access violation) to the peer. siw is laxer (it checks LOCAL_WRITE only);
  // this models the cxgb4 device the shipped iWARP config imitates. An STag with no MR
  // (deregistered meanwhile) is left to the placement's own check (LOC_PROT_ERR).
  auto mr = mrs.find(f.fpdu.stag);
  if (mr == mrs.end() || (mr->second.access & kAccessRemoteWrite)) return false;
  const uint32_t psn = f.bth.psn;
  size_t i = 0;
  while (i < qp.sq.size() &&
         !(qp.sq[i].started && qp.sq[i].wr.opcode == WrOpcode::RdmaRead &&
           psn_diff(psn, qp.sq[i].first_psn) >= 0 && psn_diff(psn, qp.sq[i].last_psn()) <= 0))
    ++i;
  if (i == qp.sq.size()) return true;  // no READ waits for it: nothing to place
  iwarp_control(qp, 0x62, psn);        // the Terminate: RDMAP remote protection (etype 1), code 2
  qp_event(qp, AsyncEventType::QpAccessErr);
  fail_wqe(qp, i, WcStatus::LocAccessErr);
  return true;
}

void Hca::Impl::iwarp_control(Qp& qp, uint8_t syndrome, uint32_t psn) {
  const uint8_t kind = syndrome >> 5;
  if (kind == 0) return;  // an ACK: TCP's acknowledgements play that role
  // iWARP has no RNR NAK: a SEND finding no receive is a DDP error ("no buffer") that
  // terminates the stream, like remote access and operation errors (RFC 5040 7.2).
  uint8_t code = syndrome;
  uint8_t layer_etype = 0x00;  // RDMAP (layer 0), local catastrophic
  if (kind == 1 || syndrome == 0x63) {
    code = 0x63;              // remote operational error at the requester
    layer_etype = 0x12;       // DDP (layer 1), untagged buffer error (etype 2)
  } else if (syndrome == 0x62) {
    layer_etype = 0x01;       // RDMAP, remote protection error
  } else {
    layer_etype = 0x02;       // RDMAP, remote operation error (invalid request)
  }
  auto p = new_packet(qp, qp.attr.ah_attr, qp.attr.dest_qp_num, ibta::kRc | ibta::kAcknowledge, psn);
  p->aeth = {code, qp.msn & 0xffffff};
  p->fpdu.term_layer_etype = layer_etype;
  p->fpdu.term_code = syndrome & 0x1f;
  iwarp_frame(qp, *p);
  const uint32_t len = iwarp::size_fpdu(p->fpdu, 0);
  qp.tcp->tcp.push(len, std::shared_ptr<const RdmaPacket>(p.release()));
  counters.naks_sent++;
  // The responder's QP goes to ERR with the Terminate (RNR here too: no retry on iWARP).
  if (kind == 1) enter_error(qp);
  kick(qp);
}

}  // namespace rdmasim::nic
