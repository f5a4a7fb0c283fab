// rdma_cm on iWARP: the connection is a TCP connection whose first bytes are the MPA
// Request and Reply (RFC 5044 7.1), as the kernel's iw_cm and an RNIC (iw_cxgb4, siw) make
// it. Each host's CM sends its segments on the fabric through its NIC (nic::Hca::
// send_iwarp_cm), so they take time, can be lost and show in captures:
//   active                                   passive
//   SYN (ISS)                 ->             no listener on the port: RST -> REJECTED -111
//                             <-  SYN-ACK    (a half-open connection is kept)
//   ACK + MPA Request (C, rev 1, private data) ->  CONNECT_REQUEST with the private data
//                             <-  ACK
//                             <-  MPA Reply (C, private data; rdma_reject: R set);
//                                 the passive side is ESTABLISHED at once (iw_cxgb4's
//                                 c4iw_accept_cr), its QP takes the stream over
//   ACK, the QP takes the stream over; REJECTED -111 with the Reply's private data if R
// The active side resends its SYN, then its Request, while the answer is missing (the
// fabric's "cm" times, as for a CM REQ); past max_retries it reports UNREACHABLE -110. A
// repeated SYN gets the SYN-ACK again, a repeated Request the Reply again. The QPs' TCP
// connections continue the CM's sequence numbers (nic::Hca::iwarp_bind_stream).
// rdma_disconnect sends a FIN (resent until the peer's FIN answers it); a destroyed id or a
// departing client aborts with a RST, unless its FIN already went (then the close finishes
// without the id, as the kernel's iw_cm leaves a closing endpoint to finish: the peer's FIN
// is ACKed, or, when ours answered the peer's, the ACK of ours is taken in). Both give the
// peer DISCONNECTED. Statuses are the
// kernel cma_iw_handler's: -ECONNREFUSED and -ECONNRESET -> REJECTED, -ETIMEDOUT ->
// UNREACHABLE. UD has no iWARP connection: rdma_connect says EOPNOTSUPP.
#include <arpa/inet.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include <spdlog/spdlog.h>

#include "lib/daemon/cm_agent.h"
#include "lib/daemon/device_info.h"

