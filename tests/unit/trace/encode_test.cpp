#include <doctest/doctest.h>
#include <zlib.h>

#include <vector>

#include "sim/nic/rdma_packet.h"
#include "sim/trace/encode.h"

using namespace rdmasim;
using namespace rdmasim::net;

namespace {

uint16_t be16(const std::vector<uint8_t>& b, size_t at) { return static_cast<uint16_t>(b[at] << 8 | b[at + 1]); }
uint32_t be24(const std::vector<uint8_t>& b, size_t at) { return uint32_t(b[at]) << 16 | be16(b, at + 1); }
uint32_t be32(const std::vector<uint8_t>& b, size_t at) { return uint32_t(be16(b, at)) << 16 | be16(b, at + 2); }
uint32_t le32(const std::vector<uint8_t>& b, size_t at) {
  return uint32_t(b[at]) | uint32_t(b[at + 1]) << 8 | uint32_t(b[at + 2]) << 16 | uint32_t(b[at + 3]) << 24;
}

nic::RdmaPacket roce(uint8_t opcode, uint32_t payload) {
  nic::RdmaPacket p;
  p.link_layer = LinkLayer::RoCEv2;
  p.src = 0x7f000102;  // 127.0.1.2
  p.dst = 0x7f000101;
  p.dscp = 26;
  p.ect = true;
  p.udp_src_port = 0xc123;
  p.bth.opcode = opcode;
  p.bth.ack_req = true;
  p.bth.dest_qp = 0xabcdef;
  p.bth.psn = 0x123456;
  p.payload_len = payload;
  return p;
}

}  // namespace

TEST_CASE("roce: SEND only, 10 bytes of zeros — offsets per Ethernet/IPv4/UDP/BTH layouts") {
  nic::RdmaPacket p = roce(0x04, 10);
  std::vector<uint8_t> f;
  REQUIRE(trace::encode(p, f));
  // 14 Ethernet + 20 IPv4 + 8 UDP + 12 BTH + 10 payload + 2 pad + 4 ICRC = 70
  REQUIRE(f.size() == 70);
  CHECK(f[0] == 0x02); CHECK(f[2] == 127); CHECK(f[5] == 1);   // dst MAC 02:00:7f:00:01:01
  CHECK(f[11] == 2);                                            // src MAC ends in .2
  CHECK(be16(f, 12) == 0x0800);
  CHECK(f[14] == 0x45);
  CHECK(f[15] == (26 << 2 | 2));                                // DSCP 26, ECT(0)
  CHECK(be16(f, 16) == 70 - 14);                                // IPv4 total length
  CHECK(f[23] == 17);                                           // UDP
  CHECK(be32(f, 26) == 0x7f000102);
  CHECK(be32(f, 30) == 0x7f000101);
  // RFC 1071: the ones' complement sum over the header including its checksum is 0xffff.
  uint32_t sum = 0;
  for (size_t i = 14; i < 34; i += 2) sum += be16(f, i);
  while (sum >> 16) sum = (sum & 0xffff) + (sum >> 16);
  CHECK(sum == 0xffff);
  CHECK(be16(f, 34) == 0xc123);
  CHECK(be16(f, 36) == 4791);
  CHECK(be16(f, 38) == 70 - 34);                                // UDP length
  CHECK(be16(f, 40) == 0);                                      // no UDP checksum
  CHECK(f[42] == 0x04);
  CHECK(f[43] == (2 << 4));                                     // pad count 2 (10 -> 12)
  CHECK(be16(f, 44) == 0xffff);
  CHECK(be24(f, 47) == 0xabcdef);
  CHECK(f[50] == 0x80);                                         // AckReq
  CHECK(be24(f, 51) == 0x123456);
  for (size_t i = 54; i < 66; ++i) CHECK(f[i] == 0);            // payload zeros + pad
  // ICRC (IBTA A17.8): CRC-32 over 8 bytes of 1s, then IP..payload with TOS, TTL, IP
  // checksum, UDP checksum and BTH byte 4 set to 1s; computed here with zlib.
  std::vector<uint8_t> m(f.begin() + 14 - 8, f.end() - 4);
  for (int i = 0; i < 8; ++i) m[i] = 0xff;
  m[8 + 1] = 0xff; m[8 + 8] = 0xff; m[8 + 10] = m[8 + 11] = 0xff;
  m[8 + 26] = m[8 + 27] = 0xff;
  m[8 + 28 + 4] = 0xff;
  CHECK(le32(f, 66) == static_cast<uint32_t>(crc32(0, m.data(), static_cast<uInt>(m.size()))));
}

