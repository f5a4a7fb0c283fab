// The exported control-path verbs: devices and contexts, PD/MR/AH, CQs, SRQs, QPs,
// completion channels and async events. Each call is one request to the fabric daemon
// (lib/ipc/proto.h); in hardware mode it forwards to the real libibverbs instead.
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <endian.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include "lib/backend/hardware.h"
#include "lib/backend/verbs_wire.h"
#include "lib/verbs/objects.h"

using rdmasim::backend::DaemonClient;
using namespace rdmasim::verbs;
namespace ipc = rdmasim::ipc;

// The calls that also exist at IBVERBS_1.0 (compat.cpp) are defined under a private name
// and exported as the default name@@IBVERBS_1.1, as rdma-core does.
#define RDMASIM_V11(name) rdmasim_v11_##name
#define RDMASIM_SYMVER_V11(name) __asm__(".symver rdmasim_v11_" #name ", " #name "@@IBVERBS_1.1");

namespace rdmasim::verbs {
void Mapping::unmap() {
  if (base) munmap(base, len);
  base = nullptr;
  len = 0;
}
}  // namespace rdmasim::verbs

namespace {

template <typename T>
T* fail(int err) {
  errno = err;
  return nullptr;
}

Context* ctx_of(ibv_context* c) { return Context::from(c); }
uint32_t dev_index(ibv_context* c) { return ctx_of(c)->device->index; }

int call(ibv_context* c, ipc::Op op, const void* req, size_t req_len, void* resp = nullptr,
         size_t resp_len = 0, int* fds = nullptr, int max_fds = 0, int* nfds = nullptr) {
  return ctx_of(c)->client->call(op, req, req_len, resp, resp_len, fds, max_fds, nfds);
}

void destroy_handle(ibv_context* c, ipc::Op op, uint32_t handle) {
  ipc::HandleReq req{handle};
  call(c, op, &req, sizeof(req));
}

// Maps the single memfd of a create response.
bool take_mapping(int nfds, int* fds, Mapping& m) {
  if (nfds < 1) return false;
  m.base = rdmasim::backend::map_memfd(fds[0], &m.len, true);
  for (int i = 0; i < nfds; ++i) close(fds[i]);
  return m.base != nullptr;
}

// rdma-core's channel and async fds block in read() until an event arrives; an
// application that wants EAGAIN sets O_NONBLOCK itself. The daemon hands them out
// non-blocking (the flag lives in the shared file description; the daemon only writes).
void make_blocking(int fd) {
  int fl = fcntl(fd, F_GETFL);
  if (fl >= 0 && (fl & O_NONBLOCK)) fcntl(fd, F_SETFL, fl & ~O_NONBLOCK);
}

// ---- devices ----

struct DeviceTable {
  Device* devices[ipc::kMaxDevices] = {};
  uint32_t count = 0;
  int error = 0;
};

DeviceTable& device_table() {
  static DeviceTable table;
  static std::once_flag once;
  std::call_once(once, [] {
    DaemonClient* dc = DaemonClient::get();
    if (!dc) {
      table.error = errno ? errno : ECONNREFUSED;
      fprintf(stderr, "rdmasim: cannot reach the fabric daemon: %s\n", strerror(table.error));
      return;
    }
    uint32_t n = dc->hello().num_devices;
    if (n > ipc::kMaxDevices) n = ipc::kMaxDevices;
    for (uint32_t i = 0; i < n; ++i) {
      auto* d = new Device();
      d->index = i;
      ipc::QueryDeviceReq req{i};
      if (int rc = dc->call(ipc::Op::QueryDevice, &req, sizeof(req), &d->info, sizeof(d->info))) {
        delete d;
        table.error = rc;
        break;
      }
      d->info.name[sizeof(d->info.name) - 1] = '\0';
      d->dev.node_type = static_cast<ibv_node_type>(d->info.node_type ? d->info.node_type
                                                                      : uint32_t{IBV_NODE_CA});
      d->dev.transport_type = static_cast<ibv_transport_type>(d->info.transport_type);
      snprintf(d->dev.name, sizeof(d->dev.name), "%s", d->info.name);
      snprintf(d->dev.dev_name, sizeof(d->dev.dev_name), "uverbs%u", i);
      snprintf(d->dev.dev_path, sizeof(d->dev.dev_path), "/dev/infiniband/uverbs%u", i);
      snprintf(d->dev.ibdev_path, sizeof(d->dev.ibdev_path), "/sys/class/infiniband/%s",
               d->info.name);
      table.devices[table.count++] = d;
    }
  });
  return table;
}

// What ibv_get_device_list returns in hardware mode when the real library gives nothing.
ibv_device* hardware_empty_list[1] = {nullptr};

// ---- context ops installed in verbs_context ----

int query_port_op(ibv_context* c, uint8_t port, ibv_port_attr* attr, size_t attr_len) {
  ipc::QueryPortReq req{dev_index(c), port};
  ipc::QueryPortResp resp{};
  if (int rc = call(c, ipc::Op::QueryPort, &req, sizeof(req), &resp, sizeof(resp))) return rc;
  const ibv_port_attr full = rdmasim::backend::from_wire(resp.attr);
  memset(attr, 0, attr_len);
  memcpy(attr, &full, attr_len < sizeof(full) ? attr_len : sizeof(full));
  return 0;
}

int query_port_full(ibv_context* c, uint8_t port, ipc::QueryPortResp& resp) {
  ipc::QueryPortReq req{dev_index(c), port};
  return call(c, ipc::Op::QueryPort, &req, sizeof(req), &resp, sizeof(resp));
}

ibv_cq_ex* create_cq_ex_op(ibv_context* c, ibv_cq_init_attr_ex* attr);
ibv_qp* create_qp_ex_op(ibv_context* c, ibv_qp_init_attr_ex* attr);

ibv_cq_ex* create_cq_common(ibv_context* c, int cqe, void* cq_context, ibv_comp_channel* ch,
                            int comp_vector) {
  if (cqe <= 0) return fail<ibv_cq_ex>(EINVAL);
  Context* ctx = ctx_of(c);
  ipc::CreateCqReq req{dev_index(c), static_cast<uint32_t>(cqe),
                       ch ? CompChannel::from(ch)->handle : 0u,
                       static_cast<uint32_t>(comp_vector)};
  ipc::CreateCqResp resp{};
  int fds[2];
  int nfds = 0;
  if (int rc = call(c, ipc::Op::CreateCq, &req, sizeof(req), &resp, sizeof(resp), fds, 2, &nfds))
    return fail<ibv_cq_ex>(rc);
  auto* cq = new Cq();
  if (!take_mapping(nfds, fds, cq->map) ||
      resp.control_offset + sizeof(ipc::CqControl) > cq->map.len ||
      ipc::RingView<ipc::Cqe>::bytes_for(resp.ring_size) > cq->map.len) {
    cq->map.unmap();
    delete cq;
    destroy_handle(c, ipc::Op::DestroyCq, resp.handle);
    return fail<ibv_cq_ex>(EPROTO);
  }
  cq->ctx = ctx;
  cq->ring = ipc::RingView<ipc::Cqe>(cq->map.base, resp.ring_size);
  cq->control = reinterpret_cast<ipc::CqControl*>(static_cast<char*>(cq->map.base) +
                                                  resp.control_offset);
  ibv_cq_ex& x = cq->cq;
  x.context = c;
  x.channel = ch;
  x.cq_context = cq_context;
  x.handle = resp.handle;
  x.cqe = static_cast<int>(resp.cqe);
  pthread_mutex_init(&x.mutex, nullptr);
  pthread_cond_init(&x.cond, nullptr);
  install_cq_ex_ops(&x);
  if (ch) ++ch->refcnt;
  std::lock_guard<std::mutex> lock(ctx->mu);
  ctx->cqs[resp.handle] = cq;
  return &x;
}

ibv_cq_ex* create_cq_ex_op(ibv_context* c, ibv_cq_init_attr_ex* attr) {
  if (attr->comp_mask & ~static_cast<uint32_t>(IBV_CQ_INIT_ATTR_MASK_FLAGS))
    return fail<ibv_cq_ex>(EOPNOTSUPP);
  return create_cq_common(c, static_cast<int>(attr->cqe), attr->cq_context, attr->channel,
                          static_cast<int>(attr->comp_vector));
}

ibv_qp* create_qp_ex_op(ibv_context* c, ibv_qp_init_attr_ex* attr) {
  if (getenv("RDMASIM_VERBS_DEBUG"))
    fprintf(stderr, "rdmasim: create_qp type %d mask 0x%x cap %u/%u/%u/%u/%u\n", attr->qp_type,
            attr->comp_mask, attr->cap.max_send_wr, attr->cap.max_recv_wr, attr->cap.max_send_sge,
            attr->cap.max_recv_sge, attr->cap.max_inline_data);
  if (!(attr->comp_mask & IBV_QP_INIT_ATTR_PD) || !attr->pd) return fail<ibv_qp>(EINVAL);
  if (attr->comp_mask & ~static_cast<uint32_t>(IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS))
    return fail<ibv_qp>(EOPNOTSUPP);
  if (attr->qp_type != IBV_QPT_RC && attr->qp_type != IBV_QPT_UC && attr->qp_type != IBV_QPT_UD)
    return fail<ibv_qp>(EOPNOTSUPP);
  if (!attr->send_cq || !attr->recv_cq) return fail<ibv_qp>(EINVAL);
  Context* ctx = ctx_of(c);
  ipc::CreateQpReq req{};
  req.pd = attr->pd->handle;
  req.qp_type = attr->qp_type;
  req.send_cq = attr->send_cq->handle;
  req.recv_cq = attr->recv_cq->handle;
  req.srq = attr->srq ? attr->srq->handle : 0;
  req.sq_sig_all = attr->sq_sig_all;
  req.cap = rdmasim::backend::to_wire(attr->cap);
  ipc::CreateQpResp resp{};
  int fds[2];
  int nfds = 0;
  if (int rc = call(c, ipc::Op::CreateQp, &req, sizeof(req), &resp, sizeof(resp), fds, 2, &nfds)) {
    if (getenv("RDMASIM_VERBS_DEBUG")) fprintf(stderr, "rdmasim: CreateQp: %s\n", strerror(rc));
    return fail<ibv_qp>(rc);
  }
  auto* q = new Qp();
  bool ok = take_mapping(nfds, fds, q->map) &&
            ipc::RingView<ipc::SqWqe>::bytes_for(resp.sq_size) <= q->map.len &&
            (attr->srq || resp.rq_offset + ipc::RingView<ipc::RqWqe>::bytes_for(resp.rq_size) <=
                              q->map.len);
  if (!ok) {
    q->map.unmap();
    delete q;
    destroy_handle(c, ipc::Op::DestroyQp, resp.handle);
    return fail<ibv_qp>(EPROTO);
  }
  q->ctx = ctx;
  q->sq = ipc::RingView<ipc::SqWqe>(q->map.base, resp.sq_size);
  if (!attr->srq && resp.rq_size)
    q->rq = ipc::RingView<ipc::RqWqe>(static_cast<char*>(q->map.base) + resp.rq_offset,
                                      resp.rq_size);
  q->cap = rdmasim::backend::from_wire(resp.cap);
  q->sq_acct.set_depth(resp.cap.max_send_wr < resp.sq_size ? resp.cap.max_send_wr : resp.sq_size);
  q->rq_acct.set_depth(resp.cap.max_recv_wr < resp.rq_size ? resp.cap.max_recv_wr : resp.rq_size);
  q->sq_sig_all = attr->sq_sig_all != 0;
  ibv_qp& b = q->qpx.qp_base;
  b.context = c;
  b.qp_context = attr->qp_context;
  b.pd = attr->pd;
  b.send_cq = attr->send_cq;
  b.recv_cq = attr->recv_cq;
  b.srq = attr->srq;
  b.handle = resp.handle;
  b.qp_num = resp.qp_num;
  b.state = IBV_QPS_RESET;
  b.qp_type = attr->qp_type;
  pthread_mutex_init(&b.mutex, nullptr);
  pthread_cond_init(&b.cond, nullptr);
  install_qp_ex_ops(&q->qpx);
  attr->cap = q->cap;
  std::lock_guard<std::mutex> lock(ctx->mu);
  ctx->qps_by_num[resp.qp_num] = q;
  ctx->qps_by_handle[resp.handle] = q;
  return &b;
}

// ---- memory windows (context ops: ibv_alloc_mw / ibv_dealloc_mw are inline in verbs.h) ----

ibv_mw* alloc_mw_op(ibv_pd* pd, ibv_mw_type type) {
  ipc::AllocMwReq req{pd->handle, static_cast<uint32_t>(type)};
  ipc::AllocMwResp resp{};
  if (int rc = call(pd->context, ipc::Op::AllocMw, &req, sizeof(req), &resp, sizeof(resp)))
    return fail<ibv_mw>(rc);
  auto* mw = new Mw();
  mw->mw.context = pd->context;
  mw->mw.pd = pd;
  mw->mw.rkey = resp.rkey;
  mw->mw.handle = resp.handle;
  mw->mw.type = type;
  return &mw->mw;
}

int dealloc_mw_op(ibv_mw* mw) {
  ipc::HandleReq req{mw->handle};
  if (int rc = call(mw->context, ipc::Op::DeallocMw, &req, sizeof(req))) return rc;
  delete Mw::from(mw);
  return 0;
}

ibv_context* open_daemon_device(Device* d) {
  auto* ctx = new Context();
  ctx->device = d;
  ctx->client = DaemonClient::get();
  if (!ctx->client) {
    delete ctx;
    return fail<ibv_context>(ECONNREFUSED);
  }
  verbs_context& v = ctx->vctx;
  v.sz = sizeof(verbs_context);
  v.query_port = query_port_op;
  v.create_cq_ex = create_cq_ex_op;
  v.create_qp_ex = create_qp_ex_op;
  ibv_context& c = v.context;
  c.device = &d->dev;
  c.cmd_fd = -1;
  c.async_fd = ctx->client->async_fd();
  make_blocking(c.async_fd);
  c.num_comp_vectors = 1;
  c.abi_compat = __VERBS_ABI_IS_EXTENDED;
  pthread_mutex_init(&c.mutex, nullptr);
  c.ops.poll_cq = poll_cq;
  c.ops.req_notify_cq = req_notify_cq;
  c.ops.post_send = post_send;
  c.ops.post_recv = post_recv;
  c.ops.post_srq_recv = post_srq_recv;
  c.ops.alloc_mw = alloc_mw_op;
  c.ops.dealloc_mw = dealloc_mw_op;
  c.ops.bind_mw = bind_mw;
  return &c;
}

int gid_entry(ibv_context* c, uint32_t port, uint32_t index, ibv_gid_entry* e,
              const ipc::QueryPortResp& p) {
  if (index >= static_cast<uint32_t>(p.attr.gid_tbl_len)) return EINVAL;
  if (index >= p.num_gids || index >= ipc::kMaxGids) return ENODATA;
  memset(e, 0, sizeof(*e));
  memcpy(e->gid.raw, p.gids[index], 16);
  e->gid_index = index;
  e->port_num = port;
  e->gid_type = p.gid_types[index];
  (void)c;
  return 0;
}

}  // namespace

