// Routing: up*/down* is deadlock-free (acyclic channel dependencies), min-hop on trees,
// and ECMP spreads flows over a fat tree's equal-cost uplinks as a hash should.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <map>
#include <set>
#include <vector>

#include <nlohmann/json.hpp>

#include "sim/net/packet.h"
#include "sim/topo/fabric.h"
#include "sim/topo/fabric_spec.h"
#include "sim/topo/routing.h"

using namespace rdmasim;
using nlohmann::json;

namespace {

// A channel is one direction of one link: (link index, sending end is link.a).
using Channel = std::pair<size_t, bool>;

bool is_end(const topo::LinkEnd& e, bool sw, size_t i) { return e.is_switch == sw && e.index == i; }

// The channel dependency graph of every route between every NIC pair, over all ECMP
// choices (Dally & Seitz: routing is deadlock-free when this graph is acyclic). Also calls
// `on_path` with the switch sequence of every route.
std::map<Channel, std::set<Channel>> dependencies(
    const topo::FabricSpec& spec, const topo::RouteTable& rt,
    const std::function<void(const std::vector<size_t>&)>& on_path = {}) {
  std::map<Channel, std::set<Channel>> g;
  for (size_t src = 0; src < spec.nics.size(); ++src) {
    for (size_t dst = 0; dst < spec.nics.size(); ++dst) {
      if (src == dst) continue;
      const size_t l0 = static_cast<size_t>(spec.nic_link[src]);
      const topo::LinkSpec& first = spec.links[l0];
      std::vector<size_t> path;
      // Walk every ECMP branch from the switch reached over channel `in`.
      std::function<void(Channel)> walk = [&](Channel in) {
        const topo::LinkSpec& l = spec.links[in.first];
        const topo::LinkEnd to = in.second ? l.b : l.a;
        if (!to.is_switch) {
          REQUIRE(to.index == dst);
          if (on_path) on_path(path);
          return;
        }
        REQUIRE(path.size() < 64);  // no forwarding loop
        path.push_back(to.index);
        const auto& next = rt.links()[to.index][dst];
        REQUIRE(!next.empty());
        for (size_t nl : next) {
          const Channel out{nl, is_end(spec.links[nl].a, true, to.index)};
          g[in].insert(out);
          walk(out);
        }
        path.pop_back();
      };
      walk({l0, is_end(first.a, false, src)});
    }
  }
  return g;
}

bool has_cycle(const std::map<Channel, std::set<Channel>>& g) {
  std::map<Channel, int> state;  // 0 new, 1 on stack, 2 done
  std::function<bool(Channel)> dfs = [&](Channel c) {
    state[c] = 1;
    auto it = g.find(c);
    if (it != g.end())
      for (const Channel& d : it->second) {
        if (state[d] == 1) return true;
        if (state[d] == 0 && dfs(d)) return true;
      }
    state[c] = 2;
    return false;
  };
  for (const auto& [c, _] : g)
    if (state[c] == 0 && dfs(c)) return true;
  return false;
}

// Four switches in a ring, one host on each: min-hop routes around the ring both ways.
json ring(const char* routing) {
  json c = {{"routing", routing}, {"link_layer", "ib"}};
  for (int i = 0; i < 4; ++i) {
    const std::string h = "h" + std::to_string(i), s = "s" + std::to_string(i);
    c["hosts"].push_back({{"name", h}, {"ip", "127.0.1." + std::to_string(i + 1)}});
    c["switches"].push_back({{"name", s}});
    c["links"].push_back({{"a", h}, {"b", s}});
  }
  for (int i = 0; i < 4; ++i)
    c["links"].push_back({{"a", "s" + std::to_string(i)}, {"b", "s" + std::to_string((i + 1) % 4)}});
  return c;
}

struct Sink : net::Node {
  size_t n = 0;
  void receive(net::PacketPtr, int) override { ++n; }
};

}  // namespace

