// rdmasim: the command line (CLI11) — declares each subcommand and calls lib/ for it.
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "apps/rdmasim/commands.h"
#include "apps/rdmasim/huge_pages.h"
#include "lib/backend/daemon_client.h"
#include "lib/daemon/daemon.h"
#include "lib/daemon/sealed_text.h"
#include "lib/ipc/proto.h"

namespace rdmasim::cli {
namespace {

constexpr const char* kExitCodes = R"(
Exit status (every command): 0 done; 1 failed (no daemon answered, a study flow did not
finish, the daemon could not start); 2 usage error or bad input (an unknown option, a
config or study file that cannot be read, parsed or validated). `exec` replaces itself by
PROGRAM, so its status is PROGRAM's; 127 when PROGRAM cannot be run (as env(1)).
`--help` on any command prints its help and exits 0 without contacting, starting or
stopping a daemon.)";

constexpr const char* kFabricFooter = R"(
Builds the fabric of CONFIG (a JSON file, see configs/README.md; default: the embedded
two-host RoCEv2 fabric "server"/"client" through one 100 Gb/s switch, configs/default.json)
and serves verbs processes on a SOCK_SEQPACKET Unix socket. Virtual time is paced to the
wall clock and never runs ahead of it; how far it falls behind under load is reported by
`rdmasim counters`. SIGINT/SIGTERM stop it cleanly. It runs at nice -10 when allowed
(busy-polling programs would starve it otherwise); RDMASIM_NICE=N chooses another value,
RDMASIM_NICE=0 keeps the inherited one.
With --check it only validates CONFIG: a one-line summary and exit 0, or each error on
stderr and exit 2.)";

constexpr const char* kExecFooter = R"(
Runs PROGRAM with the drop-in libibverbs.so.1 (LD_LIBRARY_PATH=<builddir>/lib/verbs, or
$RDMASIM_LIBDIR) as simulated host NAME (RDMASIM_HOST); RDMASIM_FABRIC and RDMASIM_SOCKET
are set from --fabric/--socket. The library starts a daemon if none runs. When one already
runs at that socket, --fabric must be its config (same digest as `rdmasim counters` shows
in daemon.config_digest): another fabric is an error naming both, exit 1, PROGRAM not run.
Put `--` before PROGRAM when its arguments start with `-`.)";

constexpr const char* kStudyFooter = R"(
Runs a study in-process (no daemon, no wall-clock pacing): the study's fabric with one HCA
model per NIC and its flows (see configs/README.md, "Studies"). Writes flows.json,
flows.csv, fct.txt (the HPCC simulator's format), summary.json, counters.json, queues.csv
(when sampling) and report.html into DIR and a summary to stdout. A run longer than a second
shows a progress line on stderr when stderr is a terminal (not with --quiet). Exit 0 when
every flow finished, 1 when one did not (each is named), 2 for a bad study file.)";

constexpr const char* kSweepFooter = R"(
Runs STUDY once per point of the cross product of the --vary values, each point a separate
study in DIR/pNNN/ (its study.json and every output of `rdmasim study`), N child processes at
once, then writes DIR/summary.csv: one row per point with the varied values, its status and
headline figures (last finish, FCT and slowdown percentiles, drops, PFC frames, ECN marks...).
PATH is dotted into the study's JSON (numbers index arrays; "fabric." reaches a fabric file's
keys), e.g. --vary fabric.switch.ecn.kmin_kb=50,100 --vary generators.0.bytes=100000,1000000.
Values are JSON, or strings when they are not JSON. A bad path or a value that makes a point
invalid is a usage error (exit 2) naming the path, before anything runs. Exit 0 when every
point's flows finished, 1 otherwise.)";

constexpr const char* kCompareFooter = R"(
Puts several runs on one page: each DIR is the output folder of `rdmasim study` (its
summary.json) or of `rdmasim sweep` (every point of its summary.csv). The page has a table of
headline figures, FCT slowdown percentiles, goodput over time, drops / PFC frames / ECN marks
and the deepest queue of each run. Exit 2 when a DIR is neither.)";

constexpr const char* kLearnFooter = R"(
With no LESSON, lists the lessons. With one, runs it in-process in virtual time (no daemon),
narrates it (colour only when stdout is a terminal) and writes DIR/lesson.html (one
self-contained page: inline SVG, no scripts, nothing fetched), DIR/summary.json (its
figures; the same options give the same bytes) and the lesson's packet captures (both
directions of a link per file). Exit 0 done, 1 the run failed, 2 unknown lesson or a bad
option for it.)";

