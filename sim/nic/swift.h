// Swift, delay-target window control (Kumar et al., "Swift: Delay is Simple and Effective
// for Congestion Control in the Datacenter", SIGCOMM 2020, section 3, Algorithm 1).
//
// Each ACK's RTT sample is split in two (AckSample): the endpoint delay, the time the
// packet and its ACK spent in the two NICs (responder: arrival of the packet to its ACK's
// send; requester: arrival of the ACK to its handling), and the fabric delay, the rest.
// Each has its own window, compared with its own target; cwnd = min(fabric, endpoint).
//   fabric target = base_target + hops x hop_scale + flow scaling, where flow scaling =
//     clamp(a / sqrt(fcwnd) + b, 0, fs_range), fs_range = fs_range_factor x base_target,
//     a = fs_range / (1/sqrt(fs_min_cwnd) - 1/sqrt(fs_max_cwnd)), b = -a / sqrt(fs_max_cwnd)
//     (so the term is fs_range at fs_min_cwnd packets and 0 at fs_max_cwnd);
//   endpoint target = endpoint_target.
// Per ACK of n newly acknowledged packets, for each window w with its delay d and target t:
//   d < t:   w += ai n / w  (w >= 1),  w += ai n  (w < 1)      -- ai packets per RTT
//   d >= t:  at most once per RTT (since the window's last decrease):
//            w *= max(1 - beta (d - t) / d, 1 - max_mdf)
// Windows are in packets (the mean wire size of the packets acknowledged so far) and stay
// in [min_cwnd, max_cwnd]. The QP is paced at cwnd x packet / RTT (the last RTT sample):
// Swift paces below one packet per RTT; above it this stands for its ACK clock (inflight
// = rate x RTT = cwnd). Before the first sample: line rate, and the first sample sets both
// windows to the line rate's window over base_rtt.
#pragma once

#include "sim/nic/cc.h"

namespace rdmasim::nic {

class Swift final : public CongestionControl {
 public:
  Swift(Engine& engine, const SwiftParams& p, Rate line, uint32_t max_samples);

  CcAlgorithm algorithm() const override { return CcAlgorithm::Swift; }
  void on_packet_sent(uint64_t) override {}
  void on_cnp() override { stats_.cnps_received++; }
  bool wants_ack_samples() const override { return true; }
  void on_ack_sample(const AckSample& s) override;
  Rate current_rate() const override;
  double alpha() const override { return cwnd(); }  // cwnd in packets
  double window_bytes() const override { return cwnd() * pkt_bytes_; }
  Time last_rtt() const override { return rtt_; }

  double cwnd() const { return std::min(fabric_.cwnd, endpoint_.cwnd); }
  double fabric_cwnd() const { return fabric_.cwnd; }
  double endpoint_cwnd() const { return endpoint_.cwnd; }
  // The fabric target for a fabric window of `fcwnd` packets.
  Time fabric_target(double fcwnd) const;

 private:
  struct Window {
    double cwnd = 0;             // packets
    Time last_decrease = -1;
  };
  void adjust(Window& w, Time delay, Time target, uint32_t acked, Time now);

  Engine& engine_;
  SwiftParams p_;
  double line_;                  // bits/s
  double fs_range_, fs_a_, fs_b_;  // seconds, seconds x sqrt(packets), seconds
  Window fabric_, endpoint_;
  double pkt_bytes_ = 0;         // mean wire bytes per acknowledged packet
  uint64_t bytes_seen_ = 0, packets_seen_ = 0;
  Time rtt_ = 0;                 // last sample; 0 before the first
  double recorded_rate_ = 0;     // bits/s of the series' last point
  uint32_t max_samples_;
};

}  // namespace rdmasim::nic
