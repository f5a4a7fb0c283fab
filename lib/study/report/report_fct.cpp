// Flow completion times: their distribution, against flow size, and the slowdown by size.
#include <algorithm>

#include "lib/study/figures.h"
#include "lib/study/report/sections.h"
#include "lib/study/report/svg.h"

namespace rdmasim::study::report {
namespace {

std::string size_text(uint64_t b) {
  if (b >= 1'000'000) return svg::num(static_cast<double>(b) / 1e6) + "MB";
  if (b >= 1'000) return svg::num(static_cast<double>(b) / 1e3) + "KB";
  return std::to_string(b) + "B";
}

std::string bucket_label(const SlowdownBucket& b) {
  return b.min_bytes == b.max_bytes ? size_text(b.max_bytes) : "≤" + size_text(b.max_bytes);
}

}  // namespace

std::vector<size_t> slowest_flows(const StudySpec& spec, const StudyResult& result, size_t n) {
  std::vector<size_t> idx(spec.flows.size());
  for (size_t k = 0; k < idx.size(); ++k) idx[k] = k;
  auto fct = [&](size_t k) {
    const FlowResult& r = result.flows[k];
    return r.finished ? r.finish - spec.flows[k].start : kTimeNever;
  };
  std::stable_sort(idx.begin(), idx.end(), [&](size_t a, size_t b) { return fct(a) > fct(b); });
  idx.resize(std::min(n, idx.size()));
  return idx;
}

std::string fct_section(const StudySpec& spec, const StudyResult& result) {
  std::vector<double> fcts;
  svg::Series fct{"one dot per flow", {}, false, false, true}, ideal{"its ideal FCT", {}, false, false, true};
  std::vector<FlowPoint> pts;
  // At most 5000 dots: every k-th flow beyond that (the CDF and buckets use them all).
  const size_t every = std::max<size_t>(1, (spec.flows.size() + 4999) / 5000);
  for (size_t k = 0; k < spec.flows.size(); ++k) {
    const FlowResult& r = result.flows[k];
    if (!r.finished) continue;
    const double us = to_us(r.finish - spec.flows[k].start);
    fcts.push_back(us);
    const auto bytes = static_cast<double>(spec.flows[k].bytes);
    if (k % every == 0) {
      fct.points.emplace_back(bytes, us);
      ideal.points.emplace_back(bytes, to_us(r.ideal_fct));
    }
    if (r.ideal_fct > 0) pts.push_back({spec.flows[k].bytes, to_ns(r.finish - spec.flows[k].start) / to_ns(r.ideal_fct)});
  }
  std::string o = "<h2>Flow completion times</h2>\n";
  if (fcts.empty()) return o + "<p>No flow finished.</p>\n";
  std::sort(fcts.begin(), fcts.end());
  svg::Series cdf{"finished flows", {}, true};
  for (size_t i = 0; i < fcts.size(); ++i)
    cdf.points.emplace_back(fcts[i], static_cast<double>(i + 1) / static_cast<double>(spec.flows.size()));
  o += svg::figure(svg::line_plot("fct_cdf", {"FCT CDF (fraction of all flows)", "FCT (us)", "fraction"}, {cdf}),
                   "how far the tail reaches right of the bulk: the p99 of " + svg::num(percentile(fcts, 99)) +
                       " us against the median of " + svg::num(percentile(fcts, 50)) +
                       " us; a curve that stops below 1 means flows did not finish.");
  o += svg::figure(
      svg::line_plot("fct_size", {"FCT against flow size (log-log)", "flow size (bytes)", "FCT (us)", true, true},
                     {fct, ideal}),
      "the vertical distance from each dot to its ideal (same size): that gap is queueing, pausing and "
      "retransmission; dots far above the others at the same size are the victims.");

  const std::vector<SlowdownBucket> buckets = slowdown_buckets(pts);
  std::vector<std::string> groups;
  std::vector<std::vector<double>> values;
  for (const SlowdownBucket& b : buckets) {
    groups.push_back(bucket_label(b));
    values.push_back({b.p50, b.p95, b.p99});
  }
  o += svg::figure(
      svg::grouped_bars("slowdown_buckets",
                        {"FCT slowdown by flow size: p50, p95, p99", "flow size (bucket's largest)",
                         "slowdown (FCT / ideal), log", false, true},
                        groups, {"p50", "p95", "p99"}, values),
      "small flows first: a slowdown near 1 means the flow ran as if alone; a tall p99 bar over a short p50 "
      "means a few flows of that size waited behind queues or pauses (the HPCC and DCQCN papers' view).");
  o += "<p>Slowdown = FCT / ideal FCT, the ideal being the flow alone on an idle fabric: all of its packets, "
       "headers included, serialized at the path's bottleneck rate, plus the base RTT (propagation and switch "
       "forwarding latency of the data path and of the path back). Percentiles by rank: the element at index "
       "floor(p/100 &times; n) of the bucket's sorted slowdowns.</p>\n";
  o += "<table id=\"slowdown_table\"><tr><th>flow size</th><th>flows</th><th>p50</th><th>p95</th><th>p99</th></tr>\n";
  for (const SlowdownBucket& b : buckets)
    o += "<tr><td>" + svg::esc(b.min_bytes == b.max_bytes ? size_text(b.min_bytes)
                                                         : size_text(b.min_bytes) + " – " + size_text(b.max_bytes)) +
         "</td><td>" + std::to_string(b.flows) + "</td><td>" + svg::num(b.p50) + "</td><td>" + svg::num(b.p95) +
         "</td><td>" + svg::num(b.p99) + "</td></tr>\n";
  return o + "</table>\n";
}

}  // namespace rdmasim::study::report
