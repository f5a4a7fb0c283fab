// A switch's forwarding table: destination address -> the ports a packet may leave by.
// Built once when the fabric is wired, read for every packet a switch forwards, and held by
// every switch for every destination (1280 switches x 8192 NICs at k=32), so it is small and
// flat. The fabric numbers its destinations once (AddressIndex, an open-addressing hash of
// the addresses shared by all its switches); each switch keeps one 4-byte entry per
// destination (where its port set starts, and its length) and each distinct port set once
// (a switch has about one set per port: every NIC beyond the pod leaves an edge switch by
// the same uplinks).
#pragma once

#include <algorithm>
#include <cstdint>
#include <memory>
#include <span>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "sim/core/set_pool.h"
#include "sim/net/packet.h"

namespace rdmasim::net {

// Dense numbers 0, 1, ... for addresses, in the order they are added.
class AddressIndex {
 public:
  static constexpr uint32_t kNone = UINT32_MAX;

  // The number of `a`, given now if it had none.
  uint32_t add(Address a) {
    if ((size_ + 1) * 2 > slots_.size()) rehash(slots_.empty() ? 16 : slots_.size() * 2);
    Slot& s = find_slot(a);
    if (s.index == kNone) {
      s.addr = a;
      s.index = static_cast<uint32_t>(size_++);
    }
    return s.index;
  }
  // The number of `a`, or kNone.
  uint32_t find(Address a) const {
    if (slots_.empty()) return kNone;
    const size_t mask = slots_.size() - 1;
    for (size_t i = hash(a) & mask;; i = (i + 1) & mask) {
      const Slot& s = slots_[i];
      if (s.index == kNone || s.addr == a) return s.index;
    }
  }
  size_t size() const { return size_; }

 private:
  struct Slot {
    Address addr = 0;
    uint32_t index = kNone;  // kNone: a free slot
  };
  static size_t hash(Address a) { return static_cast<size_t>((a * 0x9E3779B97F4A7C15ull) >> 32); }
  Slot& find_slot(Address a) {
    const size_t mask = slots_.size() - 1;
    for (size_t i = hash(a) & mask;; i = (i + 1) & mask)
      if (slots_[i].index == kNone || slots_[i].addr == a) return slots_[i];
  }
  void rehash(size_t n) {
    std::vector<Slot> old = std::move(slots_);
    slots_.assign(n, Slot{});
    for (const Slot& s : old)
      if (s.index != kNone) find_slot(s.addr) = s;
  }

  std::vector<Slot> slots_;  // a power of two, at most half full
  size_t size_ = 0;
};

class RouteTable {
 public:
  // Destinations are numbered by `index`, which the fabric's switches share (set before
  // any route). A table given none numbers its destinations itself.
  void use_index(std::shared_ptr<AddressIndex> index) { index_ = std::move(index); }

  // Packets to `dst` leave by one of `ports` (replaces an earlier set for `dst`).
  void set(Address dst, const std::vector<int>& ports) {
    if (!index_) index_ = std::make_shared<AddressIndex>();
    const uint32_t i = index_->add(dst);
    if (i >= set_of_.size()) set_of_.resize(i + 1, 0);
    if (ports.size() > kMaxSetSize)
      throw std::length_error("a route with " + std::to_string(ports.size()) + " ports (at most " +
                              std::to_string(kMaxSetSize) + ")");
    const uint32_t n = sets_.intern(std::span<const int>(ports), order_);
    if (sets_.begin(n) >= (uint32_t{1} << kStartBits))
      throw std::length_error("a forwarding table with more than 2^20 ports in its distinct sets");
    set_of_[i] = sets_.begin(n) << kCountBits | static_cast<uint32_t>(ports.size());
  }

  // The ports for `dst`; empty when no route was set.
  std::span<const int> get(Address dst) const {
    const uint32_t* e = entry(dst);
    return e ? ports(*e) : std::span<const int>{};
  }
  // Where `dst`'s entry is (nullptr: no route), and the ports an entry names: a lookup in
  // two steps, so that a caller can fetch the entry early and read it when needed.
  const uint32_t* entry(Address dst) const {
    if (!index_) return nullptr;
    const uint32_t i = index_->find(dst);
    return i < set_of_.size() ? &set_of_[i] : nullptr;
  }
  std::span<const int> ports(uint32_t entry) const {
    return {sets_.data() + (entry >> kCountBits), entry & kCountMask};
  }

 private:
  // A destination's entry is its set's (start, length) in sets_, packed: the lookup needs
  // no second table (the set numbers' ends) on its way to the ports.
  static constexpr int kCountBits = 12, kStartBits = 20;
  static constexpr uint32_t kCountMask = (uint32_t{1} << kCountBits) - 1;
  static constexpr size_t kMaxSetSize = kCountMask;

  std::shared_ptr<AddressIndex> index_;
  std::vector<uint32_t> set_of_;  // per destination number: start << 12 | length (0: no route)
  SetPool<int> sets_;              // the distinct port sets
  std::vector<uint32_t> order_;    // their numbers, in search order
};

}  // namespace rdmasim::net
