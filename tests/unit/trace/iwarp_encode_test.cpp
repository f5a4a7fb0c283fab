// The iWARP encoder (sim/trace/iwarp_encode.cpp): CRC32c against published vectors, and the
// byte offsets of Ethernet / IPv4 / TCP / MPA / DDP / RDMAP for each kind of segment.
#include <doctest/doctest.h>

#include <cstring>
#include <vector>

#include "sim/net/wire.h"
#include "sim/nic/iwarp.h"
#include "sim/trace/encode.h"
#include "sim/nic/rdma_packet.h"
#include "sim/trace/iwarp_encode.h"

using namespace rdmasim;
using namespace rdmasim::net;
namespace iw = rdmasim::nic::iwarp;

namespace {

uint16_t be16(const std::vector<uint8_t>& b, size_t at) { return static_cast<uint16_t>(b[at] << 8 | b[at + 1]); }
uint32_t be32(const std::vector<uint8_t>& b, size_t at) { return uint32_t(be16(b, at)) << 16 | be16(b, at + 2); }
uint64_t be64(const std::vector<uint8_t>& b, size_t at) { return uint64_t(be32(b, at)) << 32 | be32(b, at + 4); }
uint32_t le32(const std::vector<uint8_t>& b, size_t at) {
  return uint32_t(b[at]) | uint32_t(b[at + 1]) << 8 | uint32_t(b[at + 2]) << 16 | uint32_t(b[at + 3]) << 24;
}

// Offsets with no VLAN tag: Ethernet 14, IPv4 20, TCP 20 + 12 (NOP NOP timestamps).
constexpr size_t kIp = 14, kTcp = 34, kMpa = 66;

nic::RdmaPacket segment(const nic::IwarpFpdu& f, uint32_t payload) {
  nic::RdmaPacket p;
  p.kind = PacketKind::Transport;
  p.link_layer = LinkLayer::IWarp;
  p.src = 0x7f000102;  // 127.0.1.2
  p.dst = 0x7f000101;
  p.ect = true;
  p.tcp.src_port = 49169;
  p.tcp.dst_port = 49170;
  p.tcp.seq = 0xfffffff0;  // about to wrap
  p.tcp.ack = 0x12345678;
  p.tcp.flags = 0x18;      // PSH, ACK
  p.tcp.window = 0x2000;
  p.tcp.ts_val = 777;
  p.fpdu = f;
  if (payload) {
    auto buf = std::make_shared<Bytes>();
    for (uint32_t i = 0; i < payload; ++i) buf->push_back(static_cast<uint8_t>('a' + i % 26));
    p.payload = buf;
    p.payload_len = payload;
  }
  p.tcp.len = (f.mpa_request || f.mpa_reply) ? 20 : iw::size_fpdu(p.fpdu, payload);
  return p;
}

// RFC 1071: the ones' complement sum over the pseudo header and the segment, its checksum
// field included, is 0xffff when the checksum is right.
uint32_t tcp_sum(const nic::RdmaPacket& p, const std::vector<uint8_t>& f) {
  const size_t len = f.size() >= kTcp ? be16(f, kIp + 2) - 20 : 0;
  uint32_t sum = (p.src >> 16) + (p.src & 0xffff) + (p.dst >> 16) + (p.dst & 0xffff) + 6 + len;
  for (size_t i = 0; i < len; i += 2) sum += (f[kTcp + i] << 8) | (i + 1 < len ? f[kTcp + i + 1] : 0);
  while (sum >> 16) sum = (sum & 0xffff) + (sum >> 16);
  return sum;
}

}  // namespace

