#include "sim/net/delay_line.h"

namespace rdmasim::net {

DelayLine::~DelayLine() {
  if (pending_) engine_.cancel(pending_);
}

void DelayLine::push(PacketPtr pkt) {
  fifo_.emplace_back(engine_.now() + delay_, std::move(pkt));
  if (!pending_) arm();
}

std::vector<PacketPtr> DelayLine::clear() {
  if (pending_) engine_.cancel(pending_);
  pending_ = EventId{};
  std::vector<PacketPtr> out;
  for (auto& [t, p] : fifo_) out.push_back(std::move(p));
  fifo_.clear();
  return out;
}

void DelayLine::arm() {
  // The receiving node reads the packet first (a switch's forwarding, the HCA's headers).
  pending_ = engine_.schedule_at(fifo_.front().first, [this] { deliver_head(); },
                                 ReadFirst{fifo_.front().second.get()});
}

void DelayLine::deliver_head() {
  pending_ = EventId{};
  PacketPtr pkt = std::move(fifo_.front().second);
  fifo_.pop_front();
  // Re-arm before delivering: the sink may push into this line again.
  if (!fifo_.empty()) arm();
  sink_(std::move(pkt));
}

bool DelayLine::holds_data() const {
  for (const auto& entry : fifo_)
    if (is_data(*entry.second)) return true;
  return false;
}

}  // namespace rdmasim::net
