// The page writer and its SVG pictures. Numbers are printed with snprintf in the "C"
// locale's format so that the same run gives the same bytes.
#include "lib/learn/page.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace rdmasim::learn {
namespace {

// Colour-blind-safe palette (Okabe & Ito, "Color Universal Design", 2008).
const char* colour(size_t i) {
  static constexpr const char* kPalette[] = {"#0072B2", "#D55E00", "#009E73", "#CC79A7",
                                             "#E69F00", "#56B4E9", "#F0E442", "#000000"};
  return kPalette[i % 8];
}

// A "nice" tick step for the range [0, max]: 1, 2 or 5 times a power of ten.
double tick_step(double max, int want) {
  if (max <= 0) return 1;
  const double raw = max / want;
  const double p = std::pow(10.0, std::floor(std::log10(raw)));
  for (double m : {1.0, 2.0, 5.0, 10.0})
    if (m * p >= raw) return m * p;
  return 10 * p;
}

std::string tick_text(double v) {
  char b[32];
  std::snprintf(b, sizeof b, "%g", v);
  return b;
}

// At most kMaxPoints points per series: groups of consecutive points become one, at the
// group's first x, with the group's mean (a step series: its maximum, so that a short pause
// stays visible).
constexpr size_t kMaxPoints = 600;
Series thin(const Series& s) {
  const size_t n = std::min(s.x.size(), s.y.size());
  if (n <= kMaxPoints) return s;
  const size_t g = (n + kMaxPoints - 1) / kMaxPoints;
  Series o = s;
  o.x.clear();
  o.y.clear();
  for (size_t i = 0; i < n; i += g) {
    const size_t e = std::min(n, i + g);
    double acc = s.step ? s.y[i] : 0;
    for (size_t k = i; k < e; ++k) acc = s.step ? std::max(acc, s.y[k]) : acc + s.y[k];
    o.x.push_back(s.x[i]);
    o.y.push_back(s.step ? acc : acc / static_cast<double>(e - i));
  }
  return o;
}

}  // namespace

std::string html_escape(const std::string& s) {
  std::string o;
  for (char c : s) {
    switch (c) {
      case '&': o += "&amp;"; break;
      case '<': o += "&lt;"; break;
      case '>': o += "&gt;"; break;
      case '"': o += "&quot;"; break;
      default: o += c;
    }
  }
  return o;
}

std::string num(double v, int decimals) {
  char b[64];
  std::snprintf(b, sizeof b, "%.*f", decimals, v);
  return b;
}

