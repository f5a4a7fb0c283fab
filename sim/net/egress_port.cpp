#include "sim/net/egress_port.h"

#include <algorithm>
#include <bit>

namespace rdmasim::net {

IbVlConfig default_ib_vls(uint8_t data_vls) {
  IbVlConfig v;
  v.enabled = true;
  v.data_vls = data_vls;
  for (int sl = 0; sl < kMaxSl; ++sl) v.sl2vl[sl] = static_cast<uint8_t>(sl % data_vls);
  for (uint8_t vl = 0; vl < data_vls; ++vl) v.low.push_back({vl, kVlHighLimitUnit / kVlArbWeightUnit});
  return v;
}

EgressPort::EgressPort(Engine& engine, EgressConfig config)
    : engine_(engine),
      class_limit_bytes_(config.class_limit_bytes),
      rate_(config.rate),
      ib_(config.ib.enabled),
      stamp_int_(config.stamp_int),
      by_ingress_(config.ingress_round_robin),
      config_(std::move(config)) {
  for (int c = 0; c < kNumClasses; ++c) {
    if (config_.ecn[c].enabled) ecn_classes_ |= 1u << c;
    if (config_.dwrr_weights[c] > 0) weighted_classes_ |= 1u << c;
  }
  series_.interval = config_.queue_sample_interval;
  sampling_ = series_open();
  if (!config_.ib.high.empty()) arb_left_[0] = config_.ib.high[0].weight * int64_t{kVlArbWeightUnit};
  if (!config_.ib.low.empty()) arb_left_[1] = config_.ib.low[0].weight * int64_t{kVlArbWeightUnit};
}

void EgressPort::sample() {
  // sampling_ stands for series_.interval > 0 and room for samples, so that a port that
  // does not sample, or no sample due, costs no look at the (cold) series.
  const Time now = engine_.now();
  if (!sampling_ || next_sample_ > now) return;
  while (next_sample_ <= now && series_.samples.size() < series_.max_samples) {
    std::array<uint32_t, 8> d{};
    for (int c = 0; c < kNumClasses; ++c) d[c] = static_cast<uint32_t>(classes_[c].queued_bytes);
    series_.samples.push_back(d);
    next_sample_ += series_.interval;
  }
  sampling_ = series_open();
}

QueueSeries EgressPort::queue_series_now() const {
  QueueSeries s = series_;
  if (s.interval <= 0) return s;
  std::array<uint32_t, 8> d{};
  for (int c = 0; c < kNumClasses; ++c) d[c] = static_cast<uint32_t>(classes_[c].queued_bytes);
  for (Time t = next_sample_; t <= engine_.now() && s.samples.size() < s.max_samples; t += s.interval)
    s.samples.push_back(d);
  return s;
}

void EgressPort::set_queue_sampling(Time interval, size_t max_samples) {
  series_ = QueueSeries{};
  series_.interval = std::max<Time>(0, interval);
  series_.max_samples = max_samples;
  series_.start = engine_.now();
  next_sample_ = engine_.now();
  sampling_ = series_open();
}

void EgressPort::flush_series() { sample(); }

Time EgressPort::paused_time(uint8_t cls) const {
  const uint8_t c = cls & 7;
  const Time end = std::min(engine_.now(), classes_[c].paused_until);
  return paused_total_[c] + std::max<Time>(0, end - pause_start_[c]);
}

void EgressPort::note_pause(uint8_t c, Time until) {
  const Time now = engine_.now();
  // Close the current (or last) pause interval, then open a new one at now.
  paused_total_[c] += std::max<Time>(0, std::min(now, classes_[c].paused_until) - pause_start_[c]);
  pause_start_[c] = now;
  classes_[c].paused_until = until;
  if (tap_) tap_->on_pause(c, now, until);
}

void EgressPort::set_link_up(bool up) {
  if (up == link_up_) return;
  link_up_ = up;
  if (!up) {
    for (uint8_t c = 0; c < kNumClasses; ++c) {
      const uint64_t n = flush_class(c);
      counters_.link_down_drops += n;
    }
    counters_.link_down_drops += control_.size();
    control_.clear();
    return;
  }
  try_start();
  if (drain_cb_) drain_cb_();
}

uint64_t EgressPort::flush_class(uint8_t cls) {
  const uint8_t c = cls & 7;
  sample();
  uint64_t n = 0;
  while (!classes_[c].queue.empty()) {
    PacketPtr p = classes_[c].queue.pop_front();
    classes_[c].queued_bytes -= p->wire_bytes;
    if (dequeue_hook_) dequeue_hook_(*p);
    ++n;
  }
  busy_ &= ~(1u << c);
  return n;
}

EgressPort::~EgressPort() {
  for (EventId id : watchdog_)
    if (id) engine_.cancel(id);
  if (tx_done_) engine_.cancel(tx_done_);
  if (pause_wake_) engine_.cancel(pause_wake_);
}

bool EgressPort::should_mark(uint8_t cls) {
  const EcnConfig& e = config_.ecn[cls];
  const uint64_t q = classes_[cls].queued_bytes;
  if (q <= e.kmin_bytes) return false;
  if (q >= e.kmax_bytes) return true;
  const double p = e.pmax * static_cast<double>(q - e.kmin_bytes) /
                   static_cast<double>(e.kmax_bytes - e.kmin_bytes);
  return engine_.rng("ecn").bernoulli(p);
}

bool EgressPort::enqueue(PacketPtr pkt, bool ignore_limit) {
  if (pkt->kind == PacketKind::PfcPause || pkt->kind == PacketKind::IbCredit) {
    if (!link_up_) {
      ++counters_.link_down_drops;
      return false;
    }
    control_.push_back(std::move(pkt));
    try_start();
    return true;
  }
  const uint8_t cls = class_of(pkt->priority);
  pkt->vl = cls;
  if (!link_up_) {
    ++counters_.link_down_drops;
    return false;
  }
  if (!ignore_limit && classes_[cls].queued_bytes + pkt->wire_bytes > class_limit_bytes_) {
    ++counters_.drops;
    ++counters_.classes[cls].drops;
    counters_.drop_bytes += pkt->wire_bytes;
    return false;
  }
  if ((ecn_classes_ >> cls & 1) && pkt->ect && !pkt->ce && should_mark(cls)) {
    pkt->ce = true;
    ++counters_.ecn_marked;
    ++counters_.classes[cls].ecn_marked;
  }
  sample();
  classes_[cls].queued_bytes += pkt->wire_bytes;
  counters_.classes[cls].queue_max_bytes = std::max(counters_.classes[cls].queue_max_bytes, classes_[cls].queued_bytes);
  classes_[cls].queue.push_back(std::move(pkt), by_ingress_);
  busy_ |= 1u << cls;
  try_start();
  return true;
}

void EgressPort::apply_pause(const Packet& pfc) {
  ++counters_.pauses_received;
  for (uint8_t c = 0; c < kNumClasses; ++c) {
    if (pfc.pause_enable_mask & (1u << c)) {
      ++counters_.class_pauses_received[c];
      pause_class(c, pfc.pause_quanta[c]);
    }
  }
}

void EgressPort::pause_class(uint8_t cls, uint16_t quanta) {
  // One quantum = 512 bit times = 64 bytes at the port rate.
  const Time now = engine_.now();
  const bool was_paused = paused(cls);
  const bool was_held = classes_[cls & 7].paused_until > now;  // pause state, ignored or not
  note_pause(cls & 7, quanta == 0 ? now : now + tx_time(config_.rate, 64ull * quanta));
  if (config_.watchdog.detect > 0 && quanta != 0 && !was_held) {
    const uint8_t c = cls & 7;
    storm_since_[c] = now;
    if (watchdog_[c]) engine_.cancel(watchdog_[c]);
    watchdog_[c] = engine_.schedule_in(config_.watchdog.detect, [this, c] { watchdog_check(c); });
  }
  if (pause_wake_) {
    engine_.cancel(pause_wake_);
    pause_wake_ = EventId{};
  }
  try_start();
  if (was_paused && !paused(cls) && drain_cb_) drain_cb_();
}

void EgressPort::watchdog_check(uint8_t c) {
  watchdog_[c] = EventId{};
  const Time now = engine_.now();
  if (classes_[c].paused_until <= now) return;  // the pause ended (a later pause re-arms)
  if (now - storm_since_[c] < config_.watchdog.detect) return;
  if (classes_[c].ignore_pause_until > now) return;
  if (!classes_[c].queue.empty()) {
    ++counters_.watchdog_storms;
    const uint64_t bytes = classes_[c].queued_bytes;
    const uint64_t n = flush_class(c);
    counters_.watchdog_drops += n;
    counters_.drops += n;  // drops counts every packet the port discarded, whatever the cause
    counters_.classes[c].drops += n;
    counters_.drop_bytes += bytes;
    classes_[c].ignore_pause_until = now + config_.watchdog.restore;
    try_start();
    if (drain_cb_) drain_cb_();
    // After restoration, a pause still in force starts a new detection period.
    storm_since_[c] = classes_[c].ignore_pause_until;
    watchdog_[c] = engine_.schedule_at(classes_[c].ignore_pause_until + config_.watchdog.detect,
                                       [this, c] { watchdog_check(c); });
    return;
  }
  // Paused but nothing waiting: check again later.
  watchdog_[c] = engine_.schedule_in(config_.watchdog.detect, [this, c] { watchdog_check(c); });
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
  if (classes_[c].queue.empty() || paused(static_cast<uint8_t>(c))) return false;
  if (!credits_enabled_) return true;
  const uint32_t after = credit_sent_[c] + classes_[c].queue.front()->wire_bytes;
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
      const uint64_t bytes = classes_[c].queue.front()->wire_bytes;
      if (bytes <= deficit_[c]) {
        deficit_[c] -= bytes;
        if (classes_[c].queue.size() == 1) deficit_[c] = 0, credited_[c] = false;  // goes idle
        return c;
      }
    }
    credited_[c] = false;
    rr_ = (rr_ + 1) % kNumClasses;
  }
}

