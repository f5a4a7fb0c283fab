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

// Height of every vertex: hops from the nearest NIC over switches (NICs 0, an edge or leaf
// switch 1, an aggregation switch 2, ...); kInf for a switch no NIC reaches.
std::vector<size_t> heights(const Graph& g) {
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
  return height;
}

// Rank of each switch: BFS distance from the switches farthest from any NIC.
std::vector<size_t> switch_ranks(const Graph& g) {
  const std::vector<size_t> height = heights(g);
  std::deque<size_t> q;
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

void LinkSets::push_set(std::span<const uint32_t> links) {
  const size_t sw = switches_ ? row_set_.size() % switches_ : 0;
  if (by_switch_.size() <= sw) by_switch_.resize(sw + 1);
  // A switch has at most a set per port plus its uplinks' set.
  row_set_.push_back(pool_.intern(links, by_switch_[sw]));
}

bool LinkSets::operator==(const LinkSets& o) const {
  if (switches_ != o.switches_ || row_set_.size() != o.row_set_.size()) return false;
  const size_t nics = switches_ ? row_set_.size() / switches_ : 0;
  for (size_t n = 0; n < nics; ++n)
    for (size_t sw = 0; sw < switches_; ++sw) {
      const std::span<const uint32_t> a = at(sw, n), b = o.at(sw, n);
      if (!std::equal(a.begin(), a.end(), b.begin(), b.end())) return false;
    }
  return true;
}

RouteTable compute_routes(const FabricSpec& spec) {
  const Graph g(spec);
  const size_t n = g.n, s = g.s;
  RouteTable rt;
  rt.equal_cost = LinkSets(s);
  rt.reachable.assign(n, std::vector<bool>(n, false));
  std::vector<uint32_t> set;  // the (switch, NIC) set being found
  const bool up_down = spec.routing != Routing::MinHop;  // ftree and adaptive start from up*/down*
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
        set.clear();
        if (dist[v] != kInf)
          for (auto [w, l] : g.adj[v])
            if (dist[w] + 1 == dist[v] && (w >= n || w == dst)) set.push_back(static_cast<uint32_t>(l));
        rt.equal_cost.push_set(set);
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
      set.clear();
      for (auto [w, l] : g.adj[v]) {
        if (w < n && w != dst) continue;
        const bool ok = down[v] != kInf ? !is_up(v, w) && down[w] + 1 == down[v]
                                        : is_up(v, w) && full[w] != kInf && full[w] + 1 == full[v];
        if (ok) set.push_back(static_cast<uint32_t>(l));
      }
      rt.equal_cost.push_set(set);
    }
  }
  if (spec.routing == Routing::FatTree) {
    // D-mod-k (the fat-tree routing of Zahavi et al., "Optimized InfiniBand fat-tree
    // routing for shift all-to-all communication patterns", and of OpenSM's ftree engine):
    // one link per (switch, destination). A switch at height h with m equal-cost links
    // (its uplinks, in link order) takes link (d / m^(h-1)) mod m for NIC index d: an edge
    // switch by the destination's lowest digit, an aggregation switch by the next. Hosts
    // are numbered switch by switch (the generators do), so each destination has its own
    // top switch and its own way down.
    const std::vector<size_t> height = heights(g);
    rt.one_link = true;
    rt.chosen = LinkSets(s);
    for (size_t dst = 0; dst < n; ++dst)
      for (size_t sw = 0; sw < s; ++sw) {
        const std::span<const uint32_t> eq = rt.equal_cost.at(sw, dst);
        if (eq.size() <= 1) {
          rt.chosen.push_set(eq);
          continue;
        }
        size_t digit = dst;
        for (size_t h = 1; h < height[n + sw] && digit; ++h) digit /= eq.size();
        rt.chosen.push_set(eq.subspan(digit % eq.size(), 1));
      }
    return rt;
  }
  // ECMP over equal_cost; adaptive routing chooses among them per packet, on IB as well (the
  // AR groups of a Quantum switch).
  if (spec.link_layer != net::LinkLayer::InfiniBand || spec.routing == Routing::Adaptive) return rt;
  // Linear forwarding tables: one link per (switch, LID), least-loaded first. A switch's
  // ports are numbered in link order, so the lower link index is the lower port. Each
  // switch takes LIDs in increasing order (NIC index order is LID order, LID = index + 1).
  constexpr uint32_t kNone = UINT32_MAX;
  std::vector<uint32_t> chosen(s * n, kNone);  // [sw * n + dst]
  std::vector<size_t> load(spec.links.size());
  for (size_t sw = 0; sw < s; ++sw) {
    std::fill(load.begin(), load.end(), 0);
    for (size_t dst = 0; dst < n; ++dst) {
      const std::span<const uint32_t> eq = rt.equal_cost.at(sw, dst);
      if (eq.empty()) continue;
      uint32_t best = eq[0];
      for (uint32_t l : eq)
        if (load[l] < load[best] || (load[l] == load[best] && l < best)) best = l;
      ++load[best];
      chosen[sw * n + dst] = best;
    }
  }
  rt.one_link = true;
  rt.chosen = LinkSets(s);
  for (size_t dst = 0; dst < n; ++dst)
    for (size_t sw = 0; sw < s; ++sw) {
      const uint32_t l = chosen[sw * n + dst];
      rt.chosen.push_set(l == kNone ? std::span<const uint32_t>{} : std::span<const uint32_t>(&l, 1));
    }
  return rt;
}

std::shared_ptr<const RouteTable> routes_of(const FabricSpec& spec) {
  if (spec.routes) return spec.routes;
  return std::make_shared<const RouteTable>(compute_routes(spec));
}

}  // namespace rdmasim::topo
