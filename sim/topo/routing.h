// Switch forwarding tables: for each switch and destination NIC, the links to forward on.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "sim/core/set_pool.h"
#include "sim/topo/fabric_spec.h"

namespace rdmasim::topo {

// links[s][n]: the link indices leaving switch s towards NIC n (empty when unreachable),
// every equal-cost next hop kept for ECMP. NICs never forward, so paths go through
// switches only.
//
// Routing::MinHop: every shortest path.
// Routing::UpDown (Autonet's up*/down*): switches are ranked by BFS distance from the
//   "top" switches (those farthest from any NIC: spines, fat-tree cores); ties are broken by
//   switch index, so (rank, index) totally orders switches. A hop to a smaller key is "up",
//   to a NIC or a larger key "down". Every route is zero or more up hops then zero or more
//   down hops, so the channel dependency graph has no cycle (no credit/PFC deadlock). A
//   switch that can reach the NIC going only down forwards on its shortest down paths;
//   otherwise on the up links that start a shortest up*/down* path. On trees (star,
//   dumbbell, leaf-spine, fat-tree) these are exactly the min-hop routes.
//
// InfiniBand (link_layer "ib"): switches forward by a linear forwarding table, exactly one
// output port per destination LID, as OpenSM programs it. From the equal-cost set above
// (min-hop or up*/down*), each switch takes, for destination LIDs in increasing order, the
// link that has the fewest LIDs assigned to it so far at that switch, ties to the lower
// port (OpenSM's per-port load balancing of "minhop"/"updn"). So a switch's equal-cost
// uplinks carry destination counts that differ by at most 1, and every packet to one LID
// takes one path whatever its flow. The tables are a subset of the up*/down* ones, so they
// stay deadlock-free. `equal_cost` keeps the full sets.
//
// Routing::Adaptive keeps the up*/down* sets on every link layer (no LFT reduction on
// InfiniBand): the switches choose among them packet by packet (net::SwitchConfig::
// adaptive_routing).
//
// A set is read as links[s][n] (a span of link indices). 1280 switches x 8192 NICs at k=32
// would be 10.5 million vectors, while each switch has few distinct sets (an edge switch
// sends every other pod's NICs up the same uplinks), so each (switch, NIC) row holds the
// index of its set in a pool where each switch's distinct sets are stored once.
class LinkSets {
 public:
  LinkSets() = default;
  explicit LinkSets(size_t switches) : switches_(switches) {}
  // Appends the set of the next (switch, NIC), in order: NIC 0's sets for switches 0..S-1,
  // then NIC 1's, and so on.
  void push_set(std::span<const uint32_t> links);
  std::span<const uint32_t> at(size_t sw, size_t nic) const {
    const size_t row = nic * switches_ + sw;
    if (row >= row_set_.size()) return {};
    return pool_[row_set_[row]];
  }
  struct Row {
    const LinkSets* sets;
    size_t sw;
    std::span<const uint32_t> operator[](size_t nic) const { return sets->at(sw, nic); }
  };
  Row operator[](size_t sw) const { return {this, sw}; }
  // The same sets for every (switch, NIC).
  bool operator==(const LinkSets& o) const;
  size_t distinct_sets() const { return pool_.size(); }

 private:
  size_t switches_ = 0;
  std::vector<uint32_t> row_set_;  // per (NIC, switch) row: its set's index
  SetPool<uint32_t> pool_;         // the distinct sets
  std::vector<std::vector<uint32_t>> by_switch_;  // while building: each switch's sets
};

struct RouteTable {
  // The forwarding tables: the equal-cost sets themselves (ECMP), or one link per (switch,
  // NIC) chosen from them (InfiniBand's LFTs, "ftree"), kept apart only then.
  const LinkSets& links() const { return one_link ? chosen : equal_cost; }
  LinkSets equal_cost;
  LinkSets chosen;        // with one_link
  bool one_link = false;
  // reachable[a][b]: NIC b can be reached from NIC a.
  std::vector<std::vector<bool>> reachable;
  // UpDown only: each switch's rank (0 = top).
  std::vector<size_t> rank;
};

RouteTable compute_routes(const FabricSpec& spec);

// spec.routes when parse_fabric computed them, else compute_routes(spec).
std::shared_ptr<const RouteTable> routes_of(const FabricSpec& spec);

}  // namespace rdmasim::topo
