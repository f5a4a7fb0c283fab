// The maestro: runs ready fibers, serves what they ask, and runs the engine in between.
#include "lib/inproc/runtime.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <stdio_ext.h>
#include <cstring>
#include <stdexcept>

#include <spdlog/spdlog.h>

#include "lib/inproc/process.h"

namespace rdmasim::inproc {
namespace {

bool readable(int fd) {
  pollfd p{fd, POLLIN, 0};
  return ::poll(&p, 1, 0) > 0 && (p.revents & POLLIN);
}

std::string signal_name(int sig) {
  switch (sig) {
    case SIGSEGV: return "SIGSEGV";
    case SIGBUS: return "SIGBUS";
    case SIGFPE: return "SIGFPE";
    case SIGILL: return "SIGILL";
    default: return "signal " + std::to_string(sig);
  }
}

std::string hex(uintptr_t v) {
  char b[32];
  snprintf(b, sizeof b, "0x%lx", static_cast<unsigned long>(v));
  return b;
}

}  // namespace

Runtime::Runtime(Engine& engine, const topo::Fabric& fabric,
                 const std::vector<std::unique_ptr<nic::Hca>>& hcas, RuntimeOptions options)
    : engine_(engine), fabric_(fabric), hcas_(hcas), opts_(std::move(options)),
      loader_(opts_.verbs_library, opts_.rdmacm_library) {
  if (opts_.empty_poll_cost <= 0) throw std::invalid_argument("empty poll cost must be > 0");
  Fiber::install_fault_handler();
  // The daemon's global page, never "sleeping": a post's doorbell makes no system call.
  global_map_ = daemon::SharedMap::create("rdmasim-global", sizeof(ipc::GlobalPage));
  if (!global_map_.ok()) throw std::runtime_error("memfd_create failed for the global page");
  new (global_map_.addr()) ipc::GlobalPage();
  global_ro_fd_ = open(("/proc/self/fd/" + std::to_string(global_map_.fd())).c_str(), O_RDONLY | O_CLOEXEC);
  wake_fd_ = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (global_ro_fd_ < 0 || wake_fd_ < 0) throw std::runtime_error(std::string("runtime set-up: ") + strerror(errno));
  for (size_t i = 0; i < hcas_.size(); ++i)
    hcas_[i]->set_async_sink([this, i](const nic::AsyncEvent& ev) { router_.on_async(i, ev); });
  router_.set_signal_hook([this](uint32_t client) { on_signal(client); });
  cm_ = std::make_unique<daemon::CmAgent>(clients_, fabric_, engine_, hcas_);
  cm_->set_event_hook([this](uint32_t client) { on_signal(client); });
  ops_ = std::make_unique<daemon::Ops>(daemon::Ops::Services{
      fabric_, hcas_, clients_, router_, global_ro_fd_, wake_fd_,
      [] { return std::string("{}"); }, [] {}, *cm_, true, global_map_.addr()});
}

Runtime::~Runtime() {
  for (auto& p : procs_)
    if (!p->fiber_->ended()) p->fiber_->kill();
  for (auto& [id, c] : clients_) ops_->destroy_all(*c);
  for (size_t i = 0; i < hcas_.size(); ++i) hcas_[i]->set_async_sink(nullptr);
  procs_.clear();
  clients_.clear();
  if (global_ro_fd_ >= 0) close(global_ro_fd_);
  if (wake_fd_ >= 0) close(wake_fd_);
}

bool Runtime::add(const ProgramInstance& inst, std::string* why) {
  bool host_ok = false;
  for (const auto& n : fabric_.nics()) host_ok = host_ok || n.host == inst.host;
  if (!host_ok) {
    *why = "no host " + inst.host + " in the fabric";
    return false;
  }
  ProgramCopy copy;
  if (!loader_.load(inst.program, &copy, why)) return false;
  const uint32_t id = static_cast<uint32_t>(procs_.size() + 1);
  auto c = std::make_unique<daemon::Client>();
  c->id = id;
  c->pid = getpid();
  c->uid = getuid();
  c->mem = std::make_unique<nic::LocalMemory>();
  daemon::Client& client = *c;
  clients_[id] = std::move(c);
  procs_.push_back(std::make_unique<Process>(*this, static_cast<int>(procs_.size()), inst.program,
                                             inst.host, inst.args, copy, client, opts_.stack_bytes));
  by_client_[id] = procs_.back().get();
  InstanceResult r;
  r.program = inst.program;
  r.host = inst.host;
  r.rank = procs_.back()->rank();
  results_.push_back(r);
  return true;
}

void Runtime::record_output(Process& p, int stream, std::string text) {
  output_.push_back({engine_.now(), p.host_, stream, std::move(text)});
}

void Runtime::make_ready(Process& p) {
  p.wait_ = Wait::None;
  ready_.push_back(&p);
}

void Runtime::drain(Process& p) {
  daemon::Client& c = p.client_;
  if (!c.page_ok()) return;
  const uint64_t db = c.page()->doorbell.load(std::memory_order_acquire);
  if (db == c.last_doorbell) return;
  c.last_doorbell = db;
  data_path_.drain_client(c);
}

void Runtime::on_signal(uint32_t client) {
  auto it = by_client_.find(client);
  if (it == by_client_.end()) return;
  Process& p = *it->second;
  if (p.wait_ == Wait::Fd && readable(p.wait_fd_)) make_ready(p);
  else if (p.wait_ == Wait::Spin) end_spin(p);
}

// An empty poll. A repeated one (same CQ, no other call, no post since) only waits: without
// coalescing it would poll every `cost` until something arrives, seeing nothing new.
void Runtime::poll_wait(Process& p) {
  const uint64_t db = p.client_.page_ok() ? p.client_.page()->doorbell.load(std::memory_order_acquire) : 0;
  const bool spinning = opts_.spin_cap > 0 && !p.other_call_ && p.poll_cq_ == p.last_poll_cq_ &&
                        db == p.poll_doorbell_;
  p.last_poll_cq_ = p.poll_cq_;
  p.poll_doorbell_ = db;
  p.other_call_ = false;
  Process* q = &p;
  if (!spinning) {
    p.wait_ = Wait::Timer;
    p.cpu_.run(0, "poll", engine_.now(), opts_.empty_poll_cost);
    engine_.schedule_in(opts_.empty_poll_cost, [this, q] { make_ready(*q); });
    return;
  }
  p.wait_ = Wait::Spin;
  p.spin_start_ = engine_.now();
  p.spin_timer_ = engine_.schedule_in(opts_.empty_poll_cost * opts_.spin_cap, [this, q] {
    q->spin_timer_ = {};
    q->cpu_.run(0, "poll", q->spin_start_, opts_.empty_poll_cost * opts_.spin_cap);
    make_ready(*q);
  });
}

// Something arrived for a spinning process: it sees it at its next poll instant.
void Runtime::end_spin(Process& p) {
  if (p.spin_timer_) engine_.cancel(p.spin_timer_);
  p.spin_timer_ = {};
  const Time cost = opts_.empty_poll_cost;
  const Time polls = std::max<Time>(1, (engine_.now() - p.spin_start_ + cost - 1) / cost);
  p.cpu_.run(0, "poll", p.spin_start_, polls * cost);
  p.wait_ = Wait::Timer;
  Process* q = &p;
  engine_.schedule_at(p.spin_start_ + polls * cost, [this, q] { make_ready(*q); });
}

void Runtime::oob_publish(const std::string& key) {
  if (put_hook_) put_hook_(key, keys_.at(key));
  auto w = key_waiters_.find(key);
  if (w == key_waiters_.end()) return;
  std::vector<Process*> waiting = std::move(w->second);
  key_waiters_.erase(w);
  for (Process* q : waiting) {
    serve(*q);  // answers its get now (Wait::Key with the key present) and readies it
  }
}

// Answers what p waits for if it can be answered now; then p is ready (or running on).
// Returns with p still waiting otherwise (a timer, an fd, a key, the barrier).
void Runtime::serve(Process& p) {
  switch (p.wait_) {
    case Wait::None:
    case Wait::Simcall:
      make_ready(p);
      return;
    case Wait::Timer: {
      Process* q = &p;
      engine_.schedule_in(p.delay_, [this, q] { make_ready(*q); });
      return;
    }
    case Wait::Poll:
      poll_wait(p);
      return;
    case Wait::Spin:
      return;
    case Wait::Fd:
      if (readable(p.wait_fd_)) make_ready(p);
      return;  // else on_signal readies it
    case Wait::Key: {
      auto it = keys_.find(p.wait_key_);
      if (it == keys_.end()) {
        key_waiters_[p.wait_key_].push_back(&p);
        return;
      }
      if (it->second.size() != p.get_len_) {
        p.get_rc_ = EMSGSIZE;
      } else if (p.get_len_) {
        std::memcpy(p.get_dst_, it->second.data(), p.get_len_);
      }
      make_ready(p);
      return;
    }
    case Wait::Barrier:
      barrier_.push_back(&p);
      if (barrier_.size() == procs_.size()) {
        std::vector<Process*> all = std::move(barrier_);
        barrier_.clear();
        for (Process* q : all) make_ready(*q);
      }
      return;
  }
}

void Runtime::run_process(Process& p) {
  for (;;) {
    p.enter();
    p.fiber_->resume();
    p.leave();
    drain(p);  // what it posted reaches the HCAs before anything it asks next
    if (p.fiber_->ended()) {
      finish(p);
      return;
    }
    if (p.wait_ == Wait::Simcall) {
      auto call = std::move(p.simcall_);
      p.simcall_ = nullptr;
      call();
      drain(p);
      p.wait_ = Wait::None;
      continue;  // a control verb takes no virtual time: the same fiber goes on
    }
    serve(p);
    if (!ready_.empty() && ready_.back() == &p && p.wait_ == Wait::None) {
      ready_.pop_back();  // answered at once (a key already there, a readable fd): go on
      continue;
    }
    return;
  }
}

void Runtime::finish(Process& p) {
  p.flush_partial_lines();
  p.ended_ = true;
  --live_;
  InstanceResult& r = results_[static_cast<size_t>(p.rank())];
  r.end = engine_.now();
  r.cpu_busy = p.cpu_.by_cause(0);
  const Fiber& f = *p.fiber_;
  if (f.end() == FiberEnd::Returned) {
    r.finished = true;
    r.status = f.status();
    r.ok = r.status == 0;
    r.outcome = "exit " + std::to_string(r.status);
  } else if (f.end() == FiberEnd::Faulted) {
    const FiberFault& ft = f.fault();
    r.outcome = ft.guard_page
                    ? "crashed: stack overflow (" + signal_name(ft.signal) +
                          " in the guard page below its " + std::to_string(f.stack_bytes() / 1024) +
                          " KiB stack)"
                    : "crashed: " + signal_name(ft.signal) + " at address " + hex(ft.address);
  }
  // Its objects go as a process's do when it exits (the daemon does this on disconnect).
  ops_->destroy_all(p.client_);
}

void Runtime::end_unfinished(bool time_left) {
  for (auto& pp : procs_) {
    Process& p = *pp;
    if (p.ended_) continue;
    InstanceResult& r = results_[static_cast<size_t>(p.rank())];
    r.cpu_busy = p.cpu_.by_cause(0);
    r.outcome = std::string("did not finish: ") +
                (time_left ? "nothing left to happen while it waits in "
                           : "time limit reached while it waits in ") +
                p.waiting_in_;
    p.fiber_->kill();
    p.ended_ = true;
    p.flush_partial_lines();
  }
  live_ = 0;
}

void Runtime::run(Time limit, const std::function<bool()>& others_done) {
  // The HELLO log line of every process would drown a run of hundreds: warnings only.
  const auto level = spdlog::get_level();
  spdlog::set_level(spdlog::level::warn);
  live_ = procs_.size();
  for (auto& p : procs_) ready_.push_back(p.get());
  bool time_left = true;
  for (;;) {
    while (!ready_.empty()) {
      Process* p = ready_.front();
      ready_.pop_front();
      run_process(*p);
    }
    if (live_ == 0 && others_done()) break;
    const Time next = engine_.next_event_time();
    if (next == kTimeNever) break;
    if (next > limit) {
      time_left = false;
      engine_.run_until(limit);
      break;
    }
    engine_.step();
  }
  if (live_ > 0) end_unfinished(time_left);
  spdlog::set_level(level);
}

}  // namespace rdmasim::inproc
