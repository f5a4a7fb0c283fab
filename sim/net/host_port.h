// A host's NIC port on the wire: the Transmitter the HCA pushes into, and the receive side.
#pragma once

#include <array>
#include <cstdint>
#include <functional>

#include "sim/core/engine.h"
#include "sim/core/ring.h"
#include "sim/net/egress_port.h"
#include "sim/net/ib_flow_control.h"
#include "sim/net/pfc_frame.h"
#include "sim/net/packet.h"

namespace rdmasim::net {

// The NIC's receive buffer, between the wire and the HCA. Off (drain_rate 0) by default:
// the host takes every packet the instant it arrives, so the port never sends a pause.
// On: data packets (transport and CNP) wait in one arrival-order buffer of `buffer_bytes`
// that drains toward the host at `drain_rate` (the PCIe / host DMA rate), one packet after
// another, each taking tx_time(drain_rate, wire bytes); a packet is handed to the HCA when it
// has drained. PFC and IB credit frames are acted on at once (the MAC, not the host).
// Bytes are counted per traffic class (VL on InfiniBand), wire bytes as on the link.
// - A packet that would take the buffer beyond `buffer_bytes` is dropped and counted
//   (PortCounters::drops, classes[c].drops, drop_bytes, and RxBufferCounters).
// - With `pfc`, a class in `class_mask` is lossless: when its buffered bytes exceed
//   xoff_bytes the port sends XOFF (quanta 0xffff) for that class on its own egress
//   (control queue: it takes link time and can be lost on the link, as a switch's), re-sent
//   every half pause time while XOFF holds; when they fall to xon_bytes or below, XON
//   (quanta 0). The bytes above xoff are the headroom for what arrives meanwhile.
struct HostRxConfig {
  Rate drain_rate{};                  // 0 bps: infinitely fast (no buffer)
  uint64_t buffer_bytes = 256 * 1024;
  bool pfc = false;
  uint64_t xoff_bytes = 128 * 1024;
  uint64_t xon_bytes = 64 * 1024;
  uint8_t class_mask = 0xff;          // lossless classes when `pfc`
};

// What the receive buffer did (all zero while it is off).
struct RxBufferCounters {
  uint64_t drops = 0, drop_bytes = 0;                 // overflowed (also in PortCounters::drops)
  uint64_t max_bytes = 0;                             // high-water mark, all classes
  std::array<uint64_t, kNumClasses> max_bytes_per_class{};
};

// Transmit: one EgressPort (8 classes, strict priority, pause). ready(p) is true when class
// p has room and is not paused; send() never drops (control packets may exceed the limit).
// Receive: receive() counts the packet, applies PFC frames to the egress, and hands every
// other packet to the attached Node (the HCA) with port index 1, at once or through the
// receive buffer (HostRxConfig). IbCredit packets raise the egress credit limit.
class HostPort : public Transmitter, public Node {
 public:
  HostPort(Engine& engine, EgressConfig config, HostRxConfig rx = {});
  HostPort(const HostPort&) = delete;
  HostPort& operator=(const HostPort&) = delete;
  ~HostPort() override;

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

  // InfiniBand: the port's link-level flow control (null until enable_credits).
  IbFlowControl* flow_control() { return fc_.get(); }
  EgressPort& egress() { return egress_; }
  const EgressPort& egress() const { return egress_; }
  const PortCounters& counters() const { return egress_.counters(); }
  uint64_t undelivered() const { return undelivered_; }  // arrived with no receiver attached
  // A data packet waits to be sent or sits in the receive buffer.
  bool holds_data() const { return egress_.holds_data() || !rx_queue_.empty(); }

  // The receive buffer (see HostRxConfig).
  const HostRxConfig& rx_config() const { return rx_; }
  bool rx_buffered() const { return rx_.drain_rate.bps != 0; }
  uint64_t rx_buffer_bytes() const { return rx_bytes_; }
  uint64_t rx_buffer_bytes(uint8_t cls) const { return rx_class_bytes_[cls & 7]; }
  bool xoff_sent(uint8_t cls) const { return pfc_.xoff_sent(cls); }
  const RxBufferCounters& rx_buffer_counters() const { return rx_counters_; }

 private:
  struct Buffered {
    PacketPtr pkt;
    uint8_t cls;
  };
  bool lossless(uint8_t cls) const { return rx_.pfc && (rx_.class_mask >> (cls & 7) & 1); }
  void buffer(PacketPtr pkt, uint8_t cls);
  void start_drain();
  void drained();
  void deliver(PacketPtr pkt, uint8_t cls);

  Engine& engine_;
  EgressPort egress_;
  HostRxConfig rx_;
  Node* receiver_ = nullptr;
  std::unique_ptr<IbFlowControl> fc_;           // InfiniBand: credit return (null: none)
  uint64_t undelivered_ = 0;
  // Receive buffer.
  Ring<Buffered> rx_queue_;
  uint64_t rx_bytes_ = 0;
  std::array<uint64_t, kNumClasses> rx_class_bytes_{};
  EventId drain_done_;
  PfcSender pfc_;                               // XOFF/XON sent for the receive buffer
  RxBufferCounters rx_counters_;
};

}  // namespace rdmasim::net