extern "C" {

// ---- devices and contexts ----

ibv_device** RDMASIM_V11(ibv_get_device_list)(int* num_devices) {
  if (rdmasim::backend::hardware_selected()) {
    using Fn = decltype(&ibv_get_device_list);
    static Fn real = reinterpret_cast<Fn>(rdmasim::backend::hardware_sym("ibv_get_device_list"));
    int n = 0;
    ibv_device** list = real ? real(&n) : nullptr;
    if (!list || n == 0) {
      static std::once_flag once;
      std::call_once(once, [] { fprintf(stderr, "rdmasim: hardware backend: no RDMA devices found\n"); });
      // Not calloc'ed here: the real library's ibv_free_device_list frees with the libc of
      // its own link-map namespace.
      if (!list) list = hardware_empty_list;
      n = 0;
    }
    if (num_devices) *num_devices = n;
    return list;
  }
  DeviceTable& t = device_table();
  if (t.count == 0 && t.error) {
    errno = t.error;
    return nullptr;
  }
  auto** list = static_cast<ibv_device**>(calloc(t.count + 1, sizeof(ibv_device*)));
  if (!list) return fail<ibv_device*>(ENOMEM);
  for (uint32_t i = 0; i < t.count; ++i) list[i] = &t.devices[i]->dev;
  if (num_devices) *num_devices = static_cast<int>(t.count);
  return list;
}

void RDMASIM_V11(ibv_free_device_list)(ibv_device** list) {
  if (rdmasim::backend::hardware_selected()) {
    if (list == hardware_empty_list) return;
    RDMASIM_HW_FORWARD(ibv_free_device_list, list);
  }
  free(list);  // devices live as long as the process
}

const char* RDMASIM_V11(ibv_get_device_name)(ibv_device* device) {
  RDMASIM_HW_FORWARD(ibv_get_device_name, device);
  return device->name;
}

__be64 RDMASIM_V11(ibv_get_device_guid)(ibv_device* device) {
  RDMASIM_HW_FORWARD(ibv_get_device_guid, device);
  Device* d = Device::from(device);
  return htobe64(d->info.node_guid);
}

int ibv_get_device_index(ibv_device* device) {
  RDMASIM_HW_FORWARD(ibv_get_device_index, device);
  return static_cast<int>(Device::from(device)->index);
}

ibv_context* RDMASIM_V11(ibv_open_device)(ibv_device* device) {
  RDMASIM_HW_FORWARD(ibv_open_device, device);
  return open_daemon_device(Device::from(device));
}

int RDMASIM_V11(ibv_close_device)(ibv_context* context) {
  RDMASIM_HW_FORWARD(ibv_close_device, context);
  delete ctx_of(context);
  return 0;
}

ibv_context* ibv_import_device(int cmd_fd) {
  RDMASIM_HW_FORWARD(ibv_import_device, cmd_fd);
  return fail<ibv_context>(EOPNOTSUPP);
}

int RDMASIM_V11(ibv_query_device)(ibv_context* context, ibv_device_attr* attr) {
  RDMASIM_HW_FORWARD(ibv_query_device, context, attr);
  Device* d = ctx_of(context)->device;
  ipc::QueryDeviceReq req{d->index};
  ipc::QueryDeviceResp resp{};
  if (int rc = call(context, ipc::Op::QueryDevice, &req, sizeof(req), &resp, sizeof(resp)))
    return rc;
  *attr = rdmasim::backend::from_wire(resp);
  return 0;
}

int RDMASIM_V11(ibv_query_port)(ibv_context* context, uint8_t port, _compat_ibv_port_attr* attr) {
  RDMASIM_HW_FORWARD(ibv_query_port, context, port, attr);
  return query_port_op(context, port, reinterpret_cast<ibv_port_attr*>(attr),
                       offsetof(ibv_port_attr, port_cap_flags2));  // the pre-1.1 layout ends there
}

int RDMASIM_V11(ibv_query_gid)(ibv_context* context, uint8_t port, int index, ibv_gid* gid) {
  RDMASIM_HW_FORWARD(ibv_query_gid, context, port, index, gid);
  ipc::QueryPortResp p{};
  if (query_port_full(context, port, p) != 0 || index < 0) return -1;
  ibv_gid_entry e{};
  int rc = gid_entry(context, port, static_cast<uint32_t>(index), &e, p);
  if (rc == ENODATA) {
    memset(gid, 0, sizeof(*gid));
    return 0;
  }
  if (rc) return -1;
  *gid = e.gid;
  return 0;
}

int _ibv_query_gid_ex(ibv_context* context, uint32_t port, uint32_t index, ibv_gid_entry* entry,
                      uint32_t flags, size_t entry_size) {
  RDMASIM_HW_FORWARD(_ibv_query_gid_ex, context, port, index, entry, flags, entry_size);
  if (flags || entry_size < sizeof(ibv_gid_entry)) return EINVAL;
  ipc::QueryPortResp p{};
  if (int rc = query_port_full(context, static_cast<uint8_t>(port), p)) return rc;
  return gid_entry(context, port, index, entry, p);
}

ssize_t _ibv_query_gid_table(ibv_context* context, ibv_gid_entry* entries, size_t max_entries,
                             uint32_t flags, size_t entry_size) {
  RDMASIM_HW_FORWARD(_ibv_query_gid_table, context, entries, max_entries, flags, entry_size);
  if (flags || entry_size < sizeof(ibv_gid_entry)) return -EINVAL;
  ibv_device_attr dattr{};
  if (int rc = RDMASIM_V11(ibv_query_device)(context, &dattr)) return -rc;
  size_t n = 0;
  for (uint32_t port = 1; port <= dattr.phys_port_cnt; ++port) {
    ipc::QueryPortResp p{};
    if (int rc = query_port_full(context, static_cast<uint8_t>(port), p)) return -rc;
    for (uint32_t i = 0; i < p.num_gids && i < ipc::kMaxGids; ++i) {
      if (n == max_entries) return -EINVAL;
      auto* e = reinterpret_cast<ibv_gid_entry*>(reinterpret_cast<char*>(entries) + n * entry_size);
      gid_entry(context, port, i, e, p);
      ++n;
    }
  }
  return static_cast<ssize_t>(n);
}

// IBVERBS_PRIVATE_34, but ibv_devinfo calls it. `type` is enum ibv_gid_type_sysfs
// (0: IB / RoCE v1, 1: RoCE v2). Returns 0, or -1 with errno.
int ibv_query_gid_type(ibv_context* context, uint8_t port, unsigned int index, int* type) {
  RDMASIM_HW_FORWARD(ibv_query_gid_type, context, port, index, type);
  ipc::QueryPortResp p{};
  if (int rc = query_port_full(context, port, p)) {
    errno = rc;
    return -1;
  }
  ibv_gid_entry e{};
  if (int rc = gid_entry(context, port, index, &e, p)) {
    errno = rc == ENODATA ? EINVAL : rc;
    return -1;
  }
  *type = e.gid_type == IBV_GID_TYPE_ROCE_V2 ? 1 : 0;
  return 0;
}

int RDMASIM_V11(ibv_query_pkey)(ibv_context* context, uint8_t port, int index, __be16* pkey) {
  RDMASIM_HW_FORWARD(ibv_query_pkey, context, port, index, pkey);
  ipc::QueryPortResp p{};
  if (query_port_full(context, port, p) != 0) return -1;
  if (index < 0 || index >= static_cast<int>(p.attr.pkey_tbl_len)) return -1;
  *pkey = index == 0 ? htobe16(0xffff) : 0;  // the default partition only
  return 0;
}

int ibv_get_pkey_index(ibv_context* context, uint8_t port, __be16 pkey) {
  RDMASIM_HW_FORWARD(ibv_get_pkey_index, context, port, pkey);
  __be16 p0 = 0;
  if (RDMASIM_V11(ibv_query_pkey)(context, port, 0, &p0) != 0) return -1;
  if (be16toh(pkey) == be16toh(p0) || (be16toh(pkey) & 0x7fff) == 0x7fff) return 0;
  errno = ENOENT;
  return -1;
}

// ---- async events ----

int RDMASIM_V11(ibv_get_async_event)(ibv_context* context, ibv_async_event* event) {
  RDMASIM_HW_FORWARD(ibv_get_async_event, context, event);
  Context* ctx = ctx_of(context);
  uint64_t v = 0;
  if (read(context->async_fd, &v, sizeof(v)) != sizeof(v)) return -1;
  ipc::ClientPage* page = ctx->client->client_page();
  ipc::RingHeader& hdr = page->async_ring_hdr;
  uint32_t size = hdr.size ? hdr.size : 256;
  uint32_t idx = hdr.consumer.load(std::memory_order_relaxed);
  ipc::AsyncEventSlot& slot = page->async_slots[idx & (size - 1)];
  if (std::atomic_ref<uint32_t>(slot.seq).load(std::memory_order_acquire) != idx + 1) {
    errno = EAGAIN;
    return -1;
  }
  ipc::AsyncEventSlot s = slot;
  hdr.consumer.store(idx + 1, std::memory_order_release);
  memset(event, 0, sizeof(*event));
  event->event_type = static_cast<ibv_event_type>(s.event_type);
  std::lock_guard<std::mutex> lock(ctx->mu);
  switch (event->event_type) {
    case IBV_EVENT_CQ_ERR: {
      auto it = ctx->cqs.find(s.handle);
      event->element.cq = it != ctx->cqs.end() ? it->second->ibv() : nullptr;
      break;
    }
    case IBV_EVENT_SRQ_ERR:
    case IBV_EVENT_SRQ_LIMIT_REACHED: {
      auto it = ctx->srqs.find(s.handle);
      event->element.srq = it != ctx->srqs.end() ? &it->second->srq : nullptr;
      break;
    }
    case IBV_EVENT_DEVICE_FATAL:
      break;
    case IBV_EVENT_PORT_ACTIVE:
    case IBV_EVENT_PORT_ERR:
    case IBV_EVENT_LID_CHANGE:
    case IBV_EVENT_PKEY_CHANGE:
    case IBV_EVENT_SM_CHANGE:
    case IBV_EVENT_CLIENT_REREGISTER:
    case IBV_EVENT_GID_CHANGE:
      event->element.port_num = static_cast<int>(s.handle);
      break;
    default: {
      auto it = ctx->qps_by_handle.find(s.handle);
      event->element.qp = it != ctx->qps_by_handle.end() ? it->second->ibv() : nullptr;
      break;
    }
  }
  return 0;
}

void RDMASIM_V11(ibv_ack_async_event)(ibv_async_event* event) {
  RDMASIM_HW_FORWARD(ibv_ack_async_event, event);
  (void)event;  // objects are not reference counted against their async events here
}

// ---- PD, MR, AH ----

ibv_pd* RDMASIM_V11(ibv_alloc_pd)(ibv_context* context) {
  RDMASIM_HW_FORWARD(ibv_alloc_pd, context);
  ipc::AllocPdReq req{dev_index(context)};
  ipc::HandleResp resp{};
  if (int rc = call(context, ipc::Op::AllocPd, &req, sizeof(req), &resp, sizeof(resp)))
    return fail<ibv_pd>(rc);
  auto* pd = new Pd();
  pd->pd.context = context;
  pd->pd.handle = resp.handle;
  return &pd->pd;
}

int RDMASIM_V11(ibv_dealloc_pd)(ibv_pd* pd) {
  RDMASIM_HW_FORWARD(ibv_dealloc_pd, pd);
  ipc::HandleReq req{pd->handle};
  if (int rc = call(pd->context, ipc::Op::DeallocPd, &req, sizeof(req))) return rc;
  delete Pd::from(pd);
  return 0;
}

ibv_pd* ibv_import_pd(ibv_context* context, uint32_t pd_handle) {
  RDMASIM_HW_FORWARD(ibv_import_pd, context, pd_handle);
  return fail<ibv_pd>(EOPNOTSUPP);
}
void ibv_unimport_pd(ibv_pd* pd) { RDMASIM_HW_FORWARD(ibv_unimport_pd, pd); }

ibv_mr* ibv_reg_mr_iova2(ibv_pd* pd, void* addr, size_t length, uint64_t iova, unsigned int access) {
  RDMASIM_HW_FORWARD(ibv_reg_mr_iova2, pd, addr, length, iova, access);
  ipc::RegMrReq req{pd->handle, access & ~static_cast<unsigned>(IBV_ACCESS_OPTIONAL_RANGE),
                    reinterpret_cast<uint64_t>(addr), length, iova};
  ipc::RegMrResp resp{};
  if (int rc = call(pd->context, ipc::Op::RegMr, &req, sizeof(req), &resp, sizeof(resp)))
    return fail<ibv_mr>(rc);
  auto* mr = new Mr();
  mr->mr.context = pd->context;
  mr->mr.pd = pd;
  mr->mr.addr = addr;
  mr->mr.length = length;
  mr->mr.handle = resp.handle;
  mr->mr.lkey = resp.lkey;
  mr->mr.rkey = resp.rkey;
  return &mr->mr;
}

ibv_mr*RDMASIM_V11(ibv_reg_mr)(ibv_pd* pd, void* addr, size_t length, int access) {
  RDMASIM_HW_FORWARD(ibv_reg_mr, pd, addr, length, access);
  return ibv_reg_mr_iova2(pd, addr, length, reinterpret_cast<uint64_t>(addr),
                          static_cast<unsigned>(access));
}

ibv_mr*(ibv_reg_mr_iova)(ibv_pd* pd, void* addr, size_t length, uint64_t iova, int access) {
  RDMASIM_HW_FORWARD(ibv_reg_mr_iova, pd, addr, length, iova, access);
  return ibv_reg_mr_iova2(pd, addr, length, iova, static_cast<unsigned>(access));
}

ibv_mr* ibv_reg_dmabuf_mr(ibv_pd* pd, uint64_t offset, size_t length, uint64_t iova, int fd,
                          int access) {
  RDMASIM_HW_FORWARD(ibv_reg_dmabuf_mr, pd, offset, length, iova, fd, access);
  return fail<ibv_mr>(EOPNOTSUPP);
}

int ibv_rereg_mr(ibv_mr* mr, int flags, ibv_pd* pd, void* addr, size_t length, int access) {
  RDMASIM_HW_FORWARD(ibv_rereg_mr, mr, flags, pd, addr, length, access);
  // Input checks as rdma-core's libibverbs does them (ERR_INPUT: the old MR stays valid).
  constexpr int kAll = IBV_REREG_MR_CHANGE_TRANSLATION | IBV_REREG_MR_CHANGE_PD |
                       IBV_REREG_MR_CHANGE_ACCESS;
  if (flags == 0 || (flags & ~kAll) ||
      ((flags & IBV_REREG_MR_CHANGE_TRANSLATION) && (!addr || !length)) ||
      (access && !(flags & IBV_REREG_MR_CHANGE_ACCESS)) ||
      ((flags & IBV_REREG_MR_CHANGE_PD) && (!pd || pd->context != mr->context))) {
    errno = EINVAL;
    return IBV_REREG_MR_ERR_INPUT;
  }
  ipc::ReregMrReq req{mr->handle, static_cast<uint32_t>(flags),
                      (flags & IBV_REREG_MR_CHANGE_PD) ? pd->handle : 0u,
                      static_cast<unsigned>(access) & ~static_cast<unsigned>(IBV_ACCESS_OPTIONAL_RANGE),
                      reinterpret_cast<uint64_t>(addr), length};
  ipc::RegMrResp resp{};
  if (int rc = call(mr->context, ipc::Op::ReregMr, &req, sizeof(req), &resp, sizeof(resp))) {
    // The daemon changes nothing on error, but rdma-core callers treat a command error
    // as "MR shouldn't be used" and must still ibv_dereg_mr it; report it that way.
    errno = rc;
    return IBV_REREG_MR_ERR_CMD;
  }
  if (flags & IBV_REREG_MR_CHANGE_PD) mr->pd = pd;
  if (flags & IBV_REREG_MR_CHANGE_TRANSLATION) {
    mr->addr = addr;
    mr->length = length;
  }
  mr->lkey = resp.lkey;
  mr->rkey = resp.rkey;
  return 0;
}

int RDMASIM_V11(ibv_dereg_mr)(ibv_mr* mr) {
  RDMASIM_HW_FORWARD(ibv_dereg_mr, mr);
  ipc::HandleReq req{mr->handle};
  if (int rc = call(mr->context, ipc::Op::DeregMr, &req, sizeof(req))) return rc;
  delete Mr::from(mr);
  return 0;
}

ibv_mr* ibv_import_mr(ibv_pd* pd, uint32_t mr_handle) {
  RDMASIM_HW_FORWARD(ibv_import_mr, pd, mr_handle);
  return fail<ibv_mr>(EOPNOTSUPP);
}
void ibv_unimport_mr(ibv_mr* mr) { RDMASIM_HW_FORWARD(ibv_unimport_mr, mr); }

ibv_dm* ibv_import_dm(ibv_context* context, uint32_t dm_handle) {
  RDMASIM_HW_FORWARD(ibv_import_dm, context, dm_handle);
  return fail<ibv_dm>(EOPNOTSUPP);
}
void ibv_unimport_dm(ibv_dm* dm) { RDMASIM_HW_FORWARD(ibv_unimport_dm, dm); }

// Address handles are client-side: the flattened attributes travel in each UD WQE.
ibv_ah* RDMASIM_V11(ibv_create_ah)(ibv_pd* pd, ibv_ah_attr* attr) {
  RDMASIM_HW_FORWARD(ibv_create_ah, pd, attr);
  auto* ah = new Ah();
  ah->ah.context = pd->context;
  ah->ah.pd = pd;
  ah->av = rdmasim::backend::to_wire(*attr);
  return &ah->ah;
}

int RDMASIM_V11(ibv_destroy_ah)(ibv_ah* ah) {
  RDMASIM_HW_FORWARD(ibv_destroy_ah, ah);
  delete Ah::from(ah);
  return 0;
}

int ibv_init_ah_from_wc(ibv_context* context, uint8_t port, ibv_wc* wc, ibv_grh* grh,
                        ibv_ah_attr* ah_attr) {
  RDMASIM_HW_FORWARD(ibv_init_ah_from_wc, context, port, wc, grh, ah_attr);
  memset(ah_attr, 0, sizeof(*ah_attr));
  ah_attr->dlid = wc->slid;
  ah_attr->sl = wc->sl;
  ah_attr->src_path_bits = wc->dlid_path_bits;
  ah_attr->port_num = port;
  if (wc->wc_flags & IBV_WC_GRH) {
    ah_attr->is_global = 1;
    ah_attr->grh.dgid = grh->sgid;
    ah_attr->grh.flow_label = be32toh(grh->version_tclass_flow) & 0xfffff;
    ah_attr->grh.hop_limit = 0xff;
    ah_attr->grh.traffic_class = (be32toh(grh->version_tclass_flow) >> 20) & 0xff;
    // sgid_index: the local GID the packet was sent to.
    ipc::QueryPortResp p{};
    if (query_port_full(context, port, p) == 0) {
      for (uint32_t i = 0; i < p.num_gids && i < ipc::kMaxGids; ++i)
        if (memcmp(p.gids[i], grh->dgid.raw, 16) == 0) ah_attr->grh.sgid_index = static_cast<uint8_t>(i);
    }
  }
  return 0;
}

ibv_ah* ibv_create_ah_from_wc(ibv_pd* pd, ibv_wc* wc, ibv_grh* grh, uint8_t port) {
  RDMASIM_HW_FORWARD(ibv_create_ah_from_wc, pd, wc, grh, port);
  ibv_ah_attr attr{};
  if (ibv_init_ah_from_wc(pd->context, port, wc, grh, &attr)) return nullptr;
  return RDMASIM_V11(ibv_create_ah)(pd, &attr);
}

int ibv_resolve_eth_l2_from_gid(ibv_context* context, ibv_ah_attr* attr, uint8_t eth_mac[6],
                                uint16_t* vid) {
  RDMASIM_HW_FORWARD(ibv_resolve_eth_l2_from_gid, context, attr, eth_mac, vid);
  return EOPNOTSUPP;
}

int RDMASIM_V11(ibv_attach_mcast)(ibv_qp* qp, const ibv_gid* gid, uint16_t lid) {
  RDMASIM_HW_FORWARD(ibv_attach_mcast, qp, gid, lid);
  return EOPNOTSUPP;
}
int RDMASIM_V11(ibv_detach_mcast)(ibv_qp* qp, const ibv_gid* gid, uint16_t lid) {
  RDMASIM_HW_FORWARD(ibv_detach_mcast, qp, gid, lid);
  return EOPNOTSUPP;
}

// ---- completion channels and CQs ----

ibv_comp_channel* ibv_create_comp_channel(ibv_context* context) {
  RDMASIM_HW_FORWARD(ibv_create_comp_channel, context);
  ipc::CreateCompChannelReq req{dev_index(context)};
  ipc::CreateCompChannelResp resp{};
  int fds[2] = {-1, -1};
  int nfds = 0;
  if (int rc = call(context, ipc::Op::CreateCompChannel, &req, sizeof(req), &resp, sizeof(resp),
                    fds, 2, &nfds))
    return fail<ibv_comp_channel>(rc);
  auto* ch = new CompChannel();
  if (nfds < 2) {
    for (int i = 0; i < nfds; ++i) close(fds[i]);
    delete ch;
    destroy_handle(context, ipc::Op::DestroyCompChannel, resp.handle);
    return fail<ibv_comp_channel>(EPROTO);
  }
  ch->map.base = rdmasim::backend::map_memfd(fds[0], &ch->map.len, true);
  close(fds[0]);
  if (!ch->map.base || ipc::RingView<ipc::CompEvent>::bytes_for(resp.ring_size) > ch->map.len) {
    close(fds[1]);
    ch->map.unmap();
    delete ch;
    destroy_handle(context, ipc::Op::DestroyCompChannel, resp.handle);
    return fail<ibv_comp_channel>(EPROTO);
  }
  ch->ring = ipc::RingView<ipc::CompEvent>(ch->map.base, resp.ring_size);
  make_blocking(fds[1]);
  ch->handle = resp.handle;
  ch->ch.context = context;
  ch->ch.fd = fds[1];
  ch->ch.refcnt = 0;
  return &ch->ch;
}

int ibv_destroy_comp_channel(ibv_comp_channel* channel) {
  RDMASIM_HW_FORWARD(ibv_destroy_comp_channel, channel);
  if (channel->refcnt) return EBUSY;
  CompChannel* ch = CompChannel::from(channel);
  ipc::HandleReq req{ch->handle};
  if (int rc = call(channel->context, ipc::Op::DestroyCompChannel, &req, sizeof(req))) return rc;
  close(channel->fd);
  ch->map.unmap();
  delete ch;
  return 0;
}

int RDMASIM_V11(ibv_get_cq_event)(ibv_comp_channel* channel, ibv_cq** cq, void** cq_context) {
  RDMASIM_HW_FORWARD(ibv_get_cq_event, channel, cq, cq_context);
  CompChannel* ch = CompChannel::from(channel);
  uint64_t v = 0;
  if (read(channel->fd, &v, sizeof(v)) != sizeof(v)) return -1;
  std::lock_guard<std::mutex> lock(ch->mu);
  ipc::RingHeader* hdr = ch->ring.header();
  uint32_t idx = hdr->consumer.load(std::memory_order_relaxed);
  ipc::CompEvent& slot = ch->ring.slot(idx);
  if (std::atomic_ref<uint32_t>(slot.seq).load(std::memory_order_acquire) != idx + 1) {
    errno = EAGAIN;
    return -1;
  }
  uint32_t handle = slot.cq_handle;
  hdr->consumer.store(idx + 1, std::memory_order_release);
  Context* ctx = ctx_of(channel->context);
  std::lock_guard<std::mutex> lock2(ctx->mu);
  auto it = ctx->cqs.find(handle);
  if (it == ctx->cqs.end()) {
    errno = EPROTO;
    return -1;
  }
  *cq = it->second->ibv();
  *cq_context = (*cq)->cq_context;
  return 0;
}

void RDMASIM_V11(ibv_ack_cq_events)(ibv_cq* cq, unsigned int nevents) {
  RDMASIM_HW_FORWARD(ibv_ack_cq_events, cq, nevents);
  pthread_mutex_lock(&cq->mutex);
  cq->comp_events_completed += nevents;
  pthread_cond_signal(&cq->cond);
  pthread_mutex_unlock(&cq->mutex);
}

ibv_cq* RDMASIM_V11(ibv_create_cq)(ibv_context* context, int cqe, void* cq_context, ibv_comp_channel* channel,
                      int comp_vector) {
  RDMASIM_HW_FORWARD(ibv_create_cq, context, cqe, cq_context, channel, comp_vector);
  ibv_cq_ex* cq = create_cq_common(context, cqe, cq_context, channel, comp_vector);
  return cq ? reinterpret_cast<ibv_cq*>(cq) : nullptr;
}

int RDMASIM_V11(ibv_resize_cq)(ibv_cq* cq, int cqe) {
  RDMASIM_HW_FORWARD(ibv_resize_cq, cq, cqe);
  return EOPNOTSUPP;
}

int RDMASIM_V11(ibv_destroy_cq)(ibv_cq* cq) {
  RDMASIM_HW_FORWARD(ibv_destroy_cq, cq);
  Cq* c = Cq::from(cq);
  ipc::HandleReq req{cq->handle};
  if (int rc = call(cq->context, ipc::Op::DestroyCq, &req, sizeof(req))) return rc;
  {
    std::lock_guard<std::mutex> lock(c->ctx->mu);
    c->ctx->cqs.erase(cq->handle);
  }
  if (cq->channel) --cq->channel->refcnt;
  c->map.unmap();
  delete c;
  return 0;
}

// ---- SRQs ----

ibv_srq* RDMASIM_V11(ibv_create_srq)(ibv_pd* pd, ibv_srq_init_attr* attr) {
  RDMASIM_HW_FORWARD(ibv_create_srq, pd, attr);
  ipc::CreateSrqReq req{pd->handle, 0, attr->attr.max_wr, attr->attr.max_sge, attr->attr.srq_limit};
  ipc::CreateSrqResp resp{};
  int fds[2];
  int nfds = 0;
  if (int rc = call(pd->context, ipc::Op::CreateSrq, &req, sizeof(req), &resp, sizeof(resp), fds,
                    2, &nfds))
    return fail<ibv_srq>(rc);
  auto* s = new Srq();
  if (!take_mapping(nfds, fds, s->map) ||
      ipc::RingView<ipc::RqWqe>::bytes_for(resp.ring_size) > s->map.len) {
    s->map.unmap();
    delete s;
    destroy_handle(pd->context, ipc::Op::DestroySrq, resp.handle);
    return fail<ibv_srq>(EPROTO);
  }
  Context* ctx = ctx_of(pd->context);
  s->ctx = ctx;
  s->ring = ipc::RingView<ipc::RqWqe>(s->map.base, resp.ring_size);
  s->acct.set_depth(resp.max_wr < resp.ring_size ? resp.max_wr : resp.ring_size);
  s->max_sge = resp.max_sge;
  s->srq.context = pd->context;
  s->srq.srq_context = attr->srq_context;
  s->srq.pd = pd;
  s->srq.handle = resp.handle;
  pthread_mutex_init(&s->srq.mutex, nullptr);
  pthread_cond_init(&s->srq.cond, nullptr);
  attr->attr.max_wr = resp.max_wr;
  attr->attr.max_sge = resp.max_sge;
  std::lock_guard<std::mutex> lock(ctx->mu);
  ctx->srqs[resp.handle] = s;
  return &s->srq;
}

int RDMASIM_V11(ibv_modify_srq)(ibv_srq* srq, ibv_srq_attr* attr, int mask) {
  RDMASIM_HW_FORWARD(ibv_modify_srq, srq, attr, mask);
  ipc::ModifySrqReq req{srq->handle, static_cast<uint32_t>(mask), attr->max_wr, attr->srq_limit};
  return call(srq->context, ipc::Op::ModifySrq, &req, sizeof(req));
}

int RDMASIM_V11(ibv_query_srq)(ibv_srq* srq, ibv_srq_attr* attr) {
  RDMASIM_HW_FORWARD(ibv_query_srq, srq, attr);
  ipc::HandleReq req{srq->handle};
  ipc::QuerySrqResp resp{};
  if (int rc = call(srq->context, ipc::Op::QuerySrq, &req, sizeof(req), &resp, sizeof(resp)))
    return rc;
  attr->max_wr = resp.max_wr;
  attr->max_sge = resp.max_sge;
  attr->srq_limit = resp.srq_limit;
  return 0;
}

int RDMASIM_V11(ibv_destroy_srq)(ibv_srq* srq) {
  RDMASIM_HW_FORWARD(ibv_destroy_srq, srq);
  Srq* s = Srq::from(srq);
  ipc::HandleReq req{srq->handle};
  if (int rc = call(srq->context, ipc::Op::DestroySrq, &req, sizeof(req))) return rc;
  {
    std::lock_guard<std::mutex> lock(s->ctx->mu);
    s->ctx->srqs.erase(srq->handle);
  }
  s->map.unmap();
  delete s;
  return 0;
}

// ---- QPs ----

ibv_qp* RDMASIM_V11(ibv_create_qp)(ibv_pd* pd, ibv_qp_init_attr* attr) {
  RDMASIM_HW_FORWARD(ibv_create_qp, pd, attr);
  ibv_qp_init_attr_ex ex{};
  memcpy(&ex, attr, sizeof(*attr));
  ex.comp_mask = IBV_QP_INIT_ATTR_PD;
  ex.pd = pd;
  ibv_qp* qp = create_qp_ex_op(pd->context, &ex);
  if (qp) attr->cap = ex.cap;
  return qp;
}

ibv_qp_ex* ibv_qp_to_qp_ex(ibv_qp* qp) {
  RDMASIM_HW_FORWARD(ibv_qp_to_qp_ex, qp);
  return &Qp::from(qp)->qpx;
}

int RDMASIM_V11(ibv_modify_qp)(ibv_qp* qp, ibv_qp_attr* attr, int mask) {
  RDMASIM_HW_FORWARD(ibv_modify_qp, qp, attr, mask);
  ipc::ModifyQpReq req{qp->handle, static_cast<uint32_t>(mask), rdmasim::backend::to_wire(*attr)};
  if (int rc = call(qp->context, ipc::Op::ModifyQp, &req, sizeof(req))) return rc;
  if (mask & IBV_QP_STATE) {
    Qp* q = Qp::from(qp);
    q->state.store(attr->qp_state, std::memory_order_release);
    qp->state = attr->qp_state;
  }
  return 0;
}

int RDMASIM_V11(ibv_query_qp)(ibv_qp* qp, ibv_qp_attr* attr, int mask, ibv_qp_init_attr* init) {
  RDMASIM_HW_FORWARD(ibv_query_qp, qp, attr, mask, init);
  ipc::QueryQpReq req{qp->handle, static_cast<uint32_t>(mask)};
  ipc::QueryQpResp resp{};
  if (int rc = call(qp->context, ipc::Op::QueryQp, &req, sizeof(req), &resp, sizeof(resp)))
    return rc;
  *attr = rdmasim::backend::from_wire(resp.attr);
  *init = rdmasim::backend::from_wire(resp.init);
  init->qp_context = qp->qp_context;
  init->send_cq = qp->send_cq;
  init->recv_cq = qp->recv_cq;
  init->srq = qp->srq;
  Qp* q = Qp::from(qp);
  q->state.store(attr->qp_state, std::memory_order_release);
  qp->state = attr->qp_state;
  return 0;
}

int ibv_query_qp_data_in_order(ibv_qp* qp, enum ibv_wr_opcode op, uint32_t flags) {
  RDMASIM_HW_FORWARD(ibv_query_qp_data_in_order, qp, op, flags);
  return 0;  // "not guaranteed in order": the honest answer without a model of it
}

int ibv_query_ece(ibv_qp* qp, ibv_ece* ece) {
  RDMASIM_HW_FORWARD(ibv_query_ece, qp, ece);
  return EOPNOTSUPP;
}
int ibv_set_ece(ibv_qp* qp, ibv_ece* ece) {
  RDMASIM_HW_FORWARD(ibv_set_ece, qp, ece);
  return EOPNOTSUPP;
}

int RDMASIM_V11(ibv_destroy_qp)(ibv_qp* qp) {
  RDMASIM_HW_FORWARD(ibv_destroy_qp, qp);
  Qp* q = Qp::from(qp);
  ipc::HandleReq req{qp->handle};
  if (int rc = call(qp->context, ipc::Op::DestroyQp, &req, sizeof(req))) return rc;
  {
    std::lock_guard<std::mutex> lock(q->ctx->mu);
    q->ctx->qps_by_num.erase(qp->qp_num);
    q->ctx->qps_by_handle.erase(qp->handle);
  }
  q->map.unmap();
  delete q;
  return 0;
}

// ---- fork support: no pinned pages exist in this process, so fork needs nothing ----

int ibv_fork_init(void) {
  RDMASIM_HW_FORWARD(ibv_fork_init);
  return 0;
}
enum ibv_fork_status ibv_is_fork_initialized(void) {
  RDMASIM_HW_FORWARD(ibv_is_fork_initialized);
  return IBV_FORK_UNNEEDED;
}
int ibv_dontfork_range(void* base, size_t size) {
  RDMASIM_HW_FORWARD(ibv_dontfork_range, base, size);
  return 0;
}
int ibv_dofork_range(void* base, size_t size) {
  RDMASIM_HW_FORWARD(ibv_dofork_range, base, size);
  return 0;
}

}  // extern "C"