TEST_CASE("iwarp encode: CRC32c matches RFC 3720 B.4 and the CRC-32C check value") {
  // RFC 3720 (iSCSI) B.4 gives CRC32c results as the bytes sent, least significant first:
  // 32 zero bytes -> aa 36 91 8a, 32 bytes of 0xff -> 43 ab a8 62, 0x00..0x1f -> 4e 79 dd 46.
  std::vector<uint8_t> zeros(32, 0), ones(32, 0xff), inc(32);
  for (int i = 0; i < 32; ++i) inc[i] = static_cast<uint8_t>(i);
  CHECK(net::crc32c(zeros.data(), zeros.size()) == 0x8a9136aau);
  CHECK(net::crc32c(ones.data(), ones.size()) == 0x62a8ab43u);
  CHECK(net::crc32c(inc.data(), inc.size()) == 0x46dd794eu);
  // The catalogue check value of CRC-32C (Castagnoli): "123456789" -> 0xe3069283.
  const char* digits = "123456789";
  CHECK(net::crc32c(reinterpret_cast<const uint8_t*>(digits), 9) == 0xe3069283u);
  // Continuing from a partial result gives the same as one pass.
  const uint32_t part = net::crc32c(reinterpret_cast<const uint8_t*>(digits), 4);
  CHECK(net::crc32c(reinterpret_cast<const uint8_t*>(digits) + 4, 5, part) == 0xe3069283u);
}

TEST_CASE("iwarp encode: a tagged RDMA Write FPDU, byte by byte") {
  nic::IwarpFpdu f;
  f.rdmap_opcode = iw::kRdmapWrite;
  f.tagged = true;
  f.last = true;
  f.stag = 0x1000aa;
  f.to = 0x00007f0011223344ull;
  const nic::RdmaPacket p = segment(f, 13);
  // ULPDU = tagged header 14 + 13 payload = 27; pad to 4 with the length field: 3; CRC 4.
  REQUIRE(p.tcp.len == 2 + 27 + 3 + 4);
  std::vector<uint8_t> o;
  REQUIRE(trace::encode_iwarp_segment(p, o));
  REQUIRE(o.size() == kMpa + p.tcp.len);
  CHECK(be16(o, 12) == 0x0800);
  CHECK(o[kIp + 1] == 2);                       // ECN ECT(0)
  CHECK(be16(o, kIp + 2) == 20 + 32 + 36);      // IPv4 total length
  CHECK(o[kIp + 9] == 6);                       // TCP
  CHECK(be16(o, kTcp) == 49169);
  CHECK(be16(o, kTcp + 2) == 49170);
  CHECK(be32(o, kTcp + 4) == 0xfffffff0u);
  CHECK(be32(o, kTcp + 8) == 0x12345678u);
  CHECK(o[kTcp + 12] == 0x80);                  // data offset 8 words
  CHECK(o[kTcp + 13] == 0x18);
  CHECK(be16(o, kTcp + 14) == 0x2000);
  CHECK(tcp_sum(p, o) == 0xffff);
  CHECK(be32(o, kTcp + 20) == 0x0101080au);     // NOP NOP kind 8 length 10
  CHECK(be32(o, kTcp + 24) == 777);
  CHECK(be16(o, kMpa) == 27);                   // MPA ULPDU length
  CHECK(o[kMpa + 2] == 0xc1);                   // DDP: T 1, L 1, DV 1
  CHECK(o[kMpa + 3] == 0x40);                   // RDMAP: RV 1, opcode 0 (Write)
  CHECK(be32(o, kMpa + 4) == 0x1000aau);        // STag
  CHECK(be64(o, kMpa + 8) == 0x00007f0011223344ull);
  CHECK(std::memcmp(o.data() + kMpa + 16, "abcdefghijklm", 13) == 0);
  CHECK(o[kMpa + 29] == 0);
  CHECK(o[kMpa + 30] == 0);
  CHECK(o[kMpa + 31] == 0);
  // CRC32c over length, ULPDU and pad (RFC 5044 4.3), least significant byte first.
  CHECK(le32(o, kMpa + 32) == net::crc32c(o.data() + kMpa, 32));
}

