// The daemon backend: each operation is one request to the fabric daemon over the process's
// DaemonClient connection; the queues' rings come back as memfds mapped here (in-process:
// as the handlers' own memory, lent, see Reply::maps).
#pragma once

#include <memory>
#include <vector>

#include "lib/backend/backend.h"
#include "lib/backend/daemon_client.h"

namespace rdmasim::backend {

// One simulated device of the daemon. Per device (not per context) because a program
// lists and queries devices before it opens any, and all of them share one connection.
class DaemonBackend final : public Backend {
 public:
  DaemonBackend(DaemonClient& client, uint32_t dev_index) : client_(client), dev_(dev_index) {}

  int device_info(DeviceInfo* out) override;
  int query_device(ibv_device_attr* out) override;
  int query_port(uint8_t port, PortInfo* out) override;
  int open_context(ContextLinks* out) override;
  int next_async_event(uint32_t* type, uint32_t* handle) override;
  int alloc_pd(uint32_t* handle) override;
  int dealloc_pd(uint32_t handle) override;
  int reg_mr(uint32_t pd, uint64_t addr, uint64_t length, uint64_t iova, uint32_t access,
             MrKeys* out) override;
  int rereg_mr(uint32_t mr, uint32_t flags, uint32_t pd, uint64_t addr, uint64_t length,
               uint32_t access, MrKeys* out) override;
  int dereg_mr(uint32_t handle) override;
  int alloc_mw(uint32_t pd, ibv_mw_type type, uint32_t* handle, uint32_t* rkey) override;
  int dealloc_mw(uint32_t handle) override;
  int create_comp_channel(ChannelRing* out) override;
  int destroy_comp_channel(uint32_t handle) override;
  int create_cq(uint32_t cqe, uint32_t channel, uint32_t comp_vector, CqRing* out) override;
  int resize_cq(uint32_t handle, uint32_t cqe, CqRing* out) override;
  int alloc_dm(uint64_t length, uint32_t log_align_req, uint32_t* handle, Mapping* out) override;
  int free_dm(uint32_t handle) override;
  int advise_mr(uint32_t pd, uint32_t advice, uint32_t flags, const ibv_sge& sge) override;
  int reg_dm_mr(uint32_t pd, uint32_t dm, uint64_t offset, uint64_t length, uint32_t access,
                MrKeys* out) override;
  int destroy_cq(uint32_t handle) override;
  int create_srq(uint32_t pd, const ibv_srq_attr& want, SrqRing* out) override;
  int modify_srq(uint32_t handle, const ibv_srq_attr& attr, int mask) override;
  int query_srq(uint32_t handle, ibv_srq_attr* out) override;
  int destroy_srq(uint32_t handle) override;
  int create_qp(const QpRequest& want, QpRings* out) override;
  int modify_qp(uint32_t handle, const ibv_qp_attr& attr, int mask) override;
  int query_qp(uint32_t handle, int mask, ibv_qp_attr* attr, ibv_qp_init_attr* init) override;
  int destroy_qp(uint32_t handle) override;
  int open_xrcd(bool inode, uint64_t st_dev, uint64_t st_ino, uint32_t oflags, uint32_t* handle) override;
  int close_xrcd(uint32_t handle) override;
  int create_xrc_srq(uint32_t pd, uint32_t xrcd, uint32_t cq, const ibv_srq_attr& want,
                     SrqRing* out) override;
  int open_qp(uint32_t xrcd, uint32_t qp_num, QpRings* out) override;

 private:
  int destroy(ipc::Op op, uint32_t handle);
  // CreateSrq / CreateQp or OpenQp and the mapping of the rings their reply's fd holds.
  int srq_call(const ipc::CreateSrqReq& req, const ibv_srq_attr& want, SrqRing* out);
  int qp_call(ipc::Op op, const void* req, size_t req_len, QpRings* out);

  DaemonClient& client_;
  uint32_t dev_;
};

// One backend per device of the process's daemon connection (DaemonClient::get():
// connects, starting the daemon if nobody answers). 0, or the connection's errno.
int daemon_devices(std::vector<std::unique_ptr<Backend>>* out);

}  // namespace rdmasim::backend
