// The wall-clock pacer: the arithmetic that keeps the daemon's virtual time at wall time
// minus a fixed offset. Pure: no system call, no engine; the caller reads the clock and
// runs the engine.
#pragma once

#include <cstdint>

#include "sim/core/time.h"

namespace rdmasim::daemon {

// Contract (lib/daemon/README.md): virtual time never runs ahead of wall time; each
// iteration runs at most kEventBudget events, and what is left due is "behind"; the
// daemon spins while the next event is at most kSpinWindow away, else it sleeps.
class Pacer {
 public:
  static constexpr int kEventBudget = 200000;
  static constexpr Time kSpinWindow = us(50);

  // How far one iteration runs the engine: events due by `until`, at most `max_events`.
  struct Run {
    Time until = 0;
    int max_events = kEventBudget;
  };
  // Between iterations: keep spinning, or sleep until wall time `wake_wall_ps`
  // (kTimeNever: nothing is scheduled, sleep until woken).
  struct Idle {
    bool sleep = false;
    int64_t wake_wall_ps = kTimeNever;
  };

  // Pins the engine's `engine_now` to wall time `wall_ps`: offset = wall_ps - engine_now.
  void start(int64_t wall_ps, Time engine_now) { offset_ps_ = wall_ps - engine_now; }
  // Virtual time that corresponds to wall time `wall_ps`.
  Time virtual_now(int64_t wall_ps) const { return wall_ps - offset_ps_; }
  // Runs to virtual now, or nowhere when the engine is already there (time never goes back).
  Run plan(int64_t wall_ps, Time engine_now) const;
  // After running `run`: the engine stands at `engine_now` and its next event is at
  // `next_event`. Returns how far it stayed behind `run.until` (0 when nothing due is left)
  // and records it in behind_ps() and max_behind_ps().
  uint64_t settle(const Run& run, Time engine_now, Time next_event);
  // Whether to sleep at wall time `wall_ps` with the engine's next event at `next_event`,
  // and until when.
  Idle idle(int64_t wall_ps, Time next_event) const;

  uint64_t behind_ps() const { return behind_ps_; }
  uint64_t max_behind_ps() const { return max_behind_ps_; }

 private:
  int64_t offset_ps_ = 0;
  uint64_t behind_ps_ = 0, max_behind_ps_ = 0;
};

}  // namespace rdmasim::daemon
