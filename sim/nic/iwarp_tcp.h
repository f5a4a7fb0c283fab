// The TCP model under iWARP: one connection per RC QP. Pure state, no engine: the caller
// (sim/nic/iwarp.cpp) feeds it ACKs and timer expiries with the current time, asks it for
// the next segment to transmit, and schedules the retransmission timer at rto_deadline().
//
// What it models (byte sequence numbers, modulo 2^32):
// - Sender: segments are pushed whole (one FPDU per segment, as MPA's FPDU alignment asks)
//   and kept until cumulatively acknowledged. Slow start (cwnd += min(acked, MSS) per ACK,
//   RFC 5681 3.1), congestion avoidance (cwnd += MSS*MSS/cwnd per ACK), fast retransmit on
//   the 3rd duplicate ACK and NewReno fast recovery (RFC 6582: partial ACKs retransmit the
//   next hole, a full ACK sets cwnd = ssthresh, option 2 of step 6). RTO per RFC 6298 (SRTT/RTTVAR with
//   alpha 1/8 and beta 1/4, RTO = SRTT + 4 RTTVAR, floored at min_rto, Karn's rule: no RTT
//   sample from a retransmitted segment, exponential backoff on expiry, cwnd to one MSS and
//   everything outstanding resent). The peer's receive window limits the flight.
// - Optional ECN with DCTCP's reaction (RFC 8257): per observation window (one RTT of
//   data) alpha = (1 - g) alpha + g F with F the fraction of acknowledged bytes that carried
//   ECE; on the first ECE of a window cwnd = cwnd (1 - alpha / 2).
// - Receiver: in-order delivery, out-of-order segments buffered (within the window) and a
//   duplicate ACK sent for each; every data segment is acknowledged at once (no delayed
//   ACK), with ECE = the CE mark of that segment (DCTCP's precise echo without delay).
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <vector>

#include "sim/core/time.h"
#include "sim/nic/rdma_packet.h"

namespace rdmasim::nic::iwarp {

// Sequence-number arithmetic modulo 2^32: seq_lt(a, b) when a is before b.
inline bool seq_lt(uint32_t a, uint32_t b) { return static_cast<int32_t>(a - b) < 0; }
inline bool seq_le(uint32_t a, uint32_t b) { return static_cast<int32_t>(a - b) <= 0; }

struct TcpConfig {
  uint32_t mss = 1448;             // bytes of TCP payload per segment (1500 - 20 IP - 20 TCP - 12 timestamps)
  uint32_t init_cwnd_segments = 10;  // RFC 6928
  uint32_t rcv_wnd = 1 << 20;      // receive window advertised, bytes
  Time min_rto = ms(1);            // RFC 6298 says 1 s; data-centre stacks use ~1-5 ms
  Time initial_rto = ms(1);        // before the first RTT sample
  Time max_rto = ms(1000);
  uint32_t max_retries = 8;        // RTO expiries in a row before the connection aborts
  bool ecn = false;                // ECN-capable; reaction is DCTCP's
  double dctcp_g = 1.0 / 16;       // RFC 8257 recommended gain
  uint32_t dupack_threshold = 3;   // RFC 5681
};

// One segment on the sender's queue. `fpdu` is the MPA frame the segment carries.
struct TxSegment {
  uint32_t seq = 0;
  uint32_t len = 0;
  std::shared_ptr<const RdmaPacket> fpdu;
  Time sent_at = -1;               // last transmission time; -1 = never sent
  bool retransmitted = false;      // Karn: no RTT sample
};

struct TcpCounters {
  uint64_t segments_sent = 0, retransmits = 0, fast_retransmits = 0, timeouts = 0;
  uint64_t dup_acks_received = 0, ecn_reductions = 0, out_of_order_received = 0;
  uint64_t ce_received = 0;   // data segments that arrived CE-marked (receiver)
  uint64_t ece_received = 0;  // ACKs that carried ECE, with ecn on (sender)
};

class TcpConnection {
 public:
  TcpConnection(const TcpConfig& cfg, uint32_t isn, uint32_t peer_isn);

