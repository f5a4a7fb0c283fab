// The data path: doorbell scan and ring drain.
#include "lib/daemon/data_path.h"

#include <atomic>
#include <cstring>

#include "lib/daemon/wire.h"

namespace rdmasim::daemon {

namespace {
// New slots of a ring whose producer the client writes: `prod - cons`, or none (and the
// consumer moved to `prod`) when that is more than the ring holds.
template <typename Wqe>
uint32_t available(const ipc::RingView<Wqe>& ring, uint32_t* cons, uint64_t* rejected) {
  const uint32_t prod = ring.header()->producer.load(std::memory_order_acquire);
  const uint32_t avail = prod - *cons;
  if (avail <= ring.size()) return avail;
  *rejected += avail;  // a corrupt producer index: skip, never read past
  *cons = prod;
  return 0;
}

// Hands each new slot of `ring`, copied out of shared memory first (the client may rewrite
// it meanwhile), to `take`, then publishes the consumer index *cons.
template <typename Wqe, typename Take>
void drain_ring(ipc::RingView<Wqe>& ring, uint32_t* cons, uint64_t* rejected, Take take) {
  for (uint32_t avail = available(ring, cons, rejected); avail > 0; --avail, ++*cons) {
    Wqe w;
    std::memcpy(&w, &ring.slot(*cons), sizeof w);
    take(static_cast<const Wqe&>(w));
  }
  ring.header()->consumer.store(*cons, std::memory_order_release);
}
}  // namespace

bool DataPath::scan_doorbells() {
  bool any = false;
  std::vector<uint32_t> ids;
  for (auto& [id, c] : clients_) {
    if (!c->page_ok()) continue;
    const uint64_t db = c->page()->doorbell.load(std::memory_order_seq_cst);
    if (db != c->last_doorbell) {
      c->last_doorbell = db;
      any = true;
      ids.push_back(id);
    }
  }
  for (uint32_t id : ids)
    if (auto it = clients_.find(id); it != clients_.end()) drain_client(*it->second);
  return any;
}

void DataPath::drain_client(Client& c) {
  for (auto& [h, qp] : c.qps) {
    if (qp.sq) drain_sq(c, qp);
    if (qp.rq) drain_rq(c, qp);
  }
  for (auto& [h, srq] : c.srqs) drain_srq(srq);
}

void DataPath::reject(Client& c, uint32_t cq_handle, const nic::Completion& comp) {
  stats_.wqes_rejected++;
  router_.deliver(c.id, cq_handle, comp);
}

void DataPath::drain_sq(Client& c, Qp& qp) {
  nic::Hca& hca = *hcas_[qp.dev];
  drain_ring(qp.sq, &qp.sq_cons, &stats_.wqes_rejected, [&](const ipc::SqWqe& w) {
    nic::SendWr wr;
    int rc = to_send_wr(w, qp.max_send_sge, &wr);
    if (rc == 0 && (w.send_flags & nic::kSendInline) && w.inline_len > qp.max_inline) rc = EINVAL;
    if (rc == 0) rc = hca.post_send(qp.qpn, wr);
    if (rc == 0) {
      stats_.wqes_posted++;
      return;
    }
    nic::Completion e;
    e.wr_id = w.wr_id;
    e.status = nic::WcStatus::LocQpOpErr;
    e.qp_num = qp.qpn;
    e.is_send = true;
    e.wqe_index = w.wqe_index;
    reject(c, qp.send_cq, e);
  });
}

void DataPath::drain_rq(Client& c, Qp& qp) {
  nic::Hca& hca = *hcas_[qp.dev];
  drain_ring(qp.rq, &qp.rq_cons, &stats_.wqes_rejected, [&](const ipc::RqWqe& w) {
    nic::RecvWr wr;
    int rc = to_recv_wr(w, qp.max_recv_sge, &wr);
    if (rc == 0) rc = hca.post_recv(qp.qpn, wr);
    if (rc == 0) {
      stats_.wqes_posted++;
      return;
    }
    nic::Completion e;
    e.wr_id = w.wr_id;
    e.status = nic::WcStatus::LocQpOpErr;
    e.opcode = nic::WcOpcode::Recv;
    e.qp_num = qp.qpn;
    e.wqe_index = w.wqe_index;
    reject(c, qp.recv_cq, e);
  });
}

void DataPath::drain_srq(Srq& srq) {
  nic::Hca& hca = *hcas_[srq.dev];
  drain_ring(srq.ring, &srq.cons, &stats_.wqes_rejected, [&](const ipc::RqWqe& w) {
    nic::RecvWr wr;
    int rc = to_recv_wr(w, srq.max_sge, &wr);
    if (rc == 0) rc = hca.post_srq_recv(srq.srqn, wr);
    if (rc == 0)
      stats_.wqes_posted++;
    else
      stats_.wqes_rejected++;  // an SRQ has no CQ of its own to report to
  });
}

}  // namespace rdmasim::daemon
