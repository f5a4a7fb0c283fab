// The CM protocol between the hosts' connection managers (IBTA vol. 1 ch. 12, as the
// kernel's ib_cm and rdma_cm drive it): messages, retries and the events they raise.
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
  kConnectRequest = 4, kUnreachable = 7, kRejected = 8, kEstablished = 9, kDisconnected = 10,
};
constexpr uint32_t kPsUdp = 0x0111;   // RDMA_PS_UDP
constexpr uint32_t kPsIpoib = 0x0002; // RDMA_PS_IPOIB (UD too)
constexpr uint32_t kUdpQkey = 0x01234567;  // RDMA_UDP_QKEY
constexpr uint8_t kLocalAckTimeout = 14;   // the QPs' (lib/rdmacm/cm_qp.cpp)

bool is_ud(uint32_t ps) { return ps == kPsUdp || ps == kPsIpoib; }

// IBTA time code t: 4.096 us x 2^t.
Time iba_time(uint8_t t) { return ns(4096) << std::min<uint8_t>(t, 31); }

const char* name(cm::Attr a) {
  switch (a) {
    case cm::Attr::Req: return "REQ";
    case cm::Attr::Rep: return "REP";
    case cm::Attr::Rtu: return "RTU";
    case cm::Attr::Rej: return "REJ";
    case cm::Attr::Dreq: return "DREQ";
    case cm::Attr::Drep: return "DREP";
    case cm::Attr::SidrReq: return "SIDR REQ";
    case cm::Attr::SidrRep: return "SIDR REP";
    default: return "MRA";
  }
}

// The user's part of a message's private data as an event carries it: rdma_cm reports the
// whole private data field of the MAD (IB_CM_*_PRIVATE_DATA_SIZE; past rdma_cm's own
// header in a REQ), zero-filled after what the sender wrote, as the kernel's cma.c does.
void private_to(const cm::Message& m, uint32_t skip, ipc::CmConnParam* p) {
  const uint32_t n = std::min<uint32_t>(m.private_len - skip, ipc::kCmPrivateData);
  std::memcpy(p->private_data, m.private_data.data() + skip, n);
  p->private_data_len = n;
}

void private_from(const ipc::CmConnParam& p, uint32_t skip, cm::Message* m) {
  const uint32_t room = cm::private_data_bytes(m->attr) - skip;
  const uint32_t n = std::min(p.private_data_len, room);
  std::memcpy(m->private_data.data() + skip, p.private_data, n);
  m->private_len = skip + n;
}

}  // namespace

uint32_t CmAgent::new_comm_id(Key k) {
  while (by_comm_.count(next_comm_id_) || next_comm_id_ == 0) ++next_comm_id_;
  by_comm_[next_comm_id_] = k;
  return next_comm_id_++;
}

CmAgent::Key CmAgent::listener_for(size_t nic, uint32_t ps, uint16_t port_net) const {
  const std::string& host = fabric_.nics()[nic].host;
  for (const auto& [k, l] : ids_) {
    if (l.state != State::Listen || l.ps != ps || l.src.port != port_net) continue;
    if (host_of(k.first) != host || (l.nic != SIZE_MAX && l.nic != nic)) continue;
    return k;
  }
  return Key{};
}

CmAgent::Key CmAgent::by_remote(size_t nic, size_t from, uint32_t remote_comm_id) const {
  for (const auto& [k, id] : ids_)
    if (id.remote_comm_id == remote_comm_id && id.nic == nic && id.peer_nic == from) return k;
  return Key{};
}

std::pair<CmAgent::Key, CmAgent::Id&> CmAgent::passive_child(Key listener, size_t nic, size_t from,
                                                            const ipc::CmEndpoint& src,
                                                            const ipc::CmEndpoint& dst) {
  Client& lc = *clients_.at(listener.first);
  const Id& l = ids_.at(listener);
  const Key ck{listener.first, lc.next_handle++};
  Id& c = ids_[ck];
  c.channel = l.channel;
  c.ps = l.ps;
  c.qp_type = l.qp_type;
  c.state = State::ReqRcvd;
  c.nic = nic;
  c.peer_nic = from;
  c.src = src;
  c.dst = dst;
  c.listen_handle = listener.second;
  return {ck, c};
}

