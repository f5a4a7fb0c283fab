// Shared helpers for the sim/topo tests: loading shipped configs and collecting the errors
// of checking a config.
#pragma once

#include <doctest/doctest.h>

#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "sim/topo/fabric.h"

namespace rdmasim::topo_test {

// A shipped config, configs/<name>.
inline nlohmann::json load(const std::string& name) {
  std::ifstream in(std::string(RDMASIM_SOURCE_DIR) + "/configs/" + name);
  REQUIRE(in.good());
  return nlohmann::json::parse(in);
}

// Every error line of checking `config`; empty when it is valid.
inline std::vector<std::string> check_errors(const nlohmann::json& config) {
  try {
    topo::Fabric::check(config);
  } catch (const topo::ConfigError& e) {
    REQUIRE(!e.errors().empty());
    return e.errors();
  }
  return {};
}

// All errors of checking `config`, one per line ("" when valid).
inline std::string errors(const nlohmann::json& config) {
  std::string out;
  for (const std::string& s : check_errors(config)) out += (out.empty() ? "" : "\n") + s;
  return out;
}

// The first error of checking `config`, or "" when it is valid.
inline std::string first_error(const nlohmann::json& config) {
  const std::vector<std::string> all = check_errors(config);
  return all.empty() ? "" : all.front();
}

// True when some error contains `text`; a valid config or no matching line fails the test.
inline bool has_error(const nlohmann::json& config, const std::string& text) {
  const std::vector<std::string> all = check_errors(config);
  for (const std::string& s : all)
    if (s.find(text) != std::string::npos) return true;
  FAIL("no error contains \"" << text << "\"; got: " << errors(config));
  return false;
}

}  // namespace rdmasim::topo_test
