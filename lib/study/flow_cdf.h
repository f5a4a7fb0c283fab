// A flow-size distribution as the HPCC simulator's traffic generator reads it (its
// traffic_gen/ CDF files, configs/workloads/): one point per line, `<size in bytes>
// <cumulative percent>`, sizes and percents non-decreasing, the last percent 100; between
// two points the distribution is linear (sizes uniform within a segment).
#pragma once

#include <cstdint>
#include <random>
#include <string>
#include <vector>

namespace rdmasim::study {

class FlowSizeCdf {
 public:
  struct Point {
    double bytes, percent;
  };

  // Parses `text`; false with *why ("line 3: ...") when it is not such a CDF.
  bool parse(const std::string& text, std::string* why);
  // Reads the file at `path` (false with *why naming it when unreadable or malformed).
  bool load(const std::string& path, std::string* why);

  // The mean size: sum over segments of (p_i - p_{i-1}) / 100 x (s_{i-1} + s_i) / 2.
  double mean() const;
  // F(x): the fraction of flows of at most x bytes (linear between points).
  double cdf(double bytes) const;
  // A size drawn by inversion: u uniform in [0, 100), the segment whose percents bracket
  // it, linear within it; rounded up to whole bytes, at least 1.
  uint64_t sample(std::mt19937_64& rng) const;

  const std::vector<Point>& points() const { return points_; }

 private:
  std::vector<Point> points_;
};

}  // namespace rdmasim::study
