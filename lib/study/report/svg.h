// The report's SVG pictures: line and scatter plots (linear or log axes), grouped bars, a
// heat map and an interval timeline. Each is one <svg class="plot" id=...> with a <title>,
// and goes on the page through figure() with a sentence saying what to look at. Numbers
// are printed with snprintf in the "C" locale's format, so one run gives the same bytes.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace rdmasim::study::svg {

std::string esc(const std::string& s);
std::string num(double v);          // "%.4g": tick labels and table cells
const char* colour(size_t i);       // a colour-blind-safe palette (Okabe & Ito), cycled

struct Series {
  std::string label;
  std::vector<std::pair<double, double>> points;
  bool step = false;   // the value holds until the next point
  bool bold = false;
  bool dots = false;   // markers only: no line joins the points (per-flow values)
  bool markers = false;   // a line and a marker at each point (few points, e.g. size buckets)
};

struct Axes {
  std::string title, xlabel, ylabel;
  bool xlog = false, ylog = false;   // log axes start at the data's smallest positive value
  double ymax = 0;                   // 0 = from the data
};

// Axes, ticks, a <polyline class="series"> (or <circle class="dot">s) per series, a legend
// of up to 12 series.
std::string line_plot(const std::string& id, const Axes& a, const std::vector<Series>& series);

// One group of bars per label, one bar (<rect class="bar">) per series in each group.
std::string grouped_bars(const std::string& id, const Axes& a, const std::vector<std::string>& groups,
                         const std::vector<std::string>& series, const std::vector<std::vector<double>>& values);

// Rows of cells over time: cell (r, c) covers [t0 + c dt, t0 + (c + 1) dt) and is shaded by
// values[r][c] in [0, 1] (<rect class="cell">, zeros left blank), with a scale from 0 to 1.
std::string heat_map(const std::string& id, const std::string& title, const std::vector<std::string>& rows,
                     double t0, double dt, const std::vector<std::vector<double>>& values,
                     const std::string& unit, const std::string& scale_label);

struct Interval {
  size_t lane = 0;
  double from = 0, to = 0;
};
// One lane per name, a <rect class="span"> per interval on a shared time axis [0, tmax].
std::string timeline(const std::string& id, const std::string& title, const std::vector<std::string>& lanes,
                     const std::vector<Interval>& spans, double tmax, const std::string& unit);

// <figure>SVG<figcaption><b>What to look at:</b> ...</figcaption></figure> (as the lessons'
// pages, so one check reads both).
std::string figure(const std::string& svg, const std::string& look_at);

}  // namespace rdmasim::study::svg