std::string line_plot(const Plot& p) {
  constexpr double W = 680, H = 280, L = 64, R = 150, T = 28, B = 44;
  double xmax = 0, ymax = p.ymax;
  for (const Series& s : p.series) {
    for (double x : s.x) xmax = std::max(xmax, x);
    if (p.ymax <= 0)
      for (double y : s.y) ymax = std::max(ymax, y);
  }
  if (xmax <= 0) xmax = 1;
  if (ymax <= 0) ymax = 1;
  const double xs = tick_step(xmax, 6), ys = tick_step(ymax, 4);
  xmax = std::ceil(xmax / xs) * xs;
  ymax = std::ceil(ymax / ys) * ys;
  const double pw = W - L - R, ph = H - T - B;
  auto X = [&](double x) { return L + x / xmax * pw; };
  auto Y = [&](double y) { return T + ph - std::min(y, ymax) / ymax * ph; };
  std::string o = "<svg class=\"plot\" xmlns=\"http://www.w3.org/2000/svg\" width=\"" + num(W, 0) +
                  "\" height=\"" + num(H, 0) + "\" viewBox=\"0 0 " + num(W, 0) + " " + num(H, 0) + "\">\n";
  o += "<text x=\"" + num(L, 0) + "\" y=\"18\" class=\"title\">" + html_escape(p.title) + "</text>\n";
  for (double v = 0; v <= ymax + ys / 2; v += ys) {
    o += "<line class=\"grid\" x1=\"" + num(L) + "\" x2=\"" + num(L + pw) + "\" y1=\"" + num(Y(v)) + "\" y2=\"" +
         num(Y(v)) + "\"/><text class=\"tick\" x=\"" + num(L - 6) + "\" y=\"" + num(Y(v) + 4) +
         "\" text-anchor=\"end\">" + tick_text(v) + "</text>\n";
  }
  for (double v = 0; v <= xmax + xs / 2; v += xs)
    o += "<text class=\"tick\" x=\"" + num(X(v)) + "\" y=\"" + num(T + ph + 16) + "\" text-anchor=\"middle\">" +
         tick_text(v) + "</text>\n";
  o += "<line class=\"axis\" x1=\"" + num(L) + "\" y1=\"" + num(T + ph) + "\" x2=\"" + num(L + pw) + "\" y2=\"" +
       num(T + ph) + "\"/><line class=\"axis\" x1=\"" + num(L) + "\" y1=\"" + num(T) + "\" x2=\"" + num(L) +
       "\" y2=\"" + num(T + ph) + "\"/>\n";
  o += "<text class=\"label\" x=\"" + num(L + pw / 2) + "\" y=\"" + num(H - 6) + "\" text-anchor=\"middle\">" +
       html_escape(p.xlabel) + "</text>\n";
  o += "<text class=\"label\" transform=\"translate(14," + num(T + ph / 2) + ") rotate(-90)\" text-anchor=\"middle\">" +
       html_escape(p.ylabel) + "</text>\n";
  for (size_t i = 0; i < p.series.size(); ++i) {
    const Series s = thin(p.series[i]);
    std::string pts;
    for (size_t k = 0; k < s.x.size() && k < s.y.size(); ++k) {
      if (s.step && k > 0) pts += num(X(s.x[k])) + "," + num(Y(s.y[k - 1])) + " ";
      pts += num(X(s.x[k])) + "," + num(Y(s.y[k])) + " ";
    }
    o += "<polyline class=\"series\" fill=\"none\" stroke=\"" + std::string(colour(i)) + "\" stroke-width=\"" +
         (s.bold ? "2.5" : "1.2") + "\" points=\"" + pts + "\"/>\n";
    const double ly = T + 8 + 16.0 * static_cast<double>(i);
    o += "<line x1=\"" + num(L + pw + 10) + "\" x2=\"" + num(L + pw + 28) + "\" y1=\"" + num(ly) + "\" y2=\"" +
         num(ly) + "\" stroke=\"" + colour(i) + "\" stroke-width=\"3\"/><text class=\"legend\" x=\"" +
         num(L + pw + 32) + "\" y=\"" + num(ly + 4) + "\">" + html_escape(s.label) + "</text>\n";
  }
  return o + "</svg>\n";
}

std::string bar_chart(const std::string& title, const std::string& unit, const std::vector<Bar>& bars) {
  constexpr double W = 680, L = 190, R = 170, row = 26, T = 30;
  const double H = T + row * static_cast<double>(bars.size()) + 10;
  double vmax = 0;
  for (const Bar& b : bars) vmax = std::max(vmax, b.value);
  if (vmax <= 0) vmax = 1;
  std::string o = "<svg class=\"plot\" xmlns=\"http://www.w3.org/2000/svg\" width=\"" + num(W, 0) +
                  "\" height=\"" + num(H, 0) + "\" viewBox=\"0 0 " + num(W, 0) + " " + num(H, 0) + "\">\n";
  o += "<text x=\"8\" y=\"18\" class=\"title\">" + html_escape(title) + "</text>\n";
  for (size_t i = 0; i < bars.size(); ++i) {
    const double y = T + row * static_cast<double>(i);
    const double w = bars[i].value / vmax * (W - L - R);
    o += "<text class=\"tick\" x=\"" + num(L - 8) + "\" y=\"" + num(y + 15) + "\" text-anchor=\"end\">" +
         html_escape(bars[i].label) + "</text>";
    o += "<rect class=\"bar\" x=\"" + num(L) + "\" y=\"" + num(y + 3) + "\" width=\"" + num(std::max(w, 1.0)) +
         "\" height=\"" + num(row - 8) + "\" fill=\"" + colour(i) + "\"/>";
    o += "<text class=\"tick\" x=\"" + num(L + w + 6) + "\" y=\"" + num(y + 15) + "\">" +
         html_escape(bars[i].note.empty() ? tick_text(bars[i].value) + " " + unit : bars[i].note) + "</text>\n";
  }
  return o + "</svg>\n";
}

