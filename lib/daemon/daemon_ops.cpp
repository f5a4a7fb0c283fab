// The daemon's control operations: each request is validated (length, handles, ranges)
// before it reaches the HCA model; a failure is a positive errno in the reply header.
#include <fcntl.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <set>

#include <spdlog/spdlog.h>

#include "lib/daemon/daemon.h"
#include "lib/daemon/client.h"
#include "lib/daemon/device_info.h"
#include "lib/daemon/sealed_text.h"
#include "lib/daemon/wire.h"

namespace rdmasim::daemon {

namespace {

size_t align_up(size_t v, size_t a) { return (v + a - 1) / a * a; }

template <typename T>
bool take(const uint8_t* body, size_t len, T* out) {
  if (len < sizeof(T)) return false;  // longer bodies: fields appended by newer clients
  std::memcpy(out, body, sizeof(T));
  return true;
}

void init_ring(ipc::RingHeader* h, uint32_t size, uint32_t slot_bytes) {
  new (h) ipc::RingHeader();
  h->size = size;
  h->slot_bytes = slot_bytes;
}

}  // namespace

void Daemon::handle(Client& c, const ipc::MsgHeader& h, const uint8_t* body, size_t len) {
  auto bad = [&](int err) {
    failed_requests_++;
    reply(c, h, err, nullptr, 0);
  };
  const bool needs_hello = h.op != ipc::Op::Hello && h.op != ipc::Op::Counters && h.op != ipc::Op::Shutdown;
  if (needs_hello && !c.hello) return bad(EINVAL);
  auto dev_ok = [&](uint32_t d) { return d < c.devs.size(); };
  auto new_handle = [&] { return c.next_handle++; };

  switch (h.op) {
    case ipc::Op::Hello: {
      ipc::HelloReq r;
      if (!take(body, len, &r) || c.hello) return bad(EINVAL);
      ipc::HelloResp out{};
      std::vector<int> fds;
      int rc = op_hello(c, r, &out, &fds);
      if (rc) return bad(rc);
      reply(c, h, 0, &out, sizeof out, fds);
      c.page_map.close_fd();  // passed on; keeps the daemon's fd count per client constant
      return;
    }
    case ipc::Op::QueryDevice: {
      ipc::QueryDeviceReq r;
      if (!take(body, len, &r) || !dev_ok(r.dev_index)) return bad(EINVAL);
      ipc::QueryDeviceResp out;
      fill_device(fabric_->nics()[c.devs[r.dev_index]], &out);
      return reply(c, h, 0, &out, sizeof out);
    }
    case ipc::Op::QueryPort: {
      ipc::QueryPortReq r;
      if (!take(body, len, &r) || !dev_ok(r.dev_index)) return bad(EINVAL);
      const topo::HostNic& nic = fabric_->nics()[c.devs[r.dev_index]];
      if (r.port != nic.port) return bad(EINVAL);
      ipc::QueryPortResp out;
      fill_port(nic, &out, hcas_[c.devs[r.dev_index]]->port_active());
      return reply(c, h, 0, &out, sizeof out);
    }
    case ipc::Op::AllocPd: {
      ipc::AllocPdReq r;
      if (!take(body, len, &r) || !dev_ok(r.dev_index)) return bad(EINVAL);
      const size_t dev = c.devs[r.dev_index];
      uint32_t pd = 0;
      if (int rc = hcas_[dev]->alloc_pd(&pd)) return bad(rc);
      ipc::HandleResp out{new_handle()};
      c.pds[out.handle] = Pd{dev, pd};
      return reply(c, h, 0, &out, sizeof out);
    }
    case ipc::Op::DeallocPd: {
      ipc::HandleReq r;
      if (!take(body, len, &r)) return bad(EINVAL);
      auto it = c.pds.find(r.handle);
      if (it == c.pds.end()) return bad(ENOENT);
      if (int rc = hcas_[it->second.dev]->dealloc_pd(it->second.pd)) return bad(rc);
      c.pds.erase(it);
      return reply(c, h, 0, nullptr, 0);
    }
    case ipc::Op::RegMr: {
      ipc::RegMrReq r;
      if (!take(body, len, &r)) return bad(EINVAL);
      ipc::RegMrResp out{};
      int rc = op_reg_mr(c, r, &out);
      return rc ? bad(rc) : reply(c, h, 0, &out, sizeof out);
    }
    case ipc::Op::ReregMr: {
      ipc::ReregMrReq r;
      if (!take(body, len, &r)) return bad(EINVAL);
      ipc::RegMrResp out{};
      int rc = op_rereg_mr(c, r, &out);
      return rc ? bad(rc) : reply(c, h, 0, &out, sizeof out);
    }
    case ipc::Op::DeregMr: {
      ipc::HandleReq r;
      if (!take(body, len, &r)) return bad(EINVAL);
      auto it = c.mrs.find(r.handle);
      if (it == c.mrs.end()) return bad(ENOENT);
      if (int rc = hcas_[it->second.dev]->dereg_mr(it->second.lkey)) return bad(rc);
      c.mrs.erase(it);
      return reply(c, h, 0, nullptr, 0);
    }
    case ipc::Op::AllocMw: {
      ipc::AllocMwReq r;
      if (!take(body, len, &r)) return bad(EINVAL);
      auto pd = c.pds.find(r.pd);
      if (pd == c.pds.end()) return bad(ENOENT);
      const size_t dev = pd->second.dev;
      uint32_t rkey = 0;
      // The type is passed through: the HCA refuses one that is neither 1 nor 2 (EINVAL).
      if (int rc = hcas_[dev]->alloc_mw(pd->second.pd, static_cast<nic::MwType>(r.type), &rkey))
        return bad(rc);
      ipc::AllocMwResp out{new_handle(), rkey};
      c.mws[out.handle] = Mw{dev, rkey};
      return reply(c, h, 0, &out, sizeof out);
    }
    case ipc::Op::DeallocMw: {
      ipc::HandleReq r;
      if (!take(body, len, &r)) return bad(EINVAL);
      auto it = c.mws.find(r.handle);
      if (it == c.mws.end()) return bad(ENOENT);
      if (int rc = hcas_[it->second.dev]->dealloc_mw(it->second.rkey)) return bad(rc);
      c.mws.erase(it);
      return reply(c, h, 0, nullptr, 0);
    }
    case ipc::Op::CreateCompChannel: {
      ipc::CreateCompChannelReq r;
      if (!take(body, len, &r) || !dev_ok(r.dev_index)) return bad(EINVAL);
      Channel ch;
      ch.map = SharedMap::create("rdmasim-channel", ipc::RingView<ipc::CompEvent>::bytes_for(kChannelSlots));
      ch.efd = eventfd(0, EFD_SEMAPHORE | EFD_NONBLOCK | EFD_CLOEXEC);
      if (!ch.map.ok() || ch.efd < 0) return bad(ENOMEM);
      init_ring(static_cast<ipc::RingHeader*>(ch.map.addr()), kChannelSlots, sizeof(ipc::CompEvent));
      ch.ring = ipc::RingView<ipc::CompEvent>(ch.map.addr(), kChannelSlots);
      ipc::CreateCompChannelResp out{new_handle(), kChannelSlots};
      std::vector<int> fds{ch.map.fd(), ch.efd};
      auto& stored = c.channels.emplace(out.handle, std::move(ch)).first->second;
      reply(c, h, 0, &out, sizeof out, fds);
      stored.map.close_fd();
      return;
    }
    case ipc::Op::DestroyCompChannel: {
      ipc::HandleReq r;
      if (!take(body, len, &r)) return bad(EINVAL);
      auto it = c.channels.find(r.handle);
      if (it == c.channels.end()) return bad(ENOENT);
      for (const auto& [hd, cq] : c.cqs)
        if (cq.channel == r.handle) return bad(EBUSY);
      c.channels.erase(it);
      return reply(c, h, 0, nullptr, 0);
    }
    case ipc::Op::CreateCq: {
      ipc::CreateCqReq r;
      if (!take(body, len, &r)) return bad(EINVAL);
      ipc::CreateCqResp out{};
      std::vector<int> fds;
      int rc = op_create_cq(c, r, &out, &fds);
      if (rc) return bad(rc);
      reply(c, h, 0, &out, sizeof out, fds);
      c.cqs.at(out.handle).map.close_fd();
      return;
    }
    case ipc::Op::DestroyCq: {
      ipc::HandleReq r;
      if (!take(body, len, &r)) return bad(EINVAL);
      int rc = destroy_cq(c, r.handle);
      return rc ? bad(rc) : reply(c, h, 0, nullptr, 0);
    }
    case ipc::Op::CreateSrq: {
      ipc::CreateSrqReq r;
      if (!take(body, len, &r)) return bad(EINVAL);
      ipc::CreateSrqResp out{};
      std::vector<int> fds;
      int rc = op_create_srq(c, r, &out, &fds);
      if (rc) return bad(rc);
      reply(c, h, 0, &out, sizeof out, fds);
      c.srqs.at(out.handle).map.close_fd();
      return;
    }
    case ipc::Op::ModifySrq: {
      ipc::ModifySrqReq r;
      if (!take(body, len, &r)) return bad(EINVAL);
      auto it = c.srqs.find(r.handle);
      if (it == c.srqs.end()) return bad(ENOENT);
      if (r.mask & ~3u) return bad(EINVAL);
      nic::SrqAttr a{r.max_wr, 0, r.srq_limit};
      if (int rc = hcas_[it->second.dev]->modify_srq(it->second.srqn, a, r.mask)) return bad(rc);
      return reply(c, h, 0, nullptr, 0);
    }
    case ipc::Op::QuerySrq: {
      ipc::HandleReq r;
      if (!take(body, len, &r)) return bad(EINVAL);
      auto it = c.srqs.find(r.handle);
      if (it == c.srqs.end()) return bad(ENOENT);
      nic::SrqAttr a;
      if (int rc = hcas_[it->second.dev]->query_srq(it->second.srqn, &a)) return bad(rc);
      ipc::QuerySrqResp out{a.max_wr, a.max_sge, a.srq_limit};
      return reply(c, h, 0, &out, sizeof out);
    }
    case ipc::Op::DestroySrq: {
      ipc::HandleReq r;
      if (!take(body, len, &r)) return bad(EINVAL);
      int rc = destroy_srq(c, r.handle);
      return rc ? bad(rc) : reply(c, h, 0, nullptr, 0);
    }
    case ipc::Op::CreateQp: {
      ipc::CreateQpReq r;
      if (!take(body, len, &r)) return bad(EINVAL);
      ipc::CreateQpResp out{};
      std::vector<int> fds;
      int rc = op_create_qp(c, r, &out, &fds);
      if (rc) return bad(rc);
      reply(c, h, 0, &out, sizeof out, fds);
      c.qps.at(out.handle).map.close_fd();
      return;
    }
    case ipc::Op::ModifyQp: {
      ipc::ModifyQpReq r;
      if (!take(body, len, &r)) return bad(EINVAL);
      auto it = c.qps.find(r.handle);
      if (it == c.qps.end()) return bad(ENOENT);
      if (r.attr_mask >= (1u << 21)) return bad(EINVAL);  // bits past IBV_QP_DEST_QPN
      if (int rc = hcas_[it->second.dev]->modify_qp(it->second.qpn, to_qp_attr(r.attr), r.attr_mask))
        return bad(rc);
      return reply(c, h, 0, nullptr, 0);
    }
    case ipc::Op::QueryQp: {
      ipc::QueryQpReq r;
      if (!take(body, len, &r)) return bad(EINVAL);
      auto it = c.qps.find(r.handle);
      if (it == c.qps.end()) return bad(ENOENT);
      nic::QpAttr a;
      nic::QpInitAttr init;
      if (int rc = hcas_[it->second.dev]->query_qp(it->second.qpn, &a, &init)) return bad(rc);
      ipc::QueryQpResp out{};
      out.attr = from_qp_attr(a);
      out.init.qp_type = static_cast<uint32_t>(init.type);
      out.init.sq_sig_all = init.sq_sig_all ? 1 : 0;
      out.init.cap.max_send_wr = init.caps.max_send_wr;
      out.init.cap.max_recv_wr = init.caps.max_recv_wr;
      out.init.cap.max_send_sge = init.caps.max_send_sge;
      out.init.cap.max_recv_sge = init.caps.max_recv_sge;
      out.init.cap.max_inline_data = init.caps.max_inline_data;
      return reply(c, h, 0, &out, sizeof out);
    }
    case ipc::Op::DestroyQp: {
      ipc::HandleReq r;
      if (!take(body, len, &r)) return bad(EINVAL);
      int rc = destroy_qp(c, r.handle);
      return rc ? bad(rc) : reply(c, h, 0, nullptr, 0);
    }
    case ipc::Op::Counters: {
      // Any fabric size: the JSON goes in a sealed memfd, not in the message.
      const int fd = make_sealed_text("rdmasim-counters", counters_json().dump());
      if (fd < 0) return bad(errno);
      reply(c, h, 0, nullptr, 0, {fd});
      close(fd);
      return;
    }
    case ipc::Op::Shutdown: {
      if (c.uid != getuid()) return bad(EPERM);
      stopping_ = true;
      return reply(c, h, 0, nullptr, 0);
    }
  }
  return bad(EOPNOTSUPP);
}

int Daemon::op_hello(Client& c, const ipc::HelloReq& r, ipc::HelloResp* out, std::vector<int>* fds) {
  if (r.version != ipc::kProtoVersion) return EPROTO;
  const auto& nics = fabric_->nics();
  if (nics.empty()) return ENODEV;
  std::string want(r.host, strnlen(r.host, sizeof r.host));
  if (want.empty()) {
    std::set<std::string> busy;
    for (const auto& [id, other] : clients_)
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

  c.page_map = SharedMap::create("rdmasim-client", sizeof(ipc::ClientPage));
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
  std::snprintf(out->fabric_name, sizeof out->fabric_name, "%s", fabric_->name().c_str());
  *fds = {c.page_map.fd(), global_ro_fd_, wake_fd_, c.async_efd};
  spdlog::info("rdmasim: client {} (pid {}) is host {}", c.id, c.pid, c.host);
  return 0;
}

int Daemon::op_reg_mr(Client& c, const ipc::RegMrReq& r, ipc::RegMrResp* out) {
  auto pd = c.pds.find(r.pd);
  if (pd == c.pds.end()) return ENOENT;
  if (r.length == 0 || r.addr + r.length < r.addr) return EINVAL;
  const bool need_write = (r.access & nic::kAccessLocalWrite) != 0;
  if (!range_mapped(read_maps(c.pid), r.addr, r.length, need_write)) return EFAULT;
  nic::MrKeys keys;
  const size_t dev = pd->second.dev;
  if (int rc = hcas_[dev]->reg_mr(pd->second.pd, c.mem.get(), r.addr, r.length, r.iova, r.access, &keys))
    return rc;
  out->handle = c.next_handle++;
  out->lkey = keys.lkey;
  out->rkey = keys.rkey;
  c.mrs[out->handle] = Mr{dev, keys.lkey, r.access, r.addr, r.length};
  return 0;
}

int Daemon::op_rereg_mr(Client& c, const ipc::ReregMrReq& r, ipc::RegMrResp* out) {
  auto it = c.mrs.find(r.handle);
  if (it == c.mrs.end()) return ENOENT;
  Mr& mr = it->second;
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
  if (!range_mapped(read_maps(c.pid), addr, length, (access & nic::kAccessLocalWrite) != 0))
    return EFAULT;
  nic::MrKeys keys;
  if (int rc = hcas_[mr.dev]->rereg_mr(mr.lkey, r.flags, hca_pd, c.mem.get(), addr, length,
                                        r.access, &keys))
    return rc;
  mr.access = access;
  mr.addr = addr;
  mr.length = length;
  out->handle = r.handle;
  out->lkey = keys.lkey;
  out->rkey = keys.rkey;
  return 0;
}

int Daemon::op_create_cq(Client& c, const ipc::CreateCqReq& r, ipc::CreateCqResp* out, std::vector<int>* fds) {
  if (r.dev_index >= c.devs.size()) return EINVAL;
  const size_t dev = c.devs[r.dev_index];
  if (r.cqe == 0 || r.cqe > hcas_[dev]->config().max_cqe || r.cqe >= (1u << 30)) return EINVAL;
  if (r.channel != 0 && !c.channels.count(r.channel)) return ENOENT;
  const uint32_t ring_size = ipc::round_up_pow2(r.cqe + 1);
  const size_t control_offset = align_up(ipc::RingView<ipc::Cqe>::bytes_for(ring_size), ipc::kCacheLine);
  Cq cq;
  cq.dev = dev;
  cq.cqe = r.cqe;
  cq.channel = r.channel;
  cq.map = SharedMap::create("rdmasim-cq", control_offset + sizeof(ipc::CqControl));
  if (!cq.map.ok()) return ENOMEM;
  init_ring(static_cast<ipc::RingHeader*>(cq.map.addr()), ring_size, sizeof(ipc::Cqe));
  cq.ring = ipc::RingView<ipc::Cqe>(cq.map.addr(), ring_size);
  cq.ctl = new (static_cast<char*>(cq.map.addr()) + control_offset) ipc::CqControl();
  const uint32_t handle = c.next_handle++;
  const uint32_t client = c.id;
  auto sink = [this, client, handle](const nic::Completion& comp) { router_.deliver(client, handle, comp); };
  if (int rc = hcas_[dev]->create_cq(r.cqe, sink, &cq.cq)) return rc;
  out->handle = handle;
  out->cqe = r.cqe;
  out->ring_size = ring_size;
  out->control_offset = control_offset;
  router_.own(EventRouter::Kind::Cq, dev, cq.cq, client, handle);
  *fds = {cq.map.fd()};
  c.cqs.emplace(handle, std::move(cq));
  return 0;
}

int Daemon::destroy_cq(Client& c, uint32_t handle) {
  auto it = c.cqs.find(handle);
  if (it == c.cqs.end()) return ENOENT;
  for (const auto& [hd, qp] : c.qps)
    if (qp.send_cq == handle || qp.recv_cq == handle) return EBUSY;
  if (int rc = hcas_[it->second.dev]->destroy_cq(it->second.cq)) return rc;
  router_.disown(EventRouter::Kind::Cq, it->second.dev, it->second.cq);
  c.cqs.erase(it);
  return 0;
}

int Daemon::op_create_srq(Client& c, const ipc::CreateSrqReq& r, ipc::CreateSrqResp* out, std::vector<int>* fds) {
  auto pd = c.pds.find(r.pd);
  if (pd == c.pds.end()) return ENOENT;
  if (r.max_sge > ipc::kMaxSge || r.max_wr == 0 || r.max_wr >= (1u << 30)) return EINVAL;
  const size_t dev = pd->second.dev;
  nic::SrqAttr a{r.max_wr, r.max_sge, r.srq_limit};
  Srq srq;
  srq.dev = dev;
  if (int rc = hcas_[dev]->create_srq(pd->second.pd, a, &srq.srqn)) return rc;
  nic::SrqAttr granted = a;
  hcas_[dev]->query_srq(srq.srqn, &granted);
  granted.max_sge = std::min(granted.max_sge, ipc::kMaxSge);
  const uint32_t ring_size = ipc::round_up_pow2(std::max(granted.max_wr, 1u));
  srq.max_sge = granted.max_sge;
  srq.map = SharedMap::create("rdmasim-srq", ipc::RingView<ipc::RqWqe>::bytes_for(ring_size));
  if (!srq.map.ok()) {
    hcas_[dev]->destroy_srq(srq.srqn);
    return ENOMEM;
  }
  init_ring(static_cast<ipc::RingHeader*>(srq.map.addr()), ring_size, sizeof(ipc::RqWqe));
  srq.ring = ipc::RingView<ipc::RqWqe>(srq.map.addr(), ring_size);
  out->handle = c.next_handle++;
  out->srqn = srq.srqn;
  out->max_wr = granted.max_wr;
  out->max_sge = granted.max_sge;
  out->ring_size = ring_size;
  router_.own(EventRouter::Kind::Srq, dev, srq.srqn, c.id, out->handle);
  *fds = {srq.map.fd()};
  c.srqs.emplace(out->handle, std::move(srq));
  return 0;
}

int Daemon::destroy_srq(Client& c, uint32_t handle) {
  auto it = c.srqs.find(handle);
  if (it == c.srqs.end()) return ENOENT;
  for (const auto& [hd, qp] : c.qps)
    if (qp.srq == handle) return EBUSY;
  if (int rc = hcas_[it->second.dev]->destroy_srq(it->second.srqn)) return rc;
  router_.disown(EventRouter::Kind::Srq, it->second.dev, it->second.srqn);
  c.srqs.erase(it);
  return 0;
}

int Daemon::op_create_qp(Client& c, const ipc::CreateQpReq& r, ipc::CreateQpResp* out, std::vector<int>* fds) {
  auto pd = c.pds.find(r.pd);
  auto scq = c.cqs.find(r.send_cq);
  auto rcq = c.cqs.find(r.recv_cq);
  if (pd == c.pds.end() || scq == c.cqs.end() || rcq == c.cqs.end()) return ENOENT;
  const size_t dev = pd->second.dev;
  if (scq->second.dev != dev || rcq->second.dev != dev) return EINVAL;
  const Srq* srq = nullptr;
  if (r.srq != 0) {
    auto s = c.srqs.find(r.srq);
    if (s == c.srqs.end()) return ENOENT;
    if (s->second.dev != dev) return EINVAL;
    srq = &s->second;
  }
  using nic::QpType;
  if (r.qp_type != static_cast<uint32_t>(QpType::RC) && r.qp_type != static_cast<uint32_t>(QpType::UC) &&
      r.qp_type != static_cast<uint32_t>(QpType::UD))
    return EINVAL;
  if (r.cap.max_send_sge > ipc::kMaxSge || r.cap.max_recv_sge > ipc::kMaxSge ||
      r.cap.max_inline_data > ipc::kMaxInline || r.cap.max_send_wr >= (1u << 30) ||
      r.cap.max_recv_wr >= (1u << 30))
    return EINVAL;
  nic::QpInitAttr init;
  init.pd = pd->second.pd;
  init.type = static_cast<nic::QpType>(r.qp_type);
  init.send_cq = scq->second.cq;
  init.recv_cq = rcq->second.cq;
  init.srq = srq ? srq->srqn : 0;
  init.caps = {r.cap.max_send_wr, r.cap.max_recv_wr, r.cap.max_send_sge, r.cap.max_recv_sge,
               r.cap.max_inline_data};
  init.sq_sig_all = r.sq_sig_all != 0;
  Qp qp;
  qp.dev = dev;
  if (int rc = hcas_[dev]->create_qp(init, &qp.qpn)) return rc;
  nic::QpCaps& g = init.caps;
  g.max_send_sge = std::min(g.max_send_sge, ipc::kMaxSge);
  g.max_recv_sge = std::min(g.max_recv_sge, ipc::kMaxSge);
  g.max_inline_data = std::min(g.max_inline_data, ipc::kMaxInline);
  const uint32_t sq_size = ipc::round_up_pow2(std::max(g.max_send_wr, 1u));
  const uint32_t rq_size = srq ? 0 : ipc::round_up_pow2(std::max(g.max_recv_wr, 1u));
  const size_t rq_offset = align_up(ipc::RingView<ipc::SqWqe>::bytes_for(sq_size), 4096);
  const size_t total = rq_offset + (rq_size ? ipc::RingView<ipc::RqWqe>::bytes_for(rq_size) : 0);
  qp.map = SharedMap::create("rdmasim-qp", total);
  if (!qp.map.ok()) {
    hcas_[dev]->destroy_qp(qp.qpn);
    return ENOMEM;
  }
  init_ring(static_cast<ipc::RingHeader*>(qp.map.addr()), sq_size, sizeof(ipc::SqWqe));
  qp.sq = ipc::RingView<ipc::SqWqe>(qp.map.addr(), sq_size);
  if (rq_size) {
    char* rq_base = static_cast<char*>(qp.map.addr()) + rq_offset;
    init_ring(reinterpret_cast<ipc::RingHeader*>(rq_base), rq_size, sizeof(ipc::RqWqe));
    qp.rq = ipc::RingView<ipc::RqWqe>(rq_base, rq_size);
  }
  qp.type = r.qp_type;
  qp.send_cq = r.send_cq;
  qp.recv_cq = r.recv_cq;
  qp.srq = r.srq;
  qp.max_send_sge = g.max_send_sge;
  qp.max_recv_sge = g.max_recv_sge;
  qp.max_inline = g.max_inline_data;
  qp.sq_sig_all = init.sq_sig_all;
  out->handle = c.next_handle++;
  out->qp_num = qp.qpn;
  out->cap.max_send_wr = g.max_send_wr;
  out->cap.max_recv_wr = srq ? 0 : g.max_recv_wr;
  out->cap.max_send_sge = g.max_send_sge;
  out->cap.max_recv_sge = srq ? 0 : g.max_recv_sge;
  out->cap.max_inline_data = g.max_inline_data;
  out->sq_size = sq_size;
  out->rq_size = rq_size;
  out->rq_offset = rq_offset;
  router_.own(EventRouter::Kind::Qp, dev, qp.qpn, c.id, out->handle);
  *fds = {qp.map.fd()};
  c.qps.emplace(out->handle, std::move(qp));
  return 0;
}

int Daemon::destroy_qp(Client& c, uint32_t handle) {
  auto it = c.qps.find(handle);
  if (it == c.qps.end()) return ENOENT;
  if (int rc = hcas_[it->second.dev]->destroy_qp(it->second.qpn)) return rc;
  router_.disown(EventRouter::Kind::Qp, it->second.dev, it->second.qpn);
  c.qps.erase(it);
  return 0;
}

void Daemon::destroy_all(Client& c) {
  // Children before parents: QPs, MWs (they pin MRs), SRQs, CQs, MRs, PDs, channels.
  while (!c.qps.empty()) {
    auto it = c.qps.begin();
    hcas_[it->second.dev]->destroy_qp(it->second.qpn);
    router_.disown(EventRouter::Kind::Qp, it->second.dev, it->second.qpn);
    c.qps.erase(it);
  }
  for (auto& [hd, mw] : c.mws) hcas_[mw.dev]->dealloc_mw(mw.rkey);
  c.mws.clear();
  while (!c.srqs.empty()) {
    auto it = c.srqs.begin();
    hcas_[it->second.dev]->destroy_srq(it->second.srqn);
    router_.disown(EventRouter::Kind::Srq, it->second.dev, it->second.srqn);
    c.srqs.erase(it);
  }
  while (!c.cqs.empty()) {
    auto it = c.cqs.begin();
    hcas_[it->second.dev]->destroy_cq(it->second.cq);
    router_.disown(EventRouter::Kind::Cq, it->second.dev, it->second.cq);
    c.cqs.erase(it);
  }
  for (auto& [hd, mr] : c.mrs) hcas_[mr.dev]->dereg_mr(mr.lkey);
  c.mrs.clear();
  for (auto& [hd, pd] : c.pds) hcas_[pd.dev]->dealloc_pd(pd.pd);
  c.pds.clear();
  c.channels.clear();
}

}  // namespace rdmasim::daemon
