// The daemon backend's operations: requests of lib/ipc/proto.h, answers checked before use.
#include "lib/backend/daemon_backend.h"

#include <unistd.h>

#include <cstring>

#include "lib/backend/verbs_wire.h"

namespace rdmasim::backend {
namespace {

// Takes the single shared memory of a create response (its memfd mapped, or the mapping
// lent in its place) and closes every fd that came with it.
bool take_mapping(int nfds, int* fds, const Mapping* lent, Mapping& m) {
  if (nfds < 1) return false;
  const bool ok = map_passed(fds[0], lent[0], &m);
  for (int i = 0; i < nfds; ++i)
    if (fds[i] >= 0) close(fds[i]);
  return ok;
}

uint32_t min_u32(uint32_t a, uint32_t b) { return a < b ? a : b; }

}  // namespace

int daemon_devices(std::vector<std::unique_ptr<Backend>>* out) {
  DaemonClient* dc = DaemonClient::get();
  if (!dc) return errno ? errno : ECONNREFUSED;
  uint32_t n = dc->hello().num_devices;
  if (n > ipc::kMaxDevices) n = ipc::kMaxDevices;
  for (uint32_t i = 0; i < n; ++i) out->push_back(std::make_unique<DaemonBackend>(*dc, i));
  return 0;
}

int DaemonBackend::destroy(ipc::Op op, uint32_t handle) {
  ipc::HandleReq req{handle};
  return client_.call(op, &req, sizeof req, nullptr, 0);
}

int DaemonBackend::device_info(DeviceInfo* out) {
  ipc::QueryDeviceReq req{dev_};
  ipc::QueryDeviceResp resp{};
  if (int rc = client_.call(ipc::Op::QueryDevice, &req, sizeof req, &resp, sizeof resp)) return rc;
  std::memcpy(out->name, resp.name, sizeof out->name);
  out->name[sizeof out->name - 1] = '\0';
  out->node_guid = resp.node_guid;
  out->transport_type = static_cast<ibv_transport_type>(resp.transport_type);
  out->node_type = static_cast<ibv_node_type>(resp.node_type ? resp.node_type
                                                             : uint32_t{IBV_NODE_CA});
  return 0;
}

int DaemonBackend::query_device(ibv_device_attr* out) {
  ipc::QueryDeviceReq req{dev_};
  ipc::QueryDeviceResp resp{};
  if (int rc = client_.call(ipc::Op::QueryDevice, &req, sizeof req, &resp, sizeof resp)) return rc;
  *out = from_wire(resp);
  return 0;
}

int DaemonBackend::query_port(uint8_t port, PortInfo* out) {
  ipc::QueryPortReq req{dev_, port};
  ipc::QueryPortResp resp{};
  if (int rc = client_.call(ipc::Op::QueryPort, &req, sizeof req, &resp, sizeof resp)) return rc;
  out->attr = from_wire(resp.attr);
  out->num_gids = min_u32(resp.num_gids, ipc::kMaxGids);
  std::memcpy(out->gids, resp.gids, sizeof out->gids);
  std::memcpy(out->gid_types, resp.gid_types, sizeof out->gid_types);
  return 0;
}

int DaemonBackend::open_context(ContextLinks* out) {
  out->async_fd = client_.async_fd();
  out->doorbell = client_.doorbell();
  out->waiter = client_.waiter();
  return 0;
}

int DaemonBackend::next_async_event(uint32_t* type, uint32_t* handle) {
  ipc::ClientPage* page = client_.client_page();
  ipc::RingHeader& hdr = page->async_ring_hdr;
  const uint32_t size = hdr.size ? hdr.size : 256;
  const uint32_t idx = hdr.consumer.load(std::memory_order_relaxed);
  ipc::AsyncEventSlot& slot = page->async_slots[idx & (size - 1)];
  if (std::atomic_ref<uint32_t>(slot.seq).load(std::memory_order_acquire) != idx + 1) return EAGAIN;
  *type = slot.event_type;
  *handle = slot.handle;
  hdr.consumer.store(idx + 1, std::memory_order_release);
  return 0;
}

int DaemonBackend::alloc_pd(uint32_t* handle) {
  ipc::AllocPdReq req{dev_};
  ipc::HandleResp resp{};
  if (int rc = client_.call(ipc::Op::AllocPd, &req, sizeof req, &resp, sizeof resp)) return rc;
  *handle = resp.handle;
  return 0;
}

int DaemonBackend::dealloc_pd(uint32_t handle) { return destroy(ipc::Op::DeallocPd, handle); }

int DaemonBackend::reg_mr(uint32_t pd, uint64_t addr, uint64_t length, uint64_t iova,
                          uint32_t access, MrKeys* out) {
  ipc::RegMrReq req{pd, access, addr, length, iova};
  ipc::RegMrResp resp{};
  if (int rc = client_.call(ipc::Op::RegMr, &req, sizeof req, &resp, sizeof resp)) return rc;
  *out = {resp.handle, resp.lkey, resp.rkey};
  return 0;
}

int DaemonBackend::rereg_mr(uint32_t mr, uint32_t flags, uint32_t pd, uint64_t addr,
                            uint64_t length, uint32_t access, MrKeys* out) {
  ipc::ReregMrReq req{mr, flags, pd, access, addr, length};
  ipc::RegMrResp resp{};
  if (int rc = client_.call(ipc::Op::ReregMr, &req, sizeof req, &resp, sizeof resp)) return rc;
  *out = {resp.handle, resp.lkey, resp.rkey};
  return 0;
}

int DaemonBackend::dereg_mr(uint32_t handle) { return destroy(ipc::Op::DeregMr, handle); }

int DaemonBackend::alloc_mw(uint32_t pd, ibv_mw_type type, uint32_t* handle, uint32_t* rkey) {
  ipc::AllocMwReq req{pd, static_cast<uint32_t>(type)};
  ipc::AllocMwResp resp{};
  if (int rc = client_.call(ipc::Op::AllocMw, &req, sizeof req, &resp, sizeof resp)) return rc;
  *handle = resp.handle;
  *rkey = resp.rkey;
  return 0;
}

int DaemonBackend::dealloc_mw(uint32_t handle) { return destroy(ipc::Op::DeallocMw, handle); }

int DaemonBackend::create_comp_channel(ChannelRing* out) {
  ipc::CreateCompChannelReq req{dev_};
  ipc::CreateCompChannelResp resp{};
  int fds[2] = {-1, -1};
  Mapping lent[2];
  int nfds = 0;
  if (int rc = client_.call(ipc::Op::CreateCompChannel, &req, sizeof req, &resp, sizeof resp,
                            fds, 2, &nfds, lent))
    return rc;
  if (nfds < 2) {
    for (int i = 0; i < nfds; ++i) close(fds[i]);
    destroy(ipc::Op::DestroyCompChannel, resp.handle);
    return EPROTO;
  }
  const bool mapped = map_passed(fds[0], lent[0], &out->map);
  if (fds[0] >= 0) close(fds[0]);
  if (!mapped ||
      ipc::RingView<ipc::CompEvent>::bytes_for(resp.ring_size) > out->map.len) {
    close(fds[1]);
    out->map.unmap();
    destroy(ipc::Op::DestroyCompChannel, resp.handle);
    return EPROTO;
  }
  out->ring = ipc::RingView<ipc::CompEvent>(out->map.base, resp.ring_size);
  out->handle = resp.handle;
  out->fd = fds[1];
  return 0;
}

int DaemonBackend::destroy_comp_channel(uint32_t handle) {
  return destroy(ipc::Op::DestroyCompChannel, handle);
}

namespace {
// Takes the CQ memory of a CreateCq/ResizeCq reply, checking the layout against its size.
bool take_cq(int nfds, int* fds, const Mapping* lent, const ipc::CreateCqResp& resp, CqRing* out) {
  if (!take_mapping(nfds, fds, lent, out->map) ||
      resp.control_offset + sizeof(ipc::CqControl) > out->map.len ||
      ipc::RingView<ipc::Cqe>::bytes_for(resp.ring_size) > out->map.len) {
    out->map.unmap();
    return false;
  }
  out->handle = resp.handle;
  out->cqe = static_cast<int>(resp.cqe);
  out->ring = ipc::RingView<ipc::Cqe>(out->map.base, resp.ring_size);
  out->control = reinterpret_cast<ipc::CqControl*>(static_cast<char*>(out->map.base) +
                                                   resp.control_offset);
  return true;
}
}  // namespace

int DaemonBackend::create_cq(uint32_t cqe, uint32_t channel, uint32_t comp_vector, CqRing* out) {
  ipc::CreateCqReq req{dev_, cqe, channel, comp_vector};
  ipc::CreateCqResp resp{};
  int fds[2];
  Mapping lent[2];
  int nfds = 0;
  if (int rc = client_.call(ipc::Op::CreateCq, &req, sizeof req, &resp, sizeof resp, fds, 2, &nfds, lent))
    return rc;
  if (!take_cq(nfds, fds, lent, resp, out)) {
    destroy(ipc::Op::DestroyCq, resp.handle);
    return EPROTO;
  }
  return 0;
}

int DaemonBackend::resize_cq(uint32_t handle, uint32_t cqe, CqRing* out) {
  ipc::ResizeCqReq req{handle, cqe};
  ipc::CreateCqResp resp{};
  int fds[2];
  Mapping lent[2];
  int nfds = 0;
  if (int rc = client_.call(ipc::Op::ResizeCq, &req, sizeof req, &resp, sizeof resp, fds, 2, &nfds, lent))
    return rc;
  return take_cq(nfds, fds, lent, resp, out) ? 0 : EPROTO;
}

int DaemonBackend::alloc_dm(uint64_t length, uint32_t log_align_req, uint32_t* handle, Mapping* out) {
  ipc::AllocDmReq req{dev_, log_align_req, length};
  ipc::HandleResp resp{};
  int fds[2];
  Mapping lent[2];
  int nfds = 0;
  if (int rc = client_.call(ipc::Op::AllocDm, &req, sizeof req, &resp, sizeof resp, fds, 2, &nfds, lent))
    return rc;
  if (!take_mapping(nfds, fds, lent, *out) || out->len < length) {
    out->unmap();
    destroy(ipc::Op::FreeDm, resp.handle);
    return EPROTO;
  }
  *handle = resp.handle;
  return 0;
}

int DaemonBackend::free_dm(uint32_t handle) { return destroy(ipc::Op::FreeDm, handle); }

int DaemonBackend::advise_mr(uint32_t pd, uint32_t advice, uint32_t flags, const ibv_sge& sge) {
  ipc::AdviseMrReq req{pd, advice, flags, sge.lkey, sge.addr, sge.length};
  return client_.call(ipc::Op::AdviseMr, &req, sizeof req, nullptr, 0);
}

int DaemonBackend::reg_dm_mr(uint32_t pd, uint32_t dm, uint64_t offset, uint64_t length, uint32_t access,
                             MrKeys* out) {
  ipc::RegDmMrReq req{pd, dm, access, 0, offset, length};
  ipc::RegMrResp resp{};
  if (int rc = client_.call(ipc::Op::RegDmMr, &req, sizeof req, &resp, sizeof resp)) return rc;
  *out = MrKeys{resp.handle, resp.lkey, resp.rkey};
  return 0;
}

int DaemonBackend::destroy_cq(uint32_t handle) { return destroy(ipc::Op::DestroyCq, handle); }

int DaemonBackend::create_srq(uint32_t pd, const ibv_srq_attr& want, SrqRing* out) {
  return srq_call(ipc::CreateSrqReq{pd, 0, want.max_wr, want.max_sge, want.srq_limit, 0}, want, out);
}

int DaemonBackend::create_xrc_srq(uint32_t pd, uint32_t xrcd, uint32_t cq, const ibv_srq_attr& want,
                                  SrqRing* out) {
  return srq_call(ipc::CreateSrqReq{pd, cq, want.max_wr, want.max_sge, want.srq_limit, xrcd}, want, out);
}

int DaemonBackend::srq_call(const ipc::CreateSrqReq& req, const ibv_srq_attr& want, SrqRing* out) {
  ipc::CreateSrqResp resp{};
  int fds[2];
  Mapping lent[2];
  int nfds = 0;
  if (int rc = client_.call(ipc::Op::CreateSrq, &req, sizeof req, &resp, sizeof resp, fds, 2, &nfds, lent))
    return rc;
  if (!take_mapping(nfds, fds, lent, out->map) ||
      ipc::RingView<ipc::RqWqe>::bytes_for(resp.ring_size) > out->map.len) {
    out->map.unmap();
    destroy(ipc::Op::DestroySrq, resp.handle);
    return EPROTO;
  }
  out->handle = resp.handle;
  out->srq_num = resp.srqn;
  out->ring = ipc::RingView<ipc::RqWqe>(out->map.base, resp.ring_size);
  out->granted = want;
  out->granted.max_wr = resp.max_wr;
  out->granted.max_sge = resp.max_sge;
  out->depth = min_u32(resp.max_wr, resp.ring_size);
  return 0;
}

int DaemonBackend::modify_srq(uint32_t handle, const ibv_srq_attr& attr, int mask) {
  ipc::ModifySrqReq req{handle, static_cast<uint32_t>(mask), attr.max_wr, attr.srq_limit};
  return client_.call(ipc::Op::ModifySrq, &req, sizeof req, nullptr, 0);
}

int DaemonBackend::query_srq(uint32_t handle, ibv_srq_attr* out) {
  ipc::HandleReq req{handle};
  ipc::QuerySrqResp resp{};
  if (int rc = client_.call(ipc::Op::QuerySrq, &req, sizeof req, &resp, sizeof resp)) return rc;
  out->max_wr = resp.max_wr;
  out->max_sge = resp.max_sge;
  out->srq_limit = resp.srq_limit;
  return 0;
}

int DaemonBackend::destroy_srq(uint32_t handle) { return destroy(ipc::Op::DestroySrq, handle); }

int DaemonBackend::create_qp(const QpRequest& want, QpRings* out) {
  ipc::CreateQpReq req{};
  req.pd = want.pd;
  req.qp_type = static_cast<uint32_t>(want.type);
  req.send_cq = want.send_cq;
  req.recv_cq = want.recv_cq;
  req.srq = want.srq;
  req.xrcd = want.xrcd;
  req.sq_sig_all = want.sq_sig_all ? 1 : 0;
  req.cap = to_wire(want.cap);
  return qp_call(ipc::Op::CreateQp, &req, sizeof req, out);
}

int DaemonBackend::open_qp(uint32_t xrcd, uint32_t qp_num, QpRings* out) {
  ipc::OpenQpReq req{xrcd, qp_num};
  return qp_call(ipc::Op::OpenQp, &req, sizeof req, out);
}

int DaemonBackend::qp_call(ipc::Op op, const void* req, size_t req_len, QpRings* out) {
  ipc::CreateQpResp resp{};
  int fds[2];
  Mapping lent[2];
  int nfds = 0;
  if (int rc = client_.call(op, req, req_len, &resp, sizeof resp, fds, 2, &nfds, lent)) return rc;
  // No receive ring (rq_size 0) with an SRQ and on XRC QPs.
  const bool ok = take_mapping(nfds, fds, lent, out->map) &&
                  ipc::RingView<ipc::SqWqe>::bytes_for(resp.sq_size) <= out->map.len &&
                  (resp.rq_size == 0 ||
                   resp.rq_offset + ipc::RingView<ipc::RqWqe>::bytes_for(resp.rq_size) <= out->map.len);
  if (!ok) {
    out->map.unmap();
    destroy(ipc::Op::DestroyQp, resp.handle);
    return EPROTO;
  }
  out->handle = resp.handle;
  out->qp_num = resp.qp_num;
  out->cap = from_wire(resp.cap);
  out->sq = ipc::RingView<ipc::SqWqe>(out->map.base, resp.sq_size);
  if (resp.rq_size)
    out->rq = ipc::RingView<ipc::RqWqe>(static_cast<char*>(out->map.base) + resp.rq_offset,
                                        resp.rq_size);
  out->sq_depth = min_u32(resp.cap.max_send_wr, resp.sq_size);
  out->rq_depth = min_u32(resp.cap.max_recv_wr, resp.rq_size);
  return 0;
}

int DaemonBackend::modify_qp(uint32_t handle, const ibv_qp_attr& attr, int mask) {
  ipc::ModifyQpReq req{handle, static_cast<uint32_t>(mask), to_wire(attr)};
  return client_.call(ipc::Op::ModifyQp, &req, sizeof req, nullptr, 0);
}

int DaemonBackend::query_qp(uint32_t handle, int mask, ibv_qp_attr* attr, ibv_qp_init_attr* init) {
  ipc::QueryQpReq req{handle, static_cast<uint32_t>(mask)};
  ipc::QueryQpResp resp{};
  if (int rc = client_.call(ipc::Op::QueryQp, &req, sizeof req, &resp, sizeof resp)) return rc;
  *attr = from_wire(resp.attr);
  *init = from_wire(resp.init);
  return 0;
}

int DaemonBackend::destroy_qp(uint32_t handle) { return destroy(ipc::Op::DestroyQp, handle); }

int DaemonBackend::open_xrcd(bool inode, uint64_t st_dev, uint64_t st_ino, uint32_t oflags,
                             uint32_t* handle) {
  ipc::OpenXrcdReq req{dev_, oflags, inode ? 1u : 0u, 0, st_dev, st_ino};
  ipc::HandleResp resp{};
  if (int rc = client_.call(ipc::Op::OpenXrcd, &req, sizeof req, &resp, sizeof resp)) return rc;
  *handle = resp.handle;
  return 0;
}

int DaemonBackend::close_xrcd(uint32_t handle) { return destroy(ipc::Op::CloseXrcd, handle); }

}  // namespace rdmasim::backend
