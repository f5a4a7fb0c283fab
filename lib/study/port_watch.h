// What a study watches on each fabric egress port while it runs, without engine events (a
// net::PacketTap, so the run's events are the same watched or not): the wire bytes sent per
// sampling period, stored sparsely (only periods that sent something), and the intervals
// each traffic class spent paused by PFC.
#pragma once

#include <array>
#include <cstdint>
#include <utility>
#include <vector>

#include "sim/core/time.h"
#include "sim/net/egress_port.h"

namespace rdmasim::study {

struct Span {
  Time from = 0, to = 0;   // [from, to)
};

class PortWatch final : public net::PacketTap {
 public:
  // `link_interval` 0: no byte series (pauses only). `rate`: the port's line rate.
  PortWatch(Time link_interval, Rate rate) : interval_(link_interval), rate_(rate) {}

  // A packet's wire bytes count in the periods it was serializing in, split in proportion
  // to the time spent in each, so no period holds more than its line rate allows.
  void on_transmit(const net::Packet& pkt, Time now) override;
  // Each frame replaces the class's pause end; contiguous pauses merge into one span.
  void on_pause(uint8_t cls, Time now, Time until) override;
  // Without a byte series the port need not call on_transmit (tx_bytes() then stays 0).
  bool wants_transmits() const override { return interval_ > 0; }

  // (period index, wire bytes) in increasing period order.
  const std::vector<std::pair<uint32_t, uint64_t>>& tx_bins() const { return bins_; }
  uint64_t tx_bytes() const { return total_; }
  // The spans of class `cls`, the last one cut at `end` (a pause still in force then).
  std::vector<Span> pauses(uint8_t cls, Time end) const;

 private:
  void add(uint32_t bin, uint64_t bytes);

  Time interval_;
  Rate rate_;
  uint64_t total_ = 0;
  std::vector<std::pair<uint32_t, uint64_t>> bins_;
  std::array<std::vector<Span>, 8> pauses_;
};

}  // namespace rdmasim::study
