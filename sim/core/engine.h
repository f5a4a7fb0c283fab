// The discrete-event engine: a clock and a queue of events ordered by (time, sequence).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <map>
#include <memory>
#include <vector>

#include "sim/core/calendar_queue.h"
#include "sim/core/event_slot.h"
#include "sim/core/rng.h"
#include "sim/core/time.h"

namespace rdmasim {

// Names one scheduled event; lets its owner cancel it. A default EventId names nothing.
struct EventId {
  uint64_t value = 0;
  explicit operator bool() const { return value != 0; }
  friend bool operator==(EventId, EventId) = default;
};

// An address a scheduled event reads early on (Engine::schedule_at).
struct ReadFirst {
  const void* address = nullptr;
};

// One simulation. Everything in sim/ takes an Engine& explicitly: there are no globals,
// so two engines can live in one process (and one test).
//
// Events at the same time run in the order they were scheduled (first in, first out),
// so a run is reproducible bit for bit from its inputs and seed.
class Engine {
 public:
  using Callback = std::function<void()>;

  explicit Engine(uint64_t seed = 1);
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;
  ~Engine();

  Time now() const { return now_; }
  uint64_t seed() const { return seed_; }

  // Schedules `cb` (any callable taking no arguments: a lambda, a Callback) at absolute
  // time `t` (>= now()). Returns a handle for cancel(). A callable of up to 40 bytes is
  // stored in the event's slot without a heap allocation.
  // `read_first`, when given, is an address the event reads early on (the packet it
  // delivers, say): at depth the engine fetches it into the cache while the event before
  // it runs. A hint only; what the event does is the same with or without it.
  template <class F>
  EventId schedule_at(Time t, F&& cb, ReadFirst read_first = {}) {
    const uint32_t slot = take_slot(t);
    slots_[slot].emplace(std::forward<F>(cb), read_first.address);
    return enqueue(t, slot);
  }
  template <class F>
  EventId schedule_in(Time delay, F&& cb, ReadFirst read_first = {}) {
    return schedule_at(now_ + delay, std::forward<F>(cb), read_first);
  }

  // Cancels a pending event. Returns false if it already ran, was cancelled, or is unknown.
  bool cancel(EventId id);
  bool is_pending(EventId id) const;

  // Runs the earliest event. Returns false when the queue is empty.
  bool step();
  // Runs every event with time <= `t`, then sets the clock to `t` (if t is later than now).
  void run_until(Time t);
  // Runs until no events remain or stop() is called.
  void run();
  // Makes run() / run_until() return after the current event.
  void stop() { stop_requested_ = true; }

  // Time of the earliest pending event, or kTimeNever.
  Time next_event_time();
  size_t pending() const { return live_; }
  uint64_t events_run() const { return events_run_; }

  // A named random stream: the same (seed, name) gives the same sequence in every run,
  // independent of how many other streams exist or were used.
  Rng& rng(std::string_view name);

 private:
  // A queue entry is 16 bytes: the time and a key = (sequence << kSlotBits) | slot. Keys
  // grow with the sequence, so (time, key) order is (time, sequence) order. Callbacks stay
  // in slots_; the queue moves only entries.
  static constexpr int kSlotBits = 24;
  static constexpr uint64_t kSlotMask = (1ull << kSlotBits) - 1;
  static constexpr uint64_t kFree = EventSlot::kFree;
  // From this many pending events on, step() fetches ahead (engine.cpp): below it the
  // slots and objects stay in cache and the look-ahead only costs (engine_bench at 16
  // pending: 37 -> 32 M events/s with it on).
  static constexpr size_t kLookaheadDepth = 4096;
  using HeapEntry = CalendarQueue::Entry;  // time as uint64_t (a Time >= 0), key
  bool live(const HeapEntry& e) const { return slots_[e.key & kSlotMask].seq == (e.key >> kSlotBits); }
  uint32_t take_slot(Time t);  // throws if t is in the past or no slot is left
  EventId enqueue(Time t, uint32_t slot);
  void release_slot(uint32_t slot);
  void pop_dead();
  void compact();

  Time now_ = 0;
  uint64_t seed_;
  uint64_t next_seq_ = 0;
  uint64_t events_run_ = 0;
  size_t live_ = 0;
  size_t dead_ = 0;  // cancelled entries still in queue_
  bool stop_requested_ = false;
  CalendarQueue queue_;
  EventSlots slots_;
  std::vector<uint32_t> free_slots_;
  std::map<std::string, std::unique_ptr<Rng>, std::less<>> streams_;
};

}  // namespace rdmasim
