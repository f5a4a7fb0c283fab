#include "lib/study/figures.h"

#include <algorithm>
#include <cmath>

namespace rdmasim::study {

using nlohmann::json;

double percentile(const std::vector<double>& sorted, double p) {
  const size_t n = sorted.size();
  const auto i = static_cast<size_t>(std::floor(p / 100.0 * static_cast<double>(n)));
  return sorted[std::min(i, n - 1)];
}

namespace {

SlowdownBucket bucket_of(const std::vector<FlowPoint>& f, size_t b, size_t e) {
  SlowdownBucket k;
  k.min_bytes = f[b].bytes;
  k.max_bytes = f[e - 1].bytes;
  k.flows = e - b;
  std::vector<double> s;
  for (size_t i = b; i < e; ++i) s.push_back(f[i].slowdown);
  std::sort(s.begin(), s.end());
  k.p50 = percentile(s, 50);
  k.p95 = percentile(s, 95);
  k.p99 = percentile(s, 99);
  return k;
}

}  // namespace

std::vector<SlowdownBucket> slowdown_buckets(std::vector<FlowPoint> f, size_t max_buckets) {
  std::vector<SlowdownBucket> out;
  if (f.empty() || max_buckets == 0) return out;
  std::stable_sort(f.begin(), f.end(), [](const FlowPoint& a, const FlowPoint& b) { return a.bytes < b.bytes; });
  size_t distinct = 1;
  for (size_t i = 1; i < f.size(); ++i) distinct += f[i].bytes != f[i - 1].bytes;
  size_t b = 0;
  for (size_t k = 0; b < f.size(); ++k) {
    size_t e;
    if (distinct <= max_buckets) {
      e = b + 1;
    } else {
      // Bucket k ends at the (k+1)/max_buckets quantile of the flow count...
      e = std::max(b + 1, (k + 1) * f.size() / max_buckets);
    }
    // ...and never splits one size between two buckets.
    while (e < f.size() && f[e].bytes == f[e - 1].bytes) ++e;
    out.push_back(bucket_of(f, b, e));
    b = e;
  }
  return out;
}

std::vector<double> aggregate_goodput(const StudySpec& spec, const StudyResult& result) {
  std::vector<double> g;
  for (const FlowResult& r : result.flows) {
    if (g.size() < r.rx_bins.size()) g.resize(r.rx_bins.size(), 0);
    for (size_t i = 0; i < r.rx_bins.size(); ++i) g[i] += static_cast<double>(r.rx_bins[i]);
  }
  for (double& v : g) v = v * 8 / to_ns(spec.goodput_bin);
  return g;
}

size_t goodput_bins(const StudyResult& result) {
  size_t bins = 0;
  for (const FlowResult& r : result.flows) bins = std::max(bins, r.rx_bins.size());
  return bins;
}

std::vector<double> flow_goodput(const StudySpec& spec, const FlowResult& r, size_t group) {
  group = std::max<size_t>(group, 1);
  const double per_interval = 8 / to_ns(spec.goodput_bin * static_cast<Time>(group));  // bytes -> Gb/s
  std::vector<double> g((r.rx_bins.size() + group - 1) / group, 0);
  for (size_t b = 0; b < r.rx_bins.size(); ++b) g[b / group] += static_cast<double>(r.rx_bins[b]);
  for (double& v : g) v *= per_interval;
  return g;
}

std::vector<std::vector<double>> flow_goodput_percentiles(const StudySpec& spec, const StudyResult& result,
                                                           const std::vector<double>& ps, size_t group) {
  group = std::max<size_t>(group, 1);
  const size_t n = (goodput_bins(result) + group - 1) / group;
  const Time width = spec.goodput_bin * static_cast<Time>(group);
  // Each interval's goodputs of the flows running through it.
  std::vector<std::vector<double>> running(n);
  for (size_t k = 0; k < result.flows.size(); ++k) {
    const FlowResult& r = result.flows[k];
    const std::vector<double> g = flow_goodput(spec, r, group);
    for (size_t i = 0; i < n; ++i) {
      const Time from = width * static_cast<Time>(i), to = from + width;
      if (spec.flows[k].start > from || (r.finish >= 0 && r.finish < to)) continue;
      running[i].push_back(i < g.size() ? g[i] : 0);
    }
  }
  std::vector<std::vector<double>> out(ps.size(), std::vector<double>(n, std::nan("")));
  for (size_t i = 0; i < n; ++i) {
    if (running[i].empty()) continue;
    std::sort(running[i].begin(), running[i].end());
    for (size_t j = 0; j < ps.size(); ++j) out[j][i] = percentile(running[i], ps[j]);
  }
  return out;
}

std::vector<double> thin_mean(const std::vector<double>& v, size_t n, size_t* factor) {
  const size_t g = std::max<size_t>(1, (v.size() + n - 1) / std::max<size_t>(1, n));
  *factor = g;
  if (g == 1) return v;
  std::vector<double> out;
  for (size_t i = 0; i < v.size(); i += g) {
    double sum = 0;
    const size_t e = std::min(v.size(), i + g);
    for (size_t j = i; j < e; ++j) sum += v[j];
    out.push_back(sum / static_cast<double>(g));   // a short last group counts its missing bins as 0
  }
  return out;
}

namespace {

// Port counters summed over the fabric (every port that has them) and its links.
void fabric_totals(const json& fabric, Headline& h) {
  for (const auto& [name, port] : fabric.items()) {
    if (name == "links") {
      for (const json& l : port)
        for (const char* d : {"a_to_b", "b_to_a"})
          if (l.contains(d)) h.lost_on_links += l[d].value("lost_packets", uint64_t{0});
      continue;
    }
    if (!port.is_object() || !port.contains("drops")) continue;
    h.drops += port["drops"].get<uint64_t>();
    h.pause_frames += port.value("pauses_sent", uint64_t{0});
    h.ecn_marks += port.value("ecn_marked", uint64_t{0});
  }
}

// Index of the sampled port with the deepest queue (all classes summed), or -1.
long deepest_port(const StudyResult& r, double* max_bytes) {
  long best = -1;
  *max_bytes = 0;
  for (size_t p = 0; p < r.queues.size(); ++p)
    for (const auto& s : r.queues[p].samples) {
      double t = 0;
      for (uint32_t v : s) t += v;
      if (t > *max_bytes) *max_bytes = t, best = static_cast<long>(p);
    }
  return best;
}

}  // namespace

Headline headline(const StudySpec& spec, const StudyResult& result) {
  Headline h;
  h.flows = spec.flows.size();
  std::vector<double> fct, slow;
  Time first_start = -1, last_finish = 0;
  uint64_t bytes = 0;
  for (size_t k = 0; k < spec.flows.size(); ++k) {
    const FlowSpec& f = spec.flows[k];
    const FlowResult& r = result.flows[k];
    if (!r.finished) continue;
    ++h.finished;
    fct.push_back(to_us(r.finish - f.start));
    if (r.ideal_fct > 0) slow.push_back(to_ns(r.finish - f.start) / to_ns(r.ideal_fct));
    first_start = first_start < 0 ? f.start : std::min(first_start, f.start);
    last_finish = std::max(last_finish, r.finish);
    bytes += f.bytes;
  }
  std::sort(fct.begin(), fct.end());
  std::sort(slow.begin(), slow.end());
  if (!fct.empty()) {
    h.last_finish_us = to_us(last_finish);
    h.fct_p50_us = percentile(fct, 50);
    h.fct_p99_us = percentile(fct, 99);
    h.fct_max_us = fct.back();
    if (last_finish > first_start) h.goodput_gbps = static_cast<double>(bytes) * 8 / to_ns(last_finish - first_start);
  }
  if (!slow.empty()) {
    h.slowdown_p50 = percentile(slow, 50);
    h.slowdown_p95 = percentile(slow, 95);
    h.slowdown_p99 = percentile(slow, 99);
  }
  if (result.counters.contains("fabric")) fabric_totals(result.counters["fabric"], h);
  for (const PauseTimeline& p : result.pauses) h.paused_us += to_us(p.total);
  double qmax = 0;
  deepest_port(result, &qmax);
  h.max_queue_kb = qmax / 1024;
  return h;
}

json headline_json(const Headline& h) {
  return {{"flows", h.flows}, {"finished", h.finished}, {"last_finish_us", h.last_finish_us},
          {"fct_p50_us", h.fct_p50_us}, {"fct_p99_us", h.fct_p99_us}, {"fct_max_us", h.fct_max_us},
          {"slowdown_p50", h.slowdown_p50}, {"slowdown_p95", h.slowdown_p95}, {"slowdown_p99", h.slowdown_p99},
          {"goodput_gbps", h.goodput_gbps}, {"drops", h.drops}, {"lost_on_links", h.lost_on_links},
          {"pause_frames", h.pause_frames}, {"ecn_marks", h.ecn_marks}, {"paused_us", h.paused_us},
          {"max_queue_kb", h.max_queue_kb}};
}

json summary_json(const StudySpec& spec, const StudyResult& result) {
  std::vector<FlowPoint> pts;
  for (size_t k = 0; k < spec.flows.size(); ++k) {
    const FlowResult& r = result.flows[k];
    if (r.finished && r.ideal_fct > 0)
      pts.push_back({spec.flows[k].bytes, to_ns(r.finish - spec.flows[k].start) / to_ns(r.ideal_fct)});
  }
  json buckets = json::array();
  for (const SlowdownBucket& b : slowdown_buckets(pts))
    buckets.push_back({{"min_bytes", b.min_bytes}, {"max_bytes", b.max_bytes}, {"flows", b.flows},
                       {"p50", b.p50}, {"p95", b.p95}, {"p99", b.p99}});
  size_t factor = 1;
  const std::vector<double> gp = thin_mean(aggregate_goodput(spec, result), 400, &factor);
  json out = {{"study", spec.name},
              {"ok", result.ok},
              {"end_ns", to_ns(result.end)},
              {"events", result.events},
              {"headline", headline_json(headline(spec, result))},
              {"slowdown_buckets", buckets},
              {"goodput", {{"bin_ns", to_ns(spec.goodput_bin) * static_cast<double>(factor)}, {"gbps", gp}}}};
  double qmax = 0;
  const long q = deepest_port(result, &qmax);
  if (q >= 0) {
    const PortSeries& ps = result.queues[static_cast<size_t>(q)];
    std::vector<double> kb;
    for (const auto& s : ps.samples) {
      double t = 0;
      for (uint32_t v : s) t += v;
      kb.push_back(t / 1024);
    }
    kb = thin_mean(kb, 400, &factor);
    out["queue"] = {{"port", ps.port}, {"start_ns", to_ns(ps.start)},
                    {"interval_ns", to_ns(ps.interval) * static_cast<double>(factor)}, {"kb", kb}};
  }
  return out;
}

}  // namespace rdmasim::study
