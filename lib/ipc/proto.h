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

//
// Every struct here is the project's own: fixed-width fields, fixed layout (sizes
// static_asserted below), no verbs type. Enumerated fields carry rdma-core's numeric values
// (named by the wire codes below); the client translates to and from ibv_* (lib/backend),
// the daemon to and from nic:: types (lib/daemon/wire.h), so the daemon side needs no
// <infiniband/verbs.h>.
#include <atomic>
#include <cstdint>

#include "lib/ipc/ring.h"

namespace rdmasim::ipc {

inline constexpr uint32_t kProtoMagic = 0x52534d31;  // "RSM1"
inline constexpr uint32_t kProtoVersion = 4;  // 2: own structs in place of ibv_*; 3: Cqe::time_ps; 4: XRC
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
  Counters,      // daemon-wide counters: JSON text in a sealed memfd, fds[0] (`rdmasim counters`)
  Shutdown,      // asks the daemon to exit (only honoured from the same uid)
  ReregMr,       // ibv_rereg_mr; answered with RegMrResp (the keys stay the same)
  AllocMw,       // ibv_alloc_mw
  DeallocMw,     // ibv_dealloc_mw (HandleReq)
  // rdma_cm (librdmacm.so.1): the daemon's connection manager; see "rdma_cm" below.
  CmCreateChannel,  // -> CmChannelResp, fds [0] eventfd (EFD_SEMAPHORE): one count per event
  CmDestroyChannel, // HandleReq (EBUSY while ids use it)
  CmCreateId,       // CmCreateIdReq -> HandleResp
  CmDestroyId,      // CmIdReq; a connected id disconnects its peer
  CmBind,           // CmBindReq -> CmAddrResp
  CmListen,         // CmListenReq
  CmResolveAddr,    // CmResolveAddrReq -> CmAddrResp; event ADDR_RESOLVED / ADDR_ERROR
  CmResolveRoute,   // CmIdReq -> CmPath; event ROUTE_RESOLVED
  CmConnect,        // CmConnectReq; the peer's channel gets CONNECT_REQUEST, or this one REJECTED
  CmAccept,         // CmConnectReq (the REP); UD: the peer gets ESTABLISHED with the QPN/QKey
  CmReject,         // CmConnectReq (private data only); the peer gets REJECTED
  CmEstablish,      // CmIdReq (the RTU, after the REP): the passive side gets ESTABLISHED
  CmDisconnect,     // CmIdReq (the DREQ): DISCONNECTED on both sides
  CmGetEvent,       // HandleReq (channel) -> CmEventResp; EAGAIN when none is queued
  ResizeCq,         // ResizeCqReq -> CreateCqResp, fds [0] the new CQ memfd (queued CQEs moved)
  AllocDm,          // AllocDmReq -> HandleResp, fds [0] the DM's memfd (ibv_memcpy_*_dm map it)
  FreeDm,           // HandleReq (EBUSY while MRs are registered on it)
  RegDmMr,          // RegDmMrReq -> RegMrResp (deregistered with DeregMr)
  AdviseMr,         // AdviseMrReq (one SGE of ibv_advise_mr)
  OpenXrcd,         // OpenXrcdReq -> HandleResp (ibv_open_xrcd)
  CloseXrcd,        // HandleReq (EBUSY while this client's SRQs or QPs use it)
  OpenQp,           // OpenQpReq -> CreateQpResp, fds [0] as CreateQp (ibv_open_qp: an XRC target)
};

// Device memory (ibv_alloc_dm): what one device offers in all, and to one allocation
// (ibv_device_attr_ex::max_dm_size). 256 KiB: the on-chip memory (MEMIC) a ConnectX-5
// exposes (NVIDIA MLNX_OFED documentation, "Device Memory Programming").
inline constexpr uint64_t kMaxDmSize = 256 * 1024;
// A DM begins on a page of its own: log_align_req up to 12 is met, past it refused.
inline constexpr uint32_t kMaxDmLogAlign = 12;

// ---- wire codes (each with rdma-core's value; the client static_asserts the match) ----