TEST_CASE("routing: min-hop on a switch ring has a channel-dependency cycle; up-down has none") {
  // The checker can fail: on the ring, h0->h2 goes s0-s1-s2 and s0-s3-s2, and the four
  // two-hop routes chain around the ring into a cycle.
  const topo::FabricSpec mh = topo::parse_fabric(ring("min_hop"));
  CHECK(has_cycle(dependencies(mh, topo::compute_routes(mh))));
  const topo::FabricSpec ud = topo::parse_fabric(ring("up_down"));
  CHECK(!has_cycle(dependencies(ud, topo::compute_routes(ud))));
}

TEST_CASE("routing: InfiniBand fat tree uses up-down; every route goes up then down, acyclic, min-hop") {
  const topo::FabricSpec spec =
      topo::parse_fabric(json{{"link_layer", "ib"}, {"topology", {{"type", "fat_tree"}, {"k", 4}}}});
  REQUIRE(spec.routing == topo::Routing::UpDown);
  const topo::RouteTable rt = topo::compute_routes(spec);
  // cores are the top (rank 0), aggregation 1, edge 2
  for (size_t s = 0; s < spec.switches.size(); ++s) {
    const std::string& name = spec.switches[s].name;
    CHECK(rt.rank[s] == (name.rfind("core", 0) == 0 ? 0u : name.rfind("agg", 0) == 0 ? 1u : 2u));
  }
  size_t paths = 0;
  std::map<size_t, size_t> by_length;
  const auto g = dependencies(spec, rt, [&](const std::vector<size_t>& path) {
    ++paths;
    ++by_length[path.size()];
    // ranks fall (up) and then rise (down), never fall again after rising
    bool down = false;
    for (size_t i = 1; i < path.size(); ++i) {
      const bool up = rt.rank[path[i]] < rt.rank[path[i - 1]];
      if (!up) down = true;
      CHECK(!(down && up));
    }
  });
  CHECK(!has_cycle(g));
  // Min-hop switch counts in a k=4 fat tree, per source host (15 destinations), with one
  // forwarding port per LID (so one path per pair): 1 same-edge host, 1 switch; 2 same-pod
  // hosts, 3 switches; 12 other-pod hosts, 5 switches.
  CHECK(by_length[1] == 16 * 1);
  CHECK(by_length[3] == 16 * 2);
  CHECK(by_length[5] == 16 * 12);
  CHECK(paths == 16 * 15);
  // The equal-cost sets the tables were chosen from: 2 paths to same-pod hosts (via 2
  // aggs), 4 to other pods (2 aggs x 2 cores); also up-then-down and acyclic.
  topo::RouteTable all = rt;
  all.one_link = false;  // route over the equal-cost sets
  std::map<size_t, size_t> all_by_length;
  CHECK(!has_cycle(dependencies(spec, all, [&](const std::vector<size_t>& p) { ++all_by_length[p.size()]; })));
  CHECK(all_by_length[3] == 16 * 2 * 2);
  CHECK(all_by_length[5] == 16 * 12 * 4);
  // On a tree the up-down tables are the min-hop tables.
  topo::FabricSpec mh = spec;
  mh.routing = topo::Routing::MinHop;
  CHECK(topo::compute_routes(mh).links() == rt.links());
  CHECK(topo::compute_routes(mh).equal_cost == rt.equal_cost);
}

namespace {

// Per switch of an IB fabric: exactly one link per destination LID, and for each set of
// equal-cost links the destinations spread over them with counts differing by at most 1.
void check_lft_balanced(const topo::FabricSpec& spec) {
  const topo::RouteTable rt = topo::compute_routes(spec);
  for (size_t s = 0; s < spec.switches.size(); ++s) {
    CAPTURE(spec.switches[s].name);
    // destinations per link, grouped by the equal-cost set they were chosen from
    std::map<std::vector<size_t>, std::map<size_t, size_t>> by_set;
    for (size_t d = 0; d < spec.nics.size(); ++d) {
      REQUIRE(rt.links()[s][d].size() == 1);  // every LID is reachable here: one port
      const auto set = rt.equal_cost[s][d];
      const size_t l = rt.links()[s][d][0];
      CHECK(std::find(set.begin(), set.end(), l) != set.end());
      if (set.size() > 1) {
        auto& counts = by_set[std::vector<size_t>(set.begin(), set.end())];
        for (size_t x : set) counts[x] += 0;  // an unused link counts as 0
        ++counts[l];
      }
    }
    for (const auto& [set, counts] : by_set) {
      size_t lo = SIZE_MAX, hi = 0;
      for (const auto& [l, c] : counts) lo = std::min(lo, c), hi = std::max(hi, c);
      CHECK(hi - lo <= 1);
    }
  }
}

}  // namespace

