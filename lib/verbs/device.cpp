// The exported device and context verbs: device list, open/close, device/port/GID/P_Key
// queries, async events and fork support. Each asks the device's backend; in hardware mode
// each forwards to the real libibverbs instead.
#include <endian.h>
#include <fcntl.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <vector>

#include "lib/backend/daemon_backend.h"
#include "lib/backend/inproc_backend.h"
#include "lib/verbs/control.h"

using namespace rdmasim::verbs;
namespace backend = rdmasim::backend;
namespace ipc = rdmasim::ipc;

namespace rdmasim::verbs {

void make_blocking(int fd) {
  int fl = fcntl(fd, F_GETFL);
  if (fl >= 0 && (fl & O_NONBLOCK)) fcntl(fd, F_SETFL, fl & ~O_NONBLOCK);
}

int query_port_info(ibv_context* c, uint8_t port, backend::PortInfo* out) {
  return backend_of(c).query_port(port, out);
}

}  // namespace rdmasim::verbs

extern "C" int RDMASIM_V11(ibv_query_device)(ibv_context* context, ibv_device_attr* attr);
extern "C" int RDMASIM_V11(ibv_query_port)(ibv_context* context, uint8_t port,
                                           _compat_ibv_port_attr* attr);

namespace {

// The process's devices, each with its backend; they live as long as the process (in an
// in-process run: as long as its simulated process, whose host keeps the table).
struct DeviceTable {
  std::unique_ptr<backend::DaemonClient> client;   // in-process: the simcall channel
  std::vector<std::unique_ptr<backend::Backend>> backends;
  std::vector<Device*> devices;
  int error = 0;
};

void fill_devices(DeviceTable& table) {
  for (uint32_t i = 0; i < table.backends.size(); ++i) {
    auto* d = new Device();
    d->index = i;
    d->backend = table.backends[i].get();
    if (int rc = d->backend->device_info(&d->info)) {
      delete d;
      table.error = rc;
      break;
    }
    d->dev.node_type = d->info.node_type;
    d->dev.transport_type = d->info.transport_type;
    snprintf(d->dev.name, sizeof(d->dev.name), "%s", d->info.name);
    snprintf(d->dev.dev_name, sizeof(d->dev.dev_name), "uverbs%u", i);
    snprintf(d->dev.dev_path, sizeof(d->dev.dev_path), "/dev/infiniband/uverbs%u", i);
    snprintf(d->dev.ibdev_path, sizeof(d->dev.ibdev_path), "/sys/class/infiniband/%s",
             d->info.name);
    table.devices.push_back(d);
  }
}

// Backend selection: a program running in a fiber of an in-process run (one process holds
// many simulated processes, each program instance calling this same library) gets its own
// host's table, made on its first call; any other process has one table of the daemon.
DeviceTable& device_table() {
  if (backend::InprocHost* host = backend::inproc_current()) {
    void*& slot = host->verbs_slot();
    if (!slot) {
      auto* table = new DeviceTable();
      if (int rc = backend::inproc_devices(*host, &table->client, &table->backends))
        table->error = rc;
      else
        fill_devices(*table);
      slot = table;
    }
    return *static_cast<DeviceTable*>(slot);
  }
  static DeviceTable table;
  static std::once_flag once;
  std::call_once(once, [] {
    if (int rc = backend::daemon_devices(&table.backends)) {
      table.error = rc;
      fprintf(stderr, "rdmasim: cannot reach the fabric daemon: %s\n", strerror(rc));
      return;
    }
    fill_devices(table);
  });
  return table;
}

// What ibv_get_device_list returns in hardware mode when the real library gives nothing.
ibv_device* hardware_empty_list[1] = {nullptr};

// ---- context ops installed in verbs_context ----

int query_port_op(ibv_context* c, uint8_t port, ibv_port_attr* attr, size_t attr_len) {
  backend::PortInfo p;
  if (int rc = query_port_info(c, port, &p)) return rc;
  memset(attr, 0, attr_len);
  memcpy(attr, &p.attr, attr_len < sizeof(p.attr) ? attr_len : sizeof(p.attr));
  return 0;
}

// The simulated HCA clock: one cycle per simulated nanosecond, so hca_core_clock is
// 1,000,000 kHz and a completion timestamp in cycles is the simulated time in ns.
constexpr uint64_t kHcaCoreClockKhz = 1'000'000;

uint64_t simulated_ns(ibv_context* c) {
  const ipc::GlobalPage* g = ctx_of(c)->doorbell.global;
  return g ? g->virtual_time_ps.load(std::memory_order_acquire) / 1000 : 0;
}

// ibv_query_device_ex(3): the 1.0 attributes plus what the extended query adds: the clock,
// max_dm_size (device memory), odp_caps; no TSO, RSS, tag matching or packet pacing (those stay 0).
int query_device_ex_op(ibv_context* c, const ibv_query_device_ex_input* input,
                       ibv_device_attr_ex* attr, size_t attr_size) {
  if (input && input->comp_mask) return EINVAL;
  if (attr_size < sizeof(ibv_device_attr)) return EINVAL;
  ibv_device_attr_ex ex{};
  if (int rc = backend_of(c).query_device(&ex.orig_attr)) return rc;
  ex.completion_timestamp_mask = UINT64_MAX;  // a 64-bit cycle counter never wraps here
  ex.hca_core_clock = kHcaCoreClockKhz;
  ex.device_cap_flags_ex = static_cast<uint32_t>(ex.orig_attr.device_cap_flags);
  ex.phys_port_cnt_ex = ex.orig_attr.phys_port_cnt;
  ex.max_dm_size = ipc::kMaxDmSize;
  // On-demand paging as a ConnectX-5 reports it (mlx5_ib_internal_fill_odp_caps): explicit
  // and implicit MRs; RC and XRC: SEND, RECV, WRITE, READ, ATOMIC, SRQ_RECV; UD: SEND and
  // SRQ_RECV; UC: none.
  constexpr uint32_t kRcOdp = IBV_ODP_SUPPORT_SEND | IBV_ODP_SUPPORT_RECV | IBV_ODP_SUPPORT_WRITE |
                              IBV_ODP_SUPPORT_READ | IBV_ODP_SUPPORT_ATOMIC | IBV_ODP_SUPPORT_SRQ_RECV;
  ex.odp_caps.general_caps = IBV_ODP_SUPPORT | IBV_ODP_SUPPORT_IMPLICIT;
  ex.odp_caps.per_transport_caps.rc_odp_caps = kRcOdp;
  ex.odp_caps.per_transport_caps.ud_odp_caps = IBV_ODP_SUPPORT_SEND | IBV_ODP_SUPPORT_SRQ_RECV;
  ex.odp_caps.per_transport_caps.uc_odp_caps = 0;
  ex.xrc_odp_caps = kRcOdp;
  memcpy(attr, &ex, attr_size < sizeof(ex) ? attr_size : sizeof(ex));
  if (attr_size > sizeof(ex)) memset(reinterpret_cast<char*>(attr) + sizeof(ex), 0, attr_size - sizeof(ex));
  return 0;
}

// ibv_query_rt_values_ex(3): the HCA clock now, as mlx5 reports it (cycles in tv_nsec).
int query_rt_values_op(ibv_context* c, ibv_values_ex* values) {
  const uint32_t asked = values->comp_mask;
  if (asked & ~static_cast<uint32_t>(IBV_VALUES_MASK_RAW_CLOCK)) return EINVAL;
  values->comp_mask = 0;
  if (asked & IBV_VALUES_MASK_RAW_CLOCK) {
    values->raw_clock.tv_sec = 0;
    values->raw_clock.tv_nsec = static_cast<long>(simulated_ns(c) * kHcaCoreClockKhz / 1'000'000);
    values->comp_mask = IBV_VALUES_MASK_RAW_CLOCK;
  }
  return 0;
}

ibv_context* open_context(Device* d) {
  backend::ContextLinks links;
  if (int rc = d->backend->open_context(&links)) return fail<ibv_context>(rc);
  auto* ctx = new Context();
  ctx->device = d;
  ctx->doorbell = links.doorbell;
  ctx->waiter = links.waiter;
  verbs_context& v = ctx->vctx;
  v.sz = sizeof(verbs_context);
  install_absent_ops(v);
  install_xrc_ops(v);
  v.query_port = query_port_op;
  v.query_device_ex = query_device_ex_op;
  v.query_rt_values = query_rt_values_op;
  v.create_cq_ex = create_cq_ex_op;
  v.create_qp_ex = create_qp_ex_op;
  v.create_srq_ex = create_srq_ex_op;
  v.alloc_td = alloc_td_op;
  v.dealloc_td = dealloc_td_op;
  v.alloc_parent_domain = alloc_parent_domain_op;
  v.advise_mr = advise_mr_op;
  v.alloc_dm = alloc_dm_op;
  v.free_dm = free_dm_op;
  v.reg_dm_mr = reg_dm_mr_op;
  ibv_context& c = v.context;
  c.device = &d->dev;
  c.cmd_fd = -1;
  c.async_fd = links.async_fd;
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
  // What rdma-core's set_lib_ops points them at: the 1.1 entry points.
  c.ops._compat_query_device = RDMASIM_V11(ibv_query_device);
  c.ops._compat_query_port = RDMASIM_V11(ibv_query_port);
  return &c;
}

int gid_entry(uint32_t port, uint32_t index, ibv_gid_entry* e, const backend::PortInfo& p) {
  if (index >= static_cast<uint32_t>(p.attr.gid_tbl_len)) return EINVAL;
  if (index >= p.num_gids || index >= ipc::kMaxGids) return ENODATA;
  memset(e, 0, sizeof(*e));
  memcpy(e->gid.raw, p.gids[index], 16);
  e->gid_index = index;
  e->port_num = port;
  e->gid_type = p.gid_types[index];
  return 0;
}

}  // namespace