TEST_CASE("roce: CE mark, priority tag, extension headers in opcode order") {
  nic::RdmaPacket p = roce(0x0b, 0);  // RDMA WRITE only with immediate: RETH then ImmDt
  p.ce = true;
  p.priority = 3;
  p.reth = {.va = 0x1122334455667788ull, .rkey = 0xaabbccdd, .dma_len = 0};
  p.imm = 0;
  reinterpret_cast<uint8_t*>(&p.imm)[0] = 0xde;  // imm travels in the byte order given
  std::vector<uint8_t> f;
  REQUIRE(trace::encode(p, f));
  CHECK(be16(f, 12) == 0x8100);
  CHECK(be16(f, 14) == (3 << 13));                              // PCP 3, VID 0
  CHECK(be16(f, 16) == 0x0800);
  CHECK((f[19] & 3) == 3);                                      // CE
  const size_t bth = 18 + 20 + 8;
  CHECK(be32(f, bth + 12) == 0x11223344); CHECK(be32(f, bth + 16) == 0x55667788);
  CHECK(be32(f, bth + 20) == 0xaabbccdd);
  CHECK(f[bth + 28] == 0xde);
  // 18 + 20 + 8 + 12 + 16 RETH + 4 ImmDt + 4 ICRC
  CHECK(f.size() == 82);
}

TEST_CASE("roce: an XRC request's XRCETH follows the BTH, before its RETH (annex A14)") {
  nic::RdmaPacket p = roce(0xaa, 0);  // XRC RDMA WRITE Only: XRCETH then RETH
  p.xrc_srqn = 0x00abcd12;
  p.reth = {.va = 0x1122334455667788ull, .rkey = 0xaabbccdd, .dma_len = 0};
  std::vector<uint8_t> f;
  REQUIRE(trace::encode(p, f));
  const size_t bth = 14 + 20 + 8;
  CHECK(f[bth] == 0xaa);
  CHECK(f[bth + 12] == 0);                                      // 8 reserved bits
  CHECK(be24(f, bth + 13) == 0xabcd12);                         // the XRC SRQ number
  CHECK(be32(f, bth + 16) == 0x11223344);                       // RETH after the XRCETH
  CHECK(be32(f, bth + 24) == 0xaabbccdd);
  // 14 + 20 + 8 + 12 BTH + 4 XRCETH + 16 RETH + 4 ICRC
  CHECK(f.size() == 78);
  CHECK(trace::headers_for_opcode(0xb1) == kHasAeth);           // XRC ACK: no XRCETH
}

TEST_CASE("roce: headers follow the opcode table") {
  CHECK(trace::headers_for_opcode(0x11) == kHasAeth);
  CHECK(trace::headers_for_opcode(0x12) == (kHasAeth | kHasAtomicAckEth));
  CHECK(trace::headers_for_opcode(0x13) == kHasAtomicEth);
  CHECK(trace::headers_for_opcode(0x0c) == kHasReth);
  CHECK(trace::headers_for_opcode(0x64) == kHasDeth);
  CHECK(trace::headers_for_opcode(0x65) == (kHasDeth | kHasImm));
  CHECK(trace::headers_for_opcode(0x17) == kHasIeth);
  CHECK(trace::headers_for_opcode(0x2c) == 0xffff);             // UC has no READ
  nic::RdmaPacket bad = roce(0x2c, 0);
  std::vector<uint8_t> f;
  CHECK_FALSE(trace::encode(bad, f));
  CHECK(f.empty());
}

TEST_CASE("a transport-kind packet without a transport part (a bare net::Packet) is not encoded") {
  // The transport headers live in nic::RdmaPacket; a plain net::Packet has none to write, on
  // any link layer, so the encoder refuses it rather than inventing a BTH.
  for (LinkLayer ll : {LinkLayer::RoCEv2, LinkLayer::InfiniBand, LinkLayer::IWarp}) {
    for (PacketKind k : {PacketKind::Transport, PacketKind::Cnp}) {
      Packet bare;
      bare.kind = k;
      bare.link_layer = ll;
      std::vector<uint8_t> f;
      CHECK_FALSE(trace::encode(bare, f));
      CHECK(f.empty());
    }
  }
  // clone() keeps the dynamic type: the copy of an RdmaPacket still encodes, byte for byte.
  const nic::RdmaPacket p = roce(0x04, 10);
  std::unique_ptr<Packet> copy = p.clone();
  std::vector<uint8_t> a, b;
  REQUIRE(trace::encode(p, a));
  REQUIRE(trace::encode(*copy, b));
  CHECK(a == b);
}

