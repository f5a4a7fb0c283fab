#include "sim/net/host_port.h"

#include "sim/net/headers.h"

namespace rdmasim::net {

HostPort::HostPort(Engine& engine, EgressConfig config) : egress_(engine, config) {}

bool HostPort::ready(uint8_t priority) const {
  const uint8_t c = egress_.class_of(priority);
  return egress_.has_room(c) && !egress_.paused(c);
}

void HostPort::send(PacketPtr pkt) { egress_.enqueue(std::move(pkt), /*ignore_limit=*/true); }

void HostPort::set_ready_callback(std::function<void()> cb) { egress_.set_drain_callback(std::move(cb)); }

void HostPort::receive(PacketPtr pkt, int) {
  PortCounters& c = egress_.counters();
  ++c.rx_packets;
  c.rx_bytes += pkt->wire_bytes;
  // The class it arrived in: its VL on InfiniBand, else the traffic class.
  const uint8_t cls = own_buffer_bytes_ ? pkt->vl & 7 : pkt->priority & 7;
  if (pkt->kind == PacketKind::Transport || pkt->kind == PacketKind::Cnp) {
    ++c.rx_packets_per_class[cls];
    c.rx_bytes_per_class[cls] += pkt->wire_bytes;
  }
  if (pkt->kind == PacketKind::PfcPause) {
    egress_.apply_pause(*pkt);
    return;
  }
  if (pkt->kind == PacketKind::IbCredit) {
    egress_.apply_credit(*pkt);
    return;
  }
  if (own_buffer_bytes_) {
    const uint8_t vl = cls;
    credits_freed_[vl] += pkt->wire_bytes;
    auto fc = std::make_unique<Packet>();
    fc->kind = PacketKind::IbCredit;
    fc->link_layer = LinkLayer::InfiniBand;
    fc->priority = vl;
    fc->vl = vl;
    fc->credits = credits_freed_[vl] + own_buffer_bytes_;  // FCCL
    fc->wire_bytes = kIbFlowControlBytes;
    fc->frame_bytes = kIbFlowControlBytes;
    egress_.enqueue(std::move(fc));
  }
  if (!receiver_) {
    ++undelivered_;
    return;
  }
  receiver_->receive(std::move(pkt), 1);
}

}  // namespace rdmasim::net

namespace rdmasim::net {

void HostPort::enable_credits(uint32_t peer_buffer_bytes, uint32_t own_buffer_bytes) {
  egress_.enable_credits(peer_buffer_bytes);
  own_buffer_bytes_ = own_buffer_bytes;
}

}  // namespace rdmasim::net
