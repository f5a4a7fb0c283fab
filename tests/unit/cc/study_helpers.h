// Helpers of the cc scenario tests that run the shipped studies (configs/studies).
#pragma once

#include <doctest/doctest.h>

#include <algorithm>
#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "lib/study/study.h"

namespace rdmasim::study::cc_test {

inline nlohmann::json load(const std::string& name) {
  std::ifstream in(std::string(RDMASIM_SOURCE_DIR) + "/configs/studies/" + name);
  REQUIRE(in.good());
  return nlohmann::json::parse(in);
}

inline StudyResult run(const nlohmann::json& j) {
  const StudySpec spec = parse_study(j, RDMASIM_SOURCE_DIR "/configs/studies");
  StudyResult r = run_study(spec);
  for (const std::string& f : r.failures) MESSAGE(f);
  return r;
}

inline Time last_finish(const StudyResult& r) {
  Time t = 0;
  for (const FlowResult& f : r.flows) t = std::max(t, f.finish);
  return t;
}

// Packets the fabric's ports dropped.
inline uint64_t drops(const StudyResult& r) {
  uint64_t n = 0;
  for (const auto& [name, port] : r.counters["fabric"].items())
    if (port.is_object() && port.contains("drops")) n += port["drops"].get<uint64_t>();
  return n;
}

// The convergence studies (dcqcn_/hpcc_converge*.json): with 100 us goodput bins, each
// flow's goodput from 4 ms (2 ms after "late" starts) to 16 ms (before "late" ends) is
// within 10% of `fair` Gb/s, and the two together at least 90% of 2 x fair.
inline void check_fair_share(const StudyResult& r, double fair) {
  REQUIRE(r.flows.size() == 2);
  double sum = 0;
  for (const FlowResult& f : r.flows) {
    REQUIRE(f.rx_bins.size() >= 160);
    uint64_t bytes = 0;
    for (size_t b = 40; b < 160; ++b) bytes += f.rx_bins[b];
    const double gbps = static_cast<double>(bytes) * 8 / 12e-3 / 1e9;
    MESSAGE("goodput 4..16 ms: " << gbps << " Gb/s");
    CHECK(gbps == doctest::Approx(fair).epsilon(0.1));
    sum += gbps;
  }
  CHECK(sum >= 0.9 * 2 * fair);  // and the port stays busy
}

// The observed port's queue (bytes, all classes) per sample in [from, to).
inline std::vector<uint64_t> queue_bytes(const StudyResult& r, Time from, Time to) {
  REQUIRE(r.queues.size() == 1);
  const PortSeries& s = r.queues[0];
  std::vector<uint64_t> out;
  for (size_t i = 0; i < s.samples.size(); ++i) {
    const Time t = s.start + static_cast<Time>(i) * s.interval;
    if (t < from || t >= to) continue;
    uint64_t q = 0;
    for (uint32_t c : s.samples[i]) q += c;
    out.push_back(q);
  }
  return out;
}

inline double mean_bytes(const std::vector<uint64_t>& v) {
  double s = 0;
  for (uint64_t x : v) s += static_cast<double>(x);
  return v.empty() ? 0 : s / static_cast<double>(v.size());
}

// Each flow's goodput (Gb/s) over the 100 us bins [from_bin, to_bin).
inline std::vector<double> goodputs(const StudyResult& r, size_t from_bin, size_t to_bin) {
  std::vector<double> out;
  for (const FlowResult& f : r.flows) {
    REQUIRE(f.rx_bins.size() >= to_bin);
    uint64_t bytes = 0;
    for (size_t b = from_bin; b < to_bin; ++b) bytes += f.rx_bins[b];
    out.push_back(static_cast<double>(bytes) * 8 / (static_cast<double>(to_bin - from_bin) * 100e-6) / 1e9);
  }
  return out;
}

}  // namespace rdmasim::study::cc_test
