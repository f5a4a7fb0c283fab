// TIMELY's sender (see timely.h).
#include "sim/nic/timely.h"

#include <algorithm>

namespace rdmasim::nic {

Timely::Timely(Engine& engine, const TimelyParams& p, Rate line, uint32_t max_samples)
    : engine_(engine),
      p_(p),
      line_(static_cast<double>(line.bps)),
      rate_(line_),
      max_samples_(max_samples) {
  record(engine_.now(), current_rate(), target_rate(), gradient_, max_samples_);
}

void Timely::on_ack_sample(const AckSample& s) {
  if (s.rtt < 0) return;
  // 24-bit PSN order: the ACK is at or past the PSN that ends the previous update's RTT.
  if (have_update_psn_ &&
      static_cast<int32_t>(((s.ack_psn - next_update_psn_) & 0xffffff) << 8) < 0)
    return;
  next_update_psn_ = s.snd_nxt;
  have_update_psn_ = true;
  update(s.rtt);
}

void Timely::update(Time new_rtt) {
  if (prev_rtt_ < 0) {
    prev_rtt_ = new_rtt;
    return;
  }
  const double before = rate_;
  const double rtt = to_seconds(new_rtt);
  const double new_diff = to_seconds(new_rtt - prev_rtt_);
  prev_rtt_ = new_rtt;
  rtt_diff_ = (1.0 - p_.alpha) * rtt_diff_ + p_.alpha * new_diff;
  gradient_ = rtt_diff_ / to_seconds(p_.min_rtt);
  const double delta = static_cast<double>(p_.delta.bps);
  if (new_rtt < p_.t_low) {
    rate_ += delta;
  } else if (new_rtt > p_.t_high) {
    rate_ *= 1.0 - p_.beta * (1.0 - to_seconds(p_.t_high) / rtt);
    neg_run_ = 0;
  } else if (gradient_ <= 0) {
    const double n = neg_run_ >= p_.hai_after ? p_.hai_factor : 1.0;
    rate_ += n * delta;
    neg_run_++;
  } else {
    rate_ *= 1.0 - p_.beta * gradient_;
    neg_run_ = 0;
  }
  rate_ = std::clamp(rate_, static_cast<double>(p_.min_rate.bps), line_);
  if (rate_ < before) stats_.rate_cuts++;
  else if (rate_ > before) stats_.rate_increases++;
  if (rate_ != before) record(engine_.now(), current_rate(), target_rate(), gradient_, max_samples_);
}

}  // namespace rdmasim::nic
