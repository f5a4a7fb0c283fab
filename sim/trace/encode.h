// Encoders from the simulator's net::Packet to the bytes a capture on a real wire shows.
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
// iWARP: Ethernet/IPv4/TCP/MPA/DDP/RDMAP by the encoder the iWARP model registers
// (set_iwarp_encoder; sim/nic/iwarp_encode.cpp, registered by every iWARP Hca).
// Not encoded (encode() returns false): iWARP segments while no encoder is registered,
// opcodes the table below does not know.
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <vector>

#include "sim/net/packet.h"

namespace rdmasim::trace {

inline constexpr uint16_t kRoceUdpPort = 4791;
inline constexpr uint8_t kCnpOpcode = 0x81;

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

// The iWARP encoder (TCP/MPA/DDP/RDMAP) is supplied by the iWARP model; until one is set,
// iWARP packets are not captured.
using IwarpEncoder = bool (*)(const net::Packet& pkt, std::vector<uint8_t>& out);
void set_iwarp_encoder(IwarpEncoder enc);

// Which extension headers (net::HeaderBits) follow the BTH for an IBTA opcode, as the
// opcode defines them (not as the packet's `headers` says). ~0 for opcodes not modelled.
uint16_t headers_for_opcode(uint8_t opcode);

// Building blocks, exposed for tests and for other encoders (iWARP uses the Ethernet/IP
// parts).
// Locally administered MAC derived from an IPv4 address: 02:00:a:b:c:d.
std::array<uint8_t, 6> mac_of(net::Address ipv4);
// CRC-32 (IEEE 802.3, reflected, poly 0x04C11DB7) continuing from `crc` (the register
// value, not inverted): start with 0xffffffff and invert at the end.
uint32_t crc32_update(uint32_t crc, std::span<const uint8_t> data);
// The 16-bit ones' complement checksum of an IPv4 header (checksum field taken as given).
uint16_t ipv4_checksum(std::span<const uint8_t> header);
// InfiniBand VCRC: CRC-16 poly 0x100B, init 0xffff, reflected, final inversion.
uint16_t ib_vcrc(std::span<const uint8_t> data);
// Appends the low `bytes` bytes of `v`, most significant first (network byte order).
void append_be(std::vector<uint8_t>& out, uint64_t v, size_t bytes);
// Appends Ethernet II (+ priority tag when priority != 0) and an IPv4 header with
// `ip_payload` bytes after it; returns the IPv4 header's offset in `out`.
size_t append_eth_ipv4(const net::Packet& pkt, uint8_t protocol, uint32_t ip_payload,
                       std::vector<uint8_t>& out);

}  // namespace rdmasim::trace
