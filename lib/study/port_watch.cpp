#include "lib/study/port_watch.h"

#include <algorithm>

namespace rdmasim::study {

void PortWatch::on_transmit(const net::Packet& pkt, Time now) {
  total_ += pkt.wire_bytes;
  if (interval_ <= 0) return;
  const Time start = std::max<Time>(0, now - tx_time(rate_, pkt.wire_bytes));
  Time t = start;
  uint64_t left = pkt.wire_bytes;
  while (left > 0) {
    const Time bin_end = (t / interval_ + 1) * interval_;
    const auto bin = static_cast<uint32_t>(std::min<Time>(t / interval_, UINT32_MAX));
    if (bin_end >= now || now <= start) {
      add(bin, left);
      break;
    }
    const auto part = static_cast<uint64_t>(static_cast<double>(pkt.wire_bytes) * static_cast<double>(bin_end - t) /
                                            static_cast<double>(now - start));
    add(bin, std::min(part, left));
    left -= std::min(part, left);
    t = bin_end;
  }
}

void PortWatch::add(uint32_t bin, uint64_t bytes) {
  if (bins_.empty() || bins_.back().first != bin) bins_.emplace_back(bin, 0);
  bins_.back().second += bytes;
}

void PortWatch::on_pause(uint8_t cls, Time now, Time until) {
  std::vector<Span>& s = pauses_[cls & 7];
  if (!s.empty() && s.back().to > now) {
    s.back().to = now;   // this frame replaces the last one's end
    if (s.back().to == s.back().from) s.pop_back();
  }
  if (until <= now) return;                                  // XON (or zero quanta): resumed
  if (!s.empty() && s.back().to == now) s.back().to = until; // a refresh before expiry: one pause
  else s.push_back({now, until});
}

std::vector<Span> PortWatch::pauses(uint8_t cls, Time end) const {
  std::vector<Span> out;
  for (const Span& s : pauses_[cls & 7]) {
    if (s.from >= end) break;
    out.push_back({s.from, std::min(s.to, end)});
  }
  return out;
}

}  // namespace rdmasim::study
