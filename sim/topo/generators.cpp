// Topology generators: expand {"topology": {...}} into explicit hosts, switches and links.
#include <nlohmann/json.hpp>

#include "sim/topo/config_reader.h"

namespace rdmasim::topo {

using nlohmann::json;

// "star": hosts host1..hostN (ip 127.0.1.1 upwards, NIC mlx5_0) on one switch sw0.
// "back_to_back": host1 and host2 linked directly, no switch.
// Host i (1-based) gets ip 127.0.0.0 + 256 + i, i.e. 127.0.1.1, 127.0.1.2, ...
json expand_topology(ConfigReader& r, const json& config) {
  const std::string p = "fabric.topology";
  const json& t = config["topology"];
  for (const char* k : {"hosts", "switches", "links"}) {
    if (config.contains(k))
      r.error(join("fabric", k), "is given together with fabric.topology; expected one or the other");
  }
  if (!r.object(t, p, {"type", "hosts"})) return config;
  const std::string type = r.string(t, "type", p, std::nullopt, "\"star\" or \"back_to_back\"");
  int64_t n = 2;
  if (type == "star") {
    n = r.integer(t, "hosts", p, 2, 1, 65000, "a host count 1..65000");
  } else if (type == "back_to_back") {
    if (t.contains("hosts"))
      n = r.integer(t, "hosts", p, 2, 2, 2, "2 (a back-to-back fabric has two hosts)");
  } else if (!type.empty()) {
    r.error(join(p, "type"), json(type), "is not a known topology", "\"star\" or \"back_to_back\"");
  }
  if (!r.ok()) return config;
  json out = config;
  out.erase("topology");
  json hosts = json::array(), links = json::array();
  for (int64_t i = 1; i <= n; ++i) {
    const uint32_t ip = 0x7f000000u + 256u + static_cast<uint32_t>(i);
    const std::string name = "host" + std::to_string(i);
    hosts.push_back({{"name", name},
                     {"ip", std::to_string(ip >> 24) + "." + std::to_string((ip >> 16) & 255) + "." +
                                std::to_string((ip >> 8) & 255) + "." + std::to_string(ip & 255)},
                     {"nics", json::array({json{{"name", "mlx5_0"}}})}});
    if (type == "star") links.push_back({{"a", name + "/mlx5_0"}, {"b", "sw0"}});
  }
  if (type == "star") {
    out["switches"] = json::array({json{{"name", "sw0"}}});
  } else {
    links.push_back({{"a", "host1/mlx5_0"}, {"b", "host2/mlx5_0"}});
  }
  out["hosts"] = hosts;
  out["links"] = links;
  return out;
}

}  // namespace rdmasim::topo
