// The figures a study's results are shown with: percentiles, slowdown buckets, and the
// port watch's byte series and PFC pause intervals, each against values worked out here.
#include <doctest/doctest.h>

#include <cmath>
#include <vector>

#include "lib/study/figures.h"
#include "lib/study/port_watch.h"
#include "lib/study/sweep.h"

namespace rdmasim::study {
namespace {

TEST_CASE("results: percentile is the element at floor(p/100 x n), as the HPCC simulator's get_pctl") {
  const std::vector<double> v = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10};
  CHECK(percentile(v, 50) == 6);    // index floor(0.5 x 10) = 5
  CHECK(percentile(v, 95) == 10);   // index 9
  CHECK(percentile(v, 99) == 10);   // index floor(9.9) = 9
  CHECK(percentile(v, 100) == 10);  // index 10, capped at n - 1
  CHECK(percentile({42}, 99) == 42);
}

TEST_CASE("results: slowdown buckets, one per size when few sizes, equal counts otherwise") {
  // Two sizes: two buckets whatever the order of the flows.
  std::vector<FlowPoint> f = {{1000, 2}, {500, 1}, {1000, 4}, {500, 3}};
  auto b = slowdown_buckets(f);
  REQUIRE(b.size() == 2);
  CHECK(b[0].max_bytes == 500);
  CHECK(b[0].flows == 2);
  CHECK(b[0].p50 == 3);   // sorted {1, 3}: index floor(0.5 x 2) = 1
  CHECK(b[1].p99 == 4);
  // 40 distinct sizes into at most 20 buckets: 2 flows each, never one size split.
  std::vector<FlowPoint> many;
  for (uint64_t s = 1; s <= 40; ++s) many.push_back({s, static_cast<double>(s)});
  b = slowdown_buckets(many, 20);
  REQUIRE(b.size() == 20);
  for (const SlowdownBucket& k : b) CHECK(k.flows == 2);
  // 30 flows of one size among 40 distinct: that size stays in one bucket.
  for (int i = 0; i < 30; ++i) many.push_back({7, 1});
  b = slowdown_buckets(many, 20);
  size_t with7 = 0;
  for (const SlowdownBucket& k : b) with7 += k.min_bytes <= 7 && 7 <= k.max_bytes;
  CHECK(with7 == 1);
}

TEST_CASE("results: per-flow goodput percentiles count the flows running through each interval") {
  // Goodput bins of 1 us; 1000 B in one bin is 1000 x 8 bit / 1 us = 8 Gb/s.
  StudySpec spec;
  spec.goodput_bin = us(1);
  spec.flows.resize(3);
  StudyResult r;
  r.flows.resize(3);
  r.flows[0].rx_bins = {1000, 2000, 3000, 4000};
  r.flows[0].finish = us(4);              // ran through bins 0..3
  r.flows[1].rx_bins = {0, 0, 1000, 1000};
  spec.flows[1].start = us(2);            // from bin 2 on (never finished: to the end)
  r.flows[2].rx_bins = {500, 500};
  r.flows[2].finish = us(1) + ns(500);    // finished inside bin 1: only bin 0 counts
  const auto p = flow_goodput_percentiles(spec, r, {0, 50, 100});
  REQUIRE(p.size() == 3);
  REQUIRE(p[0].size() == 4);
  // Bin 0: flows 0 and 2 (8 and 4 Gb/s): sorted {4, 8}; p0 index 0, p50 index 1, p100 index 1.
  CHECK(p[0][0] == 4);
  CHECK(p[1][0] == 8);
  // Bin 1: flow 0 alone (16 Gb/s). Bin 2: flows 0 (24) and 1 (8). Bin 3: 32 and 8.
  CHECK(p[1][1] == 16);
  CHECK(p[0][2] == 8);
  CHECK(p[2][2] == 24);
  CHECK(p[2][3] == 32);
  // Intervals of 2 bins: [0, 2 us) has flow 0 only (flow 2 finished inside it): 3000 B over
  // 2 us = 12 Gb/s; [2, 4 us) flows 0 (7000 B: 28 Gb/s) and 1 (2000 B: 8 Gb/s).
  const auto q = flow_goodput_percentiles(spec, r, {50}, 2);
  REQUIRE(q[0].size() == 2);
  CHECK(q[0][0] == 12);
  CHECK(q[0][1] == 28);  // sorted {8, 28}: index floor(0.5 x 2) = 1
  // No flow runs through an interval: NaN, no point.
  spec.flows[0].start = spec.flows[1].start = spec.flows[2].start = us(10);
  CHECK(std::isnan(flow_goodput_percentiles(spec, r, {50})[0][0]));
}

TEST_CASE("results: a PFC frame refreshing a pause before it ends makes one interval; XON ends it") {
  PortWatch w(0, Rate::gbps(100));
  w.on_pause(3, ns(100), ns(600));    // XOFF at 100 ns for 500 ns
  w.on_pause(3, ns(400), ns(900));    // renewed before it ended: one pause 100..900
  w.on_pause(3, ns(700), ns(700));    // XON at 700: ends at 700
  w.on_pause(3, ns(1000), ns(1200));  // a second pause, still in force at the end (1100)
  const std::vector<Span> s = w.pauses(3, ns(1100));
  REQUIRE(s.size() == 2);
  CHECK(s[0].from == ns(100));
  CHECK(s[0].to == ns(700));
  CHECK(s[1].from == ns(1000));
  CHECK(s[1].to == ns(1100));
  CHECK(w.pauses(0, ns(1100)).empty());
}

TEST_CASE("results: a packet's wire bytes split over the periods it serialized in") {
  // 1250 B at 100 Gb/s take 100 ns; periods of 1000 ns. A packet ending at 1050 ns started
  // at 950: 50 ns (625 B) in period 0, 625 B in period 1.
  PortWatch w(ns(1000), Rate::gbps(100));
  net::Packet p;
  p.wire_bytes = 1250;
  w.on_transmit(p, ns(1050));
  w.on_transmit(p, ns(1500));   // 1400..1500: all in period 1
  REQUIRE(w.tx_bins().size() == 2);
  CHECK(w.tx_bins()[0] == std::pair<uint32_t, uint64_t>{0, 625});
  CHECK(w.tx_bins()[1] == std::pair<uint32_t, uint64_t>{1, 1875});
  CHECK(w.tx_bytes() == 2500);
}

TEST_CASE("results: sweep paths reach keys and array elements, and name the path when they cannot") {
  nlohmann::json st = {{"name", "s"}, {"fabric", {{"link", {{"rate_gbps", 100}}}}},
                       {"generators", {{{"type", "incast"}, {"bytes", 1}}}}};
  set_path(st, "generators.0.bytes", 5, ".");
  set_path(st, "fabric.link.latency_ns", 300, ".");   // the last segment may add a key
  CHECK(st["generators"][0]["bytes"] == 5);
  CHECK(st["fabric"]["link"]["latency_ns"] == 300);
  CHECK_THROWS_WITH_AS(set_path(st, "generators.1.bytes", 5, "."),
                       doctest::Contains("--vary generators.1.bytes"), SweepError);
  CHECK_THROWS_WITH_AS(set_path(st, "fabric.nosuch.x", 5, "."), doctest::Contains("has no key \"nosuch\""),
                       SweepError);
  CHECK_THROWS_AS(set_path(st, "name.x", 5, "."), SweepError);   // inside a string
  const Vary v = parse_vary("fabric.nic.cc={\"algorithm\":\"none\"},dcqcn,[1,2],3");
  REQUIRE(v.values.size() == 4);
  CHECK(v.values[0]["algorithm"] == "none");
  CHECK(v.values[1] == "dcqcn");
  CHECK(v.values[2].size() == 2);
  CHECK(v.values[3] == 3);
  CHECK_THROWS_AS(parse_vary("x"), SweepError);
  CHECK_THROWS_AS(parse_vary("x=1,,2"), SweepError);
}

}  // namespace
}  // namespace rdmasim::study
