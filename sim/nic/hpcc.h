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
// The QP is paced at R = W / T and keeps its bytes in flight below W; W stays in
// [min_rate T, line rate T].
//
// Where each choice comes from. The paper (Algorithm 1, section 3): everything above; U from
// the one hop with the largest u (not an EWMA per hop); U and W updated on every ACK (the
// "fast reaction" between the per-RTT updates of Wc); the sender limits its inflight bytes
// to W and paces at W/T. The HPCC simulator (alibaba-edu/High-Precision-Congestion-Control,
// rdma-hw.cc UpdateRateHp and rdma-queue-pair.cc, as run.py --cc hp configures it: FAST_REACT
// 1, MULTI_RATE 0, SAMPLE_FEEDBACK 0, VAR_WIN 1) where the paper is silent:
// - U starts at 1 (hp.u = 1); the first ACK only records L and ends the first reference
//   window at snd_nxt (m_lastUpdateSeq == 0, "first RTT"); lastUpdateSeq only moves forward.
// - snd_nxt is the sequence after the last packet sent (here: the PSN after it, counted in
//   packets; the simulator counts bytes), so Wc moves once per RTT whatever the message size.
// - The in-flight cap is IsWinBound: a packet goes while the bytes in flight are below W
//   (GetWin with VarWin: m_win x m_rate / m_max_rate, i.e. W), counted here in wire bytes
//   (the simulator counts payload against a window sized in wire bytes). Hca::Impl applies it
//   to RC QPs on RoCEv2 (inflight_cap); a go-back-N rewind takes the resent packets out of
//   flight (RecoverQueue: snd_nxt = snd_una).
// - A new W re-times the pacer's pending gap (ChangeRate; Hca::Impl::retime_pacer).
// This project's own: INT fields are exact (the simulator's IntHop rounds bytes to 128 B and
// qlen to 80 B units times bw/25 Gb/s); a hop whose interval is not positive is skipped; a
// path whose hop count changes restarts L; maxStage and W_AI are parameters (HpccParams).
//
// Fairness: both flows on a link apply the same multiplicative step when they see the same U,
// so only W_AI (40 Mb/s x T = 26.5 B at T = 5.3 us) evens them out, about 0.08% of a 33 KB
// window per RTT. U read at a flow's own ACKs is not the link's time average: a packet held
// behind the other flow's lengthens one INT interval (with the other's bytes in it: high u)
// and shortens the next, so a flow's U at its ACKs is biased by ~0.1%, more than W_AI evens
// out. hpcc_converge.json therefore settles at an unequal split (42 / 50 Gb/s) rather than
// 46 / 46 (configs/README.md, "Congestion control").
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
  uint64_t inflight_cap() const override;  // W

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
  double u_ = 1;         // normalized inflight (the simulator's hp.u starts at 1)
  uint32_t inc_stage_ = 0;
  uint32_t last_update_seq_ = 0;
  bool have_update_seq_ = false;
  std::vector<net::IntHop> last_;  // L: the previous ACK's hops
  uint32_t max_samples_;
};

}  // namespace rdmasim::nic
