// One simulated process of an in-process run: its fiber, its daemon client, its standard
// streams and what it waits for. Its methods run on its own fiber and only hand requests
// to the maestro (Runtime), which serves them.
#pragma once

#include <cstdio>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "lib/backend/inproc_backend.h"
#include "lib/inproc/fiber.h"
#include "lib/inproc/loader.h"
#include "sim/core/engine.h"
#include "sim/core/time.h"
#include "sim/host/cpu.h"

namespace rdmasim::daemon {
struct Client;
}

namespace rdmasim::inproc {

class Runtime;

// What a suspended process waits for; the maestro reads it when the fiber suspends.
enum class Wait { None, Simcall, Timer, Fd, Key, Barrier, Poll, Spin };

class Process final : public backend::InprocHost {
 public:
  Process(Runtime& rt, int rank, std::string program, std::string host,
          std::vector<std::string> args, ProgramCopy copy, daemon::Client& client,
          size_t stack_bytes);
  ~Process() override;

  // The process whose fiber runs now (nullptr on the maestro).
  static Process* current();

  // backend::InprocHost, called on this process's fiber.
  const char* host_name() const override { return host_.c_str(); }
  int request(ipc::Op op, const void* req, size_t req_len, backend::Reply* out) override;
  void*& verbs_slot() override { return verbs_slot_; }
  void*& rdmacm_slot() override { return rdmacm_slot_; }
  void empty_poll(const void* cq) override;
  void wait_readable(int fd) override;

  // oob.h, on the fiber.
  int rank() const { return rank_; }
  int size() const;
  int put(const char* key, const void* val, size_t len);
  int get(const char* key, void* val, size_t len);
  int barrier();
  int compute(uint64_t ns);
  Time now() const;

  // Maestro side.
  void enter();   // before resuming the fiber: it becomes current, stdout/stderr are its own
  void leave();   // after: streams flushed and given back
  void flush_partial_lines();   // at the end: what is left without a newline

  Runtime& rt_;
  const int rank_;
  const std::string program_, host_;
  std::vector<std::string> args_;
  std::vector<char*> argv_;
  ProgramCopy copy_;
  daemon::Client& client_;
  std::unique_ptr<Fiber> fiber_;
  void* verbs_slot_ = nullptr;
  void* rdmacm_slot_ = nullptr;

  // The request the fiber left for the maestro.
  Wait wait_ = Wait::None;
  std::function<void()> simcall_;   // Wait::Simcall: served on the maestro
  Time delay_ = 0;                  // Wait::Timer
  // Wait::Poll: the CQ polled; whether anything else happened since the previous empty poll
  // (another verb or oob call, a post seen by its doorbell). Wait::Spin: since when, and the
  // timer that ends the coalesced wait at the cap.
  const void* poll_cq_ = nullptr;
  const void* last_poll_cq_ = nullptr;
  bool other_call_ = true;
  uint64_t poll_doorbell_ = 0;
  Time spin_start_ = 0;
  EventId spin_timer_{};
  int wait_fd_ = -1;                // Wait::Fd
  std::string wait_key_;            // Wait::Key: the key, where its value goes, the answer
  void* get_dst_ = nullptr;
  size_t get_len_ = 0;
  int get_rc_ = 0;
  const char* waiting_in_ = "";     // the verb it waits in, for reports
  bool ended_ = false;
  // Its core's busy time by cause: "poll" (empty polls, spin loops included), "compute"
  // (rdmasim_compute). Waiting in a blocking call (a CQ event, rdma_get_cm_event, an oob
  // get or barrier) costs nothing: the process sleeps.
  host::Cpu cpu_{1};

 private:
  void suspend(Wait w) {
    if (w != Wait::Poll) other_call_ = true;
    wait_ = w;
    fiber_->suspend();
  }
  struct Stream;
  std::unique_ptr<Stream> out_, err_;
  FILE* saved_out_ = nullptr;
  FILE* saved_err_ = nullptr;
  friend struct Stream;
};

}  // namespace rdmasim::inproc
