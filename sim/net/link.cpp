#include "sim/net/link.h"

#include <cmath>

namespace rdmasim::net {

double loss_probability(const LinkFaults& f, uint32_t wire_bytes) {
  // (1 - ber)^bits computed as exp(bits * log1p(-ber)) to stay exact for tiny ber.
  const double bits = 8.0 * wire_bytes;
  const double survive_ber = f.ber > 0 ? std::exp(bits * std::log1p(-f.ber)) : 1.0;
  return 1.0 - (1.0 - f.loss_rate) * survive_ber;
}

LinkDirection::LinkDirection(Engine& engine, EgressPort& from, Node& to, int to_port, Time latency,
                             LinkFaults faults)
    : engine_(engine),
      from_(from),
      latency_(latency),
      faults_(std::move(faults)),
      lossy_(faults_.loss_rate > 0 || faults_.ber > 0),
      pipe_(engine, latency + (to.cut_through_header_bytes()
                                   ? tx_time(from.rate(), to.cut_through_header_bytes())
                                   : 0)) {
  const uint32_t header = to.cut_through_header_bytes();
  if (header) from.set_early_handoff(latency);
  pipe_.set_sink([&to, to_port](PacketPtr pkt) { to.receive(std::move(pkt), to_port); });
  from.set_sink([this](PacketPtr pkt) { from_serializer(std::move(pkt)); });
}

void LinkDirection::from_serializer(PacketPtr pkt) {
  if (!up_) {
    ++counters_.down_drops;
    counters_.down_drop_bytes += pkt->wire_bytes;
    return;
  }
  if (lossy_ && engine_.rng(faults_.rng_stream).bernoulli(loss_probability(faults_, pkt->wire_bytes))) {
    ++counters_.lost_packets;
    counters_.lost_bytes += pkt->wire_bytes;
    return;
  }
  pipe_.push(std::move(pkt));
}

void LinkDirection::set_up(bool up) {
  if (up == up_) return;
  up_ = up;
  if (!up) {
    for (PacketPtr& p : pipe_.clear()) {
      ++counters_.down_drops;
      counters_.down_drop_bytes += p->wire_bytes;
    }
  }
  from_.set_link_up(up);
}

}  // namespace rdmasim::net
