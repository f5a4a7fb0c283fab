// The in-process backend: the daemon backend's operations (daemon_backend.h) with the socket
// replaced by a simcall into an engine running in this process. The drop-in libibverbs of an
// in-process run (lib/inproc) finds the host of the running fiber here and gets one backend
// per device of that host.
#pragma once

#include <memory>
#include <vector>

#include "lib/backend/backend.h"
#include "lib/backend/daemon_client.h"

namespace rdmasim::backend {

// One simulated process of an in-process run, as its verbs library sees it. Implemented by
// the runtime (lib/inproc/runtime.h); each call is made from the process's own fiber.
class InprocHost : public Waiter {
 public:
  virtual const char* host_name() const = 0;
  // One control request: the fiber hands it to the engine and waits for the answer (the
  // daemon's own handler answers it, at the current virtual time). 0 or a transport errno;
  // the handler's status is out->hdr.status, as DaemonClient::call(op, ..., Reply*).
  virtual int request(ipc::Op op, const void* req, size_t req_len, Reply* out) = 0;
  // The front ends' per-process state (libibverbs' device table, librdmacm's ids and
  // channels), each owned by its front end.
  virtual void*& verbs_slot() = 0;
  virtual void*& rdmacm_slot() = 0;
};

// The host of the fiber running now; nullptr outside an in-process run. The runtime exports
// `rdmasim_inproc_current` from its executable (a dynamic-list symbol); this looks it up once
// with dlsym(RTLD_DEFAULT), so a process without a runtime (a verbs program under the
// daemon) never selects this backend.
InprocHost* inproc_current();

// A DaemonClient whose round trips are InprocHost::request.
class InprocClient final : public DaemonClient {
 public:
  explicit InprocClient(InprocHost& host) : host_(host) {}
  int call(ipc::Op op, const void* req, size_t req_len, Reply* out) override {
    return host_.request(op, req, req_len, out);
  }
  Waiter* waiter() const override { return &host_; }

 private:
  InprocHost& host_;
};

// HELLO as the host, then one DaemonBackend per device it has. *client keeps the connection
// (the backends refer to it). 0 or an errno.
int inproc_devices(InprocHost& host, std::unique_ptr<DaemonClient>* client,
                   std::vector<std::unique_ptr<Backend>>* out);

}  // namespace rdmasim::backend
