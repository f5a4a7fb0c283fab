// Flow-size CDFs (see flow_cdf.h).
#include "lib/study/flow_cdf.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <sstream>

namespace rdmasim::study {

bool FlowSizeCdf::parse(const std::string& text, std::string* why) {
  points_.clear();
  std::istringstream in(text);
  std::string line;
  for (int n = 1; std::getline(in, line); ++n) {
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    std::istringstream l(line);
    Point p{};
    std::string rest;
    if (!(l >> p.bytes >> p.percent) || (l >> rest) || !std::isfinite(p.bytes) || !std::isfinite(p.percent)) {
      *why = "line " + std::to_string(n) + ": \"" + line + "\" is not \"<size in bytes> <cumulative percent>\"";
      return false;
    }
    if (p.bytes < 0 || p.percent < 0 || p.percent > 100) {
      *why = "line " + std::to_string(n) + ": size must be >= 0 and percent 0..100";
      return false;
    }
    if (!points_.empty() && (p.bytes < points_.back().bytes || p.percent < points_.back().percent)) {
      *why = "line " + std::to_string(n) + ": sizes and percents must not decrease";
      return false;
    }
    points_.push_back(p);
  }
  if (points_.size() < 2 || points_.back().percent != 100) {
    *why = "needs at least two points and its last percent 100";
    points_.clear();
    return false;
  }
  return true;
}

bool FlowSizeCdf::load(const std::string& path, std::string* why) {
  std::ifstream in(path);
  if (!in) {
    *why = "cannot be opened (" + path + ")";
    return false;
  }
  std::stringstream ss;
  ss << in.rdbuf();
  if (!parse(ss.str(), why)) {
    *why = path + ": " + *why;
    return false;
  }
  return true;
}

double FlowSizeCdf::mean() const {
  double m = points_.front().percent / 100 * points_.front().bytes;   // a jump at the first point
  for (size_t i = 1; i < points_.size(); ++i)
    m += (points_[i].percent - points_[i - 1].percent) / 100 * (points_[i - 1].bytes + points_[i].bytes) / 2;
  return m;
}

double FlowSizeCdf::cdf(double bytes) const {
  if (bytes < points_.front().bytes) return 0;
  for (size_t i = 1; i < points_.size(); ++i) {
    const Point& a = points_[i - 1];
    const Point& b = points_[i];
    if (bytes < b.bytes) return (a.percent + (b.percent - a.percent) * (bytes - a.bytes) / (b.bytes - a.bytes)) / 100;
  }
  return 1;
}

uint64_t FlowSizeCdf::sample(std::mt19937_64& rng) const {
  const double u = std::uniform_real_distribution<double>(0, 100)(rng);
  double x = points_.back().bytes;
  if (u < points_.front().percent) {
    x = points_.front().bytes;
  } else {
    for (size_t i = 1; i < points_.size(); ++i) {
      const Point& a = points_[i - 1];
      const Point& b = points_[i];
      if (u < b.percent) {
        x = a.bytes + (b.bytes - a.bytes) * (u - a.percent) / (b.percent - a.percent);
        break;
      }
    }
  }
  return std::max<uint64_t>(1, static_cast<uint64_t>(std::ceil(x)));
}

}  // namespace rdmasim::study
