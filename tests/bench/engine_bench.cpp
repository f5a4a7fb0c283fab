// Engine micro-benchmark: schedule and run events with no model behind them.
//
// Each event reschedules itself a pseudo-random 1..1000 ns ahead, keeping `width` events
// pending, so the heap works at a realistic depth. Prints events per second of thread CPU
// time (what one core sustains; on a loaded machine wall time also counts the time this
// thread waited for a core) and of wall time.
#include <time.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>

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

double thread_cpu_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

struct Rates {
  double cpu;   // events per CPU second
  double wall;  // events per wall second
};

Rates run(uint64_t events, int width) {
  Engine e(1);
  Rng& rng = e.rng("bench");
  uint64_t remaining = events;
  for (int i = 0; i < width; ++i) e.schedule_in(ns(i), Chain{&e, &rng, &remaining});
  const double c0 = thread_cpu_seconds();
  const auto t0 = std::chrono::steady_clock::now();
  e.run();
  const auto t1 = std::chrono::steady_clock::now();
  const double cpu = thread_cpu_seconds() - c0;
  const double wall = std::chrono::duration<double>(t1 - t0).count();
  const auto n = static_cast<double>(e.events_run());
  return Rates{n / cpu, n / wall};
}

}  // namespace

int main(int argc, char** argv) {
  const uint64_t events = argc > 1 ? std::strtoull(argv[1], nullptr, 10) : 20'000'000;
  const int widths[] = {16, 1024, 65536};
  for (int w : widths) {
    double cpu[5], wall[5];
    for (int i = 0; i < 5; ++i) {
      const Rates r = run(events, w);
      cpu[i] = r.cpu;
      wall[i] = r.wall;
    }
    std::sort(cpu, cpu + 5);
    std::sort(wall, wall + 5);
    std::printf("engine: %d pending events: %.1f M events/s CPU, %.1f M events/s wall "
                "(medians of 5 runs of %llu events)\n",
                w, cpu[2] / 1e6, wall[2] / 1e6, static_cast<unsigned long long>(events));
  }
  return 0;
}