std::string swimlane(const std::string& title, const std::vector<std::string>& lanes,
                     const std::vector<LaneSpan>& spans, const std::string& unit) {
  constexpr double W = 760, L = 150, R = 20, row = 30, T = 30, B = 40;
  const double H = T + row * static_cast<double>(lanes.size()) + B;
  double tmax = 0;
  for (const LaneSpan& s : spans) tmax = std::max(tmax, s.end);
  if (tmax <= 0) tmax = 1;
  const double xs = tick_step(tmax, 8);
  tmax = std::ceil(tmax / xs) * xs;
  const double pw = W - L - R;
  auto X = [&](double t) { return L + t / tmax * pw; };
  std::string o = "<svg class=\"plot\" xmlns=\"http://www.w3.org/2000/svg\" width=\"" + num(W, 0) +
                  "\" height=\"" + num(H, 0) + "\" viewBox=\"0 0 " + num(W, 0) + " " + num(H, 0) + "\">\n";
  o += "<text x=\"8\" y=\"18\" class=\"title\">" + html_escape(title) + "</text>\n";
  for (size_t i = 0; i < lanes.size(); ++i) {
    const double y = T + row * static_cast<double>(i);
    o += "<line class=\"grid\" x1=\"" + num(L) + "\" x2=\"" + num(L + pw) + "\" y1=\"" + num(y + row) + "\" y2=\"" +
         num(y + row) + "\"/><text class=\"tick\" x=\"" + num(L - 8) + "\" y=\"" + num(y + 19) +
         "\" text-anchor=\"end\">" + html_escape(lanes[i]) + "</text>\n";
  }
  for (size_t k = 0; k < spans.size(); ++k) {
    const LaneSpan& s = spans[k];
    const double y = T + row * static_cast<double>(s.lane);
    o += "<rect class=\"span\" x=\"" + num(X(s.start)) + "\" y=\"" + num(y + 5) + "\" width=\"" +
         num(std::max(X(s.end) - X(s.start), 1.5)) + "\" height=\"" + num(row - 10) + "\" fill=\"" +
         colour(s.lane) + "\"><title>" + html_escape(s.label) + " " + num(s.start, 1) + "-" + num(s.end, 1) + " " +
         unit + "</title></rect>\n";
  }
  for (double v = 0; v <= tmax + xs / 2; v += xs)
    o += "<text class=\"tick\" x=\"" + num(X(v)) + "\" y=\"" + num(H - B + 16) + "\" text-anchor=\"middle\">" +
         tick_text(v) + "</text>\n";
  o += "<text class=\"label\" x=\"" + num(L + pw / 2) + "\" y=\"" + num(H - 6) + "\" text-anchor=\"middle\">time (" +
       html_escape(unit) + ")</text>\n";
  return o + "</svg>\n";
}

void Page::heading(const std::string& text) { body_ += "<h2>" + html_escape(text) + "</h2>\n"; }
void Page::para(const std::string& text) { body_ += "<p>" + html_escape(text) + "</p>\n"; }
void Page::pre(const std::string& text) { body_ += "<pre>" + html_escape(text) + "</pre>\n"; }

void Page::table(const std::vector<std::string>& header, const std::vector<std::vector<std::string>>& rows) {
  body_ += "<table><tr>";
  for (const auto& h : header) body_ += "<th>" + html_escape(h) + "</th>";
  body_ += "</tr>\n";
  for (const auto& r : rows) {
    body_ += "<tr>";
    for (const auto& c : r) body_ += "<td>" + html_escape(c) + "</td>";
    body_ += "</tr>\n";
  }
  body_ += "</table>\n";
}

void Page::figure(const std::string& svg, const std::string& look_at) {
  body_ += "<figure>" + svg + "<figcaption><b>What to look at:</b> " + html_escape(look_at) +
           "</figcaption></figure>\n";
}

std::string Page::html() const {
  return "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>" + html_escape(title_) +
         "</title>\n<style>\nbody{font-family:sans-serif;max-width:980px;margin:2em auto;color:#222;line-height:1.45}\n"
         "figure{display:flex;gap:1em;align-items:flex-start;margin:1em 0;flex-wrap:wrap}\n"
         "figcaption{max-width:260px;font-size:.95em;background:#f4f4f0;padding:.6em;border-left:4px solid #0072B2}\n"
         "table{border-collapse:collapse;margin:1em 0}td,th{border:1px solid #bbb;padding:.25em .6em;text-align:right}\n"
         "th{background:#eee}pre{background:#f7f7f7;padding:.6em;overflow-x:auto}\n"
         ".title{font-weight:bold;font-size:14px}.tick,.legend{font-size:11px}.label{font-size:12px}\n"
         ".grid{stroke:#ddd}.axis{stroke:#444}\n</style></head><body>\n<h1>" +
         html_escape(title_) + "</h1>\n" + body_ + "<p><small>Made by <code>rdmasim learn</code>: every number on this page "
         "comes from the simulator's models and counters (virtual time).</small></p>\n</body></html>\n";
}

}  // namespace rdmasim::learn