RDMASIM_SYMVER_V11(ibv_ack_async_event)
RDMASIM_SYMVER_V11(ibv_ack_cq_events)
RDMASIM_SYMVER_V11(ibv_alloc_pd)
RDMASIM_SYMVER_V11(ibv_attach_mcast)
RDMASIM_SYMVER_V11(ibv_close_device)
RDMASIM_SYMVER_V11(ibv_create_ah)
RDMASIM_SYMVER_V11(ibv_create_cq)
RDMASIM_SYMVER_V11(ibv_create_qp)
RDMASIM_SYMVER_V11(ibv_create_srq)
RDMASIM_SYMVER_V11(ibv_dealloc_pd)
RDMASIM_SYMVER_V11(ibv_dereg_mr)
RDMASIM_SYMVER_V11(ibv_destroy_ah)
RDMASIM_SYMVER_V11(ibv_destroy_cq)
RDMASIM_SYMVER_V11(ibv_destroy_qp)
RDMASIM_SYMVER_V11(ibv_destroy_srq)
RDMASIM_SYMVER_V11(ibv_detach_mcast)
RDMASIM_SYMVER_V11(ibv_free_device_list)
RDMASIM_SYMVER_V11(ibv_get_async_event)
RDMASIM_SYMVER_V11(ibv_get_cq_event)
RDMASIM_SYMVER_V11(ibv_get_device_guid)
RDMASIM_SYMVER_V11(ibv_get_device_list)
RDMASIM_SYMVER_V11(ibv_get_device_name)
RDMASIM_SYMVER_V11(ibv_modify_qp)
RDMASIM_SYMVER_V11(ibv_modify_srq)
RDMASIM_SYMVER_V11(ibv_open_device)
RDMASIM_SYMVER_V11(ibv_query_device)
RDMASIM_SYMVER_V11(ibv_query_gid)
RDMASIM_SYMVER_V11(ibv_query_pkey)
RDMASIM_SYMVER_V11(ibv_query_port)
RDMASIM_SYMVER_V11(ibv_query_qp)
RDMASIM_SYMVER_V11(ibv_query_srq)
RDMASIM_SYMVER_V11(ibv_reg_mr)
RDMASIM_SYMVER_V11(ibv_resize_cq)
