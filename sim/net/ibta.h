// The IBTA BTH opcode table (IBTA Vol 1, 9.2 / table 38; RoCEv2's CNP from annex A17): what
// each opcode is and which extension headers follow its BTH. Every classifier of opcodes in
// the NIC and the encoders reads it; nothing else spells opcode numbers.
#pragma once

#include <array>
#include <cstdint>
#include <string_view>

namespace rdmasim::net {

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
  kHasXrceth = 1 << 9, // XRC requests: the target's XRC SRQ number
};


}  // namespace rdmasim::net

namespace rdmasim::net::ibta {

// Opcode = transport (bits 7..5) | operation (bits 4..0).
inline constexpr uint8_t kRc = 0x00, kUc = 0x20, kRd = 0x40, kUd = 0x60, kCnpGroup = 0x80,
                         kXrc = 0xa0;
inline constexpr uint8_t kTransportMask = 0xe0, kOperationMask = 0x1f;

// The operation bits, as RC numbers them (UC and RD use the same numbers for what they have).
inline constexpr uint8_t kSendFirst = 0x00, kSendMiddle = 0x01, kSendLast = 0x02,
                         kSendLastImm = 0x03, kSendOnly = 0x04, kSendOnlyImm = 0x05,
                         kWriteFirst = 0x06, kWriteMiddle = 0x07, kWriteLast = 0x08,
                         kWriteLastImm = 0x09, kWriteOnly = 0x0a, kWriteOnlyImm = 0x0b,
                         kReadRequest = 0x0c, kReadResponseFirst = 0x0d,
                         kReadResponseMiddle = 0x0e, kReadResponseLast = 0x0f,
                         kReadResponseOnly = 0x10, kAcknowledge = 0x11, kAtomicAcknowledge = 0x12,
                         kCompareSwap = 0x13, kFetchAdd = 0x14, kResync = 0x15,
                         kSendLastInv = 0x16, kSendOnlyInv = 0x17;
// RoCEv2 Congestion Notification Packet (annex A17). (0x80, InfiniBand's CNP of annex A10,
// is not modelled.)
inline constexpr uint8_t kRoceCnp = 0x81;

enum class Transport : uint8_t { RC, UC, RD, UD, CNP, XRC };
enum class Op : uint8_t {
  Send, Write, ReadRequest, Atomic, Resync,   // requests
  ReadResponse, Ack, AtomicAck,               // responses
  Cnp,                                        // neither: a congestion notification
  Reserved,                                   // not an opcode the table knows
};
enum class Position : uint8_t { First, Middle, Last, Only };

// Extension header sizes in bytes (IBTA 9.3: RDETH 9.3.3, DETH 9.3.2, RETH 9.3.4,
// AtomicETH 9.3.5, AETH 9.3.6, AtomicAckETH 9.3.7, ImmDt 9.3.8, IETH 9.3.9; BTH 9.2;
// XRCETH, 8 reserved bits and the 24-bit XRC SRQ number, of annex A14 (XRC)).
inline constexpr uint32_t kBthBytes = 12, kRdethBytes = 4, kDethBytes = 8, kRethBytes = 16,
                          kAtomicEthBytes = 28, kAethBytes = 4, kAtomicAckEthBytes = 8,
                          kImmDtBytes = 4, kIethBytes = 4, kXrcethBytes = 4;
// What follows a RoCEv2 CNP's BTH (annex A17): 16 reserved bytes.
inline constexpr uint32_t kCnpReservedBytes = 16;

// Bytes of the extension headers named by `bits` (HeaderBits; kHasGrh is not one).
constexpr uint32_t ext_header_bytes(uint16_t bits) {
  uint32_t n = 0;
  if (bits & kHasRdeth) n += kRdethBytes;
  if (bits & kHasXrceth) n += kXrcethBytes;
  if (bits & kHasDeth) n += kDethBytes;
  if (bits & kHasReth) n += kRethBytes;
  if (bits & kHasAtomicEth) n += kAtomicEthBytes;
  if (bits & kHasAeth) n += kAethBytes;
  if (bits & kHasAtomicAckEth) n += kAtomicAckEthBytes;
  if (bits & kHasImm) n += kImmDtBytes;
  if (bits & kHasIeth) n += kIethBytes;
  return n;
}

struct Opcode {
  uint8_t code = 0;
  std::string_view name;             // as table 38 names it; empty for an unknown opcode
  Transport transport = Transport::RC;
  Op op = Op::Reserved;
  Position position = Position::Only;
  bool immediate = false;            // carries ImmDt
  bool invalidate = false;           // carries IETH
  uint16_t headers = 0;              // extension headers after the BTH (HeaderBits)