TEST_CASE("routing: InfiniBand switches have one port per LID, balanced over equal-cost uplinks") {
  // k=4 fat tree: edge1_1 reaches the 14 hosts outside it over 2 aggs: 7 LIDs each; an agg
  // reaches the 12 hosts outside its pod over 2 cores: 6 each.
  const topo::FabricSpec ft =
      topo::parse_fabric(json{{"link_layer", "ib"}, {"topology", {{"type", "fat_tree"}, {"k", 4}}}});
  check_lft_balanced(ft);
  const topo::RouteTable rt = topo::compute_routes(ft);
  CHECK(!has_cycle(dependencies(ft, rt)));
  std::map<size_t, size_t> edge_up;  // LIDs per uplink of edge1_1
  for (size_t s = 0; s < ft.switches.size(); ++s) {
    if (ft.switches[s].name != "edge1_1") continue;
    for (size_t d = 0; d < ft.nics.size(); ++d)
      if (rt.equal_cost[s][d].size() == 2) ++edge_up[rt.links()[s][d][0]];
  }
  REQUIRE(edge_up.size() == 2);
  for (const auto& [l, c] : edge_up) CHECK(c == 7);
  // leaf-spine, 3 leaves x 4 spines x 5 hosts: a leaf's 10 remote LIDs over 4 spines
  // give 3, 3, 2, 2 (differ by at most 1); each spine has one down port per LID.
  const topo::FabricSpec ls = topo::parse_fabric(
      json{{"link_layer", "ib"},
           {"topology", {{"type", "leaf_spine"}, {"leaves", 3}, {"spines", 4}, {"hosts_per_leaf", 5}}}});
  check_lft_balanced(ls);
  CHECK(!has_cycle(dependencies(ls, topo::compute_routes(ls))));
  // RoCE keeps every equal-cost link for ECMP hashing
  const topo::FabricSpec roce = topo::parse_fabric(json{{"topology", {{"type", "fat_tree"}, {"k", 4}}}});
  const topo::RouteTable rr = topo::compute_routes(roce);
  CHECK(rr.links() == rr.equal_cost);
}

namespace {

// The most flows any channel carries over the shift permutations of `spec` (host d sends to
// host d + s mod N, for every s), following the first link of each table entry.
size_t worst_shift_load(const topo::FabricSpec& spec, const topo::RouteTable& rt) {
  const size_t n = spec.nics.size();
  size_t worst = 0;
  for (size_t shift = 1; shift < n; ++shift) {
    std::map<Channel, size_t> load;
    for (size_t src = 0; src < n; ++src) {
      const size_t dst = (src + shift) % n;
      const size_t first = static_cast<size_t>(spec.nic_link[src]);
      Channel in{first, is_end(spec.links[first].a, false, src)};
      for (int hop = 0; hop < 8; ++hop) {
        ++load[in];
        const topo::LinkSpec& l = spec.links[in.first];
        const topo::LinkEnd to = in.second ? l.b : l.a;
        if (!to.is_switch) break;
        const auto next = rt.links()[to.index][dst];
        REQUIRE(!next.empty());
        in = Channel{next[0], is_end(spec.links[next[0]].a, true, to.index)};
      }
    }
    for (const auto& [c, flows] : load) worst = std::max(worst, flows);
  }
  return worst;
}

}  // namespace

