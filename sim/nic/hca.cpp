// Hca: object management (PDs, MRs, CQs, SRQs, QPs) and the entry points of the transport.
#include "sim/nic/hca.h"

#include "sim/nic/hca_impl.h"

namespace rdmasim::nic {

Hca::Hca(Engine& engine, HcaConfig config, net::Transmitter& port)
    : impl_(std::make_unique<Impl>(engine, std::move(config), port)) {
  port.set_ready_callback([this] { impl_->pump(); });
}

Hca::~Hca() {
  for (auto& [qpn, qp] : impl_->qps) {
    impl_->engine.cancel(qp->ack_timer);
    impl_->engine.cancel(qp->rnr_wait);
  }
  impl_->port.set_ready_callback([] {});
}

const HcaConfig& Hca::config() const { return impl_->config; }
const HcaCounters& Hca::counters() const { return impl_->counters; }
HcaObjects Hca::objects() const {
  const auto& im = *impl_;
  return {im.pds.size(), im.mrs.size(), im.mws.size(), im.cqs.size(), im.srqs.size(), im.qps.size()};
}

host::PcieLink& Hca::pcie() { return impl_->pcie; }
const host::PcieLink& Hca::pcie() const { return impl_->pcie; }

void Hca::set_async_sink(AsyncSink sink) { impl_->async_sink = std::move(sink); }

bool Hca::port_active() const { return impl_->port_active; }

void Hca::set_port_active(bool active) {
  if (impl_->port_active == active) return;
  impl_->port_active = active;
  if (impl_->async_sink) {
    AsyncEvent ev;
    ev.type = active ? AsyncEventType::PortActive : AsyncEventType::PortErr;
    ev.port = 1;
    impl_->async_sink(ev);
  }
  impl_->pump();  // up: resume; down: what is queued is lost on the dead port
}

int Hca::alloc_pd(uint32_t* pd) {
  if (impl_->pds.size() >= impl_->config.max_pd) return ENOMEM;
  *pd = impl_->next_pd++;
  impl_->pds[*pd] = Pd{};
  return 0;
}

int Hca::dealloc_pd(uint32_t pd) {
  auto it = impl_->pds.find(pd);
  if (it == impl_->pds.end()) return ENOENT;
  if (it->second.refs) return EBUSY;
  impl_->pds.erase(it);
  return 0;
}

namespace {
// Access rules shared by reg_mr and rereg_mr.
int check_mr_access(uint32_t access) {
  // IBTA: remote write or remote atomic access requires local write (rdma-core: EINVAL).
  if ((access & (kAccessRemoteWrite | kAccessRemoteAtomic)) && !(access & kAccessLocalWrite))
    return EINVAL;
  return 0;
}
}  // namespace

int Hca::reg_mr(uint32_t pd, MemorySpace* mem, uint64_t addr, uint64_t length, uint64_t iova,
                uint32_t access, MrKeys* keys) {
  auto pit = impl_->pds.find(pd);
  if (pit == impl_->pds.end()) return ENOENT;
  // An implicit on-demand paging MR (address 0, length all ones: mlx5_ib_reg_user_mr) spans
  // the address space; any other MR is at most max_mr_size.
  const bool implicit_odp = (access & kAccessOnDemand) && addr == 0 && iova == 0 && length == UINT64_MAX;
  if (!mem || (length > impl_->config.max_mr_size && !implicit_odp)) return EINVAL;
  // IBTA: remote write or remote atomic access requires local write (rdma-core: EINVAL).
  if (int rc = check_mr_access(access)) return rc;
  if (impl_->mrs.size() >= impl_->config.max_mr) return ENOMEM;
  // Keys: a 24-bit index and an 8-bit variant, as real HCAs build them; lkey == rkey.
  const uint32_t key = impl_->next_key++ << 8 | 0x5a;
  Mr& mr = impl_->mrs[key] = Mr{pd, mem, addr, length, iova, access, key};
  mr.held = Impl::new_held(mr);
  pit->second.refs++;
  keys->lkey = keys->rkey = key;
  return 0;
}

int Hca::rereg_mr(uint32_t lkey, uint32_t flags, uint32_t pd, MemorySpace* mem, uint64_t addr,
                  uint64_t length, uint32_t access, MrKeys* keys) {
  auto& im = *impl_;
  auto it = im.mrs.find(lkey);
  if (it == im.mrs.end()) return ENOENT;
  if (it->second.bound_mws) return EBUSY;  // windows would lose (or move with) their bytes
  im.flush_all_writes();
  constexpr uint32_t kAll = kReregChangeTranslation | kReregChangePd | kReregChangeAccess;
  if (flags == 0 || (flags & ~kAll)) return EINVAL;
  Mr next = it->second;
  if (flags & kReregChangePd) {
    if (!im.pds.count(pd)) return ENOENT;
    next.pd = pd;
  }
  if (flags & kReregChangeTranslation) {
    if (!mem || length == 0 || length > im.config.max_mr_size || addr + length < addr) return EINVAL;
    next.mem = mem;
    next.addr = next.iova = addr;
    next.length = length;
  }
  if (flags & kReregChangeAccess) {
    if (int rc = check_mr_access(access)) return rc;
    next.access = access;
  }
  // New memory gets new held bytes, and packets holding the old ones get a copy; on the
  // same memory they stay valid (an on-demand paging MR holds none).
  if (flags & kReregChangeTranslation) {
    next.held = Impl::new_held(next);
    Impl::let_go_held(it->second);
  } else if (next.access & kAccessOnDemand) {
    next.held.reset();
  } else if (!next.held) {
    next.held = Impl::new_held(next);
  }
  im.pds[it->second.pd].refs--;
  im.pds[next.pd].refs++;
  it->second = next;
  keys->lkey = keys->rkey = lkey;
  return 0;
}

int Hca::dereg_mr(uint32_t lkey) {
  auto it = impl_->mrs.find(lkey);
  if (it == impl_->mrs.end()) return ENOENT;
  // IBTA 10.6.7.2.6 and man ibv_alloc_mw: deregistering an MR with bound windows fails
  // (EBUSY, "still in use", as for a PD with MRs; rxe returns EINVAL, mlx5 does not check).
  if (it->second.bound_mws) return EBUSY;
  impl_->flush_all_writes();  // accepted WRITE bytes land before the region goes away
  impl_->pds[it->second.pd].refs--;
  Impl::let_go_held(it->second);
  impl_->mrs.erase(it);
  return 0;
}

int Hca::create_cq(uint32_t cqe, CompletionSink sink, uint32_t* cq) {
  if (cqe == 0 || cqe > impl_->config.max_cqe) return EINVAL;
  if (impl_->cqs.size() >= impl_->config.max_cq) return ENOMEM;
  *cq = impl_->next_cq++;
  impl_->cqs[*cq] = Cq{cqe, std::move(sink), 0};
  return 0;
}

int Hca::destroy_cq(uint32_t cq) {
  auto it = impl_->cqs.find(cq);
  if (it == impl_->cqs.end()) return ENOENT;
  if (it->second.refs) return EBUSY;
  impl_->cqs.erase(it);
  return 0;
}

int Hca::create_srq(uint32_t pd, const SrqAttr& attr, uint32_t* srq) {
  auto pit = impl_->pds.find(pd);
  if (pit == impl_->pds.end()) return ENOENT;
  const auto& c = impl_->config;
  if (attr.max_wr == 0 || attr.max_wr > c.max_srq_wr || attr.max_sge > c.max_srq_sge)
    return EINVAL;
  if (impl_->srqs.size() >= c.max_srq) return ENOMEM;
  *srq = impl_->next_srq++;
  Srq s;
  s.pd = pd;
  s.attr = attr;
  s.attr.srq_limit = 0;  // ibv_create_srq ignores srq_limit; modify_srq arms it
  impl_->srqs[*srq] = std::move(s);
  pit->second.refs++;
  return 0;
}

int Hca::modify_srq(uint32_t srq, const SrqAttr& attr, uint32_t mask) {
  auto it = impl_->srqs.find(srq);
  if (it == impl_->srqs.end()) return ENOENT;
  Srq& s = it->second;
  if (mask & ~3u) return EINVAL;
  if (mask & 1) {  // IBV_SRQ_MAX_WR: resizing is not supported by this model
    return EINVAL;
  }
  if (mask & 2) {  // IBV_SRQ_LIMIT: must be below max_wr
    if (attr.srq_limit > s.attr.max_wr) return EINVAL;
    s.attr.srq_limit = attr.srq_limit;
    s.limit_armed = attr.srq_limit > 0;
  }
  return 0;
}

int Hca::query_srq(uint32_t srq, SrqAttr* attr) {
  auto it = impl_->srqs.find(srq);
  if (it == impl_->srqs.end()) return ENOENT;
  *attr = it->second.attr;
  return 0;
}

int Hca::destroy_srq(uint32_t srq) {
  auto it = impl_->srqs.find(srq);
  if (it == impl_->srqs.end()) return ENOENT;
  if (it->second.refs) return EBUSY;
  impl_->pds[it->second.pd].refs--;
  if (it->second.xrcd) {
    impl_->xrcds[it->second.xrcd].refs--;
    impl_->cqs[it->second.cq].refs--;
  }
  impl_->srqs.erase(it);
  return 0;
}

int Hca::post_srq_recv(uint32_t srq, const RecvWr& wr) {
  auto it = impl_->srqs.find(srq);
  if (it == impl_->srqs.end()) return ENOENT;
  Srq& s = it->second;
  if (wr.sgl.size() > s.attr.max_sge) return EINVAL;
  if (s.queue.size() >= s.attr.max_wr) return ENOMEM;
  s.queue.push_back(wr);
  return 0;
}

int Hca::create_qp(QpInitAttr& attr, uint32_t* qpn) {
  auto& im = *impl_;
  const auto& c = im.config;
  if (attr.type != QpType::RC && attr.type != QpType::UC && attr.type != QpType::UD &&
      !is_xrc(attr.type))
    return EINVAL;
  // iWARP (RDMAP over TCP) has reliable connected QPs only; irdma and iw_cxgb4 refuse
  // UD, UC and XRC QPs with EOPNOTSUPP.
  if (im.is_iwarp() && attr.type != QpType::RC) return EOPNOTSUPP;
  // What each type is made of (QpInitAttr): an XRC target has a domain and nothing else;
  // an XRC initiator has no receive side.
  const bool target = attr.type == QpType::XrcRecv;
  if (target) {
    if (!im.xrcds.count(attr.xrcd)) return ENOENT;
    attr.pd = attr.send_cq = attr.recv_cq = attr.srq = 0;
    attr.caps = QpCaps{};
  } else {
    attr.xrcd = 0;
    if (attr.type == QpType::XrcSend) {
      attr.recv_cq = attr.srq = 0;
      attr.caps.max_recv_wr = attr.caps.max_recv_sge = 0;
    }
    if (!im.pds.count(attr.pd)) return ENOENT;
    if (!im.cqs.count(attr.send_cq)) return ENOENT;
    if (attr.type != QpType::XrcSend && !im.cqs.count(attr.recv_cq)) return ENOENT;
    if (attr.srq && !im.srqs.count(attr.srq)) return ENOENT;
    // An XRC SRQ serves XRC targets only (mlx5: EINVAL).
    if (attr.srq && im.srqs[attr.srq].xrcd) return EINVAL;
  }
  if (attr.caps.max_send_wr > c.max_qp_wr || attr.caps.max_recv_wr > c.max_qp_wr ||
      attr.caps.max_send_sge > c.max_sge || attr.caps.max_recv_sge > c.max_sge ||
      attr.caps.max_inline_data > c.max_inline_data)
    return EINVAL;
  if (im.qps.size() >= c.max_qp) return ENOMEM;
  auto qp = std::make_unique<Qp>();
  qp->qpn = c.qpn_base | im.next_qpn;
  im.next_qpn = (im.next_qpn + 1) & (c.qpn_base ? 0xffff : 0xffffff);
  if (im.next_qpn < 2) im.next_qpn = 2;
  if (attr.srq) attr.caps.max_recv_wr = attr.caps.max_recv_sge = 0;
  // Granted capacities: what was asked (all within the device limits above), except the
  // inline size: a ConnectX grants what the send WQE it sizes holds (libmlx5's
  // mlx5_calc_send_wqe: 64 B of segments ahead of the data for RC, UC and UD, a 16 B
  // gather entry per SGE or the inline segment, rounded up to 64 B basic blocks; inline =
  // WQE - 64 - 4 B inline header), so rdma_xclient's 16 B inline send on a QP that asked
  // for none (1 SGE: WQE 128 B, inline 60 B) works as on hardware.
  if (!im.is_iwarp()) {
    constexpr uint32_t kOverhead = 64, kInlineHeader = 4, kGather = 16, kBlock = 64;
    auto align = [](uint32_t v, uint32_t a) { return (v + a - 1) / a * a; };
    uint32_t wqe = kOverhead + attr.caps.max_send_sge * kGather;
    if (attr.caps.max_inline_data)
      wqe = std::max(wqe, kOverhead + align(kInlineHeader + attr.caps.max_inline_data, kGather));
    wqe = align(wqe, kBlock);
    if (wqe > kOverhead + kInlineHeader)
      attr.caps.max_inline_data = std::min(c.max_inline_data,
                                           std::max(attr.caps.max_inline_data, wqe - kOverhead - kInlineHeader));
  }
  qp->init = attr;
  qp->attr.cap = attr.caps;
  qp->attr.qp_state = qp->attr.cur_qp_state = QpState::Reset;
  qp->mtu = c.max_mtu;
  im.hold_qp_objects(attr, +1);
  *qpn = qp->qpn;
  im.qps[qp->qpn] = std::move(qp);
  return 0;
}

void Hca::Impl::hold_qp_objects(const QpInitAttr& a, int n) {
  if (a.type == QpType::XrcRecv) {
    xrcds[a.xrcd].refs += n;
    return;
  }
  pds[a.pd].refs += n;
  cqs[a.send_cq].refs += n;
  if (a.type != QpType::XrcSend) cqs[a.recv_cq].refs += n;
  if (a.srq) srqs[a.srq].refs += n;
}

int Hca::modify_qp(uint32_t qpn, const QpAttr& attr, uint32_t mask) {
  auto it = impl_->qps.find(qpn);
  if (it == impl_->qps.end()) return ENOENT;
  Qp& qp = *it->second;
  if (impl_->is_iwarp() && qp.init.type == QpType::RC && (mask & kQpState) &&
      attr.qp_state == QpState::Rtr && qp.attr.qp_state == QpState::Init) {
    // The TCP connection needs the peer's address: from the GID, or the QPN's host.
    const AddressVector& av = (mask & kQpAv) ? attr.ah_attr : qp.attr.ah_attr;
    const uint32_t dest = (mask & kQpDestQpn) ? attr.dest_qp_num : qp.attr.dest_qp_num;
    if (impl_->iwarp_resolve_peer(av, dest) == 0) return EINVAL;
  }
  const int rc = impl_->modify_qp(qp, attr, mask);
  if (rc == 0 && impl_->is_iwarp()) impl_->iwarp_on_modify(qp);
  return rc;
}

int Hca::query_qp(uint32_t qpn, QpAttr* attr, QpInitAttr* init) {
  auto it = impl_->qps.find(qpn);
  if (it == impl_->qps.end()) return ENOENT;
  if (attr) {
    *attr = it->second->attr;
    attr->cur_qp_state = attr->qp_state;
    attr->sq_psn = it->second->attr.sq_psn;
  }
  if (init) *init = it->second->init;
  return 0;
}

int Hca::destroy_qp(uint32_t qpn) {
  auto& im = *impl_;
  auto it = im.qps.find(qpn);
  if (it == im.qps.end()) return ENOENT;
  Qp& qp = *it->second;
  im.flush_write(qp);
  im.engine.cancel(qp.ack_timer);
  im.engine.cancel(qp.rnr_wait);
  im.free_qp_windows(qpn);  // type 2 windows bound to it can never be used again
  im.iwarp_unbind(qp);
  im.hold_qp_objects(qp.init, -1);
  im.qps.erase(it);  // `active` may still name it; pump() skips unknown QPNs
  return 0;
}

namespace {
// The send WQE posted as `seq`, if it is still queued (recent ones are at the back).
SendWqe* find_wqe(Qp& qp, uint64_t seq) {
  for (auto it = qp.sq.rbegin(); it != qp.sq.rend(); ++it) {
    if (it->seq == seq) return &*it;
    if (it->seq < seq) break;
  }
  return nullptr;
}
}  // namespace

int Hca::post_send(uint32_t qpn, const SendWr& wr) {
  auto& im = *impl_;
  auto it = im.qps.find(qpn);
  if (it == im.qps.end()) return ENOENT;
  Qp& qp = *it->second;
  const QpState st = qp.attr.qp_state;
  if (st == QpState::Reset || st == QpState::Init || st == QpState::Rtr) return EINVAL;
  if (qp.sq.size() >= std::max<uint32_t>(qp.init.caps.max_send_wr, 1)) return ENOMEM;
  const bool is_inline = wr.send_flags & kSendInline;
  if (!is_inline && wr.sgl.size() > std::max<uint32_t>(qp.init.caps.max_send_sge, 1))
    return EINVAL;
  if (is_inline && wr.inline_data.size() > im.config.max_inline_data) return EINVAL;
  const bool atomic =
      wr.opcode == WrOpcode::AtomicCmpAndSwp || wr.opcode == WrOpcode::AtomicFetchAndAdd;
  // Operations the transport does not carry: UD sends only; UC no READ/atomics.
  switch (qp.init.type) {
    case QpType::UD:
      if (wr.opcode != WrOpcode::Send && wr.opcode != WrOpcode::SendWithImm) return EINVAL;
      break;
    case QpType::UC:
      if (wr.opcode == WrOpcode::RdmaRead || atomic) return EINVAL;
      break;
    case QpType::RC:
    case QpType::XrcSend:
      if (atomic && !im.config.atomics) return EINVAL;
      break;
    case QpType::XrcRecv:
      return EINVAL;  // a target has no send queue
  }
  const bool mw_op = wr.opcode == WrOpcode::LocalInv || wr.opcode == WrOpcode::BindMw ||
                     wr.opcode == WrOpcode::SendWithInv;
  if (mw_op && !im.config.mem_windows) return EINVAL;
  // IETH (SEND LAST/ONLY with Invalidate) is an RC opcode here: UC would need its own
  // opcodes, and RDMAP's Send with Invalidate is not modelled on iWARP.
  if (wr.opcode == WrOpcode::SendWithInv && (!reliable(qp.init.type) || im.is_iwarp()))
    return EINVAL;
  if (wr.opcode == WrOpcode::BindMw) {
    // mlx5 binds through a KLM UMR that spans at most 2 GiB (set_bind_wr: EOPNOTSUPP);
    // zero-based windows are refused (mlx5_bind_mw: EINVAL; o10-36.2.2 for type 1).
    if (wr.bind.length > (uint64_t{1} << 31)) return EOPNOTSUPP;
    if (wr.bind.access & kAccessZeroBased) return EINVAL;
  }
  if (atomic && is_inline) return EINVAL;
  // RDMAP (RFC 5040) has no immediate data: irdma refuses these opcodes on iWARP (EINVAL).
  if (im.is_iwarp() && (wr.opcode == WrOpcode::RdmaWriteWithImm || wr.opcode == WrOpcode::SendWithImm))
    return EINVAL;
  // An RDMAP Read Request carries one sink STag/TO (RFC 5040 4.4): iWARP providers refuse a
  // READ scattering into more than one SGE (EINVAL; max_sge_rd is 1).
  if (im.is_iwarp() && wr.opcode == WrOpcode::RdmaRead && wr.sgl.size() > 1) return EINVAL;
  SendWqe w;
  w.wr = wr;
  w.seq = ++qp.posted;
  if (is_inline) {
    w.length = static_cast<uint32_t>(wr.inline_data.size());
  } else {
    uint64_t len = 0;
    for (const Sge& s : wr.sgl) len += s.length;
    w.length = static_cast<uint32_t>(len);
  }
  if (atomic) w.length = 8;
  if (w.is_local_op()) w.length = 0;
  qp.sq.push_back(std::move(w));
  if (st == QpState::Err || st == QpState::Sqe) {  // ERR and SQE flush new sends (IBTA 10.3.1)
    SendWqe flushed = std::move(qp.sq.back());
    qp.sq.pop_back();
    im.complete_send(qp, flushed, WcStatus::WrFlushErr);
    return 0;
  }
  // The WQE may go on the wire after the NIC's pipeline latency. With PCIe, the doorbell
  // and the WQE fetch come first; its payload is read as its packets go (dma_hold).
  const uint64_t seq = qp.posted;
  const auto eligible = [this, qpn, seq] {
    auto q = impl_->qps.find(qpn);
    if (q == impl_->qps.end()) return;
    if (SendWqe* s = find_wqe(*q->second, seq)) s->eligible = true;
    impl_->kick(*q->second);
  };
  if (!im.pcie.enabled()) {
    im.later(im.config.wqe_latency, eligible);
    return 0;
  }
  const Time fetched = im.pcie_post(qp, qp.sq.back());
  im.later(fetched - im.engine.now(), [this, qpn, seq, eligible] {
    auto q = impl_->qps.find(qpn);
    if (q == impl_->qps.end()) return;
    if (SendWqe* s = find_wqe(*q->second, seq)) {
      s->fetched = true;
      impl_->pcie_read_ahead(*q->second);
    }
    impl_->later(impl_->config.wqe_latency, eligible);
  });
  return 0;
}

int Hca::post_recv(uint32_t qpn, const RecvWr& wr) {
  auto& im = *impl_;
  auto it = im.qps.find(qpn);
  if (it == im.qps.end()) return ENOENT;
  Qp& qp = *it->second;
  if (qp.init.srq || is_xrc(qp.init.type)) return EINVAL;  // receives go to an SRQ
  if (qp.attr.qp_state == QpState::Reset) return EINVAL;
  if (wr.sgl.size() > std::max<uint32_t>(qp.init.caps.max_recv_sge, 1)) return EINVAL;
  if (qp.rq.size() >= std::max<uint32_t>(qp.init.caps.max_recv_wr, 1)) return ENOMEM;
  if (qp.attr.qp_state == QpState::Err) {
    Completion c;
    c.wr_id = wr.wr_id;
    c.status = WcStatus::WrFlushErr;
    c.opcode = WcOpcode::Recv;
    c.qp_num = qp.qpn;
    c.wqe_index = wr.wqe_index;
    im.complete(qp.init.recv_cq, c);
    return 0;
  }
  qp.rq.push_back(wr);
  return 0;
}

void Hca::receive(net::PacketPtr frame, int /*port*/) {
  auto& im = *impl_;
  if (frame->kind != net::PacketKind::Transport) {
    if (frame->kind == net::PacketKind::Cnp && im.port_active) im.receive_cnp(*rdma_cast(std::move(frame)));
    return;
  }
  RdmaPacketPtr pkt = rdma_cast(std::move(frame));
  im.counters.rx_packets++;
  im.counters.rx_bytes += pkt->wire_bytes;
  if (pkt->ce) im.counters.ecn_marked_received++;
  pkt->nic_rx_at = im.engine.now();
  // The receive pipeline takes rx_latency; then the transport sees the packet.
  if (!im.port_active) return;  // a down port receives nothing
  // The packet is cold again after rx_latency at scale: fetched ahead (ReadFirst).
  RdmaPacket* const first = pkt.get();
  im.later(im.config.rx_latency, [this, pkt = std::move(pkt)]() mutable {
    auto& m = *impl_;
    if (pkt->bth.dest_qp == kGsiQpn) {
      m.receive_gsi(*pkt);
      return;
    }
    uint32_t dest = pkt->bth.dest_qp;
    if (m.is_iwarp() && pkt->link_layer == net::LinkLayer::IWarp) {
      dest = m.iwarp_demux(*pkt);  // by the TCP ports of a stream the CM set up
      if (dest == 0) return m.receive_iwarp_cm(*pkt);
    }
    auto it = m.qps.find(dest);
    if (it == m.qps.end()) return;  // no such QP: silently dropped, as HCAs do
    Qp& qp = *it->second;
    const bool response = reliable(qp.init.type) && ibta::info(pkt->bth.opcode).is_response();
    // An XRC initiator only gets responses, a target only requests: anything else is dropped.
    if ((qp.init.type == QpType::XrcSend && !response) ||
        (qp.init.type == QpType::XrcRecv && response))
      return;
    m.rx_pkt = pkt.get();
    const bool tcp = qp.tcp || m.is_iwarp();  // iWARP: ECN is TCP's business (DCTCP), no CNPs
    if (pkt->ce && !tcp) m.notify_congestion(qp, *pkt);
    if (tcp) {
      // A TCP segment: iwarp.cpp hands its FPDUs to the RC layers (and may keep it).
      m.iwarp_receive(qp, std::shared_ptr<RdmaPacket>(std::move(pkt)));
    } else if (response) {
      m.handle_response(qp, *pkt);
    } else if (qp.init.type == QpType::UD) {
      m.handle_ud(qp, *pkt);
    } else if (m.irn(qp)) {
      // IRN: out-of-order requests are kept (irn.cpp)
      m.irn_receive(qp, std::shared_ptr<RdmaPacket>(std::move(pkt)));
    } else {
      m.handle_request(qp, *pkt);
    }
    m.rx_pkt = nullptr;
  }, ReadFirst{first});
}

void Hca::Impl::complete(uint32_t cq, const Completion& c) {
  auto it = cqs.find(cq);
  if (it == cqs.end() || !it->second.sink) return;
  if (!pcie.enabled()) {
    it->second.sink(c);
    return;
  }
  // The CQE is a DMA write behind the payload writes before it (posted writes keep their
  // order); the application can poll it once it has arrived.
  const Time at = pcie.dma_write(engine.now(), kCqeBytes, host::PcieOp::CqeWrite, c.qp_num);
  later(at - engine.now(), [this, cq, c] {
    auto i = cqs.find(cq);
    if (i != cqs.end() && i->second.sink) i->second.sink(c);
  });
}

void Hca::Impl::complete_send(Qp& qp, const SendWqe& w, WcStatus status) {
  const bool signaled = qp.init.sq_sig_all || (w.wr.send_flags & kSendSignaled);
  // Unsignaled WQEs complete silently, unless they fail (errors always generate a CQE).
  if (!signaled && status == WcStatus::Success) return;
  Completion c;
  c.wr_id = w.wr.wr_id;
  c.status = status;
  c.qp_num = qp.qpn;
  c.is_send = true;
  c.wqe_index = w.wr.wqe_index;
  switch (w.wr.opcode) {
    case WrOpcode::RdmaWrite:
    case WrOpcode::RdmaWriteWithImm: c.opcode = WcOpcode::RdmaWrite; break;
    case WrOpcode::RdmaRead: c.opcode = WcOpcode::RdmaRead; break;
    case WrOpcode::AtomicCmpAndSwp: c.opcode = WcOpcode::CompSwap; break;
    case WrOpcode::AtomicFetchAndAdd: c.opcode = WcOpcode::FetchAdd; break;
    case WrOpcode::BindMw: c.opcode = WcOpcode::BindMw; break;
    case WrOpcode::LocalInv: c.opcode = WcOpcode::LocalInv; break;
    default: c.opcode = WcOpcode::Send; break;
  }
  if (status == WcStatus::Success) c.byte_len = w.length;
  complete(qp.init.send_cq, c);
}

}  // namespace rdmasim::nic
