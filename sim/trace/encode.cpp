#include "sim/trace/encode.h"

#include "sim/net/ibta.h"
#include "sim/net/wire.h"
#include "sim/nic/rdma_packet.h"
#include "sim/trace/iwarp_encode.h"
#include "sim/trace/pcap_writer.h"

namespace rdmasim::trace {
namespace {

using net::crc32_update;
using net::ib_vcrc;
using net::mac_of;
using net::Packet;
using nic::RdmaPacket;

void put8(std::vector<uint8_t>& o, uint8_t v) { o.push_back(v); }
void put16(std::vector<uint8_t>& o, uint16_t v) {
  o.push_back(static_cast<uint8_t>(v >> 8));
  o.push_back(static_cast<uint8_t>(v));
}
void put24(std::vector<uint8_t>& o, uint32_t v) {
  o.push_back(static_cast<uint8_t>(v >> 16));
  put16(o, static_cast<uint16_t>(v));
}
void put32(std::vector<uint8_t>& o, uint32_t v) {
  put16(o, static_cast<uint16_t>(v >> 16));
  put16(o, static_cast<uint16_t>(v));
}
void put64(std::vector<uint8_t>& o, uint64_t v) {
  put32(o, static_cast<uint32_t>(v >> 32));
  put32(o, static_cast<uint32_t>(v));
}
void put_le32(std::vector<uint8_t>& o, uint32_t v) {
  for (int i = 0; i < 4; ++i) o.push_back(static_cast<uint8_t>(v >> (8 * i)));
}

using net::ibta::kBthBytes;
using net::ibta::kCnpReservedBytes;

uint32_t pad_of(uint32_t payload) { return (4 - payload % 4) % 4; }

// BTH, extension headers in IBTA order, payload and pad. CNPs get their 16 reserved bytes.
void append_transport(const RdmaPacket& p, uint16_t bits, std::vector<uint8_t>& o) {
  const bool cnp = p.kind == net::PacketKind::Cnp;
  const uint32_t pad = cnp ? 0 : pad_of(p.payload_len);
  put8(o, cnp ? net::ibta::kRoceCnp : p.bth.opcode);
  put8(o, static_cast<uint8_t>((p.bth.solicited ? 0x80 : 0) | (pad << 4)));  // M = 0, TVer = 0
  put16(o, p.bth.pkey);
  put8(o, 0);  // FECN/BECN (InfiniBand) / reserved (RoCEv2)
  put24(o, p.bth.dest_qp & 0xffffff);
  put8(o, p.bth.ack_req ? 0x80 : 0);
  put24(o, p.bth.psn & 0xffffff);
  if (cnp) {
    o.insert(o.end(), kCnpReservedBytes, 0);
    return;
  }
  if (bits & net::kHasXrceth) put32(o, p.xrc_srqn & 0xffffff);  // 8 reserved bits, the SRQ number
  if (bits & net::kHasDeth) {
    put32(o, p.deth.qkey);
    put32(o, p.deth.src_qp & 0xffffff);  // 8 reserved bits, then the source QP
  }
  if (bits & net::kHasReth) {
    put64(o, p.reth.va);
    put32(o, p.reth.rkey);
    put32(o, p.reth.dma_len);
  }
  if (bits & net::kHasAtomicEth) {
    put64(o, p.atomic.va);
    put32(o, p.atomic.rkey);
    put64(o, p.atomic.swap_add);
    put64(o, p.atomic.compare);
  }
  if (bits & net::kHasAeth) {
    put8(o, p.aeth.syndrome);
    put24(o, p.aeth.msn & 0xffffff);
  }
  if (bits & net::kHasAtomicAckEth) put64(o, p.atomic_ack_orig);
  if (bits & net::kHasImm) {  // ImmDt travels as the verbs user gave it (network byte order)
    const auto* b = reinterpret_cast<const uint8_t*>(&p.imm);
    o.insert(o.end(), b, b + 4);
  }
  if (bits & net::kHasIeth) put32(o, p.ieth_rkey);  // a host-order integer
  if (const uint8_t* d = p.payload_data()) o.insert(o.end(), d, d + p.payload_len);
  else o.insert(o.end(), p.payload_len, 0);
  o.insert(o.end(), pad, 0);
}

uint32_t transport_bytes(const RdmaPacket& p, uint16_t bits) {
  if (p.kind == net::PacketKind::Cnp) return kBthBytes + kCnpReservedBytes;
  return kBthBytes + net::ibta::ext_header_bytes(bits) + p.payload_len + pad_of(p.payload_len);
}

bool encode_roce(const RdmaPacket& p, std::vector<uint8_t>& o) {
  const uint16_t bits = p.kind == net::PacketKind::Cnp ? 0 : headers_for_opcode(p.bth.opcode);
  if (bits == 0xffff) return false;
  const size_t start = o.size();
  const uint32_t udp_len = 8 + transport_bytes(p, bits) + 4;
  const size_t ip = net::append_eth_ipv4(p, 17, udp_len, o);
  const size_t udp = o.size();
  put16(o, p.udp_src_port);
  put16(o, kRoceUdpPort);
  put16(o, static_cast<uint16_t>(udp_len));
  put16(o, 0);
  const size_t bth = o.size();
  append_transport(p, bits, o);
  // ICRC (IBTA annex A17): CRC-32 over 8 bytes of ones (the LRH a RoCEv2 packet lacks), then
  // IPv4 with TOS, TTL and checksum set to ones, UDP with the checksum set to ones, and the
  // BTH with its reserved byte 4 set to ones, then the rest of the packet.
  static constexpr uint8_t kOnes[8] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff};
  std::vector<uint8_t> masked(o.begin() + static_cast<long>(ip), o.end());
  const size_t mudp = udp - ip, mbth = bth - ip;
  masked[1] = 0xff;                                     // TOS
  masked[8] = 0xff;                                     // TTL
  masked[10] = masked[11] = 0xff;                       // header checksum
  masked[mudp + 6] = masked[mudp + 7] = 0xff;           // UDP checksum
  masked[mbth + 4] = 0xff;                              // BTH reserved byte
  put_le32(o, ~crc32_update(crc32_update(0xffffffff, kOnes), masked));
  while (o.size() - start < 60) o.push_back(0);         // Ethernet minimum frame (no FCS)
  return true;
}

bool encode_pfc(const Packet& p, std::vector<uint8_t>& o) {
  const size_t start = o.size();
  const uint8_t dst[6] = {0x01, 0x80, 0xc2, 0x00, 0x00, 0x01};  // MAC control multicast
  o.insert(o.end(), dst, dst + 6);
  const auto src = mac_of(p.src);
  o.insert(o.end(), src.begin(), src.end());
  put16(o, 0x8808);
  put16(o, 0x0101);  // priority-based flow control (802.1Qbb)
  put16(o, p.pause_enable_mask);
  for (uint16_t q : p.pause_quanta) put16(o, q);
  while (o.size() - start < 60) o.push_back(0);
  return true;
}

// IBTA flow-control packet: Op (4 bits, 0 = normal), FCTBS (12), VL (4), FCCL (12), LPCRC.
// FCCL is in 64-byte blocks mod 4096 (the model counts bytes: written as bytes / 64).
// FCTBS is written as 0 although the model carries it (Packet::fctbs): tshark 4.0 reports
// link packets with a nonzero FCTBS as malformed InfiniBand Link packets (seen on every
// credit packet of an IB pingpong capture). LPCRC uses the VCRC polynomial.
bool encode_ib_credit(const Packet& p, std::vector<uint8_t>& o) {
  const size_t start = o.size();
  put16(o, 0);                                                      // Op 0, FCTBS 0
  put16(o, static_cast<uint16_t>(((p.vl & 0xf) << 12) | ((p.credits / 64) & 0xfff)));
  put16(o, ib_vcrc(std::span<const uint8_t>(o).subspan(start, 4)));
  // Two zero bytes the wire does not carry: Wireshark 4.0 reads the addresses of any IB
  // record at bytes 2-3 and 6-7 and reports a 6-byte link packet as malformed.
  put16(o, 0);
  return true;
}

bool encode_ib(const Packet& frame, std::vector<uint8_t>& o) {
  if (frame.kind == net::PacketKind::IbCredit) return encode_ib_credit(frame, o);
  if (frame.kind != net::PacketKind::Transport) return false;
  const RdmaPacket* rp = nic::rdma_of(frame);
  if (!rp) return false;  // no transport headers to write
  const RdmaPacket& p = *rp;
  const uint16_t bits = headers_for_opcode(p.bth.opcode);
  if (bits == 0xffff) return false;
  const bool grh = p.headers & net::kHasGrh;
  const uint32_t transport = transport_bytes(p, bits);
  const uint32_t words = (8 + (grh ? 40 : 0) + transport + 4) / 4;  // LRH .. ICRC
  const size_t lrh = o.size();
  put8(o, static_cast<uint8_t>((p.vl & 0xf) << 4));                 // VL, LVer 0
  put8(o, static_cast<uint8_t>(((p.priority & 0xf) << 4) | (grh ? 3 : 2)));  // SL, LNH
  put16(o, static_cast<uint16_t>(p.dst));
  put16(o, static_cast<uint16_t>(words & 0x7ff));
  put16(o, static_cast<uint16_t>(p.src));
  size_t g = 0;
  if (grh) {
    g = o.size();
    put32(o, 6u << 28);                                      // IPVer 6, TClass 0, flow 0
    put16(o, static_cast<uint16_t>(transport + 4));          // PayLen: BTH .. ICRC
    put8(o, 0x1b);                                           // NxtHdr: IBA transport
    put8(o, 64);                                             // HopLmt
    o.insert(o.end(), p.sgid.begin(), p.sgid.end());
    o.insert(o.end(), p.dgid.begin(), p.dgid.end());
  }
  const size_t bth = o.size();
  append_transport(p, bits, o);
  // ICRC: LRH with VL set to ones, GRH with TClass, flow label and HopLmt set to ones,
  // BTH reserved byte set to ones.
  std::vector<uint8_t> masked(o.begin() + static_cast<long>(lrh), o.end());
  masked[0] |= 0xf0;
  if (grh) {
    const size_t mg = g - lrh;
    masked[mg] |= 0x0f;
    masked[mg + 1] = masked[mg + 2] = masked[mg + 3] = 0xff;
    masked[mg + 7] = 0xff;
  }
  masked[bth - lrh + 4] = 0xff;
  put_le32(o, ~crc32_update(0xffffffff, masked));
  const uint16_t vcrc = ib_vcrc(std::span<const uint8_t>(o).subspan(lrh));
  put16(o, vcrc);
  return true;
}

}  // namespace