TEST_CASE("routing: ftree (D-mod-k) gives every shift permutation of a fat tree disjoint paths") {
  // Zahavi et al. (IPDPS 2010): with hosts numbered switch by switch, D-mod-k routes every
  // shift permutation (host d sends to host d + s mod N) without two flows on one channel.
  // Checked for every shift of the k=4 and k=8 trees, on IB and on RoCE (one link per
  // destination either way).
  for (const char* ll : {"ib", "roce"})
    for (int k : {4, 8}) {
      CAPTURE(ll);
      CAPTURE(k);
      const topo::FabricSpec spec = topo::parse_fabric(
          json{{"link_layer", ll}, {"routing", "ftree"}, {"topology", {{"type", "fat_tree"}, {"k", k}}}});
      REQUIRE(spec.routing == topo::Routing::FatTree);
      const topo::RouteTable rt = topo::compute_routes(spec);
      for (size_t sw = 0; sw < spec.switches.size(); ++sw)
        for (size_t d = 0; d < spec.nics.size(); ++d) REQUIRE(rt.links()[sw][d].size() == 1);
      CHECK(worst_shift_load(spec, rt) == 1);
      CHECK(!has_cycle(dependencies(spec, rt)));  // a subset of up*/down*: acyclic
    }
  // The check can fail: the least-loaded LID-order tables (IB's default, "up_down") put two
  // flows on one channel for some shift.
  const topo::FabricSpec ud =
      topo::parse_fabric(json{{"link_layer", "ib"}, {"topology", {{"type", "fat_tree"}, {"k", 8}}}});
  CHECK(worst_shift_load(ud, topo::compute_routes(ud)) > 1);
}

TEST_CASE("routing: on InfiniBand every flow to one LID takes the same port (no flow hashing)") {
  // 200 flows (distinct flow_hash) from host1 to host16 of a k=4 IB fat tree: all leave
  // edge1_1 by the one uplink its table holds for LID 16, and cross one core.
  Engine e;
  auto f = topo::Fabric::build(e, json{{"link_layer", "ib"}, {"topology", {{"type", "fat_tree"}, {"k", 4}}}});
  Sink dst;
  f->attach_nic(15, &dst);
  constexpr int kFlows = 200;
  for (int i = 0; i < kFlows; ++i) {
    auto p = std::make_unique<net::Packet>();
    p->link_layer = net::LinkLayer::InfiniBand;
    p->src = f->nics()[0].address;
    p->dst = f->nics()[15].address;
    p->flow_hash = static_cast<uint32_t>(i * 2654435761u);
    p->udp_src_port = static_cast<uint16_t>(49152 + i);
    p->wire_bytes = 100;
    f->nic_port(0).send(std::move(p));
  }
  e.run();
  REQUIRE(dst.n == kFlows);
  const json c = f->counters();
  auto data_tx = [&](const std::string& port) {
    const json& cl = c[port]["classes"];
    return cl.contains("0") ? cl["0"]["tx_packets"].get<int>() : 0;
  };
  const int up1 = data_tx("edge1_1/2"), up2 = data_tx("edge1_1/3");
  CHECK(up1 + up2 == kFlows);
  CHECK((up1 == 0 || up2 == 0));
  int cores_used = 0;
  for (int core = 1; core <= 4; ++core) cores_used += data_tx("core" + std::to_string(core) + "/3") > 0;
  CHECK(cores_used == 1);
}

TEST_CASE("routing: up-down reaches every NIC pair on the shipped InfiniBand topologies") {
  for (const char* type : {"star", "dumbbell", "leaf_spine", "fat_tree"}) {
    CAPTURE(type);
    const topo::FabricSpec spec =
        topo::parse_fabric(json{{"link_layer", "ib"}, {"topology", {{"type", type}}}});
    const topo::RouteTable rt = topo::compute_routes(spec);
    CHECK(!has_cycle(dependencies(spec, rt)));
  }
}

