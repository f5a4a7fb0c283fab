// The data path against rings in local memory: what ibv_post_send / ibv_poll_cq / wr_*
// publish, and the error statuses rdma-core callers rely on (ENOMEM with *bad_wr when the
// SQ is full, EINVAL for state, SGE count and inline length).
#include <doctest/doctest.h>

#include <cstring>
#include <vector>

#include "lib/verbs/objects.h"

using namespace rdmasim;
using namespace rdmasim::verbs;

namespace {

struct Fixture {
  ipc::ClientPage page{};
  ipc::GlobalPage global{};
  backend::DaemonClient client{&page, &global, -1};
  Context ctx;
  std::vector<char> sq_mem = std::vector<char>(ipc::RingView<ipc::SqWqe>::bytes_for(4));
  std::vector<char> cq_mem = std::vector<char>(ipc::RingView<ipc::Cqe>::bytes_for(8));
  ipc::CqControl control;
  Qp qp;
  Cq cq;
  char buf[128] = {};

  Fixture() {
    ctx.client = &client;
    qp.ctx = &ctx;
    qp.sq = ipc::RingView<ipc::SqWqe>(sq_mem.data(), 4);
    qp.sq.header()->size = 4;
    qp.cap = {4, 4, 2, 2, 64};  // max_send_wr, max_recv_wr, max_send_sge, max_recv_sge, inline
    qp.sq_acct.set_depth(4);
    qp.qpx.qp_base.qp_type = IBV_QPT_RC;
    qp.qpx.qp_base.qp_num = 0x11;
    qp.state = IBV_QPS_RTS;
    install_qp_ex_ops(&qp.qpx);
    ctx.qps_by_num[0x11] = &qp;
    cq.ctx = &ctx;
    cq.ring = ipc::RingView<ipc::Cqe>(cq_mem.data(), 8);
    cq.control = &control;
    install_cq_ex_ops(&cq.cq);
  }
  uint32_t producer() { return qp.sq.header()->producer.load(); }
  // The daemon's side: it consumed the SQ and completes `wqe_index` into CQ slot `slot`.
  void complete(uint32_t slot, uint32_t wqe_index, uint64_t wr_id) {
    qp.sq.header()->consumer.store(producer());
    ipc::Cqe& e = cq.ring.slot(slot);
    e = {};
    e.wr_id = wr_id;
    e.opcode = IBV_WC_RDMA_WRITE;
    e.qp_num = 0x11;
    e.is_send = 1;
    e.wqe_index = wqe_index;
    e.seq = slot + 1;
  }
};

ibv_send_wr write_wr(ibv_sge* sge, uint64_t id) {
  ibv_send_wr wr{};
  wr.wr_id = id;
  wr.opcode = IBV_WR_RDMA_WRITE;
  wr.sg_list = sge;
  wr.num_sge = 1;
  wr.send_flags = IBV_SEND_SIGNALED;
  wr.wr.rdma.remote_addr = 0x1000;
  wr.wr.rdma.rkey = 7;
  return wr;
}

}  // namespace

TEST_CASE("post_send: a 5-WR chain on a depth-4 SQ posts 4, then ENOMEM with bad_wr at the 5th") {
  Fixture f;
  ibv_sge sge{reinterpret_cast<uint64_t>(f.buf), 8, 1};
  ibv_send_wr wrs[5];
  for (int i = 0; i < 5; ++i) {
    wrs[i] = write_wr(&sge, i);
    wrs[i].next = i < 4 ? &wrs[i + 1] : nullptr;
  }
  ibv_send_wr* bad = nullptr;
  CHECK(post_send(f.qp.ibv(), wrs, &bad) == ENOMEM);
  CHECK(bad == &wrs[4]);
  CHECK(f.producer() == 4);
  CHECK(f.page.doorbell.load() == 1);  // one doorbell for the whole chain
  CHECK(f.qp.sq.slot(2).wr_id == 2);
  CHECK(f.qp.sq.slot(2).wqe_index == 2);
  CHECK(f.qp.sq.slot(2).rkey == 7);
}

TEST_CASE("post_send: polling the CQE of wqe 3 frees all four slots") {
  Fixture f;
  ibv_sge sge{reinterpret_cast<uint64_t>(f.buf), 8, 1};
  ibv_send_wr wr = write_wr(&sge, 9);
  ibv_send_wr* bad = nullptr;
  for (int i = 0; i < 4; ++i) REQUIRE(post_send(f.qp.ibv(), &wr, &bad) == 0);
  CHECK(post_send(f.qp.ibv(), &wr, &bad) == ENOMEM);
  f.complete(0, 3, 9);
  ibv_wc wc[4];
  CHECK(poll_cq(f.cq.ibv(), 4, wc) == 1);
  CHECK(wc[0].wr_id == 9);
  CHECK(wc[0].status == IBV_WC_SUCCESS);
  CHECK(wc[0].qp_num == 0x11);
  CHECK(f.qp.sq_acct.outstanding() == 0);
  CHECK(post_send(f.qp.ibv(), &wr, &bad) == 0);
}

