// Switch forwarding tables: for each switch and destination NIC, the links to forward on.
#pragma once

#include <cstddef>
#include <vector>

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
struct RouteTable {
  std::vector<std::vector<std::vector<size_t>>> links;
  std::vector<std::vector<std::vector<size_t>>> equal_cost;
  // reachable[a][b]: NIC b can be reached from NIC a.
  std::vector<std::vector<bool>> reachable;
  // UpDown only: each switch's rank (0 = top).
  std::vector<size_t> rank;
};

RouteTable compute_routes(const FabricSpec& spec);

}  // namespace rdmasim::topo
