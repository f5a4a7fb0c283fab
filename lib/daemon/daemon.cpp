// The fabric daemon: builds the fabric and its HCAs, and runs the loop that ties the
// socket server, the pacer, the data path and the event router together.
// The control operations are in ops.h.
#include "lib/daemon/daemon.h"

#include <fcntl.h>
#include <sys/eventfd.h>
#include <sys/timerfd.h>
#include <sched.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <ctime>

#include <spdlog/spdlog.h>

#include "sim/nic/cc_json.h"

namespace rdmasim::daemon {

std::string default_socket_path() {
  if (const char* s = getenv("RDMASIM_SOCKET"); s && *s) return s;
  return "/tmp/rdmasim-" + std::to_string(getuid()) + "/fabric.sock";
}

std::string config_digest(const nlohmann::json& config) {
  uint64_t h = 0xcbf29ce484222325ull;  // FNV-1a 64 offset basis
  for (unsigned char ch : config.dump()) {
    h ^= ch;
    h *= 0x100000001b3ull;  // FNV-1a 64 prime
  }
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(h));
  return hex;
}

Daemon::Daemon(const nlohmann::json& config, DaemonOptions options)
    : opts_(std::move(options)), config_digest_(config_digest(config)) {
  if (opts_.socket_path.empty()) opts_.socket_path = default_socket_path();
  fabric_ = topo::Fabric::build(engine_, config);
  const auto& nics = fabric_->nics();
  for (size_t i = 0; i < nics.size(); ++i) {
    auto hca = std::make_unique<nic::Hca>(engine_, nics[i].hca, fabric_->nic_port(i));
    topo::attach_hca(*fabric_, i, *hca);  // packets, and the port follows the link's state
    hca->set_async_sink([this, i](const nic::AsyncEvent& ev) { router_.on_async(i, ev); });
    hcas_.push_back(std::move(hca));
  }
  // --pcap captures every port; otherwise the config's "trace" object decides.
  if (!opts_.pcap_dir.empty())
    capture_ = std::make_unique<trace::Capture>(*fabric_, opts_.pcap_dir, topo::CapturePorts::All);
  else if (!fabric_->trace().pcap_dir.empty())
    capture_ = std::make_unique<trace::Capture>(*fabric_, fabric_->trace().pcap_dir, fabric_->trace().ports);
  if (capture_)
    spdlog::info("rdmasim: capturing {} ports (both directions of each link) into {}", capture_->files().size(),
                 opts_.pcap_dir.empty() ? fabric_->trace().pcap_dir : opts_.pcap_dir);
  if (!opts_.timeline.empty()) {
    std::vector<nic::Hca*> hs;
    for (auto& h : hcas_) hs.push_back(h.get());
    timeline_ = std::make_unique<trace::TimelineFile>(opts_.timeline, *fabric_, hs);
  }
  global_map_ = SharedMap::create("rdmasim-global", sizeof(ipc::GlobalPage));
  if (!global_map_.ok()) throw std::runtime_error("memfd_create failed for the global page");
  global_ = new (global_map_.addr()) ipc::GlobalPage();
  global_ro_fd_ = open(("/proc/self/fd/" + std::to_string(global_map_.fd())).c_str(), O_RDONLY | O_CLOEXEC);
  wake_fd_ = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  stop_fd_ = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  timer_fd_ = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
  if (global_ro_fd_ < 0 || wake_fd_ < 0 || stop_fd_ < 0 || timer_fd_ < 0)
    throw std::runtime_error(std::string("daemon set-up failed: ") + strerror(errno));
  server_.watch_counter(wake_fd_);
  server_.watch_counter(stop_fd_);
  server_.watch_counter(timer_fd_);
  cm_ = std::make_unique<CmAgent>(clients_, *fabric_, engine_, hcas_);
  ops_ = std::make_unique<Ops>(Ops::Services{*fabric_, hcas_, clients_, router_, global_ro_fd_, wake_fd_,
                                             [this] { return counters_json().dump(); },
                                             [this] { stopping_ = true; }, *cm_});
}

