// The data path: WQEs into the shared SQ/RQ/SRQ rings, CQEs out of the CQ ring. No system
// call unless the daemon sleeps (then one eventfd write per doorbell).
#include <cerrno>
#include <cstring>

#include "lib/verbs/objects.h"

namespace rdmasim::verbs {
namespace {

// SQ posts are refused before RTS; in SQD/SQE/ERR the daemon flushes or holds them.
bool sq_accepts(int state) {
  return state == IBV_QPS_RTS || state == IBV_QPS_SQD || state == IBV_QPS_SQE ||
         state == IBV_QPS_ERR;
}
bool rq_accepts(int state) { return state != IBV_QPS_RESET; }

bool ring_has_room(const ipc::RingHeader* hdr, uint32_t producer, uint32_t size) {
  return producer - hdr->consumer.load(std::memory_order_acquire) < size;
}

void fill_av(ipc::SqWqe& w, ibv_ah* ah, uint32_t remote_qpn, uint32_t remote_qkey) {
  if (ah) w.av = Ah::from(ah)->av;
  w.remote_qpn = remote_qpn;
  w.remote_qkey = remote_qkey;
}

// BIND_MW fields of a WQE, checked as mlx5 checks them at post: a window above 2 GiB is
// EOPNOTSUPP (one KLM, set_bind_wr), a zero-based window EINVAL (mlx5_bind_mw).
int encode_bind(ipc::SqWqe& w, const ibv_mw* mw, uint32_t rkey, const ibv_mw_bind_info& b) {
  if (!mw) return EINVAL;
  if (b.length > (uint64_t{1} << 31)) return EOPNOTSUPP;
  if (b.mw_access_flags & IBV_ACCESS_ZERO_BASED) return EINVAL;
  w.imm_data = mw->rkey;
  w.rkey = rkey;
  w.remote_addr = b.addr;
  w.compare_add = b.length;
  w.bind_lkey = b.mr ? b.mr->lkey : 0;
  w.mw_access = b.mw_access_flags;
  return 0;
}

bool on_iwarp(const Qp& q) {
  return q.ctx->device && q.ctx->device->info.transport_type == IBV_TRANSPORT_IWARP;
}

// SEND_WITH_INV: an RC (and XRC) opcode here, and not on iWARP (hca.cpp post_send says why).
bool send_inv_ok(const Qp& q) {
  const ibv_qp_type t = q.qpx.qp_base.qp_type;
  return (t == IBV_QPT_RC || t == IBV_QPT_XRC_SEND) && !on_iwarp(q);
}

// Fills `w` from `wr`; returns 0 or EINVAL (EOPNOTSUPP for a bind mlx5 cannot do).
int encode_send(Qp& q, const ibv_send_wr& wr, ipc::SqWqe& w) {
  memset(&w, 0, offsetof(ipc::SqWqe, sge));
  w.wr_id = wr.wr_id;
  w.opcode = wr.opcode;
  w.send_flags = wr.send_flags | (q.sq_sig_all ? IBV_SEND_SIGNALED : 0);
  w.imm_data = wr.imm_data;
  if (wr.num_sge < 0 || static_cast<uint32_t>(wr.num_sge) > q.cap.max_send_sge ||
      static_cast<uint32_t>(wr.num_sge) > ipc::kMaxSge)
    return EINVAL;
  const bool ud = q.ibv()->qp_type == IBV_QPT_UD;
  switch (wr.opcode) {
    case IBV_WR_SEND:
    case IBV_WR_SEND_WITH_IMM:
      break;
    case IBV_WR_BIND_MW:
    case IBV_WR_LOCAL_INV:
      if (ud) return EINVAL;  // man ibv_post_send: UC, RC and XRC only
      if (wr.opcode == IBV_WR_LOCAL_INV) {
        w.imm_data = wr.invalidate_rkey;
        return 0;
      }
      return encode_bind(w, wr.bind_mw.mw, wr.bind_mw.rkey, wr.bind_mw.bind_info);
    case IBV_WR_SEND_WITH_INV:
      if (!send_inv_ok(q)) return EINVAL;
      [[fallthrough]];
    case IBV_WR_RDMA_WRITE:
    case IBV_WR_RDMA_WRITE_WITH_IMM:
    case IBV_WR_RDMA_READ:
    case IBV_WR_ATOMIC_CMP_AND_SWP:
    case IBV_WR_ATOMIC_FETCH_AND_ADD:
      if (ud) return EINVAL;
      if (q.ibv()->qp_type == IBV_QPT_UC && (wr.opcode == IBV_WR_RDMA_READ ||
                                             wr.opcode == IBV_WR_ATOMIC_CMP_AND_SWP ||
                                             wr.opcode == IBV_WR_ATOMIC_FETCH_AND_ADD))
        return EINVAL;
      break;
    default:
      return EINVAL;
  }
  // iWARP providers refuse at post what RDMAP (RFC 5040) cannot carry: atomics (atomic_cap
  // NONE; libcxgb4 and siw return EINVAL), immediate data, and a READ into more than one SGE
  // (one sink STag per Read Request; max_sge_rd 1).
  if (on_iwarp(q) &&
      (wr.opcode == IBV_WR_ATOMIC_CMP_AND_SWP || wr.opcode == IBV_WR_ATOMIC_FETCH_AND_ADD ||
       wr.opcode == IBV_WR_RDMA_WRITE_WITH_IMM || wr.opcode == IBV_WR_SEND_WITH_IMM ||
       (wr.opcode == IBV_WR_RDMA_READ && wr.num_sge > 1)))
    return EINVAL;
  if (wr.opcode == IBV_WR_SEND_WITH_INV) w.imm_data = wr.invalidate_rkey;
  if (wr.opcode == IBV_WR_ATOMIC_CMP_AND_SWP || wr.opcode == IBV_WR_ATOMIC_FETCH_AND_ADD) {
    w.remote_addr = wr.wr.atomic.remote_addr;
    w.rkey = wr.wr.atomic.rkey;
    w.compare_add = wr.wr.atomic.compare_add;
    w.swap = wr.wr.atomic.swap;
  } else if (ud) {
    fill_av(w, wr.wr.ud.ah, wr.wr.ud.remote_qpn, wr.wr.ud.remote_qkey);
  } else {
    w.remote_addr = wr.wr.rdma.remote_addr;
    w.rkey = wr.wr.rdma.rkey;
  }
  // XRC: every request names the XRC SRQ at the target (ibv_post_send(3), qp_type.xrc).
  if (q.ibv()->qp_type == IBV_QPT_XRC_SEND) w.xrc_srqn = wr.qp_type.xrc.remote_srqn;
  if (wr.send_flags & IBV_SEND_INLINE) {
    uint64_t total = 0;
    for (int i = 0; i < wr.num_sge; ++i) total += wr.sg_list[i].length;
    if (total > q.cap.max_inline_data || total > ipc::kMaxInline) return EINVAL;
    uint32_t off = 0;
    for (int i = 0; i < wr.num_sge; ++i) {
      memcpy(w.inline_data + off, reinterpret_cast<const void*>(wr.sg_list[i].addr),
             wr.sg_list[i].length);
      off += wr.sg_list[i].length;
    }
    w.inline_len = off;
  } else {
    w.num_sge = static_cast<uint32_t>(wr.num_sge);
    for (int i = 0; i < wr.num_sge; ++i)
      w.sge[i] = {wr.sg_list[i].addr, wr.sg_list[i].length, wr.sg_list[i].lkey};
  }
  return 0;
}

// Publishes slots up to `producer` (release) and rings the doorbell.
void publish(Context* ctx, ipc::RingHeader* hdr, uint32_t producer) {
  hdr->producer.store(producer, std::memory_order_release);
  ctx->doorbell.ring();
}

int post_recv_ring(Context* ctx, ipc::RingView<ipc::RqWqe>& ring, WqAccounting& acct,
                   uint32_t max_sge, ibv_recv_wr* wr, ibv_recv_wr** bad_wr) {
  uint32_t idx = acct.posted();
  int err = 0;
  for (; wr; wr = wr->next) {
    if (wr->num_sge < 0 || static_cast<uint32_t>(wr->num_sge) > max_sge ||
        static_cast<uint32_t>(wr->num_sge) > ipc::kMaxSge) {
      err = EINVAL;
      break;
    }
    if (acct.full() || !ring_has_room(ring.header(), idx, ring.size())) {
      err = ENOMEM;
      break;
    }
    ipc::RqWqe& w = ring.slot(idx);
    w.wr_id = wr->wr_id;
    w.wqe_index = idx;
    w.num_sge = static_cast<uint32_t>(wr->num_sge);
    for (int i = 0; i < wr->num_sge; ++i)
      w.sge[i] = {wr->sg_list[i].addr, wr->sg_list[i].length, wr->sg_list[i].lkey};
    ++idx;
    acct.on_post();
  }
  if (err && bad_wr) *bad_wr = wr;
  if (idx != ring.header()->producer.load(std::memory_order_relaxed))
    publish(ctx, ring.header(), idx);
  return err;
}

// Takes the next valid CQE into `out`, retiring its WQE; false when the ring is empty.
bool pop_cqe(Cq& c, ipc::Cqe& out) {
  ipc::RingHeader* hdr = c.ring.header();
  uint32_t idx = hdr->consumer.load(std::memory_order_relaxed);
  ipc::Cqe& slot = c.ring.slot(idx);
  if (std::atomic_ref<uint32_t>(slot.seq).load(std::memory_order_acquire) != idx + 1)
    return false;
  out = slot;
  hdr->consumer.store(idx + 1, std::memory_order_release);
  Context* ctx = c.ctx;
  std::lock_guard<std::mutex> lock(ctx->mu);
  if (out.is_send) {
    auto it = ctx->qps_by_num.find(out.qp_num);
    if (it != ctx->qps_by_num.end()) it->second->sq_acct.on_complete(out.wqe_index);
  } else if (out.srq_handle) {
    auto it = ctx->srqs.find(out.srq_handle);
    if (it != ctx->srqs.end()) it->second->acct.on_complete(out.wqe_index);
  } else {
    auto it = ctx->qps_by_num.find(out.qp_num);
    if (it != ctx->qps_by_num.end()) it->second->rq_acct.on_complete(out.wqe_index);
  }
  return true;
}

void to_wc(const ipc::Cqe& e, ibv_wc& wc) {
  wc = {};
  wc.wr_id = e.wr_id;
  wc.status = static_cast<ibv_wc_status>(e.status);
  wc.opcode = static_cast<ibv_wc_opcode>(e.opcode);
  wc.vendor_err = e.vendor_err;
  wc.byte_len = e.byte_len;
  wc.imm_data = e.imm_data;
  wc.qp_num = e.qp_num;
  wc.src_qp = e.src_qp;
  wc.wc_flags = e.wc_flags;
  wc.pkey_index = e.pkey_index;
  wc.slid = e.slid;
  wc.sl = e.sl;
  wc.dlid_path_bits = e.dlid_path_bits;
}

// ---- ibv_qp_ex: the wr_* builder ----

// Starts a new WQE of the batch; returns nullptr (and records the error) when full.
ipc::SqWqe* begin_wqe(ibv_qp_ex* qpx, uint32_t opcode) {
  Qp& q = *Qp::from(qpx);
  q.batch_cur = nullptr;
  if (q.batch_error) return nullptr;
  uint32_t idx = q.sq_acct.posted() + q.batch_count;
  if (q.sq_acct.outstanding() + q.batch_count >= q.sq_acct.depth() ||
      !ring_has_room(q.sq.header(), idx, q.sq.size())) {
    q.batch_error = ENOMEM;
    return nullptr;
  }
  ipc::SqWqe& w = q.sq.slot(idx);
  memset(&w, 0, offsetof(ipc::SqWqe, sge));
  w.wr_id = qpx->wr_id;
  w.wqe_index = idx;
  w.opcode = opcode;
  w.send_flags = qpx->wr_flags | (q.sq_sig_all ? IBV_SEND_SIGNALED : 0);
  ++q.batch_count;
  q.batch_cur = &w;
  return &w;
}

void wr_start(ibv_qp_ex* qpx) {
  Qp& q = *Qp::from(qpx);
  q.sq_mu.lock();
  q.batch_count = 0;
  q.batch_error = sq_accepts(q.state.load(std::memory_order_relaxed)) ? 0 : EINVAL;
  q.batch_cur = nullptr;
}

int wr_complete(ibv_qp_ex* qpx) {
  Qp& q = *Qp::from(qpx);
  int err = q.batch_error;
  if (!err && q.batch_count) {
    q.sq_acct.on_post(q.batch_count);
    publish(q.ctx, q.sq.header(), q.sq_acct.posted());
  }
  q.batch_count = 0;
  q.batch_cur = nullptr;
  q.sq_mu.unlock();
  return err;
}

void wr_abort(ibv_qp_ex* qpx) {
  Qp& q = *Qp::from(qpx);
  q.batch_count = 0;
  q.batch_cur = nullptr;
  q.sq_mu.unlock();
}

void wr_send(ibv_qp_ex* qpx) { begin_wqe(qpx, IBV_WR_SEND); }
void wr_send_imm(ibv_qp_ex* qpx, __be32 imm) {
  if (auto* w = begin_wqe(qpx, IBV_WR_SEND_WITH_IMM)) w->imm_data = imm;
}
void wr_send_inv(ibv_qp_ex* qpx, uint32_t rkey) {
  Qp& q = *Qp::from(qpx);
  if (!send_inv_ok(q)) {
    q.batch_cur = nullptr;
    if (!q.batch_error) q.batch_error = EINVAL;
    return;
  }
  if (auto* w = begin_wqe(qpx, IBV_WR_SEND_WITH_INV)) w->imm_data = rkey;
}
void wr_rdma_write(ibv_qp_ex* qpx, uint32_t rkey, uint64_t addr) {
  if (auto* w = begin_wqe(qpx, IBV_WR_RDMA_WRITE)) { w->rkey = rkey; w->remote_addr = addr; }
}
void wr_rdma_write_imm(ibv_qp_ex* qpx, uint32_t rkey, uint64_t addr, __be32 imm) {
  if (auto* w = begin_wqe(qpx, IBV_WR_RDMA_WRITE_WITH_IMM)) {
    w->rkey = rkey;
    w->remote_addr = addr;
    w->imm_data = imm;
  }
}
void wr_rdma_read(ibv_qp_ex* qpx, uint32_t rkey, uint64_t addr) {
  if (auto* w = begin_wqe(qpx, IBV_WR_RDMA_READ)) { w->rkey = rkey; w->remote_addr = addr; }
}
void wr_atomic_cmp_swp(ibv_qp_ex* qpx, uint32_t rkey, uint64_t addr, uint64_t cmp, uint64_t swp) {
  if (auto* w = begin_wqe(qpx, IBV_WR_ATOMIC_CMP_AND_SWP)) {
    w->rkey = rkey;
    w->remote_addr = addr;
    w->compare_add = cmp;
    w->swap = swp;
  }
}
void wr_atomic_fetch_add(ibv_qp_ex* qpx, uint32_t rkey, uint64_t addr, uint64_t add) {
  if (auto* w = begin_wqe(qpx, IBV_WR_ATOMIC_FETCH_AND_ADD)) {
    w->rkey = rkey;
    w->remote_addr = addr;
    w->compare_add = add;
  }
}
void wr_unsupported(Qp& q) {
  q.batch_cur = nullptr;
  if (!q.batch_error) q.batch_error = EOPNOTSUPP;
}
// A bind or invalidate on a UD QP, or a bind mlx5 refuses: the batch fails at wr_complete.
bool local_op_ok(Qp& q, int err) {
  if (!err && q.qpx.qp_base.qp_type != IBV_QPT_UD) return true;
  q.batch_cur = nullptr;
  if (!q.batch_error) q.batch_error = err ? err : EINVAL;
  return false;
}
void wr_bind_mw(ibv_qp_ex* qpx, ibv_mw* mw, uint32_t rkey, const ibv_mw_bind_info* info) {
  Qp& q = *Qp::from(qpx);
  ipc::SqWqe probe{};
  if (!local_op_ok(q, info ? encode_bind(probe, mw, rkey, *info) : EINVAL)) return;
  if (auto* w = begin_wqe(qpx, IBV_WR_BIND_MW)) encode_bind(*w, mw, rkey, *info);
}
void wr_local_inv(ibv_qp_ex* qpx, uint32_t rkey) {
  if (!local_op_ok(*Qp::from(qpx), 0)) return;
  if (auto* w = begin_wqe(qpx, IBV_WR_LOCAL_INV)) w->imm_data = rkey;
}
void wr_send_tso(ibv_qp_ex* qpx, void*, uint16_t, uint16_t) { wr_unsupported(*Qp::from(qpx)); }
// The XRC SRQ a request of an XRC initiator names; on any other QP the batch fails
// (mlx5 installs this setter on XRC_SEND QPs only).
void wr_set_xrc_srqn(ibv_qp_ex* qpx, uint32_t remote_srqn) {
  Qp& q = *Qp::from(qpx);
  if (qpx->qp_base.qp_type != IBV_QPT_XRC_SEND) return wr_unsupported(q);
  if (q.batch_cur) q.batch_cur->xrc_srqn = remote_srqn;
}
void wr_atomic_write(ibv_qp_ex* qpx, uint32_t, uint64_t, const void*) {
  wr_unsupported(*Qp::from(qpx));
}

void wr_set_ud_addr(ibv_qp_ex* qpx, ibv_ah* ah, uint32_t remote_qpn, uint32_t remote_qkey) {
  Qp& q = *Qp::from(qpx);
  if (q.batch_cur) fill_av(*q.batch_cur, ah, remote_qpn, remote_qkey);
}

void wr_set_sge_list(ibv_qp_ex* qpx, size_t num_sge, const ibv_sge* sg) {
  Qp& q = *Qp::from(qpx);
  if (!q.batch_cur) return;
  if (num_sge > q.cap.max_send_sge || num_sge > ipc::kMaxSge) {
    q.batch_error = EINVAL;
    return;
  }
  q.batch_cur->num_sge = static_cast<uint32_t>(num_sge);
  for (size_t i = 0; i < num_sge; ++i) q.batch_cur->sge[i] = {sg[i].addr, sg[i].length, sg[i].lkey};
}

void wr_set_sge(ibv_qp_ex* qpx, uint32_t lkey, uint64_t addr, uint32_t length) {
  ibv_sge sge{addr, length, lkey};
  wr_set_sge_list(qpx, 1, &sge);
}

void wr_set_inline_data_list(ibv_qp_ex* qpx, size_t num_buf, const ibv_data_buf* bufs) {
  Qp& q = *Qp::from(qpx);
  if (!q.batch_cur) return;
  size_t total = 0;
  for (size_t i = 0; i < num_buf; ++i) total += bufs[i].length;
  if (total > q.cap.max_inline_data || total > ipc::kMaxInline) {
    q.batch_error = EINVAL;
    return;
  }
  size_t off = 0;
  for (size_t i = 0; i < num_buf; ++i) {
    memcpy(q.batch_cur->inline_data + off, bufs[i].addr, bufs[i].length);
    off += bufs[i].length;
  }
  q.batch_cur->inline_len = static_cast<uint32_t>(total);
  q.batch_cur->num_sge = 0;
  q.batch_cur->send_flags |= IBV_SEND_INLINE;
}

void wr_set_inline_data(ibv_qp_ex* qpx, void* addr, size_t length) {
  ibv_data_buf buf{addr, length};
  wr_set_inline_data_list(qpx, 1, &buf);
}

// ---- ibv_cq_ex: the start_poll / next_poll / read_* iterator ----

int cq_next(ibv_cq_ex* cqx) {
  Cq& c = *Cq::from(cqx);
  if (!pop_cqe(c, c.current)) return ENOENT;
  cqx->wr_id = c.current.wr_id;
  cqx->status = static_cast<ibv_wc_status>(c.current.status);
  return 0;
}
int cq_start_poll(ibv_cq_ex* cqx, ibv_poll_cq_attr*) {
  Cq& c = *Cq::from(cqx);
  c.poll_mu.lock();
  int rc = cq_next(cqx);
  if (rc) {
    c.poll_mu.unlock();  // on ENOENT the caller must not call end_poll
    if (c.ctx->waiter) c.ctx->waiter->empty_poll(&c);
  }
  return rc;
}
void cq_end_poll(ibv_cq_ex* cqx) { Cq::from(cqx)->poll_mu.unlock(); }
const ipc::Cqe& cur(ibv_cq_ex* cqx) { return Cq::from(cqx)->current; }
ibv_wc_opcode read_opcode(ibv_cq_ex* c) { return static_cast<ibv_wc_opcode>(cur(c).opcode); }
uint32_t read_vendor_err(ibv_cq_ex* c) { return cur(c).vendor_err; }
uint32_t read_byte_len(ibv_cq_ex* c) { return cur(c).byte_len; }
__be32 read_imm_data(ibv_cq_ex* c) { return cur(c).imm_data; }
uint32_t read_qp_num(ibv_cq_ex* c) { return cur(c).qp_num; }
uint32_t read_src_qp(ibv_cq_ex* c) { return cur(c).src_qp; }
unsigned int read_wc_flags(ibv_cq_ex* c) { return cur(c).wc_flags; }
uint32_t read_slid(ibv_cq_ex* c) { return cur(c).slid; }
uint8_t read_sl(ibv_cq_ex* c) { return cur(c).sl; }
uint8_t read_dlid_path_bits(ibv_cq_ex* c) { return cur(c).dlid_path_bits; }
// The HCA clock ticks once per simulated ns (hca_core_clock 1,000,000 kHz, device.cpp), so
// the cycle count and the "wallclock" are both the simulated time in ns.
uint64_t read_completion_ts(ibv_cq_ex* c) { return cur(c).time_ps / 1000; }
uint64_t read_completion_wallclock_ns(ibv_cq_ex* c) { return cur(c).time_ps / 1000; }
// A CQ cannot be created asking for these (queues.cpp, EOPNOTSUPP); a program that reads
// them anyway gets what an untagged, unsteered, non-tag-matching completion carries.
uint16_t read_cvlan(ibv_cq_ex*) { return 0; }
uint32_t read_flow_tag(ibv_cq_ex*) { return 0; }
void read_tm_info(ibv_cq_ex*, ibv_wc_tm_info* info) {
  if (info) *info = {};
}

}  // namespace

int post_send(ibv_qp* qp, ibv_send_wr* wr, ibv_send_wr** bad_wr) {
  Qp& q = *Qp::from(qp);
  std::lock_guard<std::mutex> lock(q.sq_mu);
  // An XRC target has no send queue.
  if (qp->qp_type == IBV_QPT_XRC_RECV || !sq_accepts(q.state.load(std::memory_order_relaxed))) {
    if (bad_wr) *bad_wr = wr;
    return EINVAL;
  }
  uint32_t idx = q.sq_acct.posted();
  int err = 0;
  for (; wr; wr = wr->next) {
    if (q.sq_acct.full() || !ring_has_room(q.sq.header(), idx, q.sq.size())) {
      err = ENOMEM;
      break;
    }
    ipc::SqWqe& w = q.sq.slot(idx);
    err = encode_send(q, *wr, w);
    if (err) break;
    w.wqe_index = idx;
    ++idx;
    q.sq_acct.on_post();
  }
  if (err && bad_wr) *bad_wr = wr;
  if (idx != q.sq.header()->producer.load(std::memory_order_relaxed))
    publish(q.ctx, q.sq.header(), idx);
  return err;
}

// ibv_bind_mw (type 1; the inline wrapper checked the type and the PDs): posted as a
// BIND_MW WR with the next key variant; mw->rkey takes it once posted (mlx5_bind_mw).
int bind_mw(ibv_qp* qp, ibv_mw* mw, ibv_mw_bind* mw_bind) {
  ibv_send_wr wr{};
  wr.wr_id = mw_bind->wr_id;
  wr.opcode = IBV_WR_BIND_MW;
  wr.send_flags = mw_bind->send_flags;
  wr.bind_mw.mw = mw;
  wr.bind_mw.rkey = ibv_inc_rkey(mw->rkey);
  wr.bind_mw.bind_info = mw_bind->bind_info;
  ibv_send_wr* bad = nullptr;
  if (int rc = post_send(qp, &wr, &bad)) return rc;
  mw->rkey = wr.bind_mw.rkey;
  return 0;
}

int post_recv(ibv_qp* qp, ibv_recv_wr* wr, ibv_recv_wr** bad_wr) {
  Qp& q = *Qp::from(qp);
  std::lock_guard<std::mutex> lock(q.rq_mu);
  if (!q.rq || !rq_accepts(q.state.load(std::memory_order_relaxed))) {
    if (bad_wr) *bad_wr = wr;
    return EINVAL;
  }
  return post_recv_ring(q.ctx, q.rq, q.rq_acct, q.cap.max_recv_sge, wr, bad_wr);
}

int post_srq_recv(ibv_srq* srq, ibv_recv_wr* wr, ibv_recv_wr** bad_wr) {
  Srq& s = *Srq::from(srq);
  std::lock_guard<std::mutex> lock(s.post_mu);
  return post_recv_ring(s.ctx, s.ring, s.acct, s.max_sge, wr, bad_wr);
}

int poll_cq(ibv_cq* cq, int num_entries, ibv_wc* wc) {
  Cq& c = *Cq::from(cq);
  int n = 0;
  {
    std::lock_guard<std::mutex> lock(c.poll_mu);
    ipc::Cqe e;
    while (n < num_entries && pop_cqe(c, e)) to_wc(e, wc[n++]);
  }
  // In a fiber, an empty poll costs CPU time and lets the engine run (the lock is released
  // first: the wait switches stacks).
  if (n == 0 && num_entries > 0 && c.ctx->waiter) c.ctx->waiter->empty_poll(&c);
  return n;
}

int req_notify_cq(ibv_cq* cq, int solicited_only) {
  Cq& c = *Cq::from(cq);
  c.control->armed.store(solicited_only ? 2 : 1, std::memory_order_release);
  // Store-load ordering against the daemon's side (EventRouter::deliver writes the CQE,
  // then reads `armed`): without both fences the arm can sit in this core's store buffer
  // while the next ibv_poll_cq reads the old producer, and the daemon reads the old
  // `armed`: no CQE seen, no event sent, and a program blocked in ibv_get_cq_event waits
  // forever (seen: ibv_rc_pingpong -e hung about 1 run in 30).
  std::atomic_thread_fence(std::memory_order_seq_cst);
  return 0;
}

void install_cq_ex_ops(ibv_cq_ex* cq) {
  cq->start_poll = cq_start_poll;
  cq->next_poll = cq_next;
  cq->end_poll = cq_end_poll;
  cq->read_opcode = read_opcode;
  cq->read_vendor_err = read_vendor_err;
  cq->read_byte_len = read_byte_len;
  cq->read_imm_data = read_imm_data;
  cq->read_qp_num = read_qp_num;
  cq->read_src_qp = read_src_qp;
  cq->read_wc_flags = read_wc_flags;
  cq->read_slid = read_slid;
  cq->read_sl = read_sl;
  cq->read_dlid_path_bits = read_dlid_path_bits;
  cq->read_completion_ts = read_completion_ts;
  cq->read_cvlan = read_cvlan;
  cq->read_flow_tag = read_flow_tag;
  cq->read_tm_info = read_tm_info;
  cq->read_completion_wallclock_ns = read_completion_wallclock_ns;
}

void install_qp_ex_ops(ibv_qp_ex* q) {
  q->wr_atomic_cmp_swp = wr_atomic_cmp_swp;
  q->wr_atomic_fetch_add = wr_atomic_fetch_add;
  q->wr_bind_mw = wr_bind_mw;
  q->wr_local_inv = wr_local_inv;
  q->wr_rdma_read = wr_rdma_read;
  q->wr_rdma_write = wr_rdma_write;
  q->wr_rdma_write_imm = wr_rdma_write_imm;
  q->wr_send = wr_send;
  q->wr_send_imm = wr_send_imm;
  q->wr_send_inv = wr_send_inv;
  q->wr_send_tso = wr_send_tso;
  q->wr_set_ud_addr = wr_set_ud_addr;
  q->wr_set_xrc_srqn = wr_set_xrc_srqn;
  q->wr_set_inline_data = wr_set_inline_data;
  q->wr_set_inline_data_list = wr_set_inline_data_list;
  q->wr_set_sge = wr_set_sge;
  q->wr_set_sge_list = wr_set_sge_list;
  q->wr_start = wr_start;
  q->wr_complete = wr_complete;
  q->wr_abort = wr_abort;
  q->wr_atomic_write = wr_atomic_write;
}

}  // namespace rdmasim::verbs
