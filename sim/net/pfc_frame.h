// PFC frames (IEEE 802.1Qbb) as a switch ingress or a host's receive side sends them.
#pragma once

#include <array>
#include <cstdint>
#include <memory>

#include "sim/core/engine.h"
#include "sim/core/time.h"
#include "sim/net/egress_port.h"
#include "sim/net/headers.h"
#include "sim/net/packet.h"

namespace rdmasim::net {

// The quanta of an XOFF: the longest pause a frame can ask for. 0 quanta is XON.
inline constexpr uint16_t kPfcXoffQuanta = 0xffff;

// A PFC frame for one class `cls` (0..7): its enable bit set and `quanta` (0xffff = XOFF,
// 0 = XON); a minimum-size frame (64 B, kEthernetMinWire on the wire), built at `now`.
// It goes in the sending port's control queue (EgressPort::enqueue), ahead of data.
inline PacketPtr make_pfc_frame(uint8_t cls, uint16_t quanta, Time now) {
  auto pfc = std::make_unique<Packet>();
  pfc->kind = PacketKind::PfcPause;
  pfc->priority = cls & 7;
  pfc->pause_enable_mask = static_cast<uint8_t>(1u << (cls & 7));
  pfc->pause_quanta[cls & 7] = quanta;
  pfc->wire_bytes = kEthernetMinWire;
  pfc->frame_bytes = 64;
  pfc->created = now;
  return pfc;
}

// How often an XOFF in force is re-sent from a port of `rate`: half the pause it asks for
// (one quantum = 512 bit times = 64 B at the port rate; 0xffff quanta = 335.5 us at
// 100 Gb/s), so the peer never resumes while the sender still wants it paused.
inline Time pfc_xoff_refresh_interval(Rate rate) { return tx_time(rate, 64ull * kPfcXoffQuanta) / 2; }

// The PFC a receiving port sends, per class, on its own egress: xoff() sends an XOFF and
// re-sends it every pfc_xoff_refresh_interval while it holds; xon() ends it with an XON.
// The owner decides when (its thresholds); both are no-ops when already in that state.
class PfcSender {
 public:
  PfcSender(Engine& engine, EgressPort& egress) : engine_(engine), egress_(egress) {}
  PfcSender(const PfcSender&) = delete;
  PfcSender& operator=(const PfcSender&) = delete;
  ~PfcSender() {
    for (EventId id : refresh_)
      if (id) engine_.cancel(id);
  }

  bool xoff_sent(uint8_t cls) const { return sent_[cls & 7]; }
  void xoff(uint8_t cls) {
    if (sent_[cls & 7]) return;
    sent_[cls & 7] = true;
    send_xoff(cls & 7);
  }
  void xon(uint8_t cls) {
    const uint8_t c = cls & 7;
    if (!sent_[c]) return;
    sent_[c] = false;
    if (refresh_[c]) engine_.cancel(refresh_[c]);
    refresh_[c] = EventId{};
    egress_.enqueue(make_pfc_frame(c, 0, engine_.now()));
  }

 private:
  void send_xoff(uint8_t c) {
    egress_.enqueue(make_pfc_frame(c, kPfcXoffQuanta, engine_.now()));
    refresh_[c] = engine_.schedule_in(pfc_xoff_refresh_interval(egress_.rate()), [this, c] {
      refresh_[c] = EventId{};
      if (sent_[c]) send_xoff(c);
    });
  }

  Engine& engine_;
  EgressPort& egress_;
  std::array<bool, kNumClasses> sent_{};
  std::array<EventId, kNumClasses> refresh_{};
};

}  // namespace rdmasim::net