enum class LinkLayer : uint32_t { Unspecified = 0, InfiniBand = 1, Ethernet = 2 };  // IBV_LINK_LAYER_*
enum class Transport : uint32_t { Ib = 0, IWarp = 1 };                             // IBV_TRANSPORT_*
enum class NodeType : uint32_t { Ca = 1, Rnic = 4 };                               // IBV_NODE_*
enum class PortState : uint32_t { Down = 1, Active = 4 };                          // IBV_PORT_*
enum class GidType : uint32_t { Ib = 0, RoceV1 = 1, RoceV2 = 2 };                  // IBV_GID_TYPE_*
enum class AtomicCap : uint32_t { None = 0, Hca = 1 };                             // IBV_ATOMIC_*

// WireDeviceAttr::device_cap_flags bits (IBV_DEVICE_*).
inline constexpr uint32_t kDevChangePhyPort = 1u << 5;
inline constexpr uint32_t kDevShutdownPort = 1u << 8;
inline constexpr uint32_t kDevPortActiveEvent = 1u << 10;
inline constexpr uint32_t kDevSysImageGuid = 1u << 11;
inline constexpr uint32_t kDevRcRnrNakGen = 1u << 12;
inline constexpr uint32_t kDevMemWindow = 1u << 17;
inline constexpr uint32_t kDevXrc = 1u << 20;
inline constexpr uint32_t kDevMemWindowType2B = 1u << 24;

// WirePortAttr::port_cap_flags bits (IBV_PORT_SM, IBV_PORT_CM_SUP).
inline constexpr uint32_t kPortSm = 1u << 1;
inline constexpr uint32_t kPortCmSup = 1u << 16;

// SqWqe::send_flags: the nic::SendFlags bits plus IBV_SEND_IP_CSUM, accepted and ignored.
inline constexpr uint32_t kSendIpCsum = 1u << 4;
inline constexpr uint32_t kKnownSendFlags = 0x1f;  // FENCE | SIGNALED | SOLICITED | INLINE | IP_CSUM

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
  uint32_t event_type;       // nic::AsyncEventType (IBV_EVENT_*)
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

struct WireAv {               // an address vector (ibv_ah_attr, flattened)
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
  uint32_t opcode;            // nic::WrOpcode (IBV_WR_*)
  uint32_t send_flags;        // nic::SendFlags, kSendIpCsum (IBV_SEND_*)
  uint32_t imm_data;          // network order; LOCAL_INV/SEND_WITH_INV: the rkey to invalidate;
                              // BIND_MW: the window's current rkey (as mlx5 puts it in ctrl.imm)
  uint32_t num_sge;           // <= kMaxSge; unused when inline
  uint32_t inline_len;        // <= kMaxInline when kSendInline
  uint64_t remote_addr;       // BIND_MW: the window's first byte
  uint32_t rkey;              // BIND_MW: the window's new rkey
  uint32_t remote_qpn;        // UD
  uint64_t compare_add;       // BIND_MW: the window's length
  uint64_t swap;
  uint32_t remote_qkey;       // UD
  uint32_t mw_access;         // BIND_MW: the window's remote access (nic::AccessFlags)
  uint32_t bind_lkey;         // BIND_MW: lkey of the MR (0 with length 0: unbind a type 1 window)
  uint32_t xrc_srqn;          // XRC_SEND: the remote XRC SRQ (ibv_send_wr qp_type.xrc.remote_srqn)
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
  uint32_t status;            // nic::WcStatus (IBV_WC_*)
  uint32_t opcode;            // nic::WcOpcode (IBV_WC_*)
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
  uint64_t time_ps;           // simulated time the completion was written to the CQ
};

// CQ ring header extension: the arm state lives in the ring's shared memory after the
// ring itself. The client sets `armed` to 1 (any) or 2 (solicited only); the daemon
// clears it when it raises the event. Both sides fence (seq_cst) between their store and
// their load — arm then poll, CQE then read `armed` — or an event can be lost.
struct CqControl {
  alignas(kCacheLine) std::atomic<uint32_t> armed{0};
  std::atomic<uint32_t> overrun{0};      // set by the daemon when the ring overflowed
};

struct CompEvent {
  uint32_t cq_handle;
  uint32_t seq;
};

// ---- attribute structs of the control messages ----

