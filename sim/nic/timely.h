// TIMELY, RTT-gradient rate control (Mittal et al., "TIMELY: RTT-based Congestion Control
// for the Datacenter", SIGCOMM 2015, Algorithm 1).
//
// Once per RTT (the first ACK of a PSN at or past the snd_nxt of the previous update, as
// the HPCC simulator's UpdateRateTimely gates it) the RTT sample of that ACK updates:
//   new_rtt_diff = new_rtt - prev_rtt;  rtt_diff = (1 - alpha) rtt_diff + alpha new_rtt_diff
//   gradient = rtt_diff / min_rtt
//   new_rtt < T_low:        rate += delta
//   new_rtt > T_high:       rate *= 1 - beta (1 - T_high / new_rtt)
//   gradient <= 0:          rate += N delta, N = hai_factor once hai_after consecutive
//                           updates before this one had gradient <= 0 (HAI), else 1
//   otherwise:              rate *= 1 - beta gradient
// A decrease ends a run of non-positive gradients. rate stays in [min_rate, line rate]; the
// first sample only sets prev_rtt. The QP is paced at rate.
#pragma once

#include "sim/nic/cc.h"

namespace rdmasim::nic {

class Timely final : public CongestionControl {
 public:
  Timely(Engine& engine, const TimelyParams& p, Rate line, uint32_t max_samples);

  CcAlgorithm algorithm() const override { return CcAlgorithm::Timely; }
  void on_packet_sent(uint64_t) override {}
  void on_cnp() override { stats_.cnps_received++; }
  bool wants_ack_samples() const override { return true; }
  void on_ack_sample(const AckSample& s) override;
  Rate current_rate() const override { return Rate{static_cast<uint64_t>(rate_ + 0.5)}; }
  double alpha() const override { return gradient_; }  // the last normalized gradient
  Time last_rtt() const override { return prev_rtt_ < 0 ? 0 : prev_rtt_; }
  // One update of Algorithm 1 on an RTT sample (on_ack_sample calls it once per RTT).
  void update(Time new_rtt);
  uint32_t negative_run() const { return neg_run_; }

 private:
  Engine& engine_;
  TimelyParams p_;
  double line_;             // bits/s
  double rate_;             // bits/s
  Time prev_rtt_ = -1;
  double rtt_diff_ = 0;     // seconds
  double gradient_ = 0;
  uint32_t neg_run_ = 0;    // consecutive updates with gradient <= 0
  uint32_t next_update_psn_ = 0;
  bool have_update_psn_ = false;
  uint32_t max_samples_;
};

}  // namespace rdmasim::nic
