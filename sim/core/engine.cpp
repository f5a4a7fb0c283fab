#include "sim/core/engine.h"

#include <algorithm>
#include <cassert>
#include <cstring>
#include <stdexcept>

namespace rdmasim {

// EventId is the queue key + 1: (sequence << kSlotBits | slot) + 1, never 0. A handle
// whose sequence no longer matches its slot's is stale and ignored.

Engine::Engine(uint64_t seed) : seed_(seed) {}
Engine::~Engine() = default;

uint32_t Engine::take_slot(Time t) {
  if (t < now_) throw std::logic_error("Engine::schedule_at: time is in the past");
  if (!free_slots_.empty()) {
    const uint32_t slot = free_slots_.back();
    free_slots_.pop_back();
    return slot;
  }
  if (slots_.size() > kSlotMask) throw std::length_error("Engine: too many pending events");
  slots_.grow();
  return static_cast<uint32_t>(slots_.size() - 1);
}

EventId Engine::enqueue(Time t, uint32_t slot) {
  EventSlot& s = slots_[slot];
  s.seq = next_seq_++;
  const uint64_t key = (s.seq << kSlotBits) | slot;
  queue_.push(HeapEntry{static_cast<uint64_t>(t), key});
  ++live_;
  return EventId{key + 1};
}

void Engine::release_slot(uint32_t slot) {
  EventSlot& s = slots_[slot];
  s.seq = kFree;
  s.reset();
  free_slots_.push_back(slot);
}

bool Engine::is_pending(EventId id) const {
  if (!id) return false;
  const uint64_t key = id.value - 1;
  const uint64_t slot = key & kSlotMask;
  return slot < slots_.size() && slots_[slot].seq == (key >> kSlotBits);
}

bool Engine::cancel(EventId id) {
  if (!is_pending(id)) return false;
  // The queue entry stays behind; its sequence no longer matches and it is skipped.
  release_slot(static_cast<uint32_t>((id.value - 1) & kSlotMask));
  --live_;
  // Models that re-arm timers cancel far more events than they run; without compaction
  // the queue fills with dead entries and every pop pays for them.
  if (++dead_ > live_ + 4096) compact();
  return true;
}

void Engine::compact() {
  queue_.filter([this](const HeapEntry& e) { return live(e); });
  dead_ = 0;
}

void Engine::pop_dead() {
  while (!queue_.empty() && !live(queue_.top())) {
    queue_.pop();
    if (dead_ > 0) --dead_;
  }
}

Time Engine::next_event_time() {
  pop_dead();
  return queue_.empty() ? kTimeNever : static_cast<Time>(queue_.top().time);
}

bool Engine::step() {
  pop_dead();
  if (queue_.empty()) return false;
  const HeapEntry e = queue_.top();
  queue_.pop();
  if (queue_.size() >= kLookaheadDepth) {
    // Look ahead while this event runs (at scale each event starts with cache misses):
    // the next event's slot was fetched during the previous step; fetch the first two
    // lines of the object its callable's first captured word points to (a lambda's `this`,
    // or a boxed callable: a port's per-packet members span both), the address it said it
    // reads first (ReadFirst), and the slot of the event after it (the smallest of the
    // root's children).
    const EventSlot& next = slots_[queue_.top().key & kSlotMask];
    const void* obj;
    std::memcpy(&obj, next.storage, sizeof obj);
    __builtin_prefetch(obj);
    __builtin_prefetch(static_cast<const char*>(obj) + 64);
    if (next.hint) __builtin_prefetch(next.hint);
    if (const HeapEntry* after = queue_.second()) __builtin_prefetch(&slots_[after->key & kSlotMask]);
  }
  const uint32_t slot = static_cast<uint32_t>(e.key & kSlotMask);
  EventSlot& s = slots_[slot];
  // The callable runs where it is stored; the slot is freed after it returns (or throws).
  // While it runs the event is no longer pending, so cancelling its own handle is a no-op.
  s.seq = kFree;
  --live_;
  now_ = static_cast<Time>(e.time);
  ++events_run_;
  struct Release {
    Engine* engine;
    uint32_t slot;
    ~Release() { engine->release_slot(slot); }
  } release{this, slot};
  s.run();
  return true;
}

void Engine::run_until(Time t) {
  stop_requested_ = false;
  while (!stop_requested_) {
    const Time next = next_event_time();
    if (next > t) break;
    step();
  }
  if (!stop_requested_ && t > now_ && t != kTimeNever) now_ = t;
}

void Engine::run() {
  stop_requested_ = false;
  while (!stop_requested_ && step()) {
  }
}

Rng& Engine::rng(std::string_view name) {
  auto it = streams_.find(name);
  if (it == streams_.end()) {
    it = streams_.emplace(std::string(name), std::make_unique<Rng>(Rng::derived(seed_, name))).first;
  }
  return *it->second;
}

}  // namespace rdmasim