int EgressPort::arb_table(int t) {
  const std::vector<VlArbEntry>& tab = t == 0 ? config_.ib.high : config_.ib.low;
  if (tab.empty()) return -1;
  // size + 1 looks: the current entry, then each entry once more with its full weight.
  for (size_t looks = 0; looks <= tab.size(); ++looks) {
    const VlArbEntry& e = tab[arb_pos_[t]];
    if (e.weight > 0 && arb_left_[t] > 0 && sendable(e.vl & 7)) return e.vl & 7;
    arb_pos_[t] = (arb_pos_[t] + 1) % tab.size();
    arb_left_[t] = tab[arb_pos_[t]].weight * int64_t{kVlArbWeightUnit};
  }
  return -1;
}

int EgressPort::pick_vl() {
  const IbVlConfig& v = config_.ib;
  const uint64_t limit = v.high_limit == kVlHighLimitUnbounded
                             ? UINT64_MAX
                             : std::max<uint64_t>(1, uint64_t{v.high_limit} * kVlHighLimitUnit);
  bool low_waiting = false;
  for (const VlArbEntry& e : v.low) low_waiting |= e.weight > 0 && sendable(e.vl & 7);
  if (high_sent_ < limit || !low_waiting) {
    const int vl = arb_table(0);
    if (vl >= 0) {
      const uint32_t bytes = classes_[vl].queue.front()->wire_bytes;
      arb_left_[0] -= bytes;
      high_sent_ += bytes;
      return vl;
    }
  }
  const int vl = arb_table(1);
  if (vl >= 0) {
    arb_left_[1] -= classes_[vl].queue.front()->wire_bytes;
    high_sent_ = 0;
  }
  return vl;
}

