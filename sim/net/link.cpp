#include "sim/net/link.h"

namespace rdmasim::net {

LinkDirection::LinkDirection(Engine& engine, EgressPort& from, Node& to, int to_port, Time latency)
    : pipe_(engine, latency) {
  pipe_.set_sink([&to, to_port](PacketPtr pkt) { to.receive(std::move(pkt), to_port); });
  from.set_sink([this](PacketPtr pkt) { pipe_.push(std::move(pkt)); });
}

}  // namespace rdmasim::net
