// Congestion control of the HCA model: a pluggable per-QP rate controller ("none" = line
// rate, "dcqcn" = DCQCN as deployed on RoCEv2 NICs, "hpcc", "timely", "swift", "dctcp"; one
// .h/.cpp pair each) and the parameters of DCQCN's reaction point (RP, the sender) and
// notification point (NP, the receiver).
//
// DCQCN (Zhu et al., "Congestion Control for Large-Scale RDMA Deployments", SIGCOMM 2015):
// - NP: a QP that receives CE-marked packets sends at most one CNP (BTH opcode 0x81) per
//   cnp_interval to the sending QP.
// - RP, on a CNP: target = rate; rate *= (1 - alpha/2); alpha = (1-g)*alpha + g; the
//   increase counters restart. Every alpha_period without a CNP: alpha *= (1-g).
// - RP, rate increase: an event each rate_timer period and each byte_counter bytes sent.
//   With T timer events and BC byte events since the last cut:
//     max(T, BC) < F            fast recovery:  rate = (rate + target) / 2
//     min(T, BC) > F            hyper increase: target += hai_rate; rate = (rate + target) / 2
//     otherwise                 additive:       target += ai_rate;  rate = (rate + target) / 2
//   target and rate stay in [min_rate, line rate].
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "sim/core/engine.h"
#include "sim/core/time.h"
#include "sim/net/packet.h"