int EgressPort::pick_class(Time* wake) {
  *wake = kTimeNever;
  // Only classes with packets can be paused with something to send, or sendable.
  for (uint32_t m = busy_; m; m &= m - 1) {
    const int c = std::countr_zero(m);
    if (paused(static_cast<uint8_t>(c))) *wake = std::min(*wake, classes_[c].paused_until);
  }
  if (ib_) return pick_vl();
  // Strict priority first: the highest class with weight 0 that may send.
  for (uint32_t m = busy_; m;) {
    const int c = 31 - std::countl_zero(m);
    if (!(weighted_classes_ >> c & 1) && sendable(c)) return c;
    m &= ~(1u << c);
  }
  return pick_dwrr();
}

void EgressPort::try_start() {
  if (tx_done_ || !link_up_) return;
  Ring<PacketPtr>* q = nullptr;  // the control queue, or null for class cls_pick
  int cls_pick = -1;
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
    cls_pick = c;
  }
  if (q) {
    on_wire_ = std::move(q->front());
    q->pop_front();
  } else {
    on_wire_ = classes_[cls_pick].queue.pop_front();
    if (classes_[cls_pick].queue.empty()) busy_ &= ~(1u << cls_pick);
  }
  if (!q) {
    sample();
    const uint8_t c = on_wire_->vl & 7;
    classes_[c].queued_bytes -= on_wire_->wire_bytes;
    if (credits_enabled_) credit_sent_[c] += on_wire_->wire_bytes;
  }
  // Cut-through: the packet cannot finish leaving before its last bit has arrived.
  const Time now = engine_.now();
  const Time end = std::max(now + tx_time(rate_, on_wire_->wire_bytes), on_wire_->last_bit_at);
  wire_bytes_on_wire_ = on_wire_->wire_bytes;
  kind_on_wire_ = on_wire_->kind;
  class_on_wire_ = q ? on_wire_->priority & 7 : on_wire_->vl & 7;
  // The port is busy from here on: the dequeue hook may enqueue onto this same port (a
  // switch returning IB credit or sending XON to the port a packet came in on, as for a
  // host sending to itself), and that packet must wait behind this one.
  // tx_done counts the packet in its class's counters: a line of its own, cold by then at
  // scale (the port's first lines are fetched ahead anyway, Engine::step).
  tx_done_ = engine_.schedule_at(end, [this] { tx_done(); }, ReadFirst{&counters_.classes[class_on_wire_]});
  if (stamp_int_ && on_wire_->int_request) stamp_int(*on_wire_, now);
  if (dequeue_hook_) dequeue_hook_(*on_wire_);
  if (early_handoff_) {
    on_wire_->last_bit_at = end + handoff_latency_;
    if (tap_transmits_) tap_->on_transmit(*on_wire_, end);  // stamped when its last bit leaves, as below
    if (sink_) sink_(std::move(on_wire_));
  }
}

