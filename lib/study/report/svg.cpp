#include "lib/study/report/svg.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace rdmasim::study::svg {
namespace {

constexpr double W = 760, H = 320, L = 70, R = 190, T = 30, B = 46;

std::string f1(double v) {
  char b[32];
  std::snprintf(b, sizeof b, "%.1f", v);
  return b;
}

// A "nice" tick step for [0, max]: 1, 2 or 5 times a power of ten, about `want` ticks.
double tick_step(double max, int want) {
  if (max <= 0) return 1;
  const double raw = max / want;
  const double p = std::pow(10.0, std::floor(std::log10(raw)));
  for (double m : {1.0, 2.0, 5.0, 10.0})
    if (m * p >= raw) return m * p;
  return 10 * p;
}

// Data to pixels along one axis.
struct Scale {
  double lo = 0, hi = 1, p0 = 0, p1 = 1;
  bool log = false;
  double operator()(double v) const {
    double t;
    if (log) t = (std::log10(std::max(v, lo)) - std::log10(lo)) / (std::log10(hi) - std::log10(lo));
    else t = (v - lo) / (hi - lo);
    return p0 + std::clamp(t, 0.0, 1.0) * (p1 - p0);
  }
  std::vector<double> ticks() const {
    std::vector<double> t;
    if (log) {
      const int d0 = static_cast<int>(std::lround(std::log10(lo))), d1 = static_cast<int>(std::lround(std::log10(hi)));
      const int every = std::max(1, (d1 - d0 + 7) / 8);
      for (int d = d0; d <= d1; d += every) t.push_back(std::pow(10.0, d));
    } else {
      const double s = tick_step(hi, 5);
      for (double v = 0; v <= hi + s / 2; v += s) t.push_back(v);
    }
    return t;
  }
};

// A scale over [0, max] or, logarithmic, over the decades holding [min positive, max].
Scale make_scale(double min_pos, double max, bool log, double p0, double p1) {
  Scale s;
  s.p0 = p0, s.p1 = p1, s.log = log;
  if (log) {
    if (min_pos <= 0 || !std::isfinite(min_pos)) min_pos = 1;
    max = std::max(max, min_pos);
    s.lo = std::pow(10.0, std::floor(std::log10(min_pos)));
    s.hi = std::pow(10.0, std::ceil(std::log10(max)));
    if (s.hi <= s.lo) s.hi = s.lo * 10;
  } else {
    if (max <= 0) max = 1;
    const double st = tick_step(max, 5);
    s.lo = 0;
    s.hi = std::ceil(max / st) * st;
  }
  return s;
}

std::string open_svg(const std::string& id, const std::string& title, double w, double h) {
  return "<svg class=\"plot\" id=\"" + esc(id) + "\" xmlns=\"http://www.w3.org/2000/svg\" width=\"" + f1(w) +
         "\" height=\"" + f1(h) + "\" viewBox=\"0 0 " + f1(w) + " " + f1(h) +
         "\" font-family=\"sans-serif\" font-size=\"11\">\n<title>" + esc(title) + "</title>\n<text x=\"" + f1(L) +
         "\" y=\"18\" font-size=\"14\">" + esc(title) + "</text>\n";
}

// The frame, ticks and axis labels of a plot area [L, W-R] x [T, H-B].
std::string frame(const Axes& a, const Scale& xs, const Scale& ys, bool xticks = true) {
  std::string o = "<rect x=\"" + f1(L) + "\" y=\"" + f1(T) + "\" width=\"" + f1(W - L - R) + "\" height=\"" +
                  f1(H - T - B) + "\" fill=\"none\" stroke=\"#444\"/>\n";
  for (double v : ys.ticks())
    o += "<line x1=\"" + f1(L) + "\" x2=\"" + f1(W - R) + "\" y1=\"" + f1(ys(v)) + "\" y2=\"" + f1(ys(v)) +
         "\" stroke=\"#e4e4e4\"/><text x=\"" + f1(L - 6) + "\" y=\"" + f1(ys(v) + 4) + "\" text-anchor=\"end\">" +
         num(v) + "</text>\n";
  if (xticks)
    for (double v : xs.ticks())
      o += "<line x1=\"" + f1(xs(v)) + "\" x2=\"" + f1(xs(v)) + "\" y1=\"" + f1(H - B) + "\" y2=\"" + f1(H - B + 4) +
           "\" stroke=\"#444\"/><text x=\"" + f1(xs(v)) + "\" y=\"" + f1(H - B + 16) +
           "\" text-anchor=\"middle\">" + num(v) + "</text>\n";
  o += "<text x=\"" + f1((L + W - R) / 2) + "\" y=\"" + f1(H - 8) + "\" text-anchor=\"middle\">" + esc(a.xlabel) +
       "</text>\n<text transform=\"translate(16," + f1((T + H - B) / 2) + ") rotate(-90)\" text-anchor=\"middle\">" +
       esc(a.ylabel) + "</text>\n";
  return o;
}

std::string legend_entry(size_t i, const std::string& label, bool box) {
  const double y = T + 8 + 14 * static_cast<double>(i);
  std::string shown = label.size() > 28 ? label.substr(0, 27) + "…" : label;
  std::string o = box ? "<rect x=\"" + f1(W - R + 10) + "\" y=\"" + f1(y - 5) + "\" width=\"14\" height=\"10\" fill=\"" +
                            colour(i) + "\"/>"
                      : "<line x1=\"" + f1(W - R + 10) + "\" y1=\"" + f1(y) + "\" x2=\"" + f1(W - R + 24) + "\" y2=\"" +
                            f1(y) + "\" stroke=\"" + colour(i) + "\" stroke-width=\"3\"/>";
  return o + "<text x=\"" + f1(W - R + 30) + "\" y=\"" + f1(y + 4) + "\">" + esc(shown) + "</text>\n";
}

}  // namespace

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
  char b[32];
  std::snprintf(b, sizeof b, "%.4g", v);
  return b;
}

