// The IBTA opcode table (sim/net/ibta.h) against the specification: IBTA Vol 1 release
// 1.4, 9.2 table 38 "OpCode field" (which extension headers each opcode carries; rdma-core's
// rxe_opcode.c and Wireshark's packet-infiniband.c list the same), header lengths from
// 9.3.1-9.3.9, and RoCEv2's CNP from annex A17 (BTH opcode 0x81).
#include <doctest/doctest.h>

#include <string_view>

#include "sim/net/ibta.h"

using namespace rdmasim::net;
using namespace rdmasim::net::ibta;

namespace {

// One row of table 38 as the specification writes it: the headers in the order they follow
// the BTH, and their byte count summed by hand from 9.3 (RDETH 4, DETH 8, RETH 16,
// AtomicETH 28, AETH 4, AtomicAckETH 8, ImmDt 4, IETH 4).
struct SpecRow {
  uint8_t code;
  std::string_view name;
  uint16_t headers;
  uint32_t ext_bytes;
  Op op;
  Position position;
};

constexpr uint16_t kNone = 0;
constexpr Position F = Position::First, M = Position::Middle, L = Position::Last, O = Position::Only;

constexpr SpecRow kRcRows[] = {
    {0x00, "SEND First", kNone, 0, Op::Send, F},
    {0x01, "SEND Middle", kNone, 0, Op::Send, M},
    {0x02, "SEND Last", kNone, 0, Op::Send, L},
    {0x03, "SEND Last with Immediate", kHasImm, 4, Op::Send, L},
    {0x04, "SEND Only", kNone, 0, Op::Send, O},
    {0x05, "SEND Only with Immediate", kHasImm, 4, Op::Send, O},
    {0x06, "RDMA WRITE First", kHasReth, 16, Op::Write, F},
    {0x07, "RDMA WRITE Middle", kNone, 0, Op::Write, M},
    {0x08, "RDMA WRITE Last", kNone, 0, Op::Write, L},
    {0x09, "RDMA WRITE Last with Immediate", kHasImm, 4, Op::Write, L},
    {0x0a, "RDMA WRITE Only", kHasReth, 16, Op::Write, O},
    {0x0b, "RDMA WRITE Only with Immediate", kHasReth | kHasImm, 20, Op::Write, O},
    {0x0c, "RDMA READ Request", kHasReth, 16, Op::ReadRequest, O},
    {0x0d, "RDMA READ response First", kHasAeth, 4, Op::ReadResponse, F},
    {0x0e, "RDMA READ response Middle", kNone, 0, Op::ReadResponse, M},
    {0x0f, "RDMA READ response Last", kHasAeth, 4, Op::ReadResponse, L},
    {0x10, "RDMA READ response Only", kHasAeth, 4, Op::ReadResponse, O},
    {0x11, "Acknowledge", kHasAeth, 4, Op::Ack, O},
    {0x12, "ATOMIC Acknowledge", kHasAeth | kHasAtomicAckEth, 12, Op::AtomicAck, O},
    {0x13, "CmpSwap", kHasAtomicEth, 28, Op::Atomic, O},
    {0x14, "FetchAdd", kHasAtomicEth, 28, Op::Atomic, O},
    {0x16, "SEND Last with Invalidate", kHasIeth, 4, Op::Send, L},
    {0x17, "SEND Only with Invalidate", kHasIeth, 4, Op::Send, O},
};

// Annex A14 (XRC), opcodes 101xxxxx: RC's operations; the requests carry an XRCETH (4 bytes)
// right after the BTH, the responses do not (rdma-core's rxe XRC opcode table lists the same).
constexpr uint16_t kX = kHasXrceth;
constexpr SpecRow kXrcRows[] = {
    {0xa0, "SEND First", kX, 4, Op::Send, F},
    {0xa1, "SEND Middle", kX, 4, Op::Send, M},
    {0xa2, "SEND Last", kX, 4, Op::Send, L},
    {0xa3, "SEND Last with Immediate", kX | kHasImm, 8, Op::Send, L},
    {0xa4, "SEND Only", kX, 4, Op::Send, O},
    {0xa5, "SEND Only with Immediate", kX | kHasImm, 8, Op::Send, O},
    {0xa6, "RDMA WRITE First", kX | kHasReth, 20, Op::Write, F},
    {0xa7, "RDMA WRITE Middle", kX, 4, Op::Write, M},
    {0xa8, "RDMA WRITE Last", kX, 4, Op::Write, L},
    {0xa9, "RDMA WRITE Last with Immediate", kX | kHasImm, 8, Op::Write, L},
    {0xaa, "RDMA WRITE Only", kX | kHasReth, 20, Op::Write, O},
    {0xab, "RDMA WRITE Only with Immediate", kX | kHasReth | kHasImm, 24, Op::Write, O},
    {0xac, "RDMA READ Request", kX | kHasReth, 20, Op::ReadRequest, O},
    {0xad, "RDMA READ response First", kHasAeth, 4, Op::ReadResponse, F},
    {0xae, "RDMA READ response Middle", kNone, 0, Op::ReadResponse, M},
    {0xaf, "RDMA READ response Last", kHasAeth, 4, Op::ReadResponse, L},
    {0xb0, "RDMA READ response Only", kHasAeth, 4, Op::ReadResponse, O},
    {0xb1, "Acknowledge", kHasAeth, 4, Op::Ack, O},
    {0xb2, "ATOMIC Acknowledge", kHasAeth | kHasAtomicAckEth, 12, Op::AtomicAck, O},
    {0xb3, "CmpSwap", kX | kHasAtomicEth, 32, Op::Atomic, O},
    {0xb4, "FetchAdd", kX | kHasAtomicEth, 32, Op::Atomic, O},
    {0xb6, "SEND Last with Invalidate", kX | kHasIeth, 8, Op::Send, L},
    {0xb7, "SEND Only with Invalidate", kX | kHasIeth, 8, Op::Send, O},
};

void check_row(const SpecRow& r, Transport t) {
  CAPTURE(static_cast<int>(r.code));
  const Opcode& o = info(r.code);
  CHECK(o.known());
  CHECK(o.code == r.code);
  CHECK(o.name == r.name);
  CHECK(o.transport == t);
  CHECK(o.op == r.op);
  CHECK(o.position == r.position);
  CHECK(o.headers == r.headers);
  CHECK(ext_header_bytes(o.headers) == r.ext_bytes);
  CHECK(o.immediate == ((r.headers & kHasImm) != 0));
  CHECK(o.invalidate == ((r.headers & kHasIeth) != 0));
}

}  // namespace

