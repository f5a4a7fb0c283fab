// An egress port: 8 traffic-class queues, strict priority, per-class pause, and the serializer.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "sim/core/engine.h"
#include "sim/core/ring.h"
#include "sim/net/packet.h"
#include "sim/net/port_counters.h"

namespace rdmasim::net {

inline constexpr int kNumClasses = 8;

// RED-style ECN marking on the queue of one class: below kmin no mark, above kmax always,
// in between with probability pmax * (q - kmin) / (kmax - kmin), q = class bytes queued.
// Defaults are the DCQCN paper's (Zhu et al., SIGCOMM 2015): Kmin 5 KB, Kmax 200 KB, Pmax 1%.
struct EcnConfig {
  bool enabled = false;
  uint64_t kmin_bytes = 5 * 1024;
  uint64_t kmax_bytes = 200 * 1024;
  double pmax = 0.01;
};

// Bytes a DWRR class may send per round per unit of weight.
inline constexpr uint32_t kDwrrQuantumUnit = 1024;

// PFC watchdog (storm detection): when a class has been paused continuously for `detect`
// with packets waiting, its queued packets are dropped (counted as watchdog_drops) and
// pauses of that class are ignored for `restore`; then they are honoured again. 0 = off.
struct PfcWatchdogConfig {
  Time detect = 0;
  Time restore = 0;
};

// InfiniBand virtual lanes of one port (IBTA vol 1 ch. 7.6). When `enabled`, a data packet's
// service level (Packet::priority, 0..15) picks its VL through `sl2vl` (7.6.6) when it is
// queued here; the VL is its queue, its credit counter and Packet::vl on the next link.
// VL arbitration (7.6.9) then replaces strict priority and DWRR:
//  - two tables of (VL, weight) entries; weight in units of 64 bytes, 0 = entry skipped.
//    The current entry of a table sends packets of its VL (whole packets, so it may
//    overshoot) while it has weight left and the VL has a packet and credit; then the next
//    entry starts with its full weight. Unused weight is not carried over.
//  - the high-priority table goes first. After it sent high_limit * 4096 bytes (at least one
//    packet: 0 means one packet) while a low-priority packet waits, one low-priority packet
//    goes and the count restarts. high_limit 255 = unlimited (low only when high is idle).
// VL15 (subnet management) is not modelled.
inline constexpr uint32_t kVlArbWeightUnit = 64;
inline constexpr uint32_t kVlHighLimitUnit = 4096;
inline constexpr uint8_t kVlHighLimitUnbounded = 255;
inline constexpr int kMaxSl = 16;

struct VlArbEntry {
  uint8_t vl = 0;
  uint8_t weight = 0;   // 64-byte units
  bool operator==(const VlArbEntry&) const = default;
};

struct IbVlConfig {
  bool enabled = false;
  uint8_t data_vls = 8;                 // VL0 .. data_vls-1 (1, 2, 4 or 8 here)
  std::array<uint8_t, kMaxSl> sl2vl{};  // SL -> VL
  std::vector<VlArbEntry> high, low;
  uint8_t high_limit = 0;               // LimitOfHighPriority, 4096-byte units
};

// The default VLs of an IB port with `data_vls` data VLs: SL s -> VL s mod data_vls (the
// identity for SL < data_vls, as OpenSM programs without QoS), no high-priority entries and
// one low-priority entry of weight 64 (4096 bytes, one MTU packet) per data VL, so the VLs
// share the link round robin.
IbVlConfig default_ib_vls(uint8_t data_vls = 8);

struct EgressConfig {
  Rate rate = Rate::gbps(100);
  uint64_t class_limit_bytes = 1 << 20;   // per traffic class; beyond it enqueue() drops
  // Per traffic class (the egress queue's class; on InfiniBand its VL): each class marks
  // on its own queue with its own thresholds, or not at all when its `enabled` is false.
  std::array<EcnConfig, kNumClasses> ecn{};
  // 0 = strict priority (the default for every class). Classes with weight w > 0 share what
  // the strict classes leave by deficit weighted round robin, w * kDwrrQuantumUnit bytes a round.
  std::array<uint32_t, 8> dwrr_weights{};
  Time queue_sample_interval = 0;         // QueueSeries sampling; 0 = no time series
  PfcWatchdogConfig watchdog;
  IbVlConfig ib;                          // InfiniBand VLs (off: Ethernet classes)
  // Within a class, serve switch ingress ports round robin (see ClassQueue); false: FIFO.
  bool ingress_round_robin = false;
  // Stamp an IntHop on each packet with int_request as it starts leaving (switch ports).
  bool stamp_int = false;
};

// Scheduling: PFC and IB credit frames first (link control is never paused), then the strict-priority
// classes (weight 0), class 7 highest, then the DWRR classes in round-robin order. A packet already serializing is never preempted (by priority or pause).
// The serializer holds at most one pending event; a second event may wait for the earliest
// pause to expire when every non-empty class is paused.
// Observes the packets a port puts on the wire (packet capture, sim/trace).
class PacketTap {
 public:
  virtual ~PacketTap() = default;
  // Engine context: `pkt`'s last bit left the port at simulated time `now`.
  virtual void on_transmit(const Packet& pkt, Time now) = 0;
  // Engine context: a PFC frame set class `cls` paused from `now` until `until` (until <=
  // now: resumed), replacing what an earlier frame had set.
  virtual void on_pause(uint8_t cls, Time now, Time until) { (void)cls, (void)now, (void)until; }
  // False: the tap wants pauses only, and the port skips on_transmit (asked once, when the
  // tap is set: a call per packet to a tap that ignores it is a cache miss per packet).
  virtual bool wants_transmits() const { return true; }
};

// The packets of one egress class. With `by_ingress`, packets are kept per switch ingress
// port and served round robin, one packet per ingress port in turn (the arbitration of an
// input-buffered / VOQ switch); otherwise (and at host ports) one FIFO in arrival order.
// Sub-queue 0 (the FIFO, and locally made packets under round robin) lives inline, and the
// round-robin state is made when the first packet comes by ingress: a FIFO class is 40 bytes
// and a push or a pop touches only its ring.
class ClassQueue {
 public:
  bool empty() const { return size() == 0; }
  size_t size() const { return rr_ ? rr_->count : first_.size(); }
  const PacketPtr& front() const { return rr_ ? sub(rr_->active.front()).front() : first_.front(); }
  void push_back(PacketPtr p, bool by_ingress) {
    const size_t i = by_ingress && p->switch_ingress >= 0 ? static_cast<size_t>(p->switch_ingress) + 1 : 0;
    if (i > 0 && !rr_) {
      // Round robin from now on: sub-queue 0, if it holds packets, takes its turn first.
      rr_ = std::make_unique<RoundRobin>();
      rr_->count = first_.size();
      if (!first_.empty()) rr_->active.push_back(0);
    }
    if (!rr_) {
      first_.push_back(std::move(p));
      return;
    }
    if (i > rr_->more.size()) rr_->more.resize(i);
    ++rr_->count;
    Ring<PacketPtr>& q = sub(i);
    if (q.empty()) rr_->active.push_back(i);
    q.push_back(std::move(p));
  }
  PacketPtr pop_front() {
    if (!rr_) {
      PacketPtr p = std::move(first_.front());
      first_.pop_front();
      return p;
    }
    --rr_->count;
    const size_t i = rr_->active.front();
    rr_->active.pop_front();
    Ring<PacketPtr>& q = sub(i);
    PacketPtr p = std::move(q.front());
    q.pop_front();
    if (!q.empty()) rr_->active.push_back(i);  // its next packet waits for the others' turn
    return p;
  }