  constexpr bool known() const { return !name.empty(); }
  constexpr bool is_request() const { return known() && op < Op::ReadResponse; }
  constexpr bool is_response() const {
    return known() && (op == Op::ReadResponse || op == Op::Ack || op == Op::AtomicAck);
  }
  constexpr bool starts_message() const {
    return known() && (position == Position::First || position == Position::Only);
  }
  constexpr bool ends_message() const {
    return known() && (position == Position::Last || position == Position::Only);
  }
};

namespace detail {

using P = Position;
using T = Transport;
constexpr uint16_t kNone = 0;

// The rows RC, UC and RD share (RD adds RDETH to all and DETH to requests).
struct Row {
  uint8_t op;
  std::string_view name;
  Op kind;
  Position position;
  uint16_t headers;
};
inline constexpr Row kShared[] = {
    {kSendFirst, "SEND First", Op::Send, P::First, kNone},
    {kSendMiddle, "SEND Middle", Op::Send, P::Middle, kNone},
    {kSendLast, "SEND Last", Op::Send, P::Last, kNone},
    {kSendLastImm, "SEND Last with Immediate", Op::Send, P::Last, kHasImm},
    {kSendOnly, "SEND Only", Op::Send, P::Only, kNone},
    {kSendOnlyImm, "SEND Only with Immediate", Op::Send, P::Only, kHasImm},
    {kWriteFirst, "RDMA WRITE First", Op::Write, P::First, kHasReth},
    {kWriteMiddle, "RDMA WRITE Middle", Op::Write, P::Middle, kNone},
    {kWriteLast, "RDMA WRITE Last", Op::Write, P::Last, kNone},
    {kWriteLastImm, "RDMA WRITE Last with Immediate", Op::Write, P::Last, kHasImm},
    {kWriteOnly, "RDMA WRITE Only", Op::Write, P::Only, kHasReth},
    {kWriteOnlyImm, "RDMA WRITE Only with Immediate", Op::Write, P::Only, kHasReth | kHasImm},
    // From here on RC and RD only (UC has no READ, ACK or atomics).
    {kReadRequest, "RDMA READ Request", Op::ReadRequest, P::Only, kHasReth},
    {kReadResponseFirst, "RDMA READ response First", Op::ReadResponse, P::First, kHasAeth},
    {kReadResponseMiddle, "RDMA READ response Middle", Op::ReadResponse, P::Middle, kNone},
    {kReadResponseLast, "RDMA READ response Last", Op::ReadResponse, P::Last, kHasAeth},
    {kReadResponseOnly, "RDMA READ response Only", Op::ReadResponse, P::Only, kHasAeth},
    {kAcknowledge, "Acknowledge", Op::Ack, P::Only, kHasAeth},
    {kAtomicAcknowledge, "ATOMIC Acknowledge", Op::AtomicAck, P::Only, kHasAeth | kHasAtomicAckEth},
    {kCompareSwap, "CmpSwap", Op::Atomic, P::Only, kHasAtomicEth},
    {kFetchAdd, "FetchAdd", Op::Atomic, P::Only, kHasAtomicEth},
};
inline constexpr size_t kUcRows = 12;  // SEND and RDMA WRITE

constexpr bool is_imm(uint16_t h) { return (h & kHasImm) != 0; }

constexpr std::array<Opcode, 256> build() {
  std::array<Opcode, 256> t{};
  for (size_t i = 0; i < t.size(); ++i) t[i].code = static_cast<uint8_t>(i);
  auto put = [&](uint8_t code, std::string_view name, T tr, Op kind, P pos, uint16_t h) {
    t[code] = Opcode{code, name, tr, kind, pos, is_imm(h), (h & kHasIeth) != 0, h};
  };
  size_t i = 0;
  for (const Row& r : kShared) {
    put(kRc | r.op, r.name, T::RC, r.kind, r.position, r.headers);
    if (i < kUcRows) put(kUc | r.op, r.name, T::UC, r.kind, r.position, r.headers);
    const bool request = r.kind < Op::ReadResponse;
    put(kRd | r.op, r.name, T::RD, r.kind, r.position,
        static_cast<uint16_t>(r.headers | kHasRdeth | (request ? kHasDeth : 0)));
    ++i;
  }
  put(kRd | kResync, "RESYNC", T::RD, Op::Resync, P::Only, kHasRdeth | kHasDeth);
  put(kRc | kSendLastInv, "SEND Last with Invalidate", T::RC, Op::Send, P::Last, kHasIeth);
  put(kRc | kSendOnlyInv, "SEND Only with Invalidate", T::RC, Op::Send, P::Only, kHasIeth);
  // XRC: RC's operations; every request carries an XRCETH right after the BTH, responses none.
  for (const Row& r : kShared) {
    const bool request = r.kind < Op::ReadResponse;
    put(kXrc | r.op, r.name, T::XRC, r.kind, r.position,
        static_cast<uint16_t>(r.headers | (request ? kHasXrceth : 0)));
  }
  put(kXrc | kSendLastInv, "SEND Last with Invalidate", T::XRC, Op::Send, P::Last, kHasXrceth | kHasIeth);
  put(kXrc | kSendOnlyInv, "SEND Only with Invalidate", T::XRC, Op::Send, P::Only, kHasXrceth | kHasIeth);
  put(kUd | kSendOnly, "SEND Only", T::UD, Op::Send, P::Only, kHasDeth);
  put(kUd | kSendOnlyImm, "SEND Only with Immediate", T::UD, Op::Send, P::Only, kHasDeth | kHasImm);
  put(kRoceCnp, "CNP", T::CNP, Op::Cnp, P::Only, kNone);
  return t;
}

}  // namespace detail

// Every opcode; unknown ones (reserved, manufacturer-specific, IBTA 1.5's FLUSH and
// ATOMIC WRITE, which the model does not carry) have an empty name and known() false.
inline constexpr std::array<Opcode, 256> kOpcodes = detail::build();

constexpr const Opcode& info(uint8_t code) { return kOpcodes[code]; }

}  // namespace rdmasim::net::ibta