// A message of `attr` from id to its peer, addressed by the communication IDs.
cm::Message CmAgent::reply_to(const Id& id, cm::Attr attr) const {
  cm::Message m;
  m.attr = attr;
  m.tid = uint64_t{id.comm_id} << 32 | static_cast<uint32_t>(attr);
  m.local_comm_id = id.comm_id;
  m.remote_comm_id = id.remote_comm_id;
  return m;
}

bool CmAgent::transmit(size_t nic, size_t to, const cm::Message& m) {
  const auto& nics = fabric_.nics();
  if (nic >= nics.size() || to >= nics.size()) return false;
  if (nics[nic].link_layer == net::LinkLayer::IWarp) return false;  // no QP1: cm_iwarp.cpp
  counters_.mads_sent++;
  nic::AddressVector av;
  if (nics[to].link_layer == net::LinkLayer::InfiniBand) {
    av.dlid = nics[to].lid;
  } else {  // RoCEv2: the IPv4-mapped GID of the peer's address
    av.is_global = true;
    av.hop_limit = 64;
    av.dgid = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff,
               static_cast<uint8_t>(nics[to].address >> 24), static_cast<uint8_t>(nics[to].address >> 16),
               static_cast<uint8_t>(nics[to].address >> 8), static_cast<uint8_t>(nics[to].address)};
  }
  return hcas_[nic]->send_gsi(av, cm::encode(m)) == 0;
}

void CmAgent::send(Key k, Id& id, const cm::Message& m, bool retry) {
  cancel_retry(id);
  transmit(id.nic, id.peer_nic, m);
  if (!retry) return;
  // IBTA 12.6.5 / the kernel's cm.c: the answer is awaited for twice the packet lifetime
  // plus the remote CM's response time (a SIDR REQ: the response time alone).
  const auto& t = fabric_.nics()[id.nic].cm;
  id.pending = m;
  id.retries_left = t.max_retries;
  id.wait = iba_time(t.response_timeout) + (m.attr == cm::Attr::SidrReq ? 0 : 2 * iba_time(t.packet_lifetime));
  const uint64_t gen = ++id.timer_gen;
  id.timer = engine_.schedule_in(id.wait, [w = std::weak_ptr<int>(alive_), this, k, gen] {
    if (!w.expired()) on_timer(k, gen);
  });
}

void CmAgent::cancel_retry(Id& id) {
  if (!id.pending && !id.iw_pending) return;
  engine_.cancel(id.timer);
  id.pending.reset();
  id.iw_pending.reset();
  ++id.timer_gen;
}

void CmAgent::on_timer(Key k, uint64_t gen) {
  Id* id = find(k);
  if (id && id->timer_gen == gen && id->iw_pending) return iw_on_timer(k, *id);
  if (!id || id->timer_gen != gen || !id->pending) return;
  const cm::Message m = *id->pending;
  if (id->retries_left > 0) {
    id->retries_left--;
    counters_.resent++;
    spdlog::info("rdmasim: cm: {} of comm ID 0x{:x} unanswered after {} us: resent ({} retries left)",
                 name(m.attr), id->comm_id, id->wait / kMicrosecond, id->retries_left);
    transmit(id->nic, id->peer_nic, m);
    id->timer = engine_.schedule_in(id->wait, [w = std::weak_ptr<int>(alive_), this, k, gen] {
      if (!w.expired()) on_timer(k, gen);
    });
    return;
  }
  // Retries exhausted (the kernel's IB_CM_REQ_ERROR / REP_ERROR / DREQ_ERROR / SIDR_REQ_ERROR,
  // which rdma_cm reports with -ETIMEDOUT).
  counters_.timeouts++;
  id->pending.reset();
  spdlog::info("rdmasim: cm: {} of comm ID 0x{:x} unanswered after {} tries: timed out",
               name(m.attr), id->comm_id, fabric_.nics()[id->nic].cm.max_retries + 1);
  if (m.attr == cm::Attr::Dreq) {
    id->state = State::Disconnected;
    post(k, kDisconnected, -ETIMEDOUT);
  } else {
    id->state = State::Idle;
    post(k, kUnreachable, -ETIMEDOUT);
  }
}

