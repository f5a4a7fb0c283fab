// rdmasim: the command line — fabric daemon, exec wrapper, counters, config check.
#include <signal.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <sys/resource.h>
#include <fstream>
#include <iostream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include "lib/daemon/daemon.h"
#include "lib/study/study.h"
#include "lib/ipc/proto.h"
#include "sim/topo/fabric.h"

namespace {

using rdmasim::daemon::Daemon;

constexpr const char* kHelp = R"(rdmasim - an RDMA transport simulator with a verbs-compatible API

usage:
  rdmasim fabric [--auto] [--socket PATH] [--pcap DIR] [CONFIG]
      Runs the fabric daemon: builds the fabric of CONFIG (a JSON file; default: the
      embedded two-host RoCEv2 fabric "server"/"client" through one 100 Gb/s switch) and
      serves verbs processes on a SOCK_SEQPACKET Unix socket.
      --socket PATH  socket path (default $RDMASIM_SOCKET or /tmp/rdmasim-<uid>/fabric.sock)
      --auto         started by the library: exit after 30 s with no clients
      --pcap DIR     write packet captures into DIR
      Virtual time is paced to the wall clock and never runs ahead of it; how far it falls
      behind under load is reported by `rdmasim counters`. SIGINT/SIGTERM stop it cleanly.
      It runs at nice -10 when allowed (busy-polling programs would starve it otherwise);
      RDMASIM_NICE=N chooses another value, RDMASIM_NICE=0 keeps the inherited one.
  rdmasim fabric --check CONFIG
      Validates CONFIG only: prints a one-line summary and exits 0, or prints each error
      on stderr and exits 2.
  rdmasim exec [--host NAME] [--fabric CONFIG] [--socket PATH] -- PROGRAM ARGS...
      Runs PROGRAM with the drop-in libibverbs.so.1 (LD_LIBRARY_PATH=<builddir>/lib/verbs,
      or $RDMASIM_LIBDIR) as simulated host NAME (RDMASIM_HOST); RDMASIM_FABRIC and
      RDMASIM_SOCKET are set from --fabric/--socket. The library starts a daemon if none runs.
  rdmasim study STUDY.json [--out DIR]
      Runs a study in-process (no daemon, no wall-clock pacing): the study's fabric with one
      HCA model per NIC and its flows (see configs/README.md, "Studies"). Writes
      flows.json, flows.csv, counters.json, queues.csv (when sampling) and report.html into
      DIR (default: ./<study name>.out) and a summary to stdout. Exit 0 when every flow
      finished, 1 when one did not (each is named), 2 for a bad study file.
  rdmasim counters [--socket PATH]
      Prints the daemon's counters (JSON): its own, per NIC and per fabric port.
  rdmasim shutdown [--socket PATH]
      Asks the daemon to exit.
  rdmasim --help
)";

Daemon* g_daemon = nullptr;

void on_signal(int) {
  if (g_daemon) g_daemon->request_stop();
}

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

int cmd_fabric(const std::vector<std::string>& args) {
  rdmasim::daemon::DaemonOptions opts;
  bool check = false;
  std::string config_path;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "--auto") {
      opts.auto_exit = true;
    } else if (a == "--check") {
      check = true;
    } else if ((a == "--socket" || a == "--pcap") && i + 1 < args.size()) {
      (a == "--socket" ? opts.socket_path : opts.pcap_dir) = args[++i];
    } else if (!a.empty() && a[0] == '-') {
      std::cerr << "rdmasim fabric: unknown option " << a << "\n";
      return 1;
    } else {
      config_path = a;
    }
  }
  nlohmann::json config = rdmasim::topo::default_fabric_config();
  if (!config_path.empty()) {
    std::string why;
    if (!load_json(config_path, &config, &why)) {
      std::cerr << "rdmasim: " << why << "\n";
      return 2;
    }
  }
  if (check) {
    try {
      std::cout << rdmasim::topo::Fabric::check(config) << "\n";
      return 0;
    } catch (const rdmasim::topo::ConfigError& e) {
      for (const auto& line : e.errors()) std::cerr << line << "\n";
      return 2;
    } catch (const std::exception& e) {
      std::cerr << e.what() << "\n";
      return 2;
    }
  }
  std::unique_ptr<Daemon> d;
  try {
    d = std::make_unique<Daemon>(config, opts);
  } catch (const rdmasim::topo::ConfigError& e) {
    for (const auto& line : e.errors()) std::cerr << line << "\n";
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "rdmasim: " << e.what() << "\n";
    return 1;
  }
  std::string why;
  if (int rc = d->listen(&why)) {
    std::cerr << "rdmasim: " << why << "\n";
    return rc == EADDRINUSE ? 3 : 1;
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
  int rc = d->run();
  g_daemon = nullptr;
  d.reset();
  return rc;
}

