// The fabric's side: queue depth of the deepest ports, link utilization over time of the
// busiest links (a heat map), and when each port and class was paused by PFC.
#include <algorithm>
#include <cmath>

#include "lib/study/report/sections.h"
#include "lib/study/report/svg.h"

namespace rdmasim::study::report {
namespace {

constexpr size_t kRows = 16;      // links in the heat map, lanes in the pause timeline
constexpr size_t kColumns = 150;  // heat map cells per row at most

std::string queues(const StudyResult& result) {
  if (result.queues.empty())
    return "<p>Queue sampling is off (set <code>observe.queue_sample_ns</code>).</p>\n";
  std::vector<std::pair<uint64_t, size_t>> deepest;
  for (size_t p = 0; p < result.queues.size(); ++p) {
    uint64_t mx = 0;
    for (const auto& s : result.queues[p].samples) {
      uint64_t t = 0;
      for (uint32_t v : s) t += v;
      mx = std::max(mx, t);
    }
    if (mx > 0) deepest.emplace_back(mx, p);
  }
  std::stable_sort(deepest.begin(), deepest.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
  std::vector<svg::Series> qs;
  for (size_t i = 0; i < std::min(kTopFlows, deepest.size()); ++i) {
    const PortSeries& ps = result.queues[deepest[i].second];
    // At most 400 points: each the largest depth of its group of samples (a spike stays visible).
    const size_t g = std::max<size_t>(1, (ps.samples.size() + 399) / 400);
    svg::Series s{ps.port, {}, true};
    for (size_t j = 0; j < ps.samples.size(); j += g) {
      uint64_t mx = 0;
      for (size_t k = j; k < std::min(ps.samples.size(), j + g); ++k) {
        uint64_t t = 0;
        for (uint32_t v : ps.samples[k]) t += v;
        mx = std::max(mx, t);
      }
      s.points.emplace_back(to_us(ps.start + static_cast<Time>(j) * ps.interval), static_cast<double>(mx) / 1024);
    }
    qs.push_back(s);
  }
  if (qs.empty()) return "<p>No sampled egress queue ever held a packet at a sampling instant.</p>\n";
  return svg::figure(
      svg::line_plot("queues", {"Egress queue depth (all classes) of the " + std::to_string(qs.size()) +
                                    " deepest sampled ports", "time (us)", "KiB"},
                     qs),
      "the peak against the PFC XOFF threshold and the ECN marking thresholds, and whether the queue drains "
      "after the burst or stays standing (a standing queue adds its depth / link rate to every RTT).");
}

std::string links(const StudySpec& spec, const StudyResult& result) {
  if (spec.link_sample <= 0)
    return "<p>Link utilization over time is off (set <code>observe.link_sample_ns</code>).</p>\n";
  std::vector<const LinkSeries*> busy;
  for (const LinkSeries& l : result.links)
    if (l.total_bytes > 0 && !l.bins.empty()) busy.push_back(&l);
  if (busy.empty()) return "<p>No observed link carried traffic.</p>\n";
  std::stable_sort(busy.begin(), busy.end(),
                   [](const LinkSeries* a, const LinkSeries* b) { return a->total_bytes > b->total_bytes; });
  const size_t n = std::min(kRows, busy.size());
  uint32_t last = 0;
  for (size_t i = 0; i < n; ++i) last = std::max(last, busy[i]->bins.back().first);
  const size_t bins = last + 1, g = (bins + kColumns - 1) / kColumns;
  const double period_ns = to_ns(spec.link_sample) * static_cast<double>(g);
  std::vector<std::string> rows;
  std::vector<std::vector<double>> values;
  for (size_t i = 0; i < n; ++i) {
    const LinkSeries& l = *busy[i];
    rows.push_back(l.peer.empty() ? l.port : l.port + " → " + l.peer);
    std::vector<double> v((bins + g - 1) / g, 0);
    for (const auto& [bin, bytes] : l.bins) v[bin / g] += static_cast<double>(bytes);
    for (double& x : v) x = x * 8 / (period_ns * l.gbps);   // bits / (ns x Gb/s) = fraction of the rate
    values.push_back(std::move(v));
  }
  return svg::figure(
      svg::heat_map("link_util", "Link utilization over time, the " + std::to_string(n) + " busiest of " +
                                     std::to_string(result.links.size()) + " observed egress ports",
                    rows, 0, period_ns / 1000, values, "us", "of line rate"),
      "dark rows are saturated links: a bottleneck shows as one row dark for the whole run while the rows "
      "feeding it are paler; gaps in a dark row are pauses or rate cuts.");
}

std::string pauses(const StudyResult& result) {
  if (result.pauses.empty()) return "<p>No port was paused by PFC.</p>\n";
  std::vector<const PauseTimeline*> p;
  for (const PauseTimeline& t : result.pauses) p.push_back(&t);
  std::stable_sort(p.begin(), p.end(), [](const PauseTimeline* a, const PauseTimeline* b) { return a->total > b->total; });
  const size_t n = std::min(kRows, p.size());
  std::vector<std::string> lanes;
  std::vector<svg::Interval> spans;
  double tmax = to_us(result.end);
  for (size_t i = 0; i < n; ++i) {
    lanes.push_back(p[i]->port + " class " + std::to_string(p[i]->cls));
    for (const auto& [from, to] : p[i]->spans) {
      spans.push_back({i, to_us(from), to_us(to)});
      tmax = std::max(tmax, to_us(to));
    }
  }
  const std::string title = "PFC pauses: when each egress port's class was paused" +
                            (p.size() > n ? " (the " + std::to_string(n) + " longest-paused of " +
                                                std::to_string(p.size()) + ")"
                                          : std::string());
  return svg::figure(svg::timeline("pauses", title, lanes, spans, tmax, "us"),
                     "which ports were paused and for how long: a pause that starts at the congested port and "
                     "then appears on ports further upstream is PFC spreading (head-of-line blocking of every "
                     "flow through those ports).");
}

}  // namespace

std::string fabric_section(const StudySpec& spec, const StudyResult& result) {
  return "<h2>Fabric</h2>\n" + queues(result) + links(spec, result) + pauses(result);
}

}  // namespace rdmasim::study::report
