// Counters of one port (both directions), as reported by Fabric::counters().
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "sim/core/time.h"

namespace rdmasim::net {

// One traffic class (VL on InfiniBand) of a port: what a packet of the class may change, in
// one cache line (at 1024 hosts the ports do not fit in the cache, and a packet's counting
// was two or three lines of the port's).
struct alignas(64) ClassCounters {
  uint64_t tx_packets = 0, tx_bytes = 0;
  uint64_t rx_packets = 0, rx_bytes = 0;
  uint64_t queue_max_bytes = 0;    // egress queue high-water mark
  uint64_t drops = 0;
  uint64_t ecn_marked = 0;
};
static_assert(sizeof(ClassCounters) == 64, "a class's counters are one cache line");

struct PortCounters {
  uint64_t tx_packets = 0, tx_bytes = 0;   // wire bytes that finished serializing
  uint64_t rx_packets = 0, rx_bytes = 0;   // wire bytes that arrived from the link
  uint64_t drops = 0, drop_bytes = 0;      // egress queue overflow (incl. shared-buffer admission)
  uint64_t ecn_marked = 0;                 // CE set at enqueue
  uint64_t pauses_received = 0;            // PFC frames that arrived (XOFF and XON)
  uint64_t pauses_sent = 0;                // PFC frames sent from this port
  uint64_t link_down_drops = 0;            // dropped because the link was down
  uint64_t watchdog_drops = 0;             // dropped by the PFC watchdog (storm on this port)
  uint64_t watchdog_storms = 0;            // times the PFC watchdog fired on this port
  uint64_t headroom_drops = 0, headroom_drop_bytes = 0;  // ingress: PFC headroom overflowed (also in drops)
  uint64_t headroom_max_bytes = 0;         // ingress: most bytes one class held in headroom
  std::array<ClassCounters, 8> classes{};  // per traffic class (VL on InfiniBand)
  // PFC frames sent and received per class (kept apart: they are not per packet).
  std::array<uint64_t, 8> class_pauses_sent{}, class_pauses_received{};
};

// Egress queue depth sampled every `interval` (0 = off): sample i is the depth per class at
// start + i * interval (the depth just before any change at that instant). Filled lazily
// when the queue changes, so it adds no engine events (EgressPort::flush_series fills it up
// to now); keeps the first `max_samples`.
struct QueueSeries {
  Time interval = 0;
  Time start = 0;
  size_t max_samples = 10000;
  std::vector<std::array<uint32_t, 8>> samples;
};

}  // namespace rdmasim::net
