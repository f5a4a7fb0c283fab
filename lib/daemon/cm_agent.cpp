// The connection manager's ids, channels, addresses and events (see cm_agent.h); the CM
// protocol itself is in cm_exchange.cpp. Event codes are enum rdma_cm_event_type's values
// (<rdma/rdma_cma.h>), which lib/rdmacm static_asserts.
#include "lib/daemon/cm_agent.h"

#include <arpa/inet.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include <spdlog/spdlog.h>

#include "lib/daemon/device_info.h"

namespace rdmasim::daemon {
namespace {

enum : uint32_t { kAddrResolved = 0, kAddrError = 1, kRouteResolved = 2 };  // enum rdma_cm_event_type

uint32_t parse_ip(const std::string& s) {
  in_addr a{};
  return inet_pton(AF_INET, s.c_str(), &a) == 1 ? a.s_addr : 0;
}

}  // namespace

CmAgent::CmAgent(Clients& clients, const topo::Fabric& fabric, Engine& engine,
                 const std::vector<std::unique_ptr<nic::Hca>>& hcas)
    : clients_(clients), fabric_(fabric), engine_(engine), hcas_(hcas) {
  for (size_t i = 0; i < hcas_.size(); ++i)
    hcas_[i]->set_gsi_sink([this, i](const nic::GsiDatagram& d) { on_gsi(i, d); });
  for (size_t i = 0; i < hcas_.size(); ++i)
    if (fabric_.nics()[i].link_layer == net::LinkLayer::IWarp)
      hcas_[i]->set_iwarp_cm_sink([this, i](const nic::IwarpCmSegment& s) { on_iw(i, s); });
}

CmAgent::~CmAgent() {
  for (auto& h : hcas_) h->set_gsi_sink(nullptr);
  for (auto& h : hcas_) h->set_iwarp_cm_sink(nullptr);
  for (auto& [k, id] : ids_) engine_.cancel(id.timer);
  for (auto& [k, ch] : channels_)
    if (ch.efd >= 0) close(ch.efd);
}

CmAgent::Id* CmAgent::find(const Client& c, uint32_t id) { return find(Key{c.id, id}); }
CmAgent::Id* CmAgent::find(Key k) {
  auto it = ids_.find(k);
  return it == ids_.end() ? nullptr : &it->second;
}

const std::string& CmAgent::host_of(uint32_t client) const {
  static const std::string none;
  auto it = clients_.find(client);
  return it == clients_.end() ? none : it->second->host;
}

size_t CmAgent::nic_of_ip(uint32_t ip_net) const {
  const auto& nics = fabric_.nics();
  for (size_t i = 0; i < nics.size(); ++i) {
    if (parse_ip(nics[i].ip) == ip_net) return i;
    if (nics[i].link_layer != net::LinkLayer::InfiniBand && htonl(nics[i].address) == ip_net) return i;
  }
  return SIZE_MAX;
}

uint32_t CmAgent::ip_of(size_t nic) const {
  const topo::HostNic& n = fabric_.nics()[nic];
  const uint32_t ip = parse_ip(n.ip);
  return ip ? ip : htonl(n.address);
}

size_t CmAgent::nic_of_address(net::Address a) const {
  const auto& nics = fabric_.nics();
  for (size_t i = 0; i < nics.size(); ++i)
    if (nics[i].address == a) return i;
  return SIZE_MAX;
}

// A NIC of c's own host answering to ip (INADDR_ANY: SIZE_MAX, meaning any of them).
size_t CmAgent::host_nic(const Client& c, uint32_t ip_net) const {
  if (ip_net == htonl(INADDR_ANY)) return SIZE_MAX;
  size_t n = nic_of_ip(ip_net);
  if (n == SIZE_MAX || fabric_.nics()[n].host != c.host) return SIZE_MAX - 1;
  return n;
}

uint32_t CmAgent::dev_index(const Client& c, size_t nic) const {
  for (size_t i = 0; i < c.devs.size(); ++i)
    if (c.devs[i] == nic) return static_cast<uint32_t>(i);
  return ipc::kCmAnyDevice;
}

void CmAgent::fill_path(const Client& c, const Id& id, ipc::CmPath* out) const {
  *out = {};
  out->dev_index = id.nic == SIZE_MAX ? ipc::kCmAnyDevice : dev_index(c, id.nic);
  if (id.nic == SIZE_MAX) return;
  const auto& nics = fabric_.nics();
  ipc::QueryPortResp local{}, peer{};
  fill_port(nics[id.nic], &local);
  ipc::QueryDeviceResp dev{};
  fill_device(nics[id.nic], &dev);
  out->link_layer = local.attr.link_layer;
  out->transport = dev.transport_type;
  out->mtu = local.attr.active_mtu;
  out->slid = local.attr.lid;
  std::memcpy(out->sgid, local.gids[0], 16);
  if (id.peer_nic == SIZE_MAX) return;
  fill_port(nics[id.peer_nic], &peer);
  out->mtu = std::min(out->mtu, peer.attr.active_mtu);
  out->dlid = peer.attr.lid;
  std::memcpy(out->dgid, peer.gids[0], 16);
}

bool CmAgent::port_in_use(const std::string& host, uint32_t ps, uint16_t port) const {
  for (const auto& [k, id] : ids_)
    if (id.bound && id.ps == ps && id.src.port == port && host_of(k.first) == host) return true;
  return false;
}

void CmAgent::post(Key k, uint32_t event, int32_t status, const ipc::CmConnParam* param,
                   uint32_t listen_id) {
  Id* id = find(k);
  if (!id) return;
  auto ch = channels_.find(Key{k.first, id->channel});
  if (ch == channels_.end()) return;
  ipc::CmEventResp e{};
  e.event = event;
  e.status = status;
  e.id = k.second;
  e.listen_id = listen_id;
  e.ps = id->ps;
  e.src = id->src;
  e.dst = id->dst;
  auto cl = clients_.find(k.first);
  if (cl != clients_.end()) fill_path(*cl->second, *id, &e.path);
  if (param) e.param = *param;
  ch->second.events.push_back(e);
  const uint64_t one = 1;
  if (write(ch->second.efd, &one, sizeof one) < 0) {
    // The counter is full (2^64 - 2 events unread): the event stays queued.
  }
  if (on_event_) on_event_(k.first);
}

int CmAgent::create_channel(Client& c, uint32_t* handle, int* efd) {
  // Blocking unless the program sets O_NONBLOCK (rdma_get_cm_event then says EAGAIN); the
  // daemon's writes never block below 2^64 - 1 counts.
  int fd = eventfd(0, EFD_SEMAPHORE | EFD_CLOEXEC);
  if (fd < 0) return errno;
  int mine = dup(fd);
  if (mine < 0) {
    close(fd);
    return EMFILE;
  }
  *handle = c.next_handle++;
  channels_[Key{c.id, *handle}].efd = mine;
  *efd = fd;
  return 0;
}

int CmAgent::destroy_channel(Client& c, uint32_t handle) {
  auto it = channels_.find(Key{c.id, handle});
  if (it == channels_.end()) return ENOENT;
  for (const auto& [k, id] : ids_)
    if (k.first == c.id && id.channel == handle) return EBUSY;
  close(it->second.efd);
  channels_.erase(it);
  return 0;
}

int CmAgent::create_id(Client& c, const ipc::CmCreateIdReq& r, uint32_t* handle) {
  if (!channels_.count(Key{c.id, r.channel})) return ENOENT;
  *handle = c.next_handle++;
  Id& id = ids_[Key{c.id, *handle}];
  id.channel = r.channel;
  id.ps = r.ps;
  id.qp_type = r.qp_type;
  return 0;
}

void CmAgent::forget(Key k) {
  auto it = ids_.find(k);
  if (it == ids_.end()) return;
  engine_.cancel(it->second.timer);
  if (it->second.comm_id) by_comm_.erase(it->second.comm_id);
  ids_.erase(it);
}

int CmAgent::destroy_id(Client& c, uint32_t handle) {
  Id* id = find(c, handle);
  if (!id) return ENOENT;
  leave(Key{c.id, handle}, *id);
  forget(Key{c.id, handle});
  return 0;
}

int CmAgent::bind(Client& c, const ipc::CmBindReq& r, ipc::CmAddrResp* out) {
  Id* id = find(c, r.id);
  if (!id) return ENOENT;
  if (id->bound) return EINVAL;
  size_t nic = host_nic(c, r.addr.ip);
  if (nic == SIZE_MAX - 1) return EADDRNOTAVAIL;  // not an address of this host
  uint16_t port = r.addr.port;
  if (port == 0) {  // an ephemeral port, as the kernel picks one from 32768..60999
    for (int tries = 0; tries < 28232; ++tries) {
      uint16_t p = htons(static_cast<uint16_t>(32768 + next_port_++ % 28232));
      if (!port_in_use(c.host, id->ps, p)) {
        port = p;
        break;
      }
    }
    if (port == 0) return EADDRINUSE;
  } else if (port_in_use(c.host, id->ps, port)) {
    return EADDRINUSE;
  }
  id->bound = true;
  id->nic = nic;
  id->src = {r.addr.ip, port, 0};
  out->src = id->src;
  out->dev_index = nic == SIZE_MAX ? ipc::kCmAnyDevice : dev_index(c, nic);
  return 0;
}

int CmAgent::listen(Client& c, const ipc::CmListenReq& r) {
  Id* id = find(c, r.id);
  if (!id) return ENOENT;
  if (!id->bound || (id->state != State::Idle && id->state != State::Listen)) return EINVAL;
  id->state = State::Listen;
  return 0;
}

int CmAgent::resolve_addr(Client& c, const ipc::CmResolveAddrReq& r, ipc::CmAddrResp* out) {
  Id* id = find(c, r.id);
  if (!id) return ENOENT;
  if (id->state != State::Idle && id->state != State::AddrResolved) return EINVAL;
  if (!id->bound) {
    ipc::CmBindReq b{r.id, r.has_src ? r.src : ipc::CmEndpoint{}};
    ipc::CmAddrResp ignored{};
    if (int rc = bind(c, b, &ignored)) return rc;
  }
  id->dst = r.dst;
  id->peer_nic = nic_of_ip(r.dst.ip);
  if (id->nic == SIZE_MAX) {
    // Unbound: the device of this host on the destination's fabric side (the first one).
    id->nic = c.devs.empty() ? SIZE_MAX : c.devs[0];
    if (id->src.ip == htonl(INADDR_ANY) && id->nic != SIZE_MAX)
      id->src.ip = parse_ip(fabric_.nics()[id->nic].ip);
  }
  if (id->peer_nic == SIZE_MAX) {
    // No simulated host has the address: as ARP/path resolution failing on a real network.
    post(Key{c.id, r.id}, kAddrError, -EHOSTUNREACH);
  } else {
    id->state = State::AddrResolved;
    post(Key{c.id, r.id}, kAddrResolved, 0);
  }
  out->src = id->src;
  out->dst = id->dst;
  out->dev_index = dev_index(c, id->nic);
  return 0;
}

int CmAgent::resolve_route(Client& c, const ipc::CmIdReq& r, ipc::CmPath* out) {
  Id* id = find(c, r.id);
  if (!id) return ENOENT;
  if (id->state != State::AddrResolved) return EINVAL;
  id->state = State::RouteResolved;
  fill_path(c, *id, out);
  post(Key{c.id, r.id}, kRouteResolved, 0);
  return 0;
}

int CmAgent::get_event(Client& c, uint32_t channel, ipc::CmEventResp* out) {
  auto it = channels_.find(Key{c.id, channel});
  if (it == channels_.end()) return ENOENT;
  if (it->second.events.empty()) return EAGAIN;
  *out = it->second.events.front();
  it->second.events.pop_front();
  return 0;
}

size_t CmAgent::listeners() const {
  return static_cast<size_t>(std::count_if(ids_.begin(), ids_.end(), [](const auto& kv) {
    return kv.second.state == State::Listen;
  }));
}

void CmAgent::drop_client(Client& c) {
  for (auto it = ids_.begin(); it != ids_.end();) {
    if (it->first.first != c.id) {
      ++it;
      continue;
    }
    const Key k = it->first;
    ++it;
    leave(k, ids_.at(k));
    forget(k);
  }
  for (auto it = channels_.begin(); it != channels_.end();) {
    if (it->first.first == c.id) {
      close(it->second.efd);
      it = channels_.erase(it);
    } else {
      ++it;
    }
  }
}

}  // namespace rdmasim::daemon
