// A test Node that records every packet it receives and when.
#pragma once

#include <vector>

#include "sim/core/engine.h"
#include "sim/net/headers.h"
#include "sim/net/packet.h"

namespace rdmasim::net::test {

struct Arrival {
  Time at;
  int port;
  PacketPtr pkt;
};

class Recorder : public Node {
 public:
  explicit Recorder(Engine& e) : engine_(e) {}
  void receive(PacketPtr pkt, int port) override {
    arrivals.push_back({engine_.now(), port, std::move(pkt)});
  }
  std::vector<Arrival> arrivals;

 private:
  Engine& engine_;
};

// A RoCEv2 packet with `payload` bytes: wire = payload + 44 B headers + 38 B framing.
inline PacketPtr roce_packet(uint32_t payload, uint8_t prio = 0, Address src = 1, Address dst = 2,
                             uint64_t id = 0) {
  auto p = std::make_unique<Packet>();
  p->id = id;
  p->src = src;
  p->dst = dst;
  p->priority = prio;
  p->wire_bytes = base_wire_bytes(LinkLayer::RoCEv2, payload);
  return p;
}

}  // namespace rdmasim::net::test
