// The exported memory verbs: protection domains, memory regions and windows, address
// handles, multicast. Argument checks here; the objects' keys and handles from the backend.
#include <endian.h>

#include <cstring>

#include "lib/backend/verbs_wire.h"
#include "lib/verbs/control.h"

using namespace rdmasim::verbs;

namespace rdmasim::verbs {

// ---- memory windows (context ops: ibv_alloc_mw / ibv_dealloc_mw are inline in verbs.h) ----

ibv_mw* alloc_mw_op(ibv_pd* pd, ibv_mw_type type) {
  uint32_t handle = 0, rkey = 0;
  if (int rc = backend_of(pd->context).alloc_mw(pd->handle, type, &handle, &rkey))
    return fail<ibv_mw>(rc);
  auto* mw = new Mw();
  mw->mw.context = pd->context;
  mw->mw.pd = pd;
  mw->mw.rkey = rkey;
  mw->mw.handle = handle;
  mw->mw.type = type;
  return &mw->mw;
}

int dealloc_mw_op(ibv_mw* mw) {
  if (int rc = backend_of(mw->context).dealloc_mw(mw->handle)) return rc;
  delete Mw::from(mw);
  return 0;
}

// ---- thread and parent domains (ibv_alloc_td(3), ibv_alloc_parent_domain(3)) ----
// Client-side objects: a thread domain promises single-threaded use of what it is given
// to (a hint; the locks stay), and a parent domain is its PD to every call. Its custom
// allocators are kept but never called: the queue buffers they would allocate are the
// daemon's shared rings here, not provider memory.

ibv_td* alloc_td_op(ibv_context* c, ibv_td_init_attr* attr) {
  if (!attr || attr->comp_mask) return fail<ibv_td>(EINVAL);
  auto* td = new Td();
  td->td.context = c;
  return &td->td;
}

int dealloc_td_op(ibv_td* td) {
  Td* t = Td::from(td);
  if (t->users.load()) return EBUSY;  // a parent domain still names it
  delete t;
  return 0;
}

ibv_pd* alloc_parent_domain_op(ibv_context* c, ibv_parent_domain_init_attr* attr) {
  constexpr uint32_t kKnown = IBV_PARENT_DOMAIN_INIT_ATTR_ALLOCATORS | IBV_PARENT_DOMAIN_INIT_ATTR_PD_CONTEXT;
  if (!attr || !attr->pd || attr->pd->context != c || (attr->comp_mask & ~kKnown))
    return fail<ibv_pd>(EINVAL);
  Pd* base = Pd::from(attr->pd);
  if (base->protection) return fail<ibv_pd>(EINVAL);  // a parent domain cannot be extended
  if (attr->td && attr->td->context != c) return fail<ibv_pd>(EINVAL);
  if ((attr->comp_mask & IBV_PARENT_DOMAIN_INIT_ATTR_ALLOCATORS) && (!attr->alloc || !attr->free))
    return fail<ibv_pd>(EINVAL);
  auto* pd = new Pd();
  pd->pd.context = c;
  pd->pd.handle = attr->pd->handle;
  pd->protection = base;
  base->users++;
  if (attr->td) {
    pd->td = Td::from(attr->td);
    pd->td->users++;
  }
  return &pd->pd;
}

}  // namespace rdmasim::verbs

