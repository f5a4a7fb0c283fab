// The exported queue verbs: completion channels, CQs, SRQs and QPs. The front end checks
// arguments, builds the rdma-core objects and keeps the handle tables the data path and
// the event calls look up; the backend creates the queues and hands back their rings.
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "lib/verbs/control.h"

using namespace rdmasim::verbs;
namespace backend = rdmasim::backend;
namespace ipc = rdmasim::ipc;

namespace {

// What an extended CQ can report (ibv_create_cq_ex(3)): the standard fields and both
// completion timestamps. CVLAN, flow tag and tag-matching info need features rdmasim does
// not model (raw packet QPs, flow steering, tag matching): EOPNOTSUPP at creation, as
// mlx5 refuses wc_flags it cannot fill.
constexpr uint64_t kCqWcFlags = uint64_t{IBV_WC_STANDARD_FLAGS} | IBV_WC_EX_WITH_COMPLETION_TIMESTAMP |
                                IBV_WC_EX_WITH_COMPLETION_TIMESTAMP_WALLCLOCK;

ibv_cq_ex* create_cq_common(ibv_context* c, int cqe, void* cq_context, ibv_comp_channel* ch,
                            int comp_vector, uint64_t wc_flags = IBV_WC_STANDARD_FLAGS) {
  // ibv_create_cq(3): cqe at most max_cqe (the daemon checks that bound), comp_vector
  // below the context's num_comp_vectors; EINVAL otherwise.
  if (cqe <= 0 || comp_vector < 0 || comp_vector >= c->num_comp_vectors)
    return fail<ibv_cq_ex>(EINVAL);
  if (ch && ch->context != c) return fail<ibv_cq_ex>(EINVAL);
  Context* ctx = ctx_of(c);
  backend::CqRing r;
  if (int rc = backend_of(c).create_cq(static_cast<uint32_t>(cqe),
                                       ch ? CompChannel::from(ch)->handle : 0u,
                                       static_cast<uint32_t>(comp_vector), &r))
    return fail<ibv_cq_ex>(rc);
  auto* cq = new Cq();
  cq->ctx = ctx;
  cq->map = r.map;
  cq->ring = r.ring;
  cq->control = r.control;
  cq->wc_flags = wc_flags;
  ibv_cq_ex& x = cq->cq;
  x.context = c;
  x.channel = ch;
  x.cq_context = cq_context;
  x.handle = r.handle;
  x.cqe = r.cqe;
  pthread_mutex_init(&x.mutex, nullptr);
  pthread_cond_init(&x.cond, nullptr);
  install_cq_ex_ops(&x);
  if (ch) ++ch->refcnt;
  std::lock_guard<std::mutex> lock(ctx->mu);
  ctx->cqs[r.handle] = cq;
  return &x;
}

}  // namespace

