#include "lib/study/compare.h"

#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include "lib/study/report/svg.h"

namespace rdmasim::study {
namespace {

using nlohmann::json;

json read_json(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error(path + ": cannot be read");
  try {
    return json::parse(in);
  } catch (const json::exception& e) {
    throw std::runtime_error(path + ": not JSON: " + e.what());
  }
}

void check_summary(const json& s, const std::string& path) {
  if (!s.is_object() || !s.contains("headline") || !s["headline"].is_object())
    throw std::runtime_error(path + ": no \"headline\" (not a summary.json of rdmasim study)");
}

// A sweep's folder: one run per row of summary.csv, labelled by its varied values (the
// columns before "status").
std::vector<CompareRun> sweep_runs(const std::string& dir) {
  std::ifstream in(dir + "/summary.csv");
  std::string line;
  if (!std::getline(in, line)) throw std::runtime_error(dir + "/summary.csv: empty");
  const std::vector<std::string> head = csv_split(line);
  size_t status = 0;
  while (status < head.size() && head[status] != "status") ++status;
  if (head.size() < 2 || head[0] != "point" || head[1] != "dir" || status == head.size())
    throw std::runtime_error(dir + "/summary.csv: not a sweep summary (columns point, dir, ..., status)");
  std::vector<CompareRun> runs;
  while (std::getline(in, line)) {
    const std::vector<std::string> f = csv_split(line);
    if (f.size() < status) throw std::runtime_error(dir + "/summary.csv: short row: " + line);
    std::string label;
    for (size_t c = 2; c < status; ++c) label += (c > 2 ? ", " : "") + head[c] + "=" + f[c];
    const std::string pd = dir + "/" + f[1];
    const std::string path = pd + "/summary.json";
    if (!std::filesystem::exists(path)) continue;   // a point that crashed: in the CSV, not on the page
    CompareRun r{label, pd, read_json(path)};
    check_summary(r.summary, path);
    runs.push_back(std::move(r));
  }
  return runs;
}

double hv(const CompareRun& r, const char* key) { return r.summary["headline"].value(key, 0.0); }

std::string table(const std::vector<CompareRun>& runs) {
  static const std::pair<const char*, const char*> kCols[] = {
      {"finished", "flows finished"}, {"last_finish_us", "last finish us"}, {"fct_p50_us", "FCT p50 us"},
      {"fct_p99_us", "FCT p99 us"}, {"slowdown_p50", "slowdown p50"}, {"slowdown_p99", "slowdown p99"},
      {"goodput_gbps", "goodput Gb/s"}, {"drops", "drops"}, {"pause_frames", "PFC frames"},
      {"paused_us", "paused us"}, {"ecn_marks", "ECN marks"}, {"max_queue_kb", "max queue KiB"}};
  std::string o = "<table id=\"runs\"><tr><th>run</th>";
  for (const auto& c : kCols) o += std::string("<th>") + c.second + "</th>";
  o += "</tr>\n";
  for (const CompareRun& r : runs) {
    o += "<tr><td style=\"text-align:left\">" + svg::esc(r.label) + "</td>";
    for (const auto& c : kCols) o += "<td>" + svg::num(hv(r, c.first)) + "</td>";
    o += "</tr>\n";
  }
  return o + "</table>\n";
}

std::vector<std::string> labels(const std::vector<CompareRun>& runs) {
  std::vector<std::string> l;
  for (const CompareRun& r : runs) l.push_back(r.label.size() > 24 ? r.label.substr(0, 23) + "…" : r.label);
  return l;
}

std::string slowdown(const std::vector<CompareRun>& runs) {
  std::vector<std::vector<double>> v;
  for (const CompareRun& r : runs) v.push_back({hv(r, "slowdown_p50"), hv(r, "slowdown_p95"), hv(r, "slowdown_p99")});
  std::string o = svg::figure(
      svg::grouped_bars("cmp_slowdown", {"FCT slowdown over all flows: p50, p95, p99", "run", "slowdown, log", false, true},
                        labels(runs), {"p50", "p95", "p99"}, v),
      "the p99 bars first: the run whose tail stays nearest 1 treats every flow as if it were alone.");
  std::vector<svg::Series> s;
  for (const CompareRun& r : runs) {
    svg::Series line{r.label, {}};
    line.markers = true;
    for (const json& b : r.summary.value("slowdown_buckets", json::array()))
      line.points.emplace_back(b.value("max_bytes", 0.0), b.value("p99", 0.0));
    s.push_back(line);
  }
  return o + svg::figure(svg::line_plot("cmp_slowdown_size",
                                        {"p99 FCT slowdown by flow size (each point a size bucket)",
                                         "flow size (bucket's largest, bytes)", "p99 slowdown, log", true, true},
                                        s),
                         "where the runs part: a scheme that helps large flows may hurt short ones (left) or the "
                         "other way round.");
}

std::string goodput(const std::vector<CompareRun>& runs) {
  std::vector<svg::Series> s;
  for (const CompareRun& r : runs) {
    const json& g = r.summary.value("goodput", json::object());
    const double bin_us = g.value("bin_ns", 0.0) / 1000;
    svg::Series line{r.label, {}, true};
    const json& v = g.value("gbps", json::array());
    for (size_t i = 0; i < v.size(); ++i) line.points.emplace_back(bin_us * static_cast<double>(i), v[i].get<double>());
    s.push_back(line);
  }
  return svg::figure(svg::line_plot("cmp_goodput", {"Aggregate goodput over time", "time (us)", "Gb/s"}, s),
                     "which run keeps the bottleneck full and which finishes first (its line drops to 0 first).");
}

std::string signals(const std::vector<CompareRun>& runs) {
  std::vector<std::vector<double>> v;
  for (const CompareRun& r : runs) v.push_back({hv(r, "drops"), hv(r, "pause_frames"), hv(r, "ecn_marks")});
  return svg::figure(
      svg::grouped_bars("cmp_signals", {"Drops, PFC frames sent, ECN marks (log; none: no bar)", "run", "count, log",
                                        false, true},
                        labels(runs), {"drops", "PFC frames", "ECN marks"}, v),
      "what each run paid for its FCTs: drops mean retransmissions, PFC frames mean head-of-line blocking, ECN "
      "marks are the congestion signal the CC acted on instead.");
}

std::string queues(const std::vector<CompareRun>& runs) {
  std::vector<svg::Series> s;
  for (const CompareRun& r : runs) {
    if (!r.summary.contains("queue")) continue;
    const json& q = r.summary["queue"];
    const double t0 = q.value("start_ns", 0.0) / 1000, dt = q.value("interval_ns", 0.0) / 1000;
    svg::Series line{r.label + " (" + q.value("port", "") + ")", {}, true};
    const json& kb = q.value("kb", json::array());
    for (size_t i = 0; i < kb.size(); ++i) line.points.emplace_back(t0 + dt * static_cast<double>(i), kb[i].get<double>());
    s.push_back(line);
  }
  if (s.empty()) return "<p>No run sampled its queues (observe.queue_sample_ns).</p>\n";
  return svg::figure(svg::line_plot("cmp_queue", {"Deepest sampled egress queue of each run", "time (us)", "KiB"}, s),
                     "the height (buffer needed, delay added) and how long the queue stands: congestion control "
                     "should keep it short once it reacts.");
}

}  // namespace

std::vector<std::string> csv_split(const std::string& line) {
  std::vector<std::string> out(1);
  bool quoted = false;
  for (size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    if (quoted) {
      if (c == '"' && i + 1 < line.size() && line[i + 1] == '"') out.back() += '"', ++i;
      else if (c == '"') quoted = false;
      else out.back() += c;
    } else if (c == '"') {
      quoted = true;
    } else if (c == ',') {
      out.emplace_back();
    } else if (c != '\r') {
      out.back() += c;
    }
  }
  return out;
}

std::vector<CompareRun> load_runs(const std::vector<std::string>& dirs) {
  std::vector<CompareRun> runs;
  for (const std::string& d : dirs) {
    if (!std::filesystem::is_directory(d)) throw std::runtime_error(d + ": not a folder");
    if (std::filesystem::exists(d + "/summary.csv")) {
      for (CompareRun& r : sweep_runs(d)) runs.push_back(std::move(r));
      continue;
    }
    const std::string path = d + "/summary.json";
    if (!std::filesystem::exists(path))
      throw std::runtime_error(d + ": no summary.json or summary.csv (not the output folder of rdmasim study or sweep)");
    CompareRun r{d, d, read_json(path)};
    check_summary(r.summary, path);
    runs.push_back(std::move(r));
  }
  if (runs.empty()) throw std::runtime_error("no run to compare");
  return runs;
}

std::string compare_html(const std::vector<CompareRun>& runs) {
  std::string o =
      "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>rdmasim compare</title>\n"
      "<style>body{font-family:sans-serif;margin:2em;max-width:1200px;color:#222}table{border-collapse:collapse}"
      "td,th{border:1px solid #ccc;padding:2px 6px;text-align:right}figure{display:flex;gap:1em;align-items:"
      "flex-start;flex-wrap:wrap;margin:1em 0}figcaption{max-width:280px;background:#f4f4f0;padding:.6em;"
      "border-left:4px solid #0072B2}</style></head><body>\n<h1>rdmasim compare: " +
      std::to_string(runs.size()) + " runs</h1>\n";
  o += table(runs);
  o += "<h2>Flow completion</h2>\n" + slowdown(runs);
  o += "<h2>Throughput</h2>\n" + goodput(runs);
  o += "<h2>Fabric</h2>\n" + signals(runs) + queues(runs);
  o += "<p><small>Slowdown = FCT / the flow's ideal FCT alone on an idle fabric (see each run's report.html). "
       "Made by <code>rdmasim compare</code> from each run's summary.json.</small></p>\n</body></html>\n";
  return o;
}

}  // namespace rdmasim::study
