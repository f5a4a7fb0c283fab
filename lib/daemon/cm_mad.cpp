// CM MAD layouts: offsets are those of IBTA vol. 1 tables 106-111 and 119-120 (as the
// kernel's ibta_vol1_c12.h lists them), counted from the end of the 24-byte MAD header;
// multi-bit fields sit in the high bits of their byte first (IBTA bit order).
#include "lib/daemon/cm_mad.h"

#include <algorithm>
#include <cstring>

namespace rdmasim::daemon::cm {
namespace {

constexpr size_t kMad = 256, kHdr = 24;

struct Writer {
  uint8_t* b;
  void u8(size_t o, uint8_t v) { b[kHdr + o] = v; }
  void u16(size_t o, uint16_t v) { u8(o, v >> 8), u8(o + 1, v & 0xff); }
  void u24(size_t o, uint32_t v) { u8(o, v >> 16 & 0xff), u16(o + 1, v & 0xffff); }
  void u32(size_t o, uint32_t v) { u16(o, v >> 16), u16(o + 2, v & 0xffff); }
  void u64(size_t o, uint64_t v) { u32(o, static_cast<uint32_t>(v >> 32)), u32(o + 4, static_cast<uint32_t>(v)); }
  void bytes(size_t o, const uint8_t* p, size_t n) { std::memcpy(b + kHdr + o, p, n); }
};
struct Reader {
  const uint8_t* b;
  uint8_t u8(size_t o) const { return b[kHdr + o]; }
  uint16_t u16(size_t o) const { return static_cast<uint16_t>(u8(o) << 8 | u8(o + 1)); }
  uint32_t u24(size_t o) const { return uint32_t{u8(o)} << 16 | u16(o + 1); }
  uint32_t u32(size_t o) const { return uint32_t{u16(o)} << 16 | u16(o + 2); }
  uint64_t u64(size_t o) const { return uint64_t{u32(o)} << 32 | u32(o + 4); }
};

// Where each message's private data starts in the attribute.
size_t private_offset(Attr a) {
  switch (a) {
    case Attr::Req: return 140;
    case Attr::Rep: return 36;
    case Attr::Rej: return 84;
    case Attr::Dreq: return 12;
    case Attr::Mra: return 10;
    case Attr::SidrReq: return 16;
    case Attr::SidrRep: return 96;
    default: return 8;  // RTU, DREP
  }
}

bool known(uint16_t a) { return a >= 0x10 && a <= 0x18; }

}  // namespace

uint32_t private_data_bytes(Attr a) { return static_cast<uint32_t>(kMad - kHdr - private_offset(a)); }

net::Payload encode(const Message& m) {
  auto out = std::make_shared<net::Bytes>(kMad);
  uint8_t* b = out->data();
  std::memset(b, 0, kMad);
  b[0] = 1;  // base version
  b[1] = kMgmtClassCm;
  b[2] = kClassVersion;
  b[3] = kMethodSend;
  for (int i = 0; i < 8; ++i) b[8 + i] = static_cast<uint8_t>(m.tid >> (56 - 8 * i));
  b[16] = static_cast<uint8_t>(static_cast<uint16_t>(m.attr) >> 8);
  b[17] = static_cast<uint8_t>(static_cast<uint16_t>(m.attr));
  Writer w{b};
  switch (m.attr) {
    case Attr::Req:
      w.u32(0, m.local_comm_id);
      w.u64(8, m.service_id);
      w.u64(16, m.ca_guid);
      w.u32(28, m.qkey);
      w.u24(32, m.qpn), w.u8(35, m.responder_resources);
      w.u8(39, m.initiator_depth);
      w.u8(43, static_cast<uint8_t>(m.remote_cm_response_timeout << 3 | (m.transport & 3) << 1 | m.flow_control));
      w.u24(44, m.psn), w.u8(47, static_cast<uint8_t>(m.local_cm_response_timeout << 3 | (m.retry_count & 7)));
      w.u16(48, m.pkey);
      w.u8(50, static_cast<uint8_t>(m.mtu << 4 | (m.rnr_retry_count & 7)));
      w.u8(51, static_cast<uint8_t>(m.max_cm_retries << 4 | (m.srq ? 0x08 : 0)));
      w.u16(52, m.local_lid), w.u16(54, m.remote_lid);
      w.bytes(56, m.local_gid.data(), 16), w.bytes(72, m.remote_gid.data(), 16);
      w.u8(92, m.traffic_class), w.u8(93, m.hop_limit);
      w.u8(94, static_cast<uint8_t>(m.sl << 4 | (m.hop_limit <= 1 ? 0x08 : 0)));  // subnet local
      w.u8(95, static_cast<uint8_t>(m.local_ack_timeout << 3));
      break;
    case Attr::Rep:
      w.u32(0, m.local_comm_id), w.u32(4, m.remote_comm_id);
      w.u32(8, m.qkey);
      w.u24(12, m.qpn), w.u24(20, m.psn);
      w.u8(24, m.responder_resources), w.u8(25, m.initiator_depth);
      w.u8(26, m.flow_control ? 1 : 0);
      w.u8(27, static_cast<uint8_t>((m.rnr_retry_count & 7) << 5 | (m.srq ? 0x10 : 0)));
      w.u64(28, m.ca_guid);
      break;
    case Attr::Rej:
      w.u32(0, m.local_comm_id), w.u32(4, m.remote_comm_id);
      w.u8(8, static_cast<uint8_t>(m.rejected << 6));
      w.u16(10, m.reason);
      break;
    case Attr::Dreq:
      w.u32(0, m.local_comm_id), w.u32(4, m.remote_comm_id);
      w.u24(8, m.qpn);
      break;
    case Attr::SidrReq:
      w.u32(0, m.local_comm_id);
      w.u16(4, m.pkey);
      w.u64(8, m.service_id);
      break;
    case Attr::SidrRep:
      w.u32(0, m.local_comm_id);
      w.u8(4, m.status);
      w.u24(8, m.qpn);
      w.u64(12, m.service_id);
      w.u32(20, m.qkey);
      break;
    default:  // RTU, DREP, MRA
      w.u32(0, m.local_comm_id), w.u32(4, m.remote_comm_id);
      break;
  }
  const uint32_t n = std::min(m.private_len, private_data_bytes(m.attr));
  w.bytes(private_offset(m.attr), m.private_data.data(), n);
  return out;
}

std::optional<Message> decode(const uint8_t* b, size_t len) {
  if (len != kMad || b[0] != 1 || b[1] != kMgmtClassCm || b[2] != kClassVersion || b[3] != kMethodSend)
    return std::nullopt;
  const uint16_t attr = static_cast<uint16_t>(b[16] << 8 | b[17]);
  if (!known(attr)) return std::nullopt;
  Message m;
  m.attr = static_cast<Attr>(attr);
  for (int i = 0; i < 8; ++i) m.tid = m.tid << 8 | b[8 + i];
  Reader r{b};
  m.local_comm_id = r.u32(0);
  switch (m.attr) {
    case Attr::Req:
      m.service_id = r.u64(8);
      m.ca_guid = r.u64(16);
      m.qkey = r.u32(28);
      m.qpn = r.u24(32), m.responder_resources = r.u8(35);
      m.initiator_depth = r.u8(39);
      m.remote_cm_response_timeout = r.u8(43) >> 3, m.transport = r.u8(43) >> 1 & 3;
      m.flow_control = r.u8(43) & 1;
      m.psn = r.u24(44), m.local_cm_response_timeout = r.u8(47) >> 3, m.retry_count = r.u8(47) & 7;
      m.pkey = r.u16(48);
      m.mtu = r.u8(50) >> 4, m.rnr_retry_count = r.u8(50) & 7;
      m.max_cm_retries = r.u8(51) >> 4, m.srq = r.u8(51) & 0x08;
      m.local_lid = r.u16(52), m.remote_lid = r.u16(54);
      std::memcpy(m.local_gid.data(), b + kHdr + 56, 16);
      std::memcpy(m.remote_gid.data(), b + kHdr + 72, 16);
      m.traffic_class = r.u8(92), m.hop_limit = r.u8(93), m.sl = r.u8(94) >> 4;
      m.local_ack_timeout = r.u8(95) >> 3;
      break;
    case Attr::Rep:
      m.remote_comm_id = r.u32(4);
      m.qkey = r.u32(8);
      m.qpn = r.u24(12), m.psn = r.u24(20);
      m.responder_resources = r.u8(24), m.initiator_depth = r.u8(25);
      m.flow_control = r.u8(26) & 1;
      m.rnr_retry_count = r.u8(27) >> 5, m.srq = r.u8(27) & 0x10;
      m.ca_guid = r.u64(28);
      break;
    case Attr::Rej:
      m.remote_comm_id = r.u32(4);
      m.rejected = r.u8(8) >> 6;
      m.reason = r.u16(10);
      break;
    case Attr::Dreq:
      m.remote_comm_id = r.u32(4);
      m.qpn = r.u24(8);
      break;
    case Attr::SidrReq:
      m.pkey = r.u16(4);
      m.service_id = r.u64(8);
      break;
    case Attr::SidrRep:
      m.status = r.u8(4);
      m.qpn = r.u24(8);
      m.service_id = r.u64(12);
      m.qkey = r.u32(20);
      break;
    default:
      m.remote_comm_id = r.u32(4);
      break;
  }
  m.private_len = private_data_bytes(m.attr);
  std::memcpy(m.private_data.data(), b + kHdr + private_offset(m.attr), m.private_len);
  return m;
}

void put_ip_header(const IpHeader& h, uint8_t* out) {
  std::memset(out, 0, kIpHeaderBytes);
  out[0] = 0;     // cma_version
  out[1] = 0x40;  // IP version 4, in the high nibble
  std::memcpy(out + 2, &h.src_port, 2);
  std::memcpy(out + 4 + 12, &h.src_ip, 4);   // union cma_ip_addr: IPv4 in its last 4 bytes
  std::memcpy(out + 20 + 12, &h.dst_ip, 4);
}

std::optional<IpHeader> get_ip_header(const uint8_t* in) {
  if (in[0] != 0 || in[1] >> 4 != 4) return std::nullopt;
  IpHeader h;
  std::memcpy(&h.src_port, in + 2, 2);
  std::memcpy(&h.src_ip, in + 4 + 12, 4);
  std::memcpy(&h.dst_ip, in + 20 + 12, 4);
  return h;
}

}  // namespace rdmasim::daemon::cm
