// What the run's executable exports to the programs and to the drop-in libibverbs.so.1
// (lib/inproc/exports.list, a dynamic list): oob.h (with rdmasim_compute and
// rdmasim_time_ns), and
// rdmasim_inproc_current, by which the library finds the running fiber's host.
#include <cerrno>

#include "lib/include/rdmasim/oob.h"
#include "lib/inproc/process.h"

using rdmasim::inproc::Process;

extern "C" {

rdmasim::backend::InprocHost* rdmasim_inproc_current(void) { return Process::current(); }

// Outside a fiber (no run) there is no rank: -1, size 0, and EPERM from the others.
int rdmasim_rank(void) {
  Process* p = Process::current();
  return p ? p->rank() : -1;
}
int rdmasim_size(void) {
  Process* p = Process::current();
  return p ? p->size() : 0;
}
int rdmasim_oob_put(const char* key, const void* val, size_t len) {
  Process* p = Process::current();
  return p ? p->put(key, val, len) : EPERM;
}
int rdmasim_oob_get(const char* key, void* val, size_t len) {
  Process* p = Process::current();
  return p ? p->get(key, val, len) : EPERM;
}
int rdmasim_oob_barrier(void) {
  Process* p = Process::current();
  return p ? p->barrier() : EPERM;
}
int rdmasim_compute(uint64_t ns) {
  Process* p = Process::current();
  return p ? p->compute(ns) : EPERM;
}

// Virtual time, read (not changed) by the fiber; 0 outside a run.
uint64_t rdmasim_time_ns(void) {
  Process* p = Process::current();
  return p ? static_cast<uint64_t>(p->now() / rdmasim::kNanosecond) : 0;
}

}  // extern "C"
