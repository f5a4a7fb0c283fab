// The engine's event queue: a calendar of time buckets in front of two heaps. It pops
// entries in exactly the (time, key) order of one EventHeap holding them all, so a run is
// the same bit for bit; what changes is the cost at depth. A study of 1024 hosts keeps tens
// of thousands of events pending, and a heap that size pops through levels that are not in
// cache; here most events land in a bucket a few microseconds ahead (a packet's hop, a
// transmission's end), a push is an append, and the heap that orders them holds one
// bucket's events only.
//
// Buckets are 2^kWidthBits picoseconds wide; the ring holds kBuckets of them, the window
// [base, base + kBuckets) in bucket numbers (time >> kWidthBits). `current_` is a heap of
// the entries of bucket `base` and of any pushed at or before it; a ring slot holds the
// unordered entries of one later bucket of the window, a bit per non-empty slot; `far_` is
// a heap of entries beyond the window when they were pushed (timers), moved into the ring
// as the window reaches them.
#pragma once

#include <algorithm>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "sim/core/event_heap.h"

namespace rdmasim {

class CalendarQueue {
 public:
  using Entry = EventHeap::Entry;
  // 4.096 ns buckets (a 4 KiB packet is 328 ns on a 100 Gb/s link, a cable hop 5 ns/m),
  // 4096 of them: a window of 16.8 us, past which events (timers) wait in far_. Measured
  // against 16.384 ns buckets (with a vector per slot, before the chunks): the k=8
  // permutation 1,606M -> 1,540M instructions, the k=16 one 4.63 -> 4.45 s (medians of 6).
  static constexpr int kWidthBits = 12;
  static constexpr uint64_t kBuckets = 4096;

  CalendarQueue() : ring_(kBuckets) {}
  CalendarQueue(const CalendarQueue&) = delete;
  CalendarQueue& operator=(const CalendarQueue&) = delete;

  bool empty() const { return size_ == 0; }
  size_t size() const { return size_; }

  void push(Entry e) {
    ++size_;
    place(e);
  }

  // The earliest entry (needs !empty()). Not const: it may move the window on.
  const Entry& top() {
    if (current_.empty()) advance();
    return current_.top();
  }
  // The entry after top() when the same bucket holds it, else nullptr (for look-ahead).
  const Entry* second() {
    if (current_.empty()) advance();
    return current_.size() >= 2 ? &current_.second() : nullptr;
  }

  void pop() {
    if (current_.empty()) advance();
    current_.pop();
    --size_;
  }

  // Keeps the entries for which keep(e) is true.
  template <class Keep>
  void filter(Keep keep) {
    current_.filter(keep);
    far_.filter(keep);
    size_ = current_.size() + far_.size();
    std::vector<Entry> kept;
    for (size_t i = 0; i < kBuckets; ++i)
      drain(i, [&](const Entry& e) {
        if (keep(e)) kept.push_back(e);
      });
    for (const Entry& e : kept) place(e);  // back to their slots: base_ has not moved
    size_ += in_ring_;
  }

 private:
  static constexpr uint64_t kMask = kBuckets - 1;
  static constexpr size_t kWords = kBuckets / 64;
  static constexpr uint32_t kNone = ~uint32_t{0};
  // A slot's entries sit in a list of chunks of 15 (248 bytes) from one pool, so memory
  // follows the entries pending, not the largest bucket each of 4096 slots ever held.
  static constexpr uint32_t kChunk = 15;
  struct Chunk {
    Entry entries[kChunk];
    uint32_t next;
    uint32_t count;
  };
  struct Slot {
    uint32_t head = kNone;
    uint32_t tail = kNone;
  };

  // Puts e where its bucket number says: current_ (at or before base_), its ring slot (in
  // the window), or far_ (past it). Not counted in size_.
  void place(const Entry& e) {
    const uint64_t n = e.time >> kWidthBits;
    if (n <= base_) current_.push(e);
    else if (n - base_ < kBuckets) to_ring(e, n);
    else far_.push(e);
  }

  // current_ is empty and size_ > 0: make the earliest non-empty bucket the current one.
  void advance() {
    uint64_t next = ~uint64_t{0};
    if (in_ring_ > 0) next = base_ + 1 + distance_to_set(static_cast<size_t>((base_ + 1) & kMask));
    if (!far_.empty()) next = std::min(next, far_.top().time >> kWidthBits);
    base_ = next;
    // The window moved: far entries it now covers go to their buckets (or to current_).
    while (!far_.empty() && (far_.top().time >> kWidthBits) - base_ < kBuckets) {
      const Entry e = far_.top();
      far_.pop();
      place(e);
    }
    drain(base_ & kMask, [this](const Entry& e) { current_.push(e); });
  }

  // Appends e to bucket n's slot (n in the window, after base_).
  void to_ring(const Entry& e, uint64_t n) {
    const size_t i = n & kMask;
    Slot& slot = ring_[i];
    if (slot.tail == kNone || chunks_[slot.tail].count == kChunk) {
      const uint32_t c = new_chunk();
      if (slot.tail == kNone) slot.head = c;
      else chunks_[slot.tail].next = c;
      slot.tail = c;
    }
    Chunk& t = chunks_[slot.tail];
    t.entries[t.count++] = e;
    bits_[i / 64] |= uint64_t{1} << (i % 64);
    ++in_ring_;
  }

  // Hands slot i's entries (if any) to f, returns its chunks to the free list and clears
  // its bit.
  template <class F>
  void drain(size_t i, F f) {
    Slot& slot = ring_[i];
    if (slot.head == kNone) return;
    bits_[i / 64] &= ~(uint64_t{1} << (i % 64));
    for (uint32_t c = slot.head; c != kNone;) {
      Chunk& ch = chunks_[c];
      for (uint32_t k = 0; k < ch.count; ++k) f(ch.entries[k]);
      in_ring_ -= ch.count;
      const uint32_t next = ch.next;
      ch.next = free_;
      free_ = c;
      c = next;
    }
    slot = Slot{};
  }

  uint32_t new_chunk() {
    uint32_t c = free_;
    if (c != kNone) {
      free_ = chunks_[c].next;
    } else {
      c = static_cast<uint32_t>(chunks_.size());
      chunks_.emplace_back();
    }
    chunks_[c].count = 0;
    chunks_[c].next = kNone;
    return c;
  }

  // Slots from `from` (a ring index) to the first non-empty one, going round (one exists).
  size_t distance_to_set(size_t from) const {
    size_t w = from / 64;
    uint64_t word = bits_[w] & (~uint64_t{0} << (from % 64));
    for (size_t step = 0;; ++step) {
      if (word) {
        const size_t i = w * 64 + static_cast<size_t>(std::countr_zero(word));
        return (i - from) & kMask;
      }
      w = (w + 1) % kWords;
      word = bits_[w];
      if (step > kWords) return 0;  // unreachable while in_ring_ > 0
    }
  }

  EventHeap current_;
  EventHeap far_;
  std::vector<Slot> ring_;
  std::vector<Chunk> chunks_;
  uint32_t free_ = kNone;  // first free chunk (linked by next)
  uint64_t bits_[kWords] = {};
  uint64_t base_ = 0;     // the current bucket's number
  size_t size_ = 0;
  size_t in_ring_ = 0;
};

}  // namespace rdmasim
