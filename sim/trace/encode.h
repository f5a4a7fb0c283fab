// Encoders from the simulator's packets (nic::RdmaPacket for transport ones) to the bytes a
// capture on a real wire shows.
//
// RoCEv2 (Ethernet link type): Ethernet II, an 802.1Q priority tag (VID 0, PCP = priority)
// when the priority is nonzero, IPv4 (DSCP, ECN, header checksum), UDP to 4791 (checksum 0,
// as RoCEv2 allows), BTH and the extension headers its opcode requires, the payload (zeros
// when the packet carries no bytes), the pad to 4 bytes and the ICRC computed per IBTA
// (annex A17). Frames shorter than 60 bytes are padded; no FCS is written.
// InfiniBand: LRH, GRH when the packet is global, BTH..., payload, pad, ICRC and VCRC;
// flow-control (credit) packets as Op/FCTBS/VL/FCCL + LPCRC. Captured as ERF records
// (pcap link type 197, ERF type 21 for packets, 25 for link packets): Debian 12's tshark
// cannot read link type 247.
// PFC: a MAC control frame (0x8808, opcode 0x0101, class-enable vector, 8 quanta).
// CNP: RoCEv2 BTH opcode 0x81 followed by 16 reserved bytes.
// iWARP: Ethernet/IPv4/TCP/MPA/DDP/RDMAP (sim/trace/iwarp_encode.h).
// Not encoded (encode() returns false): opcodes the table below does not know.
#pragma once

#include <cstdint>
#include <vector>

#include "sim/net/packet.h"

namespace rdmasim::trace {

inline constexpr uint16_t kRoceUdpPort = 4791;

// The pcap link type a fabric of this link layer is captured with.
uint32_t linktype_for(net::LinkLayer ll);

// Appends the frame of `pkt` to `out` (for InfiniBand: the bare IB packet, no ERF header).
// Returns false (appending nothing) when packets of this kind are not captured on this
// link layer.
bool encode(const net::Packet& pkt, std::vector<uint8_t>& out);

inline constexpr uint8_t kErfTypeInfiniband = 21;
inline constexpr uint8_t kErfTypeInfinibandLink = 25;
// Appends a 16-byte ERF record header for a `len`-byte record body at simulated time `t`.
void append_erf_header(Time t, uint8_t erf_type, uint16_t len, std::vector<uint8_t>& out);
// Bytes the frame of `pkt` occupies inside its pcap record, for the capture (ERF-wrapped on
// InfiniBand): encode() plus the ERF header when the link type is ERF.
bool encode_record(const net::Packet& pkt, Time t, std::vector<uint8_t>& out);

// Which extension headers (net::HeaderBits) the encoder writes after the BTH for an IBTA
// opcode: the opcode's own (net::ibta, not the packet's `headers`). 0xffff for opcodes it does
// not encode: unknown ones, RD (packets carry no RDETH fields) and CNP (its own layout).
uint16_t headers_for_opcode(uint8_t opcode);

}  // namespace rdmasim::trace