namespace rdmasim::verbs {

ibv_cq_ex* create_cq_ex_op(ibv_context* c, ibv_cq_init_attr_ex* attr) {
  if (attr->comp_mask & ~static_cast<uint32_t>(IBV_CQ_INIT_ATTR_MASK_FLAGS | IBV_CQ_INIT_ATTR_MASK_PD))
    return fail<ibv_cq_ex>(EOPNOTSUPP);
  // IBV_CQ_INIT_ATTR_MASK_PD: a parent domain of this context (mlx5: EINVAL otherwise).
  if ((attr->comp_mask & IBV_CQ_INIT_ATTR_MASK_PD) &&
      (!attr->parent_domain || attr->parent_domain->context != c || !Pd::from(attr->parent_domain)->protection))
    return fail<ibv_cq_ex>(EINVAL);
  if (attr->wc_flags & ~kCqWcFlags) return fail<ibv_cq_ex>(EOPNOTSUPP);
  // SINGLE_THREADED is a hint (the locks stay); IGNORE_OVERRUN is not modelled: an
  // overrun always raises IBV_EVENT_CQ_ERR here.
  if ((attr->comp_mask & IBV_CQ_INIT_ATTR_MASK_FLAGS) &&
      (attr->flags & ~static_cast<uint32_t>(IBV_CREATE_CQ_ATTR_SINGLE_THREADED)))
    return fail<ibv_cq_ex>(EOPNOTSUPP);
  if (attr->cqe > static_cast<uint32_t>(INT32_MAX)) return fail<ibv_cq_ex>(EINVAL);
  return create_cq_common(c, static_cast<int>(attr->cqe), attr->cq_context, attr->channel,
                          static_cast<int>(attr->comp_vector), attr->wc_flags);
}

ibv_qp* create_qp_ex_op(ibv_context* c, ibv_qp_init_attr_ex* attr) {
  if (getenv("RDMASIM_VERBS_DEBUG"))
    fprintf(stderr, "rdmasim: create_qp type %d mask 0x%x cap %u/%u/%u/%u/%u\n", attr->qp_type,
            attr->comp_mask, attr->cap.max_send_wr, attr->cap.max_recv_wr, attr->cap.max_send_sge,
            attr->cap.max_recv_sge, attr->cap.max_inline_data);
  // An XRC target (IBV_QPT_XRC_RECV) names its XRC domain and has no PD, CQs or queues
  // (ibv_create_qp_ex(3)); every other type needs a PD.
  const bool target = attr->qp_type == IBV_QPT_XRC_RECV;
  if (target) {
    if (!(attr->comp_mask & IBV_QP_INIT_ATTR_XRCD) || !attr->xrcd || attr->xrcd->context != c)
      return fail<ibv_qp>(EINVAL);
  } else if (!(attr->comp_mask & IBV_QP_INIT_ATTR_PD) || !attr->pd) {
    return fail<ibv_qp>(EINVAL);
  }
  if (attr->comp_mask & ~static_cast<uint32_t>(IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_XRCD |
                                                IBV_QP_INIT_ATTR_SEND_OPS_FLAGS |
                                                IBV_QP_INIT_ATTR_CREATE_FLAGS))
    return fail<ibv_qp>(EOPNOTSUPP);
  if ((attr->comp_mask & IBV_QP_INIT_ATTR_CREATE_FLAGS) && attr->create_flags)
    return fail<ibv_qp>(EOPNOTSUPP);  // loopback blocking, scatter-FCS, ... are not modelled
  if (attr->qp_type != IBV_QPT_RC && attr->qp_type != IBV_QPT_UC && attr->qp_type != IBV_QPT_UD &&
      attr->qp_type != IBV_QPT_XRC_SEND && !target)
    return fail<ibv_qp>(EOPNOTSUPP);
  // A target posts nothing: no ibv_wr_* operations to ask for.
  if (target && (attr->comp_mask & IBV_QP_INIT_ATTR_SEND_OPS_FLAGS) && attr->send_ops_flags)
    return fail<ibv_qp>(EOPNOTSUPP);
  // ibv_create_qp_ex(3): the ibv_wr_* operations asked for must be ones the QP type can
  // post, as mlx5 checks them (EOPNOTSUPP): no TSO (raw packet only), no ATOMIC_WRITE
  // (not modelled), and on UC/UD none of what those transports cannot carry.
  if (attr->comp_mask & IBV_QP_INIT_ATTR_SEND_OPS_FLAGS) {
    uint64_t ok = IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_SEND_WITH_IMM;
    if (attr->qp_type != IBV_QPT_UD)
      ok |= IBV_QP_EX_WITH_RDMA_WRITE | IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM |
            IBV_QP_EX_WITH_LOCAL_INV | IBV_QP_EX_WITH_BIND_MW;
    if (attr->qp_type == IBV_QPT_RC || attr->qp_type == IBV_QPT_XRC_SEND)
      ok |= IBV_QP_EX_WITH_RDMA_READ | IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP |
            IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD | IBV_QP_EX_WITH_SEND_WITH_INV;
    // iWARP (RFC 5040) carries no atomics, no immediate data and no SEND with Invalidate
    // here (fastpath.cpp refuses them at post).
    if (ctx_of(c)->device->info.transport_type == IBV_TRANSPORT_IWARP)
      ok &= ~static_cast<uint64_t>(IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP | IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD |
                                   IBV_QP_EX_WITH_SEND_WITH_IMM | IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM |
                                   IBV_QP_EX_WITH_SEND_WITH_INV);
    if (attr->send_ops_flags & ~ok) return fail<ibv_qp>(EOPNOTSUPP);
  }
  // The CQs a type has: an XRC initiator only a send CQ, a target none.
  if (!target && !attr->send_cq) return fail<ibv_qp>(EINVAL);
  if (!target && attr->qp_type != IBV_QPT_XRC_SEND && !attr->recv_cq) return fail<ibv_qp>(EINVAL);
  backend::QpRequest want;
  want.type = attr->qp_type;
  // What the QP has of attr's objects (the caller's attr is left as given, but for cap).
  ibv_qp_init_attr_ex shape = *attr;
  if (target) {
    want.xrcd = Xrcd::from(attr->xrcd)->handle;
    shape.pd = nullptr;
    shape.send_cq = shape.recv_cq = nullptr;
    shape.srq = nullptr;
  } else {
    want.pd = attr->pd->handle;
    want.send_cq = attr->send_cq->handle;
    if (attr->qp_type == IBV_QPT_XRC_SEND) {
      shape.recv_cq = nullptr;
      shape.srq = nullptr;
    } else {
      want.recv_cq = attr->recv_cq->handle;
      want.srq = attr->srq ? attr->srq->handle : 0;
    }
  }
  want.sq_sig_all = attr->sq_sig_all != 0;
  want.cap = attr->cap;
  backend::QpRings r;
  if (int rc = backend_of(c).create_qp(want, &r)) {
    if (getenv("RDMASIM_VERBS_DEBUG")) fprintf(stderr, "rdmasim: CreateQp: %s\n", strerror(rc));
    return fail<ibv_qp>(rc);
  }
  attr->cap = r.cap;
  shape.cap = r.cap;
  return adopt_qp(c, r, shape);
}

ibv_qp* adopt_qp(ibv_context* c, const backend::QpRings& r, const ibv_qp_init_attr_ex& attr) {
  Context* ctx = ctx_of(c);
  auto* q = new Qp();
  q->ctx = ctx;
  q->map = r.map;
  q->sq = r.sq;
  q->rq = r.rq;
  q->cap = r.cap;
  q->sq_acct.set_depth(r.sq_depth);
  q->rq_acct.set_depth(r.rq_depth);
  q->sq_sig_all = attr.sq_sig_all != 0;
  ibv_qp& b = q->qpx.qp_base;
  b.context = c;
  b.qp_context = attr.qp_context;
  b.pd = attr.pd;
  b.send_cq = attr.send_cq;
  b.recv_cq = attr.recv_cq;
  b.srq = attr.srq;
  b.handle = r.handle;
  b.qp_num = r.qp_num;
  b.state = IBV_QPS_RESET;
  b.qp_type = attr.qp_type;
  pthread_mutex_init(&b.mutex, nullptr);
  pthread_cond_init(&b.cond, nullptr);
  install_qp_ex_ops(&q->qpx);
  std::lock_guard<std::mutex> lock(ctx->mu);
  // By number for retiring send and receive WQEs: an XRC target has neither, and this
  // process may hold several handles to one (ibv_open_qp).
  if (attr.qp_type != IBV_QPT_XRC_RECV) ctx->qps_by_num[r.qp_num] = q;
  ctx->qps_by_handle[r.handle] = q;
  return &b;
}

}  // namespace rdmasim::verbs