namespace rdmasim::nic {

enum class CcAlgorithm : uint8_t { None, Dcqcn, Hpcc, Timely, Swift, Dctcp };

// How the reaction point raises its rate: the paper's timer + byte counter state machine
// (Dcqcn, this file) or the timer-staged one of deployed NICs and the HPCC simulator
// (DcqcnStaged, dcqcn_staged.h).
enum class DcqcnIncrease : uint8_t { Paper, TimerStaged };

struct DcqcnParams {
  DcqcnIncrease increase = DcqcnIncrease::Paper;
  bool clamp_target = true;           // TimerStaged: a cut sets target = rate even at stage 0
  // Reaction point.
  double g = 1.0 / 256;               // alpha gain
  double initial_alpha = 1.0;         // alpha before the first CNP
  Time alpha_period = us(55);         // alpha decay period without CNPs
  Time rate_timer = us(55);           // T: rate-increase timer period
  uint64_t byte_counter = 10'000'000; // B: bytes per rate-increase event; 0 disables it
  uint32_t fast_recovery_steps = 5;   // F
  Rate ai_rate = Rate::mbps(40);      // R_AI
  Rate hai_rate = Rate::mbps(400);    // R_HAI
  Rate min_rate = Rate::mbps(100);
  Time rate_reduce_period = 0;        // at most one cut per period (0: every CNP cuts)
  // Notification point.
  Time cnp_interval = us(50);         // at most one CNP per QP per interval
  uint8_t cnp_priority = 6;           // traffic class of CNPs
  uint8_t cnp_dscp = 48;
};

// "paper": the DCQCN paper's values; "vendor": NVIDIA ConnectX firmware defaults; "hpcc":
// the HPCC simulator's DCQCN (timer-staged; see configs/README.md). False for an unknown name.
bool dcqcn_preset(std::string_view name, DcqcnParams* out);

// HPCC (hpcc.h). Defaults: the paper's eta and maxStage (section 3.3 / Algorithm 1) and the
// HPCC simulator's run.py at 100 Gb/s (configs/README.md).
struct HpccParams {
  double eta = 0.95;                  // target utilization (run.py --utgt 95)
  uint32_t max_stage = 5;             // additive steps before a multiplicative update
  Rate ai_rate = Rate::mbps(40);      // W_AI = ai_rate x T (run.py: RATE_AI 10 x bw/25 Mb/s)
  Rate min_rate = Rate::mbps(1000);   // run.py MIN_RATE 1000Mb/s
  Time base_rtt = us(8);              // T: the base RTT of the flows' paths
};

// TIMELY (timely.h). Defaults: the TIMELY paper's values as the HPCC simulator's ns-3
// rdma-hw.cc carries them (TimelyAlpha, TimelyBeta, TimelyTLow, TimelyTHigh, TimelyMinRtt);
// delta and the HAI count from the paper's Algorithm 1 (section 4). Sized for the paper's
// 10 Gb/s testbed: scale the times to the fabric (configs/README.md).
struct TimelyParams {
  double alpha = 0.875;               // EWMA weight of the newest RTT difference
  double beta = 0.8;                  // multiplicative decrease factor
  Time t_low = us(50);                // below: additive increase regardless of the gradient
  Time t_high = us(500);              // above: decrease by beta (1 - T_high / rtt)
  Time min_rtt = us(20);              // normalizes the gradient
  Rate delta = Rate::mbps(10);        // additive increase step
  uint32_t hai_after = 5;             // consecutive non-positive gradients before N = 5
  uint32_t hai_factor = 5;            // N in hyperactive increase
  Rate min_rate = Rate::mbps(100);
};

// Swift (swift.h). Defaults: Kumar et al., SIGCOMM 2020, section 3 and Algorithm 1 (see
// configs/README.md for which values the paper states and which are this project's).
struct SwiftParams {
  double ai = 1.0;                    // additive increase, packets per RTT
  double beta = 0.8;                  // multiplicative decrease gain
  double max_mdf = 0.5;               // largest multiplicative decrease per RTT
  Time base_target = us(25);          // fabric target delay before scaling
  Time hop_scale = us(1);             // h: target added per switch hop
  uint32_t hops = 0;                  // switch hops of the flows' paths (no TTL here)
  double fs_range_factor = 5.0;       // flow scaling range = this x base_target
  double fs_min_cwnd = 0.1;           // packets: the scaling is fs_range at this window
  double fs_max_cwnd = 100;           // packets: and 0 at this one
  Time endpoint_target = us(10);      // target of the endpoint (NIC) delay
  double min_cwnd = 0.001;            // packets
  double max_cwnd = 10000;            // packets
  Time base_rtt = us(8);              // pacing RTT until the first sample
};

// DCTCP-style window control on RoCEv2 (dctcp.h): Alizadeh et al., SIGCOMM 2010.
struct DctcpParams {
  double g = 1.0 / 16;                // alpha gain (the paper, section 3.4)
  double initial_alpha = 1.0;         // alpha before the first window ends (Linux: 1)
  Time base_rtt = us(8);              // sets the initial window (one BDP) and the pacing RTT
                                      // until the first sample
  Rate min_rate = Rate::mbps(100);
};

struct CcConfig {
  CcAlgorithm algorithm = CcAlgorithm::None;
  DcqcnParams dcqcn;
  HpccParams hpcc;
  TimelyParams timely;
  SwiftParams swift;
  DctcpParams dctcp;
  uint32_t max_samples = 10000;  // per QP; the rate/alpha series stops growing beyond it
};

const char* cc_algorithm_name(CcAlgorithm a);

// One point of a QP's rate series: recorded whenever the rate or alpha changes.
struct CcSample {
  Time at = 0;
  Rate rate;
  Rate target;
  double alpha = 0;
};

struct CcStats {
  uint64_t cnps_received = 0;
  uint64_t rate_cuts = 0;
  uint64_t rate_increases = 0;
  uint64_t samples_dropped = 0;
};

// What one positive ACK tells the requester (TIMELY, Swift, DCTCP; see cc_hooks.cpp).
struct AckSample {
  uint32_t ack_psn = 0;
  uint32_t snd_nxt = 0;       // PSN after the last request packet sent
  Time rtt = -1;              // send of the packet ack_psn to this ACK; -1: no sample (the
                              // packet was retransmitted, Karn's rule, or is not recorded)
  Time endpoint_delay = 0;    // the part of rtt spent in the two NICs: the responder's
                              // arrival of the packet to its ACK's send, plus this NIC's
                              // arrival of the ACK to its handling (rx_latency)
  uint64_t acked_bytes = 0;   // wire bytes of the request packets this ACK newly covers
  uint32_t acked_packets = 0;
  uint32_t ce_packets = 0;    // of those, how many arrived CE-marked (the ACK's ECN echo)
};

// Per-QP congestion control state. Engine context only. An instance may schedule timers on
// the engine; they are cancelled when it is destroyed.
class CongestionControl {
 public:
  virtual ~CongestionControl() = default;
  virtual CcAlgorithm algorithm() const = 0;
  // The QP put a packet of `bytes` wire bytes on the port.
  virtual void on_packet_sent(uint64_t bytes) = 0;
  // A CNP for this QP arrived.
  virtual void on_cnp() = 0;
  // True when the QP's data packets ask the switches for in-band telemetry (HPCC).
  virtual bool wants_int() const { return false; }
  // An ACK of PSN ack_psn arrived carrying the INT hops it echoes; snd_nxt is the PSN after
  // the last request packet the QP has sent (TCP's snd_nxt, counted in packets).
  virtual void on_ack(uint32_t /*ack_psn*/, uint32_t /*snd_nxt*/,
                      const std::vector<net::IntHop>& /*hops*/) {}
  // A limit on the wire bytes of request packets sent and not yet acknowledged (HPCC's
  // window W); 0: none. The requester sends a new packet only while its bytes in flight are
  // below it (RC on RoCEv2 only: UC and UD get no ACKs to open it again).
  virtual uint64_t inflight_cap() const { return 0; }
  // True when the QP records its request packets' send times and hands each positive ACK
  // to on_ack_sample (TIMELY, Swift, DCTCP); the others pay nothing per packet.
  virtual bool wants_ack_samples() const { return false; }
  virtual void on_ack_sample(const AckSample& /*s*/) {}
  // Window algorithms: the congestion window in bytes (0: rate-based); the last RTT sample.
  virtual double window_bytes() const { return 0; }
  virtual Time last_rtt() const { return 0; }
  // The rate the requester paces the QP's packets to.
  virtual Rate current_rate() const = 0;
  virtual Rate target_rate() const { return current_rate(); }
  virtual double alpha() const { return 0; }
  const CcStats& stats() const { return stats_; }
  const std::vector<CcSample>& samples() const { return samples_; }

