// DCTCP-style sender (see dctcp.h).
#include "sim/nic/dctcp.h"

#include <algorithm>
#include <cmath>

namespace rdmasim::nic {
namespace {

// a is at or after b in 24-bit PSN order.
bool psn_reached(uint32_t a, uint32_t b) {
  return static_cast<int32_t>(((a - b) & 0xffffff) << 8) >= 0;
}

}  // namespace

Dctcp::Dctcp(Engine& engine, const DctcpParams& p, Rate line, uint32_t max_samples)
    : engine_(engine),
      p_(p),
      line_(static_cast<double>(line.bps)),
      cwnd_(line_ * to_seconds(p.base_rtt) / 8.0),
      alpha_(p.initial_alpha),
      rtt_(p.base_rtt),
      max_samples_(max_samples) {
  record(engine_.now(), current_rate(), target_rate(), alpha_, max_samples_);
  recorded_rate_ = static_cast<double>(current_rate().bps);
}

Rate Dctcp::current_rate() const {
  const double r = cwnd_ * 8.0 / to_seconds(rtt_);
  return Rate{static_cast<uint64_t>(std::clamp(r, static_cast<double>(p_.min_rate.bps), line_) + 0.5)};
}

void Dctcp::on_ack_sample(const AckSample& s) {
  if (s.rtt > 0) rtt_ = s.rtt;
  const double before = cwnd_;
  const double bytes = static_cast<double>(s.acked_bytes);
  const double marked =
      s.acked_packets ? bytes * std::min(1.0, static_cast<double>(s.ce_packets) / s.acked_packets) : 0;
  acked_ += bytes;
  marked_ += marked;
  if (!have_window_end_) {
    window_end_ = s.snd_nxt;
    have_window_end_ = true;
  } else if (psn_reached(s.ack_psn, window_end_)) {
    const double f = acked_ > 0 ? marked_ / acked_ : 0;
    alpha_ = (1.0 - p_.g) * alpha_ + p_.g * f;
    acked_ = marked_ = 0;
    window_end_ = s.snd_nxt;
  }
  if (in_cwr_ && psn_reached(s.ack_psn, cwr_end_)) in_cwr_ = false;
  const double pkt = s.acked_packets ? bytes / s.acked_packets : 0;
  if (s.ce_packets > 0 && !in_cwr_) {
    cwnd_ *= 1.0 - alpha_ / 2.0;
    in_cwr_ = true;
    cwr_end_ = s.snd_nxt;
  } else if (s.ce_packets == 0 && cwnd_ > 0) {
    cwnd_ += pkt * bytes / cwnd_;
  }
  const double t = to_seconds(rtt_);
  cwnd_ = std::clamp(cwnd_, static_cast<double>(p_.min_rate.bps) * t / 8.0, line_ * t / 8.0);
  if (cwnd_ < before) stats_.rate_cuts++;
  else if (cwnd_ > before) stats_.rate_increases++;
  // The series: every cut, and otherwise a point once the rate has moved 1% of the line rate
  // since the last one (one per ACK would fill max_samples within milliseconds).
  const double rate = static_cast<double>(current_rate().bps);
  if (cwnd_ < before || (cwnd_ != before && std::abs(rate - recorded_rate_) >= 0.01 * line_)) {
    record(engine_.now(), current_rate(), target_rate(), alpha_, max_samples_);
    recorded_rate_ = rate;
  }
}

}  // namespace rdmasim::nic
