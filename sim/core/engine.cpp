#include "sim/core/engine.h"

#include <algorithm>
#include <cassert>
#include <stdexcept>

namespace rdmasim {

// EventId is the heap key + 1: (sequence << kSlotBits | slot) + 1, never 0. A handle
// whose sequence no longer matches its slot's is stale and ignored.

Engine::Engine(uint64_t seed) : seed_(seed) {}
Engine::~Engine() = default;

// A 4-ary min-heap: shallower than a binary heap, and a node's children share a cache line.
void Engine::heap_push(HeapEntry e) {
  size_t i = heap_.size();
  heap_.push_back(e);
  while (i > 0) {
    const size_t parent = (i - 1) / 4;
    if (!earlier(e, heap_[parent])) break;
    heap_[i] = heap_[parent];
    i = parent;
  }
  heap_[i] = e;
}

void Engine::heap_pop_top() {
  const HeapEntry last = heap_.back();
  heap_.pop_back();
  const size_t n = heap_.size();
  if (n == 0) return;
  size_t i = 0;
  for (;;) {
    const size_t first = 4 * i + 1;
    if (first >= n) break;
    size_t best = first;
    const size_t end = first + 4 < n ? first + 4 : n;
    for (size_t c = first + 1; c < end; ++c)
      if (earlier(heap_[c], heap_[best])) best = c;
    if (!earlier(heap_[best], last)) break;
    heap_[i] = heap_[best];
    i = best;
  }
  heap_[i] = last;
}

EventId Engine::schedule_at(Time t, Callback cb) {
  if (t < now_) throw std::logic_error("Engine::schedule_at: time is in the past");
  uint32_t slot;
  if (!free_slots_.empty()) {
    slot = free_slots_.back();
    free_slots_.pop_back();
  } else {
    if (slots_.size() > kSlotMask) throw std::length_error("Engine: too many pending events");
    slot = static_cast<uint32_t>(slots_.size());
    slots_.emplace_back();
  }
  Slot& s = slots_[slot];
  s.cb = std::move(cb);
  s.seq = next_seq_++;
  const uint64_t key = (s.seq << kSlotBits) | slot;
  heap_push(HeapEntry{t, key});
  ++live_;
  return EventId{key + 1};
}

bool Engine::is_pending(EventId id) const {
  if (!id) return false;
  const uint64_t key = id.value - 1;
  const uint64_t slot = key & kSlotMask;
  return slot < slots_.size() && slots_[slot].seq == (key >> kSlotBits);
}

bool Engine::cancel(EventId id) {
  if (!is_pending(id)) return false;
  Slot& s = slots_[(id.value - 1) & kSlotMask];
  s.seq = kFree;
  s.cb = nullptr;
  // The heap entry stays behind; its sequence no longer matches and it is skipped.
  free_slots_.push_back(static_cast<uint32_t>((id.value - 1) & kSlotMask));
  --live_;
  // Models that re-arm timers cancel far more events than they run; without compaction
  // the heap fills with dead entries and every pop pays for them.
  if (++dead_ > live_ + 4096) compact();
  return true;
}

void Engine::compact() {
  std::erase_if(heap_, [this](const HeapEntry& e) { return !live(e); });
  // A sorted array is a valid d-ary min-heap.
  std::sort(heap_.begin(), heap_.end(), earlier);
  dead_ = 0;
}

void Engine::pop_dead() {
  while (!heap_.empty() && !live(heap_.front())) {
    heap_pop_top();
    if (dead_ > 0) --dead_;
  }
}

Time Engine::next_event_time() {
  pop_dead();
  return heap_.empty() ? kTimeNever : heap_.front().time;
}

bool Engine::step() {
  pop_dead();
  if (heap_.empty()) return false;
  const HeapEntry e = heap_.front();
  heap_pop_top();
  const uint32_t slot = static_cast<uint32_t>(e.key & kSlotMask);
  Slot& s = slots_[slot];
  Callback cb = std::move(s.cb);
  s.cb = nullptr;
  s.seq = kFree;
  free_slots_.push_back(slot);
  --live_;
  now_ = e.time;
  ++events_run_;
  cb();
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
