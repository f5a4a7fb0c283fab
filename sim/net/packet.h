// A packet on the simulated wire: addressing, link-layer facts, and RDMA transport headers.
//
// The fabric (sim/net) looks only at the network part (addresses, priority, size, ECN,
// flow hash, kind). The HCA model (sim/nic) fills and reads the transport part. Payload
// bytes travel by reference to a shared buffer so a packet copy is cheap.
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

// Wire overheads used to size packets; see sim/net/headers.h for the per-link-layer sums.
// Ethernet: 14 B MAC + 4 B FCS + 8 B preamble/SFD + 12 B inter-frame gap.
// RoCEv2: + 20 B IPv4 + 8 B UDP + 12 B BTH + 4 B ICRC.
// InfiniBand: 8 B LRH + 12 B BTH + 4 B ICRC + 2 B VCRC (+ 40 B GRH when global).

// IBTA base transport header, in host representation.
struct Bth {
  uint8_t opcode = 0;        // IBTA opcode: transport | operation (sim/net/ibta.h)
  bool solicited = false;
  bool ack_req = false;
  uint8_t pad = 0;
  uint16_t pkey = 0xffff;
  uint32_t dest_qp = 0;      // 24 bits
  uint32_t psn = 0;          // 24 bits
};

struct Reth {                // RDMA extended transport header
  uint64_t va = 0;
  uint32_t rkey = 0;
  uint32_t dma_len = 0;
};

struct Aeth {                // ACK extended transport header
  uint8_t syndrome = 0;      // bits 7..5: 000 ACK, 001 RNR NAK, 011 NAK; bits 4..0: credit/timer/code
  uint32_t msn = 0;          // 24 bits
};

struct AtomicEth {           // atomic extended transport header
  uint64_t va = 0;
  uint32_t rkey = 0;
  uint64_t swap_add = 0;
  uint64_t compare = 0;
};

struct Deth {                // datagram extended transport header
  uint32_t qkey = 0;
  uint32_t src_qp = 0;       // 24 bits
};

// iWARP: the TCP header of a segment (what a capture shows; see sim/nic/iwarp.h).
struct TcpHeader {
  uint16_t src_port = 0;
  uint16_t dst_port = 0;
  uint32_t seq = 0;
  uint32_t ack = 0;
  uint8_t flags = 0;         // FIN 0x01, SYN 0x02, RST 0x04, PSH 0x08, ACK 0x10, ECE 0x40, CWR 0x80
  uint16_t window = 0;       // as on the wire: the window >> wscale
  uint8_t wscale = 0;        // the window scale negotiated (not on the wire per segment)
  uint32_t ts_val = 0;       // timestamps option (10 bytes + 2 NOPs): always present
  uint32_t ts_ecr = 0;
  uint32_t len = 0;          // TCP payload bytes: the FPDU, 0 for a pure ACK
};

// iWARP: the FPDU a segment carries (MPA, RFC 5044; DDP, RFC 5041; RDMAP, RFC 5040).
struct IwarpFpdu {
  uint8_t rdmap_opcode = 0;  // 0 Write, 1 Read Request, 2 Read Response, 3 Send, 4 Send with
                             // Invalidate, 5 Send with SE, 6 Send with SE and Invalidate, 7 Terminate
  bool tagged = false;       // DDP T bit: tagged buffer (Write, Read Response)
  bool last = false;         // DDP L bit: last segment of the message
  uint32_t stag = 0;         // tagged: the sink STag
  uint64_t to = 0;           // tagged: the tagged offset of the first payload byte
  uint32_t qn = 0;           // untagged: queue 0 Send, 1 Read Request, 2 Terminate
  uint32_t msn = 0;          // untagged: message sequence number (per queue, from 1)
  uint32_t mo = 0;           // untagged: message offset of the first payload byte
  uint32_t inv_stag = 0;     // Send with Invalidate
  uint32_t sink_stag = 0;    // Read Request: where the response lands (source STag/TO/size in reth)
  uint64_t sink_to = 0;
  uint8_t term_layer_etype = 0;  // Terminate: layer (4 bits) | error type (4 bits)
  uint8_t term_code = 0;
  uint16_t ulpdu_len = 0;    // MPA length field: DDP/RDMAP headers + payload
  uint8_t mpa_pad = 0;       // 0..3 pad bytes before the CRC
  bool mpa_request = false;  // an MPA start frame (request/reply) instead of an FPDU
  bool mpa_reply = false;
};