 private:
  struct RoundRobin {
    std::vector<Ring<PacketPtr>> more;   // sub-queue i >= 1 (ingress port i - 1), grown on first use
    Ring<size_t> active;                 // non-empty sub-queues in service order
    size_t count = 0;                    // packets in all sub-queues
  };
  Ring<PacketPtr>& sub(size_t i) { return i == 0 ? first_ : rr_->more[i - 1]; }
  const Ring<PacketPtr>& sub(size_t i) const { return i == 0 ? first_ : rr_->more[i - 1]; }

  Ring<PacketPtr> first_;                // sub-queue 0
  std::unique_ptr<RoundRobin> rr_;
};

class EgressPort {
 public:
  using Sink = std::function<void(PacketPtr)>;

  EgressPort(Engine& engine, EgressConfig config);
  EgressPort(const EgressPort&) = delete;
  EgressPort& operator=(const EgressPort&) = delete;
  ~EgressPort();

  // Where a packet goes when its last bit is on the wire (normally a link's DelayLine).
  void set_sink(Sink sink) { sink_ = std::move(sink); }
  // Called (engine context) after a packet finished serializing or a pause ended, i.e.
  // whenever has_room()/paused() may have changed for the better.
  void set_drain_callback(std::function<void()> cb) { drain_cb_ = std::move(cb); }

