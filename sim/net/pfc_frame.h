// PFC frames (IEEE 802.1Qbb) as a switch ingress or a host's receive side sends them.
#pragma once

#include <cstdint>
#include <memory>

#include "sim/core/time.h"
#include "sim/net/headers.h"
#include "sim/net/packet.h"

namespace rdmasim::net {

// The quanta of an XOFF: the longest pause a frame can ask for. 0 quanta is XON.
inline constexpr uint16_t kPfcXoffQuanta = 0xffff;

// A PFC frame for one class `cls` (0..7): its enable bit set and `quanta` (0xffff = XOFF,
// 0 = XON); a minimum-size frame (64 B, kEthernetMinWire on the wire), built at `now`.
// It goes in the sending port's control queue (EgressPort::enqueue), ahead of data.
inline PacketPtr make_pfc_frame(uint8_t cls, uint16_t quanta, Time now) {
  auto pfc = std::make_unique<Packet>();
  pfc->kind = PacketKind::PfcPause;
  pfc->priority = cls & 7;
  pfc->pause_enable_mask = static_cast<uint8_t>(1u << (cls & 7));
  pfc->pause_quanta[cls & 7] = quanta;
  pfc->wire_bytes = kEthernetMinWire;
  pfc->frame_bytes = 64;
  pfc->created = now;
  return pfc;
}

// How often an XOFF in force is re-sent from a port of `rate`: half the pause it asks for
// (one quantum = 512 bit times = 64 B at the port rate; 0xffff quanta = 335.5 us at
// 100 Gb/s), so the peer never resumes while the sender still wants it paused.
inline Time pfc_xoff_refresh_interval(Rate rate) { return tx_time(rate, 64ull * kPfcXoffQuanta) / 2; }

}  // namespace rdmasim::net
