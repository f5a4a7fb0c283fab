// DCQCN reaction point: the state machine of sim/nic/cc.h, driven directly.
#include <doctest/doctest.h>

#include <cmath>
#include <memory>

#include "sim/nic/cc.h"
#include "sim/nic/dcqcn_staged.h"

namespace rdmasim::nic {
namespace {

constexpr double kLine = 100e9;

double gbps(Rate r) { return static_cast<double>(r.bps); }

TEST_CASE("dcqcn: a CNP cuts the rate by alpha/2, then alpha = (1-g)*alpha + g") {
  Engine e;
  DcqcnParams p;
  p.initial_alpha = 0.5;
  Dcqcn cc(e, p, Rate::gbps(100), 1000);
  CHECK(cc.current_rate() == Rate::gbps(100));  // line rate before any CNP
  cc.on_cnp();
  // rate = 100 Gb/s * (1 - 0.5/2) = 75 Gb/s; target = the rate before the cut.
  CHECK(gbps(cc.current_rate()) == doctest::Approx(75e9));
  CHECK(gbps(cc.target_rate()) == doctest::Approx(kLine));
  CHECK(cc.alpha() == doctest::Approx((1 - p.g) * 0.5 + p.g));
  const double a1 = cc.alpha();
  cc.on_cnp();  // rate_reduce_period 0 (paper): every CNP cuts
  CHECK(gbps(cc.current_rate()) == doctest::Approx(75e9 * (1 - a1 / 2)));
  CHECK(gbps(cc.target_rate()) == doctest::Approx(75e9));
  CHECK(cc.alpha() == doctest::Approx((1 - p.g) * a1 + p.g));
  CHECK(cc.stats().rate_cuts == 2);
  CHECK(cc.stats().cnps_received == 2);
}

TEST_CASE("dcqcn: alpha decays by (1-g) per quiet alpha period") {
  Engine e;
  DcqcnParams p;           // alpha_period 55 us
  p.rate_timer = ms(100);  // keep the rate still
  p.byte_counter = 0;
  Dcqcn cc(e, p, Rate::gbps(100), 1000);
  cc.on_cnp();
  const double a1 = cc.alpha();  // (1-g)*1 + g = 1
  CHECK(a1 == doctest::Approx(1.0));
  // The first period [0, 55 us) holds the CNP: no decay at 55 us; each later one decays.
  e.run_until(us(55));
  CHECK(cc.alpha() == doctest::Approx(a1));
  e.run_until(us(110));
  CHECK(cc.alpha() == doctest::Approx(a1 * (1 - p.g)));
  e.run_until(us(55 * 5));
  CHECK(cc.alpha() == doctest::Approx(a1 * std::pow(1 - p.g, 4)));
  CHECK(gbps(cc.current_rate()) == doctest::Approx(50e9));  // no increase event yet
}

TEST_CASE("dcqcn: rate_reduce_period allows one cut per period") {
  Engine e;
  DcqcnParams p;
  p.rate_reduce_period = us(4);
  Dcqcn cc(e, p, Rate::gbps(100), 1000);
  cc.on_cnp();
  e.run_until(us(3));
  cc.on_cnp();  // 3 us after the cut: no cut
  CHECK(cc.stats().rate_cuts == 1);
  CHECK(gbps(cc.current_rate()) == doctest::Approx(50e9));
  e.run_until(us(4));
  cc.on_cnp();  // 4 us after: cut (alpha was raised by both CNPs: (1-g)*1+g = 1)
  CHECK(cc.stats().rate_cuts == 2);
  CHECK(gbps(cc.current_rate()) == doctest::Approx(25e9));
}

TEST_CASE("dcqcn: fast recovery halves the gap to the target, then additive increase") {
  Engine e;
  DcqcnParams p;  // F = 5, T = 55 us, R_AI = 40 Mb/s, alpha starts at 1
  p.byte_counter = 0;
  Dcqcn cc(e, p, Rate::gbps(100), 1000);
  cc.on_cnp();  // target 100, rate 50
  cc.on_cnp();  // target 50, rate 25 (alpha stays 1: (1-g)*1 + g)
  double rate = 25e9, target = 50e9;
  CHECK(gbps(cc.current_rate()) == doctest::Approx(rate));
  for (int t = 1; t <= 4; ++t) {  // T = 1..4 < F: rate = (rate + target)/2, target fixed
    e.run_until(us(55) * t);
    rate = (rate + target) / 2;
    CHECK(cc.timer_events() == static_cast<uint32_t>(t));
    CHECK(gbps(cc.current_rate()) == doctest::Approx(rate));
    CHECK(gbps(cc.target_rate()) == doctest::Approx(target));
  }
  // T = 5 = F, BC = 0: additive increase: target += R_AI, rate = (rate + target)/2.
  e.run_until(us(55) * 5);
  target += 40e6;
  rate = (rate + target) / 2;
  CHECK(gbps(cc.target_rate()) == doctest::Approx(target));
  CHECK(gbps(cc.current_rate()) == doctest::Approx(rate));
}

TEST_CASE("dcqcn: hyper increase once both the timer and the byte counter passed F") {
  Engine e;
  DcqcnParams p;
  p.fast_recovery_steps = 1;
  p.byte_counter = 1000;
  p.alpha_period = ms(100);
  Dcqcn cc(e, p, Rate::gbps(100), 1000);
  cc.on_cnp();
  cc.on_cnp();  // target 50, rate 25
  double rate = 25e9, target = 50e9;
  auto step = [&](double add) {
    target += add;
    rate = (rate + target) / 2;
    CHECK(gbps(cc.target_rate()) == doctest::Approx(target));
    CHECK(gbps(cc.current_rate()) == doctest::Approx(rate));
  };
  e.run_until(us(55));   // T=1, BC=0: max 1 = F, min 0 <= F: additive
  step(40e6);
  e.run_until(us(110));  // T=2, BC=0: additive
  step(40e6);
  cc.on_packet_sent(1000);  // BC=1, T=2: min 1 = F: additive
  step(40e6);
  cc.on_packet_sent(999);   // 999 < B: no event
  CHECK(cc.byte_events() == 1);
  cc.on_packet_sent(1);     // BC=2, T=2: min 2 > F: hyper, += R_HAI (400 Mb/s)
  CHECK(cc.byte_events() == 2);
  step(400e6);
}

TEST_CASE("dcqcn: the rate recovers to exactly the line rate and the timers stop") {
  Engine e;
  DcqcnParams p;
  p.byte_counter = 0;
  Dcqcn cc(e, p, Rate::gbps(100), 100000);
  cc.on_cnp();  // rate 50, target 100: fast recovery halves the gap each 55 us
  e.run();      // returns only once no timer is left
  CHECK(cc.current_rate() == Rate::gbps(100));
  CHECK(cc.target_rate() == Rate::gbps(100));
  CHECK(e.pending() == 0);
  // Every sample is within [min_rate, line rate]; the first is line rate, the second the cut.
  REQUIRE(cc.samples().size() >= 3);
  CHECK(cc.samples()[0].rate == Rate::gbps(100));
  CHECK(cc.samples()[1].rate == Rate::gbps(50));
  for (const CcSample& s : cc.samples()) {
    CHECK(s.rate <= Rate::gbps(100));
    CHECK(s.rate >= p.min_rate);
  }
}

TEST_CASE("dcqcn: the rate never goes below min_rate") {
  Engine e;
  DcqcnParams p;
  p.min_rate = Rate::gbps(10);
  Dcqcn cc(e, p, Rate::gbps(100), 1000);
  for (int i = 0; i < 10; ++i) cc.on_cnp();  // 100 / 2^10 would be 0.1 Gb/s
  CHECK(cc.current_rate() == Rate::gbps(10));
}

TEST_CASE("dcqcn presets: paper and vendor values, unknown name refused") {
  DcqcnParams p;
  REQUIRE(dcqcn_preset("paper", &p));
  CHECK(p.g == doctest::Approx(1.0 / 256));
  CHECK(p.cnp_interval == us(50));
  CHECK(p.fast_recovery_steps == 5);
  REQUIRE(dcqcn_preset("vendor", &p));
  CHECK(p.rate_timer == us(300));
  CHECK(p.ai_rate == Rate::mbps(5));
  CHECK(p.hai_rate == Rate::mbps(50));
  CHECK(p.rate_reduce_period == us(4));
  CHECK_FALSE(dcqcn_preset("fast", &p));
}


TEST_CASE("dcqcn timer-staged (hpcc preset): cut on the decrease check, then fast recovery, additive, hyper on the timer alone") {
  Engine e;
  DcqcnParams p;
  REQUIRE(dcqcn_preset("hpcc", &p));
  p.clamp_target = true;  // so the target moves to the rate at the second cut
  REQUIRE(p.byte_counter == 0);
  std::unique_ptr<CongestionControl> cc = make_cc(e, CcConfig{.algorithm = CcAlgorithm::Dcqcn, .dcqcn = p}, Rate::gbps(100));
  auto* st = dynamic_cast<DcqcnStaged*>(cc.get());
  REQUIRE(st != nullptr);
  const double g = p.g, line = 100e9;
  cc->on_cnp();  // the first CNP: alpha = 1, no cut yet
  CHECK(cc->current_rate() == Rate::gbps(100));
  // Alpha updates at 1, 2, 3, 4 us without a CNP flag (the first CNP clears it): (1-g)^4.
  // The decrease check at 4 us + 1 ns cuts: rate = line x (1 - alpha/2); target = the rate
  // before (clamp_target).
  e.run_until(us(4) + ns(1));
  const double a4 = std::pow(1 - g, 4);
  CHECK(cc->alpha() == doctest::Approx(a4));
  const double r1 = line * (1 - a4 / 2);
  CHECK(static_cast<double>(cc->current_rate().bps) == doctest::Approx(r1));
  CHECK(static_cast<double>(cc->target_rate().bps) == doctest::Approx(line));
  CHECK(cc->stats().rate_cuts == 1);
  // A CNP at 10 us: alpha rises at 11 us, the check at 12 us + 1 ns cuts again.
  e.run_until(us(10));
  cc->on_cnp();
  e.run_until(us(12) + ns(1));
  double a = a4;
  for (int t = 5; t <= 12; ++t) a = t == 11 ? (1 - g) * a + g : (1 - g) * a;
  CHECK(cc->alpha() == doctest::Approx(a));
  const double r2 = r1 * (1 - a / 2);
  CHECK(static_cast<double>(cc->target_rate().bps) == doctest::Approx(r1));
  CHECK(static_cast<double>(cc->current_rate().bps) == doctest::Approx(r2));
  CHECK(st->stage() == 0);
  // The increase timer (300 us) from the cut: stage 0 < F = 1: fast recovery (target kept);
  // stage 1 == F: additive (+20 Mb/s); stages 2, 3 > F: hyper (+200 Mb/s each).
  const Time cut = us(12) + ns(1);
  double target = r1, rate = r2;
  const double add[] = {0, 20e6, 200e6, 200e6};
  for (int k = 0; k < 4; ++k) {
    e.run_until(cut + (k + 1) * us(300));
    target = std::min(target + add[k], line);
    rate = (rate + target) / 2;
    CAPTURE(k);
    CHECK(static_cast<double>(cc->target_rate().bps) == doctest::Approx(target));
    CHECK(static_cast<double>(cc->current_rate().bps) == doctest::Approx(rate));
    CHECK(st->stage() == static_cast<uint32_t>(k + 1));
  }
  CHECK(cc->stats().rate_increases == 4);
}

TEST_CASE("dcqcn timer-staged: without clamp_target a cut at stage 0 keeps the target (the hpcc preset)") {
  Engine e;
  DcqcnParams p;
  REQUIRE(dcqcn_preset("hpcc", &p));
  DcqcnStaged cc(e, p, Rate::gbps(100), 1000);
  cc.on_cnp();
  e.run_until(us(4) + ns(1));
  e.run_until(us(6));
  cc.on_cnp();
  e.run_until(us(8) + ns(1));  // second cut, no increase between: target stays the line
  CHECK(cc.stats().rate_cuts == 2);
  CHECK(cc.target_rate() == Rate::gbps(100));
  CHECK(cc.current_rate().bps < Rate::gbps(100).bps);
}

TEST_CASE("dcqcn timer-staged: back at the line rate the timers stop; alpha's idle decay is applied at the next CNP") {
  Engine e;
  DcqcnParams p;
  REQUIRE(dcqcn_preset("hpcc", &p));
  DcqcnStaged cc(e, p, Rate::gbps(100), 100000);
  cc.on_cnp();
  e.run();  // returns only once no timer is left
  CHECK(cc.current_rate() == Rate::gbps(100));
  CHECK(e.pending() == 0);
  // One cut (at 4 us + 1 ns), then the stages: fast recovery halves the gap to the line
  // (target = the line: no clamp at stage 0), hyper steps are capped at the line. The gap
  // 50 Gb/s x (a/2) halves per 300 us until < 1 b/s: about 36 steps.
  CHECK(cc.stats().rate_cuts == 1);
  CHECK(cc.stage() > p.fast_recovery_steps);  // went through additive into hyper
  CHECK(cc.stats().rate_increases == cc.stage());
  const Time stopped = e.now();
  // 1000 quiet alpha periods (1 us) later a CNP: alpha = a_stop x (1-g)^1000, then the
  // first alpha update after it raises it (this CNP sets the flag).
  const double a_stop = cc.alpha();
  e.run_until(stopped + us(1000));
  cc.on_cnp();
  CHECK(cc.alpha() == doctest::Approx(a_stop * std::pow(1 - p.g, 1000)));
  e.run_until(stopped + us(1001));
  CHECK(cc.alpha() == doctest::Approx((1 - p.g) * a_stop * std::pow(1 - p.g, 1000) + p.g));
  e.run_until(stopped + us(1004) + ns(1));
  CHECK(cc.stats().rate_cuts == 2);  // the decrease check one period after the CNP
}

}  // namespace
}  // namespace rdmasim::nic
