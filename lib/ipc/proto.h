// The wire protocol between a verbs process (client) and the fabric daemon.
//
// Control path: a SOCK_SEQPACKET Unix socket; each request is one message
// [MsgHeader][body], answered by one message [MsgHeader][body] with the same `seq`,
// possibly carrying file descriptors (SCM_RIGHTS). The daemon identifies the client by
// SO_PEERCRED, never by what the client claims.
//
// Data path: memfd-backed shared memory, mapped by both sides:
//   - the client page (one per client): doorbell counter and async-event ring;
//   - the global page (one per daemon, mapped read-only by clients): daemon status;
//   - per QP: an SQ ring of SqWqe and an RQ ring of RqWqe;
//   - per SRQ: an RQ ring of RqWqe;
//   - per CQ: a ring of Cqe (the daemon produces, the client consumes);
//   - per completion channel: a ring of CompEvent plus an eventfd (EFD_SEMAPHORE) that is
//     the channel's pollable fd.
// A post writes the slot, publishes `producer` (release), bumps the client page doorbell
// (release) and — only if the global page says the daemon is asleep — writes 1 to the
// wake eventfd. So the fast path makes no system call while the daemon is running.
// The daemon DMAs registered memory with process_vm_readv/writev on the client's pid.
#pragma once

#include <atomic>
#include <cstdint>

#include <infiniband/verbs.h>

#include "lib/ipc/ring.h"