  // Queues a packet in class class_of(pkt->priority) and sets pkt->vl to it. Drops and counts it if that would take the
  // class beyond its limit, unless `ignore_limit`. Returns false when dropped.
  // ECN marking (if enabled and the packet is ECT) happens here.
  bool enqueue(PacketPtr pkt, bool ignore_limit = false);

  // A PFC frame arrived for this port's transmit direction: pauses each enabled class for
  // quanta * 512 bit times at this port's rate (0 quanta = resume now).
  void apply_pause(const Packet& pfc);
  void pause_class(uint8_t cls, uint16_t quanta);

  // The queue a data packet of traffic class / SL `priority` goes to: its VL through the
  // SL-to-VL table on an InfiniBand port, else priority & 7.
  uint8_t class_of(uint8_t priority) const {
    return ib_ ? config_.ib.sl2vl[priority % kMaxSl] & 7 : priority & 7;
  }

  bool paused(uint8_t cls) const {
    const ClassState& s = classes_[cls & 7];
    return s.paused_until > engine_.now() && s.ignore_pause_until <= engine_.now();
  }
  bool has_room(uint8_t cls) const {
    return classes_[cls & 7].queued_bytes < class_limit_bytes_;
  }
  uint64_t queued_bytes(uint8_t cls) const { return classes_[cls & 7].queued_bytes; }
  bool busy() const { return static_cast<bool>(tx_done_); }
  // Data packets wait in a class queue, or one is serializing (busy: it may be a control
  // frame, which ends within one frame time).
  bool holds_data() const { return busy() || busy_ != 0; }
  Rate rate() const { return config_.rate; }
  const EgressConfig& config() const { return config_; }

  // Time class `cls` has spent paused since the start (pauses that overlap count once).
  Time paused_time(uint8_t cls) const;
  const QueueSeries& queue_series() const { return series_; }
  // A copy filled up to now: the depth has not changed since the last stored sample was
  // due (every change samples first), so the missing samples are today's depth.
  QueueSeries queue_series_now() const;
  // Starts the queue-depth series now (replacing any earlier one): a sample of every
  // class's depth at each multiple of `interval` from now on (0 = off), up to `max_samples`.
  void set_queue_sampling(Time interval, size_t max_samples);
  // Fills the time series up to now (the lazy sampler only fills when the queue changes).
  void flush_series();

  // The link this port feeds went down (drops everything queued and everything enqueued
  // until up again, counted as link_down_drops) or came back up.
  void set_link_up(bool up);
  bool link_up() const { return link_up_; }
  // Cut-through downstream: hand each packet to the sink when it starts serializing (the
  // link delays it by the header time), setting Packet::last_bit_at to when its last bit
  // reaches the far end, `latency` later than it leaves here.
  void set_early_handoff(Time latency) { early_handoff_ = true; handoff_latency_ = latency; }
  // Removes every queued data packet (PFC watchdog); returns how many. Calls the dequeue
  // hook for each, so a switch releases their buffer.
  uint64_t flush_class(uint8_t cls);

