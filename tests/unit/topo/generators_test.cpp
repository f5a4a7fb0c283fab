// Topology generators, shipped configs, link overrides and config errors per generator.
#include <doctest/doctest.h>

#include <string>

#include <nlohmann/json.hpp>

#include "sim/topo/fabric.h"
#include "sim/topo/fabric_spec.h"
#include "tests/unit/topo/helpers.h"

using namespace rdmasim;
using nlohmann::json;
using topo_test::errors;
using topo_test::load;

namespace {

json topo_of(json t) { return json{{"topology", std::move(t)}}; }

}  // namespace

TEST_CASE("generators: every shipped config passes --check with the summary its shape implies") {
  // back to back: 2 hosts cabled to each other, no switch, 1 link (on IB too: no route is
  // needed between two adjacent HCAs).
  CHECK(topo::Fabric::check(load("back_to_back_roce.json")) ==
        "2 hosts, 0 switches, 1 link, RoCEv2 100 Gb/s, MTU 4096, back_to_back");
  CHECK(topo::Fabric::check(load("back_to_back_ib.json")) ==
        "2 hosts, 0 switches, 1 link, InfiniBand 100 Gb/s, MTU 4096, back_to_back, up-down routing");
  // star: N hosts, 1 switch, N links.
  CHECK(topo::Fabric::check(load("star_roce.json")) ==
        "16 hosts, 1 switch, 16 links, RoCEv2 100 Gb/s, MTU 4096, star");
  CHECK(topo::Fabric::check(load("star_ib.json")) ==
        "16 hosts, 1 switch, 16 links, InfiniBand 100 Gb/s, MTU 4096, star, up-down routing");
  CHECK(topo::Fabric::check(load("star_iwarp.json")) ==
        "16 hosts, 1 switch, 16 links, iWARP 100 Gb/s, MTU 1500, star");
  // dumbbell: 2N hosts, 2 switches, 2N host links + the bottleneck.
  CHECK(topo::Fabric::check(load("dumbbell_roce.json")) ==
        "8 hosts, 2 switches, 9 links, RoCEv2 100 Gb/s, MTU 4096, dumbbell 4+4");
  CHECK(topo::Fabric::check(load("dumbbell_ib.json")) ==
        "8 hosts, 2 switches, 9 links, InfiniBand 100 Gb/s, MTU 4096, dumbbell 4+4, up-down routing");
  // leaf-spine 4x2, 8 hosts per leaf: 32 hosts, 6 switches, 32 + 4*2 links; a leaf has
  // 8 x 100 Gb/s down and 2 x 200 Gb/s up: 800/400 = 2:1.
  CHECK(topo::Fabric::check(load("leaf_spine_roce.json")) ==
        "32 hosts, 6 switches, 40 links, RoCEv2 100-200 Gb/s, MTU 4096, "
        "leaf_spine 4 leaves x 2 spines, oversubscription 2:1");
  CHECK(topo::Fabric::check(load("leaf_spine_ib.json")) ==
        "32 hosts, 6 switches, 40 links, InfiniBand 100-200 Gb/s, MTU 4096, "
        "leaf_spine 4 leaves x 2 spines, oversubscription 2:1, up-down routing");
  // fat tree k=4: k^3/4 = 16 hosts; k*k/2 edge + k*k/2 agg + (k/2)^2 core = 8+8+4 = 20
  // switches; links: 16 host + k*(k/2)^2 edge-agg (16) + k*(k/2)^2 agg-core (16) = 48.
  CHECK(topo::Fabric::check(load("fat_tree_roce.json")) ==
        "16 hosts, 20 switches, 48 links, RoCEv2 100 Gb/s, MTU 4096, fat_tree k=4, oversubscription 1:1");
  CHECK(topo::Fabric::check(load("fat_tree_ib.json")) ==
        "16 hosts, 20 switches, 48 links, InfiniBand 100 Gb/s, MTU 4096, fat_tree k=4, "
        "oversubscription 1:1, up-down routing");
}

TEST_CASE("generators: fat tree sizes follow k^3/4 hosts and 5k^2/4 switches") {
  for (int k : {2, 6, 8}) {
    const topo::FabricSpec s = topo::parse_fabric(topo_of({{"type", "fat_tree"}, {"k", k}}));
    CHECK(s.num_hosts == static_cast<size_t>(k * k * k / 4));
    CHECK(s.switches.size() == static_cast<size_t>(5 * k * k / 4));
    // each host one link; each edge k/2 uplinks; each agg k/2 uplinks
    CHECK(s.links.size() == static_cast<size_t>(k * k * k / 4 * 3));
  }
}

