// The wall-clock pacer's arithmetic.
#include "lib/daemon/pacer.h"

#include <algorithm>

namespace rdmasim::daemon {

Pacer::Run Pacer::plan(int64_t wall_ps, Time engine_now) const {
  return Run{std::max(virtual_now(wall_ps), engine_now), kEventBudget};
}

uint64_t Pacer::settle(const Run& run, Time engine_now, Time next_event) {
  // Events still due by run.until: the budget ran out before the engine caught up.
  behind_ps_ = next_event > run.until ? 0 : static_cast<uint64_t>(run.until - engine_now);
  max_behind_ps_ = std::max(max_behind_ps_, behind_ps_);
  return behind_ps_;
}

Pacer::Idle Pacer::idle(int64_t wall_ps, Time next_event) const {
  if (next_event == kTimeNever) return Idle{true, kTimeNever};
  if (next_event - virtual_now(wall_ps) <= kSpinWindow) return Idle{false, kTimeNever};
  return Idle{true, next_event + offset_ps_};
}

}  // namespace rdmasim::daemon
