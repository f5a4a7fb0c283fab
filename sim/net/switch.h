// A switch: N ports, a forwarding table with ECMP, forwarding latency, PFC on ingress.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "sim/core/engine.h"
#include "sim/net/delay_line.h"
#include "sim/net/egress_port.h"
#include "sim/net/ib_flow_control.h"
#include "sim/net/pfc_frame.h"
#include "sim/net/packet.h"
#include "sim/net/route_table.h"

namespace rdmasim::net {

// PFC on ingress: when the bytes that arrived on (port, class) and are still buffered
// exceed xoff, the switch sends XOFF (quanta 0xffff) back out of that port; when they fall
// to xon or below, XON (quanta 0). While XOFF holds, it is re-sent every half pause time
// (0xffff quanta = 335.5 us at 100 Gb/s), so the upstream never resumes early.
//
// Lossless classes: those in `class_mask` (all 8 by default); the others are lossy (no
// XOFF, dynamic threshold in a shared buffer).
//
// Lossless means lossless: a lossless class is admitted at its ingress (port, class), never
// by an egress limit (the egress class limit and the dynamic threshold apply to lossy
// classes only), as in a shared-buffer switch's MMU (the HPCC simulator's SwitchMmu:
// ingress admission, egress admission always true for lossless traffic). A packet counts
// against its (ingress port, class) from arrival until it leaves the egress queue.
//
// Headroom: what may still arrive on (ingress port, lossless class) after XOFF is decided.
// A packet goes to headroom when XOFF is in force (with `headroom_limited`) or when the
// shared pool cannot take it (with a shared buffer); a packet in headroom raises XOFF.
// When `headroom_limited`, a packet that would take the headroom beyond its size
// (pfc_headroom_bytes or set_headroom per port) is dropped and counted as `headroom_drops`
// (and in `drops`) on the ingress port: sim/topo rejects a headroom below the link's
// pfc_headroom_bytes, so this only happens to hand-built switches. Headroom is reserved
// out of a shared buffer: the pool shrinks by headroom x lossless classes per port, and
// packets in headroom do not draw from the pool. When not limited (the default), nothing
// is reserved and the headroom has no bound. XON goes once the (port, class) is at or
// below xon with its headroom empty.
struct PfcConfig {
  bool enabled = false;
  uint64_t xoff_bytes = 0;
  uint64_t xon_bytes = 0;
  uint8_t class_mask = 0xff;
  bool headroom_limited = false;
  uint64_t headroom_bytes = 0;   // per (port, lossless class) unless set_headroom
  bool headroom_auto = false;    // sim/topo sets each port's headroom from its link (below)
};

// The headroom one (ingress port, class) needs so that nothing is lost after XOFF, for a
// link of `rate` and one-way propagation `latency` carrying frames of at most
// `max_frame_wire` bytes, with a peer that takes `response_bits` bit times to react to a
// pause (IEEE 802.1Qbb; its delay model as in Annex N):
//   XOFF is decided when the last bit of a packet arrives (t0). The switch's egress toward
//   the peer may have just started a frame: max_frame_wire / rate until the PFC frame can go
//   (D-Max-Frame), then the PFC frame itself, kEthernetMinWire bytes (D-Pause); it
//   propagates for `latency` (D-Cable); the peer reacts after response_bits (D-Resp) and
//   finishes the frame it is sending, max_frame_wire (D-Max-No-Drop-Frame); the last bit
//   of that frame arrives `latency` later (D-Cable). Data arrives at up to `rate` all along:
//     headroom = rate x (2 x latency) + 2 x max_frame_wire + kEthernetMinWire + response_bits / 8.
//   PHY/interface latency (D-Intf) is part of the link latency in this model.
uint64_t pfc_headroom_bytes(Rate rate, Time latency, uint32_t max_frame_wire, uint64_t response_bits);

// IEEE 802.1Qbb's upper bound on a peer's pause response (D-Resp, bit times) at `rate`:
// 30720 (10 Gb/s), 40960 (25), 60416 (40), 201728 (100), 463360 (400); a rate between two
// of them takes the higher one, above 400 Gb/s the 400 Gb/s value scaled by rate / 400.
uint64_t pfc_response_bits(Rate rate);

// Shared switch buffer (off when total_bytes is 0: each egress queue only has its class
// limit). Each (egress port, class) queue has `reserved_bytes` of its own; beyond that it
// draws from the shared pool, total - reserved * ports * 8, and a lossy queue may hold at
// most alpha * (free shared bytes) there (dynamic threshold, Choudhury & Hahne 1998): a
// packet is admitted while excess + size <= alpha * (shared - shared used). alpha 0 means
// no dynamic limit (only the pool). A lossless class (PFC) is accounted per ingress (port,
// class) instead: its reserve, then the pool; what the pool cannot take goes to headroom.
struct BufferConfig {
  uint64_t total_bytes = 0;
  uint64_t reserved_bytes = 0;
  double alpha = 0;
};

struct SwitchConfig {
  std::string name = "sw0";
  Time forwarding_latency = ns(200);  // from last bit in (cut-through: header in) to the egress queue
  // Cut-through: forward once the first `cut_through_header_bytes` have arrived instead of
  // the whole packet; the egress still cannot finish a packet before its last bit arrived
  // (so from a slower into a faster link it behaves like store and forward).
  bool cut_through = false;
  uint32_t cut_through_header_bytes = 64;
  EgressConfig egress;                // template for every port; add_port() sets the rate
  PfcConfig pfc;
  BufferConfig buffer;
  // InfiniBand: receive buffer per (ingress port, VL). Non-zero makes the switch return
  // credits upstream (an IbCredit packet with the new FCCL) as packets leave its buffer,
  // and credit-limit its own egress ports; see EgressPort::enable_credits.
  uint32_t ib_vl_buffer_bytes = 0;
  // Mixed into the ECMP hash. Real switches seed their hash per device; with one seed
  // for all, every tier of a fat tree makes the same choice and half the cores idle
  // (hash polarization). sim/topo gives each switch its own.
  uint64_t ecmp_seed = 0;
  // How an egress class queue serves the ingress ports feeding it: round robin, one packet
  // per ingress port in turn (an input-arbitrated switch: crossbar/VOQ, as InfiniBand
  // switches are built), or one FIFO in arrival order (a shared-memory output queue). Under
  // PFC a FIFO hands each resumed ingress a burst of xoff - xon + headroom bytes at once,
  // so at any instant the senders of an incast differ by up to one burst. Off by default:
  // with it on, the DCQCN two-flow scenario (tests/unit/cc) moves out of its 10% band
  // (42.4 + 55.4 Gb/s), not yet understood.
  bool ingress_round_robin = false;
  // Adaptive routing (NVIDIA Quantum InfiniBand AR, Spectrum-X RoCE): a packet with several
  // equal-cost ports leaves by the one whose queue for its class holds the fewest bytes,
  // packet by packet, instead of by flow hash. Ties go to the first such port at or after a
  // per-switch index that advances by one each time a tie is broken (deterministic, and
  // spreading equal queues). One QP's packets then arrive out of order: the NICs must keep
  // them (nic::LossRecoveryConfig::nack_gaps false).
  bool adaptive_routing = false;
};

class Switch : public Node {
 public:
  Switch(Engine& engine, SwitchConfig config);
  Switch(const Switch&) = delete;
  Switch& operator=(const Switch&) = delete;
  ~Switch() override;

