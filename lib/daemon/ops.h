// The daemon's control operations as typed handlers: one member function of `Ops` per
// ipc::Op, reached through one table (op_table.cpp) that decodes and encodes the bodies.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <map>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "lib/daemon/client.h"
#include "lib/daemon/cm_agent.h"
#include "lib/daemon/event_router.h"
#include "lib/ipc/proto.h"
#include "sim/nic/hca.h"
#include "sim/topo/fabric.h"

namespace rdmasim::daemon {

// The body of a request or response that has none.
struct NoBody {};

// The fds a reply carries, in order. A lent fd stays the daemon's; a passed one is closed
// when this goes away (after the reply was sent, or with an error reply that carries none).
class ReplyFds {
 public:
  ReplyFds() = default;
  ReplyFds(const ReplyFds&) = delete;
  ReplyFds& operator=(const ReplyFds&) = delete;
  ~ReplyFds();
  void lend(int fd) { fds_.push_back(fd); }
  void pass(int fd) {
    fds_.push_back(fd);
    passed_.push_back(fd);
  }
  // A shared mapping for the client: its memfd passed, or, when the map is local (an
  // in-process client), the mapping itself in the fd's place (the fd there is -1). A local
  // mapping stays the handler's: the client neither unmaps nor outlives it.
  void pass_map(SharedMap& m) {
    if (m.local()) lend_map(m.addr(), m.size());
    else pass(m.release_fd());
  }
  void lend_map(void* addr, size_t len) {
    maps_.push_back({fds_.size(), addr, len});
    fds_.push_back(-1);
  }
  std::span<const int> fds() const { return fds_; }
  struct LocalMap {
    size_t index;  // its place among fds()
    void* addr;
    size_t len;
  };
  std::span<const LocalMap> local_maps() const { return maps_; }

 private:
  std::vector<int> fds_, passed_;
  std::vector<LocalMap> maps_;
};

// What a handler produced: the response body's bytes and its fds.
struct Response {
  std::vector<uint8_t> body;
  ReplyFds fds;
};

// Every handler returns 0 or a positive errno: EINVAL for bad values or devices, ENOENT for
// a handle this client does not own (of any kind: each table is keyed by handle), EBUSY
// for an object still in use; errors of the HCA model pass through.
class Ops {
 public:
  struct Services {
    const topo::Fabric& fabric;
    const std::vector<std::unique_ptr<nic::Hca>>& hcas;
    Clients& clients;
    EventRouter& router;
    int global_ro_fd;                       // Hello passes these two, lent
    int wake_fd;
    std::function<std::string()> counters;  // the Counters JSON text
    std::function<void()> stop;             // Shutdown
    CmAgent& cm;                            // rdma_cm
    // An in-process run: the clients live in this process, so their shared memory is
    // plain memory (SharedMap::create_local) and Hello lends `global_page` (this process's
    // mapping of the global page) in place of global_ro_fd.
    bool local_maps = false;
    void* global_page = nullptr;
  };
  explicit Ops(Services s) : s_(std::move(s)) {}

  // Answers one request of c. The table entry of `op` decodes `body` into the handler's
  // request struct (EINVAL when shorter; longer bodies are fields appended by newer
  // clients), calls it and encodes its response into *out. A client without Hello gets
  // EINVAL for anything but Hello, Counters and Shutdown; an unknown op EOPNOTSUPP.
  int dispatch(Client& c, ipc::Op op, std::span<const uint8_t> body, Response* out);
  // Destroys what c still holds, children before parents (on disconnect).
  void destroy_all(Client& c);