extern "C" {

// ---- devices and contexts ----

ibv_device** RDMASIM_V11(ibv_get_device_list)(int* num_devices) {
  if (hardware()) {
    int n = 0;
    ibv_device** list = forward<&Hw::ibv_get_device_list>(&n);
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
  if (t.devices.empty() && t.error) {
    errno = t.error;
    return nullptr;
  }
  auto** list = static_cast<ibv_device**>(calloc(t.devices.size() + 1, sizeof(ibv_device*)));
  if (!list) return fail<ibv_device*>(ENOMEM);
  for (size_t i = 0; i < t.devices.size(); ++i) list[i] = &t.devices[i]->dev;
  if (num_devices) *num_devices = static_cast<int>(t.devices.size());
  return list;
}

void RDMASIM_V11(ibv_free_device_list)(ibv_device** list) {
  if (hardware()) {
    if (list == hardware_empty_list) return;
    return forward<&Hw::ibv_free_device_list>(list);
  }
  free(list);  // devices live as long as the process
}

const char* RDMASIM_V11(ibv_get_device_name)(ibv_device* device) {
  if (hardware()) return forward<&Hw::ibv_get_device_name>(device);
  return device->name;
}

__be64 RDMASIM_V11(ibv_get_device_guid)(ibv_device* device) {
  if (hardware()) return forward<&Hw::ibv_get_device_guid>(device);
  return htobe64(Device::from(device)->info.node_guid);
}

int ibv_get_device_index(ibv_device* device) {
  if (hardware()) return forward<&Hw::ibv_get_device_index>(device);
  return static_cast<int>(Device::from(device)->index);
}

ibv_context* RDMASIM_V11(ibv_open_device)(ibv_device* device) {
  if (hardware()) return forward<&Hw::ibv_open_device>(device);
  return open_context(Device::from(device));
}

int RDMASIM_V11(ibv_close_device)(ibv_context* context) {
  if (hardware()) return forward<&Hw::ibv_close_device>(context);
  delete ctx_of(context);
  return 0;
}

ibv_context* ibv_import_device(int cmd_fd) {
  if (hardware()) return forward<&Hw::ibv_import_device>(cmd_fd);
  return fail<ibv_context>(EOPNOTSUPP);
}

int RDMASIM_V11(ibv_query_device)(ibv_context* context, ibv_device_attr* attr) {
  if (hardware()) return forward<&Hw::ibv_query_device>(context, attr);
  return backend_of(context).query_device(attr);
}

int RDMASIM_V11(ibv_query_port)(ibv_context* context, uint8_t port, _compat_ibv_port_attr* attr) {
  if (hardware()) return forward<&Hw::ibv_query_port>(context, port, attr);
  return query_port_op(context, port, reinterpret_cast<ibv_port_attr*>(attr),
                       offsetof(ibv_port_attr, port_cap_flags2));  // the pre-1.1 layout ends there
}

int RDMASIM_V11(ibv_query_gid)(ibv_context* context, uint8_t port, int index, ibv_gid* gid) {
  if (hardware()) return forward<&Hw::ibv_query_gid>(context, port, index, gid);
  backend::PortInfo p;
  if (query_port_info(context, port, &p) != 0 || index < 0) return -1;
  ibv_gid_entry e{};
  int rc = gid_entry(port, static_cast<uint32_t>(index), &e, p);
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
  if (hardware())
    return forward<&Hw::_ibv_query_gid_ex>(context, port, index, entry, flags, entry_size);
  if (flags || entry_size < sizeof(ibv_gid_entry)) return EINVAL;
  backend::PortInfo p;
  if (int rc = query_port_info(context, static_cast<uint8_t>(port), &p)) return rc;
  return gid_entry(port, index, entry, p);
}

ssize_t _ibv_query_gid_table(ibv_context* context, ibv_gid_entry* entries, size_t max_entries,
                             uint32_t flags, size_t entry_size) {
  if (hardware())
    return forward<&Hw::_ibv_query_gid_table>(context, entries, max_entries, flags, entry_size);
  if (flags || entry_size < sizeof(ibv_gid_entry)) return -EINVAL;
  ibv_device_attr dattr{};
  if (int rc = RDMASIM_V11(ibv_query_device)(context, &dattr)) return -rc;
  size_t n = 0;
  for (uint32_t port = 1; port <= dattr.phys_port_cnt; ++port) {
    backend::PortInfo p;
    if (int rc = query_port_info(context, static_cast<uint8_t>(port), &p)) return -rc;
    for (uint32_t i = 0; i < p.num_gids && i < ipc::kMaxGids; ++i) {
      if (n == max_entries) return -EINVAL;
      auto* e = reinterpret_cast<ibv_gid_entry*>(reinterpret_cast<char*>(entries) + n * entry_size);
      gid_entry(port, i, e, p);
      ++n;
    }
  }
  return static_cast<ssize_t>(n);
}

// IBVERBS_PRIVATE_34, but ibv_devinfo calls it. `type` is enum ibv_gid_type_sysfs
// (0: IB / RoCE v1, 1: RoCE v2). Returns 0, or -1 with errno.
int ibv_query_gid_type(ibv_context* context, uint8_t port, unsigned int index, int* type) {
  if (hardware()) return forward<&Hw::ibv_query_gid_type>(context, port, index, type);
  backend::PortInfo p;
  if (int rc = query_port_info(context, port, &p)) {
    errno = rc;
    return -1;
  }
  ibv_gid_entry e{};
  if (int rc = gid_entry(port, index, &e, p)) {
    errno = rc == ENODATA ? EINVAL : rc;
    return -1;
  }
  *type = e.gid_type == IBV_GID_TYPE_ROCE_V2 ? 1 : 0;
  return 0;
}

int RDMASIM_V11(ibv_query_pkey)(ibv_context* context, uint8_t port, int index, __be16* pkey) {
  if (hardware()) return forward<&Hw::ibv_query_pkey>(context, port, index, pkey);
  backend::PortInfo p;
  if (query_port_info(context, port, &p) != 0) return -1;
  if (index < 0 || index >= static_cast<int>(p.attr.pkey_tbl_len)) return -1;
  *pkey = index == 0 ? htobe16(0xffff) : 0;  // the default partition only
  return 0;
}

int ibv_get_pkey_index(ibv_context* context, uint8_t port, __be16 pkey) {
  if (hardware()) return forward<&Hw::ibv_get_pkey_index>(context, port, pkey);
  __be16 p0 = 0;
  if (RDMASIM_V11(ibv_query_pkey)(context, port, 0, &p0) != 0) return -1;
  if (be16toh(pkey) == be16toh(p0) || (be16toh(pkey) & 0x7fff) == 0x7fff) return 0;
  errno = ENOENT;
  return -1;
}

// ---- async events ----

int RDMASIM_V11(ibv_get_async_event)(ibv_context* context, ibv_async_event* event) {
  if (hardware()) return forward<&Hw::ibv_get_async_event>(context, event);
  Context* ctx = ctx_of(context);
  if (ctx->waiter) ctx->waiter->wait_readable(context->async_fd);
  uint64_t v = 0;
  if (read(context->async_fd, &v, sizeof(v)) != sizeof(v)) return -1;
  uint32_t type = 0, handle = 0;
  if (int rc = backend_of(context).next_async_event(&type, &handle)) {
    errno = rc;
    return -1;
  }
  memset(event, 0, sizeof(*event));
  event->event_type = static_cast<ibv_event_type>(type);
  std::lock_guard<std::mutex> lock(ctx->mu);
  switch (event->event_type) {
    case IBV_EVENT_CQ_ERR: {
      auto it = ctx->cqs.find(handle);
      event->element.cq = it != ctx->cqs.end() ? it->second->ibv() : nullptr;
      break;
    }
    case IBV_EVENT_SRQ_ERR:
    case IBV_EVENT_SRQ_LIMIT_REACHED: {
      auto it = ctx->srqs.find(handle);
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
      event->element.port_num = static_cast<int>(handle);
      break;
    default: {
      auto it = ctx->qps_by_handle.find(handle);
      event->element.qp = it != ctx->qps_by_handle.end() ? it->second->ibv() : nullptr;
      break;
    }
  }
  return 0;
}

void RDMASIM_V11(ibv_ack_async_event)(ibv_async_event* event) {
  if (hardware()) return forward<&Hw::ibv_ack_async_event>(event);
  (void)event;  // objects are not reference counted against their async events here
}

// ---- fork support: no pinned pages exist in this process, so fork needs nothing ----

int ibv_fork_init(void) {
  if (hardware()) return forward<&Hw::ibv_fork_init>();
  return 0;
}
enum ibv_fork_status ibv_is_fork_initialized(void) {
  if (hardware()) return forward<&Hw::ibv_is_fork_initialized>();
  return IBV_FORK_UNNEEDED;
}
int ibv_dontfork_range(void* base, size_t size) {
  if (hardware()) return forward<&Hw::ibv_dontfork_range>(base, size);
  return 0;
}
int ibv_dofork_range(void* base, size_t size) {
  if (hardware()) return forward<&Hw::ibv_dofork_range>(base, size);
  return 0;
}

}  // extern "C"

RDMASIM_SYMVER_V11(ibv_ack_async_event)
RDMASIM_SYMVER_V11(ibv_close_device)
RDMASIM_SYMVER_V11(ibv_free_device_list)
RDMASIM_SYMVER_V11(ibv_get_async_event)
RDMASIM_SYMVER_V11(ibv_get_device_guid)
RDMASIM_SYMVER_V11(ibv_get_device_list)
RDMASIM_SYMVER_V11(ibv_get_device_name)
RDMASIM_SYMVER_V11(ibv_open_device)
RDMASIM_SYMVER_V11(ibv_query_device)
RDMASIM_SYMVER_V11(ibv_query_gid)
RDMASIM_SYMVER_V11(ibv_query_pkey)
RDMASIM_SYMVER_V11(ibv_query_port)