  const std::string& name() const { return config_.name; }
  // Adds a port with its own egress at `rate`; returns its index (0, 1, ...). With IB
  // credits, `peer_buffer_bytes` is the receive buffer per VL of the node at the far end.
  int add_port(Rate rate, uint32_t peer_buffer_bytes = 0);
  size_t num_ports() const { return ports_.size(); }
  // A data packet is in the forwarding pipeline or an egress port.
  bool holds_data() const;
  EgressPort& port(int i) { return *ports_[i].egress; }
  // InfiniBand: the port's link-level flow control (null on Ethernet).
  IbFlowControl* flow_control(int i) { return ports_[i].fc.get(); }
  const EgressPort& port(int i) const { return *ports_[i].egress; }
  const PortCounters& counters(int i) const { return ports_[i].egress->counters(); }
  uint64_t unroutable() const { return unroutable_; }
  // Shared buffer: bytes of the shared pool in use, and the limit a queue's excess over its
  // reserve has now (alpha * free, or the free pool when alpha is 0).
  uint64_t shared_used() const { return shared_used_; }
  uint64_t shared_size() const;
  // The limit for a lossy queue's excess (alpha x free, or free when alpha is 0); a
  // lossless class (PFC) gets the free pool.
  double dynamic_limit(uint8_t cls = 0) const;
  bool lossless(uint8_t cls) const { return config_.pfc.enabled && (config_.pfc.class_mask >> (cls & 7) & 1); }
  // PFC headroom of port `port` per lossless class (see PfcConfig); 0 when not limited.
  void set_headroom(int port, uint64_t bytes) { ports_[port].headroom = bytes; }
  uint64_t headroom(int port) const { return config_.pfc.headroom_limited ? ports_[port].headroom : 0; }
  uint64_t headroom_used(int port, uint8_t cls) const { return ports_[port].classes[cls & 7].headroom_used; }