  // The port's counters. The totals every packet changes (tx and rx packets and bytes) are
  // kept apart and filled in here: counting a packet touches the port's first lines and its
  // class's counters only.
  PortCounters& counters() {
    fill_totals();
    return counters_;
  }
  const PortCounters& counters() const {
    fill_totals();
    return counters_;
  }
  // For adding to the counters a packet does not change (drops, headroom): the totals are
  // not filled in (do not read them here), which keeps a drop from reading every class.
  PortCounters& counters_to_add() { return counters_; }
  // The per-class counters alone (no totals to fill in).
  const std::array<ClassCounters, kNumClasses>& class_counters() const { return counters_.classes; }
  // Counts a packet that arrived from this port's link, in class `cls` (the receiving
  // node's side of the port: a switch's ingress, a NIC's receive).
  void count_rx(const Packet& pkt, uint8_t cls);

  // InfiniBand credit-based flow control. Once enabled, class (VL) c starts a packet only
  // while the bytes it has sent, plus the packet, stay within the flow-control credit limit
  // (FCCL) the receiver advertised; the limit starts at `receiver_buffer_bytes` per VL.
  // Counts are bytes, compared modulo 2^32 as IBTA compares its 12-bit block counts.
  void enable_credits(uint32_t receiver_buffer_bytes);
  // An IbCredit packet arrived: raises the limit of VL fc.vl to fc.credits.
  void apply_credit(const Packet& fc);
  bool credits_enabled() const { return credits_enabled_; }
  // Bytes VL `vl` may still send before it runs out of credit (FCCL - FCTBS; never negative).
  // FCTBS: bytes VL `vl` has sent, mod 2^32.
  uint32_t fctbs(uint8_t vl) const { return credit_sent_[vl & 7]; }
  // VL `vl` has a packet queued that its credit does not cover.
  bool credit_blocked(uint8_t vl) const {
    const uint8_t c = vl & 7;
    return credits_enabled_ && !classes_[c].queue.empty() &&
           static_cast<int32_t>(credit_limit_[c] - (credit_sent_[c] + classes_[c].queue.front()->wire_bytes)) < 0;
  }
  int64_t credits_available(uint8_t vl) const {
    return static_cast<int32_t>(credit_limit_[vl & 7] - credit_sent_[vl & 7]);
  }

  // Called with each packet as it leaves the queue (starts serializing); the switch uses it
  // to account ingress buffer occupancy for PFC.
  void set_dequeue_hook(std::function<void(const Packet&)> hook) { dequeue_hook_ = std::move(hook); }
  // Called with each packet when its last bit left the port (nullptr: none; the cost when
  // no tap is set is one null check per packet). The tap must outlive the port or be reset.
  void set_tap(PacketTap* tap) {
    tap_ = tap;
    tap_transmits_ = tap && tap->wants_transmits();
  }
  PacketTap* tap() const { return tap_; }

 private:
  void try_start();
  void stamp_int(Packet& p, Time now);
  // The next class to serve among non-empty, unpaused classes, or -1. `wake` gets the
  // earliest pause expiry of a non-empty paused class.
  int pick_class(Time* wake);
  int pick_dwrr();
  int pick_vl();
  // The VL the current entry of VL arbitration table t (0 high, 1 low) serves now, moving
  // to the next entries as needed; -1 when no entry can send.
  int arb_table(int t);
  // Non-empty, not paused, and (with credits) within the VL's credit limit.
  bool sendable(int cls) const;
  void tx_done();
  void fill_totals() const;
  bool should_mark(uint8_t cls);
  void sample();      // before a queue-depth change
  // Whether the series is on and has room: what sampling_ caches for the per-packet path.
  bool series_open() const { return series_.interval > 0 && series_.samples.size() < series_.max_samples; }
  void note_pause(uint8_t cls, Time until);

