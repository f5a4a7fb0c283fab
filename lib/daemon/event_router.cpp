// Event routing: completions, channel events, async events.
#include "lib/daemon/event_router.h"

#include <unistd.h>

#include <atomic>
#include <cstring>

#include "lib/daemon/wire.h"

namespace rdmasim::daemon {

namespace {
void signal_eventfd(int fd) {
  uint64_t one = 1;
  ssize_t r = ::write(fd, &one, sizeof one);
  (void)r;
}
}  // namespace

void EventRouter::deliver(uint32_t client, uint32_t cq_handle, const nic::Completion& comp) {
  auto cit = clients_.find(client);
  if (cit == clients_.end()) return;  // the client is gone; its completions vanish
  Client& c = *cit->second;
  auto it = c.cqs.find(cq_handle);
  if (it == c.cqs.end()) return;
  Cq& cq = it->second;
  const uint32_t cons = cq.ring.header()->consumer.load(std::memory_order_acquire);
  if (cq.prod - cons >= cq.ring.size()) {
    stats_.cq_overruns++;
    if (cq.ctl->overrun.exchange(1, std::memory_order_acq_rel) == 0)
      push_async(c, static_cast<uint32_t>(nic::AsyncEventType::CqErr), cq_handle);
    return;
  }
  uint32_t srq_handle = 0;
  if (comp.srqn != 0) {
    const Owners& srqs = owners_[index(Kind::Srq)];
    if (auto s = srqs.find({cq.dev, comp.srqn}); s != srqs.end() && s->second.first == client)
      srq_handle = s->second.second;
  }
  ipc::Cqe& slot = cq.ring.slot(cq.prod);
  ipc::Cqe tmp{};
  to_cqe(comp, srq_handle, &tmp);
  tmp.time_ps = static_cast<uint64_t>(engine_.now());
  tmp.seq = slot.seq;  // keep the old seq until the body is written
  std::memcpy(&slot, &tmp, sizeof tmp);
  std::atomic_ref<uint32_t>(slot.seq).store(cq.prod + 1, std::memory_order_release);
  cq.prod++;
  cq.ring.header()->producer.store(cq.prod, std::memory_order_release);
  stats_.cqes_written++;
  // The other half of req_notify_cq's fence: the CQE is visible before `armed` is read,
  // so a client that armed and then polled either sees this CQE or gets an event.
  std::atomic_thread_fence(std::memory_order_seq_cst);
  // Arm: 1 = any completion, 2 = solicited only: ibv_req_notify_cq(3) — the next
  // solicited receive completion or any completion with an error (IBTA 11.4.2.2).
  uint32_t armed = cq.ctl->armed.load(std::memory_order_acquire);
  const bool fire = armed == 1 || (armed == 2 && ((!comp.is_send && comp.solicited) ||
                                                  comp.status != nic::WcStatus::Success));
  if (fire && cq.ctl->armed.compare_exchange_strong(armed, 0, std::memory_order_acq_rel) && cq.channel)
    notify_channel(c, cq.channel, cq_handle);
  if (on_signal_) on_signal_(c.id);
}

void EventRouter::notify_channel(Client& c, uint32_t channel, uint32_t cq_handle) {
  auto ch = c.channels.find(channel);
  if (ch == c.channels.end()) return;
  Channel& chan = ch->second;
  const uint32_t ccons = chan.ring.header()->consumer.load(std::memory_order_acquire);
  if (chan.prod - ccons < chan.ring.size()) {
    ipc::CompEvent& ev = chan.ring.slot(chan.prod);
    ev.cq_handle = cq_handle;
    std::atomic_ref<uint32_t>(ev.seq).store(chan.prod + 1, std::memory_order_release);
    chan.prod++;
    chan.ring.header()->producer.store(chan.prod, std::memory_order_release);
  }
  signal_eventfd(chan.efd);
  stats_.comp_events++;
  if (on_signal_) on_signal_(c.id);
}

void EventRouter::push_async(Client& c, uint32_t type, uint32_t handle) {
  if (!c.page_ok()) return;
  ipc::RingView<ipc::AsyncEventSlot> ring(&c.page()->async_ring_hdr, kAsyncSlots);
  const uint32_t cons = ring.header()->consumer.load(std::memory_order_acquire);
  if (c.async_prod - cons >= ring.size()) return;  // the client does not read its events
  ipc::AsyncEventSlot& s = ring.slot(c.async_prod);
  s.event_type = type;
  s.handle = handle;
  s.pad = 0;
  std::atomic_ref<uint32_t>(s.seq).store(c.async_prod + 1, std::memory_order_release);
  c.async_prod++;
  ring.header()->producer.store(c.async_prod, std::memory_order_release);
  signal_eventfd(c.async_efd);
  stats_.async_events++;
  if (on_signal_) on_signal_(c.id);
}

void EventRouter::on_async(size_t dev, const nic::AsyncEvent& ev) {
  using T = nic::AsyncEventType;
  const uint32_t type = static_cast<uint32_t>(ev.type);
  auto send_to = [&](Kind kind, uint32_t id) {
    const Owners& owners = owners_[index(kind)];
    auto it = owners.find({dev, id});
    if (it == owners.end()) return;
    auto c = clients_.find(it->second.first);
    if (c != clients_.end()) push_async(*c->second, type, it->second.second);
  };
  switch (ev.type) {
    case T::CqErr:
      send_to(Kind::Cq, ev.cq);
      break;
    case T::SrqErr:
    case T::SrqLimitReached:
      send_to(Kind::Srq, ev.srq);
      break;
    case T::QpFatal: case T::QpReqErr: case T::QpAccessErr: case T::CommEst:
    case T::SqDrained: case T::PathMig: case T::PathMigErr: case T::QpLastWqeReached:
      send_to(Kind::Qp, ev.qpn);
      break;
    default:  // device and port events go to every client using the device
      for (auto& [id, c] : clients_)
        for (size_t d : c->devs)
          if (d == dev) push_async(*c, type, ev.port);
      break;
  }
}

}  // namespace rdmasim::daemon
