// The bytes of an iWARP segment as a capture shows them: Ethernet / IPv4 / TCP (timestamps
// option) / MPA (RFC 5044: ULPDU length, no markers, pad, CRC32c) / DDP (RFC 5041) / RDMAP
// (RFC 5040), or an MPA Request/Reply start frame. trace::encode calls it for iWARP packets.
#include "sim/trace/iwarp_encode.h"

#include "sim/net/wire.h"
#include "sim/nic/rdma_packet.h"
#include "sim/nic/iwarp.h"

namespace rdmasim::trace {
namespace {

using net::append_be;
using nic::iwarp::kRdmapReadRequest;
using nic::iwarp::kRdmapTerminate;
using nic::iwarp::kTcpHeader;

constexpr char kRequestKey[] = "MPA ID Req Frame";  // RFC 5044 7.1: the 16-byte keys
constexpr char kReplyKey[] = "MPA ID Rep Frame";
constexpr uint8_t kDdpVersion = 1, kRdmapVersion = 1;
constexpr uint8_t kRdmapSendInvalidate = 4, kRdmapSendSeInvalidate = 6;

// The 16-bit ones' complement sum of TCP over the IPv4 pseudo header (RFC 793 3.1).
uint16_t tcp_checksum(const nic::RdmaPacket& p, const uint8_t* tcp, size_t len) {
  std::vector<uint8_t> b;
  b.reserve(12 + len + 1);
  append_be(b, p.src, 4);
  append_be(b, p.dst, 4);
  append_be(b, 6, 2);  // zero, protocol 6
  append_be(b, len, 2);
  b.insert(b.end(), tcp, tcp + len);
  if (b.size() % 2) b.push_back(0);
  return net::ipv4_checksum(b);
}

// DDP and RDMAP headers, payload and pad of an FPDU, after its 2-byte ULPDU length.
void append_ulpdu(const nic::RdmaPacket& p, std::vector<uint8_t>& o) {
  const nic::IwarpFpdu& f = p.fpdu;
  o.push_back(static_cast<uint8_t>((f.tagged ? 0x80 : 0) | (f.last ? 0x40 : 0) | kDdpVersion));
  o.push_back(static_cast<uint8_t>(kRdmapVersion << 6 | (f.rdmap_opcode & 0x0f)));
  if (f.tagged) {
    append_be(o, f.stag, 4);
    append_be(o, f.to, 8);
  } else {
    const bool inv = f.rdmap_opcode == kRdmapSendInvalidate || f.rdmap_opcode == kRdmapSendSeInvalidate;
    append_be(o, inv ? f.inv_stag : 0, 4);  // reserved for the ULP; RDMAP's Invalidate STag
    append_be(o, f.qn, 4);
    append_be(o, f.msn, 4);
    append_be(o, f.mo, 4);
  }
  if (f.rdmap_opcode == kRdmapReadRequest) {  // RFC 5040 4.4
    append_be(o, f.sink_stag, 4);
    append_be(o, f.sink_to, 8);
    append_be(o, p.reth.dma_len, 4);
    append_be(o, p.reth.rkey, 4);  // Data Source STag and TO: the READ's remote buffer
    append_be(o, p.reth.va, 8);
  } else if (f.rdmap_opcode == kRdmapTerminate) {  // RFC 5040 4.8, no headers copied (H, M, D 0)
    o.push_back(f.term_layer_etype);
    o.push_back(f.term_code);
    append_be(o, 0, 2);
  }
  if (const uint8_t* d = p.payload_data()) o.insert(o.end(), d, d + p.payload_len);
  else o.insert(o.end(), p.payload_len, 0);
}

}  // namespace

bool encode_iwarp_segment(const net::Packet& frame, std::vector<uint8_t>& out) {
  if (frame.kind != net::PacketKind::Transport || frame.link_layer != net::LinkLayer::IWarp) return false;
  const nic::RdmaPacket* rp = nic::rdma_of(frame);
  if (!rp) return false;  // no TCP header or FPDU to write
  const nic::RdmaPacket& seg = *rp;
  const nic::TcpHeader& t = seg.tcp;
  const size_t start = out.size();
  const uint32_t tcp_len = kTcpHeader + t.len;
  net::append_eth_ipv4(seg, 6, tcp_len, out);
  const size_t tcp = out.size();
  append_be(out, t.src_port, 2);
  append_be(out, t.dst_port, 2);
  append_be(out, t.seq, 4);
  append_be(out, t.ack, 4);
  out.push_back(static_cast<uint8_t>((kTcpHeader / 4) << 4));  // data offset in words
  out.push_back(t.flags);
  append_be(out, t.window, 2);
  append_be(out, 0, 2);  // checksum, filled below
  append_be(out, 0, 2);  // urgent pointer
  const uint8_t options[4] = {1, 1, 8, 10};  // NOP, NOP, timestamps (kind 8, length 10)
  out.insert(out.end(), options, options + 4);
  append_be(out, t.ts_val, 4);
  append_be(out, t.ts_ecr, 4);
  const size_t payload = out.size();
  const nic::IwarpFpdu& f = seg.fpdu;
  if (t.len && (f.mpa_request || f.mpa_reply)) {  // RFC 5044 7.1: key, flags, revision, PD length
    const char* key = f.mpa_request ? kRequestKey : kReplyKey;
    out.insert(out.end(), key, key + 16);
    out.push_back(f.mpa_flags);
    out.push_back(f.mpa_rev);
    append_be(out, seg.payload_len, 2);  // the private data follows
    if (const uint8_t* d = seg.payload_data()) out.insert(out.end(), d, d + seg.payload_len);
    else out.insert(out.end(), seg.payload_len, 0);
  } else if (t.len) {
    append_be(out, f.ulpdu_len, 2);
    append_ulpdu(seg, out);
    if (out.size() - payload != 2u + f.ulpdu_len) {  // the sizes do not describe these fields
      out.resize(start);
      return false;
    }
    out.insert(out.end(), f.mpa_pad, 0);
    // RFC 5044 4.3: CRC32c over the length field, ULPDU and pad. Its bytes go least
    // significant first, as iSCSI's digest (RFC 3720 B.4) and siw (the crc32c hash output)
    // put them; Wireshark's iwarp_mpa dissector checks it that way.
    const uint32_t crc = net::crc32c(out.data() + payload, out.size() - payload);
    for (int i = 0; i < 4; ++i) out.push_back(static_cast<uint8_t>(crc >> (8 * i)));
  }
  if (out.size() - payload != t.len) {
    out.resize(start);
    return false;
  }
  const uint16_t sum = tcp_checksum(seg, out.data() + tcp, out.size() - tcp);
  out[tcp + 16] = static_cast<uint8_t>(sum >> 8);
  out[tcp + 17] = static_cast<uint8_t>(sum);
  while (out.size() - start < 60) out.push_back(0);  // Ethernet minimum frame (no FCS)
  return true;
}

}  // namespace rdmasim::trace
