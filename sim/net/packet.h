// A packet on the simulated wire: addressing, link-layer facts, control-frame fields, payload.
//
// The fabric (sim/net) looks only at this part (addresses, priority, size, ECN, flow hash,
// kind). The RDMA transport headers belong to the HCA model: nic::RdmaPacket derives from
// Packet and adds them (sim/nic/rdma_packet.h). Payload bytes travel by reference to a
// shared buffer, or to bytes their owner holds in place (HeldBytes), so a packet copy is cheap.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <memory>
#include <utility>
#include <vector>

#include "sim/core/time.h"

namespace rdmasim::net {

enum class LinkLayer : uint8_t { RoCEv2, InfiniBand, IWarp };

// Network address of an endpoint: the IPv4 address (host byte order) on Ethernet fabrics,
// the LID on InfiniBand.
using Address = uint32_t;

enum class PacketKind : uint8_t {
  Transport,   // an RDMA transport packet (BTH ...) or a TCP segment on iWARP
  PfcPause,    // 802.1Qbb priority flow control frame (per-priority quanta)
  IbCredit,    // InfiniBand flow-control packet (credit update for one VL)
  Cnp,         // RoCEv2 congestion notification packet (BTH opcode 0x81)
};

// Wire overheads used to size packets: sim/net/headers.h has the per-link-layer sums.

// Value-initialization skipped: a message buffer is filled by DMA right after it is sized,
// so zeroing it first (a memset of every message) would be wasted work.
template <class T>
struct DefaultInitAllocator : std::allocator<T> {
  template <class U>
  struct rebind { using other = DefaultInitAllocator<U>; };
  using std::allocator<T>::allocator;
  template <class U>
  void construct(U* p) noexcept { ::new (static_cast<void*>(p)) U; }
  template <class U, class... Args>
  void construct(U* p, Args&&... args) { ::new (static_cast<void*>(p)) U(std::forward<Args>(args)...); }
};

// Message bytes; resize() leaves new bytes uninitialized.
using Bytes = std::vector<uint8_t, DefaultInitAllocator<uint8_t>>;

// An immutable byte buffer shared by the packets that carry slices of it.
using Payload = std::shared_ptr<const Bytes>;

// Bytes a packet carries without a copy: they stay in their owner's memory, `at` the first
// byte (an RC message's bytes in its sender's registered memory, in this process: see
// nic::Hca, "held"). An owner that must let go of that memory while packets still hold it
// copies the bytes into `copy` and points `at` there.
struct HeldBytes {
  const uint8_t* at = nullptr;
  Bytes copy;
};

// In-band network telemetry (INT) one switch egress port stamps on a packet that asks for it
// (HPCC, Li et al. SIGCOMM 2019, section 3.2): the port's state when the packet starts
// leaving it. The fabric stamps it without knowing what carries it or who reads it.
struct IntHop {
  uint64_t tx_bytes = 0;   // the port's bytes put on the wire so far (all classes)
  Time ts = 0;             // when the packet started leaving the port
  uint64_t rate_bps = 0;   // the port's link rate
  uint32_t qlen = 0;       // bytes queued at the port (all classes) behind the packet
};
inline constexpr size_t kMaxIntHops = 8;  // a switch stops stamping beyond it

// The fabric's view of a packet. Transport packets (kind Transport or Cnp) are made by the
// HCA model as nic::RdmaPacket (sim/nic/rdma_packet.h), which adds the transport headers;
// nothing in sim/net reads them. Copy a packet with clone(), which keeps its dynamic type.
struct Packet {
  Packet() = default;
  Packet(const Packet&) = default;
  Packet& operator=(const Packet&) = default;
  virtual ~Packet() = default;
  // A copy of the same dynamic type (a PacketPtr to a Packet or to a derived packet).
  virtual std::unique_ptr<Packet> clone() const { return std::make_unique<Packet>(*this); }

