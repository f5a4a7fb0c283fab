// XRC, the extended reliable connected transport (IBTA annex A14): domains, XRC SRQs, and
// the target side's choice of SRQ and PD per request. An initiator (QpType::XrcSend) is an
// RC requester whose requests carry an XRCETH naming an XRC SRQ at the target; a target
// (QpType::XrcRecv) is an RC responder with no receive queue or PD of its own: each request
// takes its receive from, and is protected by the PD of, the XRC SRQ it names, which must be
// in the target's domain. Responses and ACKs carry the XRC opcodes and no XRCETH.
#include "sim/nic/hca_impl.h"

namespace rdmasim::nic {

int Hca::alloc_xrcd(uint32_t* xrcd) {
  auto& im = *impl_;
  if (im.is_iwarp()) return EOPNOTSUPP;  // iWARP has no XRC (irdma, iw_cxgb4)
  *xrcd = im.next_xrcd++;
  im.xrcds[*xrcd] = Xrcd{};
  return 0;
}

int Hca::dealloc_xrcd(uint32_t xrcd) {
  auto it = impl_->xrcds.find(xrcd);
  if (it == impl_->xrcds.end()) return ENOENT;
  if (it->second.refs) return EBUSY;
  impl_->xrcds.erase(it);
  return 0;
}

int Hca::create_xrc_srq(uint32_t pd, uint32_t xrcd, uint32_t cq, const SrqAttr& attr, uint32_t* srq) {
  auto& im = *impl_;
  auto x = im.xrcds.find(xrcd);
  auto c = im.cqs.find(cq);
  if (x == im.xrcds.end() || c == im.cqs.end()) return ENOENT;
  if (int rc = create_srq(pd, attr, srq)) return rc;
  Srq& s = im.srqs[*srq];
  s.xrcd = xrcd;
  s.cq = cq;
  x->second.refs++;
  c->second.refs++;
  return 0;
}

bool Hca::Impl::xrc_accept(Qp& qp, const RdmaPacket& p) {
  // A request of another transport reaching a target, or an XRCETH naming no XRC SRQ of the
  // target's domain: the responder refuses it (an Invalid Request NAK).
  if (ibta::info(p.bth.opcode).transport != ibta::Transport::XRC) return false;
  auto it = srqs.find(p.xrc_srqn);
  if (it == srqs.end() || it->second.xrcd == 0 || it->second.xrcd != qp.init.xrcd) return false;
  qp.xrc_srq = p.xrc_srqn;
  qp.xrc_pd = it->second.pd;
  return true;
}

uint32_t Hca::Impl::recv_cq(const Qp& qp, uint32_t srqn) const {
  if (qp.init.type != QpType::XrcRecv) return qp.init.recv_cq;
  auto it = srqs.find(srqn);
  return it == srqs.end() ? 0 : it->second.cq;
}

}  // namespace rdmasim::nic
