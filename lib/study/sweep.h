// `rdmasim sweep`: one study run at every point of a cross product of parameter values.
// A parameter is a dotted path into the study's JSON ("fabric.switch.ecn.kmin_kb",
// "generators.0.bytes"; numbers index arrays); a fabric given as a file is inlined first so
// that "fabric." paths reach into it.
#pragma once

#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace rdmasim::study {

// A bad --vary (path or value): the message names the path.
struct SweepError : std::invalid_argument {
  using std::invalid_argument::invalid_argument;
};

struct Vary {
  std::string path;
  std::vector<nlohmann::json> values;
};

// "path=v1,v2,...": values split at commas outside brackets, braces and quotes, each parsed
// as JSON, or taken as a string when it is not JSON (dcqcn, hpcc).
Vary parse_vary(const std::string& arg);

// Sets `path` in `study` to `value`. Every segment but the last must exist (an object's
// key, or an index within an array); the last may add a key to an object. `base_dir`
// resolves a fabric file (inlined into the study when a path starts with "fabric.").
void set_path(nlohmann::json& study, const std::string& path, const nlohmann::json& value,
              const std::string& base_dir);

struct SweepPoint {
  std::string name;                 // "p000", "p001", ... (its folder)
  std::vector<nlohmann::json> values;   // one per Vary
  nlohmann::json study;
};

// The cross product, the first --vary changing slowest; each point's study named
// "<name> [path=value, ...]".
std::vector<SweepPoint> expand_sweep(const nlohmann::json& study, const std::vector<Vary>& vary,
                                     const std::string& base_dir);

// A value as summary.csv and labels show it (strings bare, the rest as JSON).
std::string value_text(const nlohmann::json& v);

// summary.csv: point, dir, one column per path, status, then the headline figures of each
// point's summary.json (empty when the point wrote none).
std::string summary_csv_header(const std::vector<Vary>& vary);
std::string summary_csv_row(const SweepPoint& p, const std::string& status, const nlohmann::json* summary);

}  // namespace rdmasim::study