TEST_CASE("ecmp: 1000 RoCEv2 flows spread over a fat tree's uplinks as a multinomial predicts") {
  Engine e;
  auto f = topo::Fabric::build(e, json{{"topology", {{"type", "fat_tree"}, {"k", 4}}}});
  REQUIRE(f->nics().size() == 16);
  Sink dst;
  f->attach_nic(15, &dst);  // host16, in pod 4: every path crosses a core
  constexpr int kFlows = 1000;
  for (int i = 0; i < kFlows; ++i) {
    auto p = std::make_unique<net::Packet>();
    p->src = f->nics()[0].address;
    p->dst = f->nics()[15].address;
    p->udp_src_port = static_cast<uint16_t>(49152 + i);  // one flow per source port
    p->wire_bytes = 100;
    f->nic_port(0).send(std::move(p));
  }
  e.run();
  REQUIRE(dst.n == kFlows);
  const json c = f->counters();
  // A hash spreading n flows uniformly over m links gives multinomial counts: each link
  // ~ Binomial(n, 1/m), mean n/m, sigma = sqrt(n * (1/m) * (1 - 1/m)). Accept 4 sigma
  // (two-sided p ~ 6e-5 per link).
  auto within = [](double count, double n, double m) {
    const double sigma = std::sqrt(n * (1 / m) * (1 - 1 / m));
    return std::abs(count - n / m) <= 4 * sigma;
  };
  // edge1_1's ports: 0, 1 = host1, host2; 2, 3 = agg1_1, agg1_2 (link order)
  const double up1 = c["edge1_1/2"]["tx_packets"], up2 = c["edge1_1/3"]["tx_packets"];
  CHECK(up1 + up2 == kFlows);
  CHECK(within(up1, kFlows, 2));  // 500 +- 63
  CHECK(within(up2, kFlows, 2));
  // Each core's port 3 leads to pod 4. Two independent hash choices (edge, then agg) pick
  // one of 4 cores uniformly: 250 +- 55 each. Switches seed their hash differently, or
  // the agg would repeat the edge's choice and cores 2 and 3 would get nothing.
  double total = 0;
  for (int core = 1; core <= 4; ++core) {
    const double n = c["core" + std::to_string(core) + "/3"]["tx_packets"];
    CAPTURE(core);
    CHECK(within(n, kFlows, 4));
    total += n;
  }
  CHECK(total == kFlows);
}

TEST_CASE("routing: a fat tree's equal-cost sets are stored once per distinct set") {
  // k=8 RoCE fat tree: 128 hosts, 32 edge, 32 agg and 16 core switches, 10,240 (switch,
  // NIC) rows. Distinct sets (link indices are global, so no two switches share one): an
  // edge switch has one singleton per host below it (4) and one set of its 4 uplinks for
  // everything else: 5; an agg switch one singleton per edge below it (4) and its 4 core
  // links: 5; a core switch one singleton per pod (8). 32*5 + 32*5 + 16*8 = 448.
  const topo::FabricSpec ft = topo::parse_fabric(json{{"topology", {{"type", "fat_tree"}, {"k", 8}}}});
  REQUIRE(ft.nics.size() == 128);
  REQUIRE(ft.switches.size() == 80);
  const topo::RouteTable rt = topo::compute_routes(ft);
  CHECK(rt.equal_cost.distinct_sets() == 448);
  // An edge switch's row for a host in another pod is its 4 uplinks.
  size_t four = 0;
  for (size_t s = 0; s < ft.switches.size(); ++s)
    for (size_t d = 0; d < ft.nics.size(); ++d) four += rt.links()[s][d].size() == 4;
  // Rows with 4 links: each of 32 edges to the 124 hosts outside it, and each of 32 aggs
  // to the 112 hosts outside its pod: 32*124 + 32*112 = 7552.
  CHECK(four == 7552);
}

