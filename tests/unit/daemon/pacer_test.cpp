// The wall-clock pacer against its contract (lib/daemon/README.md, "Contracts"): virtual
// time = wall time - a fixed offset and never ahead of it; at most 200000 events per
// iteration, the rest reported as behind; spin while the next event is at most 50 us away.
#include <doctest/doctest.h>

#include <initializer_list>

#include "lib/daemon/pacer.h"

using namespace rdmasim;
using rdmasim::daemon::Pacer;

namespace {
constexpr int64_t kWall0 = 7 * kSecond;  // an arbitrary CLOCK_MONOTONIC reading at start
}

TEST_CASE("pacer: virtual time follows wall time from the start offset and never runs ahead") {
  Pacer p;
  p.start(kWall0, us(3));  // offset = 7 s - 3 us
  // 10 us of wall time later, virtual now is 3 us + 10 us.
  CHECK(p.virtual_now(kWall0 + us(10)) == us(13));
  CHECK(p.plan(kWall0 + us(10), us(3)).until == us(13));
  for (Time dt : {Time{0}, Time{1}, us(1), ms(5), kSecond}) {
    const Pacer::Run run = p.plan(kWall0 + dt, us(3));
    CHECK(run.until == us(3) + dt);                       // exactly wall - offset...
    CHECK(run.until <= p.virtual_now(kWall0 + dt));       // ...so never ahead of it
  }
}

TEST_CASE("pacer: an engine already past virtual now is not sent back") {
  Pacer p;
  p.start(kWall0, 0);
  // The engine stands at 20 us while the wall clock says 5 us: run to where it is.
  CHECK(p.plan(kWall0 + us(5), us(20)).until == us(20));
}

TEST_CASE("pacer: each iteration runs at most 200000 events") {
  Pacer p;
  p.start(kWall0, 0);
  CHECK(Pacer::kEventBudget == 200000);  // README: "up to 200000 run per iteration"
  CHECK(p.plan(kWall0 + kSecond, 0).max_events == 200000);
}

TEST_CASE("pacer: behind is how far the engine stayed short of the target while events were due") {
  Pacer p;
  p.start(kWall0, 0);
  Pacer::Run run = p.plan(kWall0 + us(100), 0);  // until = 100 us
  // Budget spent at 40 us with the next event due at 41 us (<= 100 us): behind 100 - 40.
  CHECK(p.settle(run, us(40), us(41)) == static_cast<uint64_t>(us(60)));
  CHECK(p.behind_ps() == static_cast<uint64_t>(us(60)));
  CHECK(p.max_behind_ps() == static_cast<uint64_t>(us(60)));
  // A next event exactly at the target is still due: behind 100 - 90 = 10 us.
  CHECK(p.settle(run, us(90), us(100)) == static_cast<uint64_t>(us(10)));
  CHECK(p.max_behind_ps() == static_cast<uint64_t>(us(60)));  // the maximum stays
  // Caught up (next event after the target, the engine moved to it): behind 0.
  run = p.plan(kWall0 + us(200), us(90));
  CHECK(p.settle(run, us(200), us(250)) == 0);
  CHECK(p.behind_ps() == 0);
  CHECK(p.max_behind_ps() == static_cast<uint64_t>(us(60)));
  // Nothing scheduled at all is never behind.
  CHECK(p.settle(run, us(200), kTimeNever) == 0);
}

TEST_CASE("pacer: spin while the next event is at most 50 us away, else sleep until it") {
  Pacer p;
  p.start(kWall0, 0);
  const int64_t wall = kWall0 + us(10);  // virtual now = 10 us
  CHECK(Pacer::kSpinWindow == us(50));   // README: "more than 50 us away" sleeps
  CHECK_FALSE(p.idle(wall, us(10)).sleep);       // due now
  CHECK_FALSE(p.idle(wall, us(60)).sleep);       // exactly 50 us away: still spins
  const Pacer::Idle far = p.idle(wall, us(60) + 1);  // 50 us + 1 ps away
  CHECK(far.sleep);
  // The timer is armed at the wall time of that event: its virtual time + the offset.
  CHECK(far.wake_wall_ps == kWall0 + us(60) + 1);
  // Nothing scheduled: sleep with no timer, until a request or a doorbell wakes it.
  const Pacer::Idle never = p.idle(wall, kTimeNever);
  CHECK(never.sleep);
  CHECK(never.wake_wall_ps == kTimeNever);
}
