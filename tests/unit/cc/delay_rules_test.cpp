// TIMELY, Swift and DCTCP update rules (sim/nic/{timely,swift,dctcp}.h) on hand-fed ACK
// samples; every expected value is the rule's formula worked out beside it.
#include <doctest/doctest.h>

#include <cmath>

#include "sim/nic/dctcp.h"
#include "sim/nic/swift.h"
#include "sim/nic/timely.h"

namespace rdmasim::nic {
namespace {

double bps(Rate r) { return static_cast<double>(r.bps); }

AckSample ack(uint32_t psn, uint32_t snd_nxt, Time rtt, uint32_t packets = 1, uint32_t ce = 0,
              uint64_t bytes_per_packet = 4000, Time endpoint = 0) {
  AckSample s;
  s.ack_psn = psn;
  s.snd_nxt = snd_nxt;
  s.rtt = rtt;
  s.endpoint_delay = endpoint;
  s.acked_packets = packets;
  s.acked_bytes = packets * bytes_per_packet;
  s.ce_packets = ce;
  return s;
}

// --- TIMELY (defaults: alpha 0.875, beta 0.8, T_low 50 us, T_high 500 us, min_rtt 20 us,
// delta 10 Mb/s, HAI after 5) ---

TEST_CASE("timely: the four regions of Algorithm 1 on hand-fed RTTs") {
  Engine e;
  TimelyParams p;
  Timely cc(e, p, Rate::gbps(100), 1000);
  cc.update(us(100));  // the first sample only sets prev_rtt
  CHECK(cc.current_rate() == Rate::gbps(100));
  // 600 us > T_high: rate *= 1 - 0.8 (1 - 500/600).
  double rate = 100e9 * (1 - 0.8 * (1 - 500.0 / 600));
  cc.update(us(600));
  CHECK(bps(cc.current_rate()) == doctest::Approx(rate));
  // rtt_diff = 0.875 x 500 us = 437.5 us.
  double diff = 0.875 * 500e-6;
  CHECK(cc.alpha() == doctest::Approx(diff / 20e-6));
  // 40 us < T_low: rate += delta, whatever the gradient.
  diff = 0.125 * diff + 0.875 * (40e-6 - 600e-6);
  rate += 10e6;
  cc.update(us(40));
  CHECK(bps(cc.current_rate()) == doctest::Approx(rate));
  // 100 us: rtt_diff = 0.125 x (-435.3125 us) + 0.875 x 60 us = -1.914 us <= 0: rate += delta.
  diff = 0.125 * diff + 0.875 * 60e-6;
  CHECK(diff < 0);
  rate += 10e6;
  cc.update(us(100));
  CHECK(bps(cc.current_rate()) == doctest::Approx(rate));
  CHECK(cc.negative_run() == 1);
  // 120 us: rtt_diff = 0.125 x diff + 0.875 x 20 us > 0: rate *= 1 - beta x gradient.
  diff = 0.125 * diff + 0.875 * 20e-6;
  const double g = diff / 20e-6;
  CHECK(g > 0);
  rate *= 1 - 0.8 * g;
  cc.update(us(120));
  CHECK(cc.alpha() == doctest::Approx(g));
  CHECK(bps(cc.current_rate()) == doctest::Approx(rate));
  CHECK(cc.negative_run() == 0);  // a decrease ends the run
}

TEST_CASE("timely: hyperactive increase, N = 5 after five non-positive gradients") {
  Engine e;
  TimelyParams p;
  Timely cc(e, p, Rate::gbps(100), 1000);
  cc.update(us(100));
  cc.update(us(600));  // a cut to 100 (1 - 0.8/6) Gb/s
  const double cut = 100e9 * (1 - 0.8 * (1 - 500.0 / 600));
  // 100 us, then 100 us again: the gradient stays negative (the EWMA of -500 us, then 0s).
  for (int i = 0; i < 5; ++i) cc.update(us(100));
  CHECK(bps(cc.current_rate()) == doctest::Approx(cut + 5 * 10e6));  // N = 1 five times
  cc.update(us(100));
  CHECK(bps(cc.current_rate()) == doctest::Approx(cut + 10 * 10e6));  // the sixth: N = 5
}

TEST_CASE("timely: one update per RTT, at the first ACK past the last update's snd_nxt") {
  Engine e;
  TimelyParams p;
  Timely cc(e, p, Rate::gbps(100), 1000);
  cc.on_ack_sample(ack(10, 20, us(100)));  // first: prev_rtt = 100 us; next update at PSN 20
  cc.on_ack_sample(ack(15, 25, us(600)));  // before PSN 20: ignored
  CHECK(cc.current_rate() == Rate::gbps(100));
  cc.on_ack_sample(ack(20, 30, us(600)));  // at PSN 20: the T_high cut
  CHECK(bps(cc.current_rate()) == doctest::Approx(100e9 * (1 - 0.8 * (1 - 500.0 / 600))));
  cc.on_ack_sample(ack(21, 31, -1));       // no RTT sample (a retransmission): nothing
  cc.on_ack_sample(ack(25, 35, us(600)));  // before PSN 30: ignored
  CHECK(cc.stats().rate_cuts == 1);
}

// --- Swift (defaults: ai 1, beta 0.8, max_mdf 0.5, base_target 25 us, 0 hops, fs_range
// 5 x 25 us, fs 0.1..100 packets, endpoint target 10 us, base_rtt 8 us) ---

// The fabric target of Swift's section 3.1 for a window of w packets.
double swift_target(double w) {
  const double range = 5 * 25e-6;
  const double a = range / (1 / std::sqrt(0.1) - 1 / std::sqrt(100.0));
  const double b = -a / std::sqrt(100.0);
  return 25e-6 + std::clamp(a / std::sqrt(w) + b, 0.0, range);
}

TEST_CASE("swift: the flow-scaled fabric target, fs_range at fs_min_cwnd and 0 at fs_max_cwnd") {
  Engine e;
  SwiftParams p;
  Swift cc(e, p, Rate::gbps(100), 1000);
  CHECK(to_seconds(cc.fabric_target(100)) == doctest::Approx(25e-6));
  CHECK(to_seconds(cc.fabric_target(1000)) == doctest::Approx(25e-6));  // clamped at 0
  CHECK(to_seconds(cc.fabric_target(0.1)) == doctest::Approx(150e-6));
  CHECK(to_seconds(cc.fabric_target(0.01)) == doctest::Approx(150e-6));  // clamped at fs_range
  CHECK(to_seconds(cc.fabric_target(4)) == doctest::Approx(swift_target(4)));
  p.hops = 3;  // + 3 x 1 us
  Swift hop(e, p, Rate::gbps(100), 1000);
  CHECK(to_seconds(hop.fabric_target(4)) == doctest::Approx(swift_target(4) + 3e-6));
}

TEST_CASE("swift: additive increase under target, one multiplicative decrease per RTT above") {
  Engine e;
  SwiftParams p;
  Swift cc(e, p, Rate::gbps(100), 1000);
  CHECK(cc.current_rate() == Rate::gbps(100));  // before any sample
  // First sample (4000 B packets): both windows start at 100 Gb/s x 8 us / 8 / 4000 = 25
  // packets; 10 us - 0.2 us of fabric delay is under target: w = 25 + 1/25.
  cc.on_ack_sample(ack(0, 1, us(10), 1, 0, 4000, ns(200)));
  double w = 25 + 1.0 / 25;
  CHECK(cc.cwnd() == doctest::Approx(w));
  CHECK(cc.window_bytes() == doctest::Approx(w * 4000));
  CHECK(bps(cc.current_rate()) == doctest::Approx(w * 4000 * 8 / 10e-6));  // cwnd / RTT
  // Two packets acknowledged at once: w += 1 x 2 / w.
  cc.on_ack_sample(ack(2, 3, us(10), 2, 0, 4000, ns(200)));
  w += 2 / w;
  CHECK(cc.cwnd() == doctest::Approx(w));
  // Fabric delay 40 us over the target t: w *= max(1 - 0.8 (40 - t)/40, 0.5).
  const double t = swift_target(w);
  e.run_until(us(1));
  cc.on_ack_sample(ack(3, 4, us(40) + ns(200), 1, 0, 4000, ns(200)));
  w *= std::max(1 - 0.8 * (40e-6 - t) / 40e-6, 0.5);
  CHECK(cc.fabric_cwnd() == doctest::Approx(w));
  CHECK(cc.stats().rate_cuts == 1);
  // Within one RTT (the current sample's, 400 us) of that decrease: no second one.
  e.run_until(us(30));
  cc.on_ack_sample(ack(4, 5, us(400), 1, 0, 4000, ns(200)));
  CHECK(cc.fabric_cwnd() == doctest::Approx(w));
  // One RTT later: 400 us of fabric delay, far above target: the max_mdf bound halves it.
  e.run_until(us(1000));
  cc.on_ack_sample(ack(5, 6, us(400) + ns(200), 1, 0, 4000, ns(200)));
  w *= 0.5;
  CHECK(cc.fabric_cwnd() == doctest::Approx(w));
  CHECK(cc.cwnd() == doctest::Approx(w));  // the endpoint window is larger
}

TEST_CASE("swift: the endpoint window follows the NIC delay against its own target") {
  Engine e;
  SwiftParams p;
  Swift cc(e, p, Rate::gbps(100), 1000);
  // 20 us RTT of which 15 us in the NICs: fabric 5 us < target (AI), endpoint 15 us > 10 us:
  // w_e = 25 x max(1 - 0.8 x 5/15, 0.5); cwnd = min(fabric, endpoint).
  cc.on_ack_sample(ack(0, 1, us(20), 1, 0, 4000, us(15)));
  CHECK(cc.fabric_cwnd() == doctest::Approx(25 + 1.0 / 25));
  CHECK(cc.endpoint_cwnd() == doctest::Approx(25 * (1 - 0.8 * 5.0 / 15)));
  CHECK(cc.cwnd() == doctest::Approx(cc.endpoint_cwnd()));
}

// --- DCTCP (defaults: g 1/16, initial alpha 1, base_rtt 8 us) ---

TEST_CASE("dctcp: alpha per window from the marked fraction, one alpha/2 cut per window") {
  Engine e;
  DctcpParams p;
  Dctcp cc(e, p, Rate::gbps(100), 1000);
  // cwnd starts at one BDP: 100 Gb/s x 8 us / 8 = 100,000 B; paced at cwnd / base_rtt.
  CHECK(cc.window_bytes() == doctest::Approx(100000));
  CHECK(cc.current_rate() == Rate::gbps(100));
  // An unmarked ACK of one 4000 B packet (RTT 10 us): cwnd += 4000 x 4000 / cwnd. The first
  // ACK also opens the first window, which ends when an ACK reaches PSN 10.
  double w = 100000;
  cc.on_ack_sample(ack(0, 10, us(10)));
  w += 4000.0 * 4000 / w;
  CHECK(cc.window_bytes() == doctest::Approx(w));
  CHECK(bps(cc.current_rate()) == doctest::Approx(w * 8 / 10e-6));
  // A marked ACK: cwnd *= 1 - alpha/2 with alpha still 1; then reduced until PSN 11.
  cc.on_ack_sample(ack(1, 11, us(10), 1, 1));
  w *= 0.5;
  CHECK(cc.window_bytes() == doctest::Approx(w));
  cc.on_ack_sample(ack(5, 11, us(10), 1, 1));  // marked again within the window: no cut
  CHECK(cc.window_bytes() == doctest::Approx(w));
  CHECK(cc.stats().rate_cuts == 1);
  CHECK(cc.alpha() == doctest::Approx(1.0));
  // PSN 10 ends the window: F = 8000 marked / 16000 acked bytes; alpha = 15/16 + 1/16 x 0.5.
  cc.on_ack_sample(ack(10, 20, us(10)));
  const double alpha = (1 - 1.0 / 16) * 1 + 1.0 / 16 * 0.5;
  CHECK(cc.alpha() == doctest::Approx(alpha));
  w += 4000.0 * 4000 / w;  // unmarked: additive increase
  CHECK(cc.window_bytes() == doctest::Approx(w));
  // PSN 11 ends the reduced window: the next mark cuts by the new alpha/2.
  cc.on_ack_sample(ack(11, 21, us(10), 1, 1));
  w *= 1 - alpha / 2;
  CHECK(cc.window_bytes() == doctest::Approx(w));
  // Part of a coalesced ACK marked: 1 of 4 packets = a quarter of its bytes count as marked.
  cc.on_ack_sample(ack(15, 21, us(10), 4, 1));
  // PSN 21 ends the window opened at PSN 10: ACKs 11 (4000 B marked), 15 (16000 B, a quarter
  // marked) and 21 (4000 B): F = 8000 / 24000.
  cc.on_ack_sample(ack(21, 30, us(10)));
  const double f = 8000.0 / 24000;
  CHECK(cc.alpha() == doctest::Approx((1 - 1.0 / 16) * alpha + 1.0 / 16 * f));
}

}  // namespace
}  // namespace rdmasim::nic