void CmAgent::on_gsi(size_t nic, const nic::GsiDatagram& d) {
  const auto m = cm::decode(d.mad->data(), d.mad->size());
  if (!m) return;  // not a CM MAD: no other GSI class is served here
  const size_t from = nic_of_address(d.src);
  if (from == SIZE_MAX) return;
  on_message(nic, from, *m);
}

void CmAgent::on_message(size_t nic, size_t from, const cm::Message& m) {
  counters_.mads_received++;
  if (m.attr == cm::Attr::Req) return on_req(nic, from, m);
  if (m.attr == cm::Attr::SidrReq) return on_sidr_req(nic, from, m);
  if (m.attr == cm::Attr::Mra) return;  // no consumer here asks for more time
  // Everything else names this side's communication ID (a SIDR REP: the request ID).
  const uint32_t mine = m.attr == cm::Attr::SidrRep ? m.local_comm_id : m.remote_comm_id;
  auto it = by_comm_.find(mine);
  Id* id = it == by_comm_.end() ? nullptr : find(it->second);
  if (!id || id->nic != nic) {
    // IBTA 12.9.8.3 / the kernel's cm_dreq_handler: a DREQ for no connection still gets its
    // DREP (the DREP for a connection this side already forgot).
    if (m.attr == cm::Attr::Dreq) {
      cm::Message drep;
      drep.attr = cm::Attr::Drep;
      drep.tid = m.tid;
      drep.remote_comm_id = m.local_comm_id;
      transmit(nic, from, drep);
    }
    return;
  }
  on_answer(it->second, *id, m);
}

void CmAgent::on_req(size_t nic, size_t from, const cm::Message& m) {
  // A repeated REQ (the REP was lost, or is still being decided): the REP is sent again.
  if (Key dup = by_remote(nic, from, m.local_comm_id); dup != Key{}) {
    Id& d = ids_.at(dup);
    if (d.state == State::RepSent && d.pending) transmit(d.nic, d.peer_nic, *d.pending);
    return;
  }
  const uint32_t ps = cm::ps_of(m.service_id);
  const uint16_t port = htons(cm::port_of(m.service_id));
  const Key listener = listener_for(nic, ps, port);
  const auto ip = cm::get_ip_header(m.private_data.data());
  if (listener == Key{} || !ip) {
    // The remote CM answers a REQ for a service nobody listens on with a REJ, reason 8.
    spdlog::info("rdmasim: cm: REQ from {} to {} port {} (ps 0x{:x}): no listener, REJ 8",
                 fabric_.nics()[from].host, fabric_.nics()[nic].host, cm::port_of(m.service_id), ps);
    cm::Message rej;
    rej.attr = cm::Attr::Rej;
    rej.tid = m.tid;
    rej.remote_comm_id = m.local_comm_id;
    rej.rejected = cm::kRejectedReq;
    rej.reason = cm::kRejInvalidServiceId;
    transmit(nic, from, rej);
    return;
  }
  auto [ck, c] = passive_child(listener, nic, from, {ip->dst_ip, port, 0}, {ip->src_ip, ip->src_port, 0});
  c.remote_comm_id = m.local_comm_id;
  c.peer_qpn = m.qpn;
  c.comm_id = new_comm_id(ck);
  // The passive side sees the request from its own side (the kernel's cma_set_req_event_data:
  // the REQ's initiator depth is the responder's resources and vice versa).
  ipc::CmConnParam p{};
  p.qpn = m.qpn;
  p.psn = m.psn;
  p.qkey = m.qkey;
  p.responder_resources = m.initiator_depth;
  p.initiator_depth = m.responder_resources;
  p.flow_control = m.flow_control;
  p.retry_count = m.retry_count;
  p.rnr_retry_count = m.rnr_retry_count;
  p.srq = m.srq;
  private_to(m, cm::kIpHeaderBytes, &p);
  post(ck, kConnectRequest, 0, &p, listener.second);
}

