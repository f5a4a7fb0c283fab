// A link direction: an egress port's serializer feeding a propagation DelayLine into a Node.
#pragma once

#include <memory>

#include "sim/core/engine.h"
#include "sim/net/delay_line.h"
#include "sim/net/egress_port.h"
#include "sim/net/packet.h"

namespace rdmasim::net {

// Connects `from` (the serializer) through `latency` of propagation to `to`'s port
// `to_port`. A packet arrives at tx_time(rate, wire_bytes) + latency after it starts
// serializing (store and forward: the receiver sees it when its last bit arrives).
class LinkDirection {
 public:
  LinkDirection(Engine& engine, EgressPort& from, Node& to, int to_port, Time latency);
  Time latency() const { return pipe_.delay(); }

 private:
  DelayLine pipe_;
};

}  // namespace rdmasim::net
