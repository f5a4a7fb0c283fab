// The control operations on queues: CQs, SRQs and QPs (each with its shared ring memory),
// and the teardown of a departing client.
#include <algorithm>
#include <cerrno>

#include "lib/daemon/ops.h"
#include "lib/daemon/ops_util.h"
#include "lib/daemon/wire.h"

namespace rdmasim::daemon {

namespace {

// A CQ's shared memory for `cqe` entries: [RingView<Cqe> of a power of two > cqe][CqControl],
// plain memory when `local` (SharedMap::make).
bool make_cq_memory(bool local, uint32_t cqe, Cq* cq, ipc::CreateCqResp* out) {
  const uint32_t ring_size = ipc::round_up_pow2(cqe + 1);
  const size_t control_offset = align_up(ipc::RingView<ipc::Cqe>::bytes_for(ring_size), ipc::kCacheLine);
  cq->map = SharedMap::make(local, "rdmasim-cq", control_offset + sizeof(ipc::CqControl));
  if (!cq->map.ok()) return false;
  init_ring(static_cast<ipc::RingHeader*>(cq->map.addr()), ring_size, sizeof(ipc::Cqe));
  cq->ring = ipc::RingView<ipc::Cqe>(cq->map.addr(), ring_size);
  cq->ctl = new (static_cast<char*>(cq->map.addr()) + control_offset) ipc::CqControl();
  cq->cqe = cqe;
  cq->prod = 0;
  out->cqe = cqe;
  out->ring_size = ring_size;
  out->control_offset = control_offset;
  return true;
}

}  // namespace

bool make_qp_memory(bool local, uint32_t sq_size, uint32_t rq_size, Qp* qp, ipc::CreateQpResp* out) {
  const size_t rq_offset = align_up(ipc::RingView<ipc::SqWqe>::bytes_for(sq_size), 4096);
  const size_t total = rq_offset + (rq_size ? ipc::RingView<ipc::RqWqe>::bytes_for(rq_size) : 0);
  qp->map = SharedMap::make(local, "rdmasim-qp", total);
  if (!qp->map.ok()) return false;
  init_ring(static_cast<ipc::RingHeader*>(qp->map.addr()), sq_size, sizeof(ipc::SqWqe));
  qp->sq = ipc::RingView<ipc::SqWqe>(qp->map.addr(), sq_size);
  if (rq_size) {
    char* rq_base = static_cast<char*>(qp->map.addr()) + rq_offset;
    init_ring(reinterpret_cast<ipc::RingHeader*>(rq_base), rq_size, sizeof(ipc::RqWqe));
    qp->rq = ipc::RingView<ipc::RqWqe>(rq_base, rq_size);
  }
  out->sq_size = sq_size;
  out->rq_size = rq_size;
  out->rq_offset = rq_offset;
  return true;
}

namespace {

bool cqe_in_range(uint32_t cqe, uint32_t max_cqe) { return cqe != 0 && cqe <= max_cqe && cqe < (1u << 30); }

}  // namespace

int Ops::create_cq(Client& c, const ipc::CreateCqReq& r, ipc::CreateCqResp* out, ReplyFds* fds) {
  if (r.dev_index >= c.devs.size()) return EINVAL;
  const size_t dev = c.devs[r.dev_index];
  if (!cqe_in_range(r.cqe, hca(dev).config().max_cqe)) return EINVAL;
  if (r.channel != 0 && !c.channels.count(r.channel)) return ENOENT;
  Cq cq;
  cq.dev = dev;
  cq.channel = r.channel;
  if (!make_cq_memory(s_.local_maps, r.cqe, &cq, out)) return ENOMEM;
  const uint32_t handle = c.next_handle++;
  const uint32_t client = c.id;
  EventRouter& router = s_.router;
  auto sink = [&router, client, handle](const nic::Completion& comp) { router.deliver(client, handle, comp); };
  if (int rc = hca(dev).create_cq(r.cqe, sink, &cq.cq)) return rc;
  out->handle = handle;
  s_.router.own(EventRouter::Kind::Cq, dev, cq.cq, client, handle);
  fds->pass_map(cq.map);
  c.cqs.emplace(handle, std::move(cq));
  return 0;
}

// ibv_resize_cq(3): "cqe must be at least the number of unpolled entries in the CQ"; below
// it, or past the device's max_cqe, EINVAL (mlx4_ib_resize_cq / mlx5_ib_resize_cq). The
// CQ's depth lives in its ring here (the HCA model's CQ has no capacity of its own), so the
// resize is a new ring with the unpolled CQEs moved to its front, in order.
int Ops::resize_cq(Client& c, const ipc::ResizeCqReq& r, ipc::CreateCqResp* out, ReplyFds* fds) {
  auto it = c.cqs.find(r.handle);
  if (it == c.cqs.end()) return ENOENT;
  Cq& old = it->second;
  if (!cqe_in_range(r.cqe, hca(old.dev).config().max_cqe)) return EINVAL;
  const uint32_t cons = old.ring.header()->consumer.load(std::memory_order_acquire);
  const uint32_t unpolled = old.prod - cons;
  if (r.cqe < unpolled) return EINVAL;
  Cq cq;
  cq.dev = old.dev;
  cq.cq = old.cq;
  cq.channel = old.channel;
  if (!make_cq_memory(s_.local_maps, r.cqe, &cq, out)) return ENOMEM;
  for (uint32_t i = 0; i < unpolled; ++i) {
    ipc::Cqe e = old.ring.slot(cons + i);
    e.seq = i + 1;  // valid at its new index i
    cq.ring.slot(i) = e;
  }
  cq.prod = unpolled;
  cq.ring.header()->producer.store(unpolled, std::memory_order_release);
  cq.ctl->armed.store(old.ctl->armed.load(std::memory_order_acquire), std::memory_order_release);
  cq.ctl->overrun.store(old.ctl->overrun.load(std::memory_order_acquire), std::memory_order_release);
  out->handle = r.handle;
  fds->pass_map(cq.map);
  cq.retired = std::move(old.retired);
  if (old.map.local()) cq.retired.push_back(std::move(old.map));
  old = std::move(cq);
  return 0;
}

int Ops::destroy_cq(Client& c, const ipc::HandleReq& r, NoBody*) {
  auto it = c.cqs.find(r.handle);
  if (it == c.cqs.end()) return ENOENT;
  for (const auto& [h, qp] : c.qps)
    if (qp.send_cq == r.handle || qp.recv_cq == r.handle) return EBUSY;
  if (int rc = hca(it->second.dev).destroy_cq(it->second.cq)) return rc;
  s_.router.disown(EventRouter::Kind::Cq, it->second.dev, it->second.cq);
  c.cqs.erase(it);
  return 0;
}

int Ops::create_srq(Client& c, const ipc::CreateSrqReq& r, ipc::CreateSrqResp* out, ReplyFds* fds) {
  auto pd = c.pds.find(r.pd);
  if (pd == c.pds.end()) return ENOENT;
  if (r.max_sge > ipc::kMaxSge || r.max_wr == 0 || r.max_wr >= (1u << 30)) return EINVAL;
  const size_t dev = pd->second.dev;
  nic::SrqAttr a{r.max_wr, r.max_sge, r.srq_limit};
  Srq srq;
  srq.dev = dev;
  if (r.xrcd != 0) {  // an XRC SRQ: its domain and CQ, on the PD's device
    auto x = c.xrcds.find(r.xrcd);
    auto cq = c.cqs.find(r.cq);
    if (x == c.xrcds.end() || cq == c.cqs.end()) return ENOENT;
    if (x->second.dev != dev || cq->second.dev != dev) return EINVAL;
    if (int rc = hca(dev).create_xrc_srq(pd->second.pd, x->second.xrcd, cq->second.cq, a, &srq.srqn)) return rc;
    srq.xrcd = r.xrcd;
  } else if (int rc = hca(dev).create_srq(pd->second.pd, a, &srq.srqn)) {
    return rc;
  }
  nic::SrqAttr granted = a;
  hca(dev).query_srq(srq.srqn, &granted);
  granted.max_sge = std::min(granted.max_sge, ipc::kMaxSge);
  const uint32_t ring_size = ipc::round_up_pow2(std::max(granted.max_wr, 1u));
  srq.max_sge = granted.max_sge;
  srq.map = SharedMap::make(s_.local_maps, "rdmasim-srq", ipc::RingView<ipc::RqWqe>::bytes_for(ring_size));
  if (!srq.map.ok()) {
    hca(dev).destroy_srq(srq.srqn);
    return ENOMEM;
  }
  init_ring(static_cast<ipc::RingHeader*>(srq.map.addr()), ring_size, sizeof(ipc::RqWqe));
  srq.ring = ipc::RingView<ipc::RqWqe>(srq.map.addr(), ring_size);
  out->handle = c.next_handle++;
  out->srqn = srq.srqn;
  out->max_wr = granted.max_wr;
  out->max_sge = granted.max_sge;
  out->ring_size = ring_size;
  s_.router.own(EventRouter::Kind::Srq, dev, srq.srqn, c.id, out->handle);
  fds->pass_map(srq.map);
  c.srqs.emplace(out->handle, std::move(srq));
  return 0;
}

int Ops::modify_srq(Client& c, const ipc::ModifySrqReq& r, NoBody*) {
  auto it = c.srqs.find(r.handle);
  if (it == c.srqs.end()) return ENOENT;
  if (r.mask & ~3u) return EINVAL;  // IBV_SRQ_MAX_WR | IBV_SRQ_LIMIT
  nic::SrqAttr a{r.max_wr, 0, r.srq_limit};
  return hca(it->second.dev).modify_srq(it->second.srqn, a, r.mask);
}

int Ops::query_srq(Client& c, const ipc::HandleReq& r, ipc::QuerySrqResp* out) {
  auto it = c.srqs.find(r.handle);
  if (it == c.srqs.end()) return ENOENT;
  nic::SrqAttr a;
  if (int rc = hca(it->second.dev).query_srq(it->second.srqn, &a)) return rc;
  *out = ipc::QuerySrqResp{a.max_wr, a.max_sge, a.srq_limit};
  return 0;
}

int Ops::destroy_srq(Client& c, const ipc::HandleReq& r, NoBody*) {
  auto it = c.srqs.find(r.handle);
  if (it == c.srqs.end()) return ENOENT;
  for (const auto& [h, qp] : c.qps)
    if (qp.srq == r.handle) return EBUSY;
  if (int rc = hca(it->second.dev).destroy_srq(it->second.srqn)) return rc;
  s_.router.disown(EventRouter::Kind::Srq, it->second.dev, it->second.srqn);
  c.srqs.erase(it);
  return 0;
}

int Ops::create_qp(Client& c, const ipc::CreateQpReq& r, ipc::CreateQpResp* out, ReplyFds* fds) {
  using nic::QpType;
  const auto type = static_cast<QpType>(r.qp_type);
  if (r.qp_type > 0xff ||
      (type != QpType::RC && type != QpType::UC && type != QpType::UD && !nic::is_xrc(type)))
    return EINVAL;
  nic::QpInitAttr init;
  init.type = type;
  size_t dev = 0;
  const Srq* srq = nullptr;
  if (type == QpType::XrcRecv) {  // an XRC target: a domain, no PD, CQs or queues
    auto x = c.xrcds.find(r.xrcd);
    if (x == c.xrcds.end()) return ENOENT;
    dev = x->second.dev;
    init.xrcd = x->second.xrcd;
  } else {
    auto pd = c.pds.find(r.pd);
    auto scq = c.cqs.find(r.send_cq);
    if (pd == c.pds.end() || scq == c.cqs.end()) return ENOENT;
    dev = pd->second.dev;
    if (scq->second.dev != dev) return EINVAL;
    init.pd = pd->second.pd;
    init.send_cq = scq->second.cq;
    if (type != QpType::XrcSend) {  // an XRC initiator has no receive side
      auto rcq = c.cqs.find(r.recv_cq);
      if (rcq == c.cqs.end()) return ENOENT;
      if (rcq->second.dev != dev) return EINVAL;
      init.recv_cq = rcq->second.cq;
      if (r.srq != 0) {
        auto s = c.srqs.find(r.srq);
        if (s == c.srqs.end()) return ENOENT;
        if (s->second.dev != dev) return EINVAL;
        srq = &s->second;
      }
    }
  }
  if (r.cap.max_send_sge > ipc::kMaxSge || r.cap.max_recv_sge > ipc::kMaxSge ||
      r.cap.max_inline_data > ipc::kMaxInline || r.cap.max_send_wr >= (1u << 30) ||
      r.cap.max_recv_wr >= (1u << 30))
    return EINVAL;
  init.srq = srq ? srq->srqn : 0;
  init.caps = {r.cap.max_send_wr, r.cap.max_recv_wr, r.cap.max_send_sge, r.cap.max_recv_sge,
               r.cap.max_inline_data};
  init.sq_sig_all = r.sq_sig_all != 0;
  Qp qp;
  qp.dev = dev;
  if (int rc = hca(dev).create_qp(init, &qp.qpn)) return rc;
  nic::QpCaps& g = init.caps;
  g.max_send_sge = std::min(g.max_send_sge, ipc::kMaxSge);
  g.max_recv_sge = std::min(g.max_recv_sge, ipc::kMaxSge);
  g.max_inline_data = std::min(g.max_inline_data, ipc::kMaxInline);
  const uint32_t sq_size = ipc::round_up_pow2(std::max(g.max_send_wr, 1u));
  const bool no_rq = srq || nic::is_xrc(type);  // receives come from an SRQ
  const uint32_t rq_size = no_rq ? 0 : ipc::round_up_pow2(std::max(g.max_recv_wr, 1u));
  if (!make_qp_memory(s_.local_maps, sq_size, rq_size, &qp, out)) {
    hca(dev).destroy_qp(qp.qpn);
    return ENOMEM;
  }
  qp.type = r.qp_type;
  qp.send_cq = type == QpType::XrcRecv ? 0 : r.send_cq;
  qp.recv_cq = nic::is_xrc(type) ? 0 : r.recv_cq;
  qp.srq = srq ? r.srq : 0;
  qp.xrcd = type == QpType::XrcRecv ? r.xrcd : 0;
  qp.max_send_sge = g.max_send_sge;
  qp.max_recv_sge = g.max_recv_sge;
  qp.max_inline = g.max_inline_data;
  qp.sq_sig_all = init.sq_sig_all;
  out->handle = c.next_handle++;
  out->qp_num = qp.qpn;
  out->cap.max_send_wr = g.max_send_wr;
  out->cap.max_recv_wr = no_rq ? 0 : g.max_recv_wr;
  out->cap.max_send_sge = g.max_send_sge;
  out->cap.max_recv_sge = no_rq ? 0 : g.max_recv_sge;
  out->cap.max_inline_data = g.max_inline_data;
  s_.router.own(EventRouter::Kind::Qp, dev, qp.qpn, c.id, out->handle);
  if (type == QpType::XrcRecv) xrc_target_refs_[{dev, qp.qpn}] = 1;
  fds->pass_map(qp.map);
  c.qps.emplace(out->handle, std::move(qp));
  return 0;
}

int Ops::modify_qp(Client& c, const ipc::ModifyQpReq& r, NoBody*) {
  auto it = c.qps.find(r.handle);
  if (it == c.qps.end()) return ENOENT;
  if (r.attr_mask >= (1u << 21)) return EINVAL;  // bits past IBV_QP_DEST_QPN
  return hca(it->second.dev).modify_qp(it->second.qpn, to_qp_attr(r.attr), r.attr_mask);
}

int Ops::query_qp(Client& c, const ipc::QueryQpReq& r, ipc::QueryQpResp* out) {
  auto it = c.qps.find(r.handle);
  if (it == c.qps.end()) return ENOENT;
  nic::QpAttr a;
  nic::QpInitAttr init;
  if (int rc = hca(it->second.dev).query_qp(it->second.qpn, &a, &init)) return rc;
  out->attr = from_qp_attr(a);
  out->init.qp_type = static_cast<uint32_t>(init.type);
  out->init.sq_sig_all = init.sq_sig_all ? 1 : 0;
  out->init.cap.max_send_wr = init.caps.max_send_wr;
  out->init.cap.max_recv_wr = init.caps.max_recv_wr;
  out->init.cap.max_send_sge = init.caps.max_send_sge;
  out->init.cap.max_recv_sge = init.caps.max_recv_sge;
  out->init.cap.max_inline_data = init.caps.max_inline_data;
  return 0;
}

int Ops::destroy_qp(Client& c, const ipc::HandleReq& r, NoBody*) {
  auto it = c.qps.find(r.handle);
  if (it == c.qps.end()) return ENOENT;
  if (int rc = release_qp(c, r.handle, it->second)) return rc;
  c.qps.erase(it);
  return 0;
}

void Ops::destroy_all(Client& c) {
  s_.cm.drop_client(c);  // first: its connected peers get DISCONNECTED
  // Children before parents: QPs, MWs (they pin MRs), SRQs, XRC domains, CQs, MRs, PDs,
  // channels. One at a time, erased after: destroying may complete work into the CQs still
  // listed.
  while (!c.qps.empty()) {
    auto it = c.qps.begin();
    release_qp(c, it->first, it->second);
    c.qps.erase(it);
  }
  for (auto& [h, mw] : c.mws) hca(mw.dev).dealloc_mw(mw.rkey);
  c.mws.clear();
  while (!c.srqs.empty()) {
    auto it = c.srqs.begin();
    hca(it->second.dev).destroy_srq(it->second.srqn);
    s_.router.disown(EventRouter::Kind::Srq, it->second.dev, it->second.srqn);
    c.srqs.erase(it);
  }
  for (auto& [h, x] : c.xrcds) release_xrcd(x);  // after its SRQs and targets
  c.xrcds.clear();
  while (!c.cqs.empty()) {
    auto it = c.cqs.begin();
    hca(it->second.dev).destroy_cq(it->second.cq);
    s_.router.disown(EventRouter::Kind::Cq, it->second.dev, it->second.cq);
    c.cqs.erase(it);
  }
  for (auto& [h, mr] : c.mrs) hca(mr.dev).dereg_mr(mr.lkey);
  c.mrs.clear();
  c.dms.clear();  // after the MRs on them
  for (auto& [h, pd] : c.pds) hca(pd.dev).dealloc_pd(pd.pd);
  c.pds.clear();
  c.channels.clear();
}

}  // namespace rdmasim::daemon
