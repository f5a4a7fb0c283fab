// EventHeap, CalendarQueue, EventSlot and the engine against a reference model.
#include <doctest/doctest.h>

#include <algorithm>
#include <array>
#include <functional>
#include <map>
#include <memory>
#include <stdexcept>
#include <utility>
#include <vector>

#include "sim/core/calendar_queue.h"
#include "sim/core/engine.h"
#include "sim/core/event_heap.h"
#include "sim/core/event_slot.h"
#include "sim/core/rng.h"

using namespace rdmasim;

TEST_CASE("event heap: pops in (time, key) order across many levels") {
  // 5000 entries make a 4-ary heap 7 levels deep with a partly filled last group, so the
  // padding of the last group and the bottom-up pop are both exercised.
  EventHeap h;
  Rng r(3);
  std::vector<EventHeap::Entry> ref;
  for (uint64_t k = 0; k < 5000; ++k) {
    const EventHeap::Entry e{r.below(300), k};  // few distinct times: many ties
    h.push(e);
    ref.push_back(e);
  }
  std::sort(ref.begin(), ref.end(), EventHeap::earlier);
  std::vector<EventHeap::Entry> out;
  while (!h.empty()) {
    out.push_back(h.top());
    h.pop();
  }
  CHECK(out == ref);
}

using Reference = std::multimap<std::pair<uint64_t, uint64_t>, int>;  // (time, key) -> unused

// Drops the odd keys from queue q and from its reference; what remains must pop in the
// reference's order, and nothing after it.
template <class Queue>
void filter_then_drain(Queue& q, Reference& ref) {
  q.filter([](const EventHeap::Entry& e) { return e.key % 2 == 0; });
  std::erase_if(ref, [](const auto& kv) { return kv.first.second % 2 == 1; });
  REQUIRE(q.size() == ref.size());
  bool ordered = true;
  for (const auto& kv : ref) {
    ordered &= q.top().time == kv.first.first && q.top().key == kv.first.second;
    q.pop();
  }
  CHECK(ordered);
  CHECK(q.empty());
}

TEST_CASE("event heap: interleaved push and pop, times up to 2^63, filter keeps a heap") {
  EventHeap h;
  Reference ref;
  Rng r(11);
  uint64_t key = 0;
  for (int i = 0; i < 20000; ++i) {
    if (ref.empty() || r.below(3) != 0) {
      // Mostly near times, some at the far end of the Time range.
      const uint64_t t = r.below(10) == 0 ? (uint64_t{1} << 63) - 1 - r.below(5) : r.below(100000);
      h.push({t, key});
      ref.emplace(std::make_pair(t, key), 0);
      ++key;
    } else {
      REQUIRE(h.top().time == ref.begin()->first.first);
      REQUIRE(h.top().key == ref.begin()->first.second);
      h.pop();
      ref.erase(ref.begin());
    }
    REQUIRE(h.size() == ref.size());
  }
  filter_then_drain(h, ref);
}

// The calendar pops what one heap of all its entries would pop, in the same order: (time,
// key), whatever bucket, ring slot or far heap an entry waits in.
TEST_CASE("calendar queue: pops in (time, key) order like a heap, across the window and its wraps") {
  CalendarQueue q;
  Reference ref;
  Rng r(5);
  uint64_t key = 0, last = 0;  // last: the time of the last pop (pushes are never earlier)
  const uint64_t width = uint64_t{1} << CalendarQueue::kWidthBits;
  const uint64_t window = width * CalendarQueue::kBuckets;
  auto push = [&](uint64_t t) {
    q.push({t, key});
    ref.emplace(std::make_pair(t, key), 0);
    ++key;
  };
  for (int i = 0; i < 200000; ++i) {
    if (ref.empty() || r.below(2) == 0) {
      // Times after the last pop: in the current bucket, a few buckets on, near the end of
      // the window, just past it, far past it (timers), and at the end of the Time range.
      uint64_t t = last;
      switch (r.below(8)) {
        case 0: t += r.below(width); break;
        case 1: case 2: case 3: t += r.below(64 * width); break;
        case 4: t += window - width + r.below(2 * width); break;
        case 5: t += window + r.below(window); break;
        case 6: t += r.below(100) * window; break;
        default: t = (uint64_t{1} << 63) - 1 - r.below(5); break;
      }
      push(t);
    } else {
      REQUIRE(q.top().time == ref.begin()->first.first);
      REQUIRE(q.top().key == ref.begin()->first.second);
      last = q.top().time;
      q.pop();
      ref.erase(ref.begin());
      // As run_until does: the clock may stop anywhere before the next event, and what is
      // scheduled from there can fall before the bucket the queue has moved on to.
      if (!ref.empty() && r.below(4) == 0) last += r.below(q.top().time - last + 1);
    }
    REQUIRE(q.size() == ref.size());
  }
  filter_then_drain(q, ref);
}