  // Packets to `dst` leave by one of `ports`; with several, by hash of (src, dst,
  // udp_src_port, flow_hash), so one flow always takes one path (with adaptive_routing, by
  // the shortest queue; see SwitchConfig).
  void set_route(Address dst, const std::vector<int>& ports) { routes_.set(dst, ports); }
  // The destination numbering this switch's table shares with the fabric's other switches
  // (RouteTable::use_index); before any set_route.
  void use_address_index(std::shared_ptr<AddressIndex> index) { routes_.use_index(std::move(index)); }
  std::span<const int> route(Address dst) const { return routes_.get(dst); }

  // Engine context only. Counts rx on `port`; PFC frames pause that port's egress.
  void receive(PacketPtr pkt, int port) override;
  uint32_t cut_through_header_bytes() const override {
    return config_.cut_through ? config_.cut_through_header_bytes : 0;
  }

 private:
  // One class's buffer accounting at a port: what a packet's admission and release read and
  // write, side by side (four arrays were four cache lines per packet).
  struct ClassBuffer {
    uint64_t ingress_bytes = 0;   // buffered bytes that arrived here
    uint64_t queue_bytes = 0;     // shared buffer: egress queue bytes
    uint64_t headroom_used = 0;   // bytes held in headroom
    // Shared buffer, lossless classes: bytes from here in reserve + shared pool (not headroom).
    uint64_t ingress_held = 0;
  };
  struct Port {
    std::unique_ptr<EgressPort> egress;
    std::unique_ptr<PfcSender> pfc;                      // XOFF/XON sent on this port
    std::unique_ptr<IbFlowControl> fc;                   // IB: credits returned on this port
    uint64_t headroom = 0;                               // per lossless class
    std::array<ClassBuffer, kNumClasses> classes{};
  };
  bool shared_buffer() const { return config_.buffer.total_bytes && !config_.ib_vl_buffer_bytes; }
  // Lossy class: admission at the egress queue (reserve, then pool within the dynamic limit).
  bool admit(int out, uint8_t cls, uint32_t bytes) const;
  // Lossless class: admission at ingress (reserve, pool, else headroom; XOFF); false = dropped
  // for want of headroom.
  bool admit_lossless(Packet& pkt, int port, uint8_t cls);
  bool pool_takes(int in, uint8_t cls, uint32_t bytes) const;
  void buffer_add(int out, uint8_t cls, int64_t bytes);
  void ingress_add(int in, uint8_t cls, int64_t bytes);
  // Adds `bytes` to a queue's count `q`; the part beyond the reserve moves shared_used_.
  void account(uint64_t& q, int64_t bytes);
  void forward(PacketPtr pkt);
  // The port among `ports` (two or more) a packet leaves by.
  int pick_port(std::span<const int> ports, const Packet& pkt);
  void on_dequeue(int port, const Packet& pkt);
  void release(int ingress, uint8_t cls, uint32_t bytes, bool in_headroom);

  Engine& engine_;
  SwitchConfig config_;
  DelayLine pipeline_;
  // By value: a packet's visit reads its ports' entries with one load fewer. Entries move
  // while ports are added (nothing keeps a Port's address; their parts stay put).
  std::vector<Port> ports_;
  RouteTable routes_;
  uint64_t unroutable_ = 0;
  uint64_t shared_used_ = 0;
  uint32_t tie_turn_ = 0;  // adaptive routing: where the next tie's search starts
};

// A flow hash for ECMP: mixes (src, dst, udp_src_port, flow_hash) and the switch's seed.
uint64_t ecmp_hash(const Packet& pkt, uint64_t seed = 0);

}  // namespace rdmasim::net
