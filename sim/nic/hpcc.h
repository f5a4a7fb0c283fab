// HPCC, high precision congestion control (Li et al., "HPCC: High Precision Congestion
// Control", SIGCOMM 2019): the sender's window update from in-band telemetry.
//
// Data packets ask the switches for INT (net::Packet::int_request); each switch egress port
// appends its queue length, bytes sent, timestamp and link rate (net::IntHop); the receiver
// echoes the hop list in its ACK (RdmaPacket::int_echo). Per ACK, Algorithm 1 of the paper:
//   MeasureInflight: per hop i, txRate = (ack.tx_bytes_i - L.tx_bytes_i) / (ack.ts_i - L.ts_i)
//     u_i = min(ack.qlen_i, L.qlen_i) / (B_i T) + txRate / B_i; u = max_i u_i, tau its interval
//     tau = min(tau, T); U = (1 - tau/T) U + (tau/T) u
//   ComputeWind(U, updateWc):
//     U >= eta or incStage >= maxStage: W = Wc / (U / eta) + W_AI; (update) incStage = 0, Wc = W
//     otherwise:                        W = Wc + W_AI;             (update) incStage++,  Wc = W
//   NewAck: updateWc only when ack.seq > lastUpdateSeq, then lastUpdateSeq = snd_nxt (the
//     reference window moves once per RTT); L = ack.L.
// The QP is paced at R = W / T; W stays in [min_rate T, line rate T].
#pragma once

#include <vector>

#include "sim/nic/cc.h"

namespace rdmasim::nic {

class Hpcc final : public CongestionControl {
 public:
  Hpcc(Engine& engine, const HpccParams& p, Rate line, uint32_t max_samples);

  CcAlgorithm algorithm() const override { return CcAlgorithm::Hpcc; }
  void on_packet_sent(uint64_t) override {}
  void on_cnp() override { stats_.cnps_received++; }
  bool wants_int() const override { return true; }
  void on_ack(uint32_t ack_psn, uint32_t snd_nxt, const std::vector<net::IntHop>& hops) override;
  Rate current_rate() const override;
  Rate target_rate() const override;
  double alpha() const override { return u_; }  // the normalized inflight U
  double window_bytes() const override { return w_; }

 private:
  double measure_inflight(const std::vector<net::IntHop>& hops);
  double compute_wind(double u, bool update_wc);

  Engine& engine_;
  HpccParams p_;
  double line_;          // bits/s
  double t_;             // base RTT, seconds
  double w_max_, w_min_; // bytes
  double w_ai_;          // bytes
  double w_, wc_;        // current and reference window, bytes
  double u_ = 0;         // normalized inflight
  uint32_t inc_stage_ = 0;
  uint32_t last_update_seq_ = 0;
  bool have_update_seq_ = false;
  std::vector<net::IntHop> last_;  // L: the previous ACK's hops
  uint32_t max_samples_;
};

}  // namespace rdmasim::nic