void close_all(const std::vector<int>& fds) {
  for (int f : fds) close(f);
}

int run_shutdown(const std::string& socket) {
  std::vector<int> fds;
  std::string why;
  const bool ok = daemon_request(socket, ipc::Op::Shutdown, &fds, &why);
  close_all(fds);
  if (!ok) std::cerr << "rdmasim shutdown: " << why << "\n";
  return ok ? kExitOk : kExitFailed;
}

// Prints the counters only when all of them arrived and parse: never a truncated document.
int run_counters(const std::string& socket) {
  std::vector<int> fds;
  std::string why;
  std::string text;
  bool ok = daemon_request(socket, ipc::Op::Counters, &fds, &why);
  if (ok) {
    const int rc = fds.empty() ? EPROTO : daemon::read_sealed_text(fds[0], &text);
    if (rc != 0) why = std::string("cannot read the counters the daemon sent: ") + strerror(rc);
    ok = rc == 0;
  }
  close_all(fds);
  if (!ok) {
    std::cerr << "rdmasim counters: " << why << "\n";
    return kExitFailed;
  }
  try {
    std::cout << nlohmann::json::parse(text).dump(2) << "\n";
    return kExitOk;
  } catch (const std::exception& e) {
    std::cerr << "rdmasim counters: the daemon's " << text.size() << " bytes are not JSON: " << e.what()
              << "\n";
    return kExitFailed;
  }
}

}  // namespace

// The one exchange with a running daemon: connects to `socket` (default path when empty),
// sends `op` with no body and waits for its reply. Returns true with the reply's fds in
// *fds (the caller closes them), or false with the reason in *why.
bool daemon_request(const std::string& socket, ipc::Op op, std::vector<int>* fds, std::string* why) {
  const std::string path = socket.empty() ? daemon::default_socket_path() : socket;
  backend::DaemonClient client(path);  // never starts a daemon
  if (int e = client.connect_error()) {
    *why = "no daemon at " + path + ": " + strerror(e);
    return false;
  }
  client.set_reply_timeout(30);  // a daemon that stops answering fails the command instead of hanging it
  backend::Reply reply;
  if (int e = client.call(op, nullptr, 0, &reply)) {
    *why = e == EMSGSIZE ? "truncated reply" : std::string("no reply: ") + strerror(e);
    return false;
  }
  if (reply.hdr.status != 0) {
    *why = std::string("daemon answered ") + strerror(reply.hdr.status);
    return false;
  }
  fds->swap(reply.fds);  // the caller closes them now
  return true;
}

}  // namespace rdmasim::cli

