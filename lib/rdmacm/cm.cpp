// rdma_cm over the daemon: event channels, ids, address/route resolution, connection
// establishment and events. Each call returns 0, or -1 with errno (rdma-core 44's ERR()).
#include "lib/rdmacm/cm.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>

namespace rdmasim::rdmacm {

static_assert(RDMA_CM_EVENT_ADDR_RESOLVED == 0 && RDMA_CM_EVENT_ADDR_ERROR == 1 &&
              RDMA_CM_EVENT_ROUTE_RESOLVED == 2 && RDMA_CM_EVENT_CONNECT_REQUEST == 4 &&
              RDMA_CM_EVENT_REJECTED == 8 && RDMA_CM_EVENT_ESTABLISHED == 9 &&
              RDMA_CM_EVENT_DISCONNECTED == 10, "lib/daemon/cm_agent.cpp's event codes");
static_assert(RDMA_PS_UDP == 0x0111 && RDMA_PS_IPOIB == 0x0002);

Cm& Cm::get() {
  if (backend::InprocHost* host = backend::inproc_current()) {
    void*& slot = host->rdmacm_slot();
    if (!slot) slot = new Cm(host);  // lives as long as the run's processes
    return *static_cast<Cm*>(slot);
  }
  static Cm* cm = new Cm;  // never destroyed: ids may outlive static destructors
  return *cm;
}

int Cm::init() {
  std::lock_guard<std::mutex> lk(mu_);
  if (ready_) return 0;
  // libibverbs connects first, so the daemon puts this connection on the same host.
  devs_ = ibv_get_device_list(&ndevs_);
  if (!devs_) return errno ? errno : ENODEV;
  if (host_) {
    // The simulated process's connection said HELLO for libibverbs already; the CM's
    // requests go to the same client (one per simulated process, as the daemon puts a
    // process's second connection on its host).
    own_client_ = std::make_unique<backend::InprocClient>(*host_);
    client_ = own_client_.get();
  } else {
    client_ = backend::DaemonClient::get();
  }
  if (!client_) return errno ? errno : ENODEV;
  ctxs_.assign(ndevs_, nullptr);
  pds_.assign(ndevs_, nullptr);
  ready_ = true;
  return 0;
}

uint32_t Cm::next_psn() {
  std::lock_guard<std::mutex> lk(mu_);
  if (!psn_seeded_) {
    uint32_t seed = 0;
    if (host_) {
      seed = 2166136261u;  // FNV-1a over the host's name
      for (const char* c = host_->host_name(); *c; ++c) seed = (seed ^ static_cast<uint8_t>(*c)) * 16777619u;
    } else {
      seed = std::random_device{}();
    }
    psn_rng_.seed(seed % 2147483646u + 1);  // minstd's state is 1..2^31-2
    psn_seeded_ = true;
  }
  return psn_rng_() & 0xffffff;
}

int Cm::call(ipc::Op op, const void* req, size_t len, void* resp, size_t resp_len, int* fds,
             int max_fds, int* nfds) {
  if (int rc = init()) return rc;
  return client_->call(op, req, len, resp, resp_len, fds, max_fds, nfds);
}

ibv_context* Cm::context(uint32_t dev) {
  std::lock_guard<std::mutex> lk(mu_);
  if (dev >= static_cast<uint32_t>(ndevs_)) return nullptr;
  if (!ctxs_[dev]) {
    ctxs_[dev] = ibv_open_device(devs_[dev]);
    if (ctxs_[dev]) pds_[dev] = ibv_alloc_pd(ctxs_[dev]);
  }
  return ctxs_[dev];
}

ibv_pd* Cm::pd(ibv_context* ctx) {
  std::lock_guard<std::mutex> lk(mu_);
  for (size_t i = 0; i < ctxs_.size(); ++i)
    if (ctxs_[i] == ctx) return pds_[i];
  return nullptr;
}

ibv_context** Cm::contexts(int* n) {
  if (init()) return nullptr;
  for (int i = 0; i < ndevs_; ++i) context(i);
  std::lock_guard<std::mutex> lk(mu_);
  auto** list = static_cast<ibv_context**>(calloc(ndevs_ + 1, sizeof(ibv_context*)));
  if (!list) return nullptr;
  int k = 0;
  for (auto* c : ctxs_)
    if (c) list[k++] = c;
  if (n) *n = k;
  return list;
}

void Cm::add(Id* id) {
  std::lock_guard<std::mutex> lk(mu_);
  ids_.push_back(id);
}
void Cm::remove(Id* id) {
  std::lock_guard<std::mutex> lk(mu_);
  ids_.erase(std::remove(ids_.begin(), ids_.end(), id), ids_.end());
}
Id* Cm::find(uint32_t handle) {
  std::lock_guard<std::mutex> lk(mu_);
  for (Id* id : ids_)
    if (id->handle == handle) return id;
  return nullptr;
}

void Cm::reported(Id* id) {
  std::lock_guard<std::mutex> lk(ev_mu_);
  id->events_reported++;
}

void Cm::acked(uint32_t handle) {
  Id* id = find(handle);
  if (!id) return;
  std::lock_guard<std::mutex> lk(ev_mu_);
  id->events_acked++;
  ev_cv_.notify_all();
}

void Cm::wait_acked(Id* id) {
  // A real process waits for ever; here a thread of the same process acks within moments,
  // so the wait is bounded (a program that never acks gets its destroy after 2 s, not a
  // hang). In a fiber nothing else runs while this one waits: no wait at all.
  if (host_) return;
  std::unique_lock<std::mutex> lk(ev_mu_);
  ev_cv_.wait_for(lk, std::chrono::seconds(2), [id] { return id->events_acked >= id->events_reported; });
}

namespace {

Id* of(rdma_cm_id* id) { return reinterpret_cast<Id*>(id); }

ipc::CmEndpoint endpoint(const sockaddr* sa) {
  ipc::CmEndpoint e{};
  if (sa && sa->sa_family == AF_INET) {
    const auto* in = reinterpret_cast<const sockaddr_in*>(sa);
    e.ip = in->sin_addr.s_addr;
    e.port = in->sin_port;
  }
  return e;
}

void set_sin(sockaddr_in* sin, const ipc::CmEndpoint& e) {
  *sin = {};
  sin->sin_family = AF_INET;
  sin->sin_addr.s_addr = e.ip;
  sin->sin_port = e.port;
}

// The device the daemon named: cm_id->verbs, port 1 and the default PD.
void attach_device(Id* id, uint32_t dev) {
  if (dev == ipc::kCmAnyDevice || id->id.verbs) return;
  id->id.verbs = Cm::get().context(dev);
  id->id.port_num = 1;
  if (id->id.verbs && !id->id.pd) id->id.pd = Cm::get().pd(id->id.verbs);
}

void set_path(Id* id, const ipc::CmPath& p) {
  id->path = p;
  attach_device(id, p.dev_index);
  auto& ib = id->id.route.addr.addr.ibaddr;
  std::memcpy(ib.sgid.raw, p.sgid, 16);
  std::memcpy(ib.dgid.raw, p.dgid, 16);
  ib.pkey = htons(0xffff);
  auto& r = id->path_rec;
  r = {};
  std::memcpy(r.sgid.raw, p.sgid, 16);
  std::memcpy(r.dgid.raw, p.dgid, 16);
  r.slid = htons(p.slid);
  r.dlid = htons(p.dlid);
  r.pkey = htons(0xffff);
  r.mtu = static_cast<uint8_t>(p.mtu);
  r.hop_limit = p.link_layer == static_cast<uint32_t>(ipc::LinkLayer::InfiniBand) ? 0 : 64;
  r.reversible = 1;
  r.numb_path = 1;
  id->id.route.path_rec = &id->path_rec;
  id->id.route.num_paths = 1;
}

Id* new_id(rdma_event_channel* ch, void* context, rdma_port_space ps, uint32_t handle) {
  auto* id = new Id;
  std::memset(&id->id, 0, sizeof id->id);
  id->id.channel = ch;
  id->id.context = context;
  id->id.ps = ps;
  id->id.qp_type = ps == RDMA_PS_UDP || ps == RDMA_PS_IPOIB ? IBV_QPT_UD : IBV_QPT_RC;
  id->handle = handle;
  id->psn = Cm::get().next_psn();
  Cm::get().add(id);
  return id;
}

uint8_t clamp_depth(Id* id, uint8_t want) {
  ibv_device_attr a{};
  if (!id->id.verbs || ibv_query_device(id->id.verbs, &a)) return want;
  return static_cast<uint8_t>(std::min<int>(want, a.max_qp_rd_atom));
}

ipc::CmConnParam to_wire(Id* id, const rdma_conn_param* p) {
  ipc::CmConnParam w{};
  if (p) {
    w.private_data_len = p->private_data ? p->private_data_len : 0;
    if (w.private_data_len) std::memcpy(w.private_data, p->private_data, w.private_data_len);
    w.responder_resources = clamp_depth(id, p->responder_resources);
    w.initiator_depth = clamp_depth(id, p->initiator_depth);
    w.flow_control = p->flow_control;
    w.retry_count = std::min<uint8_t>(p->retry_count, 7);
    w.rnr_retry_count = std::min<uint8_t>(p->rnr_retry_count, 7);
    w.srq = p->srq;
    w.qpn = p->qp_num;
  }
  if (id->id.qp) w.qpn = id->id.qp->qp_num;
  w.psn = id->psn;
  w.qkey = RDMA_UDP_QKEY;
  id->responder_resources = w.responder_resources;
  id->initiator_depth = w.initiator_depth;
  id->retry = p ? w.retry_count : 7;
  id->rnr_retry = p ? w.rnr_retry_count : 7;
  return w;
}

void fill_conn(Event* e, const ipc::CmConnParam& p) {
  const uint32_t n = std::min<uint32_t>(p.private_data_len, ipc::kCmPrivateData);
  std::memcpy(e->private_data, p.private_data, n);
  auto& c = e->ev.param.conn;
  c.private_data = n ? e->private_data : nullptr;
  c.private_data_len = static_cast<uint8_t>(std::min<uint32_t>(n, 255));
  c.responder_resources = p.responder_resources;
  c.initiator_depth = p.initiator_depth;
  c.flow_control = p.flow_control;
  c.retry_count = p.retry_count;
  c.rnr_retry_count = p.rnr_retry_count;
  c.srq = p.srq;
  c.qp_num = p.qpn;
}

void fill_ud(Event* e, Id* id, const ipc::CmConnParam& p) {
  const uint32_t n = std::min<uint32_t>(p.private_data_len, ipc::kCmPrivateData);
  std::memcpy(e->private_data, p.private_data, n);
  auto& u = e->ev.param.ud;
  u.private_data = n ? e->private_data : nullptr;
  u.private_data_len = static_cast<uint8_t>(std::min<uint32_t>(n, 255));
  ah_from_path(id, &u.ah_attr);
  u.qp_num = p.qpn;
  u.qkey = p.qkey;
}

}  // namespace

int wait_sync(Id* id, rdma_cm_event_type want) {
  rdma_cm_event* e = nullptr;
  if (rdma_get_cm_event(id->id.channel, &e)) return errno;
  int rc = 0;
  if (e->event != want) {
    switch (e->event) {
      case RDMA_CM_EVENT_REJECTED: rc = ECONNREFUSED; break;
      case RDMA_CM_EVENT_ADDR_ERROR:
      case RDMA_CM_EVENT_ROUTE_ERROR: rc = e->status < 0 ? -e->status : EHOSTUNREACH; break;
      case RDMA_CM_EVENT_UNREACHABLE: rc = ETIMEDOUT; break;
      default: rc = EIO; break;
    }
  } else if (want == RDMA_CM_EVENT_ESTABLISHED && id->id.qp_type == IBV_QPT_UD) {
    id->peer.qpn = e->param.ud.qp_num;
    id->peer.qkey = e->param.ud.qkey;
  }
  rdma_ack_cm_event(e);
  return rc;
}

}  // namespace rdmasim::rdmacm