void CmAgent::on_sidr_req(size_t nic, size_t from, const cm::Message& m) {
  if (by_remote(nic, from, m.local_comm_id) != Key{}) return;  // a repeat: the first is being answered
  const uint32_t ps = cm::ps_of(m.service_id);
  const uint16_t port = htons(cm::port_of(m.service_id));
  const Key listener = listener_for(nic, ps, port);
  const auto ip = cm::get_ip_header(m.private_data.data());
  if (listener == Key{} || !ip) {
    spdlog::info("rdmasim: cm: SIDR REQ from {} to {} port {}: no listener, SIDR REP status 1",
                 fabric_.nics()[from].host, fabric_.nics()[nic].host, cm::port_of(m.service_id));
    cm::Message rep;
    rep.attr = cm::Attr::SidrRep;
    rep.tid = m.tid;
    rep.local_comm_id = m.local_comm_id;
    rep.service_id = m.service_id;
    rep.status = cm::kSidrUnsupported;
    transmit(nic, from, rep);
    return;
  }
  auto [ck, c] = passive_child(listener, nic, from, {ip->dst_ip, port, 0}, {ip->src_ip, ip->src_port, 0});
  c.remote_comm_id = m.local_comm_id;  // the request ID, echoed by the SIDR REP
  ipc::CmConnParam p{};
  p.qkey = kUdpQkey;
  private_to(m, cm::kIpHeaderBytes, &p);
  post(ck, kConnectRequest, 0, &p, listener.second);
}

void CmAgent::on_answer(Key k, Id& id, const cm::Message& m) {
  ipc::CmConnParam p{};
  switch (m.attr) {
    case cm::Attr::Rep:
      if (id.state == State::Connected) {  // our RTU was lost: send it again
        transmit(id.nic, id.peer_nic, reply_to(id, cm::Attr::Rtu));
        return;
      }
      if (id.state != State::ReqSent) return;
      cancel_retry(id);
      id.state = State::RepRcvd;
      id.remote_comm_id = m.local_comm_id;
      id.peer_qpn = m.qpn;
      p.qpn = m.qpn;
      p.psn = m.psn;
      p.qkey = m.qkey;
      p.responder_resources = m.initiator_depth;  // seen from this side, as for the REQ
      p.initiator_depth = m.responder_resources;
      p.flow_control = m.flow_control;
      p.rnr_retry_count = m.rnr_retry_count;
      p.srq = m.srq;
      private_to(m, 0, &p);
      post(k, ipc::kCmEventRep, 0, &p);
      return;
    case cm::Attr::Rtu:
      if (id.state != State::RepSent) return;
      cancel_retry(id);
      id.state = State::Connected;
      post(k, kEstablished, 0);
      return;
    case cm::Attr::Rej:
      if (id.state != State::ReqSent && id.state != State::RepSent && id.state != State::RepRcvd) return;
      cancel_retry(id);
      id.state = State::Idle;
      private_to(m, 0, &p);
      post(k, kRejected, m.reason, &p);
      return;
    case cm::Attr::Dreq:
      if (id.state == State::Disconnected || id.state == State::DreqSent) {
        // Both sides sent a DREQ, or our DREP was lost: answer (again).
        transmit(id.nic, id.peer_nic, reply_to(id, cm::Attr::Drep));
        if (id.state == State::DreqSent) {
          cancel_retry(id);
          id.state = State::Disconnected;
          post(k, kDisconnected, 0);
        }
        return;
      }
      if (id.state != State::Connected && id.state != State::RepSent && id.state != State::RepRcvd) return;
      cancel_retry(id);
      id.state = State::DreqRcvd;  // the DREP goes when the consumer disconnects or leaves
      post(k, kDisconnected, 0);
      return;
    case cm::Attr::Drep:
      if (id.state != State::DreqSent) return;
      cancel_retry(id);
      id.state = State::Disconnected;
      post(k, kDisconnected, 0);
      return;
    case cm::Attr::SidrRep:
      if (id.state != State::ReqSent) return;
      cancel_retry(id);
      id.state = State::Idle;
      if (m.status != 0) {  // the kernel's cma_sidr_rep_handler: UNREACHABLE with the status
        post(k, kUnreachable, m.status);
        return;
      }
      p.qpn = m.qpn;
      p.qkey = m.qkey;
      private_to(m, 0, &p);
      post(k, kEstablished, 0, &p);
      return;
    default:
      return;
  }
}