TEST_CASE("routing: adaptive keeps every up*/down* equal-cost link, on IB and RoCE, and sets up switches and NICs") {
  for (const char* ll : {"ib", "roce"}) {
    CAPTURE(ll);
    const json topo = {{"type", "fat_tree"}, {"k", 4}};
    const topo::FabricSpec ar = topo::parse_fabric(json{{"link_layer", ll}, {"routing", "adaptive"}, {"topology", topo}});
    const topo::FabricSpec ud = topo::parse_fabric(json{{"link_layer", ll}, {"routing", "up_down"}, {"topology", topo}});
    REQUIRE(ar.routing == topo::Routing::Adaptive);
    const topo::RouteTable rt = topo::compute_routes(ar);
    // The switches choose per packet, so the table is the whole up*/down* sets (no LFT
    // reduction on IB): an edge switch has k/2 = 2 uplinks towards any NIC of another pod.
    CHECK(!rt.one_link);
    CHECK(rt.links() == topo::compute_routes(ud).equal_cost);
    CHECK(rt.links()[0][ar.nics.size() - 1].size() == 2);
    CHECK(!has_cycle(dependencies(ar, rt)));  // up*/down*: deadlock-free under PFC or credits
    for (const net::SwitchConfig& sc : ar.switches) CHECK(sc.adaptive_routing);
    for (const net::SwitchConfig& sc : ud.switches) CHECK(!sc.adaptive_routing);
    // The NICs keep out-of-order packets without NACKing them.
    for (const topo::NicSpec& n : ar.nics) {
      CHECK(n.nic.hca.loss_recovery.mode == nic::LossRecovery::Irn);
      CHECK(!n.nic.hca.loss_recovery.nack_gaps);
    }
  }
  // iWARP's TCP would take the reordering for loss.
  CHECK_THROWS_AS(topo::parse_fabric(json{{"link_layer", "iwarp"}, {"routing", "adaptive"},
                                          {"topology", {{"type", "fat_tree"}, {"k", 4}}}}),
                  topo::ConfigError);
}

TEST_CASE("routing: adaptive refuses a loss recovery written to take a gap for a loss") {
  const json topo = {{"type", "fat_tree"}, {"k", 4}};
  auto with_nic = [&](const json& lr) {
    return json{{"link_layer", "roce"}, {"routing", "adaptive"}, {"topology", topo}, {"nic", {{"loss_recovery", lr}}}};
  };
  // Go-back-N NAKs the first packet after a gap and resends from there; IRN with its NACK on
  // a gap resends what a reorder delays: both contradict a fabric that reorders by design.
  for (const json& lr : {json("go_back_n"), json{{"mode", "go_back_n"}}, json{{"mode", "irn"}, {"nack_gaps", true}}}) {
    CAPTURE(lr.dump());
    try {
      topo::parse_fabric(with_nic(lr));
      FAIL("accepted");
    } catch (const topo::ConfigError& e) {
      CHECK(std::string(e.what()).find("fabric.nic.loss_recovery") != std::string::npos);
    }
  }
  // IRN as written (its own timers kept) is what adaptive routing needs, without the NACK.
  const topo::FabricSpec ok = topo::parse_fabric(with_nic(json{{"mode", "irn"}, {"rto_low_us", 50}}));
  for (const topo::NicSpec& n : ok.nics) {
    CHECK(n.nic.hca.loss_recovery.mode == nic::LossRecovery::Irn);
    CHECK(!n.nic.hca.loss_recovery.nack_gaps);
  }
  // A host's own NIC entry is checked too.
  const json hosts = json::parse(R"({"link_layer": "roce", "routing": "adaptive",
    "hosts": [{"name": "a", "ip": "127.0.1.1", "nics": [{"name": "mlx5_0", "loss_recovery": "go_back_n"}]},
              {"name": "b", "ip": "127.0.1.2"}],
    "switches": [{"name": "sw"}],
    "links": [{"a": "a", "b": "sw"}, {"a": "b", "b": "sw"}]})");
  try {
    topo::parse_fabric(hosts);
    FAIL("accepted");
  } catch (const topo::ConfigError& e) {
    CHECK(std::string(e.what()).find("fabric.hosts[0].nics[0].loss_recovery") != std::string::npos);
  }
}
