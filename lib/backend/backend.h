// The seam behind the verbs front end: one table of operations per device (rdma-core's
// verbs_context_ops idea). Every operation defaults to EOPNOTSUPP, so a backend implements
// what it can and a caller tells "not supported" (skip) from "broken" (any other errno).
#pragma once

#include <infiniband/verbs.h>

#include <cerrno>
#include <cstddef>
#include <cstdint>

#include "lib/ipc/doorbell.h"
#include "lib/ipc/proto.h"
#include "lib/ipc/ring.h"

namespace rdmasim::backend {

// What every operation a backend does not override returns.
inline constexpr int kNotSupported = EOPNOTSUPP;

// A shared-memory region holding a queue's rings; the front end unmaps it on destroy. One
// the daemon's handler lent in place (an in-process run) is not this process's to unmap.
struct Mapping {
  void* base = nullptr;
  size_t len = 0;
  bool owned = true;
  void unmap();
};

struct DeviceInfo {
  char name[ipc::kNameLen] = {};        // "mlx5_0"
  uint64_t node_guid = 0;               // host order
  ibv_transport_type transport_type = IBV_TRANSPORT_IB;
  ibv_node_type node_type = IBV_NODE_CA;
};

struct PortInfo {
  ibv_port_attr attr{};
  uint32_t num_gids = 0;
  uint8_t gids[ipc::kMaxGids][16] = {};
  uint32_t gid_types[ipc::kMaxGids] = {};   // IBV_GID_TYPE_*
};

// How a verbs call that must wait does so when the program runs in a fiber of an in-process
// run (lib/inproc): it hands the wait to the engine instead of blocking the process. The
// daemon and hardware backends have none (nullptr): there the call spins or blocks in read().
class Waiter {
 public:
  virtual ~Waiter() = default;
  // A poll of CQ `cq` (a token: the front end's CQ) that found it empty: charges the host's
  // CPU for one poll and lets virtual time move.
  virtual void empty_poll(const void* cq) = 0;
  // Returns once `fd` (a channel or async eventfd of this process) is readable.
  virtual void wait_readable(int fd) = 0;
};

// What a context needs from its backend: the async event fd, the data path's doorbell and,
// in-process, the waiter.
struct ContextLinks {
  int async_fd = -1;
  ipc::Doorbell doorbell;
  Waiter* waiter = nullptr;
};

struct MrKeys {
  uint32_t handle = 0;
  uint32_t lkey = 0;
  uint32_t rkey = 0;
};

struct ChannelRing {
  uint32_t handle = 0;
  int fd = -1;                          // the channel's pollable fd (EFD_SEMAPHORE)
  Mapping map;
  ipc::RingView<ipc::CompEvent> ring;
};

struct CqRing {
  uint32_t handle = 0;
  int cqe = 0;                          // granted
  Mapping map;
  ipc::RingView<ipc::Cqe> ring;
  ipc::CqControl* control = nullptr;
};

struct SrqRing {
  uint32_t handle = 0;
  uint32_t srq_num = 0;                 // the number an XRC initiator names (ibv_get_srq_num)
  ibv_srq_attr granted{};               // max_wr, max_sge
  uint32_t depth = 0;                   // WQEs the ring takes before the consumer frees one
  Mapping map;
  ipc::RingView<ipc::RqWqe> ring;
};

struct QpRequest {
  uint32_t pd = 0;
  ibv_qp_type type = IBV_QPT_RC;
  uint32_t send_cq = 0;
  uint32_t recv_cq = 0;
  uint32_t srq = 0;                     // 0: the QP has its own receive queue
  uint32_t xrcd = 0;                    // IBV_QPT_XRC_RECV: its domain (no PD, CQs or SRQ)
  bool sq_sig_all = false;
  ibv_qp_cap cap{};
};

struct QpRings {
  uint32_t handle = 0;
  uint32_t qp_num = 0;
  ibv_qp_cap cap{};                     // granted
  uint32_t sq_depth = 0;                // WQEs each ring takes (min of cap and ring size)
  uint32_t rq_depth = 0;
  Mapping map;
  ipc::RingView<ipc::SqWqe> sq;
  ipc::RingView<ipc::RqWqe> rq;         // empty with an SRQ
};

// Handles name the backend's objects; each is valid from its create to its destroy. Return
// values are 0 or a positive errno. Thread-safe: the front end calls from any thread.
class Backend {
 public:
  virtual ~Backend() = default;