extern "C" ibv_srq* RDMASIM_V11(ibv_create_srq)(ibv_pd* pd, ibv_srq_init_attr* attr);

namespace rdmasim::verbs {

// ibv_create_srq_ex(3) for a basic or an XRC SRQ; tag-matching SRQs are not offered.
ibv_srq* create_srq_ex_op(ibv_context* c, ibv_srq_init_attr_ex* attr) {
  const uint32_t known = IBV_SRQ_INIT_ATTR_TYPE | IBV_SRQ_INIT_ATTR_PD | IBV_SRQ_INIT_ATTR_XRCD |
                         IBV_SRQ_INIT_ATTR_CQ | IBV_SRQ_INIT_ATTR_TM;
  if (attr->comp_mask & ~known) return fail<ibv_srq>(EINVAL);
  const bool xrc = (attr->comp_mask & IBV_SRQ_INIT_ATTR_TYPE) && attr->srq_type == IBV_SRQT_XRC;
  if ((attr->comp_mask & IBV_SRQ_INIT_ATTR_TYPE) && attr->srq_type != IBV_SRQT_BASIC && !xrc)
    return fail<ibv_srq>(EOPNOTSUPP);
  if (attr->comp_mask & IBV_SRQ_INIT_ATTR_TM) return fail<ibv_srq>(EOPNOTSUPP);
  if (!(attr->comp_mask & IBV_SRQ_INIT_ATTR_PD) || !attr->pd || attr->pd->context != c)
    return fail<ibv_srq>(EINVAL);
  if (xrc) return create_xrc_srq(c, attr);  // xrc.cpp
  if (attr->comp_mask & (IBV_SRQ_INIT_ATTR_XRCD | IBV_SRQ_INIT_ATTR_CQ))
    return fail<ibv_srq>(EINVAL);  // a basic SRQ has neither
  ibv_srq_init_attr basic{attr->srq_context, attr->attr};
  ibv_srq* srq = RDMASIM_V11(ibv_create_srq)(attr->pd, &basic);
  if (srq) attr->attr = basic.attr;
  return srq;
}

}  // namespace rdmasim::verbs

