// Swift's sender (see swift.h).
#include "sim/nic/swift.h"

#include <algorithm>
#include <cmath>

namespace rdmasim::nic {

Swift::Swift(Engine& engine, const SwiftParams& p, Rate line, uint32_t max_samples)
    : engine_(engine), p_(p), line_(static_cast<double>(line.bps)), max_samples_(max_samples) {
  fs_range_ = p_.fs_range_factor * to_seconds(p_.base_target);
  fs_a_ = fs_range_ / (1.0 / std::sqrt(p_.fs_min_cwnd) - 1.0 / std::sqrt(p_.fs_max_cwnd));
  fs_b_ = -fs_a_ / std::sqrt(p_.fs_max_cwnd);
  record(engine_.now(), current_rate(), target_rate(), 0, max_samples_);
  recorded_rate_ = line_;
}

Rate Swift::current_rate() const {
  if (rtt_ <= 0) return Rate{static_cast<uint64_t>(line_)};
  const double r = cwnd() * pkt_bytes_ * 8.0 / to_seconds(rtt_);
  return Rate{static_cast<uint64_t>(std::min(r, line_) + 0.5)};
}

Time Swift::fabric_target(double fcwnd) const {
  const double fs = std::clamp(fs_a_ / std::sqrt(fcwnd) + fs_b_, 0.0, fs_range_);
  return p_.base_target + static_cast<Time>(p_.hops) * p_.hop_scale + static_cast<Time>(fs * kSecond + 0.5);
}

void Swift::adjust(Window& w, Time delay, Time target, uint32_t acked, Time now) {
  if (delay < target) {
    w.cwnd += w.cwnd >= 1.0 ? p_.ai * acked / w.cwnd : p_.ai * acked;
  } else if (w.last_decrease < 0 || now - w.last_decrease >= rtt_) {
    const double d = to_seconds(delay), t = to_seconds(target);
    w.cwnd *= std::max(1.0 - p_.beta * (d - t) / d, 1.0 - p_.max_mdf);
    w.last_decrease = now;
  }
  w.cwnd = std::clamp(w.cwnd, p_.min_cwnd, p_.max_cwnd);
}

void Swift::on_ack_sample(const AckSample& s) {
  if (s.acked_packets > 0) {
    bytes_seen_ += s.acked_bytes;
    packets_seen_ += s.acked_packets;
    pkt_bytes_ = static_cast<double>(bytes_seen_) / static_cast<double>(packets_seen_);
  }
  if (s.rtt < 0 || pkt_bytes_ <= 0) return;
  const Time now = engine_.now();
  const double before = cwnd();
  if (rtt_ == 0) {
    // The first sample: both windows start at the line rate's window over base_rtt.
    fabric_.cwnd = endpoint_.cwnd = std::clamp(
        line_ * to_seconds(p_.base_rtt) / 8.0 / pkt_bytes_, p_.min_cwnd, p_.max_cwnd);
  }
  rtt_ = s.rtt;
  const Time endpoint = std::min(s.endpoint_delay, s.rtt);
  adjust(fabric_, s.rtt - endpoint, fabric_target(fabric_.cwnd), s.acked_packets, now);
  adjust(endpoint_, endpoint, p_.endpoint_target, s.acked_packets, now);
  const double after = cwnd();
  if (after < before) stats_.rate_cuts++;
  else if (after > before) stats_.rate_increases++;
  // The series: every decrease, and an increase once the rate has moved 1% of the line rate
  // since the last point (one per ACK would fill max_samples within milliseconds).
  const double rate = static_cast<double>(current_rate().bps);
  if (after < before || (after > before && std::abs(rate - recorded_rate_) >= 0.01 * line_)) {
    record(now, current_rate(), target_rate(), after, max_samples_);
    recorded_rate_ = rate;
  }
}

}  // namespace rdmasim::nic
