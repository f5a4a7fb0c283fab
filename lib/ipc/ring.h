// Single-producer/single-consumer rings in shared memory between a verbs process and the
// fabric daemon. The daemon never trusts the contents: it keeps its own copies of the
// ring size and of its indices, and validates every slot it reads.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

namespace rdmasim::ipc {

inline constexpr size_t kCacheLine = 64;

// The header of a ring of `size` slots (a power of two). `producer` and `consumer` count
// slots ever produced/consumed (they wrap at 2^32); slot i lives at index i & (size - 1).
struct alignas(kCacheLine) RingHeader {
  alignas(kCacheLine) std::atomic<uint32_t> producer{0};
  alignas(kCacheLine) std::atomic<uint32_t> consumer{0};
  alignas(kCacheLine) uint32_t size = 0;       // written once by the daemon at creation
  uint32_t slot_bytes = 0;                     // likewise
};
static_assert(std::atomic<uint32_t>::is_always_lock_free);

// A view of a ring laid out as [RingHeader][slot 0][slot 1]...
template <typename Slot>
class RingView {
 public:
  RingView() = default;
  // `base` points at the RingHeader; `size` is the trusted slot count (the daemon's copy).
  RingView(void* base, uint32_t size)
      : hdr_(static_cast<RingHeader*>(base)),
        slots_(reinterpret_cast<Slot*>(static_cast<char*>(base) + sizeof(RingHeader))),
        mask_(size - 1) {}

  static size_t bytes_for(uint32_t size) { return sizeof(RingHeader) + sizeof(Slot) * size; }

  RingHeader* header() const { return hdr_; }
  Slot& slot(uint32_t index) const { return slots_[index & mask_]; }
  uint32_t size() const { return mask_ + 1; }
  explicit operator bool() const { return hdr_ != nullptr; }

 private:
  RingHeader* hdr_ = nullptr;
  Slot* slots_ = nullptr;
  uint32_t mask_ = 0;
};

inline uint32_t round_up_pow2(uint32_t v) {
  uint32_t p = 1;
  while (p < v && p < (1u << 30)) p <<= 1;
  return p;
}

}  // namespace rdmasim::ipc
