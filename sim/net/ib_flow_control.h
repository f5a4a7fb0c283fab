// InfiniBand link-level flow control at one port (IBTA vol. 1, 7.9): the receive side of
// the port's link advertises, per VL, a flow-control credit limit FCCL = bytes it has
// accounted for (ABR, received and then freed) + its buffer; the transmit side (the port's
// EgressPort) sends while FCTBS + packet <= FCCL. Both travel in flow-control packets
// (FCPs, PacketKind::IbCredit): `credits` is the sender's FCCL for the opposite direction,
// `fctbs` the total bytes its egress has sent on that VL.
//
// - An FCP goes out each time the port frees buffer space (a packet forwarded or handed to
//   the HCA), carrying the new FCCL.
// - A data packet lost on the link never reaches the buffer, so it would never be freed
//   and its credit would leak. The peer's FCTBS repairs that, as IBTA's ABR := FCTBS does:
//   when an FCP arrives, bytes the peer counts as sent that never arrived are counted as
//   received and freed at once, and the new FCCL is advertised.
// - IBTA ports send FCPs periodically (7.9.4), so a lost FCP is followed by another. The
//   model does so only where packets can be lost (set_periodic: a link with loss, bit
//   errors or a down/up schedule), every kFcpPeriodBytes byte times at the port's rate,
//   for every VL that has carried data, and stops after kFcpIdlePeriods periods with no
//   traffic on the port, so that a simulation with nothing left to do ends. A port whose
//   egress waits for credit keeps sending them (up to kFcpStalledPeriods idle periods), and
//   marks them `fc_waiting` (a simulator-only field, not an IBTA one) so that a peer that
//   had stopped starts again and re-advertises its FCCL, whose last update may have been
//   lost.
#pragma once

#include <array>
#include <cstdint>

#include "sim/core/engine.h"
#include "sim/net/egress_port.h"
#include "sim/net/packet.h"

namespace rdmasim::net {

// The periodic FCP interval in byte times at the port's rate: IBTA's 65,536 symbol times,
// taking a symbol as one byte of the link's data rate (5.24 us at 100 Gb/s).
inline constexpr uint64_t kFcpPeriodBytes = 65536;
// Idle periods (no packet sent or received by the port) after which periodic FCPs stop;
// with packets waiting for credit, the longer limit (a dead link: give up, so runs end).
inline constexpr int kFcpIdlePeriods = 8;
inline constexpr int kFcpStalledPeriods = 1000;

class IbFlowControl {
 public:
  // `egress`: the port's transmit side (its FCTBS, and where FCPs are queued);
  // `buffer_bytes`: the receive buffer per VL this port advertises.
  IbFlowControl(Engine& engine, EgressPort& egress, uint32_t buffer_bytes);
  IbFlowControl(const IbFlowControl&) = delete;
  IbFlowControl& operator=(const IbFlowControl&) = delete;
  ~IbFlowControl();

  // A data packet of `bytes` arrived on VL `vl` (before it is buffered or dropped).
  void received(uint8_t vl, uint32_t bytes);
  // `bytes` of VL `vl` left the receive buffer: advertise the new FCCL.
  void freed(uint8_t vl, uint32_t bytes);
  // A data packet was queued on this port's egress (starts the periodic FCPs if stopped).
  void queued() {
    if (periodic_ && !timer_) arm();
  }
  // An FCP arrived from the peer: raise this port's egress limit, and account for data the
  // peer sent that never arrived.
  void on_fcp(const Packet& fcp);
  // Periodic FCPs on (lossy links) or off.
  void set_periodic(bool on);

  uint32_t fccl(uint8_t vl) const { return freed_[vl & 7] + buffer_bytes_; }
  uint64_t lost_bytes_repaired() const { return repaired_; }
  uint64_t fcps_sent() const { return fcps_sent_; }

 private:
  PacketPtr make_fcp(uint8_t vl) const;
  void send(uint8_t vl);
  void arm();
  void tick();

  Engine& engine_;
  EgressPort& egress_;
  uint32_t buffer_bytes_;
  std::array<uint32_t, kNumClasses> freed_{};     // ABR as freed: bytes accounted for, mod 2^32
  std::array<uint32_t, kNumClasses> received_{};  // bytes arrived or repaired, mod 2^32
  std::array<bool, kNumClasses> active_{};        // VL carried data either way
  bool periodic_ = false;
  EventId timer_;
  int idle_ = 0;
  uint64_t activity_ = 0, activity_at_tick_ = 0;
  uint64_t repaired_ = 0, fcps_sent_ = 0;
};

}  // namespace rdmasim::net