int main(int argc, char** argv) {
  using namespace rdmasim::cli;
  CLI::App app{"rdmasim - an RDMA transport simulator with a verbs-compatible API", "rdmasim"};
  app.require_subcommand(1);
  app.footer(kExitCodes);

  FabricArgs fa;
  CLI::App* fabric = app.add_subcommand("fabric", "Run the fabric daemon (or --check a config)");
  fabric->add_option("CONFIG", fa.config, "fabric config (JSON); default: the embedded one")
      ->type_name("FILE");
  fabric->add_option("--socket", fa.socket,
                     "socket path (default $RDMASIM_SOCKET or /tmp/rdmasim-<uid>/fabric.sock)")
      ->type_name("PATH");
  fabric->add_flag("--auto", fa.auto_exit, "started by the library: exit after 30 s with no clients");
  fabric->add_option("--pcap", fa.pcap_dir, "write packet captures of every port into DIR")
      ->type_name("DIR");
  fabric->add_option("--timeline", fa.timeline,
                     "write every packet and PCIe transaction as one JSON object per line into FILE")
      ->type_name("FILE");
  fabric->add_flag("--check", fa.check, "validate CONFIG only: print a summary, or the errors");
  fabric->footer(std::string(kFabricFooter) + "\n" + kExitCodes);

  ExecArgs ea;
  CLI::App* exec = app.add_subcommand("exec", "Run a verbs program as a process of a simulated host");
  exec->add_option("--host", ea.host, "simulated host NAME (RDMASIM_HOST)")->type_name("NAME");
  exec->add_option("--fabric", ea.fabric, "config for an auto-started daemon (RDMASIM_FABRIC)")
      ->type_name("CONFIG");
  exec->add_option("--socket", ea.socket, "daemon socket path (RDMASIM_SOCKET)")->type_name("PATH");
  exec->add_option("PROGRAM", ea.program, "the program and its arguments")
      ->required()
      ->type_name("ARG");
  exec->footer(std::string(kExecFooter) + "\n" + kExitCodes);

  StudyArgs sa;
  CLI::App* study = app.add_subcommand("study", "Run a study in-process and write its outputs");
  study->add_option("STUDY", sa.study, "study file (JSON)")->required()->type_name("FILE");
  study->add_option("--out", sa.out, "output directory (default ./<study name>.out)")
      ->type_name("DIR");
  study->add_flag("--quiet", sa.quiet, "no summary on stdout, no progress line");
  study->add_option("--timeline", sa.timeline,
                    "write every packet and PCIe transaction as one JSON object per line into FILE")
      ->type_name("FILE");
  study->footer(std::string(kStudyFooter) + "\n" + kExitCodes);

  SweepArgs swa;
  CLI::App* sweep = app.add_subcommand("sweep", "Run a study at every point of a parameter cross product");
  sweep->add_option("STUDY", swa.study, "study file (JSON)")->required()->type_name("FILE");
  sweep->add_option("--vary", swa.vary, "a parameter and its values (repeatable)")
      ->required()
      ->type_name("PATH=V1,V2,...")
      ->allow_extra_args(false);
  sweep->add_option("-j,--jobs", swa.jobs, "points run at once (processes)")->check(CLI::Range(1u, 256u))->type_name("N");
  sweep->add_option("--out", swa.out, "output directory (default ./<study name>.sweep)")->type_name("DIR");
  sweep->add_flag("--quiet", swa.quiet, "no per-point lines on stdout, no progress line");
  sweep->footer(std::string(kSweepFooter) + "\n" + kExitCodes);

  CompareArgs ca;
  CLI::App* compare = app.add_subcommand("compare", "Put several runs' results on one page");
  compare->add_option("DIR", ca.dirs, "study or sweep output folders")->required()->type_name("DIR");
  compare->add_option("--out", ca.out, "the page to write (default compare.html)")->type_name("FILE");
  compare->footer(std::string(kCompareFooter) + "\n" + kExitCodes);

  LearnArgs la;
  CLI::App* learn = app.add_subcommand("learn", "Lessons: see RDMA work (list them, or run LESSON)");
  learn->add_option("LESSON", la.lesson, "the lesson to run; none: list the lessons")->type_name("LESSON");
  learn->add_option("--out", la.out, "output directory (default ./learn-<lesson>)")->type_name("DIR");
  learn->add_option("--fabric", la.fabric, "link layer, if the lesson offers a choice")
      ->check(CLI::IsMember({"roce", "ib", "iwarp"}))
      ->type_name("roce|ib|iwarp");
  learn->add_option("--size", la.size, "message or transfer size in bytes (default: the lesson's)")
      ->check(CLI::PositiveNumber)
      ->type_name("BYTES");
  learn->add_option("--params", la.params, "lesson parameters (JSON), e.g. the copies lesson's cost model")
      ->type_name("FILE");
  learn->add_flag("--json", la.json, "print summary.json instead of the narration");
  learn->footer(std::string(kLearnFooter) + "\n" + kExitCodes);

  std::string counters_socket;
  CLI::App* counters = app.add_subcommand(
      "counters", "Print the running daemon's counters (JSON): its own, per NIC, per fabric port");
  counters->add_option("--socket", counters_socket, "daemon socket path")->type_name("PATH");

  std::string shutdown_socket;
  CLI::App* shutdown = app.add_subcommand("shutdown", "Ask the running daemon to exit");
  shutdown->add_option("--socket", shutdown_socket, "daemon socket path")->type_name("PATH");

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // --help is a ParseError with status 0: the help went to stdout and nothing else ran.
    return app.exit(e) == 0 ? kExitOk : kExitUsage;
  }
  if (fabric->parsed()) return run_fabric(fa);
  if (exec->parsed()) return run_exec(ea);
  // A study (a sweep's points are studies) runs on huge pages when the kernel has them.
  if (study->parsed() || sweep->parsed()) prefer_huge_pages(argv);
  if (study->parsed()) return run_study(sa);
  if (sweep->parsed()) return run_sweep(swa);
  if (compare->parsed()) return run_compare(ca);
  if (learn->parsed()) return run_learn(la);
  if (counters->parsed()) return run_counters(counters_socket);
  if (shutdown->parsed()) return run_shutdown(shutdown_socket);
  return kExitUsage;  // unreachable: require_subcommand(1)
}
