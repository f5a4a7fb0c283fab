// DCQCN with the timer-staged rate increase of deployed NICs and of the HPCC simulator
// (ns-3 rdma-hw.cc, "Mellanox's version of DCQCN"), beside the paper's model in cc.h.
//
// - A CNP only sets two flags: "a CNP arrived" for the alpha update and for the decrease.
// - Alpha, every alpha_period: alpha = (1-g)*alpha + g if a CNP arrived in the period,
//   else alpha = (1-g)*alpha. The first CNP sets alpha to 1 and starts this timer.
// - Decrease, every rate_reduce_period (the first check one period and 1 ns after the
//   first CNP, so it follows that period's alpha update): if a CNP arrived, target = rate
//   (unless no increase happened since the last cut: clamp_target false keeps the old
//   target), rate = max(min_rate, rate * (1 - alpha/2)), stage = 0, and the increase
//   timer restarts.
// - Increase, every rate_timer after a cut: stage < F: fast recovery, rate = (rate +
//   target)/2; stage == F: additive, target += ai_rate; stage > F: hyper, target +=
//   hai_rate (target capped at the line), then rate = (rate + target)/2; stage += 1. No
//   byte counter: the stages advance on the timer alone.
// Timers stop while the QP is back at line rate with nothing pending; the alpha decays
// missed meanwhile are applied (one per whole period) when the next CNP arrives.
#pragma once

#include "sim/nic/cc.h"

namespace rdmasim::nic {

class DcqcnStaged final : public CongestionControl {
 public:
  DcqcnStaged(Engine& engine, const DcqcnParams& p, Rate line, uint32_t max_samples);
  ~DcqcnStaged() override;
  DcqcnStaged(const DcqcnStaged&) = delete;
  DcqcnStaged& operator=(const DcqcnStaged&) = delete;

  CcAlgorithm algorithm() const override { return CcAlgorithm::Dcqcn; }
  void on_packet_sent(uint64_t) override {}
  void on_cnp() override;
  Rate current_rate() const override { return Rate{static_cast<uint64_t>(rate_ + 0.5)}; }
  Rate target_rate() const override { return Rate{static_cast<uint64_t>(target_ + 0.5)}; }
  double alpha() const override { return alpha_; }
  // Increase events since the last cut (the stage of the increase timer).
  uint32_t stage() const { return stage_; }

 private:
  void on_alpha_timer();
  void on_decrease_check();
  void on_rate_timer();
  void stop_if_idle();
  void sample();

  Engine& engine_;
  DcqcnParams p_;
  double line_;
  double rate_, target_, alpha_ = 1.0;
  bool first_cnp_ = true;
  bool alpha_cnp_ = false, decrease_cnp_ = false;
  uint32_t stage_ = 0;
  Time stopped_at_ = -1;   // timers idle since (back at line rate)
  uint32_t max_samples_;
  EventId alpha_timer_, decrease_timer_, rate_timer_;
};

}  // namespace rdmasim::nic