  // --- network part (what switches look at) ---
  // What a switch reads and writes on each hop comes first, up to last_bit_at, within the
  // first 64 bytes with the vtable pointer: at scale a packet is cold at every hop, and a
  // second line was a second miss in every forward.
  PacketKind kind = PacketKind::Transport;
  LinkLayer link_layer = LinkLayer::RoCEv2;
  uint8_t priority = 0;            // traffic class (0..7): PCP/DSCP-derived on Ethernet, SL on IB
  uint8_t vl = 0;                  // the egress queue it is sent from on this hop: the IB virtual lane
                                   // (from the port's SL-to-VL table), else priority & 7
  uint8_t ingress_class = 0;       // set by a switch: the VL / class it arrived in (credits, PFC)
  bool in_headroom = false;        // set by a switch: arrived after XOFF, held in PFC headroom
  uint8_t dscp = 0;
  bool ect = true;                 // ECN-capable transport
  bool ce = false;                 // congestion experienced (set by a switch)
  bool int_request = false;        // switches append an IntHop at each egress (HPCC)
  uint16_t udp_src_port = 0;       // RoCEv2 entropy; ECMP hashes it
  Address src = 0;
  Address dst = 0;
  uint32_t flow_hash = 0;          // for non-RoCE fabrics: a per-flow value ECMP hashes
  uint32_t wire_bytes = 0;         // bytes the packet occupies on the wire, all overheads included
  int32_t switch_ingress = -1;     // set by a switch while the packet is in its buffer (PFC accounting)
  uint32_t switch_route = 0;       // set by a switch on arrival: its forwarding entry for dst (0: none)
  Time last_bit_at = 0;            // cut-through: when its last bit reaches the current switch
  uint64_t id = 0;                 // unique per engine; for traces
  Time created = 0;                // when the sender built it
  uint32_t frame_bytes = 0;        // bytes a capture shows (headers + payload + CRCs, no preamble/IFG)
  std::vector<IntHop> int_hops;    // empty (no allocation) unless int_request

  // --- control frames ---
  std::array<uint16_t, 8> pause_quanta{};  // PfcPause: per-priority quanta (0 = XON)
  uint8_t pause_enable_mask = 0;           // PfcPause: class-enable vector
  uint32_t credits = 0;                    // IbCredit: flow-control credit limit (FCCL) for `vl`
  uint32_t fctbs = 0;                      // IbCredit: the sender's total bytes sent on `vl`
  bool fc_waiting = false;                 // IbCredit, simulator-only: the sender has packets
                                           // on `vl` waiting for credit (ib_flow_control.h)

  // Payload: bytes [payload_offset, payload_offset + payload_len) of *payload, or of the
  // held bytes from held->at when `held` is set.
  Payload payload;
  std::shared_ptr<const HeldBytes> held;
  uint32_t payload_offset = 0;
  uint32_t payload_len = 0;

  const uint8_t* payload_data() const {
    if (held) return held->at + payload_offset;
    return payload ? payload->data() + payload_offset : nullptr;
  }
};

using PacketPtr = std::unique_ptr<Packet>;

// What the fabric carries for the hosts (transport packets, CNPs), as opposed to its own
// control frames (PFC pauses, InfiniBand credit updates).
inline bool is_data(const Packet& p) {
  return p.kind == PacketKind::Transport || p.kind == PacketKind::Cnp;
}

// Anything that receives packets from a link: a switch, or a host's NIC.
class Node {
 public:
  virtual ~Node() = default;
  // Engine context only. `port` is the receiving node's port index.
  virtual void receive(PacketPtr pkt, int port) = 0;
  // A cut-through switch returns the bytes it must see before forwarding (the headers);
  // links then hand it packets when those bytes have arrived. 0: whole packets only.
  virtual uint32_t cut_through_header_bytes() const { return 0; }
};

// The sending side of one host port as the NIC sees it. The NIC pushes a packet when
// ready(priority) says the port can take one; otherwise it waits for the ready callback.
// The port owns its egress queues, scheduling, pause state and serializer.
class Transmitter {
 public:
  virtual ~Transmitter() = default;
  // True when a packet of this priority may be handed over now (not paused, queue not full).
  virtual bool ready(uint8_t priority) const = 0;
  // Hands a packet to the port. Control packets (ACK, CNP) may be sent even when !ready().
  virtual void send(PacketPtr pkt) = 0;
  // Called (engine context) whenever ready() may have turned true for some priority.
  virtual void set_ready_callback(std::function<void()> cb) = 0;
  virtual Rate rate() const = 0;
};

}  // namespace rdmasim::net
