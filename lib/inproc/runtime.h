// The in-process runtime: users' verbs programs as fibers in the engine's virtual time.
//
// Each instance of a program is one simulated process on one host: a Fiber running its
// rdmasim_main, and a client of the daemon's own control operations (lib/daemon Ops) on the
// run's HCAs. A fiber never touches simulator state: every request (a control verb, a wait,
// an out-of-band get) is handed to the maestro, which serves it at the current virtual time
// and resumes the fiber (SimGrid's simcall). Before serving, the maestro drains the rings
// the fiber posted to (lib/daemon DataPath), so work reaches the HCA at the time it was
// posted. Ready fibers run in a fixed order (first made ready, first run; at the start in
// rank order), and the engine runs only when none is ready: a run is reproducible bit for bit.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "lib/daemon/client.h"
#include "lib/daemon/data_path.h"
#include "lib/daemon/event_router.h"
#include "lib/daemon/ops.h"
#include "lib/daemon/shm.h"
#include "lib/inproc/loader.h"
#include "sim/core/engine.h"
#include "sim/nic/hca.h"
#include "sim/topo/fabric.h"

namespace rdmasim::inproc {

class Process;

struct RuntimeOptions {
  Time empty_poll_cost = ns(50);      // CPU time of one poll of an empty CQ (> 0)
  // Coalescing of spin loops (lib/inproc/README.md): a second empty poll of the same CQ with
  // nothing in between waits, as one event, for the first poll instant at or after the
  // process's next completion or event, at most `spin_cap` polls ahead. 0: every poll is
  // an event.
  uint32_t spin_cap = 1024;
  size_t stack_bytes = size_t{1} << 20;
  std::string verbs_library = default_verbs_library();
  std::string rdmacm_library = default_rdmacm_library();
};

struct ProgramInstance {
  std::string program;                // the .so's path
  std::string host;
  std::vector<std::string> args;      // argv[1..]; argv[0] is the host
};

struct InstanceResult {
  std::string program, host;
  int rank = 0;
  bool ok = false;                    // returned 0
  bool finished = false;              // returned (any status), as opposed to crashed/unfinished
  int status = 0;                     // rdmasim_main's value when finished
  std::string outcome;                // "exit 0", "exit 3", "crashed: ...", "did not finish: ..."
  Time end = -1;                      // when it returned or crashed
  std::map<std::string, Time> cpu_busy;  // its core's busy time by cause (Process::cpu_)
};

// One line a program wrote to its stdout (stream 1) or stderr (2), at virtual time `at`.
struct OutputLine {
  Time at = 0;
  std::string host;
  int stream = 1;
  std::string text;                   // without the newline
};

class Runtime {
 public:
  // The HCAs are the run's, indexed as fabric.nics(); their async sinks are set here.
  Runtime(Engine& engine, const topo::Fabric& fabric,
          const std::vector<std::unique_ptr<nic::Hca>>& hcas, RuntimeOptions options);
  ~Runtime();
  Runtime(const Runtime&) = delete;
  Runtime& operator=(const Runtime&) = delete;

  // Loads one more instance (rank = the number added before). false with *why when the
  // program cannot be loaded or the host does not exist.
  bool add(const ProgramInstance& inst, std::string* why);

  // Runs fibers and the engine until every fiber has ended and `others_done()` (e.g. the
  // study's flows) holds, until `limit`, or until nothing can happen any more. Fibers still
  // running then are ended (reported "did not finish").
  void run(Time limit, const std::function<bool()>& others_done);

  // Called with every key a program publishes, at the virtual time of the put (the study
  // runner learns the workload programs' QPs and flow ends this way).
  using PutHook = std::function<void(const std::string& key, const std::vector<uint8_t>& value)>;
  void set_put_hook(PutHook hook) { put_hook_ = std::move(hook); }

  const std::vector<InstanceResult>& results() const { return results_; }
  const std::vector<OutputLine>& output() const { return output_; }
  size_t size() const { return procs_.size(); }

  // The maestro's side of a process's requests (process.cpp calls these from the maestro).
  Engine& engine() { return engine_; }
  void record_output(Process& p, int stream, std::string text);

 private:
  friend class Process;
  void run_process(Process& p);
  void serve(Process& p);
  void drain(Process& p);
  void make_ready(Process& p);
  void finish(Process& p);
  void end_unfinished(bool time_left);
  void oob_publish(const std::string& key);   // wakes the waiters of a new key
  void on_signal(uint32_t client);
  void poll_wait(Process& p);
  void end_spin(Process& p);

  Engine& engine_;
  const topo::Fabric& fabric_;
  const std::vector<std::unique_ptr<nic::Hca>>& hcas_;
  RuntimeOptions opts_;
  ProgramLoader loader_;
  daemon::SharedMap global_map_;
  int global_ro_fd_ = -1, wake_fd_ = -1;
  daemon::Clients clients_;
  daemon::EventRouter router_{clients_, engine_};
  daemon::DataPath data_path_{clients_, hcas_, router_};
  std::unique_ptr<daemon::CmAgent> cm_;  // rdma_cm state the Ops refer to (before ops_)
  std::unique_ptr<daemon::Ops> ops_;
  std::vector<std::unique_ptr<Process>> procs_;
  std::map<uint32_t, Process*> by_client_;
  std::deque<Process*> ready_;
  size_t live_ = 0;
  // Out-of-band state: published keys, processes waiting for a key, the barrier.
  std::map<std::string, std::vector<uint8_t>> keys_;
  std::map<std::string, std::vector<Process*>> key_waiters_;
  std::vector<Process*> barrier_;
  PutHook put_hook_;
  std::vector<InstanceResult> results_;
  std::vector<OutputLine> output_;
};

}  // namespace rdmasim::inproc
