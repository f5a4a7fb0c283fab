// `rdmasim fabric`: checks a config, or runs the fabric daemon on it until stopped.
#include <signal.h>
#include <sys/resource.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>
#include <memory>

#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include "apps/rdmasim/commands.h"
#include "lib/daemon/daemon.h"
#include "sim/topo/fabric.h"

namespace rdmasim::cli {
namespace {

using daemon::Daemon;

// The signal handler's only way to the daemon it stops (set while run() serves).
Daemon* g_daemon = nullptr;

void on_signal(int) {
  if (g_daemon) g_daemon->request_stop();
}

// The daemon is the simulated hardware: verbs programs busy-poll (perftest's latency tests
// spin on memory, not even on a CQ), and on a 2-core machine two spinning programs would
// leave the daemon waiting for a time slice of several ms at every step. So it asks the
// kernel for a higher CPU weight: nice -10 by default, $RDMASIM_NICE to choose (0 keeps the
// inherited value). Without the privilege (CAP_SYS_NICE) it runs as it is.
void raise_priority() {
  int nice_value = -10;
  if (const char* e = getenv("RDMASIM_NICE"); e && *e) nice_value = atoi(e);
  if (nice_value == 0) return;
  if (setpriority(PRIO_PROCESS, 0, nice_value) != 0)
    spdlog::debug("rdmasim: cannot set nice {}: {}", nice_value, strerror(errno));
}

void print_errors(const topo::ConfigError& e) {
  for (const auto& line : e.errors()) std::cerr << line << "\n";
}

int check_config(const nlohmann::json& config) {
  try {
    std::cout << topo::Fabric::check(config) << "\n";
    return kExitOk;
  } catch (const topo::ConfigError& e) {
    print_errors(e);
  } catch (const std::exception& e) {
    std::cerr << e.what() << "\n";
  }
  return kExitUsage;
}

int serve(const nlohmann::json& config, const FabricArgs& a) {
  daemon::DaemonOptions opts;
  opts.auto_exit = a.auto_exit;
  opts.socket_path = a.socket;
  opts.pcap_dir = a.pcap_dir;
  opts.timeline = a.timeline;
  std::unique_ptr<Daemon> d;
  try {
    d = std::make_unique<Daemon>(config, opts);
  } catch (const topo::ConfigError& e) {
    print_errors(e);
    return kExitUsage;
  } catch (const std::exception& e) {
    std::cerr << "rdmasim: " << e.what() << "\n";
    return kExitFailed;
  }
  std::string why;
  if (d->listen(&why) != 0) {
    std::cerr << "rdmasim: " << why << "\n";
    return kExitFailed;
  }
  g_daemon = d.get();
  struct sigaction sa{};
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
  signal(SIGPIPE, SIG_IGN);
  raise_priority();
  spdlog::info("rdmasim: serving on {}", d->socket_path());
  const int rc = d->run();
  g_daemon = nullptr;
  return rc == 0 ? kExitOk : kExitFailed;
}

}  // namespace

bool load_json(const std::string& path, nlohmann::json* out, std::string* why) {
  std::ifstream f(path);
  if (!f) {
    *why = path + ": " + strerror(errno);
    return false;
  }
  try {
    *out = nlohmann::json::parse(f);
  } catch (const std::exception& e) {
    *why = path + ": " + e.what();
    return false;
  }
  return true;
}

int run_fabric(const FabricArgs& a) {
  nlohmann::json config = topo::default_fabric_config();
  if (!a.config.empty()) {
    std::string why;
    if (!load_json(a.config, &config, &why)) {
      std::cerr << "rdmasim: " << why << "\n";
      return kExitUsage;
    }
  }
  return a.check ? check_config(config) : serve(config, a);
}

}  // namespace rdmasim::cli