extern "C" {

// ---- PD ----

ibv_pd* RDMASIM_V11(ibv_alloc_pd)(ibv_context* context) {
  if (hardware()) return forward<&Hw::ibv_alloc_pd>(context);
  uint32_t handle = 0;
  if (int rc = backend_of(context).alloc_pd(&handle)) return fail<ibv_pd>(rc);
  auto* pd = new Pd();
  pd->pd.context = context;
  pd->pd.handle = handle;
  return &pd->pd;
}

int RDMASIM_V11(ibv_dealloc_pd)(ibv_pd* pd) {
  if (hardware()) return forward<&Hw::ibv_dealloc_pd>(pd);
  Pd* p = Pd::from(pd);
  if (p->protection) {  // a parent domain: its PD and thread domain stay
    p->protection->users--;
    if (p->td) p->td->users--;
    delete p;
    return 0;
  }
  if (p->users.load()) return EBUSY;  // parent domains still extend it
  if (int rc = backend_of(pd->context).dealloc_pd(pd->handle)) return rc;
  delete Pd::from(pd);
  return 0;
}

ibv_pd* ibv_import_pd(ibv_context* context, uint32_t pd_handle) {
  if (hardware()) return forward<&Hw::ibv_import_pd>(context, pd_handle);
  return fail<ibv_pd>(EOPNOTSUPP);
}
void ibv_unimport_pd(ibv_pd* pd) {
  if (hardware()) return forward<&Hw::ibv_unimport_pd>(pd);
}

// ---- MR ----

ibv_mr* ibv_reg_mr_iova2(ibv_pd* pd, void* addr, size_t length, uint64_t iova, unsigned int access) {
  if (hardware()) return forward<&Hw::ibv_reg_mr_iova2>(pd, addr, length, iova, access);
  rdmasim::backend::MrKeys keys;
  if (int rc = backend_of(pd->context).reg_mr(pd->handle, reinterpret_cast<uint64_t>(addr), length,
                                              iova, access & ~static_cast<unsigned>(IBV_ACCESS_OPTIONAL_RANGE),
                                              &keys))
    return fail<ibv_mr>(rc);
  auto* mr = new Mr();
  mr->mr.context = pd->context;
  mr->mr.pd = pd;
  mr->mr.addr = addr;
  mr->mr.length = length;
  mr->mr.handle = keys.handle;
  mr->mr.lkey = keys.lkey;
  mr->mr.rkey = keys.rkey;
  return &mr->mr;
}

ibv_mr*RDMASIM_V11(ibv_reg_mr)(ibv_pd* pd, void* addr, size_t length, int access) {
  if (hardware()) return forward<&Hw::ibv_reg_mr>(pd, addr, length, access);
  return ibv_reg_mr_iova2(pd, addr, length, reinterpret_cast<uint64_t>(addr),
                          static_cast<unsigned>(access));
}

ibv_mr*(ibv_reg_mr_iova)(ibv_pd* pd, void* addr, size_t length, uint64_t iova, int access) {
  if (hardware()) return forward<&Hw::ibv_reg_mr_iova>(pd, addr, length, iova, access);
  return ibv_reg_mr_iova2(pd, addr, length, iova, static_cast<unsigned>(access));
}

ibv_mr* ibv_reg_dmabuf_mr(ibv_pd* pd, uint64_t offset, size_t length, uint64_t iova, int fd,
                          int access) {
  if (hardware()) return forward<&Hw::ibv_reg_dmabuf_mr>(pd, offset, length, iova, fd, access);
  return fail<ibv_mr>(EOPNOTSUPP);
}

int ibv_rereg_mr(ibv_mr* mr, int flags, ibv_pd* pd, void* addr, size_t length, int access) {
  if (hardware()) return forward<&Hw::ibv_rereg_mr>(mr, flags, pd, addr, length, access);
  // Input checks as rdma-core's libibverbs does them (ERR_INPUT: the old MR stays valid).
  constexpr int kAll = IBV_REREG_MR_CHANGE_TRANSLATION | IBV_REREG_MR_CHANGE_PD |
                       IBV_REREG_MR_CHANGE_ACCESS;
  if (flags == 0 || (flags & ~kAll) ||
      ((flags & IBV_REREG_MR_CHANGE_TRANSLATION) && (!addr || !length)) ||
      (access && !(flags & IBV_REREG_MR_CHANGE_ACCESS)) ||
      ((flags & IBV_REREG_MR_CHANGE_PD) && (!pd || pd->context != mr->context))) {
    errno = EINVAL;
    return IBV_REREG_MR_ERR_INPUT;
  }
  rdmasim::backend::MrKeys keys;
  if (int rc = backend_of(mr->context)
                   .rereg_mr(mr->handle, static_cast<uint32_t>(flags),
                             (flags & IBV_REREG_MR_CHANGE_PD) ? pd->handle : 0u,
                             reinterpret_cast<uint64_t>(addr), length,
                             static_cast<unsigned>(access) & ~static_cast<unsigned>(IBV_ACCESS_OPTIONAL_RANGE),
                             &keys)) {
    // The daemon changes nothing on error, but rdma-core callers treat a command error
    // as "MR shouldn't be used" and must still ibv_dereg_mr it; report it that way.
    errno = rc;
    return IBV_REREG_MR_ERR_CMD;
  }
  if (flags & IBV_REREG_MR_CHANGE_PD) mr->pd = pd;
  if (flags & IBV_REREG_MR_CHANGE_TRANSLATION) {
    mr->addr = addr;
    mr->length = length;
  }
  mr->lkey = keys.lkey;
  mr->rkey = keys.rkey;
  return 0;
}

int RDMASIM_V11(ibv_dereg_mr)(ibv_mr* mr) {
  if (hardware()) return forward<&Hw::ibv_dereg_mr>(mr);
  if (int rc = backend_of(mr->context).dereg_mr(mr->handle)) return rc;
  delete Mr::from(mr);
  return 0;
}

ibv_mr* ibv_import_mr(ibv_pd* pd, uint32_t mr_handle) {
  if (hardware()) return forward<&Hw::ibv_import_mr>(pd, mr_handle);
  return fail<ibv_mr>(EOPNOTSUPP);
}
void ibv_unimport_mr(ibv_mr* mr) {
  if (hardware()) return forward<&Hw::ibv_unimport_mr>(mr);
}

ibv_dm* ibv_import_dm(ibv_context* context, uint32_t dm_handle) {
  if (hardware()) return forward<&Hw::ibv_import_dm>(context, dm_handle);
  return fail<ibv_dm>(EOPNOTSUPP);
}
void ibv_unimport_dm(ibv_dm* dm) {
  if (hardware()) return forward<&Hw::ibv_unimport_dm>(dm);
}

// ---- AH ----

// Address handles are client-side: the flattened attributes travel in each UD WQE.
ibv_ah* RDMASIM_V11(ibv_create_ah)(ibv_pd* pd, ibv_ah_attr* attr) {
  if (hardware()) return forward<&Hw::ibv_create_ah>(pd, attr);
  // As mlx5_create_ah: the port must exist, and an Ethernet port (RoCE) addresses by GID,
  // so an AH without a GRH is EINVAL there; the source GID index must be in the table.
  rdmasim::backend::PortInfo p;
  if (!attr || query_port_info(pd->context, attr->port_num, &p) != 0) return fail<ibv_ah>(EINVAL);
  if (p.attr.link_layer == IBV_LINK_LAYER_ETHERNET && !attr->is_global) return fail<ibv_ah>(EINVAL);
  if (attr->is_global && attr->grh.sgid_index >= p.attr.gid_tbl_len) return fail<ibv_ah>(EINVAL);
  auto* ah = new Ah();
  ah->ah.context = pd->context;
  ah->ah.pd = pd;
  ah->av = rdmasim::backend::to_wire(*attr);
  return &ah->ah;
}

int RDMASIM_V11(ibv_destroy_ah)(ibv_ah* ah) {
  if (hardware()) return forward<&Hw::ibv_destroy_ah>(ah);
  delete Ah::from(ah);
  return 0;
}

int ibv_init_ah_from_wc(ibv_context* context, uint8_t port, ibv_wc* wc, ibv_grh* grh,
                        ibv_ah_attr* ah_attr) {
  if (hardware()) return forward<&Hw::ibv_init_ah_from_wc>(context, port, wc, grh, ah_attr);
  memset(ah_attr, 0, sizeof(*ah_attr));
  ah_attr->dlid = wc->slid;
  ah_attr->sl = wc->sl;
  ah_attr->src_path_bits = wc->dlid_path_bits;
  ah_attr->port_num = port;
  if (wc->wc_flags & IBV_WC_GRH) {
    ah_attr->is_global = 1;
    ah_attr->grh.hop_limit = 0xff;
    ibv_gid dgid = grh->dgid;
    const auto* ip4 = reinterpret_cast<const uint8_t*>(grh) + 20;
    if ((be32toh(grh->version_tclass_flow) >> 28) != 6 && ip4[0] == 0x45) {
      // RoCEv2 over IPv4: the last 20 bytes of the GRH space hold the IPv4 header
      // (rdma-core's get_grh_header_version); the GIDs are its addresses IPv4-mapped.
      ah_attr->grh.dgid = {};
      ah_attr->grh.dgid.raw[10] = ah_attr->grh.dgid.raw[11] = 0xff;
      memcpy(ah_attr->grh.dgid.raw + 12, ip4 + 12, 4);
      dgid = {};
      dgid.raw[10] = dgid.raw[11] = 0xff;
      memcpy(dgid.raw + 12, ip4 + 16, 4);
      ah_attr->grh.traffic_class = ip4[1];
    } else {
      ah_attr->grh.dgid = grh->sgid;
      ah_attr->grh.flow_label = be32toh(grh->version_tclass_flow) & 0xfffff;
      ah_attr->grh.traffic_class = (be32toh(grh->version_tclass_flow) >> 20) & 0xff;
    }
    // sgid_index: the local GID the packet was sent to.
    rdmasim::backend::PortInfo p;
    if (query_port_info(context, port, &p) == 0) {
      for (uint32_t i = 0; i < p.num_gids; ++i)
        if (memcmp(p.gids[i], dgid.raw, 16) == 0) ah_attr->grh.sgid_index = static_cast<uint8_t>(i);
    }
  }
  return 0;
}

ibv_ah* ibv_create_ah_from_wc(ibv_pd* pd, ibv_wc* wc, ibv_grh* grh, uint8_t port) {
  if (hardware()) return forward<&Hw::ibv_create_ah_from_wc>(pd, wc, grh, port);
  ibv_ah_attr attr{};
  if (ibv_init_ah_from_wc(pd->context, port, wc, grh, &attr)) return nullptr;
  return RDMASIM_V11(ibv_create_ah)(pd, &attr);
}

int ibv_resolve_eth_l2_from_gid(ibv_context* context, ibv_ah_attr* attr, uint8_t eth_mac[6],
                                uint16_t* vid) {
  if (hardware()) return forward<&Hw::ibv_resolve_eth_l2_from_gid>(context, attr, eth_mac, vid);
  return EOPNOTSUPP;
}

// ---- multicast ----

int RDMASIM_V11(ibv_attach_mcast)(ibv_qp* qp, const ibv_gid* gid, uint16_t lid) {
  if (hardware()) return forward<&Hw::ibv_attach_mcast>(qp, gid, lid);
  return EOPNOTSUPP;
}
int RDMASIM_V11(ibv_detach_mcast)(ibv_qp* qp, const ibv_gid* gid, uint16_t lid) {
  if (hardware()) return forward<&Hw::ibv_detach_mcast>(qp, gid, lid);
  return EOPNOTSUPP;
}

}  // extern "C"

