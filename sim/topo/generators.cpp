// Topology generators: expand {"topology": {...}} into explicit hosts, switches and links.
#include <nlohmann/json.hpp>

#include "sim/topo/config_reader.h"

namespace rdmasim::topo {

using nlohmann::json;

namespace {

std::string host_ip(int64_t i) {
  const uint32_t ip = 0x7f000000u + 256u + static_cast<uint32_t>(i);
  return std::to_string(ip >> 24) + "." + std::to_string((ip >> 16) & 255) + "." +
         std::to_string((ip >> 8) & 255) + "." + std::to_string(ip & 255);
}

json host(int64_t i) {
  return {{"name", "host" + std::to_string(i)},
          {"ip", host_ip(i)},
          {"nics", json::array({json{{"name", "mlx5_0"}}})}};
}

}  // namespace

// "star": hosts host1..hostN (NIC mlx5_0) on one switch sw0.
// "back_to_back": host1 and host2 linked directly, no switch.
// "leaf_spine": leaves leaf1..leafL, spines spine1..spineS, every leaf linked to every
//   spine; hosts_per_leaf hosts on each leaf, numbered leaf by leaf.
// Host i (1-based) gets ip 127.0.0.0 + 256 + i, i.e. 127.0.1.1, 127.0.1.2, ...
json expand_topology(ConfigReader& r, const json& config) {
  const std::string p = "fabric.topology";
  const json& t = config["topology"];
  for (const char* k : {"hosts", "switches", "links"}) {
    if (config.contains(k))
      r.error(join("fabric", k), "is given together with fabric.topology; expected one or the other");
  }
  if (!r.object(t, p, {"type", "hosts", "leaves", "spines", "hosts_per_leaf"})) return config;
  const std::string type = r.string(t, "type", p, std::nullopt,
                                    "\"star\", \"back_to_back\" or \"leaf_spine\"");
  const bool leaf_spine = type == "leaf_spine";
  for (const char* k : {"leaves", "spines", "hosts_per_leaf"})
    if (!leaf_spine && t.contains(k)) r.error(join(p, k), "is only for type \"leaf_spine\"");
  if (leaf_spine && t.contains("hosts"))
    r.error(join(p, "hosts"), "is not for type \"leaf_spine\"; expected hosts_per_leaf");
  json out = config;
  out.erase("topology");
  json hosts = json::array(), switches = json::array(), links = json::array();
  if (type == "star" || type == "back_to_back") {
    const int64_t n = type == "star"
                          ? r.integer(t, "hosts", p, 2, 1, 65000, "a host count 1..65000")
                          : r.integer(t, "hosts", p, 2, 2, 2, "2 (a back-to-back fabric has two hosts)");
    for (int64_t i = 1; i <= n; ++i) {
      hosts.push_back(host(i));
      if (type == "star") links.push_back({{"a", "host" + std::to_string(i)}, {"b", "sw0"}});
    }
    if (type == "star") switches.push_back({{"name", "sw0"}});
    else links.push_back({{"a", "host1"}, {"b", "host2"}});
  } else if (leaf_spine) {
    const int64_t leaves = r.integer(t, "leaves", p, 2, 1, 1000, "a leaf count 1..1000");
    const int64_t spines = r.integer(t, "spines", p, 2, 1, 1000, "a spine count 1..1000");
    const int64_t per = r.integer(t, "hosts_per_leaf", p, 2, 1, 1000, "a host count 1..1000");
    if (leaves * per > 65000) r.error(p, "has more than 65000 hosts");
    for (int64_t l = 1; l <= leaves; ++l) {
      const std::string leaf = "leaf" + std::to_string(l);
      switches.push_back({{"name", leaf}});
      for (int64_t h = 1; h <= per; ++h) {
        const int64_t i = (l - 1) * per + h;
        hosts.push_back(host(i));
        links.push_back({{"a", "host" + std::to_string(i)}, {"b", leaf}});
      }
    }
    for (int64_t s = 1; s <= spines; ++s) {
      switches.push_back({{"name", "spine" + std::to_string(s)}});
      for (int64_t l = 1; l <= leaves; ++l)
        links.push_back({{"a", "leaf" + std::to_string(l)}, {"b", "spine" + std::to_string(s)}});
    }
  } else if (!type.empty()) {
    r.error(join(p, "type"), json(type), "is not a known topology",
            "\"star\", \"back_to_back\" or \"leaf_spine\"");
  }
  out["hosts"] = hosts;
  out["switches"] = switches;
  out["links"] = links;
  return out;
}

}  // namespace rdmasim::topo
