// Rates over time: the aggregate goodput with the slowest flows' (with many flows, also
// per-flow percentiles), and the sending rate that congestion control set on each flow's QP.
#include <algorithm>
#include <cmath>

#include "lib/study/figures.h"
#include "lib/study/report/sections.h"
#include "lib/study/report/svg.h"

namespace rdmasim::study::report {
namespace {

using nlohmann::json;

constexpr size_t kMaxPoints = 400;

std::vector<std::pair<double, double>> points(const std::vector<double>& v, double bin_us) {
  size_t factor = 1;
  const std::vector<double> t = thin_mean(v, kMaxPoints, &factor);
  std::vector<std::pair<double, double>> out;
  for (size_t i = 0; i < t.size(); ++i) out.emplace_back(bin_us * static_cast<double>(i * factor), t[i]);
  return out;
}

// With more than kTopFlows flows, the plots draw only this many of the slowest one by one.
constexpr size_t kSlowLines = 3;

// Up to kTopFlows flows: the sum and each flow on one plot. More: the sum alone (its scale
// would flatten every flow), then a per-flow plot: the p5, median and p95 across the flows
// running in each interval (how evenly they share), and the kSlowLines slowest flows.
std::string goodput(const StudySpec& spec, const StudyResult& result) {
  const double bin_us = to_us(spec.goodput_bin);
  const bool many = spec.flows.size() > kTopFlows;
  std::vector<svg::Series> s;
  s.push_back({"all flows (sum)", points(aggregate_goodput(spec, result), bin_us), true, true});
  if (many) {
    std::string o = svg::figure(
        svg::line_plot("goodput", {"Goodput: all " + std::to_string(spec.flows.size()) + " flows summed", "time (us)",
                                   "Gb/s (payload at the receiver)"},
                       s),
        "the sum against the fabric's capacity for this traffic (how well the fabric is used), and when it falls "
        "off: the tail of slow flows.");
    // Intervals of `group` bins, at most kFlowPoints of them: a flow's goodput over a
    // single short bin is a packet or none, too coarse to read.
    constexpr size_t kFlowPoints = 100;
    const size_t group = std::max<size_t>(1, (goodput_bins(result) + kFlowPoints - 1) / kFlowPoints);
    const double width_us = bin_us * static_cast<double>(group);
    std::vector<svg::Series> f;
    const std::vector<double> ps = {5, 50, 95};
    const char* names[] = {"p5 of the running flows", "median", "p95"};
    const auto pct = flow_goodput_percentiles(spec, result, ps, group);
    for (size_t j = 0; j < ps.size(); ++j) {
      svg::Series line{names[j], {}, true, j == 1};
      for (size_t i = 0; i < pct[j].size(); ++i)
        if (!std::isnan(pct[j][i])) line.points.emplace_back(width_us * static_cast<double>(i), pct[j][i]);
      f.push_back(std::move(line));
    }
    for (size_t k : slowest_flows(spec, result, kSlowLines)) {
      svg::Series line{spec.flows[k].name, {}, true};
      const std::vector<double> g = flow_goodput(spec, result.flows[k], group);
      for (size_t i = 0; i < g.size(); ++i) line.points.emplace_back(width_us * static_cast<double>(i), g[i]);
      f.push_back(std::move(line));
    }
    return o + svg::figure(
                   svg::line_plot("flow_goodput",
                                  {"Per-flow goodput over " + svg::num(width_us) +
                                       " us: percentiles across the flows running, and the " +
                                       std::to_string(kSlowLines) + " slowest flows",
                                   "time (us)", "Gb/s per flow"},
                                  f),
                   "the band between p5 and p95: narrow means the running flows share evenly; a slow flow's line "
                   "below p5 for long is a flow the others starve (an ECMP collision or a paused path).");
  }
  for (size_t k : slowest_flows(spec, result, kTopFlows))
    s.push_back({spec.flows[k].name, points(flow_goodput(spec, result.flows[k]), bin_us), true});
  return svg::figure(svg::line_plot("goodput", {"Goodput: all flows summed, and each flow", "time (us)",
                                                "Gb/s (payload at the receiver)"},
                                    s),
                     "the bold sum against the bottleneck's rate (how well the fabric is used), then whether the "
                     "thin lines share it evenly or one flow starves while others run.");
}

// The CC report of flow k's requester QP in counters.json, or null.
const json* cc_of(const StudySpec& spec, const StudyResult& result, size_t k) {
  const FlowSpec& f = spec.flows[k];
  const uint32_t qpn = result.flows[k].requester_qpn;
  if (qpn == 0 || !result.counters.contains("hcas")) return nullptr;
  const std::string& nic = result.nic_names.at(f.op == Op::Read ? f.dst : f.src);
  for (const auto& [key, hca] : result.counters["hcas"].items()) {
    if (key != nic && key.rfind(nic + "/", 0) != 0) continue;
    if (!hca.contains("cc")) return nullptr;
    for (const json& q : hca["cc"])
      if (q.value("qpn", 0u) == qpn) return &q;
  }
  return nullptr;
}

std::string cc_rates(const StudySpec& spec, const StudyResult& result) {
  std::vector<const json*> qps(spec.flows.size(), nullptr);
  double tmax = 0;
  size_t with = 0;
  std::string algorithm;
  for (size_t k = 0; k < spec.flows.size(); ++k) {
    const json* q = cc_of(spec, result, k);
    if (!q || !q->contains("samples") || (*q)["samples"].empty()) continue;
    qps[k] = q;
    ++with;
    algorithm = q->value("algorithm", "");
    tmax = std::max(tmax, (*q)["samples"].back()[0].get<double>());
  }
  if (with == 0) return "";
  // A rate holds until its next sample: draw every QP's to the end of the run.
  tmax = std::max(tmax, to_us(result.end));
  std::vector<svg::Series> s;
  // The mean over every flow's QP on a common grid of 200 instants; with more than kTopFlows
  // QPs also the p5 and p95 across them, and only the kSlowLines slowest flows' QPs.
  const bool many = with > kTopFlows;
  svg::Series mean{"mean of " + std::to_string(with) + " QPs", {}, true, true};
  svg::Series p5{"p5 across QPs", {}, true}, p95{"p95 across QPs", {}, true};
  // A QP's rate at t is its last sample at or before t (its first before that).
  constexpr size_t kGrid = 200;
  std::vector<std::vector<double>> at(kGrid + 1);
  for (const json* q : qps) {
    if (!q) continue;
    const json& samples = (*q)["samples"];
    size_t j = 0;
    for (size_t i = 0; i <= kGrid; ++i) {
      const double t = tmax * static_cast<double>(i) / kGrid;
      while (j + 1 < samples.size() && samples[j + 1][0].get<double>() <= t) ++j;
      at[i].push_back(samples[j][1].get<double>());
    }
  }
  for (size_t i = 0; i <= kGrid; ++i) {
    const double t = tmax * static_cast<double>(i) / kGrid;
    double sum = 0;
    for (double v : at[i]) sum += v;
    mean.points.emplace_back(t, sum / static_cast<double>(with));
    if (!many) continue;
    std::sort(at[i].begin(), at[i].end());
    p5.points.emplace_back(t, percentile(at[i], 5));
    p95.points.emplace_back(t, percentile(at[i], 95));
  }
  s.push_back(mean);
  if (many) {
    s.push_back(p5);
    s.push_back(p95);
  }
  for (size_t k : slowest_flows(spec, result, many ? kSlowLines : kTopFlows)) {
    if (!qps[k]) continue;
    svg::Series one{spec.flows[k].name, {}, true};
    const json& samples = (*qps[k])["samples"];
    const size_t every = std::max<size_t>(1, (samples.size() + kMaxPoints - 1) / kMaxPoints);
    for (size_t i = 0; i < samples.size(); i += every) one.points.emplace_back(samples[i][0].get<double>(), samples[i][1].get<double>());
    one.points.emplace_back(samples.back()[0].get<double>(), samples.back()[1].get<double>());
    s.push_back(one);
  }
  return svg::figure(
      svg::line_plot("cc_rates", {"Sending rate set by " + algorithm + " per QP (" +
                                      (many ? "mean, p5 and p95 across QPs" : std::string("mean")) +
                                      ", and the slowest flows)",
                                  "time (us)", "Gb/s"},
                     s),
      "the cut when congestion is first signalled, then whether the rates climb back and settle near an equal "
      "share of the bottleneck (fairness and convergence), or keep oscillating.");
}

}  // namespace

std::string rate_section(const StudySpec& spec, const StudyResult& result) {
  std::string o = "<h2>Rates</h2>\n" + goodput(spec, result);
  const std::string cc = cc_rates(spec, result);
  return o + (cc.empty() ? "<p>No congestion control ran on these flows' QPs (no per-QP rate to show).</p>\n" : cc);
}

}  // namespace rdmasim::study::report
