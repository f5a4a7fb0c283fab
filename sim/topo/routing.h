// Min-hop routing: each switch's ports towards each NIC, all equal-cost next hops kept.
#pragma once

#include <cstddef>
#include <vector>

#include "sim/topo/fabric_spec.h"

namespace rdmasim::topo {

// ports[s][n]: the link indices leaving switch s on a shortest path to NIC n (empty when
// unreachable). NICs never forward, so paths go through switches only.
struct RouteTable {
  std::vector<std::vector<std::vector<size_t>>> links;
  // reachable[a][b]: NIC b can be reached from NIC a.
  std::vector<std::vector<bool>> reachable;
};

RouteTable compute_routes(const FabricSpec& spec);

}  // namespace rdmasim::topo