Daemon::~Daemon() {
  server_.drop_all(*this);
  server_.close_listener();
  for (int fd : {wake_fd_, timer_fd_, stop_fd_, global_ro_fd_})
    if (fd >= 0) close(fd);
  if (timeline_) {
    spdlog::info("rdmasim: wrote {} timeline events into {}", timeline_->events(), opts_.timeline);
    timeline_.reset();
  }
  if (capture_) {
    spdlog::info("rdmasim: wrote {} records into {} capture files ({} packets not capturable)",
                 capture_->packets(), capture_->files().size(), capture_->not_captured());
    capture_.reset();  // flushes and closes the files, detaches the taps
  }
  hcas_.clear();
  fabric_.reset();
}

int Daemon::listen(std::string* why) { return server_.listen(opts_.socket_path, why); }

void Daemon::request_stop() {
  uint64_t one = 1;
  ssize_t r = ::write(stop_fd_, &one, sizeof one);
  (void)r;
}

int64_t Daemon::wall_ps() const {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<int64_t>(ts.tv_sec) * kSecond + static_cast<int64_t>(ts.tv_nsec) * kNanosecond;
}

void Daemon::advance_engine() {
  const Pacer::Run run = pacer_.plan(wall_ps(), engine_.now());
  for (int n = 0; n < run.max_events && engine_.next_event_time() <= run.until; ++n) engine_.step();
  if (engine_.next_event_time() > run.until) engine_.run_until(run.until);
  const uint64_t behind = pacer_.settle(run, engine_.now(), engine_.next_event_time());
  global_->behind_ps.store(behind, std::memory_order_relaxed);
  global_->virtual_time_ps.store(static_cast<uint64_t>(engine_.now()), std::memory_order_release);
}

void Daemon::sleep_until(const Pacer::Idle& idle) {
  // Sleep protocol: announce, then re-check, so a post that missed the flag is seen.
  global_->daemon_sleeping.store(1, std::memory_order_seq_cst);
  if (data_path_.scan_doorbells()) {
    global_->daemon_sleeping.store(0, std::memory_order_seq_cst);
    return;
  }
  itimerspec its{};  // all zero: disarmed, nothing is scheduled
  if (idle.wake_wall_ps != kTimeNever) {
    const int64_t wake_ns = idle.wake_wall_ps / kNanosecond;
    its.it_value.tv_sec = wake_ns / 1'000'000'000;
    its.it_value.tv_nsec = wake_ns % 1'000'000'000;
    if (its.it_value.tv_sec == 0 && its.it_value.tv_nsec == 0) its.it_value.tv_nsec = 1;
  }
  timerfd_settime(timer_fd_, TFD_TIMER_ABSTIME, &its, nullptr);
  server_.poll(opts_.auto_exit ? 1000 : -1, *this);
  global_->daemon_sleeping.store(0, std::memory_order_seq_cst);
}

int Daemon::run() {
  pacer_.start(wall_ps(), engine_.now());
  last_client_seen_ps_ = wall_ps();
  while (!stopping_) {
    server_.poll(0, *this);
    advance_engine();  // first catch up, so new work is stamped with the current time
    data_path_.scan_doorbells();
    advance_engine();
    if (stopping_) break;
    if (!clients_.empty()) last_client_seen_ps_ = wall_ps();
    if (opts_.auto_exit && clients_.empty() &&
        wall_ps() - last_client_seen_ps_ > opts_.idle_exit_ms * kMillisecond) {
      spdlog::info("rdmasim: no clients for {} ms, exiting", opts_.idle_exit_ms);
      break;
    }
    const Pacer::Idle idle = pacer_.idle(wall_ps(), engine_.next_event_time());
    if (!idle.sleep) {
      sched_yield();  // spin, but let busy-polling clients run on a crowded machine
      continue;
    }
    sleep_until(idle);
  }
  // Stop answering at once: clients see EOF, new ones find no socket.
  server_.drop_all(*this);
  server_.close_listener();
  return 0;
}

void Daemon::on_connect(uint32_t id, const Peer& peer) {
  auto c = std::make_unique<Client>();
  c->id = id;
  c->pid = peer.pid;
  c->uid = peer.uid;
  c->mem = std::make_unique<ProcessMemory>(peer.pid);
  clients_[id] = std::move(c);
}

