// A link direction: an egress port's serializer feeding a propagation DelayLine into a Node.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "sim/core/engine.h"
#include "sim/net/delay_line.h"
#include "sim/net/egress_port.h"
#include "sim/net/packet.h"

namespace rdmasim::net {

// Random loss on one link direction, drawn per packet (data, PFC and IB credit frames alike)
// from the engine's named stream `rng_stream`, so a run is reproducible from its seed.
// A packet is lost with probability 1 - (1 - loss_rate) * (1 - ber)^(8 * wire_bytes):
// independent bit errors at rate `ber` corrupt a frame of b bits with 1 - (1 - ber)^b, and the
// receiver's FCS/ICRC check discards it.
struct LinkFaults {
  double loss_rate = 0;   // per packet, [0, 1]
  double ber = 0;         // per bit, [0, 1)
  std::string rng_stream = "link";
};

struct LinkCounters {
  uint64_t lost_packets = 0, lost_bytes = 0;   // random loss and bit errors
  uint64_t down_drops = 0, down_drop_bytes = 0; // on the wire when the link went down, or sent while down
};

// Loss probability of a packet of `wire_bytes` under `f` (the formula above).
double loss_probability(const LinkFaults& f, uint32_t wire_bytes);

// Connects `from` (the serializer) through `latency` of propagation to `to`'s port
// `to_port`. A packet arrives at tx_time(rate, wire_bytes) + latency after it starts
// serializing (store and forward: the receiver sees it when its last bit arrives), unless
// the receiver cuts through (Node::cut_through_header_bytes() > 0): then it is handed over
// when its first `h` bytes have arrived, tx_time(rate, h) + latency after it started, with
// Packet::last_bit_at telling the receiver when the rest will have arrived.
class LinkDirection {
 public:
  LinkDirection(Engine& engine, EgressPort& from, Node& to, int to_port, Time latency,
                LinkFaults faults = {});
  Time latency() const { return latency_; }

  // Takes the direction down (packets on the wire are lost; the egress drops what it holds
  // and everything it is given until up again) or up. Counted in counters() and in the
  // egress port's link_down_drops.
  void set_up(bool up);
  bool up() const { return up_; }
  const LinkCounters& counters() const { return counters_; }
  // A data packet is on the wire.
  bool holds_data() const { return pipe_.holds_data(); }
  const LinkFaults& faults() const { return faults_; }

 private:
  void from_serializer(PacketPtr pkt);

  Engine& engine_;
  EgressPort& from_;
  Time latency_;
  LinkFaults faults_;
  bool lossy_;
  bool up_ = true;
  DelayLine pipe_;
  LinkCounters counters_;
};

}  // namespace rdmasim::net
