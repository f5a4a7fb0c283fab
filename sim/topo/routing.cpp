#include "sim/topo/routing.h"

#include <algorithm>
#include <deque>
#include <limits>
#include <utility>

namespace rdmasim::topo {
namespace {

constexpr size_t kInf = std::numeric_limits<size_t>::max();

// Graph vertices: NICs 0..n-1, switches n..n+s-1; adjacency lists of (vertex, link).
struct Graph {
  size_t n = 0, s = 0;
  std::vector<std::vector<std::pair<size_t, size_t>>> adj;

  explicit Graph(const FabricSpec& spec) : n(spec.nics.size()), s(spec.switches.size()), adj(n + s) {
    auto vertex = [this](const LinkEnd& e) { return e.is_switch ? n + e.index : e.index; };
    for (size_t l = 0; l < spec.links.size(); ++l) {
      const size_t a = vertex(spec.links[l].a), b = vertex(spec.links[l].b);
      adj[a].push_back({b, l});
      adj[b].push_back({a, l});
    }
  }

  // Hop counts to `dst` over edges v->w with allowed(v, w), walking back from dst; only
  // switches relay (a NIC other than dst is never expanded).
  template <class Allowed>
  std::vector<size_t> distances_to(size_t dst, Allowed allowed) const {
    std::vector<size_t> dist(n + s, kInf);
    std::deque<size_t> q{dst};
    dist[dst] = 0;
    while (!q.empty()) {
      const size_t w = q.front();
      q.pop_front();
      if (w != dst && w < n) continue;
      for (auto [v, l] : adj[w]) {
        if (dist[v] == kInf && allowed(v, w)) {
          dist[v] = dist[w] + 1;
          q.push_back(v);
        }
      }
    }
    return dist;
  }
};

// Rank of each switch: BFS distance from the switches farthest from any NIC.
std::vector<size_t> switch_ranks(const Graph& g) {
  std::vector<size_t> height(g.n + g.s, kInf);
  std::deque<size_t> q;
  for (size_t i = 0; i < g.n; ++i) {
    height[i] = 0;
    q.push_back(i);
  }
  while (!q.empty()) {
    const size_t v = q.front();
    q.pop_front();
    for (auto [w, l] : g.adj[v])
      if (w >= g.n && height[w] == kInf) {
        height[w] = height[v] + 1;
        q.push_back(w);
      }
  }
  size_t top = 0;
  for (size_t v = g.n; v < g.n + g.s; ++v)
    if (height[v] != kInf) top = std::max(top, height[v]);
  std::vector<size_t> rank(g.s, kInf);
  for (size_t v = g.n; v < g.n + g.s; ++v)
    if (height[v] == top) {
      rank[v - g.n] = 0;
      q.push_back(v);
    }
  while (!q.empty()) {
    const size_t v = q.front();
    q.pop_front();
    for (auto [w, l] : g.adj[v])
      if (w >= g.n && rank[w - g.n] == kInf) {
        rank[w - g.n] = rank[v - g.n] + 1;
        q.push_back(w);
      }
  }
  return rank;
}

}  // namespace

RouteTable compute_routes(const FabricSpec& spec) {
  const Graph g(spec);
  const size_t n = g.n, s = g.s;
  RouteTable rt;
  rt.links.assign(s, std::vector<std::vector<size_t>>(n));
  rt.reachable.assign(n, std::vector<bool>(n, false));
  const bool up_down = spec.routing == Routing::UpDown;
  if (up_down) rt.rank = switch_ranks(g);
  // v -> w is "up" when w is a switch with a smaller (rank, index) than switch or NIC v.
  auto is_up = [&](size_t v, size_t w) {
    if (w < n) return false;
    if (v < n) return true;
    const size_t a = v - n, b = w - n;
    return rt.rank[b] < rt.rank[a] || (rt.rank[b] == rt.rank[a] && b < a);
  };
  for (size_t dst = 0; dst < n; ++dst) {
    if (!up_down) {
      const std::vector<size_t> dist = g.distances_to(dst, [](size_t, size_t) { return true; });
      for (size_t src = 0; src < n; ++src) rt.reachable[src][dst] = dist[src] != kInf;
      for (size_t sw = 0; sw < s; ++sw) {
        const size_t v = n + sw;
        if (dist[v] == kInf) continue;
        for (auto [w, l] : g.adj[v])
          if (dist[w] + 1 == dist[v] && (w >= n || w == dst)) rt.links[sw][dst].push_back(l);
      }
      continue;
    }
    // down[v]: hops to dst going only down; full[v]: hops of the best up*/down* path
    // (up hops, then a switch from which dst is reachable going down).
    const std::vector<size_t> down =
        g.distances_to(dst, [&](size_t v, size_t w) { return v >= n && !is_up(v, w); });
    std::vector<size_t> full = down;
    // Up edges go to strictly smaller keys, so relaxing switches in increasing key order
    // sees every up-neighbour final. Sort switches by (rank, index).
    std::vector<size_t> order;
    for (size_t sw = 0; sw < s; ++sw) order.push_back(sw);
    std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
      return std::pair(rt.rank[a], a) < std::pair(rt.rank[b], b);
    });
    auto relax = [&](size_t v) {
      for (auto [w, l] : g.adj[v])
        if (is_up(v, w) && full[w] != kInf && full[w] + 1 < full[v]) full[v] = full[w] + 1;
    };
    for (size_t sw : order) relax(n + sw);
    for (size_t src = 0; src < n; ++src) {
      if (src != dst) relax(src);
      // Two NICs cabled to each other (back to back) need no switch and no route.
      for (auto [w, l] : g.adj[src])
        if (w == dst) full[src] = std::min<size_t>(full[src], 1);
      rt.reachable[src][dst] = src == dst || full[src] != kInf;
    }
    for (size_t sw = 0; sw < s; ++sw) {
      const size_t v = n + sw;
      for (auto [w, l] : g.adj[v]) {
        if (w < n && w != dst) continue;
        const bool ok = down[v] != kInf ? !is_up(v, w) && down[w] + 1 == down[v]
                                        : is_up(v, w) && full[w] != kInf && full[w] + 1 == full[v];
        if (ok) rt.links[sw][dst].push_back(l);
      }
    }
  }
  rt.equal_cost = rt.links;
  if (spec.link_layer == net::LinkLayer::InfiniBand) {
    // Linear forwarding tables: one link per (switch, LID), least-loaded first. A switch's
    // ports are numbered in link order, so the lower link index is the lower port.
    for (size_t sw = 0; sw < s; ++sw) {
      std::vector<size_t> load(spec.links.size(), 0);
      for (size_t dst = 0; dst < n; ++dst) {  // NIC index order is LID order (LID = index + 1)
        std::vector<size_t>& set = rt.links[sw][dst];
        if (set.size() <= 1) {
          if (!set.empty()) ++load[set[0]];
          continue;
        }
        size_t best = set[0];
        for (size_t l : set)
          if (load[l] < load[best] || (load[l] == load[best] && l < best)) best = l;
        ++load[best];
        set.assign(1, best);
      }
    }
  }
  return rt;
}

}  // namespace rdmasim::topo
