// A lesson's page: one self-contained HTML file (inline CSS and SVG, no scripts, nothing
// fetched), and the SVG pictures lessons draw: line plots, bars and swimlanes. Every
// picture goes on the page with a plain-words "what to look at".
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace rdmasim::learn {

std::string html_escape(const std::string& s);
// Fixed, locale-free number text (the page and summary are byte-identical across runs).
std::string num(double v, int decimals = 2);

struct Series {
  std::string label;
  std::vector<double> x, y;
  bool step = false;        // a step function (the value holds until the next point)
  bool bold = false;
};

struct Plot {
  std::string title, xlabel, ylabel;
  std::vector<Series> series;
  double ymax = 0;          // 0 = from the data
};

// <svg class="plot"> with axes, ticks, one <polyline class="series"> per series, a legend.
std::string line_plot(const Plot& p);

struct Bar {
  std::string label;
  double value = 0;
  std::string note;         // printed after the value ("2,097,152 B")
};
// Horizontal bars, one row each, scaled to the largest (an <svg class="plot">).
std::string bar_chart(const std::string& title, const std::string& unit, const std::vector<Bar>& bars);

struct LaneSpan {
  size_t lane = 0;
  double start = 0, end = 0;   // in the chart's unit (ns)
  std::string label;
};
// Swimlanes: one row per lane, a <rect class="span"> per span on a shared time axis.
std::string swimlane(const std::string& title, const std::vector<std::string>& lanes,
                     const std::vector<LaneSpan>& spans, const std::string& unit);

class Page {
 public:
  explicit Page(std::string title) : title_(std::move(title)) {}
  void heading(const std::string& text);
  void para(const std::string& text);         // escaped plain text
  void table(const std::vector<std::string>& header, const std::vector<std::vector<std::string>>& rows);
  // A picture and, next to it, what to look at in it.
  void figure(const std::string& svg, const std::string& look_at);
  void pre(const std::string& text);
  std::string html() const;

 private:
  std::string title_;
  std::string body_;
};

}  // namespace rdmasim::learn
