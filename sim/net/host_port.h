// A host's NIC port on the wire: the Transmitter the HCA pushes into, and the receive side.
#pragma once

#include <functional>

#include "sim/core/engine.h"
#include "sim/net/egress_port.h"
#include "sim/net/packet.h"

namespace rdmasim::net {

// Transmit: one EgressPort (8 classes, strict priority, pause). ready(p) is true when class
// p has room and is not paused; send() never drops (control packets may exceed the limit).
// Receive: receive() counts the packet, applies PFC frames to the egress, and hands every
// other packet to the attached Node (the HCA) with port index 1.
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

  EgressPort& egress() { return egress_; }
  const PortCounters& counters() const { return egress_.counters(); }
  uint64_t undelivered() const { return undelivered_; }  // arrived with no receiver attached

 private:
  EgressPort egress_;
  Node* receiver_ = nullptr;
  uint64_t undelivered_ = 0;
};

}  // namespace rdmasim::net
