#include "sim/net/switch.h"

#include <algorithm>
#include <cmath>

#include "sim/net/headers.h"
#include "sim/net/pfc_frame.h"

namespace rdmasim::net {

uint64_t ecmp_hash(const Packet& pkt, uint64_t seed) {
  uint64_t x = ((static_cast<uint64_t>(pkt.src) << 32) ^ pkt.dst) ^ (seed * 0xd6e8feb86659fd93ull);
  // RoCEv2: the 5-tuple a switch parses (IPs, UDP, the entropy source port, dst port 4791)
  // and nothing else. Other link layers: flow_hash stands for their flow fields (iWARP's
  // TCP ports; IB switches forward by DLID and do not hash).
  x ^= static_cast<uint64_t>(pkt.udp_src_port) << 48;
  if (pkt.link_layer != LinkLayer::RoCEv2) x ^= static_cast<uint64_t>(pkt.flow_hash) << 16;
  // splitmix64 finalizer
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

uint64_t pfc_headroom_bytes(Rate rate, Time latency, uint32_t max_frame_wire, uint64_t response_bits) {
  // rate x 2 x latency in bytes: bits/s x ps / 1e12 / 8, rounded up.
  const long double bdp2 = static_cast<long double>(rate.bps) * 2 * static_cast<long double>(latency) / 8e12L;
  return static_cast<uint64_t>(std::ceil(bdp2)) + 2ull * max_frame_wire + kEthernetMinWire +
         (response_bits + 7) / 8;
}

uint64_t pfc_response_bits(Rate rate) {
  struct Bound { double gbps; uint64_t bits; };
  static constexpr Bound kBounds[] = {{10, 30720}, {25, 40960}, {40, 60416}, {100, 201728}, {400, 463360}};
  const double g = rate.as_gbps();
  for (const Bound& b : kBounds)
    if (g <= b.gbps) return b.bits;
  return static_cast<uint64_t>(std::ceil(463360.0 * g / 400));
}

Switch::Switch(Engine& engine, SwitchConfig config)
    : engine_(engine), config_(std::move(config)), pipeline_(engine, config_.forwarding_latency) {
  pipeline_.set_sink([this](PacketPtr pkt) { forward(std::move(pkt)); });
}

Switch::~Switch() = default;

int Switch::add_port(Rate rate, uint32_t peer_buffer_bytes) {
  EgressConfig ec = config_.egress;
  ec.rate = rate;
  ec.ingress_round_robin = config_.ingress_round_robin;
  ec.stamp_int = true;  // switches answer INT requests (HPCC); hosts do not stamp
  Port p;
  p.headroom = config_.pfc.headroom_bytes;
  p.egress = std::make_unique<EgressPort>(engine_, ec);
  p.pfc = std::make_unique<PfcSender>(engine_, *p.egress);
  if (config_.ib_vl_buffer_bytes) {
    p.egress->enable_credits(peer_buffer_bytes);
    p.fc = std::make_unique<IbFlowControl>(engine_, *p.egress, config_.ib_vl_buffer_bytes);
  }
  const int idx = static_cast<int>(ports_.size());
  p.egress->set_dequeue_hook([this, idx](const Packet& pkt) { on_dequeue(idx, pkt); });
  ports_.push_back(std::move(p));
  return static_cast<int>(ports_.size() - 1);
}

void Switch::receive(PacketPtr pkt, int port) {
  // The forwarding entry is looked up as the packet arrives (a switch parses the header
  // first) and read at the end, so that at scale its cache miss overlaps those of the
  // accounting below instead of stalling the forward, forwarding_latency later.
  const uint32_t* route = is_data(*pkt) ? routes_.entry(pkt->dst) : nullptr;
  if (route) __builtin_prefetch(route);
  // The class it arrived in: its VL on InfiniBand (the upstream port mapped the SL), else
  // the traffic class.
  const uint8_t cls = config_.ib_vl_buffer_bytes ? pkt->vl & 7 : pkt->priority & 7;
  ports_[port].egress->count_rx(*pkt, cls);
  if (pkt->kind == PacketKind::PfcPause) {
    ports_[port].egress->apply_pause(*pkt);
    return;
  }
  if (pkt->kind == PacketKind::IbCredit) {
    if (ports_[port].fc) ports_[port].fc->on_fcp(*pkt);
    return;
  }
  if (ports_[port].fc) ports_[port].fc->received(cls, pkt->wire_bytes);
  pkt->switch_ingress = port;
  pkt->ingress_class = cls;
  pkt->in_headroom = false;
  if (lossless(cls) && !admit_lossless(*pkt, port, cls)) return;
  pkt->switch_route = route ? *route : 0;
  pipeline_.push(std::move(pkt));
}

bool Switch::admit_lossless(Packet& pkt, int port, uint8_t cls) {
  Port& in = ports_[port];
  const uint32_t bytes = pkt.wire_bytes;
  // Headroom takes what arrives while XOFF holds (with a limit) and whatever the shared
  // pool cannot take (the pool is the one that must never overflow).
  bool to_headroom = config_.pfc.headroom_limited && in.pfc->xoff_sent(cls);
  if (!to_headroom && shared_buffer() && !pool_takes(port, cls, bytes)) to_headroom = true;
  if (to_headroom) {
    if (config_.pfc.headroom_limited && in.classes[cls].headroom_used + bytes > in.headroom) {
      // Only a headroom smaller than the link's in-flight bytes gets here (sim/topo rejects
      // such a config); counted on the ingress port.
      PortCounters& c = in.egress->counters_to_add();
      ++c.headroom_drops;
      c.headroom_drop_bytes += bytes;
      ++c.drops;
      ++c.classes[cls].drops;
      c.drop_bytes += bytes;
      return false;
    }
    pkt.in_headroom = true;
    in.classes[cls].headroom_used += bytes;
    PortCounters& c = in.egress->counters_to_add();
    c.headroom_max_bytes = std::max(c.headroom_max_bytes, in.classes[cls].headroom_used);
  } else if (shared_buffer()) {
    ingress_add(port, cls, bytes);
  }
  in.classes[cls].ingress_bytes += bytes;
  if (in.classes[cls].ingress_bytes > config_.pfc.xoff_bytes || pkt.in_headroom) in.pfc->xoff(cls);
  return true;
}

void Switch::forward(PacketPtr pkt) {
  const std::span<const int> r = routes_.ports(pkt->switch_route);
  if (r.empty()) {
    ++unroutable_;
    release(pkt->switch_ingress, pkt->ingress_class, pkt->wire_bytes, pkt->in_headroom);
    return;
  }
  const int out = r.size() == 1 ? r[0] : pick_port(r, *pkt);
  const int ingress = pkt->switch_ingress;
  const uint8_t in_cls = pkt->ingress_class;
  const uint8_t cls = ports_[out].egress->class_of(pkt->priority);  // egress queue (VL)
  const uint32_t bytes = pkt->wire_bytes;
  // A dropped packet leaves the buffer at once. A lossy class is admitted here, by its
  // egress queue's class limit and (with a shared buffer) its dynamic threshold.
  const bool ib = config_.ib_vl_buffer_bytes != 0;
  // A lossless class was admitted at ingress (admit_lossless): no egress limit applies, as
  // none applies on InfiniBand, where the upstream's credits bound the ingress buffer.
  const bool egress_limited = !ib && !lossless(in_cls);
  const bool shared = egress_limited && shared_buffer();
  const bool in_headroom = pkt->in_headroom;
  if (shared && !admit(out, cls, bytes)) {
    PortCounters& c = ports_[out].egress->counters_to_add();
    ++c.drops;
    ++c.classes[cls].drops;
    c.drop_bytes += bytes;
    release(ingress, in_cls, bytes, in_headroom);
    return;
  }
  if (ib) ports_[out].fc->queued();
  if (!ports_[out].egress->enqueue(std::move(pkt), /*ignore_limit=*/!egress_limited)) {
    release(ingress, in_cls, bytes, in_headroom);
    return;
  }
  if (shared) buffer_add(out, cls, bytes);
}

int Switch::pick_port(std::span<const int> ports, const Packet& pkt) {
  if (!config_.adaptive_routing) return ports[ecmp_hash(pkt, config_.ecmp_seed) % ports.size()];
  // The port with the fewest bytes queued for the packet's class, an idle one before one
  // still serializing; among equals, the first from tie_turn_ on.
  const size_t n = ports.size();
  const size_t start = tie_turn_ % n;
  int best = -1;
  uint64_t best_bytes = 0;
  bool tie = false;
  for (size_t i = 0; i < n; ++i) {
    const int p = ports[(start + i) % n];
    const EgressPort& e = *ports_[p].egress;
    const uint64_t q = e.queued_bytes(e.class_of(pkt.priority)) * 2 + (e.busy() ? 1 : 0);
    if (best < 0 || q < best_bytes) {
      best = p;
      best_bytes = q;
      tie = false;
    } else if (q == best_bytes) {
      tie = true;
    }
  }
  if (tie) ++tie_turn_;
  return best;
}

uint64_t Switch::shared_size() const {
  uint64_t reserved = config_.buffer.reserved_bytes * ports_.size() * kNumClasses;
  int lossless_classes = 0;
  for (uint8_t c = 0; c < kNumClasses; ++c) lossless_classes += lossless(c);
  for (size_t p = 0; p < ports_.size(); ++p) reserved += headroom(static_cast<int>(p)) * lossless_classes;
  return config_.buffer.total_bytes > reserved ? config_.buffer.total_bytes - reserved : 0;
}

double Switch::dynamic_limit(uint8_t cls) const {
  const double free = static_cast<double>(shared_size() - std::min(shared_size(), shared_used_));
  return config_.buffer.alpha > 0 && !lossless(cls) ? config_.buffer.alpha * free : free;
}

bool Switch::admit(int out, uint8_t cls, uint32_t bytes) const {
  const uint64_t q = ports_[out].classes[cls].queue_bytes;
  const uint64_t r = config_.buffer.reserved_bytes;
  if (q + bytes <= r) return true;
  // The part of this packet beyond the reserve comes from the shared pool.
  const uint64_t need = q + bytes - std::max(q, r);
  if (shared_used_ + need > shared_size()) return false;
  const uint64_t excess_after = q + bytes - r;
  return static_cast<double>(excess_after) <= dynamic_limit(cls);
}

void Switch::buffer_add(int out, uint8_t cls, int64_t bytes) {
  account(ports_[out].classes[cls].queue_bytes, bytes);
}

void Switch::ingress_add(int in, uint8_t cls, int64_t bytes) {
  account(ports_[in].classes[cls].ingress_held, bytes);
}

void Switch::account(uint64_t& q, int64_t bytes) {
  const uint64_t r = config_.buffer.reserved_bytes;
  const uint64_t before = q > r ? q - r : 0;
  q = static_cast<uint64_t>(static_cast<int64_t>(q) + bytes);
  const uint64_t after = q > r ? q - r : 0;
  shared_used_ = shared_used_ + after - before;
}

bool Switch::pool_takes(int in, uint8_t cls, uint32_t bytes) const {
  const uint64_t q = ports_[in].classes[cls].ingress_held;
  const uint64_t r = config_.buffer.reserved_bytes;
  if (q + bytes <= r) return true;
  return shared_used_ + (q + bytes - std::max(q, r)) <= shared_size();
}

void Switch::on_dequeue(int port, const Packet& pkt) {
  if (pkt.kind == PacketKind::PfcPause || pkt.kind == PacketKind::IbCredit) return;
  if (pkt.switch_ingress >= 0 && shared_buffer() && !lossless(pkt.ingress_class))
    buffer_add(port, pkt.vl & 7, -static_cast<int64_t>(pkt.wire_bytes));
  release(pkt.switch_ingress, pkt.ingress_class, pkt.wire_bytes, pkt.in_headroom);
}

void Switch::release(int ingress, uint8_t cls, uint32_t bytes, bool in_headroom) {
  if (ingress < 0) return;
  if (config_.ib_vl_buffer_bytes) ports_[ingress].fc->freed(cls, bytes);
  if (!lossless(cls)) return;
  Port& in = ports_[ingress];
  if (in_headroom) in.classes[cls].headroom_used -= bytes;
  else if (shared_buffer()) ingress_add(ingress, cls, -static_cast<int64_t>(bytes));
  in.classes[cls].ingress_bytes -= bytes;
  // Resume only with the headroom empty (as the HPCC simulator's SwitchMmu does): what sits
  // in headroom when XON goes would shrink the headroom of the next pause.
  if (in.classes[cls].ingress_bytes <= config_.pfc.xon_bytes && in.classes[cls].headroom_used == 0) in.pfc->xon(cls);
}

bool Switch::holds_data() const {
  if (pipeline_.holds_data()) return true;
  for (const Port& p : ports_)
    if (p.egress->holds_data()) return true;
  return false;
}

}  // namespace rdmasim::net
