// A pool of small sets (short sequences of numbers), each distinct one stored once, one
// after another, and named by its number. Forwarding tables use it: a switch sends most
// destinations out of a handful of port sets (its uplinks, or one port), so a table holds a
// set number per destination instead of a vector per destination.
#pragma once

#include <algorithm>
#include <cstdint>
#include <span>
#include <vector>

namespace rdmasim {

template <class T>
class SetPool {
 public:
  // The number of the stored set equal to `items`, looked for among `candidates` (set
  // numbers, searched in order); stored now, and added to `candidates`, if none matches.
  // The match moves to the front of `candidates`: callers keep one candidate list per
  // table, and a table asks for the same set (its uplinks) most of the time.
  uint32_t intern(std::span<const T> items, std::vector<uint32_t>& candidates) {
    for (size_t k = 0; k < candidates.size(); ++k) {
      const std::span<const T> s = (*this)[candidates[k]];
      if (std::equal(items.begin(), items.end(), s.begin(), s.end())) {
        std::swap(candidates[0], candidates[k]);
        return candidates[0];
      }
    }
    items_.insert(items_.end(), items.begin(), items.end());
    end_.push_back(static_cast<uint32_t>(items_.size()));
    candidates.push_back(static_cast<uint32_t>(end_.size() - 1));
    std::swap(candidates[0], candidates.back());
    return candidates[0];
  }

  std::span<const T> operator[](uint32_t n) const {
    const uint32_t b = begin(n);
    return {items_.data() + b, end_[n] - b};
  }
  // Where set n starts among all the items (data()), for callers that keep (start, length).
  uint32_t begin(uint32_t n) const { return n ? end_[n - 1] : 0; }
  const T* data() const { return items_.data(); }
  size_t size() const { return end_.size(); }

 private:
  std::vector<T> items_;       // the sets, one after another
  std::vector<uint32_t> end_;  // per set: one past its last item in items_
};

}  // namespace rdmasim
