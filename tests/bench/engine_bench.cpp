// Engine micro-benchmark: schedule and run events with no model behind them.
//
// Each event reschedules itself a pseudo-random 1..1000 ns ahead, keeping `width` events
// pending, so the heap works at a realistic depth. Prints events per second.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <utility>

#include "sim/core/engine.h"

using namespace rdmasim;

namespace {

struct Chain {
  Engine* e;
  Rng* rng;
  uint64_t* remaining;
  void operator()() const {
    if (*remaining == 0) return;
    --*remaining;
    e->schedule_in(ns(1 + static_cast<int64_t>(rng->below(1000))), *this);
  }
};

double run(uint64_t events, int width) {
  Engine e(1);
  Rng& rng = e.rng("bench");
  uint64_t remaining = events;
  for (int i = 0; i < width; ++i) e.schedule_in(ns(i), Chain{&e, &rng, &remaining});
  const auto t0 = std::chrono::steady_clock::now();
  e.run();
  const auto t1 = std::chrono::steady_clock::now();
  const double secs = std::chrono::duration<double>(t1 - t0).count();
  return static_cast<double>(e.events_run()) / secs;
}

}  // namespace

int main(int argc, char** argv) {
  const uint64_t events = argc > 1 ? std::strtoull(argv[1], nullptr, 10) : 20'000'000;
  const int widths[] = {16, 1024, 65536};
  for (int w : widths) {
    double best[5];
    for (double& b : best) b = run(events, w);
    // Median of five runs.
    for (int i = 0; i < 5; ++i)
      for (int j = i + 1; j < 5; ++j)
        if (best[j] < best[i]) std::swap(best[i], best[j]);
    std::printf("engine: %d pending events: %.1f M events/s (median of 5 runs of %llu events)\n",
                w, best[2] / 1e6, static_cast<unsigned long long>(events));
  }
  return 0;
}
