// report.html: one self-contained page (no scripts, no external resources) with inline SVG
// plots of per-flow goodput over time, the FCT distribution and queue depth over time.
#include <algorithm>
#include <cmath>
#include <sstream>

#include "lib/study/study.h"

namespace rdmasim::study {
namespace {

struct Series {
  std::string name;
  std::vector<std::pair<double, double>> points;
};

std::string esc(const std::string& s) {
  std::string o;
  for (char c : s) {
    switch (c) {
      case '<': o += "&lt;"; break;
      case '>': o += "&gt;"; break;
      case '&': o += "&amp;"; break;
      case '"': o += "&quot;"; break;
      default: o += c;
    }
  }
  return o;
}

std::string num(double v) {
  char buf[32];
  snprintf(buf, sizeof buf, "%.4g", v);
  return buf;
}

// A "nice" upper bound for an axis (1, 1.2, 1.5, 2, ... 8 times a power of ten), >= v.
double nice_max(double v) {
  if (v <= 0) return 1;
  const double p = std::pow(10, std::floor(std::log10(v)));
  for (double m : {1.0, 1.2, 1.5, 2.0, 2.5, 3.0, 4.0, 5.0, 6.0, 8.0, 10.0})
    if (m * p >= v) return m * p;
  return 10 * p;
}

constexpr const char* kColors[] = {"#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b",
                                   "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"};

// A line plot: x and y from 0 to nice maxima, 5 ticks each, a legend for up to 12 series.
std::string plot(const std::string& id, const std::string& title, const std::string& xlabel,
                 const std::string& ylabel, const std::vector<Series>& series, bool step) {
  constexpr double W = 760, H = 320, L = 70, R = 170, T = 30, B = 45;
  double xmax = 0, ymax = 0;
  for (const Series& s : series)
    for (const auto& [x, y] : s.points) xmax = std::max(xmax, x), ymax = std::max(ymax, y);
  xmax = nice_max(xmax);
  ymax = nice_max(ymax);
  auto px = [&](double x) { return L + (W - L - R) * x / xmax; };
  auto py = [&](double y) { return H - B - (H - T - B) * y / ymax; };
  std::ostringstream o;
  o << "<svg id=\"" << id << "\" xmlns=\"http://www.w3.org/2000/svg\" width=\"" << W << "\" height=\"" << H
    << "\" viewBox=\"0 0 " << W << " " << H << "\" font-family=\"sans-serif\" font-size=\"11\">\n";
  o << "<title>" << esc(title) << "</title>\n";
  o << "<text x=\"" << L << "\" y=\"18\" font-size=\"14\">" << esc(title) << "</text>\n";
  o << "<rect x=\"" << L << "\" y=\"" << T << "\" width=\"" << W - L - R << "\" height=\"" << H - T - B
    << "\" fill=\"none\" stroke=\"#444\"/>\n";
  for (int i = 0; i <= 5; ++i) {
    const double xv = xmax * i / 5, yv = ymax * i / 5;
    o << "<line x1=\"" << px(xv) << "\" y1=\"" << H - B << "\" x2=\"" << px(xv) << "\" y2=\"" << H - B + 4
      << "\" stroke=\"#444\"/><text x=\"" << px(xv) << "\" y=\"" << H - B + 16
      << "\" text-anchor=\"middle\">" << num(xv) << "</text>\n";
    o << "<line x1=\"" << L - 4 << "\" y1=\"" << py(yv) << "\" x2=\"" << L << "\" y2=\"" << py(yv)
      << "\" stroke=\"#444\"/><text x=\"" << L - 6 << "\" y=\"" << py(yv) + 4
      << "\" text-anchor=\"end\">" << num(yv) << "</text>\n";
  }
  o << "<text x=\"" << (L + W - R) / 2 << "\" y=\"" << H - 8 << "\" text-anchor=\"middle\">" << esc(xlabel)
    << "</text>\n";
  o << "<text transform=\"translate(16," << (T + H - B) / 2 << ") rotate(-90)\" text-anchor=\"middle\">"
    << esc(ylabel) << "</text>\n";
  for (size_t i = 0; i < series.size(); ++i) {
    const Series& s = series[i];
    if (s.points.empty()) continue;
    o << "<polyline class=\"series\" fill=\"none\" stroke-width=\"1.5\" stroke=\"" << kColors[i % 10]
      << "\" points=\"";
    double last_y = 0;
    for (size_t p = 0; p < s.points.size(); ++p) {
      const auto& [x, y] = s.points[p];
      if (step && p > 0) o << num(px(x)) << "," << num(py(last_y)) << " ";
      o << num(px(x)) << "," << num(py(y)) << " ";
      last_y = y;
    }
    o << "\"><title>" << esc(s.name) << "</title></polyline>\n";
    if (i < 12) {
      const double ly = T + 8 + 14 * static_cast<double>(i);
      o << "<line x1=\"" << W - R + 10 << "\" y1=\"" << ly << "\" x2=\"" << W - R + 26 << "\" y2=\"" << ly
        << "\" stroke=\"" << kColors[i % 10] << "\" stroke-width=\"2\"/><text x=\"" << W - R + 30 << "\" y=\""
        << ly + 4 << "\">" << esc(s.name.size() > 24 ? s.name.substr(0, 24) + "…" : s.name) << "</text>\n";
    } else if (i == 12) {
      o << "<text x=\"" << W - R + 10 << "\" y=\"" << T + 8 + 14 * 12 + 4 << "\">(+" << series.size() - 12
        << " more)</text>\n";
    }
  }
  o << "</svg>\n";
  return o.str();
}

// Re-bins a per-bin series into at most `max_points` points (mean over merged bins), each
// at the start time of its group.
std::vector<std::pair<double, double>> rebin(const std::vector<double>& v, double bin_us, size_t max_points) {
  const size_t g = std::max<size_t>(1, (v.size() + max_points - 1) / max_points);
  std::vector<std::pair<double, double>> out;
  for (size_t i = 0; i < v.size(); i += g) {
    double sum = 0;
    size_t n = 0;
    for (size_t j = i; j < std::min(v.size(), i + g); ++j, ++n) sum += v[j];
    out.emplace_back(bin_us * static_cast<double>(i), sum / static_cast<double>(n));   // group start
  }
  return out;
}

}  // namespace

std::string report_html(const StudySpec& spec, const StudyResult& result) {
  std::ostringstream o;
  o << "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>rdmasim study "
    << esc(spec.name) << "</title>\n<style>body{font-family:sans-serif;margin:2em}table{border-collapse:"
       "collapse}td,th{border:1px solid #ccc;padding:2px 6px;text-align:right}pre{background:#f4f4f4;"
       "padding:1em}</style></head><body>\n";
  o << "<h1>rdmasim study " << esc(spec.name) << "</h1>\n<pre id=\"summary\">" << esc(summary(spec, result))
    << "</pre>\n";

  // Goodput over time per flow.
  std::vector<Series> gp;
  const double bin_us = to_us(spec.goodput_bin);
  for (size_t k = 0; k < spec.flows.size(); ++k) {
    std::vector<double> g;
    for (uint64_t b : result.flows[k].rx_bins) g.push_back(static_cast<double>(b) * 8 / to_ns(spec.goodput_bin));
    gp.push_back({spec.flows[k].name, rebin(g, bin_us, 60)});
  }
  o << "<h2>Goodput</h2>\n" << plot("goodput", "Per-flow goodput (payload arriving at the receiver, 60 bins)",
                                    "time (us)", "Gb/s", gp, true);

  // FCT CDF, and per-flow FCT with the ideal.
  std::vector<double> fcts;
  Series ideal{"ideal", {}}, fct{"FCT", {}};
  for (size_t k = 0; k < spec.flows.size(); ++k) {
    const FlowResult& r = result.flows[k];
    ideal.points.emplace_back(static_cast<double>(k + 1), to_us(r.ideal_fct));
    if (!r.finished) continue;
    fcts.push_back(to_us(r.finish - spec.flows[k].start));
    fct.points.emplace_back(static_cast<double>(k + 1), fcts.back());
  }
  std::sort(fcts.begin(), fcts.end());
  Series cdf{"finished flows", {}};
  for (size_t i = 0; i < fcts.size(); ++i)
    cdf.points.emplace_back(fcts[i], static_cast<double>(i + 1) / static_cast<double>(spec.flows.size()));
  o << "<h2>Flow completion times</h2>\n"
    << plot("fct_cdf", "FCT CDF (fraction of all flows)", "FCT (us)", "fraction", {cdf}, true)
    << plot("fct_flows", "FCT per flow and the ideal FCT", "flow id + 1", "us", {fct, ideal}, false);

  // Queue depth over time: the 10 ports with the deepest queues, summed over classes.
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
  std::sort(deepest.rbegin(), deepest.rend());
  std::vector<Series> qs;
  for (size_t i = 0; i < std::min<size_t>(10, deepest.size()); ++i) {
    const PortSeries& ps = result.queues[deepest[i].second];
    std::vector<double> kb;
    for (const auto& s : ps.samples) {
      uint64_t t = 0;
      for (uint32_t v : s) t += v;
      kb.push_back(static_cast<double>(t) / 1024);
    }
    auto pts = rebin(kb, to_us(ps.interval), 400);
    for (auto& pt : pts) pt.first += to_us(ps.start);
    qs.push_back({ps.port, pts});
  }
  o << "<h2>Queue depth</h2>\n";
  if (result.queues.empty())
    o << "<p>Queue sampling is off (set <code>observe.queue_sample_ns</code>).</p>\n";
  else
    o << plot("queues", "Egress queue depth (all classes), deepest ports", "time (us)", "KiB", qs, false);

  o << "<h2>Flows</h2>\n<table id=\"flows\"><tr><th>id</th><th>name</th><th>bytes</th><th>start us</th>"
       "<th>FCT us</th><th>ideal us</th><th>slowdown</th><th>goodput Gb/s</th><th>status</th></tr>\n";
  for (size_t k = 0; k < std::min<size_t>(spec.flows.size(), 500); ++k) {
    const FlowSpec& f = spec.flows[k];
    const FlowResult& r = result.flows[k];
    const double fct_us = to_us(r.finish - f.start);
    o << "<tr><td>" << k << "</td><td style=\"text-align:left\">" << esc(f.name) << "</td><td>" << f.bytes
      << "</td><td>" << num(to_us(f.start)) << "</td><td>" << (r.finished ? num(fct_us) : "-") << "</td><td>"
      << num(to_us(r.ideal_fct)) << "</td><td>" << (r.finished ? num(fct_us / to_us(r.ideal_fct)) : "-")
      << "</td><td>" << (r.finished ? num(static_cast<double>(f.bytes) * 8 / (fct_us * 1000)) : "-")
      << "</td><td>" << (r.finished ? "finished" : esc(r.error)) << "</td></tr>\n";
  }
  o << "</table>\n</body></html>\n";
  return o.str();
}

}  // namespace rdmasim::study