TEST_CASE("calendar queue: second() is the entry after top() when its bucket holds one") {
  CalendarQueue q;
  q.push({100, 2});
  q.push({100, 1});
  q.push({5 * (uint64_t{1} << CalendarQueue::kWidthBits), 3});  // a later bucket
  REQUIRE(q.second() != nullptr);
  CHECK(q.top() == CalendarQueue::Entry{100, 1});
  CHECK(*q.second() == CalendarQueue::Entry{100, 2});
  q.pop();
  CHECK(q.second() == nullptr);  // the next entry is in another bucket: not looked for
  q.pop();
  CHECK(q.top() == CalendarQueue::Entry{5 * (uint64_t{1} << CalendarQueue::kWidthBits), 3});
}

namespace {

// Counts live copies, to see when the engine destroys a stored callable.
struct Tracked {
  int* alive;
  int* ran;
  explicit Tracked(int* a, int* r) : alive(a), ran(r) { ++*alive; }
  Tracked(const Tracked& o) : alive(o.alive), ran(o.ran) { ++*alive; }
  ~Tracked() { --*alive; }
  void operator()() const { ++*ran; }
};

// Larger than EventSlot::kInline: stored on the heap.
struct Big : Tracked {
  std::array<char, 64> pad{};
  using Tracked::Tracked;
};

}  // namespace

TEST_CASE("event slot: callables inline and boxed run once and are destroyed on run, cancel, teardown") {
  static_assert(sizeof(Tracked) <= EventSlot::kInline);
  static_assert(sizeof(Big) > EventSlot::kInline);
  int alive = 0, ran = 0;
  {
    Engine e;
    e.schedule_in(ns(1), Tracked(&alive, &ran));
    e.schedule_in(ns(2), Big(&alive, &ran));
    EventId c1 = e.schedule_in(ns(3), Tracked(&alive, &ran));
    EventId c2 = e.schedule_in(ns(4), Big(&alive, &ran));
    e.schedule_in(ns(5), Tracked(&alive, &ran));  // still pending when the engine dies
    e.schedule_in(ns(6), Big(&alive, &ran));
    CHECK(alive == 6);
    CHECK(e.cancel(c1));
    CHECK(e.cancel(c2));
    CHECK(alive == 4);  // a cancelled callable is destroyed at once
    e.run_until(ns(4));
    CHECK(ran == 2);
    CHECK(alive == 2);  // and a run one after it returns
  }
  CHECK(alive == 0);
  CHECK(ran == 2);
}

TEST_CASE("engine: a running event is no longer pending; cancelling itself is a no-op") {
  Engine e;
  EventId self;
  bool was_pending = true, cancelled = true;
  int later = 0;
  self = e.schedule_in(ns(1), [&] {
    was_pending = e.is_pending(self);
    cancelled = e.cancel(self);
    e.schedule_in(0, [&] { ++later; });
  });
  e.run();
  CHECK_FALSE(was_pending);
  CHECK_FALSE(cancelled);
  CHECK(later == 1);
  CHECK(e.pending() == 0);
}

