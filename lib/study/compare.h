// `rdmasim compare`: several runs' results on one page. A run is a study's output folder
// (its summary.json); a sweep's folder (summary.csv) stands for each of its points.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace rdmasim::study {

struct CompareRun {
  std::string label;        // the folder as given, or a sweep point's varied values
  std::string dir;
  nlohmann::json summary;   // the run's summary.json
};

// Reads each folder: a sweep's summary.csv expands into its points (label "path=value, ..."),
// anything else must hold summary.json. Throws std::runtime_error naming the folder and
// what is missing or malformed.
std::vector<CompareRun> load_runs(const std::vector<std::string>& dirs);

// The page: a table of headline figures, FCT slowdown percentiles overall and p99 by flow
// size, aggregate goodput over time, drops / PFC frames / ECN marks, the deepest queue.
std::string compare_html(const std::vector<CompareRun>& runs);

// Splits one CSV line (RFC 4180 quoting) into fields.
std::vector<std::string> csv_split(const std::string& line);

}  // namespace rdmasim::study
