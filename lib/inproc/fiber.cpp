// Fibers on guard-paged stacks, and the fault handler that ends a faulting fiber.
#include "lib/inproc/fiber.h"

#include <signal.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstdlib>
#include <new>
#include <stdexcept>

namespace rdmasim::inproc {
namespace ctx = boost::context;

namespace {
// The fiber on the CPU. A signal handler must find it, so it is per thread, not per object.
thread_local Fiber* t_current = nullptr;
thread_local bool t_handler_installed = false;

size_t page_size() { return static_cast<size_t>(sysconf(_SC_PAGESIZE)); }
}  // namespace

// Boost.Context's StackAllocator: [guard page][stack], the stack growing down to the guard.
struct Fiber::GuardedStack {
  Fiber* owner;
  ctx::stack_context allocate() {
    const size_t page = page_size();
    const size_t total = owner->stack_bytes_ + page;
    void* base = mmap(nullptr, total, PROT_READ | PROT_WRITE,
                      MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (base == MAP_FAILED) throw std::bad_alloc();
    if (mprotect(base, page, PROT_NONE) != 0) {
      munmap(base, total);
      throw std::bad_alloc();
    }
    owner->guard_lo_ = reinterpret_cast<uintptr_t>(base);
    owner->guard_hi_ = owner->guard_lo_ + page;
    ctx::stack_context sc;
    sc.size = total;
    sc.sp = static_cast<char*>(base) + total;
    return sc;
  }
  void deallocate(ctx::stack_context& sc) noexcept {
    munmap(static_cast<char*>(sc.sp) - sc.size, sc.size);
  }
};

// Runs on the alternate stack. On a fiber: record the fault and jump to the fiber's first
// frame, which ends it (the faulting frames are abandoned). Elsewhere: the default action.
void Fiber::on_fault(int sig, siginfo_t* info, void*) {
  Fiber* f = t_current;
  if (!f || f->end_ != FiberEnd::Running) {
    signal(sig, SIG_DFL);
    return;  // the faulting instruction runs again and gets the default action
  }
  const auto addr = reinterpret_cast<uintptr_t>(info->si_addr);
  f->fault_.signal = sig;
  f->fault_.address = addr;
  f->fault_.guard_page = addr >= f->guard_lo_ && addr < f->guard_hi_;
  siglongjmp(f->exit_jump_, 1);
}

void Fiber::install_fault_handler() {
  if (t_handler_installed) return;
  t_handler_installed = true;
  const size_t alt_bytes = 256 * 1024;
  stack_t ss{};
  ss.ss_sp = mmap(nullptr, alt_bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (ss.ss_sp == MAP_FAILED) throw std::bad_alloc();
  ss.ss_size = alt_bytes;
  if (sigaltstack(&ss, nullptr) != 0) throw std::runtime_error("sigaltstack failed");
  struct sigaction sa{};
  sa.sa_sigaction = on_fault;
  sa.sa_flags = SA_SIGINFO | SA_ONSTACK | SA_NODEFER;
  sigemptyset(&sa.sa_mask);
  for (int sig : {SIGSEGV, SIGBUS, SIGFPE, SIGILL}) sigaction(sig, &sa, nullptr);
}

Fiber* Fiber::current() { return t_current; }

Fiber::Fiber(size_t stack_bytes, std::function<int()> body) : body_(std::move(body)) {
  const size_t page = page_size();
  stack_bytes_ = (stack_bytes + page - 1) / page * page;
  self_ = ctx::fiber(std::allocator_arg, GuardedStack{this}, [this](ctx::fiber&& maestro) {
    maestro_ = std::move(maestro);
    run_body();
    return std::move(maestro_);
  });
}

Fiber::~Fiber() {
  // An ended fiber's context is empty; one never started is unwound by Boost.Context before
  // its body runs (no user frame on it yet).
}

void Fiber::run_body() {
  // sigsetjmp saves the signal mask (1): a fault leaves the handler's signal blocked otherwise.
  if (killing_) {  // killed before it ever ran
    end_ = FiberEnd::Killed;
    return;
  }
  if (sigsetjmp(exit_jump_, 1) == 0) {
    status_ = body_();
    end_ = FiberEnd::Returned;
  } else {
    end_ = killing_ ? FiberEnd::Killed : FiberEnd::Faulted;
  }
}

void Fiber::resume() {
  Fiber* prev = t_current;
  t_current = this;
  self_ = std::move(self_).resume();
  t_current = prev;
}

void Fiber::kill() {
  killing_ = true;
  resume();
}

void Fiber::suspend() {
  maestro_ = std::move(maestro_).resume();
  if (killing_) siglongjmp(exit_jump_, 1);
}

}  // namespace rdmasim::inproc
