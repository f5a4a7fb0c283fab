// Fabric benchmark: a 15:1 incast at 100 Gb/s over a star with PFC, 2 MiB per sender.
// Prints events per second and wall time per simulated millisecond (median of 5 runs).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <vector>

#include "tests/unit/fabric/incast.h"

using namespace rdmasim;

int main() {
  const nlohmann::json cfg =
      test::incast_star({{"queue_kb", 4096}, {"pfc", {{"xoff_kb", 64}, {"xon_kb", 32}}}});
  std::vector<double> eps, wall_per_ms;
  uint64_t events = 0;
  Time sim = 0;
  for (int run = 0; run < 5; ++run) {
    const auto t0 = std::chrono::steady_clock::now();
    const test::IncastResult r = test::run_incast(cfg, 2048 * 1024);
    const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    events = r.events;
    sim = r.last_arrival;
    eps.push_back(static_cast<double>(r.events) / wall);
    wall_per_ms.push_back(wall * 1e3 / (to_seconds(r.last_arrival) * 1e3));
  }
  std::sort(eps.begin(), eps.end());
  std::sort(wall_per_ms.begin(), wall_per_ms.end());
  std::printf("fabric incast 15:1, 100 Gb/s star, PFC, 2 MiB/sender: %llu events, %.3f ms simulated\n",
              static_cast<unsigned long long>(events), to_seconds(sim) * 1e3);
  std::printf("events/s (median of 5): %.3g\n", eps[2]);
  std::printf("wall ms per simulated ms (median of 5): %.3f\n", wall_per_ms[2]);
  return 0;
}
