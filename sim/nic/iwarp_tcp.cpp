// TCP sender/receiver state machine of the iWARP model; see iwarp_tcp.h for what it covers.
#include "sim/nic/iwarp_tcp.h"

#include <algorithm>

namespace rdmasim::nic::iwarp {

TcpConnection::TcpConnection(const TcpConfig& cfg, uint32_t isn, uint32_t peer_isn)
    : cfg_(cfg),
      snd_una_(isn),
      snd_nxt_(isn),
      snd_max_(isn),
      cwnd_(cfg.init_cwnd_segments * cfg.mss),
      peer_wnd_(cfg.rcv_wnd),
      rto_(cfg.initial_rto),
      win_end_(isn),
      rcv_nxt_(peer_isn) {}

void TcpConnection::push(uint32_t len, std::shared_ptr<const RdmaPacket> fpdu) {
  TxSegment s;
  s.seq = q_.empty() ? snd_nxt_ : q_.back().seq + q_.back().len;
  // Segments not yet sent follow the last queued one; snd_nxt advances as they leave.
  s.len = len;
  s.fpdu = std::move(fpdu);
  q_.push_back(std::move(s));
}

bool TcpConnection::window_allows(uint32_t len) const {
  const uint32_t wnd = std::min(cwnd_, peer_wnd_);
  // Always allow one segment when nothing is in flight, so a tiny window cannot stall.
  return flight() == 0 || flight() + len <= wnd;
}

bool TcpConnection::can_send() const {
  if (retx_head_ && !q_.empty()) return true;
  return next_ < q_.size() && window_allows(q_[next_].len);
}

const TxSegment* TcpConnection::next_segment(Time now) {
  TxSegment* s = nullptr;
  if (retx_head_ && !q_.empty()) {
    retx_head_ = false;
    s = &q_.front();
    s->retransmitted = true;
    counters_.retransmits++;
  } else if (next_ < q_.size() && window_allows(q_[next_].len)) {
    s = &q_[next_++];
    if (s->sent_at >= 0) {
      s->retransmitted = true;  // resent after an RTO rewound next_
      counters_.retransmits++;
    }
    const uint32_t end = s->seq + s->len;
    if (seq_lt(snd_nxt_, end)) snd_nxt_ = end;
    if (seq_lt(snd_max_, end)) snd_max_ = end;
  } else {
    return nullptr;
  }
  s->sent_at = now;
  counters_.segments_sent++;
  if (rto_deadline_ == kTimeNever) rto_deadline_ = now + rto_;  // RFC 6298 5.1
  return s;
}

void TcpConnection::rtt_sample(Time r) {
  // RFC 6298 2.2 / 2.3 with alpha = 1/8, beta = 1/4, K = 4; clock granularity G = 0.
  if (!have_rtt_) {
    srtt_ = r;
    rttvar_ = r / 2;
    have_rtt_ = true;
  } else {
    const Time err = srtt_ > r ? srtt_ - r : r - srtt_;
    rttvar_ = (3 * rttvar_ + err) / 4;
    srtt_ = (7 * srtt_ + r) / 8;
  }
  rto_ = std::clamp(srtt_ + 4 * rttvar_, cfg_.min_rto, cfg_.max_rto);  // RFC 6298 2.4, 2.5
}

void TcpConnection::restart_timer(Time now) {
  rto_deadline_ = snd_una_ == snd_nxt_ ? kTimeNever : now + rto_;  // RFC 6298 5.2, 5.3
}

TxSegment* TcpConnection::find(uint32_t seq) {
  for (TxSegment& s : q_)
    if (s.seq == seq) return &s;
  return nullptr;
}

void TcpConnection::dctcp_update(uint32_t acked, bool ece) {
  // RFC 8257 3.3: count acknowledged and marked bytes; at the end of each observation
  // window (when snd_una passes the snd_nxt recorded at its start) update alpha.
  win_acked_ += acked;
  if (ece) win_marked_ += acked;
  if (seq_lt(win_end_, snd_una_) || (snd_una_ == win_end_ && win_acked_ > 0)) {
    const double f = win_acked_ ? static_cast<double>(win_marked_) / win_acked_ : 0.0;
    alpha_ = (1 - cfg_.dctcp_g) * alpha_ + cfg_.dctcp_g * f;
    win_acked_ = win_marked_ = 0;
    win_end_ = snd_nxt_;
    reduced_this_win_ = false;
  }
  if (ece && !reduced_this_win_ && !in_recovery_) {
    // RFC 8257 3.3: cwnd = cwnd * (1 - alpha / 2), at most once per window.
    cwnd_ = std::max<uint32_t>(static_cast<uint32_t>(cwnd_ * (1 - alpha_ / 2)), cfg_.mss);
    ssthresh_ = cwnd_;
    reduced_this_win_ = true;
    counters_.ecn_reductions++;
  }
}

std::vector<TxSegment> TcpConnection::on_ack(uint32_t ack, uint32_t wnd, bool ece, bool has_data,
                                             Time now) {
  std::vector<TxSegment> done;
  peer_wnd_ = wnd;
  if (cfg_.ecn && ece) counters_.ece_received++;
  if (seq_lt(snd_max_, ack)) return done;  // acknowledges what was never sent: ignored
  if (seq_le(ack, snd_una_)) {
    // A duplicate ACK (RFC 5681 2: no data, no window change, something outstanding).
    if (ack == snd_una_ && !has_data && snd_una_ != snd_nxt_) {
      counters_.dup_acks_received++;
      if (cfg_.ecn && ece) dctcp_update(0, true);
      if (in_recovery_) {
        cwnd_ += cfg_.mss;  // RFC 6582 3.2 step 4: inflate per further duplicate
      } else if (++dupacks_ == cfg_.dupack_threshold) {
        // Fast retransmit (RFC 5681 3.2 / RFC 6582 3.2 step 2-3).
        ssthresh_ = std::max(flight() / 2, 2 * cfg_.mss);
        cwnd_ = ssthresh_ + cfg_.dupack_threshold * cfg_.mss;
        in_recovery_ = true;
        recover_ = snd_nxt_;
        retx_head_ = true;
        counters_.fast_retransmits++;
      }
    }
    return done;
  }
  const uint32_t acked = ack - snd_una_;
  snd_una_ = ack;
  if (seq_lt(snd_nxt_, ack)) snd_nxt_ = ack;  // a late ACK of data sent before an RTO
  while (!q_.empty() && seq_le(q_.front().seq + q_.front().len, ack)) {
    if (!q_.front().retransmitted && q_.front().sent_at >= 0 && q_.front().seq + q_.front().len == ack)
      rtt_sample(now - q_.front().sent_at);
    done.push_back(std::move(q_.front()));
    q_.pop_front();
    if (next_ > 0) next_--;
  }
  if (backoffs_ && have_rtt_) {
    // New data acknowledged after an RTO: the backed-off RTO is recomputed from SRTT and
    // RTTVAR (as Linux does) instead of waiting for a sample Karn's rule may long forbid.
    rto_ = std::clamp(srtt_ + 4 * rttvar_, cfg_.min_rto, cfg_.max_rto);
  }
  backoffs_ = 0;
  dupacks_ = 0;
  if (cfg_.ecn) dctcp_update(acked, ece);
  if (in_recovery_) {
    if (seq_lt(ack, recover_)) {
      // Partial ACK (RFC 6582 3.2 step 5): resend the next hole, deflate by what was acked.
      retx_head_ = true;
      cwnd_ = cwnd_ > acked ? cwnd_ - acked + cfg_.mss : cfg_.mss;
    } else {
      // Full ACK (step 6, option 2): leave recovery with cwnd = ssthresh.
      in_recovery_ = false;
      cwnd_ = ssthresh_;
    }
  } else if (cwnd_ < ssthresh_) {
    cwnd_ += std::min(acked, cfg_.mss);  // slow start, RFC 5681 (3.2) with L = 1 SMSS
  } else {
    cwnd_ += std::max<uint32_t>(1, static_cast<uint32_t>(uint64_t{cfg_.mss} * cfg_.mss / cwnd_));  // (3.3)
  }
  restart_timer(now);
  return done;
}

bool TcpConnection::on_rto(Time /*now*/) {
  rto_deadline_ = kTimeNever;
  if (snd_una_ == snd_max_) return true;
  counters_.timeouts++;
  if (++backoffs_ > cfg_.max_retries) return false;
  // RFC 5681 (4): ssthresh = max(FlightSize / 2, 2 SMSS); cwnd = 1 SMSS (loss window).
  ssthresh_ = std::max(flight() / 2, 2 * cfg_.mss);
  cwnd_ = cfg_.mss;
  in_recovery_ = false;
  dupacks_ = 0;
  retx_head_ = false;
  next_ = 0;  // go back to snd_una: everything outstanding is resent as the window opens
  snd_nxt_ = snd_una_;
  rto_ = std::min(rto_ * 2, cfg_.max_rto);  // RFC 6298 5.5: back off
  return true;
}

uint32_t TcpConnection::advertised_window() const {
  return cfg_.rcv_wnd > ooo_bytes_ ? cfg_.rcv_wnd - ooo_bytes_ : 0;
}

TcpConnection::Delivered TcpConnection::on_data(uint32_t seq, uint32_t len,
                                                std::shared_ptr<const RdmaPacket> fpdu, bool ce) {
  Delivered d;
  if (len == 0) return d;
  if (ce) counters_.ce_received++;
  d.send_ack = true;
  d.ece = ce;
  if (seq != rcv_nxt_) {
    // Old (already delivered) or ahead of a hole: buffer what is ahead, ACK rcv_nxt again.
    const uint32_t ahead = seq - rcv_nxt_;
    if (!seq_lt(seq, rcv_nxt_) && ahead < cfg_.rcv_wnd && !ooo_.count(ahead)) {
      counters_.out_of_order_received++;
      ooo_[ahead] = {len, std::move(fpdu)};
      ooo_bytes_ += len;
    }
    return d;
  }
  d.fpdus.push_back(std::move(fpdu));
  rcv_nxt_ += len;
  // The buffer is keyed by distance from rcv_nxt: re-key after each advance.
  while (!ooo_.empty()) {
    std::map<uint32_t, RxSegment> shifted;
    bool moved = false;
    for (auto& [off, seg] : ooo_) {
      if (off < len) continue;  // overlapped by what was just delivered (not produced here)
      shifted[off - len] = std::move(seg);
    }
    ooo_bytes_ = 0;
    for (auto& [off, seg] : shifted) ooo_bytes_ += seg.len;
    ooo_ = std::move(shifted);
    auto it = ooo_.find(0);
    if (it != ooo_.end()) {
      len = it->second.len;
      d.fpdus.push_back(std::move(it->second.fpdu));
      ooo_bytes_ -= len;
      ooo_.erase(it);
      rcv_nxt_ += len;
      moved = true;
    }
    if (!moved) break;
  }
  return d;
}

}  // namespace rdmasim::nic::iwarp