// What ibv_query_device reports, the fields the simulated HCA sets (others read 0).
struct WireDeviceAttr {
  char fw_ver[64];
  uint64_t sys_image_guid;    // host order (QueryDeviceResp::node_guid is the node GUID)
  uint64_t max_mr_size;
  uint64_t page_size_cap;
  uint32_t vendor_id;
  uint32_t vendor_part_id;
  uint32_t hw_ver;
  uint32_t max_qp;
  uint32_t max_qp_wr;
  uint32_t device_cap_flags;  // kDev* bits
  uint32_t max_sge;
  uint32_t max_sge_rd;
  uint32_t max_cq;
  uint32_t max_cqe;
  uint32_t max_mr;
  uint32_t max_mw;
  uint32_t max_pd;
  uint32_t max_qp_rd_atom;
  uint32_t max_res_rd_atom;
  uint32_t max_qp_init_rd_atom;
  uint32_t atomic_cap;        // AtomicCap
  uint32_t max_ah;
  uint32_t max_srq;
  uint32_t max_srq_wr;
  uint32_t max_srq_sge;
  uint16_t max_pkeys;
  uint8_t local_ca_ack_delay;
  uint8_t phys_port_cnt;
};

// What ibv_query_port reports (the fields the model sets; counters and flags read 0).
struct WirePortAttr {
  uint32_t state;             // PortState
  uint32_t max_mtu;           // MTU codes: 1 = 256 ... 5 = 4096 (IBV_MTU_*)
  uint32_t active_mtu;
  uint32_t gid_tbl_len;
  uint32_t port_cap_flags;    // kPort* bits
  uint32_t max_msg_sz;
  uint16_t pkey_tbl_len;
  uint16_t lid;
  uint16_t sm_lid;
  uint8_t lmc;
  uint8_t max_vl_num;
  uint8_t sm_sl;
  uint8_t subnet_timeout;
  uint8_t active_width;       // IB width code (1 = 1x, 2 = 4x, ...)
  uint8_t active_speed;       // IB lane speed code (32 = EDR, ...)
  uint8_t phys_state;         // IBTA PortPhysicalState (5 LinkUp, 2 Polling)
  uint8_t link_layer;         // LinkLayer
  uint8_t pad[2];
};

// Queue capacities (requested or granted).
struct WireQpCap {
  uint32_t max_send_wr;
  uint32_t max_recv_wr;
  uint32_t max_send_sge;
  uint32_t max_recv_sge;
  uint32_t max_inline_data;
};

// QP attributes of ibv_modify_qp / ibv_query_qp; a field is read only when its bit is in the
// attribute mask (the IBV_QP_* bits, nic::QpAttrMask). The enumerated fields are 32 bits
// wide so a caller's out-of-range value reaches the model unchanged and is refused there.
struct WireQpAttr {
  uint32_t qp_state;          // nic::QpState values (IBV_QPS_*)
  uint32_t cur_qp_state;
  uint32_t path_mtu;          // MTU code
  uint32_t path_mig_state;
  uint32_t qkey;
  uint32_t rq_psn;
  uint32_t sq_psn;
  uint32_t dest_qp_num;
  uint32_t qp_access_flags;   // nic::AccessFlags (IBV_ACCESS_*)
  WireQpCap cap;
  WireAv ah_attr;
  WireAv alt_ah_attr;
  uint16_t pkey_index;
  uint16_t alt_pkey_index;
  uint8_t en_sqd_async_notify;
  uint8_t sq_draining;
  uint8_t max_rd_atomic;
  uint8_t max_dest_rd_atomic;
  uint8_t min_rnr_timer;
  uint8_t port_num;
  uint8_t timeout;
  uint8_t retry_cnt;
  uint8_t rnr_retry;
  uint8_t alt_port_num;
  uint8_t alt_timeout;
  uint8_t pad;
};

// The creation attributes ibv_query_qp returns (the client fills the pointers it owns).
struct WireQpInitAttr {
  uint32_t qp_type;           // nic::QpType values (IBV_QPT_*)
  uint32_t sq_sig_all;
  WireQpCap cap;
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
  uint32_t link_layer;        // LinkLayer
  uint32_t transport_type;    // Transport
  uint32_t node_type;         // NodeType
  WireDeviceAttr attr;
};