// Sends one request without a body and prints the reply body (Counters) to stdout.
int simple_request(const std::vector<std::string>& args, rdmasim::ipc::Op op) {
  std::string path;
  for (size_t i = 0; i < args.size(); ++i)
    if (args[i] == "--socket" && i + 1 < args.size()) path = args[++i];
  if (path.empty()) path = rdmasim::daemon::default_socket_path();
  int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::snprintf(addr.sun_path, sizeof addr.sun_path, "%s", path.c_str());
  if (fd < 0 || connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    std::cerr << "rdmasim: no daemon at " << path << ": " << strerror(errno) << "\n";
    return 1;
  }
  rdmasim::ipc::MsgHeader h{};
  h.op = op;
  h.seq = 1;
  if (send(fd, &h, sizeof h, MSG_NOSIGNAL) != sizeof h) {
    std::cerr << "rdmasim: send failed: " << strerror(errno) << "\n";
    return 1;
  }
  std::vector<char> buf(sizeof h + rdmasim::ipc::kMaxMsgBytes);
  ssize_t n = recv(fd, buf.data(), buf.size(), 0);
  close(fd);
  if (n < static_cast<ssize_t>(sizeof h)) {
    std::cerr << "rdmasim: no reply\n";
    return 1;
  }
  std::memcpy(&h, buf.data(), sizeof h);
  if (h.status != 0) {
    std::cerr << "rdmasim: daemon answered " << strerror(h.status) << "\n";
    return 1;
  }
  if (op == rdmasim::ipc::Op::Counters) {
    std::string text(buf.data() + sizeof h, static_cast<size_t>(n) - sizeof h);
    try {
      std::cout << nlohmann::json::parse(text).dump(2) << "\n";
    } catch (...) {
      std::cout << text << "\n";
    }
  }
  return 0;
}

// <builddir>/apps/rdmasim/rdmasim -> <builddir>/lib/verbs
std::string verbs_libdir() {
  if (const char* d = getenv("RDMASIM_LIBDIR"); d && *d) return d;
  char exe[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  if (n <= 0) return {};
  std::string p(exe, static_cast<size_t>(n));
  for (int i = 0; i < 3; ++i) p = p.substr(0, p.rfind('/'));
  return p + "/lib/verbs";
}

int cmd_exec(const std::vector<std::string>& args) {
  std::string host, fabric, sock;
  size_t i = 0;
  for (; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "--") {
      ++i;
      break;
    }
    if ((a == "--host" || a == "--fabric" || a == "--socket") && i + 1 < args.size()) {
      (a == "--host" ? host : a == "--fabric" ? fabric : sock) = args[++i];
    } else if (!a.empty() && a[0] == '-') {
      std::cerr << "rdmasim exec: unknown option " << a << "\n";
      return 1;
    } else {
      break;  // the program, without "--"
    }
  }
  if (i >= args.size()) {
    std::cerr << "rdmasim exec: no program given\n";
    return 1;
  }
  const std::string libdir = verbs_libdir();
  std::string ld = libdir;
  if (const char* old = getenv("LD_LIBRARY_PATH"); old && *old) ld += std::string(":") + old;
  setenv("LD_LIBRARY_PATH", ld.c_str(), 1);
  if (!host.empty()) setenv("RDMASIM_HOST", host.c_str(), 1);
  if (!fabric.empty()) {
    char real[PATH_MAX];
    setenv("RDMASIM_FABRIC", realpath(fabric.c_str(), real) ? real : fabric.c_str(), 1);
  }
  if (!sock.empty()) setenv("RDMASIM_SOCKET", sock.c_str(), 1);
  char exe[PATH_MAX];
  if (ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1); n > 0) {
    exe[n] = 0;
    if (!getenv("RDMASIM_DAEMON")) setenv("RDMASIM_DAEMON", exe, 1);
  }
  std::vector<char*> argv;
  for (size_t k = i; k < args.size(); ++k) argv.push_back(const_cast<char*>(args[k].c_str()));
  argv.push_back(nullptr);
  execvp(argv[0], argv.data());
  std::cerr << "rdmasim exec: " << argv[0] << ": " << strerror(errno) << "\n";
  return 127;
}

int cmd_study(const std::vector<std::string>& args) {
  std::string path, out;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "--out" && i + 1 < args.size()) {
      out = args[++i];
    } else if (!a.empty() && a[0] == '-') {
      std::cerr << "rdmasim study: unknown option " << a << "\n";
      return 2;
    } else if (path.empty()) {
      path = a;
    } else {
      std::cerr << "rdmasim study: more than one study file (" << path << ", " << a << ")\n";
      return 2;
    }
  }
  if (path.empty()) {
    std::cerr << "rdmasim study: no study file given (rdmasim study STUDY.json [--out DIR])\n";
    return 2;
  }
  nlohmann::json j;
  std::string why;
  if (!load_json(path, &j, &why)) {
    std::cerr << "rdmasim: " << why << "\n";
    return 2;
  }
  namespace st = rdmasim::study;
  st::StudySpec spec;
  try {
    const size_t slash = path.rfind('/');
    spec = st::parse_study(j, slash == std::string::npos ? "." : path.substr(0, slash));
  } catch (const rdmasim::topo::ConfigError& e) {
    for (const auto& line : e.errors()) std::cerr << path << ": " << line << "\n";
    return 2;
  }
  if (out.empty()) out = spec.name + ".out";
  try {
    const st::StudyResult result = st::run_study(spec);
    st::write_outputs(spec, result, out);
    std::cout << st::summary(spec, result) << "outputs in " << out << "/\n";
    return result.ok ? 0 : 1;
  } catch (const std::exception& e) {
    std::cerr << "rdmasim study: " << e.what() << "\n";
    return 1;
  }
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  if (args.empty() || args[0] == "--help" || args[0] == "-h" || args[0] == "help") {
    std::cout << kHelp;
    return args.empty() ? 1 : 0;
  }
  const std::string cmd = args[0];
  args.erase(args.begin());
  if (cmd == "fabric") return cmd_fabric(args);
  if (cmd == "exec") return cmd_exec(args);
  if (cmd == "study") return cmd_study(args);
  if (cmd == "counters") return simple_request(args, rdmasim::ipc::Op::Counters);
  if (cmd == "shutdown") return simple_request(args, rdmasim::ipc::Op::Shutdown);
  std::cerr << "rdmasim: unknown command " << cmd << " (see rdmasim --help)\n";
  return 1;
}
