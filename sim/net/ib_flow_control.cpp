#include "sim/net/ib_flow_control.h"

#include <algorithm>

#include "sim/net/headers.h"

namespace rdmasim::net {
namespace {

// Data packets this port's egress has sent, all VLs (FCPs are not counted per class).
uint64_t data_sent(const EgressPort& e) {
  uint64_t n = 0;
  for (const ClassCounters& c : e.class_counters()) n += c.tx_packets;
  return n;
}

}  // namespace

IbFlowControl::IbFlowControl(Engine& engine, EgressPort& egress, uint32_t buffer_bytes)
    : engine_(engine), egress_(egress), buffer_bytes_(buffer_bytes) {}

IbFlowControl::~IbFlowControl() {
  if (timer_) engine_.cancel(timer_);
}

void IbFlowControl::received(uint8_t vl, uint32_t bytes) {
  received_[vl & 7] += bytes;
  active_[vl & 7] = true;
  ++activity_;
  if (periodic_ && !timer_) arm();
}

void IbFlowControl::freed(uint8_t vl, uint32_t bytes) {
  freed_[vl & 7] += bytes;
  send(vl & 7);
}

void IbFlowControl::on_fcp(const Packet& fcp) {
  egress_.apply_credit(fcp);
  const uint8_t vl = fcp.vl & 7;
  // Every byte the peer had sent when it built this FCP is ahead of it on the link (one
  // FIFO), so what has not arrived by now was lost.
  const auto missing = static_cast<int32_t>(fcp.fctbs - received_[vl]);
  if (missing <= 0) {
    if (fcp.fc_waiting && periodic_ && !timer_) arm();  // the peer waits: advertise again
    return;
  }
  received_[vl] = fcp.fctbs;
  repaired_ += static_cast<uint32_t>(missing);
  freed(vl, static_cast<uint32_t>(missing));
}

void IbFlowControl::set_periodic(bool on) {
  periodic_ = on;
  if (!on && timer_) {
    engine_.cancel(timer_);
    timer_ = EventId{};
  }
}

PacketPtr IbFlowControl::make_fcp(uint8_t vl) const {
  auto fc = std::make_unique<Packet>();
  fc->kind = PacketKind::IbCredit;
  fc->link_layer = LinkLayer::InfiniBand;
  fc->priority = vl;
  fc->vl = vl;
  fc->credits = fccl(vl);
  fc->fctbs = egress_.fctbs(vl);
  fc->fc_waiting = egress_.credit_blocked(vl);
  fc->wire_bytes = kIbFlowControlBytes;
  fc->frame_bytes = kIbFlowControlBytes;
  fc->created = engine_.now();
  return fc;
}

void IbFlowControl::send(uint8_t vl) {
  if (egress_.enqueue(make_fcp(vl))) ++fcps_sent_;
  if (periodic_ && !timer_) arm();
}

void IbFlowControl::arm() {
  idle_ = 0;
  activity_at_tick_ = activity_ + data_sent(egress_);
  timer_ = engine_.schedule_in(tx_time(egress_.rate(), kFcpPeriodBytes), [this] { tick(); });
}

void IbFlowControl::tick() {
  timer_ = EventId{};
  const uint64_t now_activity = activity_ + data_sent(egress_);
  idle_ = now_activity == activity_at_tick_ ? idle_ + 1 : 0;
  activity_at_tick_ = now_activity;
  const auto& classes = egress_.class_counters();
  bool waiting = false;
  for (uint8_t vl = 0; vl < kNumClasses; ++vl) {
    if (classes[vl].tx_packets) active_[vl] = true;
    waiting = waiting || egress_.credit_blocked(vl);
    if (!active_[vl]) continue;
    if (egress_.enqueue(make_fcp(vl))) ++fcps_sent_;
  }
  if (idle_ < (waiting ? kFcpStalledPeriods : kFcpIdlePeriods))
    timer_ = engine_.schedule_in(tx_time(egress_.rate(), kFcpPeriodBytes), [this] { tick(); });
}

}  // namespace rdmasim::net
