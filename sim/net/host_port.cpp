#include "sim/net/host_port.h"

#include <algorithm>

#include "sim/net/headers.h"
#include "sim/net/pfc_frame.h"

namespace rdmasim::net {

HostPort::HostPort(Engine& engine, EgressConfig config, HostRxConfig rx)
    : engine_(engine), egress_(engine, config), rx_(rx), pfc_(engine, egress_) {}

HostPort::~HostPort() {
  if (drain_done_) engine_.cancel(drain_done_);
}

bool HostPort::ready(uint8_t priority) const {
  const uint8_t c = egress_.class_of(priority);
  return egress_.has_room(c) && !egress_.paused(c);
}

void HostPort::send(PacketPtr pkt) {
  if (fc_) fc_->queued();
  egress_.enqueue(std::move(pkt), /*ignore_limit=*/true);
}

void HostPort::set_ready_callback(std::function<void()> cb) { egress_.set_drain_callback(std::move(cb)); }

void HostPort::receive(PacketPtr pkt, int) {
  // The class it arrived in: its VL on InfiniBand, else the traffic class.
  const uint8_t cls = fc_ ? pkt->vl & 7 : pkt->priority & 7;
  egress_.count_rx(*pkt, cls);
  if (pkt->kind == PacketKind::PfcPause) {
    egress_.apply_pause(*pkt);
    return;
  }
  if (pkt->kind == PacketKind::IbCredit) {
    if (fc_) fc_->on_fcp(*pkt);
    return;
  }
  if (fc_) fc_->received(cls, pkt->wire_bytes);
  if (rx_buffered()) {
    buffer(std::move(pkt), cls);
    return;
  }
  deliver(std::move(pkt), cls);
}

void HostPort::buffer(PacketPtr pkt, uint8_t cls) {
  const uint32_t bytes = pkt->wire_bytes;
  if (rx_bytes_ + bytes > rx_.buffer_bytes) {
    PortCounters& c = egress_.counters_to_add();
    ++c.drops;
    ++c.classes[cls].drops;
    c.drop_bytes += bytes;
    ++rx_counters_.drops;
    rx_counters_.drop_bytes += bytes;
    return;
  }
  rx_bytes_ += bytes;
  rx_class_bytes_[cls] += bytes;
  rx_counters_.max_bytes = std::max(rx_counters_.max_bytes, rx_bytes_);
  rx_counters_.max_bytes_per_class[cls] = std::max(rx_counters_.max_bytes_per_class[cls], rx_class_bytes_[cls]);
  rx_queue_.push_back({std::move(pkt), cls});
  if (lossless(cls) && rx_class_bytes_[cls] > rx_.xoff_bytes) pfc_.xoff(cls);
  if (!drain_done_) start_drain();
}

// The head of the buffer starts moving to the host; it is delivered when it has drained.
void HostPort::start_drain() {
  const Time t = tx_time(rx_.drain_rate, rx_queue_.front().pkt->wire_bytes);
  drain_done_ = engine_.schedule_in(t, [this] { drained(); });
}

void HostPort::drained() {
  drain_done_ = EventId{};
  Buffered b = std::move(rx_queue_.front());
  rx_queue_.pop_front();
  const uint32_t bytes = b.pkt->wire_bytes;
  rx_bytes_ -= bytes;
  rx_class_bytes_[b.cls] -= bytes;
  if (rx_class_bytes_[b.cls] <= rx_.xon_bytes) pfc_.xon(b.cls);
  if (!rx_queue_.empty()) start_drain();
  deliver(std::move(b.pkt), b.cls);
}

void HostPort::deliver(PacketPtr pkt, uint8_t cls) {
  if (fc_) fc_->freed(cls, pkt->wire_bytes);
  if (!receiver_) {
    ++undelivered_;
    return;
  }
  receiver_->receive(std::move(pkt), 1);
}

void HostPort::enable_credits(uint32_t peer_buffer_bytes, uint32_t own_buffer_bytes) {
  egress_.enable_credits(peer_buffer_bytes);
  fc_ = std::make_unique<IbFlowControl>(engine_, egress_, own_buffer_bytes);
}

}  // namespace rdmasim::net
