// HPCC's sender (see hpcc.h).
#include "sim/nic/hpcc.h"

#include <algorithm>

namespace rdmasim::nic {

Hpcc::Hpcc(Engine& engine, const HpccParams& p, Rate line, uint32_t max_samples)
    : engine_(engine), p_(p), line_(static_cast<double>(line.bps)), max_samples_(max_samples) {
  t_ = to_seconds(p_.base_rtt);
  w_max_ = line_ * t_ / 8.0;  // W_init: the path's bandwidth-delay product (section 3.3)
  w_min_ = static_cast<double>(p_.min_rate.bps) * t_ / 8.0;
  w_ai_ = static_cast<double>(p_.ai_rate.bps) * t_ / 8.0;  // W_AI = R_AI x T
  w_ = wc_ = w_max_;
  record(engine_.now(), current_rate(), target_rate(), u_, max_samples_);
}

Rate Hpcc::current_rate() const { return Rate{static_cast<uint64_t>(w_ * 8.0 / t_ + 0.5)}; }
Rate Hpcc::target_rate() const { return Rate{static_cast<uint64_t>(wc_ * 8.0 / t_ + 0.5)}; }

double Hpcc::measure_inflight(const std::vector<net::IntHop>& hops) {
  double u = 0, tau = t_;
  bool any = false;
  for (size_t i = 0; i < hops.size(); ++i) {
    const net::IntHop& a = hops[i];
    const net::IntHop& l = last_[i];
    const double dt = to_seconds(a.ts - l.ts);
    if (dt <= 0 || a.rate_bps == 0) continue;
    const double b = static_cast<double>(a.rate_bps) / 8.0;  // bytes/s
    const double tx_rate = static_cast<double>(a.tx_bytes - l.tx_bytes) / dt;
    const double ui = static_cast<double>(std::min(a.qlen, l.qlen)) / (b * t_) + tx_rate / b;
    if (!any || ui > u) {
      u = ui;
      tau = dt;
      any = true;
    }
  }
  if (!any) return u_;
  tau = std::min(tau, t_);
  u_ = (1.0 - tau / t_) * u_ + (tau / t_) * u;
  return u_;
}

double Hpcc::compute_wind(double u, bool update_wc) {
  double w;
  if (u >= p_.eta || inc_stage_ >= p_.max_stage) {
    w = wc_ / (u / p_.eta) + w_ai_;
    if (update_wc) inc_stage_ = 0;
  } else {
    w = wc_ + w_ai_;
    if (update_wc) inc_stage_++;
  }
  w = std::clamp(w, w_min_, w_max_);
  if (update_wc) wc_ = w;
  return w;
}

namespace {
// a - b in 24-bit PSN order.
int32_t seq_diff(uint32_t a, uint32_t b) {
  return static_cast<int32_t>(((a - b) & 0xffffff) << 8) >> 8;
}
}  // namespace

uint64_t Hpcc::inflight_cap() const { return std::max<uint64_t>(1, static_cast<uint64_t>(w_)); }

void Hpcc::on_ack(uint32_t ack_psn, uint32_t snd_nxt, const std::vector<net::IntHop>& hops) {
  if (hops.empty()) return;
  // The first ACK (or a path whose hop count changed) only sets the reference L, and the
  // first reference window ends at snd_nxt (the simulator's "first RTT").
  if (last_.size() != hops.size()) {
    last_ = hops;
    if (!have_update_seq_) last_update_seq_ = snd_nxt;
    have_update_seq_ = true;
    return;
  }
  const double u = measure_inflight(hops);
  // ack.seq > lastUpdateSeq: the paper's seq is the next byte expected, so the ACK of PSN n
  // (everything up to n received) has seq n + 1; compared in 24-bit PSN order.
  const bool update = seq_diff((ack_psn + 1) & 0xffffff, last_update_seq_) > 0;
  const double before = w_;
  w_ = compute_wind(u, update);
  if (update && seq_diff(snd_nxt, last_update_seq_) > 0) last_update_seq_ = snd_nxt;
  last_ = hops;
  if (w_ < before) stats_.rate_cuts++;
  else if (w_ > before) stats_.rate_increases++;
  if (w_ != before) record(engine_.now(), current_rate(), target_rate(), u_, max_samples_);
}

}  // namespace rdmasim::nic