namespace rdmasim::ipc {

inline constexpr uint32_t kProtoMagic = 0x52534d31;  // "RSM1"
inline constexpr uint32_t kProtoVersion = 1;
inline constexpr uint32_t kMaxSge = 16;
inline constexpr uint32_t kMaxInline = 256;
inline constexpr uint32_t kMaxDevices = 8;
inline constexpr uint32_t kMaxGids = 4;
inline constexpr uint32_t kMaxMsgBytes = 16384;
inline constexpr uint32_t kNameLen = 64;

// Environment: RDMASIM_SOCKET (daemon socket path), RDMASIM_HOST (simulated host name),
// RDMASIM_FABRIC (config for an auto-started daemon), RDMASIM_BACKEND (daemon|hardware),
// RDMASIM_DAEMON (path of the rdmasim binary used to auto-start the daemon).

enum class Op : uint32_t {
  Hello = 1,
  QueryDevice,
  QueryPort,
  AllocPd,
  DeallocPd,
  RegMr,
  DeregMr,
  CreateCompChannel,
  DestroyCompChannel,
  CreateCq,
  DestroyCq,
  CreateSrq,
  ModifySrq,
  QuerySrq,
  DestroySrq,
  CreateQp,
  ModifyQp,
  QueryQp,
  DestroyQp,
  Counters,      // daemon-wide counters as JSON text (for `rdmasim counters`)
  Shutdown,      // asks the daemon to exit (only honoured from the same uid)
  ReregMr,       // ibv_rereg_mr; answered with RegMrResp (the keys stay the same)
  AllocMw,       // ibv_alloc_mw
  DeallocMw,     // ibv_dealloc_mw (HandleReq)
};

struct MsgHeader {
  uint32_t magic = kProtoMagic;
  Op op = Op::Hello;
  uint32_t seq = 0;
  int32_t status = 0;        // responses: 0 or a positive errno
  uint32_t body_len = 0;
  uint32_t nfds = 0;         // responses: number of fds attached (SCM_RIGHTS)
};

// ---- shared pages ----

struct GlobalPage {
  std::atomic<uint32_t> daemon_sleeping{0};   // 1 while the daemon blocks waiting for work
  std::atomic<uint64_t> virtual_time_ps{0};   // the daemon's simulated clock
  std::atomic<uint64_t> behind_ps{0};         // how far virtual time lags the wall clock
};

struct AsyncEventSlot {
  uint32_t event_type;       // enum ibv_event_type
  uint32_t handle;           // QP / CQ / SRQ handle of this client, or port number
  uint32_t seq;              // slot written when seq == producer index + 1
  uint32_t pad;
};

struct ClientPage {
  alignas(kCacheLine) std::atomic<uint64_t> doorbell{0};
  alignas(kCacheLine) RingHeader async_ring_hdr;   // followed in memory by async slots
  AsyncEventSlot async_slots[256];
};

// ---- work queue entries ----

struct WireSge {
  uint64_t addr;
  uint32_t length;
  uint32_t lkey;
};

struct WireAv {               // ibv_ah_attr, flattened
  uint8_t dgid[16];
  uint32_t flow_label;
  uint16_t dlid;
  uint8_t sgid_index;
  uint8_t hop_limit;
  uint8_t traffic_class;
  uint8_t sl;
  uint8_t src_path_bits;
  uint8_t static_rate;
  uint8_t is_global;
  uint8_t port_num;
  uint8_t pad[2];
};

struct SqWqe {
  uint64_t wr_id;
  uint32_t wqe_index;         // the client's post counter for this SQ
  uint32_t opcode;            // enum ibv_wr_opcode
  uint32_t send_flags;        // IBV_SEND_*
  uint32_t imm_data;          // network order; LOCAL_INV/SEND_WITH_INV: the rkey to invalidate;
                              // BIND_MW: the window's current rkey (as mlx5 puts it in ctrl.imm)
  uint32_t num_sge;           // <= kMaxSge; unused when inline
  uint32_t inline_len;        // <= kMaxInline when IBV_SEND_INLINE
  uint64_t remote_addr;       // BIND_MW: the window's first byte
  uint32_t rkey;              // BIND_MW: the window's new rkey
  uint32_t remote_qpn;        // UD
  uint64_t compare_add;       // BIND_MW: the window's length
  uint64_t swap;
  uint32_t remote_qkey;       // UD
  uint32_t mw_access;         // BIND_MW: IBV_ACCESS_REMOTE_* of the window
  uint32_t bind_lkey;         // BIND_MW: lkey of the MR (0 with length 0: unbind a type 1 window)
  uint32_t pad;
  WireAv av;                  // UD
  WireSge sge[kMaxSge];
  uint8_t inline_data[kMaxInline];
};

struct RqWqe {
  uint64_t wr_id;
  uint32_t wqe_index;
  uint32_t num_sge;
  WireSge sge[kMaxSge];
};

struct Cqe {
  uint64_t wr_id;
  uint32_t status;            // enum ibv_wc_status
  uint32_t opcode;            // enum ibv_wc_opcode
  uint32_t vendor_err;
  uint32_t byte_len;
  uint32_t imm_data;          // network order
  uint32_t qp_num;
  uint32_t src_qp;
  uint32_t wc_flags;
  uint16_t pkey_index;
  uint16_t slid;
  uint8_t sl;
  uint8_t dlid_path_bits;
  uint8_t is_send;            // 1: completes an SQ WQE; 0: an RQ/SRQ WQE
  uint8_t pad;
  uint32_t wqe_index;         // SqWqe/RqWqe::wqe_index of the completed WQE
  uint32_t srq_handle;        // nonzero: the receive came from this SRQ
  uint32_t seq;               // written last (release): slot valid when seq == index + 1
};

// CQ ring header extension: the arm state lives in the ring's shared memory after the
// ring itself. The client sets `armed` to 1 (any) or 2 (solicited only); the daemon
// clears it when it raises the event.
struct CqControl {
  alignas(kCacheLine) std::atomic<uint32_t> armed{0};
  std::atomic<uint32_t> overrun{0};      // set by the daemon when the ring overflowed
};

struct CompEvent {
  uint32_t cq_handle;
  uint32_t seq;
};

// ---- control messages (bodies) ----

struct HelloReq {
  uint32_t version = kProtoVersion;
  char host[kNameLen] = {};   // requested simulated host; empty: the daemon picks one
};
// Response fds: [0] client page memfd (rw), [1] global page memfd (ro), [2] wake eventfd,
// [3] async-event eventfd (EFD_SEMAPHORE; the context's async_fd).
struct HelloResp {
  uint32_t client_id;
  int32_t daemon_pid;
  uint32_t num_devices;
  char host[kNameLen];        // the simulated host this process belongs to
  char host_ip[16];           // its loopback address, "127.0.1.1"
  char fabric_name[kNameLen];
};

struct QueryDeviceReq { uint32_t dev_index; };
struct QueryDeviceResp {
  char name[kNameLen];        // "mlx5_0"
  uint64_t node_guid;
  uint32_t link_layer;        // IBV_LINK_LAYER_*
  uint32_t transport_type;    // enum ibv_transport_type (IBV_TRANSPORT_IB / IWARP)
  uint32_t node_type;         // enum ibv_node_type
  struct ibv_device_attr attr;
};

struct QueryPortReq { uint32_t dev_index; uint32_t port; };
struct QueryPortResp {
  struct ibv_port_attr attr;
  uint32_t num_gids;
  uint8_t gids[kMaxGids][16];
  uint32_t gid_types[kMaxGids];   // IBV_GID_TYPE_IB / ROCE_V1 / ROCE_V2
};

struct AllocPdReq { uint32_t dev_index; };
struct HandleResp { uint32_t handle; };
struct HandleReq { uint32_t handle; };

struct RegMrReq {
  uint32_t pd;
  uint32_t access;
  uint64_t addr;
  uint64_t length;
  uint64_t iova;
};
// flags: IBV_REREG_MR_CHANGE_*; pd, addr/length and access are read only when their flag is set.
struct ReregMrReq {
  uint32_t handle;
  uint32_t flags;
  uint32_t pd;
  uint32_t access;
  uint64_t addr;
  uint64_t length;
};
struct RegMrResp { uint32_t handle; uint32_t lkey; uint32_t rkey; };

struct AllocMwReq { uint32_t pd; uint32_t type; /* enum ibv_mw_type */ };
struct AllocMwResp { uint32_t handle; uint32_t rkey; };

// Response fds: [0] event ring memfd, [1] eventfd (EFD_SEMAPHORE).
struct CreateCompChannelReq { uint32_t dev_index; };
struct CreateCompChannelResp { uint32_t handle; uint32_t ring_size; };

// Response fds: [0] CQ memfd laid out as [RingView<Cqe> of ring_size][CqControl].
struct CreateCqReq { uint32_t dev_index; uint32_t cqe; uint32_t channel; /* 0: none */ uint32_t comp_vector; };
struct CreateCqResp { uint32_t handle; uint32_t cqe; uint32_t ring_size; uint64_t control_offset; };

// Response fds: [0] SRQ memfd: RingView<RqWqe> of ring_size.
struct CreateSrqReq { uint32_t pd; uint32_t cq; uint32_t max_wr; uint32_t max_sge; uint32_t srq_limit; };
struct CreateSrqResp { uint32_t handle; uint32_t srqn; uint32_t max_wr; uint32_t max_sge; uint32_t ring_size; };
struct ModifySrqReq { uint32_t handle; uint32_t mask; uint32_t max_wr; uint32_t srq_limit; };
struct QuerySrqResp { uint32_t max_wr; uint32_t max_sge; uint32_t srq_limit; };

// Response fds: [0] QP memfd: [RingView<SqWqe> of sq_size] at 0, [RingView<RqWqe> of
// rq_size] at rq_offset (no RQ when the QP uses an SRQ).
struct CreateQpReq {
  uint32_t pd;
  uint32_t qp_type;           // IBV_QPT_*
  uint32_t send_cq;
  uint32_t recv_cq;
  uint32_t srq;               // 0: none
  uint32_t sq_sig_all;
  struct ibv_qp_cap cap;
};
struct CreateQpResp {
  uint32_t handle;
  uint32_t qp_num;
  struct ibv_qp_cap cap;      // granted capacities
  uint32_t sq_size;
  uint32_t rq_size;
  uint64_t rq_offset;
};

struct ModifyQpReq { uint32_t handle; uint32_t attr_mask; struct ibv_qp_attr attr; };
struct QueryQpReq { uint32_t handle; uint32_t attr_mask; };
struct QueryQpResp { struct ibv_qp_attr attr; struct ibv_qp_init_attr init; };

}  // namespace rdmasim::ipc
