#include "sim/net/egress_port.h"

#include <algorithm>

namespace rdmasim::net {

EgressPort::EgressPort(Engine& engine, EgressConfig config)
    : engine_(engine), config_(config) {}

EgressPort::~EgressPort() {
  if (tx_done_) engine_.cancel(tx_done_);
  if (pause_wake_) engine_.cancel(pause_wake_);
}

bool EgressPort::should_mark(uint8_t cls) {
  const EcnConfig& e = config_.ecn;
  const uint64_t q = queued_bytes_[cls];
  if (q <= e.kmin_bytes) return false;
  if (q >= e.kmax_bytes) return true;
  const double p = e.pmax * static_cast<double>(q - e.kmin_bytes) /
                   static_cast<double>(e.kmax_bytes - e.kmin_bytes);
  return engine_.rng("ecn").bernoulli(p);
}

bool EgressPort::enqueue(PacketPtr pkt, bool ignore_limit) {
  if (pkt->kind == PacketKind::PfcPause || pkt->kind == PacketKind::IbCredit) {
    control_.push_back(std::move(pkt));
    try_start();
    return true;
  }
  const uint8_t cls = pkt->priority & 7;
  if (!ignore_limit && queued_bytes_[cls] + pkt->wire_bytes > config_.class_limit_bytes) {
    ++counters_.drops;
    ++counters_.drops_per_class[cls];
    counters_.drop_bytes += pkt->wire_bytes;
    return false;
  }
  if (config_.ecn.enabled && pkt->ect && !pkt->ce && should_mark(cls)) {
    pkt->ce = true;
    ++counters_.ecn_marked;
  }
  queued_bytes_[cls] += pkt->wire_bytes;
  queues_[cls].push_back(std::move(pkt));
  try_start();
  return true;
}

void EgressPort::apply_pause(const Packet& pfc) {
  ++counters_.pauses_received;
  for (uint8_t c = 0; c < kNumClasses; ++c) {
    if (pfc.pause_enable_mask & (1u << c)) pause_class(c, pfc.pause_quanta[c]);
  }
}

void EgressPort::pause_class(uint8_t cls, uint16_t quanta) {
  // One quantum = 512 bit times = 64 bytes at the port rate.
  const Time now = engine_.now();
  const bool was_paused = paused(cls);
  paused_until_[cls & 7] = quanta == 0 ? now : now + tx_time(config_.rate, 64ull * quanta);
  if (pause_wake_) {
    engine_.cancel(pause_wake_);
    pause_wake_ = EventId{};
  }
  try_start();
  if (was_paused && !paused(cls) && drain_cb_) drain_cb_();
}

void EgressPort::enable_credits(uint32_t receiver_buffer_bytes) {
  credits_enabled_ = true;
  credit_limit_.fill(receiver_buffer_bytes);
  credit_sent_.fill(0);
}

void EgressPort::apply_credit(const Packet& fc) {
  const uint8_t vl = fc.vl & 7;
  // Limits only move forward (a reordered, older update must not shrink it).
  if (static_cast<int32_t>(fc.credits - credit_limit_[vl]) > 0) credit_limit_[vl] = fc.credits;
  try_start();
  if (drain_cb_) drain_cb_();
}

bool EgressPort::sendable(int c) const {
  if (queues_[c].empty() || paused(static_cast<uint8_t>(c))) return false;
  if (!credits_enabled_) return true;
  const uint32_t after = credit_sent_[c] + queues_[c].front()->wire_bytes;
  return static_cast<int32_t>(credit_limit_[c] - after) >= 0;
}

int EgressPort::pick_dwrr() {
  auto eligible = [this](int c) { return config_.dwrr_weights[c] > 0 && sendable(c); };
  bool any = false;
  for (int c = 0; c < kNumClasses; ++c) {
    if (eligible(c)) any = true;
    else if (config_.dwrr_weights[c] > 0) deficit_[c] = 0, credited_[c] = false;  // inactive
  }
  if (!any) return -1;
  // Terminates: each visit of an eligible class adds a positive quantum.
  for (;;) {
    const int c = rr_;
    if (eligible(c)) {
      if (!credited_[c]) {
        deficit_[c] += static_cast<uint64_t>(config_.dwrr_weights[c]) * kDwrrQuantumUnit;
        credited_[c] = true;
      }
      const uint64_t bytes = queues_[c].front()->wire_bytes;
      if (bytes <= deficit_[c]) {
        deficit_[c] -= bytes;
        if (queues_[c].size() == 1) deficit_[c] = 0, credited_[c] = false;  // goes idle
        return c;
      }
    }
    credited_[c] = false;
    rr_ = (rr_ + 1) % kNumClasses;
  }
}

int EgressPort::pick_class(Time* wake) {
  *wake = kTimeNever;
  for (int c = 0; c < kNumClasses; ++c)
    if (!queues_[c].empty() && paused(c)) *wake = std::min(*wake, paused_until_[c]);
  for (int c = kNumClasses - 1; c >= 0; --c) {
    if (config_.dwrr_weights[c] == 0 && sendable(c)) return c;
  }
  return pick_dwrr();
}

void EgressPort::try_start() {
  if (tx_done_) return;
  std::deque<PacketPtr>* q = nullptr;
  if (!control_.empty()) {
    q = &control_;
  } else {
    Time wake = kTimeNever;
    const int c = pick_class(&wake);
    if (c < 0) {
      if (wake != kTimeNever && !pause_wake_) {
        pause_wake_ = engine_.schedule_at(wake, [this] {
          pause_wake_ = EventId{};
          try_start();
          if (drain_cb_) drain_cb_();
        });
      }
      return;
    }
    q = &queues_[c];
  }
  on_wire_ = std::move(q->front());
  q->pop_front();
  if (q != &control_) {
    const uint8_t c = on_wire_->priority & 7;
    queued_bytes_[c] -= on_wire_->wire_bytes;
    if (credits_enabled_) credit_sent_[c] += on_wire_->wire_bytes;
  }
  if (dequeue_hook_) dequeue_hook_(*on_wire_);
  tx_done_ = engine_.schedule_in(tx_time(config_.rate, on_wire_->wire_bytes), [this] { tx_done(); });
}

void EgressPort::tx_done() {
  tx_done_ = EventId{};
  ++counters_.tx_packets;
  counters_.tx_bytes += on_wire_->wire_bytes;
  if (on_wire_->kind == PacketKind::PfcPause) ++counters_.pauses_sent;
  PacketPtr pkt = std::move(on_wire_);
  if (tap_) tap_->on_transmit(*pkt, engine_.now());
  try_start();
  if (sink_) sink_(std::move(pkt));
  if (drain_cb_) drain_cb_();
}

}  // namespace rdmasim::net
