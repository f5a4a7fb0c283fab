// Building transport packets: addressing, priority, entropy, and wire sizes per link layer.
#include "sim/nic/hca_impl.h"

namespace rdmasim::nic {
// Priority: on Ethernet the DSCP is traffic_class >> 2 and the class is DSCP >> 3, i.e.
// the top three bits of traffic_class (the usual DSCP-to-TC mapping); on IB the SL (0..7).
uint8_t Hca::Impl::priority_of(const AddressVector& av) const {
  if (config.link_layer == net::LinkLayer::InfiniBand) return av.sl & 7;
  return static_cast<uint8_t>(av.traffic_class >> 5);
}

RdmaPacketPtr Hca::Impl::new_packet(uint32_t src_qpn, const AddressVector& av, uint32_t dest_qp,
                                     uint8_t opcode, uint32_t psn) {
  auto p = std::make_unique<RdmaPacket>();
  // Unique per engine as long as HCA addresses are: the address, then a per-HCA count.
  p->id = uint64_t{config.address} << 32 | next_packet_id++;
  p->kind = net::PacketKind::Transport;
  p->link_layer = config.link_layer;
  p->src = config.address;
  if (config.link_layer == net::LinkLayer::InfiniBand) {
    p->dst = av.dlid;
    if (av.is_global) p->headers |= net::kHasGrh;
  } else if (config.link_layer == net::LinkLayer::IWarp) {
    p->dst = iwarp::address_of_gid(av.dgid);  // the GID is the peer's MAC
  } else {
    // RoCEv2: the dgid is IPv4-mapped (::ffff:a.b.c.d); the address is a.b.c.d, host order.
    p->dst = uint32_t{av.dgid[12]} << 24 | uint32_t{av.dgid[13]} << 16 |
             uint32_t{av.dgid[14]} << 8 | av.dgid[15];
    p->headers |= net::kHasGrh;  // the IPv4 header plays the GRH
  }
  p->dgid = av.dgid;
  p->sgid = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff,
             static_cast<uint8_t>(config.address >> 24), static_cast<uint8_t>(config.address >> 16),
             static_cast<uint8_t>(config.address >> 8), static_cast<uint8_t>(config.address)};
  p->priority = priority_of(av);
  p->dscp = static_cast<uint8_t>(av.traffic_class >> 2);
  // Entropy: the pair of QPNs folded into the dynamic port range 0xC000..0xFFFF, so all
  // packets of one connection take one ECMP path and different connections spread.
  const uint32_t h = (src_qpn * 0x9e3779b1u) ^ (dest_qp * 0x85ebca6bu);
  p->udp_src_port = static_cast<uint16_t>(0xc000 | ((h >> 16 ^ h) & 0x3fff));
  p->flow_hash = h ^ (config.address * 0xc2b2ae35u) ^ p->dst;
  p->created = engine.now();
  p->bth.opcode = opcode;
  p->headers |= ibta::info(opcode).headers;  // the extension headers the opcode carries
  p->bth.dest_qp = dest_qp & 0xffffff;
  p->bth.psn = psn & 0xffffff;
  p->bth.pkey = 0xffff;
  return p;
}

void Hca::Impl::finish_packet(RdmaPacket& p) const {
  p.bth.pad = static_cast<uint8_t>((4 - p.payload_len % 4) % 4);
  const uint32_t transport = ibta::kBthBytes + ibta::ext_header_bytes(p.headers) + p.payload_len +
                             p.bth.pad + 4;  // BTH..ICRC
  switch (p.link_layer) {
    case net::LinkLayer::InfiniBand: {
      // LRH 8 (+ GRH 40) + transport + VCRC 2; IB has no preamble or gap.
      p.frame_bytes = 8 + ((p.headers & net::kHasGrh) ? 40 : 0) + transport + 2;
      p.wire_bytes = p.frame_bytes;
      break;
    }
    default: {
      // Ethernet 14 + IPv4 20 + UDP 8 + transport + FCS 4, padded to the 64 B minimum frame;
      // the wire adds 8 B preamble/SFD and 12 B inter-frame gap.
      p.frame_bytes = std::max<uint32_t>(14 + 20 + 8 + transport + 4, 64);
      p.wire_bytes = p.frame_bytes + 8 + 12;
      break;
    }
  }
}

}  // namespace rdmasim::nic
