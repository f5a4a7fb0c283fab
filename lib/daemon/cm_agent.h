// The daemon's connection manager (rdma_cm): event channels, ids, listeners, and the CM
// protocol between hosts. Each simulated host's CM speaks through its ports' QP1: the REQ,
// REP, RTU, REJ, DREQ, DREP and SIDR REQ/REP are CM MADs (lib/daemon/cm_mad.h) sent as UD
// packets on the fabric (nic::Hca::send_gsi), so they take the fabric's time, can be lost
// and show in captures; a REQ, REP, DREQ or SIDR REQ is resent when its answer does not come
// within 2 x packet lifetime + the CM response timeout, at most max_retries times
// (topo::HostNic::cm), then the id gets UNREACHABLE (or DISCONNECTED after a DREQ) with
// -ETIMEDOUT. On iWARP (no QP1) the CM speaks TCP instead (cm_iwarp.cpp): SYN, SYN-ACK, then
// the MPA Request and Reply of RFC 5044 with the private data, FIN or RST at the end, as
// segments on the fabric (nic::Hca::send_iwarp_cm); the QPs continue the CM's stream.
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
#include <tuple>
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
    // iWARP (cm_iwarp.cpp): the CM's TCP connection (host-order ports), the QP that takes
    // the stream over, the private data of the MPA Request to send, the segment awaiting
    // its answer (resent by the timer) and a passive side's Reply (resent for a repeated
    // Request).
    struct Tcp {
      uint16_t lport = 0, rport = 0;
      uint32_t iss = 0, irs = 0, snd_nxt = 0, rcv_nxt = 0;
      bool synced = false;  // the SYN-ACK came (active) / the Request came (passive)
      bool last_ack = false;  // our FIN went after the peer's (TCP's LAST-ACK)
      uint32_t qpn = 0;
    } tcp;
    std::vector<uint8_t> mpa_private;
    std::optional<nic::IwarpCmSegment> iw_pending, iw_reply;
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
  // A new passive id under `listener` (in the listener's client, on its channel), for a
  // request that reached `nic` from `from`, with these addresses; in state ReqRcvd.
  std::pair<Key, Id&> passive_child(Key listener, size_t nic, size_t from, const ipc::CmEndpoint& src,
                                    const ipc::CmEndpoint& dst);
  uint32_t new_comm_id(Key k);
  uint32_t ip_of(size_t nic) const;  // the IPv4 address (network order) rdma_cm names a NIC by

  // --- cm_iwarp.cpp: the same ids over a TCP handshake and the MPA exchange (RFC 5044) ---
  bool iwarp(const Id& id) const;
  int iw_connect(Key k, Id& id, const ipc::CmConnectReq& r);
  int iw_accept(Key k, Id& id, const ipc::CmConnectReq& r);
  int iw_reject(Key k, Id& id, const ipc::CmConnectReq& r);
  int iw_disconnect(Key k, Id& id);
  void iw_leave(Id& id);
  // The id goes but its close is not finished (our FIN went): iw_closing_ finishes it;
  // `peer_fin`: ours answered the peer's FIN (LAST-ACK).
  void iw_linger(Id& id, bool peer_fin);
  void on_iw(size_t nic, const nic::IwarpCmSegment& s);
  // The id listening for iWARP connections to `port` of `nic` (Key{} when none).
  Key iw_listener(size_t nic, uint16_t port) const;
  void iw_on_syn(size_t nic, size_t from, const nic::IwarpCmSegment& s);
  void iw_on_request(size_t nic, size_t from, const nic::IwarpCmSegment& s);
  void iw_on_reply(Key k, Id& id, const nic::IwarpCmSegment& s);
  void iw_on_fin(Key k, Id& id, const nic::IwarpCmSegment& s);
  void iw_on_rst(Key k, Id& id);
  void iw_on_timer(Key k, Id& id);
  Key iw_find(size_t nic, size_t from, uint16_t lport, uint16_t rport) const;
  // A segment of id's connection (ports, ack) with `flags` at sequence `seq`.
  nic::IwarpCmSegment iw_segment(const Id& id, uint8_t flags, uint32_t seq) const;
  uint32_t iw_sync(Id& id) const;  // the stream's next sequence numbers (the QP's, if bound); snd_nxt
  bool iw_transmit(size_t nic, size_t to, nic::IwarpCmSegment s);
  void iw_send(Key k, Id& id, const nic::IwarpCmSegment& s, bool retry);
  uint32_t new_iss(size_t nic, uint16_t lport, uint16_t rport);

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
  // iWARP: half-open connections (SYN answered, no MPA Request yet) by (nic, peer nic,
  // local port, peer port): ISS and IRS.
  std::map<std::tuple<size_t, size_t, uint16_t, uint16_t>, std::pair<uint32_t, uint32_t>> iw_half_open_;
  // iWARP: connections whose id was destroyed after its FIN went (iw_cm's destroy in
  // CLOSING does not abort; the endpoint finishes the close without the id). `seq` is the
  // sequence number after our FIN. Waiting for the peer's FIN (FIN-WAIT), the FIN is ACKed
  // and ends it; after the peer's FIN (`peer_fin`, LAST-ACK), the ACK of our FIN ends it
  // and a repeated peer FIN gets our FIN again; a RST ends either. Same key as
  // iw_half_open_.
  struct Closing {
    uint32_t seq = 0;
    bool peer_fin = false;
  };
  std::map<std::tuple<size_t, size_t, uint16_t, uint16_t>, Closing> iw_closing_;
  uint32_t iss_count_ = 0;
  CmCounters counters_;
  std::function<void(uint32_t client)> on_event_;
};

}  // namespace rdmasim::daemon
