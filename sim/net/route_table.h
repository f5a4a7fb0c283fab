// A switch's forwarding table: destination address -> the ports a packet may leave by.
// Built once when the fabric is wired, read for every packet a switch forwards, and held by
// every switch for every destination (1280 switches x 8192 NICs at k=32), so it is flat: an
// open-addressing hash of the addresses (linear probing, no per-entry allocation) whose
// slots point into one array of the distinct port sets.
#pragma once

#include <algorithm>
#include <cstdint>
#include <span>
#include <utility>
#include <vector>

#include "sim/net/packet.h"

namespace rdmasim::net {

class RouteTable {
 public:
  // Packets to `dst` leave by one of `ports` (replaces an earlier set for `dst`).
  void set(Address dst, const std::vector<int>& ports) {
    if ((size_ + 1) * 2 > slots_.size()) rehash(slots_.empty() ? 16 : slots_.size() * 2);
    Slot& s = find_slot(dst);
    if (s.count == kEmpty) {
      ++size_;
      s.dst = dst;
    }
    // Destinations share their port sets (every NIC beyond the pod leaves by the same
    // uplinks), so each distinct set is stored once. A switch has about one set per port,
    // and the one matched last (most often the uplinks) is tried first.
    s.count = static_cast<uint32_t>(ports.size());
    for (size_t i = 0; i < sets_.size(); ++i) {
      const auto [start, count] = sets_[i];
      if (count == s.count && std::equal(ports.begin(), ports.end(), ports_.begin() + start)) {
        std::swap(sets_[0], sets_[i]);
        s.start = start;
        return;
      }
    }
    s.start = static_cast<uint32_t>(ports_.size());
    ports_.insert(ports_.end(), ports.begin(), ports.end());
    sets_.push_back({s.start, s.count});
    std::swap(sets_[0], sets_.back());
  }

  // The ports for `dst`; empty when no route was set.
  std::span<const int> get(Address dst) const {
    if (slots_.empty()) return {};
    const size_t mask = slots_.size() - 1;
    for (size_t i = hash(dst) & mask;; i = (i + 1) & mask) {
      const Slot& s = slots_[i];
      if (s.count == kEmpty) return {};
      if (s.dst == dst) return {ports_.data() + s.start, s.count};
    }
  }

 private:
  static constexpr uint32_t kEmpty = UINT32_MAX;
  struct Slot {
    Address dst = 0;
    uint32_t start = 0;
    uint32_t count = kEmpty;  // kEmpty: a free slot
  };
  static size_t hash(Address a) { return static_cast<size_t>((a * 0x9E3779B97F4A7C15ull) >> 32); }
  Slot& find_slot(Address dst) {
    const size_t mask = slots_.size() - 1;
    for (size_t i = hash(dst) & mask;; i = (i + 1) & mask)
      if (slots_[i].count == kEmpty || slots_[i].dst == dst) return slots_[i];
  }
  void rehash(size_t n) {
    std::vector<Slot> old = std::move(slots_);
    slots_.assign(n, Slot{});
    for (const Slot& s : old)
      if (s.count != kEmpty) find_slot(s.dst) = s;
  }

  std::vector<Slot> slots_;  // a power of two, at most half full
  std::vector<int> ports_;   // the distinct sets, one after another
  std::vector<std::pair<uint32_t, uint32_t>> sets_;  // each distinct set's (start, count)
  size_t size_ = 0;
};

}  // namespace rdmasim::net
