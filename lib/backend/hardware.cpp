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

namespace {
void* real_library() {
  static void* handle = nullptr;
  static std::once_flag once;
  std::call_once(once, [] {
    handle = dlmopen(LM_ID_NEWLM, RDMASIM_REAL_LIBIBVERBS, RTLD_NOW | RTLD_LOCAL);
    if (!handle) fprintf(stderr, "rdmasim: hardware backend: %s\n", dlerror());
  });
  return handle;
}
}  // namespace

void* hardware_sym(const char* name) {
  void* h = real_library();
  return h ? dlsym(h, name) : nullptr;
}

}  // namespace rdmasim::backend
