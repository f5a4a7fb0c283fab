// DCQCN, timer-staged rate increase (see dcqcn_staged.h).
#include "sim/nic/dcqcn_staged.h"

#include <algorithm>
#include <cmath>

namespace rdmasim::nic {

DcqcnStaged::DcqcnStaged(Engine& engine, const DcqcnParams& p, Rate line, uint32_t max_samples)
    : engine_(engine), p_(p), line_(static_cast<double>(line.bps)), rate_(line_), target_(line_),
      max_samples_(max_samples) {
  // The decrease check is periodic: a period of 0 ("every CNP cuts" in the paper's model)
  // becomes the finest the engine can tell apart from it without looping at one instant.
  p_.rate_reduce_period = std::max<Time>(p_.rate_reduce_period, ns(1));
  p_.alpha_period = std::max<Time>(p_.alpha_period, ns(1));
  sample();
}

DcqcnStaged::~DcqcnStaged() {
  engine_.cancel(alpha_timer_);
  engine_.cancel(decrease_timer_);
  engine_.cancel(rate_timer_);
}

void DcqcnStaged::sample() { record(engine_.now(), current_rate(), target_rate(), alpha_, max_samples_); }

void DcqcnStaged::on_cnp() {
  stats_.cnps_received++;
  alpha_cnp_ = decrease_cnp_ = true;
  if (first_cnp_) {
    first_cnp_ = false;
    alpha_ = 1.0;
    alpha_cnp_ = false;
    alpha_timer_ = engine_.schedule_in(p_.alpha_period, [this] { on_alpha_timer(); });
    decrease_timer_ = engine_.schedule_in(p_.rate_reduce_period + ns(1), [this] { on_decrease_check(); });
    return;
  }
  if (stopped_at_ >= 0) {
    // Idle at line rate since stopped_at_: the quiet alpha periods decayed alpha.
    const int64_t periods = (engine_.now() - stopped_at_) / std::max<Time>(p_.alpha_period, 1);
    alpha_ *= std::pow(1.0 - p_.g, static_cast<double>(periods));
    stopped_at_ = -1;
    alpha_timer_ = engine_.schedule_in(p_.alpha_period, [this] { on_alpha_timer(); });
    decrease_timer_ = engine_.schedule_in(p_.rate_reduce_period, [this] { on_decrease_check(); });
  }
}

void DcqcnStaged::on_alpha_timer() {
  alpha_timer_ = EventId{};
  alpha_ = alpha_cnp_ ? (1.0 - p_.g) * alpha_ + p_.g : (1.0 - p_.g) * alpha_;
  alpha_cnp_ = false;
  alpha_timer_ = engine_.schedule_in(p_.alpha_period, [this] { on_alpha_timer(); });
  stop_if_idle();
}

void DcqcnStaged::on_decrease_check() {
  decrease_timer_ = engine_.schedule_in(p_.rate_reduce_period, [this] { on_decrease_check(); });
  if (!decrease_cnp_) {
    stop_if_idle();
    return;
  }
  decrease_cnp_ = false;
  if (p_.clamp_target || stage_ != 0) target_ = rate_;
  rate_ = std::max(rate_ * (1.0 - alpha_ / 2.0), static_cast<double>(p_.min_rate.bps));
  stage_ = 0;
  stats_.rate_cuts++;
  engine_.cancel(rate_timer_);
  rate_timer_ = engine_.schedule_in(p_.rate_timer, [this] { on_rate_timer(); });
  sample();
}

void DcqcnStaged::on_rate_timer() {
  rate_timer_ = engine_.schedule_in(p_.rate_timer, [this] { on_rate_timer(); });
  const uint32_t f = p_.fast_recovery_steps;
  if (stage_ == f) target_ += static_cast<double>(p_.ai_rate.bps);
  else if (stage_ > f) target_ += static_cast<double>(p_.hai_rate.bps);
  target_ = std::min(target_, line_);
  rate_ = std::min((rate_ + target_) / 2.0, line_);
  if (line_ - rate_ < 1.0) rate_ = line_;  // the halving never reaches the line exactly
  stage_++;
  stats_.rate_increases++;
  sample();
  stop_if_idle();
}

// Back at line rate with no CNP pending: nothing left to recover, the timers stop.
void DcqcnStaged::stop_if_idle() {
  if (rate_ < line_ || decrease_cnp_ || alpha_cnp_) return;
  engine_.cancel(alpha_timer_);
  engine_.cancel(decrease_timer_);
  engine_.cancel(rate_timer_);
  alpha_timer_ = decrease_timer_ = rate_timer_ = EventId{};
  if (stopped_at_ < 0) stopped_at_ = engine_.now();
}

}  // namespace rdmasim::nic
