// DCTCP-style window control for RoCEv2 QPs (Alizadeh et al., "Data Center TCP (DCTCP)",
// SIGCOMM 2010, section 3), on the switches' ECN marks (configure them as a step at K:
// kmin = kmax = K, pmax = 1).
//
// The responder echoes marks on its ACKs (AckSample::ce_packets: how many of the packets
// the ACK covers arrived CE-marked; no CNPs). The sender, per ACK of b wire bytes:
//   marked bytes of the window += b x ce_packets / acked_packets; acked bytes += b
//   window end (the ACK reaches the snd_nxt of the previous window end): F = marked /
//     acked; alpha = (1 - g) alpha + g F; the next window ends at this snd_nxt
//   a marked ACK outside a reduced window: cwnd *= 1 - alpha / 2; further marks are ignored
//     until the ACK reaches the snd_nxt of that cut (once per window, TCP's CWR)
//   otherwise: cwnd += packet x b / cwnd (one packet per window of ACKs: additive increase)
// cwnd starts at one BDP (line rate x base_rtt) and stays in [min_rate x RTT, line rate x
// RTT]; the QP is paced at cwnd / RTT (the last RTT sample; base_rtt before the first), so
// inflight = rate x RTT = cwnd as with an ACK clock.
#pragma once

#include "sim/nic/cc.h"

namespace rdmasim::nic {

class Dctcp final : public CongestionControl {
 public:
  Dctcp(Engine& engine, const DctcpParams& p, Rate line, uint32_t max_samples);

  CcAlgorithm algorithm() const override { return CcAlgorithm::Dctcp; }
  void on_packet_sent(uint64_t) override {}
  void on_cnp() override { stats_.cnps_received++; }
  bool wants_ack_samples() const override { return true; }
  void on_ack_sample(const AckSample& s) override;
  Rate current_rate() const override;
  double alpha() const override { return alpha_; }
  double window_bytes() const override { return cwnd_; }
  Time last_rtt() const override { return rtt_; }

 private:
  Engine& engine_;
  DctcpParams p_;
  double line_;                  // bits/s
  double cwnd_;                  // bytes
  double alpha_;
  Time rtt_;                     // last sample (base_rtt before the first)
  double acked_ = 0, marked_ = 0;  // bytes of the current window
  uint32_t window_end_ = 0, cwr_end_ = 0;
  bool have_window_end_ = false, in_cwr_ = false;
  double recorded_rate_ = 0;     // bits/s of the series' last point
  uint32_t max_samples_;
};

}  // namespace rdmasim::nic
