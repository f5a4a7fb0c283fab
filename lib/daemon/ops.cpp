// The control operations on the client, its devices, PDs, MRs, MWs and completion
// channels, and the daemon-wide ones (Counters, Shutdown). Queues are in ops_queues.cpp.
#include "lib/daemon/ops.h"

#include <sys/eventfd.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <set>

#include <spdlog/spdlog.h>

#include "lib/daemon/device_info.h"
#include "lib/daemon/ops_util.h"
#include "lib/daemon/sealed_text.h"

namespace rdmasim::daemon {

int Ops::hello(Client& c, const ipc::HelloReq& r, ipc::HelloResp* out, ReplyFds* fds) {
  if (c.hello) return EINVAL;
  if (r.version != ipc::kProtoVersion) return EPROTO;
  const auto& nics = s_.fabric.nics();
  if (nics.empty()) return ENODEV;
  std::string want(r.host, strnlen(r.host, sizeof r.host));
  if (want.empty()) {  // a process is one host: another connection of it (librdmacm's) says which
    for (const auto& [id, other] : s_.clients)
      if (other->hello && other->pid == c.pid && other.get() != &c) {
        want = other->host;
        break;
      }
  }
  if (want.empty()) {  // the first host no other client has
    std::set<std::string> busy;
    for (const auto& [id, other] : s_.clients)
      if (other->hello) busy.insert(other->host);
    want = nics[0].host;
    for (const auto& n : nics)
      if (!busy.count(n.host)) {
        want = n.host;
        break;
      }
  }
  std::vector<size_t> devs;
  for (size_t i = 0; i < nics.size(); ++i)
    if (nics[i].host == want) devs.push_back(i);
  if (devs.empty()) return ENOENT;  // no such host in this fabric
  if (devs.size() > ipc::kMaxDevices) devs.resize(ipc::kMaxDevices);

  c.page_map = SharedMap::make(s_.local_maps, "rdmasim-client", sizeof(ipc::ClientPage));
  c.async_efd = eventfd(0, EFD_SEMAPHORE | EFD_NONBLOCK | EFD_CLOEXEC);
  if (!c.page_map.ok() || c.async_efd < 0) return ENOMEM;
  auto* page = new (c.page_map.addr()) ipc::ClientPage();
  init_ring(&page->async_ring_hdr, kAsyncSlots, sizeof(ipc::AsyncEventSlot));
  c.last_doorbell = 0;
  c.hello = true;
  c.host = want;
  c.devs = std::move(devs);

  out->client_id = c.id;
  out->daemon_pid = getpid();
  out->num_devices = static_cast<uint32_t>(c.devs.size());
  std::snprintf(out->host, sizeof out->host, "%s", c.host.c_str());
  std::snprintf(out->host_ip, sizeof out->host_ip, "%s", nics[c.devs[0]].ip.c_str());
  std::snprintf(out->fabric_name, sizeof out->fabric_name, "%s", s_.fabric.name().c_str());
  // The page's fd goes to the client only: the daemon's fd count per client stays constant.
  fds->pass_map(c.page_map);
  if (s_.global_page) fds->lend_map(s_.global_page, sizeof(ipc::GlobalPage));
  else fds->lend(s_.global_ro_fd);
  fds->lend(s_.wake_fd);
  fds->lend(c.async_efd);
  spdlog::info("rdmasim: client {} (pid {}) is host {}", c.id, c.pid, c.host);
  return 0;
}

int Ops::query_device(Client& c, const ipc::QueryDeviceReq& r, ipc::QueryDeviceResp* out) {
  if (r.dev_index >= c.devs.size()) return EINVAL;
  fill_device(s_.fabric.nics()[c.devs[r.dev_index]], out);
  return 0;
}

int Ops::query_port(Client& c, const ipc::QueryPortReq& r, ipc::QueryPortResp* out) {
  if (r.dev_index >= c.devs.size()) return EINVAL;
  const size_t dev = c.devs[r.dev_index];
  const topo::HostNic& nic = s_.fabric.nics()[dev];
  if (r.port != nic.port) return EINVAL;
  fill_port(nic, out, hca(dev).port_active());
  return 0;
}

int Ops::alloc_pd(Client& c, const ipc::AllocPdReq& r, ipc::HandleResp* out) {
  if (r.dev_index >= c.devs.size()) return EINVAL;
  const size_t dev = c.devs[r.dev_index];
  uint32_t pd = 0;
  if (int rc = hca(dev).alloc_pd(&pd)) return rc;
  out->handle = c.next_handle++;
  c.pds[out->handle] = Pd{dev, pd};
  return 0;
}

int Ops::dealloc_pd(Client& c, const ipc::HandleReq& r, NoBody*) {
  auto it = c.pds.find(r.handle);
  if (it == c.pds.end()) return ENOENT;
  if (int rc = hca(it->second.dev).dealloc_pd(it->second.pd)) return rc;
  c.pds.erase(it);
  return 0;
}

int Ops::reg_mr(Client& c, const ipc::RegMrReq& r, ipc::RegMrResp* out) {
  auto pd = c.pds.find(r.pd);
  if (pd == c.pds.end()) return ENOENT;
  if (r.length == 0 || r.addr + r.length < r.addr) return EINVAL;
  const bool need_write = (r.access & nic::kAccessLocalWrite) != 0;
  // An on-demand paging MR pins nothing: its pages are looked up when the HCA touches
  // them (ib_umem_odp), so a range not mapped yet is accepted; an access that finds no
  // page fails then.
  const bool odp = (r.access & nic::kAccessOnDemand) != 0;
  if (!odp && !range_mapped(c.pid, r.addr, r.length, need_write)) return EFAULT;
  nic::MrKeys keys;
  const size_t dev = pd->second.dev;
  if (int rc = hca(dev).reg_mr(pd->second.pd, c.mem.get(), r.addr, r.length, r.iova, r.access, &keys))
    return rc;
  out->handle = c.next_handle++;
  out->lkey = keys.lkey;
  out->rkey = keys.rkey;
  c.mrs[out->handle] = Mr{dev, keys.lkey, r.access, r.addr, r.length, r.pd};
  return 0;
}

int Ops::rereg_mr(Client& c, const ipc::ReregMrReq& r, ipc::RegMrResp* out) {
  auto it = c.mrs.find(r.handle);
  if (it == c.mrs.end()) return ENOENT;
  Mr& mr = it->second;
  if (mr.dm) return EOPNOTSUPP;  // an MR on device memory is not re-registered here
  uint32_t hca_pd = 0;
  if (r.flags & nic::kReregChangePd) {
    auto pd = c.pds.find(r.pd);
    if (pd == c.pds.end()) return ENOENT;
    if (pd->second.dev != mr.dev) return EINVAL;  // a PD of another device
    hca_pd = pd->second.pd;
  }
  const bool move = r.flags & nic::kReregChangeTranslation;
  const uint32_t access = (r.flags & nic::kReregChangeAccess) ? r.access : mr.access;
  const uint64_t addr = move ? r.addr : mr.addr;
  const uint64_t length = move ? r.length : mr.length;
  if (move && (length == 0 || addr + length < addr)) return EINVAL;
  if (!(access & nic::kAccessOnDemand) &&
      !range_mapped(c.pid, addr, length, (access & nic::kAccessLocalWrite) != 0))
    return EFAULT;
  nic::MrKeys keys;
  if (int rc = hca(mr.dev).rereg_mr(mr.lkey, r.flags, hca_pd, c.mem.get(), addr, length, r.access, &keys))
    return rc;
  mr.access = access;
  if (r.flags & nic::kReregChangePd) mr.pd = r.pd;
  mr.addr = addr;
  mr.length = length;
  out->handle = r.handle;
  out->lkey = keys.lkey;
  out->rkey = keys.rkey;
  return 0;
}

int Ops::dereg_mr(Client& c, const ipc::HandleReq& r, NoBody*) {
  auto it = c.mrs.find(r.handle);
  if (it == c.mrs.end()) return ENOENT;
  if (int rc = hca(it->second.dev).dereg_mr(it->second.lkey)) return rc;
  if (auto dm = c.dms.find(it->second.dm); it->second.dm && dm != c.dms.end()) dm->second.mrs--;
  c.mrs.erase(it);
  return 0;
}

// ibv_advise_mr(3), one SGE. An unknown PD EINVAL; an lkey of no MR of this process
// EFAULT ("one of the lkeys ... is invalid"); an MR that is not on-demand paging or of
// another PD EINVAL (mlx5 odp.c: prefetch && (!is_odp_mr(mr) || mr->ibmr.pd != pd));
// PREFETCH_WRITE on an MR without LOCAL_WRITE ("wrong write access") and a range out of
// the MR's bounds EFAULT. With IBV_ADVISE_MR_FLAG_FLUSH the prefetch is synchronous, and
// a range whose pages are not part of the process's address space is EFAULT then. The
// model has no page-fault cost to save, so a prefetch that passes the checks changes nothing.
int Ops::advise_mr(Client& c, const ipc::AdviseMrReq& r, NoBody*) {
  constexpr uint32_t kPrefetch = 0, kPrefetchWrite = 1, kNoFault = 2, kFlush = 1;
  if (!c.pds.count(r.pd)) return EINVAL;
  if (r.advice > kNoFault) return EOPNOTSUPP;
  if (r.flags & ~kFlush) return EINVAL;
  const Mr* mr = nullptr;
  for (const auto& [h, m] : c.mrs)
    if (m.lkey == r.lkey) mr = &m;
  if (!mr) return EFAULT;
  if (!(mr->access & nic::kAccessOnDemand) || mr->pd != r.pd) return EINVAL;
  const bool write = r.advice == kPrefetchWrite;
  if (write && !(mr->access & nic::kAccessLocalWrite)) return EFAULT;
  if (r.addr < mr->addr || r.addr - mr->addr > mr->length || r.length > mr->length - (r.addr - mr->addr))
    return EFAULT;
  if ((r.flags & kFlush) && (r.advice == kPrefetch || write) && r.length &&
      !range_mapped(c.pid, r.addr, r.length, write))
    return EFAULT;
  return 0;
}

int Ops::alloc_mw(Client& c, const ipc::AllocMwReq& r, ipc::AllocMwResp* out) {
  auto pd = c.pds.find(r.pd);
  if (pd == c.pds.end()) return ENOENT;
  const size_t dev = pd->second.dev;
  uint32_t rkey = 0;
  // The type is passed through: the HCA refuses one that is neither 1 nor 2 (EINVAL).
  if (int rc = hca(dev).alloc_mw(pd->second.pd, static_cast<nic::MwType>(r.type), &rkey)) return rc;
  *out = ipc::AllocMwResp{c.next_handle++, rkey};
  c.mws[out->handle] = Mw{dev, rkey};
  return 0;
}

int Ops::dealloc_mw(Client& c, const ipc::HandleReq& r, NoBody*) {
  auto it = c.mws.find(r.handle);
  if (it == c.mws.end()) return ENOENT;
  if (int rc = hca(it->second.dev).dealloc_mw(it->second.rkey)) return rc;
  c.mws.erase(it);
  return 0;
}

int Ops::create_comp_channel(Client& c, const ipc::CreateCompChannelReq& r,
                             ipc::CreateCompChannelResp* out, ReplyFds* fds) {
  if (r.dev_index >= c.devs.size()) return EINVAL;
  Channel ch;
  ch.map = SharedMap::make(s_.local_maps, "rdmasim-channel", ipc::RingView<ipc::CompEvent>::bytes_for(kChannelSlots));
  ch.efd = eventfd(0, EFD_SEMAPHORE | EFD_NONBLOCK | EFD_CLOEXEC);
  if (!ch.map.ok() || ch.efd < 0) return ENOMEM;
  init_ring(static_cast<ipc::RingHeader*>(ch.map.addr()), kChannelSlots, sizeof(ipc::CompEvent));
  ch.ring = ipc::RingView<ipc::CompEvent>(ch.map.addr(), kChannelSlots);
  *out = ipc::CreateCompChannelResp{c.next_handle++, kChannelSlots};
  fds->pass_map(ch.map);
  fds->lend(ch.efd);
  c.channels.emplace(out->handle, std::move(ch));
  return 0;
}

int Ops::destroy_comp_channel(Client& c, const ipc::HandleReq& r, NoBody*) {
  auto it = c.channels.find(r.handle);
  if (it == c.channels.end()) return ENOENT;
  for (const auto& [h, cq] : c.cqs)
    if (cq.channel == r.handle) return EBUSY;
  c.channels.erase(it);
  return 0;
}

int Ops::counters(Client&, const NoBody&, NoBody*, ReplyFds* fds) {
  // Any fabric size: the JSON goes in a sealed memfd, not in the message.
  const int fd = make_sealed_text("rdmasim-counters", s_.counters());
  if (fd < 0) return errno;
  fds->pass(fd);
  return 0;
}

int Ops::shutdown(Client& c, const NoBody&, NoBody*) {
  if (c.uid != getuid()) return EPERM;
  s_.stop();
  return 0;
}

}  // namespace rdmasim::daemon
