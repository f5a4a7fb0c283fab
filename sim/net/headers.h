// Per-link-layer wire overheads: how many bytes a packet with N payload bytes occupies.
#pragma once

#include <cstdint>

#include "sim/net/packet.h"

namespace rdmasim::net {

// Ethernet framing on the wire: 14 B MAC + 4 B FCS + 8 B preamble/SFD + 12 B IFG = 38 B.
inline constexpr uint32_t kEthernetWireOverhead = 14 + 4 + 8 + 12;
// RoCEv2 headers inside the frame: 20 B IPv4 + 8 B UDP + 12 B BTH + 4 B ICRC = 44 B.
inline constexpr uint32_t kRoceHeaders = 20 + 8 + 12 + 4;
// InfiniBand local packet: 8 B LRH + 12 B BTH + 4 B ICRC + 2 B VCRC = 26 B.
inline constexpr uint32_t kIbHeaders = 8 + 12 + 4 + 2;
// The smallest Ethernet frame on the wire (64 B frame + preamble + IFG), e.g. a PFC frame.
inline constexpr uint32_t kEthernetMinWire = 64 + 8 + 12;

// An InfiniBand flow-control packet: 4 B (op, FCTBS, VL, FCCL) + 2 B LPCRC.
inline constexpr uint32_t kIbFlowControlBytes = 6;

// Wire bytes of a base transport packet (BTH only, no extension headers) with `payload` B.
constexpr uint32_t base_wire_bytes(LinkLayer ll, uint32_t payload) {
  switch (ll) {
    case LinkLayer::InfiniBand: return payload + kIbHeaders;
    case LinkLayer::RoCEv2:
    case LinkLayer::IWarp: break;
  }
  return payload + kRoceHeaders + kEthernetWireOverhead;
}

}  // namespace rdmasim::net
