// A 4-ary min-heap of 16-byte (time, key) entries, laid out so that the four children of a
// node fill one 64-byte cache line, popped bottom-up with branch-free child selection. The
// engine's CalendarQueue orders its current bucket and its far events with it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <new>
#include <utility>

namespace rdmasim {

class EventHeap {
 public:
  // 4 children of 16 bytes: one cache line. (Measured: 8-ary is no faster at 65536
  // pending and slower at 16; prefetching grandchildren is slower.)
  static constexpr size_t kArity = 4;
  struct Entry {
    uint64_t time;
    uint64_t key;
    friend bool operator==(const Entry&, const Entry&) = default;
  };
  static bool earlier(const Entry& a, const Entry& b) { return wide(a) < wide(b); }

  EventHeap() = default;
  EventHeap(const EventHeap&) = delete;
  EventHeap& operator=(const EventHeap&) = delete;
  ~EventHeap() { release(); }

  bool empty() const { return size_ == 0; }
  size_t size() const { return size_; }
  const Entry& top() const { return at(0); }
  // The entry that is top() after one pop(): the smallest of the root's children (needs
  // size() >= 2; unused positions of the group hold kSentinel, which never wins).
  const Entry& second() const {
    size_t best = 1;
    for (size_t c = 2; c <= kArity; ++c)
      if (earlier(at(c), at(best))) best = c;
    return at(best);
  }
  const Entry& operator[](size_t i) const { return at(i); }

  void push(Entry e) {
    if (size_ == capacity_) grow();
    sift_up(size_++, e);
  }

  // Removes the top. Bottom-up: the hole left at the root goes down to a leaf along the
  // smaller child (no comparison with the element being re-inserted, whose place is
  // almost always near the bottom), then the last element climbs from there.
  void pop() {
    const Entry last = at(size_ - 1);
    at(size_ - 1) = kSentinel;
    const size_t n = --size_;
    if (n == 0) return;
    size_t hole = 0;
    for (;;) {
      const size_t first = kArity * hole + 1;
      if (first >= n) break;
      // Unused positions of the last group hold kSentinel, which never wins.
      size_t best = first;
      unsigned __int128 m = wide(at(first));
      for (size_t c = first + 1; c < first + kArity; ++c) {
        const unsigned __int128 v = wide(at(c));
        const bool lt = v < m;
        m = lt ? v : m;
        best = lt ? c : best;
      }
      at(hole) = at(best);
      hole = best;
    }
    sift_up(hole, last);
  }

  // Keeps the entries for which keep(e) is true, in any valid heap order.
  template <class Keep>
  void filter(Keep keep) {
    size_t out = 0;
    for (size_t i = 0; i < size_; ++i)
      if (keep(at(i))) at(out++) = at(i);
    for (size_t i = out; i < size_; ++i) at(i) = kSentinel;
    size_ = out;
    // Floyd's bottom-up heap construction.
    if (size_ > 1)
      for (size_t i = (size_ - 2) / kArity + 1; i-- > 0;) sift_down(i);
  }

 private:
  static constexpr Entry kSentinel{~0ull, ~0ull};
  // Position i lives at data_[i + 3]: the children 4i+1..4i+4 of node i are then at
  // 4(i+1)..4(i+1)+3, one aligned group of four.
  static constexpr size_t kOffset = kArity - 1;
  static constexpr size_t kAlign = kArity * sizeof(Entry);

  static unsigned __int128 wide(const Entry& e) {
    return (static_cast<unsigned __int128>(e.time) << 64) | e.key;
  }
  Entry& at(size_t i) { return data_[i + kOffset]; }
  const Entry& at(size_t i) const { return data_[i + kOffset]; }

  // Places `e` at the empty position i or above it.
  void sift_up(size_t i, Entry e) {
    while (i > 0) {
      const size_t parent = (i - 1) / kArity;
      if (!earlier(e, at(parent))) break;
      at(i) = at(parent);
      i = parent;
    }
    at(i) = e;
  }

  void sift_down(size_t i) {
    const Entry e = at(i);
    for (;;) {
      const size_t first = kArity * i + 1;
      if (first >= size_) break;
      size_t best = first;
      for (size_t c = first + 1; c < first + kArity; ++c)
        if (earlier(at(c), at(best))) best = c;
      if (!earlier(at(best), e)) break;
      at(i) = at(best);
      i = best;
    }
    at(i) = e;
  }

  void grow() {
    // Physical slots: kOffset + capacity, rounded so the last group of four is complete.
    const size_t cap = capacity_ == 0 ? 64 : capacity_ * 2;
    const size_t slots = cap + kOffset + kArity;
    auto* fresh = static_cast<Entry*>(::operator new(slots * sizeof(Entry), std::align_val_t{kAlign}));
    for (size_t i = 0; i < slots; ++i) fresh[i] = kSentinel;
    for (size_t i = 0; i < size_; ++i) fresh[i + kOffset] = at(i);
    release();
    data_ = fresh;
    capacity_ = cap;
  }
  void release() {
    if (data_) ::operator delete(data_, std::align_val_t{kAlign});
    data_ = nullptr;
  }

  Entry* data_ = nullptr;
  size_t size_ = 0;
  size_t capacity_ = 0;
};

}  // namespace rdmasim
