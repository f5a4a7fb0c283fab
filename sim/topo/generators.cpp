// Topology generators: expand {"topology": {...}} into explicit hosts, switches and links.
#include <algorithm>
#include <string>
#include <utility>
#include <vector>

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

std::string num(const std::string& prefix, int64_t i) { return prefix + std::to_string(i); }

// Collects the generated nodes and links; every link is named "<a>-<b>".
struct Builder {
  json hosts = json::array(), switches = json::array(), links = json::array();

  void host(int64_t i) {
    hosts.push_back({{"name", num("host", i)},
                     {"ip", host_ip(i)},
                     {"nics", json::array({json{{"name", "mlx5_0"}}})}});
  }
  void sw(const std::string& name) { switches.push_back({{"name", name}}); }
  // `params`: per-link keys (rate_gbps, latency_ns) given by the generator, if any.
  void link(const std::string& a, const std::string& b, const json& params = json::object()) {
    json l = params;
    l["name"] = a + "-" + b;
    l["a"] = a;
    l["b"] = b;
    links.push_back(std::move(l));
  }
};

// {"rate_gbps": x} when the topology object has `key`, else {} (the `link` default applies).
json rate_param(ConfigReader& r, const json& t, const char* key, const std::string& p) {
  if (!t.contains(key)) return json::object();
  return {{"rate_gbps", r.number(t, key, p, std::nullopt, 0, true, 1e6, "a rate in Gb/s > 0")}};
}

constexpr const char* kTypes = "\"star\", \"back_to_back\", \"dumbbell\", \"leaf_spine\" or \"fat_tree\"";

}  // namespace