extern "C" {

// ---- completion channels ----

ibv_comp_channel* ibv_create_comp_channel(ibv_context* context) {
  if (hardware()) return forward<&Hw::ibv_create_comp_channel>(context);
  backend::ChannelRing r;
  if (int rc = backend_of(context).create_comp_channel(&r)) return fail<ibv_comp_channel>(rc);
  auto* ch = new CompChannel();
  ch->map = r.map;
  ch->ring = r.ring;
  make_blocking(r.fd);
  ch->handle = r.handle;
  ch->ch.context = context;
  ch->ch.fd = r.fd;
  ch->ch.refcnt = 0;
  return &ch->ch;
}

int ibv_destroy_comp_channel(ibv_comp_channel* channel) {
  if (hardware()) return forward<&Hw::ibv_destroy_comp_channel>(channel);
  if (channel->refcnt) return EBUSY;
  CompChannel* ch = CompChannel::from(channel);
  if (int rc = backend_of(channel->context).destroy_comp_channel(ch->handle)) return rc;
  close(channel->fd);
  ch->map.unmap();
  delete ch;
  return 0;
}

int RDMASIM_V11(ibv_get_cq_event)(ibv_comp_channel* channel, ibv_cq** cq, void** cq_context) {
  if (hardware()) return forward<&Hw::ibv_get_cq_event>(channel, cq, cq_context);
  CompChannel* ch = CompChannel::from(channel);
  if (backend::Waiter* w = ctx_of(channel->context)->waiter) w->wait_readable(channel->fd);
  uint64_t v = 0;
  if (read(channel->fd, &v, sizeof(v)) != sizeof(v)) return -1;
  std::lock_guard<std::mutex> lock(ch->mu);
  ipc::RingHeader* hdr = ch->ring.header();
  uint32_t idx = hdr->consumer.load(std::memory_order_relaxed);
  ipc::CompEvent& slot = ch->ring.slot(idx);
  if (std::atomic_ref<uint32_t>(slot.seq).load(std::memory_order_acquire) != idx + 1) {
    errno = EAGAIN;
    return -1;
  }
  uint32_t handle = slot.cq_handle;
  hdr->consumer.store(idx + 1, std::memory_order_release);
  Context* ctx = ctx_of(channel->context);
  std::lock_guard<std::mutex> lock2(ctx->mu);
  auto it = ctx->cqs.find(handle);
  if (it == ctx->cqs.end()) {
    errno = EPROTO;
    return -1;
  }
  *cq = it->second->ibv();
  *cq_context = (*cq)->cq_context;
  return 0;
}

void RDMASIM_V11(ibv_ack_cq_events)(ibv_cq* cq, unsigned int nevents) {
  if (hardware()) return forward<&Hw::ibv_ack_cq_events>(cq, nevents);
  pthread_mutex_lock(&cq->mutex);
  cq->comp_events_completed += nevents;
  pthread_cond_signal(&cq->cond);
  pthread_mutex_unlock(&cq->mutex);
}

// ---- CQs ----

ibv_cq* RDMASIM_V11(ibv_create_cq)(ibv_context* context, int cqe, void* cq_context, ibv_comp_channel* channel,
                      int comp_vector) {
  if (hardware()) return forward<&Hw::ibv_create_cq>(context, cqe, cq_context, channel, comp_vector);
  ibv_cq_ex* cq = create_cq_common(context, cqe, cq_context, channel, comp_vector);
  return cq ? reinterpret_cast<ibv_cq*>(cq) : nullptr;
}

// ibv_resize_cq(3): 0 or the errno. cqe < 1 EINVAL (mlx5_resize_cq refuses cqe < 0, the
// kernel's mlx5_ib_resize_cq entries < 1); past max_cqe or below the unpolled CQEs EINVAL
// (the daemon). The poll lock is held across the swap, so no poller reads the old ring.
int RDMASIM_V11(ibv_resize_cq)(ibv_cq* cq, int cqe) {
  if (hardware()) return forward<&Hw::ibv_resize_cq>(cq, cqe);
  if (cqe < 1) return EINVAL;
  Cq* c = Cq::from(cq);
  std::lock_guard<std::mutex> lock(c->poll_mu);
  backend::CqRing r;
  if (int rc = backend_of(cq->context).resize_cq(cq->handle, static_cast<uint32_t>(cqe), &r)) return rc;
  // The old ring stays mapped until the CQ is destroyed: a thread arming the CQ meanwhile
  // (req_notify_cq takes no lock) writes memory that still exists.
  c->retired.push_back(c->map);
  c->map = r.map;
  c->ring = r.ring;
  c->control = r.control;
  cq->cqe = r.cqe;
  return 0;
}

int RDMASIM_V11(ibv_destroy_cq)(ibv_cq* cq) {
  if (hardware()) return forward<&Hw::ibv_destroy_cq>(cq);
  Cq* c = Cq::from(cq);
  if (int rc = backend_of(cq->context).destroy_cq(cq->handle)) return rc;
  {
    std::lock_guard<std::mutex> lock(c->ctx->mu);
    c->ctx->cqs.erase(cq->handle);
  }
  if (cq->channel) --cq->channel->refcnt;
  c->map.unmap();
  for (Mapping& m : c->retired) m.unmap();
  delete c;
  return 0;
}

// ---- SRQs ----

ibv_srq* RDMASIM_V11(ibv_create_srq)(ibv_pd* pd, ibv_srq_init_attr* attr) {
  if (hardware()) return forward<&Hw::ibv_create_srq>(pd, attr);
  backend::SrqRing r;
  if (int rc = backend_of(pd->context).create_srq(pd->handle, attr->attr, &r))
    return fail<ibv_srq>(rc);
  attr->attr.max_wr = r.granted.max_wr;
  attr->attr.max_sge = r.granted.max_sge;
  return &adopt_srq(pd, r, attr->srq_context)->srq;
}

}  // extern "C"

