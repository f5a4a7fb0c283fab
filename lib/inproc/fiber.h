// A simulated process's thread of control: a Boost.Context fiber on its own mmap'ed stack with
// a PROT_NONE guard page below it, so that an overflow faults instead of corrupting memory.
// A fault on a fiber (SIGSEGV, SIGBUS, SIGFPE, SIGILL) is caught on an alternate signal stack
// and ends that fiber only, with the fault recorded; the maestro (the code that resumes
// fibers) carries on. One thread: fibers never run in parallel.
#pragma once

#include <signal.h>

#include <csetjmp>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>

#include <boost/context/fiber.hpp>

namespace rdmasim::inproc {

// How a fiber ended.
enum class FiberEnd { Running, Returned, Faulted, Killed };

struct FiberFault {
  int signal = 0;
  uintptr_t address = 0;        // si_addr
  bool guard_page = false;      // the address is in this fiber's guard page: stack overflow
};

class Fiber {
 public:
  // `body` runs on the fiber; its value is the fiber's status. `stack_bytes` is rounded up to
  // pages; one more page below it is the guard.
  Fiber(size_t stack_bytes, std::function<int()> body);
  ~Fiber();
  Fiber(const Fiber&) = delete;
  Fiber& operator=(const Fiber&) = delete;

  // Maestro side: runs the fiber until it suspends or ends. Not on an ended fiber.
  void resume();
  // Maestro side: ends a suspended fiber without running its code on: its suspend() does not
  // return, the stack is abandoned (no destructor of its frames runs). Not on an ended one.
  void kill();
  // Fiber side: back to the maestro, until the next resume().
  void suspend();

  FiberEnd end() const { return end_; }
  bool ended() const { return end_ != FiberEnd::Running; }
  int status() const { return status_; }
  const FiberFault& fault() const { return fault_; }
  size_t stack_bytes() const { return stack_bytes_; }

  // The fiber running now on this thread, or nullptr (the maestro runs).
  static Fiber* current();

  // Installs the fault handler and this thread's alternate signal stack (once per thread;
  // later calls do nothing). A fault outside any fiber gets the default action.
  static void install_fault_handler();

 private:
  struct GuardedStack;
  static void on_fault(int sig, siginfo_t* info, void* uctx);
  void run_body();

  std::function<int()> body_;
  size_t stack_bytes_ = 0;
  uintptr_t guard_lo_ = 0, guard_hi_ = 0;   // the guard page
  boost::context::fiber self_;              // the fiber, while the maestro runs
  boost::context::fiber maestro_;           // the maestro, while the fiber runs
  sigjmp_buf exit_jump_;                    // back to the fiber's first frame (fault, kill)
  bool killing_ = false;
  FiberEnd end_ = FiberEnd::Running;
  int status_ = 0;
  FiberFault fault_;
};

}  // namespace rdmasim::inproc
