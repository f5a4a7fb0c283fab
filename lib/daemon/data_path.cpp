// The data path: doorbell scan and ring drain.
#include "lib/daemon/data_path.h"

#include <atomic>
#include <cstring>

#include "lib/daemon/wire.h"

namespace rdmasim::daemon {

namespace {
// New slots of a ring whose producer the client writes: `prod - cons`, or none (and the
// consumer moved to `prod`) when that is more than the ring holds.
template <typename Slot>
uint32_t available(const ipc::RingView<Slot>& ring, uint32_t* cons, uint64_t* rejected) {
  const uint32_t prod = ring.header()->producer.load(std::memory_order_acquire);
  const uint32_t avail = prod - *cons;
  if (avail <= ring.size()) return avail;
  *rejected += avail;  // a corrupt producer index: skip, never read past
  *cons = prod;
  return 0;
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
  for (uint32_t avail = available(qp.sq, &qp.sq_cons, &stats_.wqes_rejected); avail > 0;
       --avail, ++qp.sq_cons) {
    ipc::SqWqe w;
    std::memcpy(&w, &qp.sq.slot(qp.sq_cons), sizeof w);
    nic::SendWr wr;
    int rc = to_send_wr(w, qp.max_send_sge, &wr);
    if (rc == 0 && (w.send_flags & nic::kSendInline) && w.inline_len > qp.max_inline) rc = EINVAL;
    if (rc == 0) rc = hca.post_send(qp.qpn, wr);
    if (rc == 0) {
      stats_.wqes_posted++;
      continue;
    }
    nic::Completion e;
    e.wr_id = w.wr_id;
    e.status = nic::WcStatus::LocQpOpErr;
    e.qp_num = qp.qpn;
    e.is_send = true;
    e.wqe_index = w.wqe_index;
    reject(c, qp.send_cq, e);
  }
  qp.sq.header()->consumer.store(qp.sq_cons, std::memory_order_release);
}

void DataPath::drain_rq(Client& c, Qp& qp) {
  nic::Hca& hca = *hcas_[qp.dev];
  for (uint32_t avail = available(qp.rq, &qp.rq_cons, &stats_.wqes_rejected); avail > 0;
       --avail, ++qp.rq_cons) {
    ipc::RqWqe w;
    std::memcpy(&w, &qp.rq.slot(qp.rq_cons), sizeof w);
    nic::RecvWr wr;
    int rc = to_recv_wr(w, qp.max_recv_sge, &wr);
    if (rc == 0) rc = hca.post_recv(qp.qpn, wr);
    if (rc == 0) {
      stats_.wqes_posted++;
      continue;
    }
    nic::Completion e;
    e.wr_id = w.wr_id;
    e.status = nic::WcStatus::LocQpOpErr;
    e.opcode = nic::WcOpcode::Recv;
    e.qp_num = qp.qpn;
    e.wqe_index = w.wqe_index;
    reject(c, qp.recv_cq, e);
  }
  qp.rq.header()->consumer.store(qp.rq_cons, std::memory_order_release);
}

void DataPath::drain_srq(Srq& srq) {
  nic::Hca& hca = *hcas_[srq.dev];
  for (uint32_t avail = available(srq.ring, &srq.cons, &stats_.wqes_rejected); avail > 0;
       --avail, ++srq.cons) {
    ipc::RqWqe w;
    std::memcpy(&w, &srq.ring.slot(srq.cons), sizeof w);
    nic::RecvWr wr;
    int rc = to_recv_wr(w, srq.max_sge, &wr);
    if (rc == 0) rc = hca.post_srq_recv(srq.srqn, wr);
    if (rc == 0)
      stats_.wqes_posted++;
    else
      stats_.wqes_rejected++;  // an SRQ has no CQ of its own to report to
  }
  srq.ring.header()->consumer.store(srq.cons, std::memory_order_release);
}

}  // namespace rdmasim::daemon
