// The XRC operations (ibv_open_xrcd, ibv_close_xrcd, ibv_open_qp) and the lifetime of what
// XRC shares between processes. As the kernel does it (ib_uverbs_open_xrcd): a domain opened
// through a file is found again by the file's inode, so every process opening that file
// shares it; an XRC target QP lives while any process holds a handle to it.
//
// The inode is the client's claim (it fstat()s its fd): the daemon serves one user's
// processes (SO_PEERCRED, the socket's mode), so a client naming another file's inode
// reaches only domains of that same user.
#include <fcntl.h>

#include <cerrno>

#include "lib/daemon/ops.h"
#include "lib/daemon/ops_util.h"

namespace rdmasim::daemon {

int Ops::open_xrcd(Client& c, const ipc::OpenXrcdReq& r, ipc::HandleResp* out) {
  if (r.dev_index >= c.devs.size()) return EINVAL;
  if (r.oflags & ~static_cast<uint32_t>(O_CREAT | O_EXCL)) return EINVAL;
  const size_t dev = c.devs[r.dev_index];
  Xrcd x;
  x.dev = dev;
  if (!r.has_inode) {  // fd -1: a domain of its own
    if (int rc = hca(dev).alloc_xrcd(&x.xrcd)) return rc;
  } else {
    const auto key = std::make_tuple(dev, r.st_dev, r.st_ino);
    auto it = shared_xrcds_.find(key);
    // ib_uverbs_open_xrcd: no domain for the file and no O_CREAT is EAGAIN; O_EXCL with
    // one there is EINVAL.
    if (it == shared_xrcds_.end() && !(r.oflags & O_CREAT)) return EAGAIN;
    if (it != shared_xrcds_.end() && (r.oflags & O_EXCL)) return EINVAL;
    if (it == shared_xrcds_.end()) {
      SharedXrcd s;
      if (int rc = hca(dev).alloc_xrcd(&s.xrcd)) return rc;
      it = shared_xrcds_.emplace(key, s).first;
    }
    it->second.opens++;
    x.xrcd = it->second.xrcd;
    x.shared = true;
    x.st_dev = r.st_dev;
    x.st_ino = r.st_ino;
  }
  out->handle = c.next_handle++;
  c.xrcds.emplace(out->handle, x);
  return 0;
}

void Ops::release_xrcd(const Xrcd& x) {
  if (x.shared) {
    auto it = shared_xrcds_.find(std::make_tuple(x.dev, x.st_dev, x.st_ino));
    if (it == shared_xrcds_.end() || --it->second.opens > 0) return;
    shared_xrcds_.erase(it);
  }
  hca(x.dev).dealloc_xrcd(x.xrcd);
}

int Ops::close_xrcd(Client& c, const ipc::HandleReq& r, NoBody*) {
  auto it = c.xrcds.find(r.handle);
  if (it == c.xrcds.end()) return ENOENT;
  // The kernel keeps a domain while this process's XRC SRQs and targets use it: EBUSY.
  for (const auto& [h, s] : c.srqs)
    if (s.xrcd == r.handle) return EBUSY;
  for (const auto& [h, q] : c.qps)
    if (q.xrcd == r.handle) return EBUSY;
  release_xrcd(it->second);
  c.xrcds.erase(it);
  return 0;
}

int Ops::open_qp(Client& c, const ipc::OpenQpReq& r, ipc::CreateQpResp* out, ReplyFds* fds) {
  auto x = c.xrcds.find(r.xrcd);
  if (x == c.xrcds.end()) return ENOENT;
  const size_t dev = x->second.dev;
  // ib_open_qp: the QP must be an XRC target of this domain (EINVAL otherwise).
  nic::QpInitAttr init;
  if (hca(dev).query_qp(r.qp_num, nullptr, &init) != 0 || init.type != nic::QpType::XrcRecv ||
      init.xrcd != x->second.xrcd)
    return EINVAL;
  auto ref = xrc_target_refs_.find({dev, r.qp_num});
  if (ref == xrc_target_refs_.end()) return EINVAL;
  Qp qp;
  qp.dev = dev;
  qp.qpn = r.qp_num;
  qp.type = static_cast<uint32_t>(nic::QpType::XrcRecv);
  qp.send_cq = qp.recv_cq = qp.srq = 0;
  qp.xrcd = r.xrcd;
  qp.max_send_sge = qp.max_recv_sge = qp.max_inline = 0;
  qp.sq_sig_all = false;
  if (!make_qp_memory(s_.local_maps, 1, 0, &qp, out)) return ENOMEM;  // a target posts nothing
  ref->second++;
  out->handle = c.next_handle++;
  out->qp_num = r.qp_num;
  out->cap = {};
  fds->pass_map(qp.map);
  c.qps.emplace(out->handle, std::move(qp));
  return 0;
}

int Ops::release_qp(Client& c, uint32_t handle, const Qp& qp) {
  if (qp.type == static_cast<uint32_t>(nic::QpType::XrcRecv)) {
    auto ref = xrc_target_refs_.find({qp.dev, qp.qpn});
    if (ref != xrc_target_refs_.end() && --ref->second > 0) {
      // Other handles hold the target: it stays; its async events go to one of them.
      s_.router.disown(EventRouter::Kind::Qp, qp.dev, qp.qpn);
      for (const auto& [id, other] : s_.clients)
        for (const auto& [h, q] : other->qps)
          if (q.dev == qp.dev && q.qpn == qp.qpn && !(id == c.id && h == handle)) {
            s_.router.own(EventRouter::Kind::Qp, qp.dev, qp.qpn, id, h);
            return 0;
          }
      return 0;
    }
    if (ref != xrc_target_refs_.end()) xrc_target_refs_.erase(ref);
  }
  if (int rc = hca(qp.dev).destroy_qp(qp.qpn)) return rc;
  s_.router.disown(EventRouter::Kind::Qp, qp.dev, qp.qpn);
  return 0;
}

}  // namespace rdmasim::daemon
