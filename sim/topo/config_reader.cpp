#include "sim/topo/config_reader.h"

#include <algorithm>

namespace rdmasim::topo {

void ConfigReader::error(const std::string& path, const nlohmann::json& value,
                         std::string_view problem, std::string_view expected) {
  errors_.push_back(path + ": " + value.dump() + " " + std::string(problem) + "; expected " +
                    std::string(expected));
}

void ConfigReader::error(const std::string& path, std::string_view message) {
  errors_.push_back(path + ": " + std::string(message));
}

bool ConfigReader::object(const nlohmann::json& j, const std::string& path,
                          std::initializer_list<std::string_view> allowed) {
  if (!j.is_object()) {
    error(path, j, "is not an object", "a JSON object");
    return false;
  }
  for (auto it = j.begin(); it != j.end(); ++it) {
    if (std::find(allowed.begin(), allowed.end(), it.key()) == allowed.end()) {
      std::string keys;
      for (std::string_view k : allowed) keys += (keys.empty() ? "" : ", ") + std::string(k);
      errors_.push_back(join(path, it.key()) + ": unknown key; expected one of " + keys);
    }
  }
  return true;
}

const nlohmann::json* ConfigReader::find(const nlohmann::json& obj, std::string_view key,
                                         const std::string& path, bool required,
                                         std::string_view expected) {
  if (!obj.is_object()) return nullptr;
  auto it = obj.find(key);
  if (it == obj.end()) {
    if (required) error(join(path, key), "is missing; expected " + std::string(expected));
    return nullptr;
  }
  return &*it;
}

int64_t ConfigReader::integer(const nlohmann::json& obj, std::string_view key,
                              const std::string& path, std::optional<int64_t> def, int64_t min,
                              int64_t max, std::string_view expected) {
  const nlohmann::json* v = find(obj, key, path, !def, expected);
  if (!v) return def.value_or(min);
  const std::string p = join(path, key);
  if (!v->is_number_integer() && !v->is_number_unsigned()) {
    error(p, *v, "is not an integer", expected);
    return def.value_or(min);
  }
  if (v->is_number_unsigned() && v->get<uint64_t>() > static_cast<uint64_t>(INT64_MAX)) {
    error(p, *v, "is too large", expected);
    return def.value_or(min);
  }
  const int64_t x = v->get<int64_t>();
  if (x < min || x > max) {
    error(p, *v, x < 0 && min >= 0 ? "is negative" : "is out of range", expected);
    return def.value_or(min);
  }
  return x;
}

double ConfigReader::number(const nlohmann::json& obj, std::string_view key,
                            const std::string& path, std::optional<double> def, double min,
                            bool min_exclusive, double max, std::string_view expected) {
  const nlohmann::json* v = find(obj, key, path, !def, expected);
  if (!v) return def.value_or(min);
  const std::string p = join(path, key);
  if (!v->is_number()) {
    error(p, *v, "is not a number", expected);
    return def.value_or(min);
  }
  const double x = v->get<double>();
  if (x < min || (min_exclusive && x == min) || x > max) {
    error(p, *v, x < 0 && min >= 0 ? "is negative" : (x == 0 ? "is zero" : "is out of range"),
          expected);
    return def.value_or(min);
  }
  return x;
}

std::string ConfigReader::string(const nlohmann::json& obj, std::string_view key,
                                 const std::string& path, std::optional<std::string> def,
                                 std::string_view expected) {
  const nlohmann::json* v = find(obj, key, path, !def, expected);
  if (!v) return def.value_or("");
  if (!v->is_string()) {
    error(join(path, key), *v, "is not a string", expected);
    return def.value_or("");
  }
  return v->get<std::string>();
}

bool ConfigReader::boolean(const nlohmann::json& obj, std::string_view key,
                           const std::string& path, bool def) {
  const nlohmann::json* v = find(obj, key, path, false, "true or false");
  if (!v) return def;
  if (!v->is_boolean()) {
    error(join(path, key), *v, "is not a boolean", "true or false");
    return def;
  }
  return v->get<bool>();
}

}  // namespace rdmasim::topo