const char* colour(size_t i) {
  static constexpr const char* kPalette[] = {"#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00",
                                             "#56B4E9", "#000000", "#999999", "#F0E442"};
  return kPalette[i % 9];
}

std::string line_plot(const std::string& id, const Axes& a, const std::vector<Series>& series) {
  double xmin = INFINITY, xmax = 0, ymin = INFINITY, ymax = a.ymax;
  for (const Series& s : series)
    for (const auto& [x, y] : s.points) {
      if (x > 0) xmin = std::min(xmin, x);
      if (y > 0) ymin = std::min(ymin, y);
      xmax = std::max(xmax, x);
      if (a.ymax <= 0) ymax = std::max(ymax, y);
    }
  const Scale xs = make_scale(xmin, xmax, a.xlog, L, W - R), ys = make_scale(ymin, ymax, a.ylog, H - B, T);
  std::string o = open_svg(id, a.title, W, H) + frame(a, xs, ys);
  for (size_t i = 0; i < series.size(); ++i) {
    const Series& s = series[i];
    if (s.dots) {
      o += "<g fill=\"" + std::string(colour(i)) + "\" fill-opacity=\"0.6\"><title>" + esc(s.label) + "</title>";
      for (const auto& [x, y] : s.points)
        o += "<circle class=\"dot\" cx=\"" + f1(xs(x)) + "\" cy=\"" + f1(ys(y)) + "\" r=\"2.5\"/>";
      o += "</g>\n";
    } else if (!s.points.empty()) {
      o += "<polyline class=\"series\" fill=\"none\" stroke-width=\"" + std::string(s.bold ? "2.5" : "1.3") +
           "\" stroke=\"" + colour(i) + "\" points=\"";
      for (size_t p = 0; p < s.points.size(); ++p) {
        if (s.step && p > 0) o += f1(xs(s.points[p].first)) + "," + f1(ys(s.points[p - 1].second)) + " ";
        o += f1(xs(s.points[p].first)) + "," + f1(ys(s.points[p].second)) + " ";
      }
      o += "\"><title>" + esc(s.label) + "</title></polyline>\n";
      if (s.markers) {
        o += "<g fill=\"" + std::string(colour(i)) + "\">";
        for (const auto& [x, y] : s.points)
          o += "<circle class=\"marker\" cx=\"" + f1(xs(x)) + "\" cy=\"" + f1(ys(y)) + "\" r=\"3.5\"/>";
        o += "</g>\n";
      }
    }
    if (i < 12) o += legend_entry(i, s.label, s.dots);
  }
  return o + "</svg>\n";
}

