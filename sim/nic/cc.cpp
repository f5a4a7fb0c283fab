// Congestion control: the "none" controller and DCQCN's reaction point (see cc.h).
#include "sim/nic/cc.h"

#include <algorithm>
#include <cmath>

#include "sim/nic/dcqcn_staged.h"
#include "sim/nic/dctcp.h"
#include "sim/nic/hpcc.h"
#include "sim/nic/swift.h"
#include "sim/nic/timely.h"

namespace rdmasim::nic {

bool dcqcn_preset(std::string_view name, DcqcnParams* out) {
  DcqcnParams p;  // the defaults are the paper's values
  if (name == "paper") {
    *out = p;
    return true;
  }
  if (name == "vendor") {
    // NVIDIA ConnectX-4+ firmware defaults (MLNX_OFED names in configs/README.md).
    p.g = (1024.0 - 1019.0) / 1024.0;   // dce_tcp_g 1019: alpha = 1019/1024*alpha + 5/1024
    p.initial_alpha = 1023.0 / 1024.0;  // initial_alpha_value 1023
    p.alpha_period = us(1);             // dce_tcp_rtt 1 us
    p.rate_timer = us(300);             // rpg_time_reset 300 us
    p.byte_counter = 32767;             // rpg_byte_reset 32767
    p.fast_recovery_steps = 1;          // rpg_threshold 1
    p.ai_rate = Rate::mbps(5);          // rpg_ai_rate 5 Mb/s
    p.hai_rate = Rate::mbps(50);        // rpg_hai_rate 50 Mb/s
    p.min_rate = Rate::mbps(1);         // rpg_min_rate 1 Mb/s
    p.rate_reduce_period = us(4);       // rate_reduce_monitor_period 4 us
    p.cnp_interval = us(4);             // min_time_between_cnps 4 us
    p.cnp_priority = 6;                 // cnp_802p_prio 6
    p.cnp_dscp = 48;                    // cnp_dscp 48
    *out = p;
    return true;
  }
  if (name == "hpcc") {
    // The HPCC simulator's DCQCN (Li et al., SIGCOMM 2019; github.com/alibaba-edu/High-
    // Precision-Congestion-Control, simulation/run.py "--cc dcqcn" at 100 Gb/s: CC_MODE 1,
    // "Mellanox's version of DCQCN" in rdma-hw.cc).
    p.increase = DcqcnIncrease::TimerStaged;
    p.clamp_target = false;            // CLAMP_TARGET_RATE 0
    p.g = 1.0 / 256;                   // EWMA_GAIN 0.00390625
    p.initial_alpha = 1.0;             // the first CNP sets alpha to 1
    p.alpha_period = us(1);            // ALPHA_RESUME_INTERVAL 1
    p.rate_reduce_period = us(4);      // RATE_DECREASE_INTERVAL 4
    p.rate_timer = us(300);            // RP_TIMER 300
    p.byte_counter = 0;                // no byte counter in its Mellanox model
    p.fast_recovery_steps = 1;         // FAST_RECOVERY_TIMES 1
    p.ai_rate = Rate::mbps(20);        // RATE_AI 5 x bw/25 Mb/s
    p.hai_rate = Rate::mbps(200);      // RATE_HAI 50 x bw/25 Mb/s
    p.min_rate = Rate::mbps(1000);     // MIN_RATE 1000Mb/s
    p.cnp_interval = 0;                // a CNP (ACK with the CNP flag) per marked packet
    *out = p;
    return true;
  }
  return false;
}

const char* cc_algorithm_name(CcAlgorithm a) {
  switch (a) {
    case CcAlgorithm::Dcqcn: return "dcqcn";
    case CcAlgorithm::Hpcc: return "hpcc";
    case CcAlgorithm::Timely: return "timely";
    case CcAlgorithm::Swift: return "swift";
    case CcAlgorithm::Dctcp: return "dctcp";
    case CcAlgorithm::None: break;
  }
  return "none";
}

void CongestionControl::record(Time at, Rate rate, Rate target, double alpha,
                               uint32_t max_samples) {
  if (samples_.size() >= max_samples) {
    stats_.samples_dropped++;
    return;
  }
  samples_.push_back({at, rate, target, alpha});
}

Dcqcn::Dcqcn(Engine& engine, const DcqcnParams& p, Rate line, uint32_t max_samples)
    : engine_(engine),
      p_(p),
      line_(static_cast<double>(line.bps)),
      rate_(line_),
      target_(line_),
      alpha_(p.initial_alpha),
      max_samples_(max_samples) {
  sample();
}

Dcqcn::~Dcqcn() {
  engine_.cancel(alpha_timer_);
  engine_.cancel(rate_timer_);
}

void Dcqcn::sample() { record(engine_.now(), current_rate(), target_rate(), alpha_, max_samples_); }

void Dcqcn::on_cnp() {
  stats_.cnps_received++;
  const Time now = engine_.now();
  if (alpha_stopped_ >= 0) {
    // The timers were idle while the QP ran at line rate: apply the alpha decays the
    // alpha timer would have made meanwhile (one per whole period).
    const int64_t periods = (now - alpha_stopped_) / std::max<Time>(p_.alpha_period, 1);
    alpha_ *= std::pow(1.0 - p_.g, static_cast<double>(periods));
    alpha_stopped_ = -1;
  }
  cnp_in_period_ = true;
  if (last_cut_ >= 0 && p_.rate_reduce_period > 0 && now - last_cut_ < p_.rate_reduce_period) {
    arm_timers();
    return;  // within the rate-reduction monitor period: no second cut
  }
  last_cut_ = now;
  stats_.rate_cuts++;
  target_ = rate_;
  rate_ = std::max(rate_ * (1.0 - alpha_ / 2.0), static_cast<double>(p_.min_rate.bps));
  alpha_ = (1.0 - p_.g) * alpha_ + p_.g;
  t_count_ = bc_count_ = 0;
  bytes_ = 0;
  // The increase timer restarts from the cut.
  engine_.cancel(rate_timer_);
  rate_timer_ = EventId{};
  arm_timers();
  sample();
}

void Dcqcn::arm_timers() {
  if (!engine_.is_pending(alpha_timer_))
    alpha_timer_ = engine_.schedule_in(p_.alpha_period, [this] { on_alpha_timer(); });
  if (!engine_.is_pending(rate_timer_))
    rate_timer_ = engine_.schedule_in(p_.rate_timer, [this] { on_rate_timer(); });
}

void Dcqcn::on_alpha_timer() {
  alpha_timer_ = EventId{};
  // The CNP in this period already raised alpha (on_cnp); only a quiet period decays it.
  if (!cnp_in_period_) alpha_ *= 1.0 - p_.g;
  cnp_in_period_ = false;
  alpha_timer_ = engine_.schedule_in(p_.alpha_period, [this] { on_alpha_timer(); });
  stop_if_recovered();
}

void Dcqcn::on_rate_timer() {
  rate_timer_ = EventId{};
  t_count_++;
  increase();
  if (rate_ < line_) rate_timer_ = engine_.schedule_in(p_.rate_timer, [this] { on_rate_timer(); });
  stop_if_recovered();
}

void Dcqcn::on_packet_sent(uint64_t bytes) {
  if (p_.byte_counter == 0 || rate_ >= line_) return;
  bytes_ += bytes;
  while (bytes_ >= p_.byte_counter) {
    bytes_ -= p_.byte_counter;
    bc_count_++;
    increase();
  }
  stop_if_recovered();
}

void Dcqcn::increase() {
  const uint32_t f = p_.fast_recovery_steps;
  if (std::max(t_count_, bc_count_) < f) {
    // fast recovery: only the rate moves halfway to the target
  } else if (std::min(t_count_, bc_count_) > f) {
    target_ += static_cast<double>(p_.hai_rate.bps);
  } else {
    target_ += static_cast<double>(p_.ai_rate.bps);
  }
  target_ = std::min(target_, line_);
  rate_ = std::clamp((rate_ + target_) / 2.0, static_cast<double>(p_.min_rate.bps), line_);
  // Within half a bit per second of the line rate is the line rate (the halving never
  // reaches it exactly).
  if (line_ - rate_ < 1.0) rate_ = line_;
  stats_.rate_increases++;
  sample();
}

// Back at line rate: the timers stop (a QP at line rate has nothing to recover); alpha's
// decay is applied when the next CNP arrives.
void Dcqcn::stop_if_recovered() {
  if (rate_ < line_) return;
  engine_.cancel(alpha_timer_);
  engine_.cancel(rate_timer_);
  alpha_timer_ = rate_timer_ = EventId{};
  if (alpha_stopped_ < 0) alpha_stopped_ = engine_.now();
  cnp_in_period_ = false;
  bytes_ = 0;
}

std::unique_ptr<CongestionControl> make_cc(Engine& engine, const CcConfig& config, Rate line) {
  if (config.algorithm == CcAlgorithm::Hpcc)
    return std::make_unique<Hpcc>(engine, config.hpcc, line, config.max_samples);
  if (config.algorithm == CcAlgorithm::Timely)
    return std::make_unique<Timely>(engine, config.timely, line, config.max_samples);
  if (config.algorithm == CcAlgorithm::Swift)
    return std::make_unique<Swift>(engine, config.swift, line, config.max_samples);
  if (config.algorithm == CcAlgorithm::Dctcp)
    return std::make_unique<Dctcp>(engine, config.dctcp, line, config.max_samples);
  if (config.algorithm == CcAlgorithm::Dcqcn && config.dcqcn.increase == DcqcnIncrease::TimerStaged)
    return std::make_unique<DcqcnStaged>(engine, config.dcqcn, line, config.max_samples);
  if (config.algorithm == CcAlgorithm::Dcqcn)
    return std::make_unique<Dcqcn>(engine, config.dcqcn, line, config.max_samples);
  return std::make_unique<NoCc>(line);
}

}  // namespace rdmasim::nic