// Which optional headers a transport packet carries.
enum HeaderBits : uint16_t {
  kHasReth = 1 << 0,
  kHasAeth = 1 << 1,
  kHasAtomicEth = 1 << 2,
  kHasAtomicAckEth = 1 << 3,
  kHasImm = 1 << 4,
  kHasDeth = 1 << 5,
  kHasGrh = 1 << 6,
  kHasIeth = 1 << 7,
  kHasRdeth = 1 << 8,  // reliable datagram (table 38's RD rows; the model sends none)
};

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

struct Packet {
  uint64_t id = 0;                 // unique per engine; for traces
  PacketKind kind = PacketKind::Transport;
  LinkLayer link_layer = LinkLayer::RoCEv2;

  // --- network part (what switches look at) ---
  Address src = 0;
  Address dst = 0;
  uint8_t priority = 0;            // traffic class (0..7): PCP/DSCP-derived on Ethernet, SL on IB
  uint8_t vl = 0;                  // the egress queue it is sent from on this hop: the IB virtual lane
                                   // (from the port's SL-to-VL table), else priority & 7
  uint8_t ingress_class = 0;       // set by a switch: the VL / class it arrived in (credits, PFC)
  bool in_headroom = false;        // set by a switch: arrived after XOFF, held in PFC headroom
  uint8_t dscp = 0;
  bool ect = true;                 // ECN-capable transport
  bool ce = false;                 // congestion experienced (set by a switch)
  uint16_t udp_src_port = 0;       // RoCEv2 entropy; ECMP hashes it
  uint32_t flow_hash = 0;          // for non-RoCE fabrics: a per-flow value ECMP hashes
  uint32_t wire_bytes = 0;         // bytes the packet occupies on the wire, all overheads included
  uint32_t frame_bytes = 0;        // bytes a capture shows (headers + payload + CRCs, no preamble/IFG)
  Time created = 0;                // when the sender built it
  int32_t switch_ingress = -1;     // set by a switch while the packet is in its buffer (PFC accounting)
  Time last_bit_at = 0;            // cut-through: when its last bit reaches the current switch

  // --- control frames ---
  std::array<uint16_t, 8> pause_quanta{};  // PfcPause: per-priority quanta (0 = XON)
  uint8_t pause_enable_mask = 0;           // PfcPause: class-enable vector
  uint32_t credits = 0;                    // IbCredit: flow-control credit limit (FCCL) for `vl`
  uint32_t fctbs = 0;                      // IbCredit: the sender's total bytes sent on `vl`
  bool fc_waiting = false;                 // IbCredit, simulator-only: the sender has packets
                                           // on `vl` waiting for credit (ib_flow_control.h)

  // --- transport part (the HCA's) ---
  uint16_t headers = 0;            // HeaderBits
  Bth bth;
  Reth reth;
  Aeth aeth;
  AtomicEth atomic;
  uint64_t atomic_ack_orig = 0;    // AtomicAckETH: original remote value
  uint32_t imm = 0;                // ImmDt: network byte order, as the verbs user gave it
  uint32_t ieth_rkey = 0;          // IETH: the rkey to invalidate, host order
  Deth deth;
  std::array<uint8_t, 16> sgid{};  // GRH source GID (RoCEv2: IPv4-mapped), when kHasGrh
  std::array<uint8_t, 16> dgid{};
  TcpHeader tcp;                   // iWARP segments
  IwarpFpdu fpdu;                  // iWARP segments with tcp.len > 0

  // Payload: bytes [payload_offset, payload_offset + payload_len) of *payload.
  Payload payload;
  uint32_t payload_offset = 0;
  uint32_t payload_len = 0;

  const uint8_t* payload_data() const {
    return payload ? payload->data() + payload_offset : nullptr;
  }
};

using PacketPtr = std::unique_ptr<Packet>;

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
