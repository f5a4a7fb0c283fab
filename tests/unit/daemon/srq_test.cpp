// A receive posted on an SRQ ring takes a SEND, and its CQE names the SRQ by the client's handle.
#include <doctest/doctest.h>

#include <chrono>
#include <cstring>

#include "tests/unit/daemon/test_daemon.h"

using namespace rdmasim;
using namespace rdmasim::daemon::test;

TEST_CASE("daemon srq: SEND into a QP with an SRQ completes with srq_handle set") {
  TestDaemon d;
  RawClient rx(d.path()), tx(d.path());
  REQUIRE(rx.hello("server") == 0);
  REQUIRE(tx.hello("client") == 0);
  static char rbuf[256], sbuf[256];
  auto mk = [](RawClient& c, char* buf, uint32_t* pd, uint32_t* lkey, uint32_t* cq,
               ipc::RingView<ipc::Cqe>* ring, uint8_t* gid) {
    *pd = c.alloc_pd();
    ipc::RegMrReq mr{*pd, IBV_ACCESS_LOCAL_WRITE, reinterpret_cast<uint64_t>(buf), 256,
                     reinterpret_cast<uint64_t>(buf)};
    auto m = c.call(ipc::Op::RegMr, mr);
    REQUIRE(m->hdr.status == 0);
    *lkey = m->as<ipc::RegMrResp>().lkey;
    auto q = c.call(ipc::Op::CreateCq, ipc::CreateCqReq{0, 16, 0, 0});
    REQUIRE(q->hdr.status == 0);
    auto cr = q->as<ipc::CreateCqResp>();
    *cq = cr.handle;
    *ring = ipc::RingView<ipc::Cqe>(mmap(nullptr, cr.control_offset + sizeof(ipc::CqControl),
                                         PROT_READ | PROT_WRITE, MAP_SHARED, q->fds[0], 0),
                                    cr.ring_size);
    auto p = c.call(ipc::Op::QueryPort, ipc::QueryPortReq{0, 1});
    std::memcpy(gid, p->as<ipc::QueryPortResp>().gids[0], 16);
  };
  uint32_t rpd, rlkey, rcq, tpd, tlkey, tcq;
  ipc::RingView<ipc::Cqe> rring, tring;
  uint8_t rgid[16], tgid[16];
  mk(rx, rbuf, &rpd, &rlkey, &rcq, &rring, rgid);
  mk(tx, sbuf, &tpd, &tlkey, &tcq, &tring, tgid);

  auto s = rx.call(ipc::Op::CreateSrq, ipc::CreateSrqReq{rpd, 0, 8, 1, 0});
  REQUIRE(s->hdr.status == 0);
  auto sr = s->as<ipc::CreateSrqResp>();
  ipc::RingView<ipc::RqWqe> srq(mmap(nullptr, ipc::RingView<ipc::RqWqe>::bytes_for(sr.ring_size),
                                     PROT_READ | PROT_WRITE, MAP_SHARED, s->fds[0], 0),
                                sr.ring_size);

  auto make_qp = [](RawClient& c, uint32_t pd, uint32_t cq, uint32_t srq_handle, uint32_t* qpn,
                    ipc::RingView<ipc::SqWqe>* sq) {
    ipc::CreateQpReq q{};
    q.pd = pd;
    q.qp_type = IBV_QPT_RC;
    q.send_cq = cq;
    q.recv_cq = cq;
    q.srq = srq_handle;
    q.cap = {8, srq_handle ? 0u : 8u, 1, 1, 0};
    auto r = c.call(ipc::Op::CreateQp, q);
    REQUIRE(r->hdr.status == 0);
    auto qr = r->as<ipc::CreateQpResp>();
    CHECK((srq_handle == 0 || qr.rq_size == 0));  // no RQ ring when the QP uses an SRQ
    *qpn = qr.qp_num;
    *sq = ipc::RingView<ipc::SqWqe>(mmap(nullptr, qr.rq_offset + 4096, PROT_READ | PROT_WRITE,
                                         MAP_SHARED, r->fds[0], 0),
                                    qr.sq_size);
    return qr.handle;
  };
  uint32_t rqpn, tqpn;
  ipc::RingView<ipc::SqWqe> rsq, tsq;
  const uint32_t rqp = make_qp(rx, rpd, rcq, sr.handle, &rqpn, &rsq);
  const uint32_t tqp = make_qp(tx, tpd, tcq, 0, &tqpn, &tsq);

  auto connect = [](RawClient& c, uint32_t qp, uint32_t dest, const uint8_t* dgid) {
    RcParams p;
    p.access = 0;
    p.path_mtu = IBV_MTU_1024;
    p.min_rnr_timer = 1;
    REQUIRE(connect_rc(c, qp, dest, dgid, p) == 0);
  };
  connect(rx, rqp, tqpn, tgid);
  connect(tx, tqp, rqpn, rgid);

  ipc::RqWqe& r = srq.slot(0);
  r = {};
  r.wr_id = 55;
  r.num_sge = 1;
  r.sge[0] = {reinterpret_cast<uint64_t>(rbuf), sizeof rbuf, rlkey};
  srq.header()->producer.store(1, std::memory_order_release);
  rx.ring();

  std::strcpy(sbuf, "to the shared receive queue");
  ipc::SqWqe& w = tsq.slot(0);
  std::memset(&w, 0, sizeof w);
  w.wr_id = 66;
  w.opcode = IBV_WR_SEND;
  w.send_flags = IBV_SEND_SIGNALED;
  w.num_sge = 1;
  w.sge[0] = {reinterpret_cast<uint64_t>(sbuf), 28, tlkey};
  tsq.header()->producer.store(1, std::memory_order_release);
  tx.ring();

  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  ipc::Cqe& slot = rring.slot(0);
  while (std::atomic_ref<uint32_t>(slot.seq).load(std::memory_order_acquire) != 1 &&
         std::chrono::steady_clock::now() < deadline) {
  }
  REQUIRE(slot.seq == 1);
  CHECK(slot.wr_id == 55);
  CHECK(slot.status == IBV_WC_SUCCESS);
  CHECK(slot.opcode == IBV_WC_RECV);
  CHECK(slot.byte_len == 28);
  CHECK(slot.srq_handle == sr.handle);
  CHECK(std::strcmp(rbuf, "to the shared receive queue") == 0);
  // An SRQ in use by a QP cannot be destroyed.
  CHECK(rx.call(ipc::Op::DestroySrq, ipc::HandleReq{sr.handle})->hdr.status == EBUSY);
}
