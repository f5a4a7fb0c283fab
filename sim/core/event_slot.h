// Where the engine keeps a scheduled event's callback: one 64-byte slot holding the
// event's sequence, an optional address the event will read first (a hint the engine
// fetches ahead, engine.cpp), and the callable itself when it fits in 40 bytes (a lambda
// capturing up to five pointers, or a std::function), else a pointer to it on the heap.
// Slots live in fixed chunks, so a callable is never moved once stored.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <new>
#include <type_traits>
#include <utility>
#include <vector>

namespace rdmasim {

struct alignas(64) EventSlot {
  static constexpr uint64_t kFree = ~0ull;
  static constexpr size_t kInline = 40;
  enum class Op { Run, Destroy };

  uint64_t seq = kFree;  // sequence of the event armed in this slot, kFree if none
  void (*op)(void*, Op) = nullptr;  // runs or destroys the callable; nullptr when none is stored
  const void* hint = nullptr;       // see Engine::schedule_at; nullptr: none
  alignas(8) unsigned char storage[kInline];

  template <class F>
  void emplace(F&& f, const void* read_first = nullptr) {
    using D = std::decay_t<F>;
    hint = read_first;
    if constexpr (sizeof(D) <= kInline && alignof(D) <= 8) {
      ::new (static_cast<void*>(storage)) D(std::forward<F>(f));
      op = [](void* p, Op o) {
        D* d = std::launder(static_cast<D*>(p));
        if (o == Op::Run) (*d)();
        else d->~D();
      };
    } else {
      D* boxed = new D(std::forward<F>(f));
      std::memcpy(storage, &boxed, sizeof boxed);
      op = [](void* p, Op o) {
        D* d;
        std::memcpy(&d, p, sizeof d);
        if (o == Op::Run) (*d)();
        else delete d;
      };
    }
  }
  void run() { op(storage, Op::Run); }
  void reset() {
    if (op) op(storage, Op::Destroy);
    op = nullptr;
    hint = nullptr;
  }
};
static_assert(sizeof(EventSlot) == 64);

// Slots by index, in chunks of 4096 that never move.
class EventSlots {
 public:
  static constexpr size_t kChunkBits = 12;
  static constexpr size_t kChunk = size_t{1} << kChunkBits;

  EventSlots() = default;
  EventSlots(const EventSlots&) = delete;
  EventSlots& operator=(const EventSlots&) = delete;
  ~EventSlots() {
    for (auto& chunk : chunks_)
      for (size_t i = 0; i < kChunk; ++i) chunk[i].reset();
  }

  size_t size() const { return size_; }
  EventSlot& operator[](size_t i) { return chunks_[i >> kChunkBits][i & (kChunk - 1)]; }
  const EventSlot& operator[](size_t i) const { return chunks_[i >> kChunkBits][i & (kChunk - 1)]; }
  // Adds a free slot at index size() - 1.
  void grow() {
    if ((size_ & (kChunk - 1)) == 0) chunks_.push_back(std::make_unique<EventSlot[]>(kChunk));
    ++size_;
  }

 private:
  std::vector<std::unique_ptr<EventSlot[]>> chunks_;
  size_t size_ = 0;
};

}  // namespace rdmasim