TEST_CASE("poll_cq: a slot whose seq is not index + 1 is not yet a completion") {
  Fixture f;
  f.cq.ring.slot(0).seq = 9;  // the slot of index 8, one lap later
  ibv_wc wc;
  CHECK(poll_cq(f.cq.ibv(), 1, &wc) == 0);
}

TEST_CASE("post_send: EINVAL before RTS, for too many SGEs, and for inline beyond max_inline_data") {
  Fixture f;
  ibv_sge sge[3] = {{reinterpret_cast<uint64_t>(f.buf), 40, 1},
                    {reinterpret_cast<uint64_t>(f.buf), 40, 1},
                    {reinterpret_cast<uint64_t>(f.buf), 40, 1}};
  ibv_send_wr wr = write_wr(sge, 1);
  ibv_send_wr* bad = nullptr;
  f.qp.state = IBV_QPS_RTR;
  CHECK(post_send(f.qp.ibv(), &wr, &bad) == EINVAL);
  CHECK(bad == &wr);
  f.qp.state = IBV_QPS_RTS;
  wr.num_sge = 3;  // max_send_sge is 2
  CHECK(post_send(f.qp.ibv(), &wr, &bad) == EINVAL);
  wr.num_sge = 2;  // 80 bytes inline, max_inline_data is 64
  wr.send_flags |= IBV_SEND_INLINE;
  CHECK(post_send(f.qp.ibv(), &wr, &bad) == EINVAL);
  CHECK(f.producer() == 0);
  wr.num_sge = 1;  // 40 bytes inline fit, and are copied into the WQE
  memset(f.buf, 0xab, 40);
  CHECK(post_send(f.qp.ibv(), &wr, &bad) == 0);
  CHECK(f.qp.sq.slot(0).inline_len == 40);
  CHECK(f.qp.sq.slot(0).inline_data[39] == 0xab);
}

TEST_CASE("wr_*: a batch is published only at wr_complete; wr_abort discards it") {
  Fixture f;
  ibv_qp_ex* x = &f.qp.qpx;
  x->wr_start(x);
  x->wr_id = 5;
  x->wr_flags = IBV_SEND_SIGNALED;
  x->wr_rdma_write(x, 3, 0x2000);
  x->wr_set_sge(x, 1, reinterpret_cast<uint64_t>(f.buf), 16);
  x->wr_atomic_fetch_add(x, 4, 0x3000, 1);
  x->wr_set_sge(x, 1, reinterpret_cast<uint64_t>(f.buf), 8);
  CHECK(f.producer() == 0);
  CHECK(x->wr_complete(x) == 0);
  CHECK(f.producer() == 2);
  CHECK(f.qp.sq.slot(0).opcode == IBV_WR_RDMA_WRITE);
  CHECK(f.qp.sq.slot(0).remote_addr == 0x2000);
  CHECK(f.qp.sq.slot(0).sge[0].length == 16);
  CHECK(f.qp.sq.slot(1).opcode == IBV_WR_ATOMIC_FETCH_AND_ADD);
  CHECK(f.qp.sq.slot(1).compare_add == 1);
  x->wr_start(x);
  x->wr_send(x);
  x->wr_abort(x);
  CHECK(f.producer() == 2);
  x->wr_start(x);  // 2 slots left: the third WR of the batch fails the whole batch
  x->wr_send(x);
  x->wr_send(x);
  x->wr_send(x);
  CHECK(x->wr_complete(x) == ENOMEM);
  CHECK(f.producer() == 2);
}

TEST_CASE("cq_ex: start_poll/next_poll walk the ring; ENOENT when empty") {
  Fixture f;
  ibv_cq_ex* c = &f.cq.cq;
  ibv_poll_cq_attr attr{};
  CHECK(c->start_poll(c, &attr) == ENOENT);
  ibv_sge sge{reinterpret_cast<uint64_t>(f.buf), 8, 1};
  ibv_send_wr wr = write_wr(&sge, 1);
  ibv_send_wr* bad = nullptr;
  REQUIRE(post_send(f.qp.ibv(), &wr, &bad) == 0);
  REQUIRE(post_send(f.qp.ibv(), &wr, &bad) == 0);
  f.complete(0, 0, 21);
  f.complete(1, 1, 22);
  REQUIRE(c->start_poll(c, &attr) == 0);
  CHECK(c->wr_id == 21);
  CHECK(c->read_opcode(c) == IBV_WC_RDMA_WRITE);
  CHECK(c->next_poll(c) == 0);
  CHECK(c->wr_id == 22);
  CHECK(c->next_poll(c) == ENOENT);
  c->end_poll(c);
  CHECK(f.qp.sq_acct.outstanding() == 0);
}