int CmAgent::connect(Client& c, const ipc::CmConnectReq& r) {
  const Key k{c.id, r.id};
  Id* id = find(k);
  if (!id) return ENOENT;
  if (id->state != State::RouteResolved || id->nic == SIZE_MAX || id->peer_nic == SIZE_MAX) return EINVAL;
  if (r.param.private_data_len > ipc::kCmPrivateData) return EINVAL;
  if (iwarp(*id)) return iw_connect(k, *id, r);
  if (!id->comm_id) id->comm_id = new_comm_id(k);
  const auto& nics = fabric_.nics();
  const topo::HostNic& me = nics[id->nic];
  const topo::HostNic& peer = nics[id->peer_nic];
  cm::Message m;
  m.attr = is_ud(id->ps) ? cm::Attr::SidrReq : cm::Attr::Req;
  m.tid = uint64_t{id->comm_id} << 32 | static_cast<uint32_t>(m.attr);
  m.local_comm_id = id->comm_id;
  m.service_id = cm::service_id(id->ps, ntohs(id->dst.port));
  cm::IpHeader ip{id->src.ip, id->dst.ip, id->src.port};
  cm::put_ip_header(ip, m.private_data.data());
  private_from(r.param, cm::kIpHeaderBytes, &m);
  if (m.attr == cm::Attr::Req) {
    ipc::QueryPortResp lp{}, pp{};
    fill_port(me, &lp);
    fill_port(peer, &pp);
    const bool ib = me.link_layer == net::LinkLayer::InfiniBand;
    m.ca_guid = me.node_guid;
    m.qpn = r.param.qpn;
    m.psn = r.param.psn;
    m.responder_resources = r.param.responder_resources;
    m.initiator_depth = r.param.initiator_depth;
    m.remote_cm_response_timeout = m.local_cm_response_timeout = me.cm.response_timeout;
    m.max_cm_retries = me.cm.max_retries;
    m.flow_control = r.param.flow_control;
    m.retry_count = r.param.retry_count;
    m.rnr_retry_count = r.param.rnr_retry_count;
    m.srq = r.param.srq;
    m.mtu = static_cast<uint8_t>(std::min(lp.attr.active_mtu, pp.attr.active_mtu));
    // RoCE has no LIDs: the kernel's CM writes the permissive LID (0xffff).
    m.local_lid = ib ? lp.attr.lid : 0xffff;
    m.remote_lid = ib ? pp.attr.lid : 0xffff;
    std::memcpy(m.local_gid.data(), lp.gids[0], 16);
    std::memcpy(m.remote_gid.data(), pp.gids[0], 16);
    m.hop_limit = ib ? 0 : 64;
    m.local_ack_timeout = kLocalAckTimeout;
  }
  id->state = State::ReqSent;
  send(k, *id, m, true);
  return 0;
}

int CmAgent::accept(Client& c, const ipc::CmConnectReq& r) {
  const Key k{c.id, r.id};
  Id* id = find(k);
  if (!id) return ENOENT;
  if (id->state != State::ReqRcvd || r.param.private_data_len > ipc::kCmPrivateData) return EINVAL;
  if (iwarp(*id)) return iw_accept(k, *id, r);
  if (is_ud(id->ps)) {  // SIDR REP: the responder keeps no connection
    cm::Message m;
    m.attr = cm::Attr::SidrRep;
    m.tid = uint64_t{id->remote_comm_id} << 32 | static_cast<uint32_t>(cm::Attr::SidrReq);
    m.local_comm_id = id->remote_comm_id;
    m.service_id = cm::service_id(id->ps, ntohs(id->src.port));
    m.qpn = r.param.qpn;
    m.qkey = r.param.qkey ? r.param.qkey : kUdpQkey;
    private_from(r.param, 0, &m);
    id->state = State::Idle;
    send(k, *id, m, false);
    return 0;
  }
  cm::Message m = reply_to(*id, cm::Attr::Rep);
  m.qpn = r.param.qpn;
  m.psn = r.param.psn;
  m.responder_resources = r.param.responder_resources;
  m.initiator_depth = r.param.initiator_depth;
  m.flow_control = r.param.flow_control;
  m.rnr_retry_count = r.param.rnr_retry_count;
  m.srq = r.param.srq;
  m.ca_guid = fabric_.nics()[id->nic].node_guid;
  private_from(r.param, 0, &m);
  id->state = State::RepSent;
  send(k, *id, m, true);
  return 0;
}