void EgressPort::stamp_int(Packet& p, Time now) {
  if (p.int_hops.size() >= kMaxIntHops) return;
  uint64_t queued = 0;
  for (const ClassState& cs : classes_) queued += cs.queued_bytes;
  // tx_bytes counts whole packets at their last bit; the one starting now is not in it yet.
  p.int_hops.push_back({tx_bytes_, now, config_.rate.bps,
                        static_cast<uint32_t>(std::min<uint64_t>(queued, UINT32_MAX))});
}

void EgressPort::count_rx(const Packet& pkt, uint8_t cls) {
  if (is_data(pkt)) {
    ClassCounters& k = counters_.classes[cls & 7];
    ++k.rx_packets;
    k.rx_bytes += pkt.wire_bytes;
  } else {
    ++control_rx_packets_;
    control_rx_bytes_ += pkt.wire_bytes;
  }
}

void EgressPort::fill_totals() const {
  counters_.tx_packets = tx_packets_;
  counters_.tx_bytes = tx_bytes_;
  counters_.rx_packets = control_rx_packets_;
  counters_.rx_bytes = control_rx_bytes_;
  for (const ClassCounters& k : counters_.classes) {
    counters_.rx_packets += k.rx_packets;
    counters_.rx_bytes += k.rx_bytes;
  }
}

void EgressPort::tx_done() {
  tx_done_ = EventId{};
  ++tx_packets_;
  tx_bytes_ += wire_bytes_on_wire_;
  if (kind_on_wire_ == PacketKind::PfcPause) {
    ++counters_.pauses_sent;
    ++counters_.class_pauses_sent[class_on_wire_];
  } else if (kind_on_wire_ != PacketKind::IbCredit) {
    ++counters_.classes[class_on_wire_].tx_packets;
    counters_.classes[class_on_wire_].tx_bytes += wire_bytes_on_wire_;
  }
  PacketPtr pkt = std::move(on_wire_);
  if (tap_transmits_ && pkt) tap_->on_transmit(*pkt, engine_.now());
  try_start();
  if (pkt && sink_) sink_(std::move(pkt));
  if (drain_cb_) drain_cb_();
}

}  // namespace rdmasim::net
