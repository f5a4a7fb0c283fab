// The drop-in librdmacm's own state: the daemon connection (a DaemonClient of its own, on
// the same simulated host as the process's libibverbs one), the devices it opened through
// the drop-in libibverbs, and the wrappers around rdma_event_channel and rdma_cm_id.
// In a fiber of an in-process run (lib/inproc) each simulated process has its own Cm, kept
// in its host's rdmacm slot, whose calls are simcalls (backend::InprocClient) and whose
// event waits let virtual time move (the host's Waiter).
#pragma once

#include <rdma/rdma_cma.h>

#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <random>
#include <vector>

#include "lib/backend/daemon_client.h"
#include "lib/backend/inproc_backend.h"
#include "lib/ipc/proto.h"

namespace rdmasim::rdmacm {

struct Channel {
  rdma_event_channel ch;  // first: the program's pointer is ours
  uint32_t handle;
};

struct Id {
  rdma_cm_id id;          // first: container_of by cast
  uint32_t handle = 0;
  bool sync = false;      // created with no channel: calls wait for their own events
  ipc::CmPath path{};
  ibv_sa_path_rec path_rec{};
  ipc::CmConnParam peer{};      // the peer's REQ (passive side) or REP (active side)
  uint32_t psn = 0;
  uint8_t responder_resources = 0, initiator_depth = 0, retry = 7, rnr_retry = 7;
  bool own_cqs = false;
  bool has_qp_attr = false;     // rdma_create_ep on a listener: children get this QP
  // Events handed to the program on this id (a CONNECT_REQUEST counts on its listener, as
  // librdmacm counts it) and acked; guarded by Cm's event lock (Cm::reported/acked).
  uint32_t events_reported = 0, events_acked = 0;
  ibv_qp_init_attr qp_attr{};
  ibv_pd* ep_pd = nullptr;
};

struct Event {
  rdma_cm_event ev;       // first
  uint32_t counted = 0;   // the handle of the id whose events_reported counts this event
  uint8_t private_data[ipc::kCmPrivateData];
};

// The process-wide state; every call takes mu for the id table and devices, never across
// a blocking wait for an event.
class Cm {
 public:
  // The process's Cm: the running fiber's simulated process's in an in-process run, else
  // the one of this (real) process.
  static Cm& get();
  // 0, or the errno of reaching the daemon.
  int init();
  int call(ipc::Op op, const void* req, size_t len, void* resp = nullptr, size_t resp_len = 0,
           int* fds = nullptr, int max_fds = 0, int* nfds = nullptr);
  // The opened context and default PD of device `dev` (Hello's order), opened on first use.
  ibv_context* context(uint32_t dev);
  ibv_pd* pd(ibv_context* ctx);
  ibv_context** contexts(int* n);
  void add(Id* id);
  void remove(Id* id);
  Id* find(uint32_t handle);
  // rdma_destroy_id waits until every event reported on the id is acked, as librdmacm
  // does (so a program's CM thread is done with the id's last event before it goes).
  void reported(Id* id);
  void acked(uint32_t handle);
  void wait_acked(Id* id);
  // In-process: what a blocking wait goes through (nullptr under the daemon).
  backend::Waiter* waiter() const { return host_; }
  // A connection's starting PSN (24 bits): random under the daemon, as the kernel's CM
  // draws it; in-process from a stream seeded by the host's name, so runs repeat bit for bit.
  uint32_t next_psn();

 private:
  Cm() = default;
  explicit Cm(backend::InprocHost* host) : host_(host) {}

  std::mutex mu_;
  std::mutex ev_mu_;                 // events_reported / events_acked of every id
  std::condition_variable ev_cv_;
  bool ready_ = false;
  backend::InprocHost* host_ = nullptr;
  std::unique_ptr<backend::DaemonClient> own_client_;   // in-process: the simcall channel
  backend::DaemonClient* client_ = nullptr;
  std::minstd_rand psn_rng_{1};
  bool psn_seeded_ = false;
  ibv_device** devs_ = nullptr;
  int ndevs_ = 0;
  std::vector<ibv_context*> ctxs_;
  std::vector<ibv_pd*> pds_;
  std::vector<Id*> ids_;
};

// Sets errno to err and returns -1 (rdma-core's ERR()).
inline int fail(int err) {
  errno = err;
  return -1;
}

// QP transitions done by the CM (cm_qp.cpp): 0 or an errno.
int qp_to_init(Id* id);
int qp_to_rtr_rts(Id* id, uint32_t peer_qpn, uint32_t peer_psn);
int qp_to_err(Id* id);
void ah_from_path(const Id* id, ibv_ah_attr* ah);
// Waits on a sync id's own channel for `want` (0 on it; else the errno its status means).
int wait_sync(Id* id, rdma_cm_event_type want);

}  // namespace rdmasim::rdmacm