  // One class's queue and what each packet's pass reads and writes with it. A struct per
  // class, not an array per field: at 1024 hosts the ports do not fit in the cache, and
  // each array was another line to miss per packet.
  struct alignas(64) ClassState {   // 64 bytes: one line per class
    uint64_t queued_bytes = 0;
    Time paused_until = 0;
    Time ignore_pause_until = 0;   // PFC watchdog: pauses ignored until then
    ClassQueue queue;
  };
  static_assert(sizeof(ClassState) == 64, "a class's per-packet state is one cache line");

  // What every packet's pass through the port reads or writes comes first, together (the
  // members after counters_ are for pauses, the watchdog, DWRR, VL arbitration, series).
  Engine& engine_;
  PacketTap* tap_ = nullptr;
  PacketPtr on_wire_;
  EventId tx_done_;
  Time next_sample_ = 0;              // when the queue-depth series takes its next sample
  uint64_t class_limit_bytes_;        // config_.class_limit_bytes
  Rate rate_;                         // config_.rate
  uint64_t tx_packets_ = 0, tx_bytes_ = 0;  // every frame sent (counters().tx_*); INT's tx_bytes
  uint32_t busy_ = 0;  // bit c: class c's queue is not empty (pick_class visits only these)
  uint32_t wire_bytes_on_wire_ = 0;   // of the packet serializing (early handoff: already gone)
  PacketKind kind_on_wire_ = PacketKind::Transport;
  uint8_t class_on_wire_ = 0;
  uint8_t ecn_classes_ = 0;           // bit c: config_.ecn[c].enabled
  uint8_t weighted_classes_ = 0;      // bit c: config_.dwrr_weights[c] > 0
  bool ib_;                           // config_.ib.enabled
  bool stamp_int_;                    // config_.stamp_int
  bool by_ingress_;                   // config_.ingress_round_robin
  bool sampling_ = false;             // the series is on and not full
  bool tap_transmits_ = false;        // tap_ && tap_->wants_transmits()
  bool link_up_ = true;
  bool credits_enabled_ = false;
  bool early_handoff_ = false;
  Ring<PacketPtr> control_;                             // PFC frames
  Sink sink_;
  std::function<void(const Packet&)> dequeue_hook_;
  std::function<void()> drain_cb_;
  std::array<ClassState, kNumClasses> classes_;
  mutable PortCounters counters_;   // totals filled in by counters()
  uint64_t control_rx_packets_ = 0, control_rx_bytes_ = 0;   // PFC and IB credit frames received

  EgressConfig config_;
  Time handoff_latency_ = 0;
  EventId pause_wake_;
  std::array<uint64_t, kNumClasses> deficit_{};    // DWRR
  std::array<bool, kNumClasses> credited_{};       // quantum added on the current visit
  int rr_ = 0;                                     // DWRR cursor
  std::array<size_t, 2> arb_pos_{};                // VL arbitration: entry per table
  std::array<int64_t, 2> arb_left_{};              // bytes the current entry may still send
  uint64_t high_sent_ = 0;                         // high-priority bytes since a low packet
  std::array<uint32_t, kNumClasses> credit_limit_{};  // FCCL per VL, bytes mod 2^32
  std::array<uint32_t, kNumClasses> credit_sent_{};   // FCTBS per VL, bytes mod 2^32
  void watchdog_check(uint8_t cls);
  std::array<Time, kNumClasses> storm_since_{};     // start of the current continuous pause
  std::array<EventId, kNumClasses> watchdog_{};
  std::array<Time, kNumClasses> pause_start_{};
  std::array<Time, kNumClasses> paused_total_{};
  QueueSeries series_;
};

}  // namespace rdmasim::net
