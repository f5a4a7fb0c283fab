/* rdmasim/connect.h: taking an RC queue pair to RTS towards a peer, the step every verbs
 * program does after exchanging QP numbers (with rdmasim/oob.h, or over TCP as the perftest
 * tools do). Plain verbs, header only: the same code runs in a study (virtual time), through
 * the daemon, or on a real NIC.
 *
 * A program publishes its port address (rdmasim_port_addr) with its QP number, reads the
 * peer's, and calls rdmasim_rc_connect. The transitions and masks are those man
 * ibv_modify_qp requires of an RC QP: RESET -> INIT (port, access), INIT -> RTR (path MTU,
 * destination QPN, RQ PSN 0, responder resources, RNR timer, address vector), RTR -> RTS
 * (timeout, retries, SQ PSN 0, initiator depth).
 */
#ifndef RDMASIM_CONNECT_H
#define RDMASIM_CONNECT_H

#include <infiniband/verbs.h>
#include <stdint.h>
#include <string.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Where a port is: its LID (InfiniBand) or GID index 0 (RoCE, iWARP); what a peer needs for
 * its address vector. Plain bytes, so it can be published as is. */
struct rdmasim_addr {
  uint16_t lid;
  uint8_t ethernet;          /* 1: the link layer is Ethernet (a GRH is needed) */
  uint8_t mtu;               /* the port's active MTU (enum ibv_mtu) */
  uint8_t gid[16];
};

/* The address of port 1 of `ctx`: 0, or the errno of ibv_query_port / ibv_query_gid. */
static inline int rdmasim_port_addr(struct ibv_context *ctx, struct rdmasim_addr *out) {
  struct ibv_port_attr pa;
  union ibv_gid gid;
  memset(out, 0, sizeof *out);
  int rc = ibv_query_port(ctx, 1, &pa);
  if (rc) return rc;
  out->lid = pa.lid;
  out->ethernet = pa.link_layer == IBV_LINK_LAYER_ETHERNET;
  out->mtu = (uint8_t)pa.active_mtu;
  rc = ibv_query_gid(ctx, 1, 0, &gid);
  if (rc) return rc;
  memcpy(out->gid, gid.raw, 16);
  return 0;
}

/* An address vector to `peer` through port 1 in traffic class `priority` 0..7: the SL on
 * InfiniBand; on Ethernet a GRH (hop limit 64) whose traffic class is priority << 5 (DSCP
 * 8 x priority, the DSCP-to-priority mapping of RoCE switches). */
static inline void rdmasim_fill_ah(struct ibv_ah_attr *av, const struct rdmasim_addr *peer, uint8_t priority) {
  memset(av, 0, sizeof *av);
  av->dlid = peer->lid;
  av->port_num = 1;
  if (peer->ethernet) {
    av->is_global = 1;
    memcpy(av->grh.dgid.raw, peer->gid, 16);
    av->grh.hop_limit = 64;
    av->grh.traffic_class = (uint8_t)(priority << 5);
  } else {
    av->sl = priority;
  }
}

/* What differs between programs: path MTU, the remote access the QP grants, the RDMA
 * READ / atomic depth in both directions (0 when the QP issues and serves none), and the
 * traffic class (rdmasim_fill_ah). */
struct rdmasim_rc_opts {
  enum ibv_mtu mtu;          /* 0 (no enum ibv_mtu value): the peer port's active MTU */
  unsigned access;           /* IBV_ACCESS_REMOTE_* granted to the peer */
  uint8_t rd_atomic;
  uint8_t priority;
};

/* RESET -> INIT -> RTR -> RTS towards QP `peer_qpn` at `peer`, PSNs 0, timeout 14 (4.096 us
 * x 2^14), 7 retries, 7 RNR retries, RNR timer 12. Returns 0, or the step that failed:
 * 1 INIT, 2 RTR, 3 RTS. */
static inline int rdmasim_rc_connect(struct ibv_qp *qp, uint32_t peer_qpn, const struct rdmasim_addr *peer,
                                     const struct rdmasim_rc_opts *o) {
  struct ibv_qp_attr a;
  memset(&a, 0, sizeof a);
  a.qp_state = IBV_QPS_INIT;
  a.port_num = 1;
  a.qp_access_flags = o->access;
  if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS))
    return 1;
  memset(&a, 0, sizeof a);
  a.qp_state = IBV_QPS_RTR;
  a.path_mtu = o->mtu ? o->mtu : (enum ibv_mtu)peer->mtu;
  a.dest_qp_num = peer_qpn;
  a.max_dest_rd_atomic = o->rd_atomic;
  a.min_rnr_timer = 12;
  rdmasim_fill_ah(&a.ah_attr, peer, o->priority);
  if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
                                IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER))
    return 2;
  memset(&a, 0, sizeof a);
  a.qp_state = IBV_QPS_RTS;
  a.timeout = 14;
  a.retry_cnt = 7;
  a.rnr_retry = 7;
  a.max_rd_atomic = o->rd_atomic;
  if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
                                IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC))
    return 3;
  return 0;
}

#ifdef __cplusplus
}
#endif

#endif /* RDMASIM_CONNECT_H */
