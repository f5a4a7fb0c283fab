// The HCA's packet: the fabric's net::Packet plus the RDMA transport headers (BTH and its
// extension headers, the GRH's GIDs) and, on iWARP, the TCP header and the FPDU a segment
// carries. Only the NIC model and the encoders (sim/trace) read this part; switches and links
// see a net::Packet.
//
// Every packet of kind Transport or Cnp on a fabric is an RdmaPacket: the HCA model makes
// them (Hca::Impl::new_packet, the iWARP segmenter). rdma_of() is the checked view for code
// that may be handed a packet someone else built (a test, a capture).
#pragma once

#include <array>
#include <cassert>
#include <cstdint>
#include <memory>
#include <typeinfo>
#include <vector>

#include "sim/net/ibta.h"
#include "sim/net/packet.h"

namespace rdmasim::nic {

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
  // A start frame's flags (RFC 5044 7.1: M 0x80 markers, C 0x40 CRC, R 0x20 rejected) and
  // revision; its private data is the packet's payload (payload_len bytes).
  uint8_t mpa_flags = 0x40;
  uint8_t mpa_rev = 1;
};

struct RdmaPacket final : net::Packet {
  uint16_t headers = 0;            // HeaderBits
  Bth bth;
  Reth reth;
  Aeth aeth;
  AtomicEth atomic;
  uint64_t atomic_ack_orig = 0;    // AtomicAckETH: original remote value
  uint32_t imm = 0;                // ImmDt: network byte order, as the verbs user gave it
  uint32_t ieth_rkey = 0;          // IETH: the rkey to invalidate, host order
  Deth deth;
  uint32_t xrc_srqn = 0;           // XRCETH (XRC requests): the XRC SRQ at the target, 24 bits
  std::array<uint8_t, 16> sgid{};  // GRH source GID (RoCEv2: IPv4-mapped), when kHasGrh
  std::array<uint8_t, 16> dgid{};
  TcpHeader tcp;                   // iWARP segments
  IwarpFpdu fpdu;                  // iWARP segments with tcp.len > 0
  // HPCC: an ACK's copy of the INT hops of the data packet it acknowledges (the HPCC
  // simulator carries them in a header after the BTH; sized into the ACK, see finish_packet).
  std::vector<net::IntHop> int_echo;
  // Simulator-only timestamps and echoes for the delay- and ECN-window algorithms (TIMELY,
  // Swift, DCTCP; see cc_hooks.cpp). nic_rx_at: when the packet reached the receiving NIC's
  // port. On an ACK: ack_delay, the responder's time from the acknowledged packet's arrival
  // to this ACK's send (-1: unknown; Swift's remote NIC timestamps), and ce_echo, how many
  // of the packets it covers arrived CE-marked (DCTCP's ECN echo).
  Time nic_rx_at = 0;
  Time ack_delay = -1;
  uint32_t ce_echo = 0;
  // PCIe on (READ responses): the payload must be read from host memory by DMA before the
  // packet goes; dma_ready is when it has been, once the read is issued (dma_wanted false).
  bool dma_wanted = false;
  Time dma_ready = 0;
  // IRN (HcaConfig::loss_recovery): a NACK's selective ACK, the PSN of the out-of-order
  // packet that caused it (its BTH PSN is the cumulative one: the responder's expected PSN).
  bool has_sack = false;
  uint32_t sack_psn = 0;

  std::unique_ptr<net::Packet> clone() const override { return std::make_unique<RdmaPacket>(*this); }
};

using RdmaPacketPtr = std::unique_ptr<RdmaPacket>;

// The transport view of a packet, or null when it has none (a PFC or credit frame, or a
// packet built as a plain net::Packet). Off the NIC's hot path: captures, taps, tests.
inline const RdmaPacket* rdma_of(const net::Packet& p) { return dynamic_cast<const RdmaPacket*>(&p); }
inline RdmaPacket* rdma_of(net::Packet& p) { return dynamic_cast<RdmaPacket*>(&p); }

// The unchecked views, for hot receive paths (the HCA, a study's taps): `p` came off a fabric, so if its kind is
// Transport or Cnp an HCA built it as an RdmaPacket (the invariant above; asserted).
inline const RdmaPacket& rdma_view(const net::Packet& p) {
  assert(typeid(p) == typeid(RdmaPacket));  // RdmaPacket is final: cheaper than dynamic_cast
  return static_cast<const RdmaPacket&>(p);
}
inline RdmaPacketPtr rdma_cast(net::PacketPtr p) {
  assert(p && typeid(*p) == typeid(RdmaPacket));
  return RdmaPacketPtr(static_cast<RdmaPacket*>(p.release()));
}

}  // namespace rdmasim::nic