TEST_CASE("engine: an event that throws releases its slot") {
  Engine e;
  e.schedule_in(ns(1), [] { throw std::runtime_error("boom"); });
  CHECK_THROWS_AS(e.run(), std::runtime_error);
  CHECK(e.pending() == 0);
  int ran = 0;
  e.schedule_in(ns(1), [&] { ++ran; });
  e.run();
  CHECK(ran == 1);
}

TEST_CASE("engine: matches a (time, sequence) reference model under schedule, cancel, run_until") {
  // The reference is a std::map keyed by (time, sequence): the documented order. Events
  // schedule more events (zero delay: ties with themselves; near; far), cancel random
  // pending ones, and run_until stops between events.
  Engine e(5);
  Rng r(17);
  std::map<std::pair<Time, uint64_t>, int> ref;  // (time, seq) -> id
  std::vector<std::pair<EventId, std::pair<Time, uint64_t>>> handles;
  std::vector<int> ran, expected;
  uint64_t seq = 0;
  int next_id = 0;
  std::function<void(Time)> add;
  add = [&](Time t) {
    const int id = next_id++;
    const auto k = std::make_pair(t, seq++);
    ref.emplace(k, id);
    EventId h = e.schedule_at(t, [&, id] {
      ran.push_back(id);
      if (next_id < 30000) {
        const uint64_t kind = r.below(4);
        const Time d = kind == 0 ? 0 : kind == 3 ? us(50) + static_cast<Time>(r.below(1000)) : static_cast<Time>(r.below(3000));
        add(e.now() + d);
      }
    });
    handles.emplace_back(h, k);
  };
  for (int i = 0; i < 500; ++i) add(static_cast<Time>(r.below(10000)));
  bool match = true;
  int cancels = 0, refused = 0;
  while (!ref.empty()) {
    // Run up to a bound that sometimes falls before the next event.
    const Time bound = e.now() + static_cast<Time>(r.below(2000));
    e.run_until(bound);
    // Events scheduled while running were added to ref when scheduled.
    while (!ref.empty() && ref.begin()->first.first <= bound) {
      expected.push_back(ref.begin()->second);
      ref.erase(ref.begin());
    }
    match &= e.now() == bound;
    match &= e.next_event_time() == (ref.empty() ? kTimeNever : ref.begin()->first.first);
    // Cancel a few handles, some of which have already run.
    for (int c = 0; c < 3 && !handles.empty(); ++c) {
      const size_t i = r.below(handles.size());
      const bool in_ref = ref.erase(handles[i].second) == 1;
      const bool ok = e.cancel(handles[i].first);
      match &= ok == in_ref;
      cancels += ok;
      refused += !ok;
      handles[i] = handles.back();
      handles.pop_back();
    }
    match &= e.pending() == ref.size();
    if (!match) break;
  }
  CHECK(match);
  CHECK(ran == expected);
  CHECK(cancels > 100);  // both cancel outcomes were exercised
  CHECK(refused > 100);
}

TEST_CASE("engine: a ReadFirst hint changes nothing but what is fetched ahead") {
  // 10000 events with hints (to a live object, null, freed memory: a hint is only fetched
  // ahead, never read as data), past the look-ahead depth (4096 pending), run in the
  // documented (time, sequence) order, as the same events without hints do.
  auto run = [](bool hints) {
    Engine e;
    Rng r(3);
    std::vector<int> order;
    std::vector<std::pair<Time, int>> expected;
    int dummy = 0;
    const void* freed = std::make_unique<int>(1).get();
    for (int i = 0; i < 10000; ++i) {
      const Time t = static_cast<Time>(r.below(50000));
      expected.emplace_back(t, i);
      const void* h = i % 3 == 0 ? &dummy : i % 3 == 1 ? nullptr : freed;
      auto cb = [&order, i] { order.push_back(i); };
      if (hints) e.schedule_at(t, cb, ReadFirst{h});
      else e.schedule_at(t, cb);
    }
    e.run();
    std::sort(expected.begin(), expected.end());
    std::vector<int> want;
    for (const auto& [t, i] : expected) want.push_back(i);
    CHECK(order == want);
    return order;
  };
  CHECK(run(true) == run(false));
}
