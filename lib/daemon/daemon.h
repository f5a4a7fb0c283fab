// The fabric daemon: one engine and fabric, the HCAs of its NICs, and the clients
// (verbs processes) that drive them over a Unix socket and shared-memory rings.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "lib/daemon/process_memory.h"
#include "lib/daemon/shm.h"
#include "lib/ipc/proto.h"
#include "sim/core/engine.h"
#include "sim/nic/hca.h"
#include "sim/topo/fabric.h"
#include "sim/trace/capture.h"

namespace rdmasim::daemon {

struct DaemonOptions {
  std::string socket_path;      // empty: default_socket_path()
  bool auto_exit = false;       // --auto: exit after `idle_exit` with no clients
  int64_t idle_exit_ms = 30000;
  std::string pcap_dir;         // --pcap: capture every port into this directory
};

// $RDMASIM_SOCKET, or /tmp/rdmasim-<uid>/fabric.sock.
std::string default_socket_path();

struct DaemonStats {
  uint64_t clients_accepted = 0, requests = 0, bad_requests = 0;
  uint64_t wqes_posted = 0, wqes_rejected = 0, cqes_written = 0, cq_overruns = 0;
  uint64_t comp_events = 0, async_events = 0;
  uint64_t behind_ps = 0, max_behind_ps = 0;
};

class Daemon {
 public:
  // Builds the fabric from `config` (throws topo::ConfigError).
  Daemon(const nlohmann::json& config, DaemonOptions options);
  ~Daemon();
  Daemon(const Daemon&) = delete;
  Daemon& operator=(const Daemon&) = delete;

  // Binds the socket. Returns 0, or an errno with a message in *why (EADDRINUSE when
  // another daemon answers at the path or holds its lock).
  int listen(std::string* why);
  // Serves until stop() (from a signal handler via request_stop()), Shutdown, or the idle
  // timeout in --auto mode. Returns the process exit code.
  int run();
  // Async-signal-safe: makes run() return soon.
  void request_stop();
  const std::string& socket_path() const { return opts_.socket_path; }
  nlohmann::json counters_json() const;

 private:
  struct Pd;
  struct Mr;
  struct Mw;
  struct Channel;
  struct Cq;
  struct Srq;
  struct Qp;
  struct Client;

  void poll_once(int timeout_ms);
  void accept_clients();
  void serve_client(Client& c);
  void drop_client(uint32_t id);
  void handle(Client& c, const ipc::MsgHeader& h, const uint8_t* body, size_t len);
  void reply(Client& c, const ipc::MsgHeader& req, int status, const void* body, size_t len,
             const std::vector<int>& fds = {});
  bool scan_doorbells();
  void drain_client(Client& c);
  void drain_qp(Client& c, Qp& qp);
  void drain_srq(Client& c, Srq& srq);
  void deliver(uint32_t client, uint32_t cq_handle, const nic::Completion& comp);
  void post_error(Client& c, uint32_t cq_handle, const nic::Completion& comp);
  void push_async(Client& c, uint32_t type, uint32_t handle);
  void on_async(size_t dev, const nic::AsyncEvent& ev);
  void destroy_all(Client& c);
  int64_t wall_ps() const;
  void advance_engine();

  // Control ops: return 0 or an errno; fill *resp/*fds.
  int op_hello(Client& c, const ipc::HelloReq& r, ipc::HelloResp* out, std::vector<int>* fds);
  int op_create_cq(Client& c, const ipc::CreateCqReq& r, ipc::CreateCqResp* out, std::vector<int>* fds);
  int op_create_srq(Client& c, const ipc::CreateSrqReq& r, ipc::CreateSrqResp* out, std::vector<int>* fds);
  int op_create_qp(Client& c, const ipc::CreateQpReq& r, ipc::CreateQpResp* out, std::vector<int>* fds);
  int op_reg_mr(Client& c, const ipc::RegMrReq& r, ipc::RegMrResp* out);
  int op_rereg_mr(Client& c, const ipc::ReregMrReq& r, ipc::RegMrResp* out);
  int destroy_qp(Client& c, uint32_t handle);
  int destroy_srq(Client& c, uint32_t handle);
  int destroy_cq(Client& c, uint32_t handle);

  DaemonOptions opts_;
  Engine engine_;
  std::unique_ptr<topo::Fabric> fabric_;
  std::vector<std::unique_ptr<nic::Hca>> hcas_;
  std::unique_ptr<trace::Capture> capture_;   // null when capture is off
  SharedMap global_map_;
  ipc::GlobalPage* global_ = nullptr;
  int listen_fd_ = -1, lock_fd_ = -1, epoll_fd_ = -1, wake_fd_ = -1, timer_fd_ = -1;
  int stop_fd_ = -1, global_ro_fd_ = -1;  // eventfd written by request_stop()
  bool stopping_ = false;
  uint32_t next_client_id_ = 1;
  std::map<uint32_t, std::unique_ptr<Client>> clients_;
  std::map<int, uint32_t> fd_to_client_;
  // (device, qpn / cq / srqn) -> (client, handle), for async events.
  std::map<std::pair<size_t, uint32_t>, std::pair<uint32_t, uint32_t>> qp_owner_, cq_owner_, srq_owner_;
  int64_t wall_offset_ps_ = 0;
  int64_t last_client_seen_ps_ = 0;
  DaemonStats stats_;
};

}  // namespace rdmasim::daemon
