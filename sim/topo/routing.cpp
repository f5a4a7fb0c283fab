#include "sim/topo/routing.h"

#include <deque>
#include <limits>

namespace rdmasim::topo {

RouteTable compute_routes(const FabricSpec& spec) {
  const size_t n = spec.nics.size(), s = spec.switches.size();
  // Graph vertices: NICs 0..n-1, switches n..n+s-1; adjacency lists of (vertex, link).
  auto vertex = [n](const LinkEnd& e) { return e.is_switch ? n + e.index : e.index; };
  std::vector<std::vector<std::pair<size_t, size_t>>> adj(n + s);
  for (size_t l = 0; l < spec.links.size(); ++l) {
    const size_t a = vertex(spec.links[l].a), b = vertex(spec.links[l].b);
    adj[a].push_back({b, l});
    adj[b].push_back({a, l});
  }
  constexpr size_t kInf = std::numeric_limits<size_t>::max();
  RouteTable rt;
  rt.links.assign(s, std::vector<std::vector<size_t>>(n));
  rt.reachable.assign(n, std::vector<bool>(n, false));
  for (size_t dst = 0; dst < n; ++dst) {
    // BFS from the destination; only switches relay.
    std::vector<size_t> dist(n + s, kInf);
    std::deque<size_t> q{dst};
    dist[dst] = 0;
    while (!q.empty()) {
      const size_t v = q.front();
      q.pop_front();
      if (v != dst && v < n) continue;  // a NIC is a leaf
      for (auto [w, l] : adj[v]) {
        if (dist[w] == kInf) {
          dist[w] = dist[v] + 1;
          q.push_back(w);
        }
      }
    }
    for (size_t src = 0; src < n; ++src) rt.reachable[src][dst] = dist[src] != kInf;
    for (size_t sw = 0; sw < s; ++sw) {
      const size_t v = n + sw;
      if (dist[v] == kInf) continue;
      for (auto [w, l] : adj[v]) {
        if (dist[w] + 1 == dist[v] && (w >= n || w == dst)) rt.links[sw][dst].push_back(l);
      }
    }
  }
  return rt;
}

}  // namespace rdmasim::topo