struct QueryPortReq { uint32_t dev_index; uint32_t port; };
struct QueryPortResp {
  WirePortAttr attr;
  uint32_t num_gids;
  uint8_t gids[kMaxGids][16];
  uint32_t gid_types[kMaxGids];   // GidType
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
// flags: nic::ReregFlags (IBV_REREG_MR_CHANGE_*); pd, addr/length and access are read only when their flag is set.
struct ReregMrReq {
  uint32_t handle;
  uint32_t flags;
  uint32_t pd;
  uint32_t access;
  uint64_t addr;
  uint64_t length;
};
struct RegMrResp { uint32_t handle; uint32_t lkey; uint32_t rkey; };

struct AllocMwReq { uint32_t pd; uint32_t type; /* nic::MwType (IBV_MW_TYPE_*) */ };
struct AllocMwResp { uint32_t handle; uint32_t rkey; };

// Response fds: [0] event ring memfd, [1] eventfd (EFD_SEMAPHORE).
struct CreateCompChannelReq { uint32_t dev_index; };
struct CreateCompChannelResp { uint32_t handle; uint32_t ring_size; };

// Response fds: [0] CQ memfd laid out as [RingView<Cqe> of ring_size][CqControl].
struct CreateCqReq { uint32_t dev_index; uint32_t cqe; uint32_t channel; /* 0: none */ uint32_t comp_vector; };
struct CreateCqResp { uint32_t handle; uint32_t cqe; uint32_t ring_size; uint64_t control_offset; };
// ibv_resize_cq: a new memfd laid out as CreateCq's; the unpolled CQEs are copied to its
// slots 0.. (consumer 0) and the arm state carried over; the old memory is no longer written.
struct ResizeCqReq { uint32_t handle; uint32_t cqe; };

// ibv_advise_mr, one SGE: advice IBV_ADVISE_MR_ADVICE_*, flags IBV_ADVISE_MR_FLAG_*.
struct AdviseMrReq { uint32_t pd; uint32_t advice; uint32_t flags; uint32_t lkey; uint64_t addr; uint64_t length; };

struct AllocDmReq { uint32_t dev_index; uint32_t log_align_req; uint64_t length; };
// ibv_reg_dm_mr: access includes IBV_ACCESS_ZERO_BASED; the MR's addresses are 0..length.
struct RegDmMrReq { uint32_t pd; uint32_t dm; uint32_t access; uint32_t pad; uint64_t offset; uint64_t length; };

// Response fds: [0] SRQ memfd: RingView<RqWqe> of ring_size.
// An XRC SRQ names its domain (xrcd, a handle) and its CQ (cq); a basic SRQ has both 0.
struct CreateSrqReq { uint32_t pd; uint32_t cq; uint32_t max_wr; uint32_t max_sge; uint32_t srq_limit; uint32_t xrcd; };
struct CreateSrqResp { uint32_t handle; uint32_t srqn; uint32_t max_wr; uint32_t max_sge; uint32_t ring_size; };
struct ModifySrqReq { uint32_t handle; uint32_t mask; uint32_t max_wr; uint32_t srq_limit; };
struct QuerySrqResp { uint32_t max_wr; uint32_t max_sge; uint32_t srq_limit; };

// Response fds: [0] QP memfd: [RingView<SqWqe> of sq_size] at 0, [RingView<RqWqe> of
// rq_size] at rq_offset (no RQ when the QP uses an SRQ).
struct CreateQpReq {
  uint32_t pd;
  uint32_t qp_type;           // nic::QpType values (IBV_QPT_*)
  uint32_t send_cq;
  uint32_t recv_cq;
  uint32_t srq;               // 0: none
  uint32_t sq_sig_all;
  WireQpCap cap;
  uint32_t xrcd;              // XRC_RECV: the domain (pd, CQs and SRQ are 0)
};
struct CreateQpResp {
  uint32_t handle;
  uint32_t qp_num;
  WireQpCap cap;              // granted capacities
  uint32_t sq_size;
  uint32_t rq_size;
  uint64_t rq_offset;
};

// ibv_open_xrcd: has_inode 0 is fd -1 (a domain of its own); otherwise the domain of the
// file (st_dev, st_ino) the caller's fd names, shared by every client that opens it.
// oflags: O_CREAT, O_EXCL.
struct OpenXrcdReq { uint32_t dev_index; uint32_t oflags; uint32_t has_inode; uint32_t pad; uint64_t st_dev; uint64_t st_ino; };
// ibv_open_qp: the XRC target QP `qp_num` of the domain `xrcd` (a handle).
struct OpenQpReq { uint32_t xrcd; uint32_t qp_num; };

struct ModifyQpReq { uint32_t handle; uint32_t attr_mask; WireQpAttr attr; };
struct QueryQpReq { uint32_t handle; uint32_t attr_mask; };
struct QueryQpResp { WireQpAttr attr; WireQpInitAttr init; };

// ---- rdma_cm ----
// Addresses are the simulated hosts' IPv4 addresses (HostNic::ip, "127.0.1.1", or the
// fabric address on Ethernet), ports the rdma_cm port space's; both in network order.
// Event codes are enum rdma_cm_event_type's (the client static_asserts them); kCmEventRep
// is the daemon's own: the active side's REP, which the client turns into ESTABLISHED
// after moving its QP to RTS and answering CmEstablish.
inline constexpr uint32_t kCmPrivateData = 256;
inline constexpr uint32_t kCmAnyDevice = 0xffffffffu;
inline constexpr uint32_t kCmEventRep = 0x10000;

struct CmEndpoint { uint32_t ip; uint16_t port; uint16_t pad; };
struct CmConnParam {
  uint32_t qpn;
  uint32_t psn;
  uint32_t qkey;
  uint8_t responder_resources;
  uint8_t initiator_depth;
  uint8_t flow_control;
  uint8_t retry_count;
  uint8_t rnr_retry_count;
  uint8_t srq;
  uint8_t pad[2];
  uint32_t private_data_len;  // <= kCmPrivateData
  uint8_t private_data[kCmPrivateData];
};
// The route between an id's device port and its peer's: what the client puts in the QP's
// address vector (RoCE/iWARP: dgid, global; IB: dlid).
struct CmPath {
  uint32_t dev_index;         // the id's device among the client's (Hello's order)
  uint32_t link_layer;        // LinkLayer
  uint32_t transport;         // Transport
  uint32_t mtu;               // MTU code of the path
  uint16_t slid, dlid;
  uint8_t sgid[16], dgid[16];
};
struct CmChannelResp { uint32_t handle; };
struct CmCreateIdReq { uint32_t channel; uint32_t ps; uint32_t qp_type; };
struct CmIdReq { uint32_t id; uint32_t timeout_ms; };
struct CmBindReq { uint32_t id; CmEndpoint addr; };
struct CmAddrResp { CmEndpoint src; CmEndpoint dst; uint32_t dev_index; };
struct CmListenReq { uint32_t id; uint32_t backlog; };
struct CmResolveAddrReq { uint32_t id; uint32_t has_src; CmEndpoint src; CmEndpoint dst; uint32_t timeout_ms; };
struct CmConnectReq { uint32_t id; CmConnParam param; };
struct CmEventResp {
  uint32_t event;             // enum rdma_cm_event_type, or kCmEventRep
  int32_t status;             // 0, a negative errno, or the REJ reason
  uint32_t id;                // the id (CONNECT_REQUEST: the new one, on the listener's channel)
  uint32_t listen_id;         // CONNECT_REQUEST: the listener
  uint32_t ps;
  CmEndpoint src, dst;        // as the id sees them
  CmPath path;
  CmConnParam param;          // the peer's (REQ, REP, REJ private data; UD: qpn, qkey)
};

// The layouts both sides compile against; a change here is a protocol version bump.
static_assert(sizeof(WireAv) == 32);
static_assert(sizeof(WireDeviceAttr) == 176);
static_assert(sizeof(WirePortAttr) == 40);
static_assert(sizeof(WireQpCap) == 20);
static_assert(sizeof(WireQpAttr) == 136);
static_assert(sizeof(WireQpInitAttr) == 28);
static_assert(sizeof(QueryDeviceResp) == 264);
static_assert(sizeof(QueryPortResp) == 124);
static_assert(sizeof(CreateQpReq) == 48);
static_assert(sizeof(CreateQpResp) == 48);
static_assert(sizeof(ModifyQpReq) == 144);
static_assert(sizeof(QueryQpResp) == 164);
static_assert(sizeof(CmConnParam) == 280);
static_assert(sizeof(CmPath) == 52);
static_assert(sizeof(CmEventResp) == 368);

}  // namespace rdmasim::ipc
