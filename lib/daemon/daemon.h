// The fabric daemon: one engine and fabric, the HCAs of its NICs, and the clients
// (verbs processes) that drive them over a Unix socket and shared-memory rings. A thin
// owner that wires the socket server, the pacer, the data path and the event router.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "lib/daemon/client.h"
#include "lib/daemon/data_path.h"
#include "lib/daemon/event_router.h"
#include "lib/daemon/ops.h"
#include "lib/daemon/pacer.h"
#include "lib/daemon/shm.h"
#include "lib/daemon/socket_server.h"
#include "lib/ipc/proto.h"
#include "sim/core/engine.h"
#include "sim/nic/hca.h"
#include "sim/topo/fabric.h"
#include "sim/trace/capture.h"
#include "sim/trace/timeline.h"

namespace rdmasim::daemon {

struct DaemonOptions {
  std::string socket_path;      // empty: default_socket_path()
  bool auto_exit = false;       // --auto: exit after `idle_exit` with no clients
  int64_t idle_exit_ms = 30000;
  std::string pcap_dir;         // --pcap: capture every port into this directory
  std::string timeline;         // --timeline: the event trace as JSON lines (sim/trace/timeline.h)
};

// $RDMASIM_SOCKET, or /tmp/rdmasim-<uid>/fabric.sock.
std::string default_socket_path();

// What identifies a fabric across processes: FNV-1a 64 of the config's canonical dump, as
// 16 hex digits. The daemon reports it in its counters ("config_digest"); `rdmasim exec
// --fabric` compares it with its own config's before running a program on a live daemon.
std::string config_digest(const nlohmann::json& config);

class Daemon : private ServerEvents {
 public:
  // Builds the fabric from `config` (throws topo::ConfigError).
  Daemon(const nlohmann::json& config, DaemonOptions options);
  ~Daemon() override;
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
  // ServerEvents
  void on_connect(uint32_t id, const Peer& peer) override;
  void on_request(uint32_t id, const ipc::MsgHeader& h, const uint8_t* body, size_t len) override;
  void on_disconnect(uint32_t id) override;
  void on_signal(int fd) override;

  int64_t wall_ps() const;
  // Runs the engine as far as the pacer says and publishes virtual time and behind_ps.
  void advance_engine();
  // Announces sleep, re-scans doorbells, and blocks until a request, a wake or the timer.
  void sleep_until(const Pacer::Idle& idle);

  DaemonOptions opts_;
  std::string config_digest_;
  Engine engine_;
  std::unique_ptr<topo::Fabric> fabric_;
  std::vector<std::unique_ptr<nic::Hca>> hcas_;
  std::unique_ptr<trace::Capture> capture_;   // null when capture is off
  std::unique_ptr<trace::TimelineFile> timeline_;   // after the capture: chains to its taps
  SharedMap global_map_;
  ipc::GlobalPage* global_ = nullptr;
  int wake_fd_ = -1, timer_fd_ = -1, global_ro_fd_ = -1;
  int stop_fd_ = -1;  // eventfd written by request_stop()
  bool stopping_ = false;
  Clients clients_;
  EventRouter router_{clients_, engine_};
  DataPath data_path_{clients_, hcas_, router_};
  SocketServer server_;
  Pacer pacer_;
  std::unique_ptr<CmAgent> cm_;  // rdma_cm: ids and channels of the clients
  std::unique_ptr<Ops> ops_;  // made last: its Services refer to the members above
  int64_t last_client_seen_ps_ = 0;
  uint64_t failed_requests_ = 0;  // requests answered with an errno by an operation
};

}  // namespace rdmasim::daemon
