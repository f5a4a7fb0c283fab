#include "sim/net/wire.h"

namespace rdmasim::net {

std::array<uint8_t, 6> mac_of(Address a) {
  return {0x02, 0x00, static_cast<uint8_t>(a >> 24), static_cast<uint8_t>(a >> 16),
          static_cast<uint8_t>(a >> 8), static_cast<uint8_t>(a)};
}

uint32_t crc32_update(uint32_t crc, std::span<const uint8_t> data) {
  for (uint8_t b : data) {
    crc ^= b;
    for (int i = 0; i < 8; ++i) crc = (crc >> 1) ^ (0xedb88320u & (0u - (crc & 1)));
  }
  return crc;
}

uint32_t crc32c(const uint8_t* data, size_t len, uint32_t crc) {
  uint32_t c = ~crc;
  for (size_t i = 0; i < len; ++i) {
    c ^= data[i];
    for (int k = 0; k < 8; ++k) c = (c >> 1) ^ (0x82f63b78u & (0u - (c & 1u)));
  }
  return ~c;
}

uint16_t ipv4_checksum(std::span<const uint8_t> h) {
  uint32_t sum = 0;
  for (size_t i = 0; i + 1 < h.size(); i += 2) sum += (h[i] << 8) | h[i + 1];
  while (sum >> 16) sum = (sum & 0xffff) + (sum >> 16);
  return static_cast<uint16_t>(~sum);
}

uint16_t ib_vcrc(std::span<const uint8_t> data) {
  // 0x100B reflected is 0xD008.
  uint16_t crc = 0xffff;
  for (uint8_t b : data) {
    crc ^= b;
    for (int i = 0; i < 8; ++i) crc = static_cast<uint16_t>((crc >> 1) ^ (0xd008u & (0u - (crc & 1u))));
  }
  return static_cast<uint16_t>(~crc);
}

void append_be(std::vector<uint8_t>& o, uint64_t v, size_t bytes) {
  for (size_t i = bytes; i-- > 0;) o.push_back(static_cast<uint8_t>(v >> (8 * i)));
}

size_t append_eth_ipv4(const Packet& p, uint8_t protocol, uint32_t ip_payload, std::vector<uint8_t>& o) {
  const auto dst = mac_of(p.dst), src = mac_of(p.src);
  o.insert(o.end(), dst.begin(), dst.end());
  o.insert(o.end(), src.begin(), src.end());
  if (p.priority & 7) {
    append_be(o, 0x8100, 2);
    append_be(o, (p.priority & 7) << 13, 2);  // PCP, DEI 0, VID 0
  }
  append_be(o, 0x0800, 2);
  const size_t ip = o.size();
  const uint8_t ecn = p.ce ? 3 : (p.ect ? 2 : 0);
  o.push_back(0x45);
  o.push_back(static_cast<uint8_t>((p.dscp << 2) | ecn));
  append_be(o, 20 + ip_payload, 2);
  append_be(o, p.id & 0xffff, 2);
  append_be(o, 0x4000, 2);  // don't fragment
  o.push_back(64);          // TTL
  o.push_back(protocol);
  append_be(o, 0, 2);
  append_be(o, p.src, 4);
  append_be(o, p.dst, 4);
  const uint16_t sum = ipv4_checksum(std::span<const uint8_t>(o).subspan(ip, 20));
  o[ip + 10] = static_cast<uint8_t>(sum >> 8);
  o[ip + 11] = static_cast<uint8_t>(sum);
  return ip;
}

}  // namespace rdmasim::net