TEST_CASE("roce: CNP is BTH 0x81 + 16 reserved bytes; PFC is a MAC control frame") {
  nic::RdmaPacket c = roce(0, 0);
  c.kind = PacketKind::Cnp;
  std::vector<uint8_t> f;
  REQUIRE(trace::encode(c, f));
  CHECK(f[42] == 0x81);
  CHECK(f.size() == 14 + 20 + 8 + 12 + 16 + 4);
  Packet pfc;
  pfc.kind = PacketKind::PfcPause;
  pfc.pause_enable_mask = 0x88;
  pfc.pause_quanta[3] = 0xffff;
  pfc.pause_quanta[7] = 0x0102;
  std::vector<uint8_t> g;
  REQUIRE(trace::encode(pfc, g));
  CHECK(g.size() == 60);                                        // minimum frame without FCS
  CHECK(g[0] == 0x01); CHECK(g[1] == 0x80); CHECK(g[2] == 0xc2); CHECK(g[5] == 0x01);
  CHECK(be16(g, 12) == 0x8808);
  CHECK(be16(g, 14) == 0x0101);
  CHECK(be16(g, 16) == 0x0088);
  CHECK(be16(g, 18 + 2 * 3) == 0xffff);
  CHECK(be16(g, 18 + 2 * 7) == 0x0102);
  CHECK(be16(g, 18) == 0);
}

TEST_CASE("ib: LRH, BTH, ICRC and VCRC") {
  nic::RdmaPacket p = roce(0x11, 0);  // ACK: BTH + AETH
  p.link_layer = LinkLayer::InfiniBand;
  p.src = 7;
  p.dst = 0x1234;
  p.vl = 2;
  p.priority = 5;
  p.aeth = {.syndrome = 0x1f, .msn = 0x000102};
  std::vector<uint8_t> f;
  REQUIRE(trace::encode(p, f));
  // 8 LRH + 12 BTH + 4 AETH + 4 ICRC + 2 VCRC
  REQUIRE(f.size() == 30);
  CHECK(f[0] == 0x20);                                          // VL 2, LVer 0
  CHECK(f[1] == 0x52);                                          // SL 5, LNH 2 (BTH follows)
  CHECK(be16(f, 2) == 0x1234);
  CHECK(be16(f, 4) == 28 / 4);                                  // LRH..ICRC in words
  CHECK(be16(f, 6) == 7);
  CHECK(f[8] == 0x11);
  CHECK(f[20] == 0x1f); CHECK(be24(f, 21) == 0x000102);
  std::vector<uint8_t> m(f.begin(), f.begin() + 24);
  m[0] |= 0xf0;                                                 // VL masked
  m[8 + 4] = 0xff;                                              // BTH reserved byte
  CHECK(le32(f, 24) == static_cast<uint32_t>(crc32(0, m.data(), static_cast<uInt>(m.size()))));
  // VCRC: CRC-16 0x100B, init 0xffff, LSB first, inverted — bit-serial here.
  uint16_t crc = 0xffff;
  for (size_t i = 0; i < 28; ++i)
    for (int bit = 0; bit < 8; ++bit) {
      const bool in = ((f[i] >> bit) & 1) ^ (crc & 1);
      crc = static_cast<uint16_t>(crc >> 1);
      if (in) crc ^= 0xd008;
    }
  CHECK(be16(f, 28) == static_cast<uint16_t>(~crc));
}

TEST_CASE("ib: credit packet and the ERF record around it") {
  Packet fc;
  fc.kind = PacketKind::IbCredit;
  fc.link_layer = LinkLayer::InfiniBand;
  fc.vl = 3;
  fc.credits = 64 * 0x123;                                      // FCCL in 64-byte blocks
  std::vector<uint8_t> r;
  REQUIRE(trace::encode_record(fc, kSecond + kSecond / 2, r));
  REQUIRE(r.size() == 16 + 8);
  // ERF timestamp: 1 s in the high word, 0.5 s = 2^31 in the low word (little-endian)
  CHECK(le32(r, 0) == 0x80000000u);
  CHECK(le32(r, 4) == 1);
  CHECK(r[8] == trace::kErfTypeInfinibandLink);
  CHECK(be16(r, 10) == 24);                                     // rlen
  CHECK(be16(r, 14) == 8);                                      // wlen
  CHECK(be16(r, 16) == 0);                                      // Op 0, FCTBS 0
  CHECK(be16(r, 18) == (3 << 12 | 0x123));
}
