#include "sim/core/engine.h"

#include <algorithm>
#include <cassert>
#include <stdexcept>

namespace rdmasim {

// EventId packs (slot + 1) in the low 32 bits and the slot's generation in the high 32,
// so a stale handle for a reused slot is recognised and ignored.
namespace {
EventId make_id(uint32_t slot, uint32_t gen) {
  return EventId{(static_cast<uint64_t>(gen) << 32) | (static_cast<uint64_t>(slot) + 1)};
}
}  // namespace

Engine::Engine(uint64_t seed) : seed_(seed) {}
Engine::~Engine() = default;

void Engine::heap_push(const HeapEntry& e) {
  heap_.push_back(e);
  std::push_heap(heap_.begin(), heap_.end(), later);
}

Engine::HeapEntry Engine::heap_pop() {
  std::pop_heap(heap_.begin(), heap_.end(), later);
  HeapEntry e = heap_.back();
  heap_.pop_back();
  return e;
}

EventId Engine::schedule_at(Time t, Callback cb) {
  if (t < now_) throw std::logic_error("Engine::schedule_at: time is in the past");
  uint32_t slot;
  if (!free_slots_.empty()) {
    slot = free_slots_.back();
    free_slots_.pop_back();
  } else {
    slot = static_cast<uint32_t>(slots_.size());
    slots_.emplace_back();
  }
  Slot& s = slots_[slot];
  s.cb = std::move(cb);
  s.armed = true;
  heap_push(HeapEntry{t, next_seq_++, slot, s.generation});
  ++live_;
  return make_id(slot, s.generation);
}

bool Engine::is_pending(EventId id) const {
  if (!id) return false;
  const uint32_t slot = static_cast<uint32_t>(id.value & 0xffffffffu) - 1;
  const uint32_t gen = static_cast<uint32_t>(id.value >> 32);
  return slot < slots_.size() && slots_[slot].armed && slots_[slot].generation == gen;
}

bool Engine::cancel(EventId id) {
  if (!is_pending(id)) return false;
  const uint32_t slot = static_cast<uint32_t>(id.value & 0xffffffffu) - 1;
  Slot& s = slots_[slot];
  s.armed = false;
  s.cb = nullptr;
  // The heap entry stays behind; its generation no longer matches and it is skipped.
  ++s.generation;
  free_slots_.push_back(slot);
  --live_;
  return true;
}

void Engine::pop_dead() {
  while (!heap_.empty()) {
    const HeapEntry& top = heap_.front();
    const Slot& s = slots_[top.slot];
    if (s.armed && s.generation == top.generation) return;
    heap_pop();
  }
}

Time Engine::next_event_time() {
  pop_dead();
  return heap_.empty() ? kTimeNever : heap_.front().time;
}

bool Engine::step() {
  pop_dead();
  if (heap_.empty()) return false;
  const HeapEntry e = heap_pop();
  Slot& s = slots_[e.slot];
  Callback cb = std::move(s.cb);
  s.cb = nullptr;
  s.armed = false;
  ++s.generation;
  free_slots_.push_back(e.slot);
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