// "star": hosts host1..hostN (NIC mlx5_0) on one switch sw0.
// "back_to_back": host1 and host2 linked directly, no switch.
// "dumbbell": switches left and right joined by link "left-right" (the bottleneck);
//   hosts host1..hostN on left, host(N+1)..host(2N) on right.
// "leaf_spine": leaves leaf1..leafL, spines spine1..spineS, every leaf linked to every
//   spine; hosts_per_leaf hosts on each leaf, numbered leaf by leaf; host and uplink rates
//   set the oversubscription.
// "fat_tree": k-ary fat tree (Al-Fares et al., SIGCOMM 2008): k pods of k/2 edge and k/2
//   aggregation switches, (k/2)^2 core switches, k^3/4 hosts.
// Host i (1-based) gets ip 127.0.0.0 + 256 + i, i.e. 127.0.1.1, 127.0.1.2, ...
json expand_topology(ConfigReader& r, const json& config) {
  const std::string p = "fabric.topology";
  const json& t = config["topology"];
  for (const char* k : {"hosts", "switches", "links"}) {
    if (config.contains(k))
      r.error(join("fabric", k), "is given together with fabric.topology; expected one or the other");
  }
  if (!r.object(t, p, {"type", "hosts", "leaves", "spines", "hosts_per_leaf", "hosts_per_side",
                       "bottleneck_gbps", "bottleneck_latency_ns", "host_rate_gbps",
                       "uplink_rate_gbps", "k"}))
    return config;
  const std::string type = r.string(t, "type", p, std::nullopt, kTypes);
  // Which keys each type takes (besides "type").
  const std::vector<std::pair<std::string, std::vector<std::string>>> keys = {
      {"star", {"hosts"}},
      {"back_to_back", {"hosts"}},
      {"dumbbell", {"hosts_per_side", "bottleneck_gbps", "bottleneck_latency_ns"}},
      {"leaf_spine", {"leaves", "spines", "hosts_per_leaf", "host_rate_gbps", "uplink_rate_gbps"}},
      {"fat_tree", {"k", "host_rate_gbps", "uplink_rate_gbps"}},
  };
  const std::vector<std::string>* allowed = nullptr;
  for (const auto& [name, ks] : keys)
    if (name == type) allowed = &ks;
  if (allowed == nullptr) {
    if (!type.empty()) r.error(join(p, "type"), json(type), "is not a known topology", kTypes);
    return config;
  }
  for (auto it = t.begin(); it != t.end(); ++it) {
    if (it.key() == "type") continue;
    if (std::find(allowed->begin(), allowed->end(), it.key()) == allowed->end())
      r.error(join(p, it.key()), "is not a key of type \"" + type + "\"");
  }
  json out = config;
  out.erase("topology");
  Builder b;
  if (type == "star" || type == "back_to_back") {
    const int64_t n = type == "star"
                          ? r.integer(t, "hosts", p, 2, 1, 65000, "a host count 1..65000")
                          : r.integer(t, "hosts", p, 2, 2, 2, "2 (a back-to-back fabric has two hosts)");
    for (int64_t i = 1; i <= n; ++i) {
      b.host(i);
      if (type == "star") b.link(num("host", i), "sw0");
    }
    if (type == "star") b.sw("sw0");
    else b.link("host1", "host2");
  } else if (type == "dumbbell") {
    const int64_t n = r.integer(t, "hosts_per_side", p, 2, 1, 32000, "a host count 1..32000");
    b.sw("left");
    b.sw("right");
    for (int64_t i = 1; i <= 2 * n; ++i) {
      b.host(i);
      b.link(num("host", i), i <= n ? "left" : "right");
    }
    json bottleneck = rate_param(r, t, "bottleneck_gbps", p);
    if (t.contains("bottleneck_latency_ns"))
      bottleneck["latency_ns"] = r.integer(t, "bottleneck_latency_ns", p, std::nullopt, 0,
                                           1'000'000'000, "a propagation latency in ns >= 0");
    b.link("left", "right", bottleneck);
  } else if (type == "leaf_spine") {
    const int64_t leaves = r.integer(t, "leaves", p, 2, 1, 1000, "a leaf count 1..1000");
    const int64_t spines = r.integer(t, "spines", p, 2, 1, 1000, "a spine count 1..1000");
    const int64_t per = r.integer(t, "hosts_per_leaf", p, 2, 1, 1000, "a host count 1..1000");
    if (leaves * per > 65000) r.error(p, "has more than 65000 hosts");
    const json host_rate = rate_param(r, t, "host_rate_gbps", p);
    const json up_rate = rate_param(r, t, "uplink_rate_gbps", p);
    for (int64_t l = 1; l <= leaves; ++l) {
      b.sw(num("leaf", l));
      for (int64_t h = 1; h <= per; ++h) {
        const int64_t i = (l - 1) * per + h;
        b.host(i);
        b.link(num("host", i), num("leaf", l), host_rate);
      }
    }
    for (int64_t s = 1; s <= spines; ++s) {
      b.sw(num("spine", s));
      for (int64_t l = 1; l <= leaves; ++l) b.link(num("leaf", l), num("spine", s), up_rate);
    }
  } else if (type == "fat_tree") {
    const int64_t k = r.integer(t, "k", p, 4, 2, 64, "an even port count 2..64");
    if (k % 2) r.error(join(p, "k"), json(k), "is odd", "an even port count 2..64");
    const int64_t h = k / 2;
    const json host_rate = rate_param(r, t, "host_rate_gbps", p);
    const json up_rate = rate_param(r, t, "uplink_rate_gbps", p);
    auto edge = [](int64_t pod, int64_t e) { return "edge" + std::to_string(pod) + "_" + std::to_string(e); };
    auto agg = [](int64_t pod, int64_t a) { return "agg" + std::to_string(pod) + "_" + std::to_string(a); };
    int64_t i = 0;
    for (int64_t pod = 1; pod <= k; ++pod) {
      for (int64_t e = 1; e <= h; ++e) {
        b.sw(edge(pod, e));
        for (int64_t x = 0; x < h; ++x) {
          b.host(++i);
          b.link(num("host", i), edge(pod, e), host_rate);
        }
      }
      for (int64_t a = 1; a <= h; ++a) {
        b.sw(agg(pod, a));
        for (int64_t e = 1; e <= h; ++e) b.link(edge(pod, e), agg(pod, a), up_rate);
      }
    }
    // Aggregation switch a of every pod links to cores (a-1)*k/2+1 .. a*k/2.
    for (int64_t c = 1; c <= h * h; ++c) {
      b.sw(num("core", c));
      for (int64_t pod = 1; pod <= k; ++pod) b.link(agg(pod, (c - 1) / h + 1), num("core", c), up_rate);
    }
  }
  out["hosts"] = b.hosts;
  out["switches"] = b.switches;
  out["links"] = b.links;
  return out;
}

}  // namespace rdmasim::topo