namespace rdmasim::verbs {

Srq* adopt_srq(ibv_pd* pd, const backend::SrqRing& r, void* srq_context) {
  Context* ctx = ctx_of(pd->context);
  auto* s = new Srq();
  s->ctx = ctx;
  s->map = r.map;
  s->ring = r.ring;
  s->acct.set_depth(r.depth);
  s->max_sge = r.granted.max_sge;
  s->srq_num = r.srq_num;
  s->srq.context = pd->context;
  s->srq.srq_context = srq_context;
  s->srq.pd = pd;
  s->srq.handle = r.handle;
  pthread_mutex_init(&s->srq.mutex, nullptr);
  pthread_cond_init(&s->srq.cond, nullptr);
  std::lock_guard<std::mutex> lock(ctx->mu);
  ctx->srqs[r.handle] = s;
  return s;
}

}  // namespace rdmasim::verbs

extern "C" {

int RDMASIM_V11(ibv_modify_srq)(ibv_srq* srq, ibv_srq_attr* attr, int mask) {
  if (hardware()) return forward<&Hw::ibv_modify_srq>(srq, attr, mask);
  return backend_of(srq->context).modify_srq(srq->handle, *attr, mask);
}

int RDMASIM_V11(ibv_query_srq)(ibv_srq* srq, ibv_srq_attr* attr) {
  if (hardware()) return forward<&Hw::ibv_query_srq>(srq, attr);
  return backend_of(srq->context).query_srq(srq->handle, attr);
}

int RDMASIM_V11(ibv_destroy_srq)(ibv_srq* srq) {
  if (hardware()) return forward<&Hw::ibv_destroy_srq>(srq);
  Srq* s = Srq::from(srq);
  if (int rc = backend_of(srq->context).destroy_srq(srq->handle)) return rc;
  {
    std::lock_guard<std::mutex> lock(s->ctx->mu);
    s->ctx->srqs.erase(srq->handle);
  }
  s->map.unmap();
  delete s;
  return 0;
}

// ---- QPs ----

ibv_qp* RDMASIM_V11(ibv_create_qp)(ibv_pd* pd, ibv_qp_init_attr* attr) {
  if (hardware()) return forward<&Hw::ibv_create_qp>(pd, attr);
  ibv_qp_init_attr_ex ex{};
  memcpy(&ex, attr, sizeof(*attr));
  ex.comp_mask = IBV_QP_INIT_ATTR_PD;
  ex.pd = pd;
  ibv_qp* qp = create_qp_ex_op(pd->context, &ex);
  if (qp) attr->cap = ex.cap;
  return qp;
}

ibv_qp_ex* ibv_qp_to_qp_ex(ibv_qp* qp) {
  if (hardware()) return forward<&Hw::ibv_qp_to_qp_ex>(qp);
  return &Qp::from(qp)->qpx;
}

int RDMASIM_V11(ibv_modify_qp)(ibv_qp* qp, ibv_qp_attr* attr, int mask) {
  if (hardware()) return forward<&Hw::ibv_modify_qp>(qp, attr, mask);
  if (int rc = backend_of(qp->context).modify_qp(qp->handle, *attr, mask)) return rc;
  if (mask & IBV_QP_STATE) {
    Qp* q = Qp::from(qp);
    q->state.store(attr->qp_state, std::memory_order_release);
    qp->state = attr->qp_state;
  }
  return 0;
}

int RDMASIM_V11(ibv_query_qp)(ibv_qp* qp, ibv_qp_attr* attr, int mask, ibv_qp_init_attr* init) {
  if (hardware()) return forward<&Hw::ibv_query_qp>(qp, attr, mask, init);
  if (int rc = backend_of(qp->context).query_qp(qp->handle, mask, attr, init)) return rc;
  init->qp_context = qp->qp_context;
  init->send_cq = qp->send_cq;
  init->recv_cq = qp->recv_cq;
  init->srq = qp->srq;
  Qp* q = Qp::from(qp);
  q->state.store(attr->qp_state, std::memory_order_release);
  qp->state = attr->qp_state;
  return 0;
}

int ibv_query_qp_data_in_order(ibv_qp* qp, enum ibv_wr_opcode op, uint32_t flags) {
  if (hardware()) return forward<&Hw::ibv_query_qp_data_in_order>(qp, op, flags);
  return 0;  // "not guaranteed in order": the honest answer without a model of it
}

int ibv_query_ece(ibv_qp* qp, ibv_ece* ece) {
  if (hardware()) return forward<&Hw::ibv_query_ece>(qp, ece);
  return EOPNOTSUPP;
}
int ibv_set_ece(ibv_qp* qp, ibv_ece* ece) {
  if (hardware()) return forward<&Hw::ibv_set_ece>(qp, ece);
  return EOPNOTSUPP;
}

int RDMASIM_V11(ibv_destroy_qp)(ibv_qp* qp) {
  if (hardware()) return forward<&Hw::ibv_destroy_qp>(qp);
  Qp* q = Qp::from(qp);
  if (int rc = backend_of(qp->context).destroy_qp(qp->handle)) return rc;
  {
    std::lock_guard<std::mutex> lock(q->ctx->mu);
    if (qp->qp_type != IBV_QPT_XRC_RECV) q->ctx->qps_by_num.erase(qp->qp_num);
    q->ctx->qps_by_handle.erase(qp->handle);
  }
  q->map.unmap();
  delete q;
  return 0;
}

}  // extern "C"

RDMASIM_SYMVER_V11(ibv_ack_cq_events)
RDMASIM_SYMVER_V11(ibv_create_cq)
RDMASIM_SYMVER_V11(ibv_create_qp)
RDMASIM_SYMVER_V11(ibv_create_srq)
RDMASIM_SYMVER_V11(ibv_destroy_cq)
RDMASIM_SYMVER_V11(ibv_destroy_qp)
RDMASIM_SYMVER_V11(ibv_destroy_srq)
RDMASIM_SYMVER_V11(ibv_get_cq_event)
RDMASIM_SYMVER_V11(ibv_modify_qp)
RDMASIM_SYMVER_V11(ibv_modify_srq)
RDMASIM_SYMVER_V11(ibv_query_qp)
RDMASIM_SYMVER_V11(ibv_query_srq)
RDMASIM_SYMVER_V11(ibv_resize_cq)
