// Reads typed values from a JSON config, collecting errors that name the path and the value.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace rdmasim::topo {

// Every getter records an error (and returns the default) instead of throwing, so one pass
// reports every problem of a config. Messages look like
// "fabric.links[0].rate_gbps: -3 is negative; expected a rate in Gb/s > 0".
class ConfigReader {
 public:
  // Records "<path>: <value> <problem>; expected <expected>".
  void error(const std::string& path, const nlohmann::json& value, std::string_view problem,
             std::string_view expected);
  void error(const std::string& path, std::string_view message);

  // True when `j` is an object; records an error for every key not in `allowed`.
  bool object(const nlohmann::json& j, const std::string& path,
              std::initializer_list<std::string_view> allowed);

  // Integer in [min, max]. Missing -> `def` (or an error when `def` is nullopt).
  int64_t integer(const nlohmann::json& obj, std::string_view key, const std::string& path,
                  std::optional<int64_t> def, int64_t min, int64_t max, std::string_view expected);
  // Number > min (exclusive) or >= min (inclusive), and <= max.
  double number(const nlohmann::json& obj, std::string_view key, const std::string& path,
                std::optional<double> def, double min, bool min_exclusive, double max,
                std::string_view expected);
  std::string string(const nlohmann::json& obj, std::string_view key, const std::string& path,
                     std::optional<std::string> def, std::string_view expected);
  bool boolean(const nlohmann::json& obj, std::string_view key, const std::string& path, bool def);

  const std::vector<std::string>& errors() const { return errors_; }
  bool ok() const { return errors_.empty(); }

 private:
  const nlohmann::json* find(const nlohmann::json& obj, std::string_view key,
                             const std::string& path, bool required, std::string_view expected);
  std::vector<std::string> errors_;
};

inline std::string join(const std::string& path, std::string_view key) {
  return path + "." + std::string(key);
}
inline std::string index(const std::string& path, size_t i) {
  return path + "[" + std::to_string(i) + "]";
}

}  // namespace rdmasim::topo
