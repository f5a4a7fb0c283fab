// The data path: the doorbells of the client pages, and the QP / SRQ rings behind them
// drained into Hca::post_*, each WQE validated on the way (shared memory is untrusted).
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "lib/daemon/client.h"
#include "lib/daemon/event_router.h"
#include "sim/nic/hca.h"

namespace rdmasim::daemon {

struct DataPathStats {
  uint64_t wqes_posted = 0;
  uint64_t wqes_rejected = 0;  // bad or refused WQEs, and slots skipped past a corrupt producer
};

class DataPath {
 public:
  // `hcas` is indexed by the fabric's NIC index, as Client::devs and the objects' `dev`.
  DataPath(Clients& clients, const std::vector<std::unique_ptr<nic::Hca>>& hcas, EventRouter& router)
      : clients_(clients), hcas_(hcas), router_(router) {}

  // Drains every client whose doorbell changed since the last scan. Returns whether any did.
  bool scan_doorbells();
  // Drains all of c's QP and SRQ rings. The daemon keeps its own consumer indices: a
  // producer index more than a ring ahead skips the ring's new slots (counted rejected). A
  // bad WQE or one the model refuses completes with IBV_WC_LOC_QP_OP_ERR on the QP's CQ;
  // an SRQ WQE, which has no CQ, is only counted.
  void drain_client(Client& c);

  const DataPathStats& stats() const { return stats_; }

 private:
  void drain_sq(Client& c, Qp& qp);
  void drain_rq(Client& c, Qp& qp);
  void drain_srq(Srq& srq);
  void reject(Client& c, uint32_t cq_handle, const nic::Completion& comp);

  Clients& clients_;
  const std::vector<std::unique_ptr<nic::Hca>>& hcas_;
  EventRouter& router_;
  DataPathStats stats_;
};

}  // namespace rdmasim::daemon
