// A client of the daemon and its object tables. Handles are per client and never reused
// within a client; every table is keyed by handle, so a handle of another kind or of
// another client is simply not found (ENOENT).
#pragma once

#include <sys/types.h>
#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "lib/daemon/process_memory.h"
#include "lib/daemon/shm.h"
#include "lib/ipc/proto.h"
#include "lib/ipc/ring.h"

namespace rdmasim::daemon {

inline constexpr uint32_t kAsyncSlots = sizeof(ipc::ClientPage::async_slots) / sizeof(ipc::AsyncEventSlot);
static_assert((kAsyncSlots & (kAsyncSlots - 1)) == 0);
inline constexpr uint32_t kChannelSlots = 1024;

struct Pd {
  size_t dev;
  uint32_t pd;  // the HCA's id
};

struct Mr {
  size_t dev;
  uint32_t lkey;
  uint32_t access;  // as registered: rereg_mr re-checks the mappings with these rights
  uint64_t addr;
  uint64_t length;
  uint32_t pd = 0;  // the client's PD handle (ibv_advise_mr checks it)
  uint32_t dm = 0;  // an MR on device memory: the DM's handle, and the HCA's view of it
  std::unique_ptr<nic::MemorySpace> dm_window;
};

// Device memory (ibv_alloc_dm): a memfd the daemon and the client both map, standing for
// the NIC's on-chip memory; `length` as asked (the map is rounded up to a page).
struct Dm {
  size_t dev;
  uint64_t length;
  SharedMap map;
  uint32_t mrs = 0;  // MRs registered on it (free_dm is EBUSY meanwhile)
};

// The HCA's view of an MR on device memory: zero-based addresses 0..length are the DM's
// bytes from `base` (ibv_reg_dm_mr's dm_offset).
class DmWindow final : public nic::MemorySpace {
 public:
  DmWindow(uint8_t* base, uint64_t length) : base_(base), length_(length) {}
  bool read(uint64_t addr, void* dst, size_t len) override {
    if (addr > length_ || len > length_ - addr) return false;
    std::memcpy(dst, base_ + addr, len);
    return true;
  }
  bool write(uint64_t addr, const void* src, size_t len) override {
    if (addr > length_ || len > length_ - addr) return false;
    std::memcpy(base_ + addr, src, len);
    return true;
  }

 private:
  uint8_t* base_;
  uint64_t length_;
};

struct Mw {
  size_t dev;
  uint32_t rkey;  // as allocated; the HCA finds the window by the key's index
};

struct Channel {
  SharedMap map;
  ipc::RingView<ipc::CompEvent> ring;
  uint32_t prod = 0;  // the daemon's own producer index
  int efd = -1;
  Channel() = default;
  Channel(Channel&& o) noexcept : map(std::move(o.map)), ring(o.ring), prod(o.prod), efd(std::exchange(o.efd, -1)) {}
  ~Channel() {
    if (efd >= 0) close(efd);
  }
};

struct Cq {
  size_t dev;
  uint32_t cq;  // the HCA's id
  uint32_t cqe;
  uint32_t channel = 0;  // client handle of the completion channel, 0: none
  SharedMap map;
  ipc::RingView<ipc::Cqe> ring;
  ipc::CqControl* ctl = nullptr;
  uint32_t prod = 0;
  // Local rings a resize replaced: the in-process client keeps its view of the old one
  // until the CQ is destroyed (ibv_resize_cq in lib/verbs), so they stay mapped as long.
  std::vector<SharedMap> retired;
};

// An XRC domain this client opened. A domain opened through a file (`shared`) is the one
// every client opening the same file gets (Ops' XRC table counts the opens).
struct Xrcd {
  size_t dev;
  uint32_t xrcd;  // the HCA's id
  bool shared = false;
  uint64_t st_dev = 0, st_ino = 0;
};

struct Srq {
  size_t dev;
  uint32_t srqn;
  uint32_t xrcd = 0;  // an XRC SRQ: the client's domain handle
  uint32_t max_sge;
  SharedMap map;
  ipc::RingView<ipc::RqWqe> ring;
  uint32_t cons = 0;  // the daemon's own consumer index
};

struct Qp {
  size_t dev;
  uint32_t qpn;
  uint32_t type;
  uint32_t send_cq, recv_cq, srq;  // client handles
  uint32_t xrcd = 0;               // an XRC target: the client's domain handle
  uint32_t max_send_sge, max_recv_sge, max_inline;
  bool sq_sig_all;
  SharedMap map;
  ipc::RingView<ipc::SqWqe> sq;
  ipc::RingView<ipc::RqWqe> rq;
  uint32_t sq_cons = 0, rq_cons = 0;
};

// A connection after SO_PEERCRED; `hello` once Hello succeeded (it has a page and devices).
struct Client {
  uint32_t id = 0;  // also the socket server's connection id
  pid_t pid = 0;
  uid_t uid = 0;
  bool hello = false;
  std::string host;
  std::vector<size_t> devs;  // fabric NIC indices of this host, by dev_index
  SharedMap page_map;
  int async_efd = -1;
  uint64_t last_doorbell = 0;
  uint32_t async_prod = 0;
  std::unique_ptr<nic::MemorySpace> mem;   // ProcessMemory; in-process: nic::LocalMemory
  uint32_t next_handle = 1;
  std::map<uint32_t, Pd> pds;
  std::map<uint32_t, Mr> mrs;
  std::map<uint32_t, Mw> mws;
  std::map<uint32_t, Dm> dms;
  std::map<uint32_t, Channel> channels;
  std::map<uint32_t, Cq> cqs;
  std::map<uint32_t, Xrcd> xrcds;
  std::map<uint32_t, Srq> srqs;
  std::map<uint32_t, Qp> qps;

  Client() = default;
  Client(const Client&) = delete;
  Client& operator=(const Client&) = delete;
  ~Client() {
    if (async_efd >= 0) close(async_efd);
  }
  bool page_ok() const { return page_map.ok(); }
  ipc::ClientPage* page() const { return static_cast<ipc::ClientPage*>(page_map.addr()); }
};

// Every client of the daemon by id; each piece of the daemon reaches them through this.
using Clients = std::map<uint32_t, std::unique_ptr<Client>>;

}  // namespace rdmasim::daemon