  virtual int device_info(DeviceInfo* out);
  virtual int query_device(ibv_device_attr* out);
  virtual int query_port(uint8_t port, PortInfo* out);
  virtual int open_context(ContextLinks* out);
  // The next async event (its ibv_event_type and the object handle or port number), after
  // the context's async fd became readable: 0, or EAGAIN when none is there.
  virtual int next_async_event(uint32_t* type, uint32_t* handle);

  virtual int alloc_pd(uint32_t* handle);
  virtual int dealloc_pd(uint32_t handle);
  // `access` without IBV_ACCESS_OPTIONAL_RANGE (the front end strips it).
  virtual int reg_mr(uint32_t pd, uint64_t addr, uint64_t length, uint64_t iova, uint32_t access,
                     MrKeys* out);
  // `flags`: IBV_REREG_MR_CHANGE_*; `pd`, `addr`/`length`, `access` count when flagged.
  virtual int rereg_mr(uint32_t mr, uint32_t flags, uint32_t pd, uint64_t addr, uint64_t length,
                       uint32_t access, MrKeys* out);
  virtual int dereg_mr(uint32_t handle);
  // ibv_advise_mr for one SGE (IBV_ADVISE_MR_ADVICE_*, IBV_ADVISE_MR_FLAG_*).
  virtual int advise_mr(uint32_t pd, uint32_t advice, uint32_t flags, const ibv_sge& sge);
  virtual int alloc_mw(uint32_t pd, ibv_mw_type type, uint32_t* handle, uint32_t* rkey);
  virtual int dealloc_mw(uint32_t handle);
  // Device memory: `out` maps the DM's bytes (the front end's ibv_memcpy_*_dm copy there).
  virtual int alloc_dm(uint64_t length, uint32_t log_align_req, uint32_t* handle, Mapping* out);
  virtual int free_dm(uint32_t handle);
  // `access` with IBV_ACCESS_ZERO_BASED; the MR's addresses are 0..length.
  virtual int reg_dm_mr(uint32_t pd, uint32_t dm, uint64_t offset, uint64_t length, uint32_t access,
                        MrKeys* out);

  virtual int create_comp_channel(ChannelRing* out);
  virtual int destroy_comp_channel(uint32_t handle);
  // `channel` 0: none.
  virtual int create_cq(uint32_t cqe, uint32_t channel, uint32_t comp_vector, CqRing* out);
  virtual int destroy_cq(uint32_t handle);
  // ibv_resize_cq: new ring memory holding the unpolled CQEs (out->handle stays the same).
  virtual int resize_cq(uint32_t handle, uint32_t cqe, CqRing* out);

  virtual int create_srq(uint32_t pd, const ibv_srq_attr& want, SrqRing* out);
  virtual int modify_srq(uint32_t handle, const ibv_srq_attr& attr, int mask);
  virtual int query_srq(uint32_t handle, ibv_srq_attr* out);
  virtual int destroy_srq(uint32_t handle);

  // XRC. open_xrcd: with `inode` false a domain of its own (ibv_open_xrcd's fd -1), else the
  // domain of the file (st_dev, st_ino), shared by every process opening it; `oflags`
  // O_CREAT / O_EXCL. An XRC SRQ has a PD, a domain and the CQ its receives complete on.
  // open_qp: a handle to the XRC target QP `qp_num` of domain `xrcd` (ibv_open_qp).
  virtual int open_xrcd(bool inode, uint64_t st_dev, uint64_t st_ino, uint32_t oflags, uint32_t* handle);
  virtual int close_xrcd(uint32_t handle);
  virtual int create_xrc_srq(uint32_t pd, uint32_t xrcd, uint32_t cq, const ibv_srq_attr& want,
                             SrqRing* out);
  virtual int open_qp(uint32_t xrcd, uint32_t qp_num, QpRings* out);

  virtual int create_qp(const QpRequest& want, QpRings* out);
  virtual int modify_qp(uint32_t handle, const ibv_qp_attr& attr, int mask);
  // Fills `attr` and qp_type/sq_sig_all/cap of `init`; the pointers are the caller's.
  virtual int query_qp(uint32_t handle, int mask, ibv_qp_attr* attr, ibv_qp_init_attr* init);
  virtual int destroy_qp(uint32_t handle);
};

}  // namespace rdmasim::backend
