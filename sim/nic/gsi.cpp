// QP1, the General Services Interface: MADs as UD SENDs between the QP1s of two ports.
#include "sim/nic/hca_impl.h"

namespace rdmasim::nic {

void Hca::set_gsi_sink(GsiSink sink) { impl_->gsi_sink = std::move(sink); }

int Hca::send_gsi(const AddressVector& av, net::Payload mad) {
  auto& im = *impl_;
  if (!mad || mad->size() != kMadBytes) return EINVAL;
  if (im.is_iwarp()) return EOPNOTSUPP;
  if (!im.port_active) return ENETDOWN;
  RdmaPacketPtr p = im.new_packet(kGsiQpn, av, kGsiQpn, ibta::kUd | ibta::kSendOnly, im.gsi_psn);
  im.gsi_psn = psn_add(im.gsi_psn, 1);
  p->deth.qkey = kGsiQkey;
  p->deth.src_qp = kGsiQpn;
  p->payload_len = kMadBytes;
  p->payload = std::move(mad);
  im.finish_packet(*p);
  im.counters.tx_packets++;
  im.counters.tx_bytes += p->wire_bytes;
  im.port.send(std::move(p));
  return 0;
}

void Hca::Impl::receive_gsi(const RdmaPacket& p) {
  // IBTA 13.5.1: QP1 takes UD SENDs carrying the GSI Q_Key; anything else is dropped, as
  // is a MAD of another size.
  if (p.bth.opcode != (ibta::kUd | ibta::kSendOnly) || p.deth.qkey != kGsiQkey) return;
  if (p.payload_len != kMadBytes || !gsi_sink) return;
  GsiDatagram d;
  d.src = p.src;
  d.sgid = p.sgid;
  d.pkey = p.bth.pkey;
  d.mad = p.payload;
  if (p.payload_offset != 0 || p.payload->size() != kMadBytes) {
    auto copy = std::make_shared<net::Bytes>(p.payload_data(), p.payload_data() + kMadBytes);
    d.mad = std::move(copy);
  }
  gsi_sink(d);
}

}  // namespace rdmasim::nic
