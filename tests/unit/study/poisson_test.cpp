// The "poisson" generator (lib/study/study_spec.cpp, flow_cdf.cpp): offered load and the
// flow-size distribution of the generated flows, against the CDF file it was given.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "lib/study/flow_cdf.h"
#include "lib/study/study.h"
#include "sim/topo/fabric.h"

namespace rdmasim::study {
namespace {

using nlohmann::json;

const std::string kWorkloads = RDMASIM_SOURCE_DIR "/configs/workloads";

json star16_poisson(double duration_us, uint64_t seed) {
  return {{"name", "poisson"},
          {"fabric", {{"name", "star16"}, {"link_layer", "roce"}, {"topology", {{"type", "star"}, {"hosts", 16}}},
                      {"link", {{"rate_gbps", 100}, {"latency_ns", 400}}}}},
          {"generators", {{{"type", "poisson"}, {"load", 0.3}, {"cdf", "web_search.txt"},
                           {"duration_us", duration_us}, {"seed", seed}, {"message_bytes", 65536}}}}};
}

TEST_CASE("FlowSizeCdf: mean and inversion of the web-search CDF") {
  FlowSizeCdf cdf;
  std::string why;
  REQUIRE(cdf.load(kWorkloads + "/web_search.txt", &why));
  // Segment means weighted by their probability (the file's 12 points): 1,711,250 B, the
  // "mean ~ 1.7 MB" the DCTCP paper's web-search workload is known by.
  CHECK(cdf.mean() == doctest::Approx(1711250.0));
  CHECK(cdf.cdf(10000) == doctest::Approx(0.15));
  CHECK(cdf.cdf(15000) == doctest::Approx(0.175));   // halfway between 15 % and 20 %
  CHECK(cdf.cdf(30000000) == 1.0);
  CHECK(!cdf.parse("0 0\n10 50\n5 100\n", &why));
  CHECK(why.find("line 3") != std::string::npos);
  CHECK(!cdf.parse("0 0\n10 90\n", &why));   // never reaches 100 %
}

TEST_CASE("poisson: web-search at 30 % load on a 16-host star, offered load and KS test") {
  // 5.7 s of arrivals: 16 hosts x 5.7 s / (1,711,250 B x 8 / (0.3 x 100 Gb/s) = 456 us)
  // ~ 200,000 flows; the load over n flows has a relative standard deviation of about
  // sqrt((1 + CV^2) / n) = sqrt((1 + 2.32^2) / 200000) = 0.56 % (CV of the CDF 2.32), so
  // 2 % is 3.5 of them.
  const double duration_us = 5.7e6;
  const StudySpec spec = parse_study(star16_poisson(duration_us, 7), kWorkloads);
  const size_t n = spec.flows.size();
  REQUIRE(n > 150000);
  double bytes = 0;
  std::vector<double> sizes;
  sizes.reserve(n);
  for (const FlowSpec& f : spec.flows) {
    CHECK_MESSAGE(f.src != f.dst, f.name);
    CHECK(f.start < from_ns_double(duration_us * 1000));
    bytes += static_cast<double>(f.bytes);
    sizes.push_back(static_cast<double>(f.bytes));
  }
  // Offered load: the generated payload over what 16 host links carry in the span.
  const double offered = bytes * 8 / (16 * 100e9 * duration_us * 1e-6);
  MESSAGE("offered load " << offered << " over " << n << " flows");
  CHECK(std::abs(offered - 0.3) / 0.3 < 0.02);
  // Kolmogorov-Smirnov: D = sup |F_n(x) - F(x)| over the sample (both sides of each step).
  // Critical value at significance alpha = 0.01 (large-n Kolmogorov distribution):
  // c(alpha) / sqrt(n), c(alpha) = sqrt(-ln(alpha / 2) / 2) = 1.628. Sizes are rounded up
  // to whole bytes: F moves by at most 5 % per 10,000 B there, 5e-6 per byte, far below.
  FlowSizeCdf cdf;
  std::string why;
  REQUIRE(cdf.load(kWorkloads + "/web_search.txt", &why));
  std::sort(sizes.begin(), sizes.end());
  double d = 0;
  for (size_t i = 0; i < n; ++i) {
    const double f = cdf.cdf(sizes[i]);
    d = std::max({d, std::abs(static_cast<double>(i + 1) / n - f), std::abs(static_cast<double>(i) / n - f)});
  }
  const double alpha = 0.01, critical = std::sqrt(-std::log(alpha / 2) / 2) / std::sqrt(static_cast<double>(n));
  MESSAGE("KS D = " << d << ", critical " << critical);
  CHECK(d < critical);
  // Seeded: the same study gives the same flows; another seed other flows.
  const StudySpec again = parse_study(star16_poisson(2000, 7), kWorkloads);
  const StudySpec same = parse_study(star16_poisson(2000, 7), kWorkloads);
  const StudySpec other = parse_study(star16_poisson(2000, 8), kWorkloads);
  REQUIRE(again.flows.size() == same.flows.size());
  for (size_t i = 0; i < again.flows.size(); ++i) {
    CHECK(again.flows[i].start == same.flows[i].start);
    CHECK(again.flows[i].bytes == same.flows[i].bytes);
    CHECK(again.flows[i].dst == same.flows[i].dst);
  }
  CHECK((other.flows.size() != again.flows.size() || other.flows[0].bytes != again.flows[0].bytes));
  // Flows come in start order.
  CHECK(std::is_sorted(spec.flows.begin(), spec.flows.end(),
                       [](const FlowSpec& a, const FlowSpec& b) { return a.start < b.start; }));
}

TEST_CASE("poisson: errors") {
  json s = star16_poisson(100, 1);
  s["generators"][0]["cdf"] = "missing.txt";
  bool threw = false;
  try {
    parse_study(s, kWorkloads);
  } catch (const topo::ConfigError& e) {
    threw = true;
    CHECK(e.errors().at(0).find("study.generators[0].cdf") != std::string::npos);
  }
  CHECK(threw);
  s = star16_poisson(100, 1);
  s["generators"][0]["load"] = 1.5;
  CHECK_THROWS_AS(parse_study(s, kWorkloads), topo::ConfigError);
  s = star16_poisson(100, 1);
  s["generators"][0]["bytes"] = 1000;   // sizes come from the CDF
  CHECK_THROWS_AS(parse_study(s, kWorkloads), topo::ConfigError);
}

}  // namespace
}  // namespace rdmasim::study
