// The HCA model's vocabulary: work requests, completions, QP attributes, async events.
//
// sim/ holds no verbs types, but every enum here has the numeric values of its IBTA /
// rdma-core counterpart (lib/verbs static_asserts that), so the front end translates by cast.
#pragma once

#include <array>
#include <cstdint>
#include <vector>

namespace rdmasim::nic {

enum class QpType : uint8_t { RC = 2, UC = 3, UD = 4, XrcSend = 9, XrcRecv = 10 };  // IBV_QPT_*

// The reliable connected transports: RC, and XRC's two halves (the initiator, XrcSend, sends
// and gets responses; the target, XrcRecv, receives into the XRC SRQ each request names and
// responds). They share RC's ACKs, retries, READs and atomics.
constexpr bool reliable(QpType t) {
  return t == QpType::RC || t == QpType::XrcSend || t == QpType::XrcRecv;
}
constexpr bool is_xrc(QpType t) { return t == QpType::XrcSend || t == QpType::XrcRecv; }

enum class MwType : uint8_t { Type1 = 1, Type2 = 2 };  // IBV_MW_TYPE_* (type 2 is 2B)

enum class QpState : uint8_t { Reset = 0, Init, Rtr, Rts, Sqd, Sqe, Err };  // IBV_QPS_*

enum class WrOpcode : uint8_t {  // IBV_WR_*
  RdmaWrite = 0,
  RdmaWriteWithImm = 1,
  Send = 2,
  SendWithImm = 3,
  RdmaRead = 4,
  AtomicCmpAndSwp = 5,
  AtomicFetchAndAdd = 6,
  LocalInv = 7,
  BindMw = 8,
  SendWithInv = 9,
};

enum class WcStatus : uint8_t {  // IBV_WC_*
  Success = 0,
  LocLenErr = 1,
  LocQpOpErr = 2,
  LocEecOpErr = 3,
  LocProtErr = 4,
  WrFlushErr = 5,
  MwBindErr = 6,
  BadRespErr = 7,
  LocAccessErr = 8,
  RemInvReqErr = 9,
  RemAccessErr = 10,
  RemOpErr = 11,
  RetryExcErr = 12,
  RnrRetryExcErr = 13,
  LocRddViolErr = 14,
  RemInvRdReqErr = 15,
  RemAbortErr = 16,
  InvEecnErr = 17,
  InvEecStateErr = 18,
  FatalErr = 19,
  RespTimeoutErr = 20,
  GeneralErr = 21,
};

enum class WcOpcode : uint8_t {  // IBV_WC_*
  Send = 0,
  RdmaWrite = 1,
  RdmaRead = 2,
  CompSwap = 3,
  FetchAdd = 4,
  BindMw = 5,
  LocalInv = 6,
  Recv = 128,
  RecvRdmaWithImm = 129,
};

// Send flags (IBV_SEND_*).
enum SendFlags : uint32_t {
  kSendFence = 1 << 0,
  kSendSignaled = 1 << 1,
  kSendSolicited = 1 << 2,
  kSendInline = 1 << 3,
};

// Completion flags (IBV_WC_*).
enum WcFlags : uint32_t {
  kWcGrh = 1 << 0,
  kWcWithImm = 1 << 1,
  kWcWithInv = 1 << 3,
};

// Memory access flags (IBV_ACCESS_*).
enum AccessFlags : uint32_t {
  kAccessLocalWrite = 1 << 0,
  kAccessRemoteWrite = 1 << 1,
  kAccessRemoteRead = 1 << 2,
  kAccessRemoteAtomic = 1 << 3,
  kAccessMwBind = 1 << 4,
  kAccessZeroBased = 1 << 5,
  kAccessOnDemand = 1 << 6,
};

// ibv_rereg_mr flags (IBV_REREG_MR_*).
enum ReregFlags : uint32_t {
  kReregChangeTranslation = 1 << 0,
  kReregChangePd = 1 << 1,
  kReregChangeAccess = 1 << 2,
};

// QP attribute mask bits (IBV_QP_*).
enum QpAttrMask : uint32_t {
  kQpState = 1 << 0,
  kQpCurState = 1 << 1,
  kQpEnSqdAsyncNotify = 1 << 2,
  kQpAccessFlags = 1 << 3,
  kQpPkeyIndex = 1 << 4,
  kQpPort = 1 << 5,
  kQpQkey = 1 << 6,
  kQpAv = 1 << 7,
  kQpPathMtu = 1 << 8,
  kQpTimeout = 1 << 9,
  kQpRetryCnt = 1 << 10,
  kQpRnrRetry = 1 << 11,
  kQpRqPsn = 1 << 12,
  kQpMaxQpRdAtomic = 1 << 13,
  kQpAltPath = 1 << 14,
  kQpMinRnrTimer = 1 << 15,
  kQpSqPsn = 1 << 16,
  kQpMaxDestRdAtomic = 1 << 17,
  kQpPathMigState = 1 << 18,
  kQpCap = 1 << 19,
  kQpDestQpn = 1 << 20,
};

// Async event types (IBV_EVENT_*).
enum class AsyncEventType : uint8_t {
  CqErr = 0,
  QpFatal = 1,
  QpReqErr = 2,
  QpAccessErr = 3,
  CommEst = 4,
  SqDrained = 5,
  PathMig = 6,
  PathMigErr = 7,
  DeviceFatal = 8,
  PortActive = 9,
  PortErr = 10,
  LidChange = 11,
  PkeyChange = 12,
  SmChange = 13,
  SrqErr = 14,
  SrqLimitReached = 15,
  QpLastWqeReached = 16,
  ClientReregister = 17,
  GidChange = 18,
};

struct Sge {
  uint64_t addr = 0;
  uint32_t length = 0;
  uint32_t lkey = 0;
};

// Where a packet goes: ibv_ah_attr in host form.
struct AddressVector {
  uint16_t dlid = 0;
  uint8_t sl = 0;
  uint8_t src_path_bits = 0;
  uint8_t static_rate = 0;
  bool is_global = false;
  uint8_t port_num = 1;
  std::array<uint8_t, 16> dgid{};
  uint32_t flow_label = 0;
  uint8_t sgid_index = 0;
  uint8_t hop_limit = 0;
  uint8_t traffic_class = 0;
};

struct SendWr {
  uint64_t wr_id = 0;
  WrOpcode opcode = WrOpcode::Send;
  uint32_t send_flags = 0;            // SendFlags
  uint32_t imm_data = 0;              // network byte order, as in ibv_send_wr
  std::vector<Sge> sgl;               // ignored when kSendInline
  std::vector<uint8_t> inline_data;   // the gathered bytes when kSendInline
  uint64_t remote_addr = 0;           // RDMA / atomic
  uint32_t rkey = 0;
  uint64_t compare_add = 0;           // atomic
  uint64_t swap = 0;
  uint32_t invalidate_rkey = 0;       // LOCAL_INV / SEND_WITH_INV
  // BIND_MW: the window (by its current rkey; the 24-bit index selects it), the rkey it
  // takes (only the low 8 bits are the consumer's, as ibv_inc_rkey changes them), and the
  // range of the MR `mr_lkey` it exposes with `access` (AccessFlags: REMOTE_*). mr_lkey 0
  // with length 0 unbinds a type 1 window.
  struct MwBind {
    uint32_t mw_rkey = 0;
    uint32_t new_rkey = 0;
    uint32_t mr_lkey = 0;
    uint32_t access = 0;
    uint64_t addr = 0;
    uint64_t length = 0;
  } bind;
  AddressVector av;                   // UD
  uint32_t remote_qpn = 0;            // UD
  uint32_t remote_qkey = 0;           // UD
  uint32_t xrc_srqn = 0;              // XRC initiator: the XRC SRQ at the target (remote_srqn)
  uint32_t wqe_index = 0;             // the front end's sequence number of this WQE; echoed in Completion
};

struct RecvWr {
  uint64_t wr_id = 0;
  std::vector<Sge> sgl;
  uint32_t wqe_index = 0;
};

// ibv_wc in host form.
struct Completion {
  uint64_t wr_id = 0;
  WcStatus status = WcStatus::Success;
  WcOpcode opcode = WcOpcode::Send;
  uint32_t vendor_err = 0;
  uint32_t byte_len = 0;
  uint32_t imm_data = 0;              // network byte order; with kWcWithInv the invalidated rkey (host order)
  uint32_t qp_num = 0;
  uint32_t src_qp = 0;
  uint32_t wc_flags = 0;              // WcFlags
  uint16_t pkey_index = 0;
  uint16_t slid = 0;
  uint8_t sl = 0;
  uint8_t dlid_path_bits = 0;
  bool is_send = false;               // completion of a send-queue WQE
  bool solicited = false;             // receive of a message whose last packet had BTH.SE set
  uint32_t wqe_index = 0;             // SendWr/RecvWr::wqe_index of the completed WQE
  uint32_t srqn = 0;                  // receive taken from this SRQ (0: from the QP's RQ)
};

struct QpCaps {
  uint32_t max_send_wr = 0;
  uint32_t max_recv_wr = 0;
  uint32_t max_send_sge = 0;
  uint32_t max_recv_sge = 0;
  uint32_t max_inline_data = 0;
};

// An XRC target (XrcRecv) has an XRC domain in place of a PD, no CQs and no queues; an XRC
// initiator (XrcSend) a PD and a send CQ only.
struct QpInitAttr {
  uint32_t pd = 0;
  uint32_t xrcd = 0;                  // XrcRecv only
  QpType type = QpType::RC;
  uint32_t send_cq = 0;
  uint32_t recv_cq = 0;
  uint32_t srq = 0;                   // 0: the QP has its own receive queue
  QpCaps caps;
  bool sq_sig_all = false;
};

// ibv_qp_attr in host form. path_mtu uses the IBV_MTU_* codes (1 = 256 ... 5 = 4096).
struct QpAttr {
  QpState qp_state = QpState::Reset;
  QpState cur_qp_state = QpState::Reset;
  uint8_t path_mtu = 0;
  uint8_t path_mig_state = 0;
  uint32_t qkey = 0;
  uint32_t rq_psn = 0;
  uint32_t sq_psn = 0;
  uint32_t dest_qp_num = 0;
  uint32_t qp_access_flags = 0;
  QpCaps cap;
  AddressVector ah_attr;
  AddressVector alt_ah_attr;
  uint16_t pkey_index = 0;
  uint16_t alt_pkey_index = 0;
  bool en_sqd_async_notify = false;
  bool sq_draining = false;
  uint8_t max_rd_atomic = 0;
  uint8_t max_dest_rd_atomic = 0;
  uint8_t min_rnr_timer = 0;
  uint8_t port_num = 0;
  uint8_t timeout = 0;
  uint8_t retry_cnt = 0;
  uint8_t rnr_retry = 0;
  uint8_t alt_port_num = 0;
  uint8_t alt_timeout = 0;
};

struct SrqAttr {
  uint32_t max_wr = 0;
  uint32_t max_sge = 0;
  uint32_t srq_limit = 0;
};

struct AsyncEvent {
  AsyncEventType type = AsyncEventType::PortActive;
  uint32_t qpn = 0;                   // for QP events
  uint32_t cq = 0;                    // for CQ events
  uint32_t srq = 0;                   // for SRQ events
  uint8_t port = 0;                   // for port events
};

// MR registration result.
struct MrKeys {
  uint32_t lkey = 0;
  uint32_t rkey = 0;
};

}  // namespace rdmasim::nic
