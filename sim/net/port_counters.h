// Counters of one port (both directions), as reported by Fabric::counters().
#pragma once

#include <array>
#include <cstdint>

namespace rdmasim::net {

struct PortCounters {
  uint64_t tx_packets = 0, tx_bytes = 0;   // wire bytes that finished serializing
  uint64_t rx_packets = 0, rx_bytes = 0;   // wire bytes that arrived from the link
  uint64_t drops = 0, drop_bytes = 0;      // egress queue overflow
  uint64_t ecn_marked = 0;                 // CE set at enqueue
  uint64_t pauses_received = 0;            // PFC frames that arrived (XOFF and XON)
  uint64_t pauses_sent = 0;                // PFC frames sent from this port
  std::array<uint64_t, 8> drops_per_class{};
};

}  // namespace rdmasim::net
