// A host's NIC port on the wire: the Transmitter the HCA pushes into, and the receive side.
#pragma once

#include <array>
#include <functional>

#include "sim/core/engine.h"
#include "sim/net/egress_port.h"
#include "sim/net/packet.h"

namespace rdmasim::net {

// Transmit: one EgressPort (8 classes, strict priority, pause). ready(p) is true when class
// p has room and is not paused; send() never drops (control packets may exceed the limit).
// Receive: receive() counts the packet, applies PFC frames to the egress, and hands every
// other packet to the attached Node (the HCA) with port index 1. IbCredit packets raise the
// egress credit limit.
class HostPort : public Transmitter, public Node {
 public:
  HostPort(Engine& engine, EgressConfig config);

  // Transmitter
  bool ready(uint8_t priority) const override;
  void send(PacketPtr pkt) override;
  void set_ready_callback(std::function<void()> cb) override;
  Rate rate() const override { return egress_.rate(); }

  // Node: packets arriving from the link. Engine context only.
  void receive(PacketPtr pkt, int port) override;
  void attach(Node* receiver) { receiver_ = receiver; }
  // InfiniBand: credit-limit this port's egress by the peer's `peer_buffer_bytes` per VL,
  // and return credits for each packet handed to the receiver, advertising a receive
  // buffer of `own_buffer_bytes` per VL (the HCA consumes packets at once).
  void enable_credits(uint32_t peer_buffer_bytes, uint32_t own_buffer_bytes);

  EgressPort& egress() { return egress_; }
  const PortCounters& counters() const { return egress_.counters(); }
  uint64_t undelivered() const { return undelivered_; }  // arrived with no receiver attached

 private:
  EgressPort egress_;
  Node* receiver_ = nullptr;
  uint32_t own_buffer_bytes_ = 0;               // 0: no credit return
  std::array<uint32_t, kNumClasses> credits_freed_{};
  uint64_t undelivered_ = 0;
};

}  // namespace rdmasim::net