std::string grouped_bars(const std::string& id, const Axes& a, const std::vector<std::string>& groups,
                         const std::vector<std::string>& series, const std::vector<std::vector<double>>& values) {
  double ymin = INFINITY, ymax = a.ymax;
  for (const auto& g : values)
    for (double v : g) {
      if (v > 0) ymin = std::min(ymin, v);
      if (a.ymax <= 0) ymax = std::max(ymax, v);
    }
  const Scale ys = make_scale(ymin, ymax, a.ylog, H - B, T);
  std::string o = open_svg(id, a.title, W, H) + frame(a, Scale{}, ys, false);
  const double gw = (W - L - R) / static_cast<double>(std::max<size_t>(1, groups.size()));
  const double bw = gw * 0.8 / static_cast<double>(std::max<size_t>(1, series.size()));
  const size_t label_every = std::max<size_t>(1, (groups.size() + 9) / 10);
  for (size_t g = 0; g < groups.size(); ++g) {
    const double x0 = L + gw * static_cast<double>(g) + gw * 0.1;
    for (size_t s = 0; s < series.size() && g < values.size() && s < values[g].size(); ++s) {
      const double v = values[g][s], y = ys(v);
      o += "<rect class=\"bar\" x=\"" + f1(x0 + bw * static_cast<double>(s)) + "\" y=\"" + f1(y) + "\" width=\"" +
           f1(std::max(bw - 1, 1.0)) + "\" height=\"" + f1(std::max(H - B - y, 0.0)) + "\" fill=\"" + colour(s) +
           "\"><title>" + esc(groups[g] + " " + series[s] + ": " + num(v)) + "</title></rect>";
    }
    if (g % label_every == 0)
      o += "<text x=\"" + f1(x0 + gw * 0.4) + "\" y=\"" + f1(H - B + 14) + "\" text-anchor=\"middle\">" +
           esc(groups[g]) + "</text>";
    o += "\n";
  }
  for (size_t s = 0; s < series.size() && s < 12; ++s) o += legend_entry(s, series[s], true);
  return o + "</svg>\n";
}

std::string heat_map(const std::string& id, const std::string& title, const std::vector<std::string>& rows,
                     double t0, double dt, const std::vector<std::vector<double>>& values, const std::string& unit,
                     const std::string& scale_label) {
  constexpr double HL = 170, HR = 80, row = 16;
  const double h = T + row * static_cast<double>(rows.size()) + B;
  size_t cols = 0;
  for (const auto& r : values) cols = std::max(cols, r.size());
  const Scale xs = make_scale(0, t0 + dt * static_cast<double>(std::max<size_t>(cols, 1)), false, HL, W - HR);
  const double cw = (xs(t0 + dt) - xs(t0));
  std::string o = open_svg(id, title, W, h);
  for (size_t r = 0; r < rows.size(); ++r) {
    const double y = T + row * static_cast<double>(r);
    o += "<text x=\"" + f1(HL - 6) + "\" y=\"" + f1(y + 12) + "\" text-anchor=\"end\">" + esc(rows[r]) + "</text>";
    for (size_t c = 0; r < values.size() && c < values[r].size(); ++c) {
      const double v = std::clamp(values[r][c], 0.0, 1.0);
      if (v <= 0) continue;
      // White to dark blue: lightness falls with utilization.
      const int light = static_cast<int>(std::lround(95 - 70 * v));
      o += "<rect class=\"cell\" x=\"" + f1(xs(t0 + dt * static_cast<double>(c))) + "\" y=\"" + f1(y + 1) +
           "\" width=\"" + f1(std::max(cw, 0.6)) + "\" height=\"" + f1(row - 2) + "\" fill=\"hsl(210,80%," +
           std::to_string(light) + "%)\"><title>" + esc(rows[r]) + " " + num(t0 + dt * static_cast<double>(c)) +
           " " + unit + ": " + num(100 * values[r][c]) + "%</title></rect>";
    }
    o += "\n";
  }
  o += "<rect x=\"" + f1(HL) + "\" y=\"" + f1(T) + "\" width=\"" + f1(W - HR - HL) + "\" height=\"" +
       f1(row * static_cast<double>(rows.size())) + "\" fill=\"none\" stroke=\"#444\"/>\n";
  for (double v : xs.ticks())
    o += "<text x=\"" + f1(xs(v)) + "\" y=\"" + f1(h - B + 16) + "\" text-anchor=\"middle\">" + num(v) + "</text>";
  o += "\n<text x=\"" + f1((HL + W - HR) / 2) + "\" y=\"" + f1(h - 8) + "\" text-anchor=\"middle\">time (" +
       esc(unit) + ")</text>\n";
  // The colour scale, 0 at the bottom to 1 at the top.
  for (int i = 0; i < 10; ++i) {
    const double v = (i + 0.5) / 10;
    o += "<rect x=\"" + f1(W - HR + 14) + "\" y=\"" + f1(T + 100 - 10 * (i + 1)) + "\" width=\"14\" height=\"10\" fill=\"hsl(210,80%," +
         std::to_string(static_cast<int>(std::lround(95 - 70 * v))) + "%)\"/>";
  }
  o += "<text x=\"" + f1(W - HR + 32) + "\" y=\"" + f1(T + 8) + "\">1</text><text x=\"" + f1(W - HR + 32) +
       "\" y=\"" + f1(T + 100) + "\">0</text><text x=\"" + f1(W - HR + 10) + "\" y=\"" + f1(T + 116) + "\">" +
       esc(scale_label) + "</text>\n";
  return o + "</svg>\n";
}

