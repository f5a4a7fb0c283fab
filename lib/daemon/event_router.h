// Event routing: the model's completions to CQ rings and completion channels, its async
// events to the async ring of the client that owns the object, by the owner maps
// (device, qpn / cq / srqn) -> (client, handle).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <utility>

#include "lib/daemon/client.h"
#include "sim/core/engine.h"
#include "sim/nic/types.h"

namespace rdmasim::daemon {

struct RouterStats {
  uint64_t cqes_written = 0, cq_overruns = 0, comp_events = 0, async_events = 0;
};

class EventRouter {
 public:
  // The model's ids that async events name.
  enum class Kind { Qp, Cq, Srq };

  // `engine` stamps each CQE with its simulated time (ipc::Cqe::time_ps).
  EventRouter(Clients& clients, const Engine& engine) : clients_(clients), engine_(engine) {}

  // Writes `comp` into CQ `cq_handle` of client `client` (gone client or CQ: dropped).
  // Ring full: the CQE is dropped, CqControl::overrun set and IBV_EVENT_CQ_ERR raised once.
  // An armed CQ with a channel gets one channel event (armed 1: any completion; 2: a
  // solicited receive or an error, ibv_req_notify_cq(3)).
  void deliver(uint32_t client, uint32_t cq_handle, const nic::Completion& comp);
  // Routes an HCA's async event: QP / CQ / SRQ events to their owner, device and port
  // events to every client using device `dev`.
  void on_async(size_t dev, const nic::AsyncEvent& ev);
  // Appends (type, handle) to c's async ring and signals its eventfd; a full ring (a client
  // that does not read its events) drops the event.
  void push_async(Client& c, uint32_t type, uint32_t handle);

  // The owner maps: model object `id` of device `dev` belongs to (client, handle).
  void own(Kind kind, size_t dev, uint32_t id, uint32_t client, uint32_t handle) {
    owners_[index(kind)][{dev, id}] = {client, handle};
  }
  void disown(Kind kind, size_t dev, uint32_t id) { owners_[index(kind)].erase({dev, id}); }

  const RouterStats& stats() const { return stats_; }

  // Called with the client's id after each CQE written for it and each write to one of its
  // eventfds (a completion channel's or the async one): the in-process runtime wakes the
  // fiber waiting for it.
  void set_signal_hook(std::function<void(uint32_t client)> hook) { on_signal_ = std::move(hook); }

 private:
  using Owners = std::map<std::pair<size_t, uint32_t>, std::pair<uint32_t, uint32_t>>;
  static size_t index(Kind k) { return static_cast<size_t>(k); }
  void notify_channel(Client& c, uint32_t channel, uint32_t cq_handle);

  Clients& clients_;
  const Engine& engine_;
  Owners owners_[3];
  RouterStats stats_;
  std::function<void(uint32_t)> on_signal_;
};

}  // namespace rdmasim::daemon
