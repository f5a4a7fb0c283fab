// The QPs rdma_cm creates and moves (the drop-in libibverbs' own QPs), rdma_create_ep and
// rdma_get_request, the helpers around them, and what is not implemented.
#include <arpa/inet.h>
#include <netdb.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "lib/rdmacm/cm.h"

namespace rdmasim::rdmacm {

namespace {
bool is_iwarp(const Id* id) { return id->path.transport == static_cast<uint32_t>(ipc::Transport::IWarp); }
bool is_ib(const Id* id) { return id->path.link_layer == static_cast<uint32_t>(ipc::LinkLayer::InfiniBand); }
}  // namespace

void ah_from_path(const Id* id, ibv_ah_attr* ah) {
  *ah = {};
  ah->port_num = id->id.port_num ? id->id.port_num : 1;
  ah->dlid = id->path.dlid;
  if (!is_ib(id)) {  // RoCE needs the GRH; on iWARP the GID is the peer's MAC
    ah->is_global = 1;
    std::memcpy(ah->grh.dgid.raw, id->path.dgid, 16);
    ah->grh.sgid_index = 0;
    ah->grh.hop_limit = 64;
  }
}

int qp_to_init(Id* id) {
  ibv_qp_attr a{};
  a.qp_state = IBV_QPS_INIT;
  a.pkey_index = 0;
  a.port_num = id->id.port_num ? id->id.port_num : 1;
  int mask = IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT;
  if (id->id.qp_type == IBV_QPT_UD) {
    a.qkey = RDMA_UDP_QKEY;
    mask |= IBV_QP_QKEY;
  } else {
    a.qp_access_flags = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
                        (is_iwarp(id) ? 0 : IBV_ACCESS_REMOTE_ATOMIC);
    mask |= IBV_QP_ACCESS_FLAGS;
  }
  if (int rc = ibv_modify_qp(id->id.qp, &a, mask)) return rc;
  if (id->id.qp_type != IBV_QPT_UD) return 0;
  // A UD QP is ready at once (rdma-core's ucma_init_ud_qp): RTR, then RTS with its PSN.
  a = {};
  a.qp_state = IBV_QPS_RTR;
  if (int rc = ibv_modify_qp(id->id.qp, &a, IBV_QP_STATE)) return rc;
  a.qp_state = IBV_QPS_RTS;
  a.sq_psn = id->psn;
  return ibv_modify_qp(id->id.qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN);
}

int qp_to_rtr_rts(Id* id, uint32_t peer_qpn, uint32_t peer_psn) {
  ibv_qp_attr a{};
  a.qp_state = IBV_QPS_RTR;
  a.path_mtu = static_cast<ibv_mtu>(id->path.mtu ? id->path.mtu : IBV_MTU_1024);
  a.dest_qp_num = peer_qpn;
  a.rq_psn = peer_psn;
  a.max_dest_rd_atomic = id->responder_resources;
  a.min_rnr_timer = 12;  // 0.64 ms, the kernel CM's default
  ah_from_path(id, &a.ah_attr);
  int mask = IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
             IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER;
  if (int rc = ibv_modify_qp(id->id.qp, &a, mask)) return rc;
  a = {};
  a.qp_state = IBV_QPS_RTS;
  a.timeout = 14;  // 4.096 us * 2^14 = 67 ms
  a.retry_cnt = id->retry;
  a.rnr_retry = id->rnr_retry;
  // iWARP has no PSNs on the wire (TCP orders the stream) and the MPA exchange carries none:
  // both sides' RC state starts at 0, the rq_psn the peer's event gave (0 there).
  a.sq_psn = is_iwarp(id) ? 0 : id->psn;
  a.max_rd_atomic = id->initiator_depth;
  mask = IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN |
         IBV_QP_MAX_QP_RD_ATOMIC;
  return ibv_modify_qp(id->id.qp, &a, mask);
}

int qp_to_err(Id* id) {
  ibv_qp_attr a{};
  a.qp_state = IBV_QPS_ERR;
  return ibv_modify_qp(id->id.qp, &a, IBV_QP_STATE);
}

}  // namespace rdmasim::rdmacm

using namespace rdmasim;
using rdmasim::rdmacm::fail;
using rdmasim::rdmacm::Id;