void Daemon::on_request(uint32_t id, const ipc::MsgHeader& h, const uint8_t* body, size_t len) {
  auto it = clients_.find(id);
  if (it == clients_.end()) return;
  Response resp;
  const int rc = ops_->dispatch(*it->second, h.op, {body, len}, &resp);
  if (rc != 0) failed_requests_++;
  server_.reply(id, h, rc, resp.body.data(), resp.body.size(), resp.fds.fds());
}

void Daemon::on_disconnect(uint32_t id) {
  auto it = clients_.find(id);
  if (it == clients_.end()) return;
  ops_->destroy_all(*it->second);
  clients_.erase(it);
}

void Daemon::on_signal(int fd) {
  if (fd == stop_fd_) stopping_ = true;
}

nlohmann::json Daemon::counters_json() const {
  const ServerStats& s = server_.stats();
  const DataPathStats& d = data_path_.stats();
  const RouterStats& r = router_.stats();
  nlohmann::json j;
  j["daemon"] = {
      {"pid", getpid()},
      {"socket", opts_.socket_path},
      {"fabric_name", fabric_->name()},
      {"config_digest", config_digest_},
      {"clients", clients_.size()},
      {"clients_accepted", s.clients_accepted},
      {"requests", s.requests},
      {"bad_requests", s.malformed + failed_requests_},
      {"wqes_posted", d.wqes_posted},
      {"wqes_rejected", d.wqes_rejected},
      {"cqes_written", r.cqes_written},
      {"cq_overruns", r.cq_overruns},
      {"comp_events", r.comp_events},
      {"async_events", r.async_events},
      {"cm_listeners", cm_->listeners()},
      {"cm_mads_sent", cm_->counters().mads_sent},
      {"cm_mads_received", cm_->counters().mads_received},
      {"cm_resent", cm_->counters().resent},
      {"cm_timeouts", cm_->counters().timeouts},
      {"virtual_time_ps", engine_.now()},
      {"events_run", engine_.events_run()},
      {"behind_ps", pacer_.behind_ps()},
      {"max_behind_ps", pacer_.max_behind_ps()},
  };
  nlohmann::json cl = nlohmann::json::array();
  for (const auto& [id, c] : clients_)
    cl.push_back({{"id", id}, {"pid", c->pid}, {"host", c->host}, {"qps", c->qps.size()}});
  j["clients"] = cl;
  nlohmann::json nics = nlohmann::json::array();
  const auto& hn = fabric_->nics();
  for (size_t i = 0; i < hcas_.size(); ++i) {
    const nic::HcaCounters& k = hcas_[i]->counters();
    const nic::HcaObjects o = hcas_[i]->objects();
    nics.push_back({{"host", hn[i].host}, {"device", hn[i].device},
                    {"objects", {{"pds", o.pds}, {"mrs", o.mrs}, {"mws", o.mws}, {"cqs", o.cqs},
                                 {"srqs", o.srqs}, {"qps", o.qps}}},
                    {"tx_packets", k.tx_packets}, {"tx_bytes", k.tx_bytes},
                    {"rx_packets", k.rx_packets}, {"rx_bytes", k.rx_bytes},
                    {"acks_sent", k.acks_sent}, {"naks_sent", k.naks_sent},
                    {"rnr_naks_sent", k.rnr_naks_sent},
                    {"retransmitted_packets", k.retransmitted_packets}, {"timeouts", k.timeouts},
                    {"out_of_sequence", k.out_of_sequence}, {"duplicates", k.duplicates},
                    {"cnps_sent", k.cnps_sent}, {"cnps_received", k.cnps_received},
                    {"ecn_marked_received", k.ecn_marked_received}, {"rate_cuts", k.rate_cuts}});
    nics.back()["cc"] = nic::cc_report_json(*hcas_[i]);
    if (fabric_->link_layer() == net::LinkLayer::IWarp) nics.back()["tcp"] = nic::tcp_report_json(*hcas_[i]);
  }
  j["nics"] = nics;
  try {
    j["fabric"] = fabric_->counters();
  } catch (const std::exception& e) {
    j["fabric"] = {{"error", e.what()}};
  }
  return j;
}

}  // namespace rdmasim::daemon
