// A delay line (htsim's Pipe): delivers every packet a fixed time after it entered, in order.
#pragma once

#include <functional>
#include <utility>
#include <vector>

#include "sim/core/engine.h"
#include "sim/core/ring.h"
#include "sim/net/packet.h"

namespace rdmasim::net {

// Holds at most one pending engine event (for its earliest packet), however many packets
// are in flight. Used for link propagation and for a switch's forwarding latency.
class DelayLine {
 public:
  using Sink = std::function<void(PacketPtr)>;

  DelayLine(Engine& engine, Time delay) : engine_(engine), delay_(delay) {}
  DelayLine(const DelayLine&) = delete;
  DelayLine& operator=(const DelayLine&) = delete;
  ~DelayLine();

  // Engine context only. The sink must be set before the first push().
  void set_sink(Sink sink) { sink_ = std::move(sink); }
  void push(PacketPtr pkt);
  // A data packet (Transport or Cnp: not a PFC frame or an IB credit update) is on the line.
  bool holds_data() const;
  // Removes every packet in flight (a link going down) and returns them, oldest first.
  std::vector<PacketPtr> clear();

  Time delay() const { return delay_; }

 private:
  void deliver_head();
  void arm();

  Engine& engine_;
  Time delay_;
  Sink sink_;
  // (delivery time, packet), time ascending. A Ring: a fabric has a line per link direction
  // and per switch, mostly empty, and a std::deque's 512 B block each cost memory and cache.
  Ring<std::pair<Time, PacketPtr>> fifo_;
  EventId pending_;
};

}  // namespace rdmasim::net