int CmAgent::reject(Client& c, const ipc::CmConnectReq& r) {
  const Key k{c.id, r.id};
  Id* id = find(k);
  if (!id) return ENOENT;
  if (id->state != State::ReqRcvd || r.param.private_data_len > ipc::kCmPrivateData) return EINVAL;
  if (iwarp(*id)) return iw_reject(k, *id, r);
  id->state = State::Idle;
  if (is_ud(id->ps)) {  // a SIDR REQ is refused with a SIDR REP whose status says why
    cm::Message m;
    m.attr = cm::Attr::SidrRep;
    m.local_comm_id = id->remote_comm_id;
    m.service_id = cm::service_id(id->ps, ntohs(id->src.port));
    m.status = 2;  // IBTA 12.11.2: "rejected by the service"
    private_from(r.param, 0, &m);
    send(k, *id, m, false);
    return 0;
  }
  cm::Message m = reply_to(*id, cm::Attr::Rej);
  m.rejected = cm::kRejectedReq;
  m.reason = cm::kRejConsumer;
  private_from(r.param, 0, &m);
  send(k, *id, m, false);
  return 0;
}

int CmAgent::establish(Client& c, const ipc::CmIdReq& r) {
  const Key k{c.id, r.id};
  Id* id = find(k);
  if (!id) return ENOENT;
  if (id->state != State::RepRcvd) return id->state == State::Idle ? ECONNRESET : EINVAL;
  id->state = State::Connected;
  // No RTU on iWARP: the ACK of the MPA Reply went when it arrived (cm_iwarp.cpp). The
  // client reports the REP event as ESTABLISHED on both link layers.
  if (iwarp(*id)) return 0;
  send(k, *id, reply_to(*id, cm::Attr::Rtu), false);
  return 0;
}

int CmAgent::disconnect(Client& c, const ipc::CmIdReq& r) {
  const Key k{c.id, r.id};
  Id* id = find(k);
  if (!id) return ENOENT;
  if (iwarp(*id)) return iw_disconnect(k, *id);
  switch (id->state) {
    case State::Connected:
    case State::RepSent:
    case State::RepRcvd: {
      // The DREQ; this side's DISCONNECTED comes with the DREP (or when it times out).
      cm::Message m = reply_to(*id, cm::Attr::Dreq);
      m.qpn = id->peer_qpn;
      id->state = State::DreqSent;
      send(k, *id, m, true);
      return 0;
    }
    case State::DreqRcvd:
      id->state = State::Disconnected;
      send(k, *id, reply_to(*id, cm::Attr::Drep), false);
      return 0;
    case State::DreqSent:
    case State::Disconnected:
      return 0;
    default:
      return EINVAL;
  }
}

void CmAgent::leave(Key k, Id& id) {
  (void)k;
  cancel_retry(id);
  if (iwarp(id)) return iw_leave(id);
  switch (id.state) {
    case State::ReqSent:  // the kernel's cm_destroy_id: REJ "timeout" for a REQ in flight
      if (!is_ud(id.ps)) {
        cm::Message m = reply_to(id, cm::Attr::Rej);
        m.rejected = cm::kRejectedOther;
        m.reason = cm::kRejTimeout;
        transmit(id.nic, id.peer_nic, m);
      }
      break;
    case State::ReqRcvd:
      if (!is_ud(id.ps)) {
        cm::Message m = reply_to(id, cm::Attr::Rej);
        m.rejected = cm::kRejectedReq;
        m.reason = cm::kRejConsumer;
        transmit(id.nic, id.peer_nic, m);
      }
      break;
    case State::Connected:
    case State::RepSent:
    case State::RepRcvd: {
      cm::Message m = reply_to(id, cm::Attr::Dreq);
      m.qpn = id.peer_qpn;
      transmit(id.nic, id.peer_nic, m);
      break;
    }
    case State::DreqRcvd:
      transmit(id.nic, id.peer_nic, reply_to(id, cm::Attr::Drep));
      break;
    default:
      break;
  }
}

}  // namespace rdmasim::daemon
