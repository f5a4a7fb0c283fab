// Wire helpers shared by the NIC and the capture encoders: MAC addresses, CRCs, checksums,
// big-endian writers and the Ethernet/IPv4 framing every Ethernet link layer starts with.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "sim/net/packet.h"

namespace rdmasim::net {

// Locally administered MAC derived from an IPv4 address: 02:00:a:b:c:d.
std::array<uint8_t, 6> mac_of(Address ipv4);
// CRC-32 (IEEE 802.3, reflected, poly 0x04C11DB7) continuing from `crc` (the register
// value, not inverted): start with 0xffffffff and invert at the end.
uint32_t crc32_update(uint32_t crc, std::span<const uint8_t> data);
// CRC32c (Castagnoli, reflected 0x82F63B78), as MPA's CRC field uses; `crc` is a previous
// result to continue from (0 to start).
uint32_t crc32c(const uint8_t* data, size_t len, uint32_t crc = 0);
// The 16-bit ones' complement checksum of an IPv4 header (checksum field taken as given).
uint16_t ipv4_checksum(std::span<const uint8_t> header);
// InfiniBand VCRC: CRC-16 poly 0x100B, init 0xffff, reflected, final inversion.
uint16_t ib_vcrc(std::span<const uint8_t> data);
// Appends the low `bytes` bytes of `v`, most significant first (network byte order).
void append_be(std::vector<uint8_t>& out, uint64_t v, size_t bytes);
// Appends Ethernet II (+ priority tag when priority != 0) and an IPv4 header with
// `ip_payload` bytes after it; returns the IPv4 header's offset in `out`.
size_t append_eth_ipv4(const Packet& pkt, uint8_t protocol, uint32_t ip_payload,
                       std::vector<uint8_t>& out);

}  // namespace rdmasim::net
