// Loads the real libibverbs and resolves the forwarding table once.
#include "lib/backend/hardware.h"

#include <dlfcn.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>

#ifndef RDMASIM_REAL_LIBIBVERBS
#define RDMASIM_REAL_LIBIBVERBS "/usr/lib/x86_64-linux-gnu/libibverbs.so.1"
#endif

namespace rdmasim::backend {

bool hardware_selected() {
  static const bool selected = [] {
    const char* b = getenv("RDMASIM_BACKEND");
    return b && strcmp(b, "hardware") == 0;
  }();
  return selected;
}

const HardwareTable& hardware_table() {
  static HardwareTable table;
  static std::once_flag once;
  std::call_once(once, [] {
    void* h = dlmopen(LM_ID_NEWLM, RDMASIM_REAL_LIBIBVERBS, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
      fprintf(stderr, "rdmasim: hardware backend: %s\n", dlerror());
      return;
    }
#define RDMASIM_HARDWARE_RESOLVE(name) \
  table.name = reinterpret_cast<decltype(table.name)>(dlsym(h, #name));
    RDMASIM_HARDWARE_FUNCTIONS(RDMASIM_HARDWARE_RESOLVE)
#undef RDMASIM_HARDWARE_RESOLVE
  });
  return table;
}

namespace {
// In hardware mode the table is resolved when the library loads, not inside a program's
// first verbs call.
__attribute__((constructor)) void resolve_at_load() {
  if (hardware_selected()) hardware_table();
}
}  // namespace

}  // namespace rdmasim::backend