 protected:
  void record(Time at, Rate rate, Rate target, double alpha, uint32_t max_samples);
  CcStats stats_;
  std::vector<CcSample> samples_;
};

// Line rate, never changes; CNPs are counted and otherwise ignored.
class NoCc final : public CongestionControl {
 public:
  explicit NoCc(Rate line) : line_(line) {}
  CcAlgorithm algorithm() const override { return CcAlgorithm::None; }
  void on_packet_sent(uint64_t) override {}
  void on_cnp() override { stats_.cnps_received++; }
  Rate current_rate() const override { return line_; }

 private:
  Rate line_;
};

class Dcqcn final : public CongestionControl {
 public:
  Dcqcn(Engine& engine, const DcqcnParams& p, Rate line, uint32_t max_samples);
  ~Dcqcn() override;
  Dcqcn(const Dcqcn&) = delete;
  Dcqcn& operator=(const Dcqcn&) = delete;

  CcAlgorithm algorithm() const override { return CcAlgorithm::Dcqcn; }
  void on_packet_sent(uint64_t bytes) override;
  void on_cnp() override;
  Rate current_rate() const override { return Rate{static_cast<uint64_t>(rate_ + 0.5)}; }
  Rate target_rate() const override { return Rate{static_cast<uint64_t>(target_ + 0.5)}; }
  double alpha() const override { return alpha_; }
  // Rate-increase counters since the last cut (T and BC of the algorithm).
  uint32_t timer_events() const { return t_count_; }
  uint32_t byte_events() const { return bc_count_; }

 private:
  void on_alpha_timer();
  void on_rate_timer();
  void increase();
  void arm_timers();
  void stop_if_recovered();
  void sample();

  Engine& engine_;
  DcqcnParams p_;
  double line_;                  // bits/s
  double rate_, target_, alpha_;
  bool cnp_in_period_ = false;   // a CNP arrived since the last alpha update
  Time last_cut_ = -1;
  Time alpha_stopped_ = -1;      // timers idle since (rate back at line rate)
  uint32_t t_count_ = 0, bc_count_ = 0;
  uint64_t bytes_ = 0;           // bytes since the last byte-counter event
  uint32_t max_samples_;
  EventId alpha_timer_, rate_timer_;
};

// Makes the per-QP controller for `config` on a port of rate `line`.
std::unique_ptr<CongestionControl> make_cc(Engine& engine, const CcConfig& config, Rate line);

}  // namespace rdmasim::nic