std::string timeline(const std::string& id, const std::string& title, const std::vector<std::string>& lanes,
                     const std::vector<Interval>& spans, double tmax, const std::string& unit) {
  constexpr double TL = 130, TR = 30, row = 18;
  const double h = T + row * static_cast<double>(lanes.size()) + B;
  const Scale xs = make_scale(0, tmax, false, TL, W - TR);
  std::string o = open_svg(id, title, W, h);
  for (size_t i = 0; i < lanes.size(); ++i) {
    const double y = T + row * static_cast<double>(i);
    o += "<line x1=\"" + f1(TL) + "\" x2=\"" + f1(W - TR) + "\" y1=\"" + f1(y + row) + "\" y2=\"" + f1(y + row) +
         "\" stroke=\"#e4e4e4\"/><text x=\"" + f1(TL - 6) + "\" y=\"" + f1(y + 13) + "\" text-anchor=\"end\">" +
         esc(lanes[i]) + "</text>\n";
  }
  for (const Interval& s : spans) {
    const double y = T + row * static_cast<double>(s.lane);
    o += "<rect class=\"span\" x=\"" + f1(xs(s.from)) + "\" y=\"" + f1(y + 3) + "\" width=\"" +
         f1(std::max(xs(s.to) - xs(s.from), 1.0)) + "\" height=\"" + f1(row - 6) + "\" fill=\"#D55E00\"><title>" +
         esc(s.lane < lanes.size() ? lanes[s.lane] : "") + " paused " + num(s.from) + "-" + num(s.to) + " " + unit +
         "</title></rect>";
  }
  o += "\n<rect x=\"" + f1(TL) + "\" y=\"" + f1(T) + "\" width=\"" + f1(W - TR - TL) + "\" height=\"" +
       f1(row * static_cast<double>(lanes.size())) + "\" fill=\"none\" stroke=\"#444\"/>\n";
  for (double v : xs.ticks())
    o += "<text x=\"" + f1(xs(v)) + "\" y=\"" + f1(h - B + 16) + "\" text-anchor=\"middle\">" + num(v) + "</text>";
  o += "\n<text x=\"" + f1((TL + W - TR) / 2) + "\" y=\"" + f1(h - 8) + "\" text-anchor=\"middle\">time (" +
       esc(unit) + ")</text>\n";
  return o + "</svg>\n";
}

std::string figure(const std::string& svg, const std::string& look_at) {
  return "<figure>" + svg + "<figcaption><b>What to look at:</b> " + esc(look_at) + "</figcaption></figure>\n";
}

}  // namespace rdmasim::study::svg