namespace rdmasim::daemon {
namespace {

enum : uint32_t {  // enum rdma_cm_event_type
  kConnectRequest = 4, kConnectError = 5, kUnreachable = 7, kRejected = 8, kEstablished = 9,
  kDisconnected = 10,
};
constexpr uint32_t kPsUdp = 0x0111, kPsIpoib = 0x0002;
using Seg = nic::IwarpCmSegment;

Time iba_time(uint8_t t) { return ns(4096) << std::min<uint8_t>(t, 31); }

// A segment answering `s` on its connection (the ports as `s` has them, seen from the side
// that received it): flags, sequence and acknowledgement numbers.
Seg answer(const Seg& s, uint8_t flags, uint32_t seq, uint32_t ack) {
  Seg a;
  a.local_port = s.local_port;
  a.peer_port = s.peer_port;
  a.seq = seq;
  a.ack = ack;
  a.flags = flags;
  return a;
}

const char* name(const Seg& s) {
  if (s.mpa == Seg::Mpa::Request) return "MPA Request";
  if (s.mpa == Seg::Mpa::Reply) return "MPA Reply";
  if (s.flags & nic::kTcpSyn) return "SYN";
  if (s.flags & nic::kTcpFin) return "FIN";
  return "segment";
}

void private_to(const Seg& s, ipc::CmConnParam* p) {
  const uint32_t n = std::min<uint32_t>(static_cast<uint32_t>(s.private_data.size()), ipc::kCmPrivateData);
  std::memcpy(p->private_data, s.private_data.data(), n);
  p->private_data_len = n;
}

}  // namespace

bool CmAgent::iwarp(const Id& id) const {
  return id.nic < fabric_.nics().size() && fabric_.nics()[id.nic].link_layer == net::LinkLayer::IWarp;
}

uint32_t CmAgent::new_iss(size_t nic, uint16_t lport, uint16_t rport) {
  // RFC 6528's shape: a hash of the connection's identity and a counter.
  uint32_t h = static_cast<uint32_t>(nic) * 0x9e3779b1u ^ (uint32_t{lport} << 16 | rport) * 0x85ebca6bu;
  h ^= ++iss_count_ * 0xc2b2ae35u;
  h ^= h >> 16;
  return h * 0x7feb352du;
}

CmAgent::Key CmAgent::iw_find(size_t nic, size_t from, uint16_t lport, uint16_t rport) const {
  for (const auto& [k, id] : ids_)
    if (id.tcp.lport == lport && id.tcp.rport == rport && id.nic == nic && id.peer_nic == from &&
        id.state != State::Listen)
      return k;
  return Key{};
}

Seg CmAgent::iw_segment(const Id& id, uint8_t flags, uint32_t seq) const {
  Seg s;
  s.local_port = id.tcp.lport;
  s.peer_port = id.tcp.rport;
  s.seq = seq;
  s.ack = id.tcp.rcv_nxt;
  s.flags = flags;
  return s;
}

uint32_t CmAgent::iw_sync(Id& id) const {
  // Once the QP has the stream, its TCP connection knows where the stream is.
  uint32_t snd = 0, rcv = 0;
  if (id.tcp.qpn && hcas_[id.nic]->iwarp_stream_seq(id.tcp.qpn, &snd, &rcv)) {
    if (static_cast<int32_t>(snd - id.tcp.snd_nxt) > 0) id.tcp.snd_nxt = snd;
    if (static_cast<int32_t>(rcv - id.tcp.rcv_nxt) > 0) id.tcp.rcv_nxt = rcv;  // not past a FIN
  }
  return id.tcp.snd_nxt;
}

bool CmAgent::iw_transmit(size_t nic, size_t to, Seg s) {
  const auto& nics = fabric_.nics();
  if (nic >= nics.size() || to >= nics.size()) return false;
  s.peer = nics[to].address;
  counters_.mads_sent++;
  return hcas_[nic]->send_iwarp_cm(s) == 0;
}

void CmAgent::iw_send(Key k, Id& id, const Seg& s, bool retry) {
  cancel_retry(id);
  iw_transmit(id.nic, id.peer_nic, s);
  if (!retry) return;
  // The fabric's CM times, as for a REQ (cm_exchange.cpp's send).
  const auto& t = fabric_.nics()[id.nic].cm;
  id.iw_pending = s;
  id.retries_left = t.max_retries;
  id.wait = iba_time(t.response_timeout) + 2 * iba_time(t.packet_lifetime);
  const uint64_t gen = ++id.timer_gen;
  id.timer = engine_.schedule_in(id.wait, [w = std::weak_ptr<int>(alive_), this, k, gen] {
    if (!w.expired()) on_timer(k, gen);
  });
}

void CmAgent::iw_on_timer(Key k, Id& id) {
  const Seg s = *id.iw_pending;
  if (id.retries_left > 0) {
    id.retries_left--;
    counters_.resent++;
    spdlog::info("rdmasim: cm: {} of port {} -> {} unanswered after {} us: resent ({} retries left)",
                 name(s), s.local_port, s.peer_port, id.wait / kMicrosecond, id.retries_left);
    iw_transmit(id.nic, id.peer_nic, s);
    const uint64_t gen = id.timer_gen;
    id.timer = engine_.schedule_in(id.wait, [w = std::weak_ptr<int>(alive_), this, k, gen] {
      if (!w.expired()) on_timer(k, gen);
    });
    return;
  }
  counters_.timeouts++;
  id.iw_pending.reset();
  spdlog::info("rdmasim: cm: {} of port {} -> {} unanswered after {} tries: timed out", name(s),
               s.local_port, s.peer_port, fabric_.nics()[id.nic].cm.max_retries + 1);
  if (s.flags & nic::kTcpFin) {
    id.state = State::Disconnected;
    post(k, kDisconnected, -ETIMEDOUT);
    return;
  }
  // The connection attempt is abandoned (an RNIC aborts it: RST if the peer had answered).
  if (id.tcp.synced) iw_transmit(id.nic, id.peer_nic, iw_segment(id, nic::kTcpRst | nic::kTcpAck, id.tcp.iss + 1));
  id.state = State::Idle;
  post(k, kUnreachable, -ETIMEDOUT);
}

int CmAgent::iw_connect(Key k, Id& id, const ipc::CmConnectReq& r) {
  if (id.ps == kPsUdp || id.ps == kPsIpoib) return EOPNOTSUPP;  // iWARP connects RC only
  if (r.param.private_data_len > nic::kMpaMaxPrivateData) return EINVAL;
  id.tcp = {};
  id.tcp.lport = ntohs(id.src.port);
  id.tcp.rport = ntohs(id.dst.port);
  id.tcp.iss = new_iss(id.nic, id.tcp.lport, id.tcp.rport);
  id.tcp.snd_nxt = id.tcp.iss + 1;
  id.tcp.qpn = r.param.qpn;
  id.mpa_private.assign(r.param.private_data, r.param.private_data + r.param.private_data_len);
  id.state = State::ReqSent;
  iw_send(k, id, iw_segment(id, nic::kTcpSyn, id.tcp.iss), true);
  return 0;
}

void CmAgent::on_iw(size_t nic, const Seg& s) {
  const size_t from = nic_of_address(s.peer);
  if (from == SIZE_MAX) return;
  counters_.mads_received++;
  const Key k = iw_find(nic, from, s.local_port, s.peer_port);
  if ((s.flags & nic::kTcpSyn) && !(s.flags & nic::kTcpAck)) {
    if (k == Key{}) iw_on_syn(nic, from, s);
    return;  // a SYN for a connection that exists: an old duplicate
  }
  if (k == Key{}) {
    if (s.mpa == Seg::Mpa::Request) return iw_on_request(nic, from, s);
    if (auto c = iw_closing_.find({nic, from, s.local_port, s.peer_port}); c != iw_closing_.end()) {
      // Our FIN went before the id was destroyed. A RST ends it. Waiting for the peer's FIN,
      // that FIN is ACKed and ends it (TIME-WAIT). After the peer's FIN (LAST-ACK), the ACK
      // of our FIN ends it and a repeated FIN (ours was lost) gets ours again. Anything
      // else (the peer's last data, ACKs) is absorbed.
      const Closing cl = c->second;
      if (s.flags & nic::kTcpRst) {
        iw_closing_.erase(c);
      } else if (!cl.peer_fin) {
        if (s.flags & nic::kTcpFin) {
          iw_transmit(nic, from, answer(s, nic::kTcpAck, cl.seq, s.seq + s.len() + 1));
          iw_closing_.erase(c);
        }
      } else if (s.flags & nic::kTcpFin) {
        iw_transmit(nic, from, answer(s, nic::kTcpFin | nic::kTcpAck, cl.seq - 1, s.seq + s.len() + 1));
      } else if ((s.flags & nic::kTcpAck) && s.ack == cl.seq) {
        iw_closing_.erase(c);
      }
      return;
    }
    if (s.flags & nic::kTcpRst) {
      iw_half_open_.erase({nic, from, s.local_port, s.peer_port});
      return;
    }
    // RFC 793 3.4: a segment for no connection is answered with a RST.
    iw_transmit(nic, from, answer(s, nic::kTcpRst | nic::kTcpAck, s.ack, s.seq + s.len()));
    return;
  }
  Id& id = ids_.at(k);
  if (s.flags & nic::kTcpRst) return iw_on_rst(k, id);
  if (s.flags & nic::kTcpSyn) {  // the SYN-ACK
    if (id.state != State::ReqSent || id.tcp.synced || s.ack != id.tcp.iss + 1) return;
    id.tcp.synced = true;
    id.tcp.irs = s.seq;
    id.tcp.rcv_nxt = s.seq + 1;
    Seg req = iw_segment(id, nic::kTcpAck | nic::kTcpPsh, id.tcp.iss + 1);
    req.mpa = Seg::Mpa::Request;
    req.private_data = id.mpa_private;
    id.tcp.snd_nxt = id.tcp.iss + 1 + req.len();
    iw_send(k, id, req, true);
    return;
  }
  if (s.mpa == Seg::Mpa::Request) {  // repeated: its Reply (or ACK) was lost
    if (id.iw_reply) iw_transmit(id.nic, id.peer_nic, *id.iw_reply);
    else iw_transmit(id.nic, id.peer_nic, iw_segment(id, nic::kTcpAck, id.tcp.snd_nxt));
    return;
  }
  if (s.mpa == Seg::Mpa::Reply) return iw_on_reply(k, id, s);
  if (s.flags & nic::kTcpFin) return iw_on_fin(k, id, s);
  // The ACK of the FIN that answered the peer's: the close is complete.
  if (id.tcp.last_ack && (s.flags & nic::kTcpAck) && s.ack == iw_sync(id) + 1) id.tcp.last_ack = false;
  // Any other pure ACK (of our Request or Reply): TCP's business, nothing for the CM.
}

CmAgent::Key CmAgent::iw_listener(size_t nic, uint16_t port) const {
  for (const auto& [lk, l] : ids_)
    if (l.state == State::Listen && l.ps != kPsUdp && l.ps != kPsIpoib && ntohs(l.src.port) == port &&
        host_of(lk.first) == fabric_.nics()[nic].host && (l.nic == SIZE_MAX || l.nic == nic))
      return lk;
  return Key{};
}

void CmAgent::iw_on_syn(size_t nic, size_t from, const Seg& s) {
  const std::tuple<size_t, size_t, uint16_t, uint16_t> t{nic, from, s.local_port, s.peer_port};
  auto half = iw_half_open_.find(t);
  if (iw_listener(nic, s.local_port) == Key{} && half == iw_half_open_.end()) {
    spdlog::info("rdmasim: cm: SYN from {} to {} port {}: no listener, RST", fabric_.nics()[from].host,
                 fabric_.nics()[nic].host, s.local_port);
    iw_transmit(nic, from, answer(s, nic::kTcpRst | nic::kTcpAck, 0, s.seq + 1));
    return;
  }
  if (half == iw_half_open_.end())
    half = iw_half_open_.emplace(t, std::pair(new_iss(nic, s.local_port, s.peer_port), s.seq)).first;
  iw_transmit(nic, from, answer(s, nic::kTcpSyn | nic::kTcpAck, half->second.first, s.seq + 1));
}

void CmAgent::iw_on_request(size_t nic, size_t from, const Seg& s) {
  auto half = iw_half_open_.find({nic, from, s.local_port, s.peer_port});
  const Key listener = iw_listener(nic, s.local_port);
  if (half == iw_half_open_.end() || listener == Key{} || s.seq != half->second.second + 1) {
    iw_transmit(nic, from, answer(s, nic::kTcpRst, s.ack, 0));
    if (half != iw_half_open_.end()) iw_half_open_.erase(half);
    return;
  }
  auto [ck, c] = passive_child(listener, nic, from, {ip_of(nic), htons(s.local_port), 0},
                               {ip_of(from), htons(s.peer_port), 0});
  c.tcp.lport = s.local_port;
  c.tcp.rport = s.peer_port;
  c.tcp.iss = half->second.first;
  c.tcp.irs = half->second.second;
  c.tcp.snd_nxt = c.tcp.iss + 1;
  c.tcp.rcv_nxt = s.seq + s.len();
  c.tcp.synced = true;
  iw_half_open_.erase(half);
  // MPA revision 1 carries no IRD/ORD: the event offers the device's read depth, as
  // iw_cxgb4 does for an MPA v1 peer.
  ipc::QueryDeviceResp dev{};
  fill_device(fabric_.nics()[nic], &dev);
  ipc::CmConnParam p{};
  p.responder_resources = p.initiator_depth = static_cast<uint8_t>(std::min<uint32_t>(dev.attr.max_qp_rd_atom, 255));
  private_to(s, &p);
  iw_transmit(nic, from, iw_segment(c, nic::kTcpAck, c.tcp.snd_nxt));
  post(ck, kConnectRequest, 0, &p, listener.second);
}

int CmAgent::iw_accept(Key k, Id& id, const ipc::CmConnectReq& r) {
  if (r.param.private_data_len > nic::kMpaMaxPrivateData) return EINVAL;
  Seg rep = iw_segment(id, nic::kTcpAck | nic::kTcpPsh, id.tcp.snd_nxt);
  rep.mpa = Seg::Mpa::Reply;
  rep.private_data.assign(r.param.private_data, r.param.private_data + r.param.private_data_len);
  id.tcp.snd_nxt += rep.len();
  id.tcp.qpn = r.param.qpn;
  if (id.tcp.qpn) {
    nic::IwarpStream st{fabric_.nics()[id.peer_nic].address, id.tcp.lport, id.tcp.rport, id.tcp.snd_nxt,
                        id.tcp.rcv_nxt};
    if (int rc = hcas_[id.nic]->iwarp_bind_stream(id.tcp.qpn, st)) {
      spdlog::info("rdmasim: cm: QP 0x{:x} cannot take port {} -> {} over: {}", id.tcp.qpn, st.local_port,
                   st.peer_port, std::strerror(rc));
      id.tcp.snd_nxt -= rep.len();
      return rc;
    }
  }
  id.iw_reply = rep;
  id.state = State::Connected;
  iw_send(k, id, rep, false);
  post(k, kEstablished, 0);
  return 0;
}

int CmAgent::iw_reject(Key k, Id& id, const ipc::CmConnectReq& r) {
  // RFC 5044 7.1.2: a Reply with the Reject bit, carrying the consumer's private data.
  Seg rep = iw_segment(id, nic::kTcpAck | nic::kTcpPsh, id.tcp.snd_nxt);
  rep.mpa = Seg::Mpa::Reply;
  rep.mpa_flags |= nic::kMpaReject;
  rep.private_data.assign(r.param.private_data, r.param.private_data + r.param.private_data_len);
  id.tcp.snd_nxt += rep.len();
  id.iw_reply = rep;
  id.state = State::Idle;
  iw_send(k, id, rep, false);
  return 0;
}

void CmAgent::iw_on_reply(Key k, Id& id, const Seg& s) {
  if (id.state == State::RepRcvd || id.state == State::Connected) {  // our ACK was lost
    iw_transmit(id.nic, id.peer_nic, iw_segment(id, nic::kTcpAck, id.tcp.snd_nxt));
    return;
  }
  if (id.state != State::ReqSent || !id.tcp.synced || s.seq != id.tcp.irs + 1) return;
  cancel_retry(id);
  id.tcp.rcv_nxt = s.seq + s.len();
  iw_transmit(id.nic, id.peer_nic, iw_segment(id, nic::kTcpAck, id.tcp.snd_nxt));
  ipc::CmConnParam p{};
  private_to(s, &p);
  if (s.mpa_flags & nic::kMpaReject) {  // iw_cxgb4: connect reply -ECONNREFUSED -> REJECTED
    id.state = State::Idle;
    post(k, kRejected, -ECONNREFUSED, &p);
    return;
  }
  if (id.tcp.qpn) {
    nic::IwarpStream st{fabric_.nics()[id.peer_nic].address, id.tcp.lport, id.tcp.rport, id.tcp.snd_nxt,
                        id.tcp.rcv_nxt};
    if (int rc = hcas_[id.nic]->iwarp_bind_stream(id.tcp.qpn, st)) {
      spdlog::info("rdmasim: cm: QP 0x{:x} cannot take port {} -> {} over: {}", id.tcp.qpn, st.local_port,
                   st.peer_port, std::strerror(rc));
      iw_transmit(id.nic, id.peer_nic, iw_segment(id, nic::kTcpRst | nic::kTcpAck, id.tcp.snd_nxt));
      id.state = State::Idle;
      post(k, kConnectError, -rc);
      return;
    }
  }
  ipc::QueryDeviceResp dev{};
  fill_device(fabric_.nics()[id.nic], &dev);
  p.responder_resources = p.initiator_depth = static_cast<uint8_t>(std::min<uint32_t>(dev.attr.max_qp_rd_atom, 255));
  id.state = State::RepRcvd;  // the client moves its QP to RTS, then establish()
  post(k, ipc::kCmEventRep, 0, &p);
}

int CmAgent::iw_disconnect(Key k, Id& id) {
  switch (id.state) {
    case State::Connected:
    case State::RepSent:
    case State::RepRcvd:
      id.state = State::DreqSent;  // DISCONNECTED when the peer's FIN answers (or timeout)
      iw_send(k, id, iw_segment(id, nic::kTcpFin | nic::kTcpAck, iw_sync(id)), true);
      return 0;
    case State::DreqRcvd:
      id.state = State::Disconnected;
      id.tcp.last_ack = true;
      iw_send(k, id, iw_segment(id, nic::kTcpFin | nic::kTcpAck, iw_sync(id)), false);
      return 0;
    case State::DreqSent:
    case State::Disconnected:
      return 0;
    default:
      return EINVAL;
  }
}

void CmAgent::iw_on_fin(Key k, Id& id, const Seg& s) {
  id.tcp.rcv_nxt = s.seq + 1;
  switch (id.state) {
    case State::Connected:
    case State::RepSent:
    case State::RepRcvd:
      cancel_retry(id);
      id.state = State::DreqRcvd;  // our FIN goes when the consumer disconnects or leaves
      post(k, kDisconnected, 0);
      return;
    case State::DreqSent:
      cancel_retry(id);
      id.state = State::Disconnected;
      post(k, kDisconnected, 0);
      return;
    case State::Disconnected:  // the peer did not get our FIN: again
      iw_transmit(id.nic, id.peer_nic, iw_segment(id, nic::kTcpFin | nic::kTcpAck, iw_sync(id)));
      return;
    default:
      return;
  }
}

void CmAgent::iw_on_rst(Key k, Id& id) {
  cancel_retry(id);
  switch (id.state) {
    case State::ReqSent:  // the peer refused the connection (no listener, or it went away)
      id.state = State::Idle;
      post(k, kRejected, -ECONNREFUSED);
      return;
    case State::Connected:
    case State::RepSent:
    case State::RepRcvd:
    case State::DreqSent:
      id.state = State::Disconnected;
      post(k, kDisconnected, 0);
      return;
    default:
      id.state = id.state == State::DreqRcvd ? State::Disconnected : State::Idle;
      return;
  }
}

void CmAgent::iw_linger(Id& id, bool peer_fin) {
  if (id.tcp.lport) iw_closing_[{id.nic, id.peer_nic, id.tcp.lport, id.tcp.rport}] = {iw_sync(id) + 1, peer_fin};
}

void CmAgent::iw_leave(Id& id) {
  switch (id.state) {
    case State::ReqSent:
    case State::ReqRcvd:
    case State::Connected:
    case State::RepSent:
    case State::RepRcvd:
      // An id destroyed with its connection open aborts it (iw_cm's destroy: RST).
      if (id.tcp.lport)
        iw_transmit(id.nic, id.peer_nic, iw_segment(id, nic::kTcpRst | nic::kTcpAck, iw_sync(id)));
      break;
    case State::DreqSent:
      // rdma_disconnect already sent our FIN: iw_cm's destroy in CLOSING does not abort,
      // the close completes without the id when the peer's FIN comes.
      iw_linger(id, false);
      break;
    case State::DreqRcvd:  // the peer closed: our FIN completes the close, once it is ACKed
      iw_transmit(id.nic, id.peer_nic, iw_segment(id, nic::kTcpFin | nic::kTcpAck, iw_sync(id)));
      iw_linger(id, true);
      break;
    case State::Disconnected:
      // Both FINs went; ours answered the peer's (LAST-ACK): the ACK of ours may still come.
      if (id.tcp.last_ack) iw_linger(id, true);
      break;
    default:
      break;
  }
}

}  // namespace rdmasim::daemon