TEST_CASE("ibta: RC opcodes 0x00-0x17 carry table 38's headers") {
  for (const SpecRow& r : kRcRows) check_row(r, Transport::RC);
  CHECK_FALSE(info(0x15).known());  // reserved in RC
  CHECK_FALSE(info(0x18).known());  // 0x18-0x1f reserved
}

TEST_CASE("ibta: XRC opcodes 0xa0-0xb7 are RC's with an XRCETH on each request (annex A14)") {
  for (const SpecRow& r : kXrcRows) check_row(r, Transport::XRC);
  CHECK_FALSE(info(0xb5).known());  // no XRC RESYNC
  CHECK(kXrcethBytes == 4);
}

TEST_CASE("ibta: UC (0x20 | op) has SEND and RDMA WRITE only, with RC's headers") {
  for (const SpecRow& r : kRcRows) {
    if (r.code > 0x0b) {
      CHECK_FALSE(info(static_cast<uint8_t>(0x20 | r.code)).known());  // no READ, ACK, atomics, invalidate
      continue;
    }
    SpecRow uc = r;
    uc.code = static_cast<uint8_t>(0x20 | r.code);
    check_row(uc, Transport::UC);
  }
}

TEST_CASE("ibta: RD (0x40 | op) adds RDETH to every packet and DETH to requests") {
  for (const SpecRow& r : kRcRows) {
    if (r.code >= 0x16) {
      CHECK_FALSE(info(static_cast<uint8_t>(0x40 | r.code)).known());  // invalidate is RC only
      continue;
    }
    const bool request = r.op == Op::Send || r.op == Op::Write || r.op == Op::ReadRequest ||
                         r.op == Op::Atomic;
    SpecRow rd = r;
    rd.code = static_cast<uint8_t>(0x40 | r.code);
    rd.headers = static_cast<uint16_t>(r.headers | kHasRdeth | (request ? kHasDeth : 0));
    rd.ext_bytes = r.ext_bytes + 4 + (request ? 8 : 0);
    check_row(rd, Transport::RD);
  }
  check_row({0x55, "RESYNC", kHasRdeth | kHasDeth, 12, Op::Resync, O}, Transport::RD);
}

