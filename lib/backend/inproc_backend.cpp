// The in-process backend: finding the runtime, and HELLO over the simcall channel.
#include "lib/backend/inproc_backend.h"

#include <dlfcn.h>

#include <mutex>

#include "lib/backend/daemon_backend.h"

namespace rdmasim::backend {

InprocHost* inproc_current() {
  using Current = InprocHost* (*)();
  static Current current = nullptr;
  static std::once_flag once;
  std::call_once(once, [] {
    current = reinterpret_cast<Current>(dlsym(RTLD_DEFAULT, "rdmasim_inproc_current"));
  });
  return current ? current() : nullptr;
}

int inproc_devices(InprocHost& host, std::unique_ptr<DaemonClient>* client,
                   std::vector<std::unique_ptr<Backend>>* out) {
  auto c = std::make_unique<InprocClient>(host);
  if (int rc = c->say_hello(host.host_name())) return rc;
  uint32_t n = c->hello().num_devices;
  if (n > ipc::kMaxDevices) n = ipc::kMaxDevices;
  for (uint32_t i = 0; i < n; ++i) out->push_back(std::make_unique<DaemonBackend>(*c, i));
  *client = std::move(c);
  return 0;
}

}  // namespace rdmasim::backend
