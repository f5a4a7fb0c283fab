// Memory windows (IBTA 10.6.7): allocation, BIND_MW and LOCAL_INV work requests, and the
// invalidation a SEND_WITH_INV asks of the responder. Access through a window is checked in
// mr.cpp (check_remote). The rule numbers are the IBTA's, as rdma-core's rxe cites them.
#include "sim/nic/hca_impl.h"

namespace rdmasim::nic {

namespace {
// The rights a window can carry: the remote ones and LOCAL_WRITE, which mlx5's
// set_bind_wr maps to the mkey's LOCAL_WRITE (a ConnectX binds it; refusing it made a
// valid program's bind complete with MW_BIND_ERR).
constexpr uint32_t kWindowAccess =
    kAccessLocalWrite | kAccessRemoteWrite | kAccessRemoteRead | kAccessRemoteAtomic;
}  // namespace

int Hca::alloc_mw(uint32_t pd, MwType type, uint32_t* rkey) {
  auto& im = *impl_;
  auto pit = im.pds.find(pd);
  if (pit == im.pds.end()) return ENOENT;
  if (!im.config.mem_windows) return EOPNOTSUPP;
  // ib_uverbs_alloc_mw: a type other than 1 or 2 is EINVAL.
  if (type != MwType::Type1 && type != MwType::Type2) return EINVAL;
  if (im.mws.size() >= im.config.max_mw) return ENOMEM;
  // The same 24-bit index space as MR keys; the variant (low 8 bits) starts at 0 and each
  // bind sets it (ibv_bind_mw uses ibv_inc_rkey).
  const uint32_t index = im.next_key++;
  Mw mw;
  mw.pd = pd;
  mw.type = type;
  mw.rkey = index << 8;
  im.mws[index] = mw;
  pit->second.refs++;
  *rkey = mw.rkey;
  return 0;
}

int Hca::dealloc_mw(uint32_t rkey) {
  auto& im = *impl_;
  auto it = im.mws.find(rkey >> 8);
  if (it == im.mws.end()) return ENOENT;
  // man ibv_alloc_mw: "ibv_dealloc_mw() Unbinds in case was previously bound".
  im.unbind(it->second);
  im.pds[it->second.pd].refs--;
  im.mws.erase(it);
  return 0;
}

void Hca::Impl::unbind(Mw& mw) {
  if (mw.mr && mw.length) {
    auto m = mrs.find(mw.mr);
    if (m != mrs.end() && m->second.bound_mws) m->second.bound_mws--;
  }
  mw.mr = 0;
  mw.addr = mw.length = 0;
  mw.access = 0;
  mw.qpn = 0;
  mw.bound = false;
}

void Hca::Impl::free_qp_windows(uint32_t qpn) {
  for (auto& [index, mw] : mws)
    if (mw.type == MwType::Type2 && mw.bound && mw.qpn == qpn) unbind(mw);
}

WcStatus Hca::Impl::bind_mw(Qp& qp, const SendWqe& w) {
  const SendWr::MwBind& b = w.wr.bind;
  auto it = mws.find(b.mw_rkey >> 8);
  if (it == mws.end()) return WcStatus::MwBindErr;
  Mw& mw = it->second;
  // C10-72: the QP and the window are in the same PD.
  if (mw.pd != qp.init.pd) return WcStatus::MwBindErr;
  if (b.access & ~kWindowAccess) return WcStatus::MwBindErr;
  const bool unbinding = b.mr_lkey == 0 && b.length == 0;
  if (mw.type == MwType::Type2) {
    // o10-37.2.30: only a Free type 2 window can be bound; o10-37.2.40: not with a null
    // MR or zero length (LOCAL_INV / SEND_WITH_INV free it).
    if (mw.bound || b.mr_lkey == 0 || b.length == 0) return WcStatus::MwBindErr;
  }
  const Mr* mr = nullptr;
  if (!unbinding) {
    auto m = mrs.find(b.mr_lkey);
    if (m == mrs.end()) return WcStatus::MwBindErr;
    mr = &m->second;
    if (mr->pd != mw.pd) return WcStatus::MwBindErr;
    // C10-73: the MR was registered with IBV_ACCESS_MW_BIND.
    if (!(mr->access & kAccessMwBind)) return WcStatus::MwBindErr;
    // C10-74: remote write / atomic through the window needs local write on the MR.
    if ((b.access & (kAccessRemoteWrite | kAccessRemoteAtomic)) && !(mr->access & kAccessLocalWrite))
      return WcStatus::MwBindErr;
    // C10-75: the window lies inside the MR.
    if (b.addr < mr->iova || b.addr - mr->iova > mr->length ||
        b.length > mr->length - (b.addr - mr->iova))
      return WcStatus::MwBindErr;
  }
  unbind(mw);
  // The consumer owns the key's low 8 bits; the index stays (rxe_do_bind_mw, mlx5 UMR).
  mw.rkey = (mw.rkey & ~0xffu) | (b.new_rkey & 0xffu);
  if (unbinding) return WcStatus::Success;  // type 1 bound to nothing: no access
  mw.bound = true;
  mw.mr = mr->key;
  mw.addr = b.addr;
  mw.length = b.length;
  mw.access = b.access;
  mw.qpn = mw.type == MwType::Type2 ? qp.qpn : 0;
  if (mw.length) mrs[mr->key].bound_mws++;
  return WcStatus::Success;
}

WcStatus Hca::Impl::local_inv(Qp& qp, uint32_t rkey) {
  // rxe completes a failed LOCAL_INV with LOC_QP_OP_ERR: an unknown key, a stale variant,
  // a window of another PD, a type 1 window (o10-37.2.26) or an MR (no fast-register MRs
  // in this model, so an MR key can never be invalidated).
  auto it = mws.find(rkey >> 8);
  if (it == mws.end()) return WcStatus::LocQpOpErr;
  Mw& mw = it->second;
  if (mw.rkey != rkey || mw.pd != qp.init.pd || mw.type != MwType::Type2)
    return WcStatus::LocQpOpErr;
  unbind(mw);  // a Free window stays Free (rxe accepts that too)
  return WcStatus::Success;
}

bool Hca::Impl::remote_inv(Qp& qp, uint32_t rkey) {
  auto it = mws.find(rkey >> 8);
  if (it == mws.end()) return false;
  Mw& mw = it->second;
  // A type 2B window is invalidated only through the QP it is bound to.
  if (mw.rkey != rkey || mw.type != MwType::Type2 || !mw.bound || mw.qpn != qp.qpn ||
      mw.pd != access_pd(qp))
    return false;
  unbind(mw);
  return true;
}

}  // namespace rdmasim::nic