namespace {
Id* of(rdma_cm_id* id) { return reinterpret_cast<Id*>(id); }

// A completion channel and a CQ of `depth` (at least 1) entries for one queue of the id,
// stored in the id's fields; NULL (errno set) when either cannot be made.
ibv_cq* own_cq(rdma_cm_id* cm_id, uint32_t depth, ibv_comp_channel** channel, ibv_cq** cq) {
  *channel = ibv_create_comp_channel(cm_id->verbs);
  *cq = *channel ? ibv_create_cq(cm_id->verbs, depth ? static_cast<int>(depth) : 1, cm_id, *channel, 0)
                 : nullptr;
  return *cq;
}
}  // namespace

extern "C" {

// As rdma-core 44's: the QP is made by ibv_create_qp_ex on the id's device with what the
// caller asked (the drop-in libibverbs refuses what it cannot do: EOPNOTSUPP / EINVAL), its
// PD the caller's or the id's; rdma_create_qp is this with only a PD in comp_mask.
int rdma_create_qp_ex(rdma_cm_id* cm_id, ibv_qp_init_attr_ex* attr) {
  if (!cm_id || !attr) return fail(EINVAL);
  if (!cm_id->verbs) return fail(EINVAL);  // no device yet: bind or resolve first
  Id* id = of(cm_id);
  ibv_qp_init_attr_ex a = *attr;
  if (!(a.comp_mask & IBV_QP_INIT_ATTR_PD) || !a.pd) {
    a.comp_mask |= IBV_QP_INIT_ATTR_PD;
    a.pd = cm_id->pd;
  }
  if (!a.pd || a.pd->context != cm_id->verbs) return fail(EINVAL);
  if (!a.send_cq || !a.recv_cq) {
    // rdma-core's ucma_create_cqs: a completion channel and CQ per queue the caller left out.
    if (!a.recv_cq && !(a.recv_cq = own_cq(cm_id, a.cap.max_recv_wr, &cm_id->recv_cq_channel,
                                           &cm_id->recv_cq)))
      return -1;
    if (!a.send_cq && !(a.send_cq = own_cq(cm_id, a.cap.max_send_wr, &cm_id->send_cq_channel,
                                           &cm_id->send_cq)))
      return -1;
    id->own_cqs = true;
  }
  if (!a.srq && cm_id->srq) a.srq = cm_id->srq;
  a.qp_type = cm_id->qp_type;
  ibv_qp* qp = ibv_create_qp_ex(cm_id->verbs, &a);
  if (!qp) return -1;
  cm_id->qp = qp;
  if (int rc = rdmacm::qp_to_init(id)) {
    ibv_destroy_qp(qp);
    cm_id->qp = nullptr;
    return fail(rc);
  }
  attr->cap = a.cap;
  attr->send_cq = a.send_cq;
  attr->recv_cq = a.recv_cq;
  return 0;
}

int rdma_create_qp(rdma_cm_id* cm_id, ibv_pd* pd, ibv_qp_init_attr* attr) {
  if (!cm_id || !attr) return fail(EINVAL);
  ibv_qp_init_attr_ex a{};
  a.qp_context = attr->qp_context;
  a.send_cq = attr->send_cq;
  a.recv_cq = attr->recv_cq;
  a.srq = attr->srq;
  a.cap = attr->cap;
  a.qp_type = attr->qp_type;
  a.sq_sig_all = attr->sq_sig_all;
  a.comp_mask = IBV_QP_INIT_ATTR_PD;
  a.pd = pd ? pd : cm_id->pd;
  if (rdma_create_qp_ex(cm_id, &a)) return -1;
  attr->cap = a.cap;
  attr->send_cq = a.send_cq;
  attr->recv_cq = a.recv_cq;
  return 0;
}

void rdma_destroy_qp(rdma_cm_id* cm_id) {
  if (!cm_id || !cm_id->qp) return;
  ibv_destroy_qp(cm_id->qp);
  cm_id->qp = nullptr;
  Id* id = of(cm_id);
  if (!id->own_cqs) return;
  if (cm_id->send_cq) ibv_destroy_cq(cm_id->send_cq);
  if (cm_id->recv_cq) ibv_destroy_cq(cm_id->recv_cq);
  if (cm_id->send_cq_channel) ibv_destroy_comp_channel(cm_id->send_cq_channel);
  if (cm_id->recv_cq_channel) ibv_destroy_comp_channel(cm_id->recv_cq_channel);
  cm_id->send_cq = cm_id->recv_cq = nullptr;
  cm_id->send_cq_channel = cm_id->recv_cq_channel = nullptr;
  id->own_cqs = false;
}

int rdma_create_srq(rdma_cm_id* cm_id, ibv_pd* pd, ibv_srq_init_attr* attr) {
  if (!cm_id || !attr || !cm_id->verbs) return fail(EINVAL);
  if (!pd) pd = cm_id->pd;
  ibv_srq* srq = ibv_create_srq(pd, attr);
  if (!srq) return -1;
  cm_id->srq = srq;
  return 0;
}

int rdma_create_srq_ex(rdma_cm_id* cm_id, ibv_srq_init_attr_ex* attr) {
  if (!cm_id || !attr) return fail(EINVAL);
  if (attr->comp_mask & ~static_cast<uint32_t>(IBV_SRQ_INIT_ATTR_PD)) return fail(EOPNOTSUPP);  // no XRC
  ibv_srq_init_attr a{};
  a.srq_context = attr->srq_context;
  a.attr = attr->attr;
  return rdma_create_srq(cm_id, (attr->comp_mask & IBV_SRQ_INIT_ATTR_PD) ? attr->pd : nullptr, &a);
}

void rdma_destroy_srq(rdma_cm_id* cm_id) {
  if (!cm_id || !cm_id->srq) return;
  ibv_destroy_srq(cm_id->srq);
  cm_id->srq = nullptr;
}

int rdma_create_ep(rdma_cm_id** out, rdma_addrinfo* res, ibv_pd* pd, ibv_qp_init_attr* qp_attr) {
  if (!out || !res) return fail(EINVAL);
  rdma_cm_id* cm_id = nullptr;
  if (rdma_create_id(nullptr, &cm_id, nullptr, static_cast<rdma_port_space>(res->ai_port_space)))
    return -1;
  Id* id = of(cm_id);
  int rc = 0;
  if (res->ai_flags & RAI_PASSIVE) {
    rc = res->ai_src_addr ? rdma_bind_addr(cm_id, res->ai_src_addr) : fail(EINVAL);
    if (rc == 0 && qp_attr) {  // rdma_get_request gives each new id a QP of these attributes
      id->has_qp_attr = true;
      id->qp_attr = *qp_attr;
      id->ep_pd = pd;
    }
  } else {
    rc = rdma_resolve_addr(cm_id, res->ai_src_addr, res->ai_dst_addr, 2000);
    if (rc == 0) rc = rdma_resolve_route(cm_id, 2000);
    if (rc == 0 && qp_attr) rc = rdma_create_qp(cm_id, pd, qp_attr);
  }
  if (rc) {
    int err = errno;
    rdma_destroy_id(cm_id);
    return fail(err);
  }
  *out = cm_id;
  return 0;
}

void rdma_destroy_ep(rdma_cm_id* cm_id) {
  if (!cm_id) return;
  rdma_destroy_qp(cm_id);
  rdma_destroy_srq(cm_id);
  rdma_destroy_id(cm_id);
}

int rdma_get_request(rdma_cm_id* listen, rdma_cm_id** out) {
  if (!listen || !out) return fail(EINVAL);
  if (!of(listen)->sync) return fail(EINVAL);  // man rdma_get_request: synchronous ids only
  rdma_cm_event* e = nullptr;
  for (;;) {
    if (rdma_get_cm_event(listen->channel, &e)) return -1;
    if (e->event == RDMA_CM_EVENT_CONNECT_REQUEST) break;
    rdma_ack_cm_event(e);
  }
  rdma_cm_id* child = e->id;
  rdma_ack_cm_event(e);
  Id* c = of(child);
  // The new id shares the listener's channel (the daemon queues its events there), so it is
  // not synchronous itself: rdma_accept returns once its QP is in RTS and the REP is sent.
  if (c->has_qp_attr) {
    ibv_qp_init_attr a = c->qp_attr;
    if (rdma_create_qp(child, c->ep_pd, &a)) {
      int err = errno;
      rdma_reject(child, nullptr, 0);
      rdma_destroy_id(child);
      return fail(err);
    }
  }
  *out = child;
  return 0;
}

}  // extern "C"
