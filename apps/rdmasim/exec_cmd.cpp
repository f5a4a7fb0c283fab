// `rdmasim exec`: runs a program with the drop-in libibverbs as a process of a simulated host.
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "apps/rdmasim/commands.h"
#include "lib/daemon/daemon.h"
#include "lib/daemon/sealed_text.h"

namespace rdmasim::cli {
namespace {

// $RDMASIM_LIBDIR (where libibverbs.so.1 and librdmacm.so.1 are installed together), else
// <builddir>/lib/verbs and <builddir>/lib/rdmacm beside <builddir>/apps/rdmasim/rdmasim.
std::string verbs_libdir() {
  if (const char* d = getenv("RDMASIM_LIBDIR"); d && *d) return d;
  char exe[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  if (n <= 0) return {};
  std::string p(exe, static_cast<size_t>(n));
  for (int i = 0; i < 3; ++i) p = p.substr(0, p.rfind('/'));
  return p + "/lib/verbs:" + p + "/lib/rdmacm";
}

// The environment lib/verbs reads (lib/ipc/proto.h lists it): the library path first, the
// host, fabric and socket when given, and this binary as the daemon to auto-start.
void set_environment(const ExecArgs& a) {
  std::string ld = verbs_libdir();
  if (const char* old = getenv("LD_LIBRARY_PATH"); old && *old) ld += std::string(":") + old;
  setenv("LD_LIBRARY_PATH", ld.c_str(), 1);
  if (!a.host.empty()) setenv("RDMASIM_HOST", a.host.c_str(), 1);
  if (!a.fabric.empty()) {
    // Absolute: an auto-started daemon runs in another working directory.
    char real[PATH_MAX];
    setenv("RDMASIM_FABRIC", realpath(a.fabric.c_str(), real) ? real : a.fabric.c_str(), 1);
  }
  if (!a.socket.empty()) setenv("RDMASIM_SOCKET", a.socket.c_str(), 1);
  char exe[PATH_MAX];
  if (ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1); n > 0) {
    exe[n] = 0;
    if (!getenv("RDMASIM_DAEMON")) setenv("RDMASIM_DAEMON", exe, 1);
  }
}

// --fabric against a daemon already running at the socket the program will use: the
// program would silently see that daemon's fabric, so a different one is an error naming
// both (the config's digest is what the daemon reports, config_digest in lib/daemon).
// Returns kExitOk when no daemon answers (the library starts one on --fabric) or it runs
// this config.
int check_running_fabric(const ExecArgs& a) {
  nlohmann::json config;
  std::string why;
  if (!load_json(a.fabric, &config, &why)) {
    std::cerr << "rdmasim exec: " << why << "\n";
    return kExitUsage;
  }
  std::string socket = a.socket;
  if (socket.empty()) socket = daemon::default_socket_path();
  std::vector<int> fds;
  if (!daemon_request(socket, ipc::Op::Counters, &fds, &why)) {
    for (int f : fds) close(f);
    return kExitOk;  // nothing (sane) listens there: the library starts this fabric
  }
  std::string text;
  const int rc = fds.empty() ? EPROTO : daemon::read_sealed_text(fds[0], &text);
  for (int f : fds) close(f);
  std::string running_name = "?", running_digest;
  if (rc == 0) {
    try {
      const nlohmann::json j = nlohmann::json::parse(text);
      running_name = j.at("daemon").value("fabric_name", "?");
      running_digest = j.at("daemon").value("config_digest", "");
    } catch (const std::exception&) {
    }
  }
  const std::string want = daemon::config_digest(config);
  if (running_digest == want) return kExitOk;
  const std::string want_name = config.value("name", "?");
  std::cerr << "rdmasim exec: the daemon at " << socket << " runs fabric '" << running_name
            << "' (config digest " << (running_digest.empty() ? "unknown" : running_digest)
            << "), not --fabric " << a.fabric << " (fabric '" << want_name << "', digest " << want
            << "); stop it (rdmasim shutdown) or give this fabric its own --socket\n";
  return kExitFailed;
}

}  // namespace

int run_exec(const ExecArgs& a) {
  if (!a.fabric.empty())
    if (int rc = check_running_fabric(a)) return rc;
  set_environment(a);
  std::vector<char*> argv;
  for (const auto& s : a.program) argv.push_back(const_cast<char*>(s.c_str()));
  argv.push_back(nullptr);
  execvp(argv[0], argv.data());
  std::cerr << "rdmasim exec: " << argv[0] << ": " << strerror(errno) << "\n";
  return 127;
}

}  // namespace rdmasim::cli
