// Writes <dir>/roce.pcap and <dir>/ib.pcap: one packet of every opcode the encoders know,
// plus (RoCE) a CNP and a PFC frame, (IB) a GRH packet and a flow-control packet, with the
// field values tests/integration/pcap_check.sh expects (listed there, from this table).
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "sim/net/packet.h"
#include "sim/nic/rdma_packet.h"
#include "sim/trace/encode.h"
#include "sim/trace/pcap_writer.h"

using namespace rdmasim;

namespace {

// Opcodes in capture order; PSN = 100 + index, dest QP = 0x123456 for all of them.
const uint8_t kOpcodes[] = {0x04, 0x0a, 0x0b, 0x0c, 0x10, 0x13, 0x14, 0x12,
                            0x11, 0x17, 0x05, 0x00, 0x02, 0x64, 0x65, 0x24};

nic::RdmaPacket make(net::LinkLayer ll, uint8_t opcode, int i) {
  nic::RdmaPacket p;
  p.id = static_cast<uint64_t>(i);
  p.link_layer = ll;
  p.src = ll == net::LinkLayer::InfiniBand ? 2 : 0x7f000102;
  p.dst = ll == net::LinkLayer::InfiniBand ? 1 : 0x7f000101;
  p.priority = static_cast<uint8_t>(i % 4);
  p.dscp = 26;
  p.ce = i % 3 == 0;
  p.udp_src_port = static_cast<uint16_t>(49152 + i);
  p.bth.opcode = opcode;
  p.bth.ack_req = true;
  p.bth.dest_qp = 0x123456;
  p.bth.psn = static_cast<uint32_t>(100 + i);
  p.reth = {.va = 0x1000, .rkey = 0x55, .dma_len = 8};
  p.aeth = {.syndrome = 0x1f, .msn = 7};
  p.atomic = {.va = 0x2000, .rkey = 0x66, .swap_add = 5, .compare = 9};
  p.atomic_ack_orig = 0x77;
  p.imm = 0x11223344;
  p.ieth_rkey = 0x11223344;
  p.deth = {.qkey = 0x11111111, .src_qp = 0x42};
  const uint16_t h = trace::headers_for_opcode(opcode);
  const bool data = !(h & (net::kHasAeth | net::kHasAtomicEth)) && opcode != 0x0c;
  if (data || opcode == 0x10) {
    auto buf = std::make_shared<net::Bytes>();
    for (int b = 0; b < 13; ++b) buf->push_back(static_cast<uint8_t>('a' + b));
    p.payload = buf;
    p.payload_len = 13;  // not a multiple of 4: exercises the pad count
  }
  return p;
}

void write(trace::PcapWriter& w, const net::Packet& p, Time t) {
  std::vector<uint8_t> rec;
  if (!trace::encode_record(p, t, rec)) {
    const nic::RdmaPacket* r = nic::rdma_of(p);
    std::fprintf(stderr, "pcap_sample: packet of kind %d (opcode 0x%02x) not encoded\n",
                 static_cast<int>(p.kind), r ? r->bth.opcode : 0);
    std::exit(1);
  }
  w.write(t, rec);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: pcap_sample DIR\n");
    return 2;
  }
  const std::string dir = argv[1];
  {
    trace::PcapWriter w(dir + "/roce.pcap", trace::linktype_for(net::LinkLayer::RoCEv2));
    int i = 0;
    for (uint8_t op : kOpcodes) write(w, make(net::LinkLayer::RoCEv2, op, i), us(1) * i), ++i;
    nic::RdmaPacket cnp = make(net::LinkLayer::RoCEv2, 0, i);
    cnp.kind = net::PacketKind::Cnp;
    cnp.bth.psn = 0;
    write(w, cnp, us(1) * i++);
    net::Packet pfc;
    pfc.kind = net::PacketKind::PfcPause;
    pfc.src = 0x7f000101;
    pfc.pause_enable_mask = 0x09;   // classes 0 and 3
    pfc.pause_quanta[0] = 0xffff;
    pfc.pause_quanta[3] = 0x1234;
    write(w, pfc, us(1) * i++);
  }
  {
    trace::PcapWriter w(dir + "/ib.pcap", trace::linktype_for(net::LinkLayer::InfiniBand));
    int i = 0;
    for (uint8_t op : kOpcodes) {
      nic::RdmaPacket p = make(net::LinkLayer::InfiniBand, op, i);
      p.vl = p.priority;
      if (op == 0x64) {  // a global UD packet
        p.headers |= net::kHasGrh;
        for (int b = 0; b < 16; ++b) p.sgid[b] = static_cast<uint8_t>(0xfe), p.dgid[b] = static_cast<uint8_t>(b);
      }
      write(w, p, us(1) * i++);
    }
    net::Packet fc;
    fc.kind = net::PacketKind::IbCredit;
    fc.link_layer = net::LinkLayer::InfiniBand;
    fc.vl = 2;
    fc.credits = 64 * 100;  // FCCL 100 blocks
    write(w, fc, us(1) * i++);
  }
  return 0;
}