RDMASIM_SYMVER_V11(ibv_alloc_pd)
RDMASIM_SYMVER_V11(ibv_attach_mcast)
RDMASIM_SYMVER_V11(ibv_create_ah)
RDMASIM_SYMVER_V11(ibv_dealloc_pd)
RDMASIM_SYMVER_V11(ibv_dereg_mr)
RDMASIM_SYMVER_V11(ibv_destroy_ah)
RDMASIM_SYMVER_V11(ibv_detach_mcast)
RDMASIM_SYMVER_V11(ibv_reg_mr)

namespace rdmasim::verbs {

// ibv_advise_mr(3) (the advise_mr op): each SGE checked and prefetched by the backend in
// turn, the first error returned. No SGE: 0 (ib_advise_mr). An unknown advice is
// EOPNOTSUPP ("the advise operation isn't supported"), flags other than
// IBV_ADVISE_MR_FLAG_FLUSH EINVAL ("the flags are invalid").
int advise_mr_op(ibv_pd* pd, ibv_advise_mr_advice advice, uint32_t flags, ibv_sge* sg, uint32_t n) {
  if (!pd) return EINVAL;
  if (static_cast<uint32_t>(advice) > IBV_ADVISE_MR_ADVICE_PREFETCH_NO_FAULT) return EOPNOTSUPP;
  if (flags & ~static_cast<uint32_t>(IBV_ADVISE_MR_FLAG_FLUSH)) return EINVAL;
  if (n && !sg) return EINVAL;
  for (uint32_t i = 0; i < n; ++i)
    if (int rc = backend_of(pd->context).advise_mr(pd->handle, advice, flags, sg[i])) return rc;
  return 0;
}

}  // namespace rdmasim::verbs