using namespace rdmasim;
using rdmasim::rdmacm::Cm;
using rdmasim::rdmacm::fail;
using rdmasim::rdmacm::Id;
using rdmasim::rdmacm::of;

extern "C" {

rdma_event_channel* rdma_create_event_channel(void) {
  ipc::CmChannelResp r{};
  int fd = -1, nfds = 0;
  char none = 0;
  int rc = Cm::get().call(ipc::Op::CmCreateChannel, &none, 0, &r, sizeof r, &fd, 1, &nfds);
  if (rc == 0 && nfds != 1) rc = EPROTO;
  if (rc) {
    errno = rc;
    return nullptr;
  }
  auto* ch = new rdmacm::Channel{{fd}, r.handle};
  return &ch->ch;
}

void rdma_destroy_event_channel(rdma_event_channel* channel) {
  if (!channel) return;
  auto* ch = reinterpret_cast<rdmacm::Channel*>(channel);
  ipc::HandleReq r{ch->handle};
  Cm::get().call(ipc::Op::CmDestroyChannel, &r, sizeof r);
  close(ch->ch.fd);
  delete ch;
}

int rdma_create_id(rdma_event_channel* channel, rdma_cm_id** out, void* context,
                   rdma_port_space ps) {
  if (!out) return fail(EINVAL);
  if (ps != RDMA_PS_TCP && ps != RDMA_PS_UDP && ps != RDMA_PS_IPOIB) return fail(EPROTONOSUPPORT);
  bool sync = !channel;
  if (sync && !(channel = rdma_create_event_channel())) return -1;
  auto* ch = reinterpret_cast<rdmacm::Channel*>(channel);
  ipc::CmCreateIdReq req{ch->handle, static_cast<uint32_t>(ps), 0};
  ipc::HandleResp r{};
  if (int rc = Cm::get().call(ipc::Op::CmCreateId, &req, sizeof req, &r, sizeof r)) {
    if (sync) rdma_destroy_event_channel(channel);
    return fail(rc);
  }
  Id* id = rdmacm::new_id(channel, context, ps, r.handle);
  id->sync = sync;
  *out = &id->id;
  return 0;
}

int rdma_destroy_id(rdma_cm_id* cm_id) {
  if (!cm_id) return fail(EINVAL);
  Id* id = of(cm_id);
  ipc::CmIdReq r{id->handle, 0};
  int rc = Cm::get().call(ipc::Op::CmDestroyId, &r, sizeof r);
  Cm::get().wait_acked(id);
  Cm::get().remove(id);
  if (id->sync) rdma_destroy_event_channel(cm_id->channel);
  delete id;
  return rc ? fail(rc) : 0;
}

int rdma_bind_addr(rdma_cm_id* cm_id, sockaddr* addr) {
  if (!cm_id || !addr) return fail(EINVAL);
  if (addr->sa_family != AF_INET) return fail(EAFNOSUPPORT);  // the simulated hosts are IPv4
  Id* id = of(cm_id);
  ipc::CmBindReq req{id->handle, rdmacm::endpoint(addr)};
  ipc::CmAddrResp r{};
  if (int rc = Cm::get().call(ipc::Op::CmBind, &req, sizeof req, &r, sizeof r)) return fail(rc);
  rdmacm::set_sin(&cm_id->route.addr.src_sin, r.src);
  rdmacm::attach_device(id, r.dev_index);
  return 0;
}

int rdma_listen(rdma_cm_id* cm_id, int backlog) {
  if (!cm_id) return fail(EINVAL);
  ipc::CmListenReq req{of(cm_id)->handle, static_cast<uint32_t>(backlog < 0 ? 0 : backlog)};
  if (int rc = Cm::get().call(ipc::Op::CmListen, &req, sizeof req)) return fail(rc);
  return 0;
}

int rdma_resolve_addr(rdma_cm_id* cm_id, sockaddr* src, sockaddr* dst, int timeout_ms) {
  if (!cm_id || !dst) return fail(EINVAL);
  if (dst->sa_family != AF_INET || (src && src->sa_family != AF_INET)) return fail(EAFNOSUPPORT);
  Id* id = of(cm_id);
  ipc::CmResolveAddrReq req{id->handle, src ? 1u : 0u, rdmacm::endpoint(src), rdmacm::endpoint(dst),
                            static_cast<uint32_t>(timeout_ms < 0 ? 0 : timeout_ms)};
  ipc::CmAddrResp r{};
  if (int rc = Cm::get().call(ipc::Op::CmResolveAddr, &req, sizeof req, &r, sizeof r)) return fail(rc);
  rdmacm::set_sin(&cm_id->route.addr.src_sin, r.src);
  rdmacm::set_sin(&cm_id->route.addr.dst_sin, r.dst);
  rdmacm::attach_device(id, r.dev_index);
  if (id->sync)
    if (int rc = rdmacm::wait_sync(id, RDMA_CM_EVENT_ADDR_RESOLVED)) return fail(rc);
  return 0;
}

int rdma_resolve_route(rdma_cm_id* cm_id, int timeout_ms) {
  if (!cm_id) return fail(EINVAL);
  Id* id = of(cm_id);
  ipc::CmIdReq req{id->handle, static_cast<uint32_t>(timeout_ms < 0 ? 0 : timeout_ms)};
  ipc::CmPath p{};
  if (int rc = Cm::get().call(ipc::Op::CmResolveRoute, &req, sizeof req, &p, sizeof p)) return fail(rc);
  rdmacm::set_path(id, p);
  if (id->sync)
    if (int rc = rdmacm::wait_sync(id, RDMA_CM_EVENT_ROUTE_RESOLVED)) return fail(rc);
  return 0;
}

int rdma_connect(rdma_cm_id* cm_id, rdma_conn_param* param) {
  if (!cm_id) return fail(EINVAL);
  Id* id = of(cm_id);
  // IBTA 12.6.5 / 12.11.1: a REQ carries 92 B of private data, a SIDR REQ 216 B, of which
  // rdma_cm's own header takes 36 (man rdma_connect: 56 and 180 B for the user).
  if (param && param->private_data && param->private_data_len > (cm_id->qp_type == IBV_QPT_UD ? 180 : 56))
    return fail(EINVAL);
  ipc::CmConnectReq req{id->handle, rdmacm::to_wire(id, param)};
  if (int rc = Cm::get().call(ipc::Op::CmConnect, &req, sizeof req)) return fail(rc);
  if (id->sync)
    if (int rc = rdmacm::wait_sync(id, RDMA_CM_EVENT_ESTABLISHED)) return fail(rc);
  return 0;
}

int rdma_accept(rdma_cm_id* cm_id, rdma_conn_param* param) {
  if (!cm_id) return fail(EINVAL);
  Id* id = of(cm_id);
  ipc::CmConnectReq req{id->handle, rdmacm::to_wire(id, param)};
  if (cm_id->qp && cm_id->qp_type == IBV_QPT_RC) {
    // The passive side's QP goes to RTS before the REP leaves (rdma-core's rdma_accept).
    if (!param) {
      id->responder_resources = std::min<uint8_t>(id->peer.responder_resources, 1);
      id->initiator_depth = std::min<uint8_t>(id->peer.initiator_depth, 1);
    }
    if (int rc = rdmacm::qp_to_rtr_rts(id, id->peer.qpn, id->peer.psn)) {
      ipc::CmConnectReq rej{id->handle, {}};
      Cm::get().call(ipc::Op::CmReject, &rej, sizeof rej);
      return fail(rc);
    }
  }
  if (int rc = Cm::get().call(ipc::Op::CmAccept, &req, sizeof req)) return fail(rc);
  if (id->sync && cm_id->qp_type == IBV_QPT_RC)
    if (int rc = rdmacm::wait_sync(id, RDMA_CM_EVENT_ESTABLISHED)) return fail(rc);
  return 0;
}

int rdma_reject(rdma_cm_id* cm_id, const void* private_data, uint8_t len) {
  if (!cm_id) return fail(EINVAL);
  ipc::CmConnectReq req{of(cm_id)->handle, {}};
  req.param.private_data_len = private_data ? len : 0;
  if (req.param.private_data_len) std::memcpy(req.param.private_data, private_data, len);
  if (int rc = Cm::get().call(ipc::Op::CmReject, &req, sizeof req)) return fail(rc);
  return 0;
}

int rdma_disconnect(rdma_cm_id* cm_id) {
  if (!cm_id) return fail(EINVAL);
  if (cm_id->qp) rdmacm::qp_to_err(of(cm_id));  // flushes what is posted, as on a DREQ
  ipc::CmIdReq req{of(cm_id)->handle, 0};
  if (int rc = Cm::get().call(ipc::Op::CmDisconnect, &req, sizeof req)) return fail(rc);
  return 0;
}

namespace {
// A thread waiting on an event channel that another thread destroyed: the kernel's rdma_cm
// leaves a thread blocked in read() on it blocked until the process ends.
[[noreturn]] void wait_forever() {
  for (;;) pause();
}
}  // namespace

int rdma_get_cm_event(rdma_event_channel* channel, rdma_cm_event** event) {
  if (!channel || !event) return fail(EINVAL);
  // The channel's fd and handle, copied: another thread may destroy the channel (and free
  // `channel`) while this one waits, as rping's main thread does to its CM thread at exit.
  const int fd = reinterpret_cast<rdmacm::Channel*>(channel)->ch.fd;
  const uint32_t handle = reinterpret_cast<rdmacm::Channel*>(channel)->handle;
  for (;;) {
    uint64_t n = 0;
    // In a fiber, a blocking wait is the host's: virtual time moves until an event is queued
    // (a read() here would block the whole run).
    backend::Waiter* w = Cm::get().waiter();
    const int flags = fcntl(fd, F_GETFL);
    // Another thread destroyed the channel (closing its fd) as this call began: as below, a
    // thread waiting on a destroyed channel stays blocked (outside a fiber).
    if (flags < 0 && errno == EBADF && !w) wait_forever();
    const bool blocking = !(flags & O_NONBLOCK);
    if (w && blocking) w->wait_readable(fd);
    // One count per queued event (EFD_SEMAPHORE); blocks unless the program set O_NONBLOCK.
    if (read(fd, &n, sizeof n) != static_cast<ssize_t>(sizeof n)) {
      if (errno == EBADF && blocking && !w) wait_forever();  // destroyed between fcntl and read
      return -1;
    }
    ipc::HandleReq req{handle};
    ipc::CmEventResp r{};
    if (int rc = Cm::get().call(ipc::Op::CmGetEvent, &req, sizeof req, &r, sizeof r)) {
      // The channel was destroyed between the wake-up and the fetch. The kernel's rdma_cm
      // drops a destroyed channel's events, and a thread blocked in read() on it stays
      // blocked until the process ends; so does this one (outside a fiber), rather than
      // failing a call that, on a real device, would never have returned.
      if (rc == ENOENT && blocking && !w) wait_forever();
      return fail(rc);
    }
    auto* e = new rdmacm::Event{};
    e->ev.event = static_cast<rdma_cm_event_type>(r.event);
    e->ev.status = r.status;
    Id* id = Cm::get().find(r.id);
    if (r.event == RDMA_CM_EVENT_CONNECT_REQUEST) {
      Id* listener = Cm::get().find(r.listen_id);
      if (!listener) {  // destroyed meanwhile: refuse
        ipc::CmConnectReq rej{r.id, {}};
        Cm::get().call(ipc::Op::CmReject, &rej, sizeof rej);
        delete e;
        continue;
      }
      id = rdmacm::new_id(channel, listener->id.context, static_cast<rdma_port_space>(r.ps), r.id);
      rdmacm::set_sin(&id->id.route.addr.src_sin, r.src);
      rdmacm::set_sin(&id->id.route.addr.dst_sin, r.dst);
      rdmacm::set_path(id, r.path);
      id->peer = r.param;
      if (listener->has_qp_attr) {
        id->has_qp_attr = true;
        id->qp_attr = listener->qp_attr;
        id->ep_pd = listener->ep_pd;
      }
      e->ev.listen_id = &listener->id;
    }
    if (!id) {  // an event of an id destroyed meanwhile
      delete e;
      continue;
    }
    e->ev.id = &id->id;
    if (r.event == ipc::kCmEventRep) {
      // The REP: move the QP to RTS, answer with the RTU, report ESTABLISHED.
      id->peer = r.param;
      int rc = id->id.qp ? rdmacm::qp_to_rtr_rts(id, r.param.qpn, r.param.psn) : 0;
      ipc::CmIdReq rtu{id->handle, 0};
      if (rc == 0) rc = Cm::get().call(ipc::Op::CmEstablish, &rtu, sizeof rtu);
      if (rc) {
        Cm::get().call(ipc::Op::CmDisconnect, &rtu, sizeof rtu);
        e->ev.event = RDMA_CM_EVENT_CONNECT_ERROR;
        e->ev.status = -rc;
      } else {
        e->ev.event = RDMA_CM_EVENT_ESTABLISHED;
      }
    }
    if (id->id.qp_type == IBV_QPT_UD && e->ev.event == RDMA_CM_EVENT_ESTABLISHED)
      rdmacm::fill_ud(e, id, r.param);
    else if (id->id.qp_type == IBV_QPT_UD && e->ev.event == RDMA_CM_EVENT_CONNECT_REQUEST)
      rdmacm::fill_ud(e, id, r.param);
    else
      rdmacm::fill_conn(e, r.param);
    id->id.event = &e->ev;
    Id* counted = e->ev.listen_id ? of(e->ev.listen_id) : id;
    e->counted = counted->handle;
    Cm::get().reported(counted);
    *event = &e->ev;
    return 0;
  }
}

int rdma_ack_cm_event(rdma_cm_event* event) {
  if (!event) return fail(EINVAL);
  auto* e = reinterpret_cast<rdmacm::Event*>(event);
  if (event->id && event->id->event == event) event->id->event = nullptr;
  if (e->counted) Cm::get().acked(e->counted);
  delete e;
  return 0;
}

}  // extern "C"