  // The handlers, called through the table (op_table.cpp).
  int hello(Client& c, const ipc::HelloReq& r, ipc::HelloResp* out, ReplyFds* fds);
  int query_device(Client& c, const ipc::QueryDeviceReq& r, ipc::QueryDeviceResp* out);
  int query_port(Client& c, const ipc::QueryPortReq& r, ipc::QueryPortResp* out);
  int alloc_pd(Client& c, const ipc::AllocPdReq& r, ipc::HandleResp* out);
  int dealloc_pd(Client& c, const ipc::HandleReq& r, NoBody* out);
  int reg_mr(Client& c, const ipc::RegMrReq& r, ipc::RegMrResp* out);
  int rereg_mr(Client& c, const ipc::ReregMrReq& r, ipc::RegMrResp* out);
  int dereg_mr(Client& c, const ipc::HandleReq& r, NoBody* out);
  int advise_mr(Client& c, const ipc::AdviseMrReq& r, NoBody* out);
  int alloc_mw(Client& c, const ipc::AllocMwReq& r, ipc::AllocMwResp* out);
  int dealloc_mw(Client& c, const ipc::HandleReq& r, NoBody* out);
  // Device memory (ops_dm.cpp).
  int alloc_dm(Client& c, const ipc::AllocDmReq& r, ipc::HandleResp* out, ReplyFds* fds);
  int free_dm(Client& c, const ipc::HandleReq& r, NoBody* out);
  int reg_dm_mr(Client& c, const ipc::RegDmMrReq& r, ipc::RegMrResp* out);
  int create_comp_channel(Client& c, const ipc::CreateCompChannelReq& r,
                          ipc::CreateCompChannelResp* out, ReplyFds* fds);
  int destroy_comp_channel(Client& c, const ipc::HandleReq& r, NoBody* out);
  int create_cq(Client& c, const ipc::CreateCqReq& r, ipc::CreateCqResp* out, ReplyFds* fds);
  int destroy_cq(Client& c, const ipc::HandleReq& r, NoBody* out);
  int resize_cq(Client& c, const ipc::ResizeCqReq& r, ipc::CreateCqResp* out, ReplyFds* fds);
  int create_srq(Client& c, const ipc::CreateSrqReq& r, ipc::CreateSrqResp* out, ReplyFds* fds);
  int modify_srq(Client& c, const ipc::ModifySrqReq& r, NoBody* out);
  int query_srq(Client& c, const ipc::HandleReq& r, ipc::QuerySrqResp* out);
  int destroy_srq(Client& c, const ipc::HandleReq& r, NoBody* out);
  int create_qp(Client& c, const ipc::CreateQpReq& r, ipc::CreateQpResp* out, ReplyFds* fds);
  int modify_qp(Client& c, const ipc::ModifyQpReq& r, NoBody* out);
  int query_qp(Client& c, const ipc::QueryQpReq& r, ipc::QueryQpResp* out);
  int destroy_qp(Client& c, const ipc::HandleReq& r, NoBody* out);
  // XRC (ops_xrc.cpp): domains shared through a file, and XRC target QPs, which live while
  // any client holds a handle to them (the creator's or one ibv_open_qp gave).
  int open_xrcd(Client& c, const ipc::OpenXrcdReq& r, ipc::HandleResp* out);
  int close_xrcd(Client& c, const ipc::HandleReq& r, NoBody* out);
  int open_qp(Client& c, const ipc::OpenQpReq& r, ipc::CreateQpResp* out, ReplyFds* fds);
  int counters(Client& c, const NoBody& r, NoBody* out, ReplyFds* fds);
  int shutdown(Client& c, const NoBody& r, NoBody* out);
  // rdma_cm (ops_cm.cpp): each forwards to the CmAgent.
  int cm_create_channel(Client& c, const NoBody& r, ipc::CmChannelResp* out, ReplyFds* fds);
  int cm_destroy_channel(Client& c, const ipc::HandleReq& r, NoBody* out);
  int cm_create_id(Client& c, const ipc::CmCreateIdReq& r, ipc::HandleResp* out);
  int cm_destroy_id(Client& c, const ipc::CmIdReq& r, NoBody* out);
  int cm_bind(Client& c, const ipc::CmBindReq& r, ipc::CmAddrResp* out);
  int cm_listen(Client& c, const ipc::CmListenReq& r, NoBody* out);
  int cm_resolve_addr(Client& c, const ipc::CmResolveAddrReq& r, ipc::CmAddrResp* out);
  int cm_resolve_route(Client& c, const ipc::CmIdReq& r, ipc::CmPath* out);
  int cm_connect(Client& c, const ipc::CmConnectReq& r, NoBody* out);
  int cm_accept(Client& c, const ipc::CmConnectReq& r, NoBody* out);
  int cm_reject(Client& c, const ipc::CmConnectReq& r, NoBody* out);
  int cm_establish(Client& c, const ipc::CmIdReq& r, NoBody* out);
  int cm_disconnect(Client& c, const ipc::CmIdReq& r, NoBody* out);
  int cm_get_event(Client& c, const ipc::HandleReq& r, ipc::CmEventResp* out);

 private:
  nic::Hca& hca(size_t dev) const { return *s_.hcas[dev]; }
  // A QP handle goes away: the HCA's QP is destroyed unless it is an XRC target another
  // handle still holds. 0 or the HCA's errno.
  int release_qp(Client& c, uint32_t handle, const Qp& qp);
  void release_xrcd(const Xrcd& x);

  Services s_;
  // The domains opened through files, by (device, st_dev, st_ino): the HCA's id and how
  // many client handles name it; and the handles to each XRC target QP, by (device, QPN).
  struct SharedXrcd {
    uint32_t xrcd = 0;
    uint32_t opens = 0;
  };
  std::map<std::tuple<size_t, uint64_t, uint64_t>, SharedXrcd> shared_xrcds_;
  std::map<std::pair<size_t, uint32_t>, uint32_t> xrc_target_refs_;
};

}  // namespace rdmasim::daemon