TEST_CASE("iwarp encode: untagged Send and Read Request headers") {
  nic::IwarpFpdu s;
  s.rdmap_opcode = iw::kRdmapSend;
  s.qn = 0;
  s.msn = 7;
  s.mo = 2848;
  const nic::RdmaPacket send = segment(s, 8);
  std::vector<uint8_t> o;
  REQUIRE(trace::encode_iwarp_segment(send, o));
  CHECK(be16(o, kMpa) == 18 + 8);
  CHECK(o[kMpa + 2] == 0x01);                   // T 0, L 0, DV 1
  CHECK(o[kMpa + 3] == 0x43);                   // RV 1, opcode 3 (Send)
  CHECK(be32(o, kMpa + 4) == 0);                // reserved for the ULP
  CHECK(be32(o, kMpa + 8) == 0);                // QN 0
  CHECK(be32(o, kMpa + 12) == 7);               // MSN
  CHECK(be32(o, kMpa + 16) == 2848);            // MO
  CHECK(std::memcmp(o.data() + kMpa + 20, "abcdefgh", 8) == 0);

  nic::IwarpFpdu r;
  r.rdmap_opcode = iw::kRdmapReadRequest;
  r.qn = 1;
  r.msn = 3;
  r.last = true;
  r.sink_stag = 0x2222;
  r.sink_to = 0x5000;
  nic::RdmaPacket rr = segment(r, 0);
  rr.reth = {.va = 0x9000, .rkey = 0x3333, .dma_len = 65536};
  o.clear();
  REQUIRE(trace::encode_iwarp_segment(rr, o));
  CHECK(be16(o, kMpa) == 18 + 28);
  CHECK(o[kMpa + 3] == 0x41);                   // opcode 1 (Read Request)
  CHECK(be32(o, kMpa + 8) == 1);                // QN 1
  CHECK(be32(o, kMpa + 20) == 0x2222);          // Data Sink STag
  CHECK(be64(o, kMpa + 24) == 0x5000);          // Data Sink TO
  CHECK(be32(o, kMpa + 32) == 65536);           // RDMA Read Message Size
  CHECK(be32(o, kMpa + 36) == 0x3333);          // Data Source STag
  CHECK(be64(o, kMpa + 40) == 0x9000);          // Data Source TO
}

TEST_CASE("iwarp encode: MPA start frames, pure ACKs, and sizes that do not match") {
  nic::IwarpFpdu req;
  req.mpa_request = true;
  std::vector<uint8_t> o;
  REQUIRE(trace::encode_iwarp_segment(segment(req, 0), o));
  REQUIRE(o.size() == kMpa + 20);
  CHECK(std::memcmp(o.data() + kMpa, "MPA ID Req Frame", 16) == 0);  // RFC 5044 7.1
  CHECK(o[kMpa + 16] == 0x40);                  // M 0 (no markers), C 1 (CRC), R 0
  CHECK(o[kMpa + 17] == 1);                     // revision 1
  CHECK(be16(o, kMpa + 18) == 0);               // no private data
  nic::IwarpFpdu rep;
  rep.mpa_reply = true;
  o.clear();
  REQUIRE(trace::encode_iwarp_segment(segment(rep, 0), o));
  CHECK(std::memcmp(o.data() + kMpa, "MPA ID Rep Frame", 16) == 0);

  nic::RdmaPacket ack = segment(nic::IwarpFpdu{}, 0);
  ack.tcp.len = 0;
  ack.tcp.flags = 0x10;
  o.clear();
  REQUIRE(trace::encode_iwarp_segment(ack, o));
  CHECK(o.size() == kMpa);                      // headers only (66 >= the 60-byte minimum)
  CHECK(tcp_sum(ack, o) == 0xffff);

  nic::RdmaPacket bad = segment(nic::IwarpFpdu{}, 10);
  bad.fpdu.ulpdu_len = 5;  // says 5, the headers and payload make 28
  o.assign(3, 0xee);
  CHECK_FALSE(trace::encode_iwarp_segment(bad, o));
  CHECK(o.size() == 3);    // nothing appended
}

TEST_CASE("iwarp encode: trace::encode encodes an iWARP segment with the iWARP encoder") {
  nic::IwarpFpdu f;
  f.rdmap_opcode = iw::kRdmapSend;
  f.msn = 1;
  std::vector<uint8_t> a, b;
  const nic::RdmaPacket p = segment(f, 100);
  REQUIRE(trace::encode(p, a));
  REQUIRE(trace::encode_iwarp_segment(p, b));
  CHECK(a == b);
  CHECK(trace::linktype_for(LinkLayer::IWarp) == trace::linktype_for(LinkLayer::RoCEv2));  // Ethernet
}