TEST_CASE("generators: dumbbell bottleneck and leaf-spine rates are applied to the right links") {
  const topo::FabricSpec d = topo::parse_fabric(
      topo_of({{"type", "dumbbell"}, {"hosts_per_side", 3}, {"bottleneck_gbps", 25},
               {"bottleneck_latency_ns", 5000}}));
  REQUIRE(d.links.size() == 7);
  CHECK(d.links.back().name == "left-right");
  CHECK(d.links.back().rate.as_gbps() == 25);
  CHECK(d.links.back().latency == ns(5000));
  CHECK(d.links[0].rate.as_gbps() == 100);  // host links keep the `link` default
  CHECK(d.switches[0].name == "left");
  const topo::FabricSpec ls = topo::parse_fabric(
      topo_of({{"type", "leaf_spine"}, {"leaves", 2}, {"spines", 1}, {"hosts_per_leaf", 4},
               {"host_rate_gbps", 25}, {"uplink_rate_gbps", 50}}));
  // 4 x 25 down, 1 x 50 up: 2:1
  CHECK(topo::summarize(ls).find("oversubscription 2:1") != std::string::npos);
  for (const topo::LinkSpec& l : ls.links)
    CHECK(l.rate.as_gbps() == (l.a.is_switch && l.b.is_switch ? 50 : 25));
}

TEST_CASE("generators: link_overrides change one named link") {
  json c = topo_of({{"type", "dumbbell"}, {"hosts_per_side", 1}});
  c["link_overrides"] = {{"left-right", {{"rate_gbps", 10}, {"latency_ns", 7}}},
                         {"host1-left", {{"latency_ns", 9}}}};
  const topo::FabricSpec s = topo::parse_fabric(c);
  CHECK(s.links[0].latency == ns(9));
  CHECK(s.links[0].rate.as_gbps() == 100);
  CHECK(s.links[2].rate.as_gbps() == 10);
  CHECK(s.links[2].latency == ns(7));
  CHECK(s.nics[0].nic.rate.as_gbps() == 100);
  c["link_overrides"] = {{"left-middle", {{"rate_gbps", 10}}}};
  CHECK(errors(c) ==
        "fabric.link_overrides.left-middle: names no link; expected the name of a link (\"<a>-<b>\" unless given)");
  c["link_overrides"] = {{"left-right", {{"rate_gbps", -1}, {"colour", 1}}}};
  CHECK(errors(c).find("fabric.link_overrides.left-right.colour: unknown key") != std::string::npos);
  CHECK(errors(c).find("fabric.link_overrides.left-right.rate_gbps: -1") != std::string::npos);
}

TEST_CASE("generators: explicit links take names, and a duplicate name is an error") {
  json c = load("default.json");
  c["links"][0]["name"] = "uplink";
  c["link_overrides"] = {{"uplink", {{"rate_gbps", 40}}}};
  const topo::FabricSpec s = topo::parse_fabric(c);
  CHECK(s.links[0].name == "uplink");
  CHECK(s.links[1].name == "client/mlx5_0-sw0");  // default "<a>-<b>"
  CHECK(s.nics[0].nic.rate.as_gbps() == 40);      // the NIC runs at its (overridden) link rate
  c["links"][1]["name"] = "uplink";
  CHECK(errors(c).find("fabric.links[1].name: \"uplink\" is already the name of fabric.links[0]") == 0);
}

TEST_CASE("generators: bad parameters of each generator name the path, value and expectation") {
  CHECK(errors(topo_of({{"type", "star"}, {"hosts", 0}})) ==
        "fabric.topology.hosts: 0 is out of range; expected a host count 1..65000");
  CHECK(errors(topo_of({{"type", "back_to_back"}, {"hosts", 3}})).find("fabric.topology.hosts: 3") == 0);
  CHECK(errors(topo_of({{"type", "dumbbell"}, {"hosts_per_side", -2}})).find(
            "fabric.topology.hosts_per_side: -2") == 0);
  CHECK(errors(topo_of({{"type", "dumbbell"}, {"bottleneck_gbps", 0}})) ==
        "fabric.topology.bottleneck_gbps: 0 is zero; expected a rate in Gb/s > 0");
  CHECK(errors(topo_of({{"type", "leaf_spine"}, {"spines", "two"}})) ==
        "fabric.topology.spines: \"two\" is not an integer; expected a spine count 1..1000");
  CHECK(errors(topo_of({{"type", "leaf_spine"}, {"uplink_rate_gbps", -40}})).find(
            "fabric.topology.uplink_rate_gbps: -40") == 0);
  CHECK(errors(topo_of({{"type", "fat_tree"}, {"k", 5}})) ==
        "fabric.topology.k: 5 is odd; expected an even port count 2..64");
  CHECK(errors(topo_of({{"type", "fat_tree"}, {"k", 66}})).find("fabric.topology.k: 66") == 0);
  // a key of another generator, and an unknown key
  CHECK(errors(topo_of({{"type", "fat_tree"}, {"hosts_per_leaf", 2}})) ==
        "fabric.topology.hosts_per_leaf: is not a key of type \"fat_tree\"");
  CHECK(errors(topo_of({{"type", "star"}, {"radix", 2}})).find("fabric.topology.radix: unknown key") == 0);
  CHECK(errors(json{{"topology", {{"type", "star"}}}, {"routing", "ospf"}}) ==
        "fabric.routing: \"ospf\" is not a routing algorithm; expected \"min_hop\", \"up_down\", \"ftree\" or \"adaptive\"");
}
