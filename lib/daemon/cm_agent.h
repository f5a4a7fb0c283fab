// The daemon's connection manager (rdma_cm): event channels, ids, listeners and the
// REQ/REP/RTU/REJ/DREQ exchange between the ids of its clients. The QPs themselves are
// moved through INIT/RTR/RTS by the clients (librdmacm.so.1) with what the events carry,
// as rdma-core's librdmacm does with the kernel's answers.
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <utility>

#include "lib/daemon/client.h"
#include "lib/ipc/proto.h"
#include "sim/topo/fabric.h"

namespace rdmasim::daemon {

class CmAgent {
 public:
  CmAgent(Clients& clients, const topo::Fabric& fabric) : clients_(clients), fabric_(fabric) {}
  ~CmAgent();
  CmAgent(const CmAgent&) = delete;
  CmAgent& operator=(const CmAgent&) = delete;

  // Each returns 0 or a positive errno: ENOENT for a handle c does not own, EINVAL for a
  // call in the wrong state, EADDRINUSE / EADDRNOTAVAIL for bind and listen.
  int create_channel(Client& c, uint32_t* handle, int* efd);
  int destroy_channel(Client& c, uint32_t handle);
  int create_id(Client& c, const ipc::CmCreateIdReq& r, uint32_t* handle);
  int destroy_id(Client& c, uint32_t id);
  int bind(Client& c, const ipc::CmBindReq& r, ipc::CmAddrResp* out);
  int listen(Client& c, const ipc::CmListenReq& r);
  int resolve_addr(Client& c, const ipc::CmResolveAddrReq& r, ipc::CmAddrResp* out);
  int resolve_route(Client& c, const ipc::CmIdReq& r, ipc::CmPath* out);
  int connect(Client& c, const ipc::CmConnectReq& r);
  int accept(Client& c, const ipc::CmConnectReq& r);
  int reject(Client& c, const ipc::CmConnectReq& r);
  int establish(Client& c, const ipc::CmIdReq& r);
  int disconnect(Client& c, const ipc::CmIdReq& r);
  int get_event(Client& c, uint32_t channel, ipc::CmEventResp* out);
  // How many ids listen now (the daemon's counters: cm_listeners).
  size_t listeners() const;
  // The client went away: its connected peers get DISCONNECTED, its ids and channels go.
  void drop_client(Client& c);

 private:
  using Key = std::pair<uint32_t, uint32_t>;  // (client id, handle)
  enum class State { Idle, AddrResolved, RouteResolved, Listen, ReqSent, ReqRcvd, RepSent,
                     RepRcvd, Connected, Disconnected };
  struct Id {
    uint32_t channel = 0;
    uint32_t ps = 0, qp_type = 0;
    State state = State::Idle;
    bool bound = false;
    size_t nic = SIZE_MAX;          // fabric NIC of the id's device; SIZE_MAX: any (unbound)
    size_t peer_nic = SIZE_MAX;
    ipc::CmEndpoint src{}, dst{};
    Key peer{0, 0};                 // the other end of the connection, once there is one
  };
  struct Channel {
    int efd = -1;
    std::deque<ipc::CmEventResp> events;
  };

  Id* find(const Client& c, uint32_t id);
  Id* find(Key k);
  // The fabric NIC whose host answers to `ip` (HostNic::ip or its IPv4 fabric address).
  size_t nic_of_ip(uint32_t ip_net) const;
  size_t host_nic(const Client& c, uint32_t ip_net) const;
  uint32_t dev_index(const Client& c, size_t nic) const;
  void fill_path(const Client& c, const Id& id, ipc::CmPath* out) const;
  bool port_in_use(const std::string& host, uint32_t ps, uint16_t port) const;
  const std::string& host_of(uint32_t client) const;
  void post(Key id, uint32_t event, int32_t status, const ipc::CmConnParam* param = nullptr,
            uint32_t listen_id = 0);
  // The peer of a connected (or connecting) id learns that it is gone.
  void break_peer(const Id& id, uint32_t event, int32_t status);

  Clients& clients_;
  const topo::Fabric& fabric_;
  std::map<Key, Id> ids_;
  std::map<Key, Channel> channels_;
  uint16_t next_port_ = 0;
};

}  // namespace rdmasim::daemon
