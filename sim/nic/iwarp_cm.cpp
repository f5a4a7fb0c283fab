// iWARP connection setup on the wire: the host CM's TCP segments (handshake, MPA start
// frames, FIN/RST) and the hand-over of a set-up stream to its QP. See hca.h.
#include <algorithm>

#include "sim/nic/hca_impl.h"
#include "sim/net/wire.h"

namespace rdmasim::nic {
namespace {
constexpr uint8_t kWindowScale = 7;  // as iwarp.cpp's QP segments
}  // namespace

void Hca::set_iwarp_cm_sink(IwarpCmSink sink) { impl_->iwarp_cm_sink = std::move(sink); }

int Hca::send_iwarp_cm(const IwarpCmSegment& s) {
  auto& im = *impl_;
  if (!im.is_iwarp()) return EOPNOTSUPP;
  if (s.private_data.size() > kMpaMaxPrivateData) return EINVAL;
  if (!im.port_active) return ENETDOWN;
  AddressVector av;
  av.is_global = true;
  const auto mac = net::mac_of(s.peer);
  std::copy(mac.begin(), mac.end(), av.dgid.begin());
  // dest_qp 0: no QP; the entropy of the connection comes from its ports.
  RdmaPacketPtr p = im.new_packet(uint32_t{s.local_port} << 16 | s.peer_port, av, 0, 0, 0);
  p->link_layer = net::LinkLayer::IWarp;
  p->tcp.src_port = s.local_port;
  p->tcp.dst_port = s.peer_port;
  p->tcp.seq = s.seq;
  p->tcp.ack = s.ack;
  p->tcp.flags = s.flags;
  p->tcp.wscale = kWindowScale;
  p->tcp.window = static_cast<uint16_t>(std::min<uint32_t>(im.config.tcp.rcv_wnd >> kWindowScale, 0xffff));
  p->tcp.ts_val = static_cast<uint32_t>(im.engine.now() / kMicrosecond);
  p->tcp.len = s.len();
  if (s.mpa != IwarpCmSegment::Mpa::None) {
    p->fpdu.mpa_request = s.mpa == IwarpCmSegment::Mpa::Request;
    p->fpdu.mpa_reply = s.mpa == IwarpCmSegment::Mpa::Reply;
    p->fpdu.mpa_flags = s.mpa_flags;
    p->fpdu.mpa_rev = s.mpa_rev;
    if (!s.private_data.empty()) {
      p->payload = std::make_shared<net::Bytes>(s.private_data.begin(), s.private_data.end());
      p->payload_len = static_cast<uint32_t>(s.private_data.size());
    }
  }
  iwarp::size_segment(*p);
  im.counters.tx_packets++;
  im.counters.tx_bytes += p->wire_bytes;
  im.port.send(std::move(p));
  return 0;
}

uint32_t Hca::Impl::iwarp_demux(const RdmaPacket& p) const {
  const TcpHeader& t = p.tcp;
  const bool start = p.fpdu.mpa_request || p.fpdu.mpa_reply;
  // Connection setup and teardown are the CM's; a QP's own (out-of-band, dest QPN set)
  // start frames stay with the QP (iwarp.cpp).
  if (p.bth.dest_qp == 0 && ((t.flags & (kTcpSyn | kTcpRst | kTcpFin)) || start)) return 0;
  auto it = iwarp_streams.find({t.dst_port, p.src, t.src_port});
  if (it != iwarp_streams.end()) return it->second;
  return p.bth.dest_qp;
}

void Hca::Impl::receive_iwarp_cm(const RdmaPacket& p) {
  if (!iwarp_cm_sink) return;  // no CM on this host: dropped
  IwarpCmSegment s;
  s.peer = p.src;
  s.local_port = p.tcp.dst_port;
  s.peer_port = p.tcp.src_port;
  s.seq = p.tcp.seq;
  s.ack = p.tcp.ack;
  s.flags = p.tcp.flags;
  if (p.fpdu.mpa_request || p.fpdu.mpa_reply) {
    s.mpa = p.fpdu.mpa_request ? IwarpCmSegment::Mpa::Request : IwarpCmSegment::Mpa::Reply;
    s.mpa_flags = p.fpdu.mpa_flags;
    s.mpa_rev = p.fpdu.mpa_rev;
    if (const uint8_t* d = p.payload_data()) s.private_data.assign(d, d + p.payload_len);
  }
  iwarp_cm_sink(s);
}

int Hca::iwarp_bind_stream(uint32_t qpn, const IwarpStream& s) {
  auto& im = *impl_;
  auto it = im.qps.find(qpn);
  if (it == im.qps.end()) return ENOENT;
  Qp& qp = *it->second;
  if (!im.is_iwarp() || qp.init.type != QpType::RC) return EINVAL;
  if (qp.cm_stream || qp.tcp) return EBUSY;
  if (im.iwarp_streams.count({s.local_port, s.peer, s.peer_port})) return EBUSY;
  qp.cm_stream = s;
  im.iwarp_streams[{s.local_port, s.peer, s.peer_port}] = qpn;
  const QpState st = qp.attr.qp_state;
  if (st == QpState::Rtr || st == QpState::Rts) {
    im.iwarp_start_stream(qp);
    im.kick(qp);
  }
  return 0;
}

bool Hca::iwarp_stream_seq(uint32_t qpn, uint32_t* snd_nxt, uint32_t* rcv_nxt) const {
  auto it = impl_->qps.find(qpn);
  if (it == impl_->qps.end() || !it->second->tcp || !it->second->cm_stream) return false;
  *snd_nxt = it->second->tcp->tcp.snd_nxt();
  *rcv_nxt = it->second->tcp->tcp.rcv_nxt();
  return true;
}

void Hca::Impl::iwarp_start_stream(Qp& qp) {
  const IwarpStream& s = *qp.cm_stream;
  qp.mtu = iwarp::max_fpdu_payload(config.tcp.mss);
  qp.tcp = std::make_unique<iwarp::Conn>(config.tcp, s.snd_nxt, s.rcv_nxt);
  qp.tcp->local_port = s.local_port;
  qp.tcp->peer_port = s.peer_port;
  qp.tcp->isn = s.snd_nxt;
  qp.tcp->peer_isn = s.rcv_nxt;
  qp.tcp->start_sent = true;  // the CM sent the start frames
  // The address vector names the peer by its MAC GID.
  const auto mac = net::mac_of(s.peer);
  qp.attr.ah_attr.dgid.fill(0);
  std::copy(mac.begin(), mac.end(), qp.attr.ah_attr.dgid.begin());
}

void Hca::Impl::iwarp_unbind(Qp& qp) {
  if (!qp.cm_stream) return;
  const IwarpStream& s = *qp.cm_stream;
  iwarp_streams.erase({s.local_port, s.peer, s.peer_port});
  qp.cm_stream.reset();
}

}  // namespace rdmasim::nic