TEST_CASE("ibta: UD has SEND Only (0x64) and SEND Only with Immediate (0x65), with DETH") {
  check_row({0x64, "SEND Only", kHasDeth, 8, Op::Send, O}, Transport::UD);
  check_row({0x65, "SEND Only with Immediate", kHasDeth | kHasImm, 12, Op::Send, O}, Transport::UD);
  for (int op = 0; op < 0x20; ++op)
    if (op != 0x04 && op != 0x05) CHECK_FALSE(info(static_cast<uint8_t>(0x60 | op)).known());
}

TEST_CASE("ibta: RoCEv2 CNP is 0x81 with no extension header (annex A17)") {
  const Opcode& c = info(0x81);
  CHECK(c.known());
  CHECK(c.transport == Transport::CNP);
  CHECK(c.op == Op::Cnp);
  CHECK(c.headers == 0);
  CHECK_FALSE(c.is_request());
  CHECK_FALSE(c.is_response());
  CHECK(kCnpReservedBytes == 16);
}

TEST_CASE("ibta: the table knows exactly RC 23 + UC 12 + RD 22 + UD 2 + CNP 1 + XRC 23 opcodes") {
  // RC: 0x00-0x14 and 0x16-0x17; UC: 0x20-0x2b; RD: 0x40-0x55; UD: 0x64, 0x65; CNP: 0x81;
  // XRC: 0xa0-0xb4 and 0xb6-0xb7.
  int known = 0;
  for (const Opcode& o : kOpcodes) known += o.known();
  CHECK(known == 23 + 12 + 22 + 2 + 1 + 23);
  for (int c = 0x82; c < 0xa0; ++c) CHECK_FALSE(info(static_cast<uint8_t>(c)).known());  // reserved
  for (int c = 0xb8; c < 0x100; ++c) CHECK_FALSE(info(static_cast<uint8_t>(c)).known());  // vendor
}

TEST_CASE("ibta: requests, responses and message boundaries follow the operation") {
  CHECK(info(kRc | kSendFirst).is_request());
  CHECK(info(kRc | kReadRequest).is_request());
  CHECK(info(kRc | kCompareSwap).is_request());
  CHECK(info(kRc | kAcknowledge).is_response());
  CHECK(info(kRc | kReadResponseMiddle).is_response());
  CHECK(info(kRc | kAtomicAcknowledge).is_response());
  CHECK_FALSE(info(kRc | kReadResponseMiddle).is_request());
  // FIRST and ONLY start a message; LAST and ONLY end one (9.2.1's sequencing rules).
  CHECK(info(kRc | kWriteFirst).starts_message());
  CHECK_FALSE(info(kRc | kWriteFirst).ends_message());
  CHECK(info(kRc | kSendOnlyInv).starts_message());
  CHECK(info(kRc | kSendOnlyInv).ends_message());
  CHECK_FALSE(info(kRc | kSendLastInv).starts_message());
  CHECK(info(kRc | kSendLastInv).ends_message());
  CHECK_FALSE(info(kRc | kSendMiddle).starts_message());
  CHECK_FALSE(info(kRc | kSendMiddle).ends_message());
  CHECK(info(0x15).op == Op::Reserved);      // unknown: no operation matches it
  CHECK_FALSE(info(0x15).is_request());
  CHECK_FALSE(info(0x15).is_response());
  CHECK_FALSE(info(0x15).starts_message());
  CHECK_FALSE(info(0x15).ends_message());
}

TEST_CASE("ibta: the header sizes are 9.3's") {
  CHECK(kBthBytes == 12);
  CHECK(ext_header_bytes(kHasRdeth) == 4);
  CHECK(ext_header_bytes(kHasDeth) == 8);
  CHECK(ext_header_bytes(kHasReth) == 16);
  CHECK(ext_header_bytes(kHasAtomicEth) == 28);
  CHECK(ext_header_bytes(kHasAeth) == 4);
  CHECK(ext_header_bytes(kHasAtomicAckEth) == 8);
  CHECK(ext_header_bytes(kHasImm) == 4);
  CHECK(ext_header_bytes(kHasIeth) == 4);
  CHECK(ext_header_bytes(kHasGrh) == 0);  // the GRH is not a BTH extension header
}
