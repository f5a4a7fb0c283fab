// XRC in the front end: domains (ibv_open_xrcd / ibv_close_xrcd), XRC SRQs
// (ibv_create_srq_ex with IBV_SRQT_XRC, ibv_get_srq_num) and opening another process's XRC
// target QP (ibv_open_qp). The argument checks are rdma-core's (ibv_cmd_open_xrcd,
// ibv_cmd_open_qp, ibv_cmd_create_srq_ex) and the kernel's (ib_uverbs_open_xrcd,
// ib_uverbs_open_qp); XRC initiator and target QPs are made by create_qp_ex_op (queues.cpp).
#include <sys/stat.h>

#include "lib/verbs/control.h"

namespace rdmasim::verbs {
namespace {

ibv_xrcd* open_xrcd(ibv_context* c, ibv_xrcd_init_attr* attr) {
  if (attr->comp_mask >= IBV_XRCD_INIT_ATTR_RESERVED) return fail<ibv_xrcd>(EOPNOTSUPP);
  if (!(attr->comp_mask & IBV_XRCD_INIT_ATTR_FD) || !(attr->comp_mask & IBV_XRCD_INIT_ATTR_OFLAGS))
    return fail<ibv_xrcd>(EINVAL);
  // fd -1: a domain of its own; otherwise the domain of the file the fd names, found by its
  // inode, which every process opening the same file shares.
  struct stat st{};
  const bool inode = attr->fd != -1;
  if (inode && fstat(attr->fd, &st) != 0) return fail<ibv_xrcd>(EBADF);
  uint32_t handle = 0;
  if (int rc = backend_of(c).open_xrcd(inode, inode ? st.st_dev : 0, inode ? st.st_ino : 0,
                                       static_cast<uint32_t>(attr->oflags), &handle))
    return fail<ibv_xrcd>(rc);
  auto* x = new Xrcd();
  x->xrcd.context = c;
  x->handle = handle;
  return &x->xrcd;
}

int close_xrcd(ibv_xrcd* xrcd) {
  Xrcd* x = Xrcd::from(xrcd);
  if (int rc = backend_of(xrcd->context).close_xrcd(x->handle)) return rc;
  delete x;
  return 0;
}

int get_srq_num(ibv_srq* srq, uint32_t* srq_num) {
  *srq_num = Srq::from(srq)->srq_num;
  return 0;
}

ibv_qp* open_qp(ibv_context* c, ibv_qp_open_attr* attr) {
  if (attr->comp_mask >= IBV_QP_OPEN_ATTR_RESERVED) return fail<ibv_qp>(EOPNOTSUPP);
  const uint32_t need = IBV_QP_OPEN_ATTR_NUM | IBV_QP_OPEN_ATTR_XRCD | IBV_QP_OPEN_ATTR_TYPE;
  if ((attr->comp_mask & need) != need || !attr->xrcd || attr->xrcd->context != c)
    return fail<ibv_qp>(EINVAL);
  if (attr->qp_type != IBV_QPT_XRC_RECV) return fail<ibv_qp>(EINVAL);  // only targets open
  backend::QpRings r;
  if (int rc = backend_of(c).open_qp(Xrcd::from(attr->xrcd)->handle, attr->qp_num, &r))
    return fail<ibv_qp>(rc);
  ibv_qp_init_attr_ex ex{};
  ex.qp_context = attr->qp_context;
  ex.qp_type = IBV_QPT_XRC_RECV;
  ex.xrcd = attr->xrcd;
  ibv_qp* qp = adopt_qp(c, r, ex);
  // An opened target is in whatever state its creator moved it to.
  ibv_qp_attr a{};
  ibv_qp_init_attr init{};
  if (backend_of(c).query_qp(qp->handle, IBV_QP_STATE, &a, &init) == 0) {
    Qp::from(qp)->state.store(a.qp_state, std::memory_order_release);
    qp->state = a.qp_state;
  }
  return qp;
}

}  // namespace

ibv_srq* create_xrc_srq(ibv_context* c, ibv_srq_init_attr_ex* attr) {
  // An XRC SRQ needs its domain and its CQ (mlx5: EINVAL without either).
  const uint32_t need = IBV_SRQ_INIT_ATTR_XRCD | IBV_SRQ_INIT_ATTR_CQ;
  if ((attr->comp_mask & need) != need || !attr->xrcd || !attr->cq || attr->xrcd->context != c ||
      attr->cq->context != c)
    return fail<ibv_srq>(EINVAL);
  backend::SrqRing r;
  if (int rc = backend_of(c).create_xrc_srq(attr->pd->handle, Xrcd::from(attr->xrcd)->handle,
                                            attr->cq->handle, attr->attr, &r))
    return fail<ibv_srq>(rc);
  attr->attr.max_wr = r.granted.max_wr;
  attr->attr.max_sge = r.granted.max_sge;
  return &adopt_srq(attr->pd, r, attr->srq_context)->srq;
}

void install_xrc_ops(verbs_context& v) {
  v.open_xrcd = open_xrcd;
  v.close_xrcd = close_xrcd;
  v.get_srq_num = get_srq_num;
  v.open_qp = open_qp;
}

}  // namespace rdmasim::verbs
