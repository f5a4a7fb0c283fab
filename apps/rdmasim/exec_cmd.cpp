// `rdmasim exec`: runs a program with the drop-in libibverbs as a process of a simulated host.
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <string>
#include <vector>

#include "apps/rdmasim/commands.h"

namespace rdmasim::cli {
namespace {

// $RDMASIM_LIBDIR, else <builddir>/lib/verbs beside <builddir>/apps/rdmasim/rdmasim.
std::string verbs_libdir() {
  if (const char* d = getenv("RDMASIM_LIBDIR"); d && *d) return d;
  char exe[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  if (n <= 0) return {};
  std::string p(exe, static_cast<size_t>(n));
  for (int i = 0; i < 3; ++i) p = p.substr(0, p.rfind('/'));
  return p + "/lib/verbs";
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

}  // namespace

int run_exec(const ExecArgs& a) {
  set_environment(a);
  std::vector<char*> argv;
  for (const auto& s : a.program) argv.push_back(const_cast<char*>(s.c_str()));
  argv.push_back(nullptr);
  execvp(argv[0], argv.data());
  std::cerr << "rdmasim exec: " << argv[0] << ": " << strerror(errno) << "\n";
  return 127;
}

}  // namespace rdmasim::cli
