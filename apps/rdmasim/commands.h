// The rdmasim subcommands as functions of their parsed arguments; main.cpp parses.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "lib/ipc/proto.h"

namespace rdmasim::cli {

// Exit statuses of every subcommand (listed in `rdmasim --help` and README.md).
inline constexpr int kExitOk = 0;      // done
inline constexpr int kExitFailed = 1;  // tried and failed (daemon unreachable, a flow late...)
inline constexpr int kExitUsage = 2;   // bad command line or bad input (config, study file)

struct FabricArgs {
  std::string config;  // "" = the embedded default fabric
  std::string socket;  // "" = $RDMASIM_SOCKET or the per-user default
  std::string pcap_dir;
  std::string timeline;
  bool auto_exit = false;
  bool check = false;
};

struct ExecArgs {
  std::string host, fabric, socket;
  std::vector<std::string> program;  // PROGRAM ARGS...
};

struct StudyArgs {
  std::string study;
  std::string out;  // "" = ./<study name>.out
  bool quiet = false;   // no summary on stdout, no progress line
  std::string timeline; // --timeline FILE
};

struct SweepArgs {
  std::string study;
  std::vector<std::string> vary;   // "path=v1,v2,..."
  unsigned jobs = 1;
  std::string out;                 // "" = ./<study name>.sweep
  bool quiet = false;
};

struct CompareArgs {
  std::vector<std::string> dirs;
  std::string out = "compare.html";
};

struct LearnArgs {
  std::string lesson;   // "" = list the lessons
  std::string out;      // "" = ./learn-<lesson>
  std::string fabric;   // "" = the lesson's default link layer
  std::string params;   // lesson parameters (JSON file), "" = defaults
  uint64_t size = 0;    // 0 = the lesson's default
  bool json = false;
};

// Reads a JSON file; false with *why = "PATH: reason" when it cannot be read or parsed.
bool load_json(const std::string& path, nlohmann::json* out, std::string* why);

// The one exchange with a running daemon: connects to `socket` (default path when empty),
// sends `op` with no body and waits for its reply. Returns true with the reply's fds in
// *fds (the caller closes them), or false with the reason in *why. Never starts a daemon.
bool daemon_request(const std::string& socket, ipc::Op op, std::vector<int>* fds, std::string* why);

int run_fabric(const FabricArgs& a);
// Returns only when PROGRAM cannot be started (127, as env(1) does).
int run_exec(const ExecArgs& a);
int run_study(const StudyArgs& a);
int run_sweep(const SweepArgs& a);
int run_compare(const CompareArgs& a);
int run_learn(const LearnArgs& a);

}  // namespace rdmasim::cli
