// The daemon's connection manager (rdma_cm): event channels, ids, listeners, and the CM
// protocol between hosts. Each simulated host's CM speaks through its ports' QP1: the REQ,
// REP, RTU, REJ, DREQ, DREP and SIDR REQ/REP are CM MADs (lib/daemon/cm_mad.h) sent as UD
// packets on the fabric (nic::Hca::send_gsi), so they take the fabric's time, can be lost
// and show in captures; a REQ, REP, DREQ or SIDR REQ is resent when its answer does not come
// within 2 x packet lifetime + the CM response timeout, at most max_retries times
// (topo::HostNic::cm), then the id gets UNREACHABLE (or DISCONNECTED after a DREQ) with
// -ETIMEDOUT. On iWARP (no QP1) the messages are handed to the peer CM inside the agent.
// The QPs themselves are moved through INIT/RTR/RTS by the clients (librdmacm.so.1) with
// what the events carry, as rdma-core's librdmacm does with the kernel's answers.
//
// Engine context: every call (the daemon's loop and the in-process runtime's maestro both
// run the engine and call the Ops between events); events are queued on the channels'
// eventfds, never waited for here.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <utility>
#include <vector>

#include "lib/daemon/client.h"
#include "lib/daemon/cm_mad.h"
#include "lib/ipc/proto.h"
#include "sim/core/engine.h"
#include "sim/nic/hca.h"
#include "sim/topo/fabric.h"

namespace rdmasim::daemon {

struct CmCounters {
  uint64_t mads_sent = 0, mads_received = 0, resent = 0, timeouts = 0;
};

class CmAgent {
 public:
  // Installs itself as the GSI sink of every HCA (removed again by the destructor).
  CmAgent(Clients& clients, const topo::Fabric& fabric, Engine& engine,
          const std::vector<std::unique_ptr<nic::Hca>>& hcas);
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
  int connect(Client& c, const ipc::CmConnectReq& r);   // sends the REQ (UD: SIDR REQ)
  int accept(Client& c, const ipc::CmConnectReq& r);    // the REP (UD: SIDR REP)
  int reject(Client& c, const ipc::CmConnectReq& r);    // the REJ, reason 28
  int establish(Client& c, const ipc::CmIdReq& r);      // the RTU
  int disconnect(Client& c, const ipc::CmIdReq& r);     // the DREQ, or the DREP to one
  int get_event(Client& c, uint32_t channel, ipc::CmEventResp* out);
  // How many ids listen now (the daemon's counters: cm_listeners).
  size_t listeners() const;
  const CmCounters& counters() const { return counters_; }
  // The client went away: its ids leave as destroy_id leaves them (a connected one sends a
  // DREQ, so the peer gets DISCONNECTED), its channels close.
  void drop_client(Client& c);
  // Called with the client's id after an event is queued on one of its channels (the
  // in-process runtime wakes a fiber waiting on the channel's fd; the daemon needs none:
  // its clients wait in the kernel).
  void set_event_hook(std::function<void(uint32_t client)> hook) { on_event_ = std::move(hook); }

 private:
  using Key = std::pair<uint32_t, uint32_t>;  // (client id, handle)
  enum class State { Idle, AddrResolved, RouteResolved, Listen, ReqSent, ReqRcvd, RepSent,
                     RepRcvd, Connected, DreqSent, DreqRcvd, Disconnected };
  struct Id {
    uint32_t channel = 0;
    uint32_t ps = 0, qp_type = 0;
    State state = State::Idle;
    bool bound = false;
    size_t nic = SIZE_MAX;          // fabric NIC of the id's device; SIZE_MAX: any (unbound)
    size_t peer_nic = SIZE_MAX;
    ipc::CmEndpoint src{}, dst{};
    uint32_t comm_id = 0;           // local communication ID (SIDR: the request ID)
    uint32_t remote_comm_id = 0;
    uint32_t listen_handle = 0;     // a passive id: its listener (CONNECT_REQUEST's listen_id)
    uint32_t peer_qpn = 0;
    // The message waiting for its answer, resent by the timer.
    std::optional<cm::Message> pending;
    Time wait = 0;
    int retries_left = 0;
    EventId timer;
    uint64_t timer_gen = 0;
  };
  struct Channel {
    int efd = -1;
    std::deque<ipc::CmEventResp> events;
  };

  // --- cm_agent.cpp: ids, addresses, events ---
  Id* find(const Client& c, uint32_t id);
  Id* find(Key k);
  // The fabric NIC whose host answers to `ip` (HostNic::ip or its IPv4 fabric address).
  size_t nic_of_ip(uint32_t ip_net) const;
  size_t nic_of_address(net::Address a) const;  // HostNic::address (LID on IB)
  size_t host_nic(const Client& c, uint32_t ip_net) const;
  uint32_t dev_index(const Client& c, size_t nic) const;
  void fill_path(const Client& c, const Id& id, ipc::CmPath* out) const;
  bool port_in_use(const std::string& host, uint32_t ps, uint16_t port) const;
  const std::string& host_of(uint32_t client) const;
  void post(Key id, uint32_t event, int32_t status, const ipc::CmConnParam* param = nullptr,
            uint32_t listen_id = 0);
  void forget(Key k);  // erases the id, its timer and its communication ID

  // --- cm_exchange.cpp: the CM protocol ---
  void on_gsi(size_t nic, const nic::GsiDatagram& d);
  void on_message(size_t nic, size_t from, const cm::Message& m);
  void on_req(size_t nic, size_t from, const cm::Message& m);
  void on_sidr_req(size_t nic, size_t from, const cm::Message& m);
  void on_answer(Key k, Id& id, const cm::Message& m);  // REP, RTU, REJ, DREQ, DREP, SIDR REP
  // Sends m from `nic` to `to`; false when it could not leave (the port is down).
  bool transmit(size_t nic, size_t to, const cm::Message& m);
  // Sends m for id and, when `retry`, keeps it to resend until cancel_retry().
  void send(Key k, Id& id, const cm::Message& m, bool retry);
  void cancel_retry(Id& id);
  void on_timer(Key k, uint64_t gen);
  // The id goes away (destroy, a departing client): REJ / DREQ / DREP as its state asks.
  void leave(Key k, Id& id);
  cm::Message reply_to(const Id& id, cm::Attr attr) const;
  Key listener_for(size_t nic, uint32_t ps, uint16_t port_net) const;
  Key by_remote(size_t nic, size_t from, uint32_t remote_comm_id) const;
  uint32_t new_comm_id(Key k);

  Clients& clients_;
  const topo::Fabric& fabric_;
  Engine& engine_;
  const std::vector<std::unique_ptr<nic::Hca>>& hcas_;
  std::shared_ptr<int> alive_ = std::make_shared<int>(0);  // timers do nothing once the agent is gone
  std::map<Key, Id> ids_;
  std::map<Key, Channel> channels_;
  std::map<uint32_t, Key> by_comm_;
  uint32_t next_comm_id_ = 0x1000;
  uint16_t next_port_ = 0;
  CmCounters counters_;
  std::function<void(uint32_t client)> on_event_;
};

}  // namespace rdmasim::daemon