  // ---- sender ----
  // Appends a segment of `len` bytes (len <= mss) carrying `fpdu`.
  void push(uint32_t len, std::shared_ptr<const RdmaPacket> fpdu);
  // True when next_segment would return something now.
  bool can_send() const;
  // True when segments wait that were never sent (or are to be resent after an RTO).
  bool has_unsent() const { return next_ < q_.size(); }
  // True when a new segment of `len` bytes would fit in the window now (nothing is queued).
  bool window_allows(uint32_t len) const;
  // The segment to put on the wire now (a retransmission first), or null. Arms the timer.
  const TxSegment* next_segment(Time now);
  // Processes the ACK fields of a received segment. Returns the segments it newly
  // acknowledged, oldest first.
  std::vector<TxSegment> on_ack(uint32_t ack, uint32_t wnd, bool ece, bool has_data, Time now);
  // The retransmission timer fired (at rto_deadline()). False when the connection gives up.
  bool on_rto(Time now);
  Time rto_deadline() const { return rto_deadline_; }

  // ---- receiver ----
  struct Delivered {
    std::vector<std::shared_ptr<const RdmaPacket>> fpdus;  // now in order, oldest first
    bool send_ack = false;   // an ACK (new or duplicate) must be sent
    bool ece = false;        // its ECE bit
  };
  Delivered on_data(uint32_t seq, uint32_t len, std::shared_ptr<const RdmaPacket> fpdu, bool ce);
  uint32_t rcv_nxt() const { return rcv_nxt_; }
  uint32_t advertised_window() const;

  // ---- observation (tests, stats) ----
  uint32_t cwnd() const { return cwnd_; }
  uint32_t ssthresh() const { return ssthresh_; }
  uint32_t flight() const { return snd_nxt_ - snd_una_; }
  uint32_t snd_una() const { return snd_una_; }
  uint32_t snd_nxt() const { return snd_nxt_; }
  Time srtt() const { return srtt_; }
  Time rttvar() const { return rttvar_; }
  Time rto() const { return rto_; }
  double dctcp_alpha() const { return alpha_; }
  bool in_recovery() const { return in_recovery_; }
  const TcpCounters& counters() const { return counters_; }
  const TcpConfig& config() const { return cfg_; }

 private:
  void rtt_sample(Time r);
  void restart_timer(Time now);
  void dctcp_update(uint32_t acked, bool ece);
  TxSegment* find(uint32_t seq);

  TcpConfig cfg_;
  // Sender.
  std::deque<TxSegment> q_;        // unacknowledged and unsent segments, in sequence order
  size_t next_ = 0;                // index in q_ of the first never-sent (or to-resend) segment
  uint32_t snd_una_, snd_nxt_;
  uint32_t snd_max_;                // highest sequence sent (snd_nxt rewinds on RTO)
  uint32_t cwnd_, ssthresh_ = UINT32_MAX;
  uint32_t peer_wnd_;
  uint32_t dupacks_ = 0;
  bool in_recovery_ = false;
  uint32_t recover_ = 0;           // NewReno: snd_nxt when recovery began
  bool retx_head_ = false;         // the segment at snd_una must be resent before new data
  Time srtt_ = 0, rttvar_ = 0, rto_;
  bool have_rtt_ = false;
  uint32_t backoffs_ = 0;
  Time rto_deadline_ = kTimeNever;
  // DCTCP.
  double alpha_ = 1.0;             // RFC 8257: initial DCTCP.Alpha 1
  uint64_t win_acked_ = 0, win_marked_ = 0;
  uint32_t win_end_;
  bool reduced_this_win_ = false;
  // Receiver.
  uint32_t rcv_nxt_;
  struct RxSegment {
    uint32_t len;
    std::shared_ptr<const RdmaPacket> fpdu;
  };
  std::map<uint32_t, RxSegment> ooo_;  // by seq (all within the window ahead of rcv_nxt)
  uint32_t ooo_bytes_ = 0;
  TcpCounters counters_;
};

}  // namespace rdmasim::nic::iwarp
