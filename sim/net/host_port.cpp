#include "sim/net/host_port.h"

namespace rdmasim::net {

HostPort::HostPort(Engine& engine, EgressConfig config) : egress_(engine, config) {}

bool HostPort::ready(uint8_t priority) const {
  return egress_.has_room(priority) && !egress_.paused(priority);
}

void HostPort::send(PacketPtr pkt) { egress_.enqueue(std::move(pkt), /*ignore_limit=*/true); }

void HostPort::set_ready_callback(std::function<void()> cb) { egress_.set_drain_callback(std::move(cb)); }

void HostPort::receive(PacketPtr pkt, int) {
  PortCounters& c = egress_.counters();
  ++c.rx_packets;
  c.rx_bytes += pkt->wire_bytes;
  if (pkt->kind == PacketKind::PfcPause) {
    egress_.apply_pause(*pkt);
    return;
  }
  if (!receiver_) {
    ++undelivered_;
    return;
  }
  receiver_->receive(std::move(pkt), 1);
}

}  // namespace rdmasim::net