uint32_t linktype_for(net::LinkLayer ll) {
  return ll == net::LinkLayer::InfiniBand ? kLinktypeErf : kLinktypeEthernet;
}

void append_erf_header(Time t, uint8_t erf_type, uint16_t len, std::vector<uint8_t>& o) {
  // Timestamp: little-endian 64-bit fixed point, seconds in the high 32 bits, binary
  // fraction of a second in the low 32.
  const uint64_t ps = t < 0 ? 0 : static_cast<uint64_t>(t);
  const uint64_t sec = ps / kSecond, frac_ps = ps % kSecond;
  const uint64_t ts = (sec << 32) | static_cast<uint64_t>(
      (static_cast<unsigned __int128>(frac_ps) << 32) / kSecond);
  for (int i = 0; i < 8; ++i) o.push_back(static_cast<uint8_t>(ts >> (8 * i)));
  put8(o, erf_type);
  put8(o, 0x04);                          // flags: varying-length record, interface 0
  put16(o, static_cast<uint16_t>(16 + len));  // rlen: whole record
  put16(o, 0);                            // loss counter
  put16(o, len);                          // wlen: bytes on the wire
}

bool encode_record(const Packet& p, Time t, std::vector<uint8_t>& o) {
  if (p.link_layer != net::LinkLayer::InfiniBand) return encode(p, o);
  const size_t start = o.size();
  o.resize(start + 16);
  if (!encode(p, o)) {
    o.resize(start);
    return false;
  }
  std::vector<uint8_t> hdr;
  append_erf_header(t, p.kind == net::PacketKind::IbCredit ? kErfTypeInfinibandLink : kErfTypeInfiniband,
                    static_cast<uint16_t>(o.size() - start - 16), hdr);
  std::copy(hdr.begin(), hdr.end(), o.begin() + static_cast<long>(start));
  return true;
}

uint16_t headers_for_opcode(uint8_t opcode) {
  const net::ibta::Opcode& op = net::ibta::info(opcode);
  const bool encoded = op.known() && op.transport != net::ibta::Transport::RD &&
                       op.transport != net::ibta::Transport::CNP;
  return encoded ? op.headers : 0xffff;
}

bool encode(const Packet& p, std::vector<uint8_t>& out) {
  switch (p.link_layer) {
    case net::LinkLayer::InfiniBand: return encode_ib(p, out);
    case net::LinkLayer::RoCEv2:
      if (p.kind == net::PacketKind::PfcPause) return encode_pfc(p, out);
      if (p.kind == net::PacketKind::IbCredit) return false;  // not an Ethernet frame
      if (const RdmaPacket* rp = nic::rdma_of(p)) return encode_roce(*rp, out);
      return false;  // a transport-kind packet built without its transport headers
    case net::LinkLayer::IWarp:
      if (p.kind == net::PacketKind::PfcPause) return encode_pfc(p, out);
      return p.kind == net::PacketKind::Transport && encode_iwarp_segment(p, out);
  }
  return false;
}

}  // namespace rdmasim::trace
