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
  Context ctx;
  std::vector<char> sq_mem = std::vector<char>(ipc::RingView<ipc::SqWqe>::bytes_for(4));
  std::vector<char> cq_mem = std::vector<char>(ipc::RingView<ipc::Cqe>::bytes_for(8));
  ipc::CqControl control;
  Qp qp;
  Cq cq;
  char buf[128] = {};

  Fixture() {
    ctx.doorbell = {&page, &global, -1};  // the daemon never sleeps here: no wake write
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

// ---- memory windows: what the BIND_MW / LOCAL_INV / SEND_WITH_INV WQEs carry ----

namespace {

ibv_send_wr bind_wr(ibv_mw* mw, ibv_mr* mr, uint64_t addr, uint64_t len, unsigned access) {
  ibv_send_wr wr{};
  wr.wr_id = 21;
  wr.opcode = IBV_WR_BIND_MW;
  wr.send_flags = IBV_SEND_SIGNALED;
  wr.bind_mw.mw = mw;
  wr.bind_mw.rkey = ibv_inc_rkey(mw->rkey);
  wr.bind_mw.bind_info = {mr, addr, len, access};
  return wr;
}

}  // namespace

TEST_CASE("mw: a BIND_MW WQE carries the window's key, its new key, the range, MR and rights") {
  Fixture f;
  ibv_mr mr{};
  mr.lkey = 0x4455;
  ibv_mw mw{};
  mw.rkey = 0x1200;
  mw.type = IBV_MW_TYPE_2;
  ibv_send_wr wr = bind_wr(&mw, &mr, 0x10000, 4096, IBV_ACCESS_REMOTE_READ);
  ibv_send_wr* bad = nullptr;
  REQUIRE(post_send(f.qp.ibv(), &wr, &bad) == 0);
  const ipc::SqWqe& w = f.qp.sq.slot(0);
  CHECK(w.opcode == IBV_WR_BIND_MW);
  CHECK(w.imm_data == 0x1200);   // the window, as mlx5 puts it in ctrl.imm
  CHECK(w.rkey == 0x1201);       // ibv_inc_rkey(0x1200)
  CHECK(w.remote_addr == 0x10000);
  CHECK(w.compare_add == 4096);
  CHECK(w.bind_lkey == 0x4455);
  CHECK(w.mw_access == IBV_ACCESS_REMOTE_READ);
  CHECK(w.num_sge == 0);
  // Type 2 via post_send: the library leaves mw->rkey alone (the WR names the new key).
  CHECK(mw.rkey == 0x1200);
}

TEST_CASE("mw: post-time errors of BIND_MW as mlx5 reports them, with *bad_wr") {
  Fixture f;
  ibv_mr mr{};
  ibv_mw mw{};
  ibv_send_wr* bad = nullptr;
  // mlx5 set_bind_wr: "KLM support only 2GB": a longer window is EOPNOTSUPP.
  ibv_send_wr big = bind_wr(&mw, &mr, 0, (uint64_t{1} << 31) + 1, IBV_ACCESS_REMOTE_READ);
  CHECK(post_send(f.qp.ibv(), &big, &bad) == EOPNOTSUPP);
  CHECK(bad == &big);
  // mlx5_bind_mw: IBV_ACCESS_ZERO_BASED is EINVAL.
  ibv_send_wr zb = bind_wr(&mw, &mr, 0, 64, IBV_ACCESS_REMOTE_READ | IBV_ACCESS_ZERO_BASED);
  CHECK(post_send(f.qp.ibv(), &zb, &bad) == EINVAL);
  ibv_send_wr nomw = bind_wr(&mw, &mr, 0, 64, IBV_ACCESS_REMOTE_READ);
  nomw.bind_mw.mw = nullptr;
  CHECK(post_send(f.qp.ibv(), &nomw, &bad) == EINVAL);
  // man ibv_post_send opcode table: BIND_MW and LOCAL_INV are not UD opcodes.
  f.qp.qpx.qp_base.qp_type = IBV_QPT_UD;
  ibv_send_wr ok = bind_wr(&mw, &mr, 0, 64, IBV_ACCESS_REMOTE_READ);
  CHECK(post_send(f.qp.ibv(), &ok, &bad) == EINVAL);
  ibv_send_wr inv{};
  inv.opcode = IBV_WR_LOCAL_INV;
  CHECK(post_send(f.qp.ibv(), &inv, &bad) == EINVAL);
  CHECK(f.producer() == 0);  // nothing was published
}

TEST_CASE("mw: LOCAL_INV and SEND_WITH_INV carry the rkey; SEND_WITH_INV is RC only") {
  Fixture f;
  ibv_send_wr* bad = nullptr;
  ibv_send_wr inv{};
  inv.opcode = IBV_WR_LOCAL_INV;
  inv.invalidate_rkey = 0xabcd01;
  REQUIRE(post_send(f.qp.ibv(), &inv, &bad) == 0);
  CHECK(f.qp.sq.slot(0).imm_data == 0xabcd01);
  ibv_sge sge{reinterpret_cast<uint64_t>(f.buf), 8, 1};
  ibv_send_wr s{};
  s.opcode = IBV_WR_SEND_WITH_INV;
  s.sg_list = &sge;
  s.num_sge = 1;
  s.invalidate_rkey = 0xabcd02;
  REQUIRE(post_send(f.qp.ibv(), &s, &bad) == 0);
  CHECK(f.qp.sq.slot(1).imm_data == 0xabcd02);
  CHECK(f.qp.sq.slot(1).num_sge == 1);
  // UC has no SEND with Invalidate opcode in this model (IBTA lists it for RC/XRC).
  f.qp.qpx.qp_base.qp_type = IBV_QPT_UC;
  CHECK(post_send(f.qp.ibv(), &s, &bad) == EINVAL);
  // iWARP (RDMAP Send with Invalidate is not modelled): EINVAL on RC too.
  f.qp.qpx.qp_base.qp_type = IBV_QPT_RC;
  Device dev;
  dev.info.transport_type = IBV_TRANSPORT_IWARP;
  f.ctx.device = &dev;
  CHECK(post_send(f.qp.ibv(), &s, &bad) == EINVAL);
  f.ctx.device = nullptr;
}

TEST_CASE("mw: ibv_bind_mw posts with ibv_inc_rkey and updates mw->rkey only when posted") {
  Fixture f;
  ibv_mr mr{};
  mr.lkey = 3;
  ibv_mw mw{};
  mw.rkey = 0x77ff;  // variant 0xff wraps to 0x00 (ibv_inc_rkey keeps the index)
  mw.type = IBV_MW_TYPE_1;
  ibv_mw_bind b{};
  b.wr_id = 5;
  b.send_flags = IBV_SEND_SIGNALED;
  b.bind_info = {&mr, 0x2000, 128, IBV_ACCESS_REMOTE_WRITE};
  REQUIRE(bind_mw(f.qp.ibv(), &mw, &b) == 0);
  CHECK(mw.rkey == 0x7700);
  CHECK(f.qp.sq.slot(0).imm_data == 0x77ff);
  CHECK(f.qp.sq.slot(0).rkey == 0x7700);
  CHECK(f.qp.sq.slot(0).wr_id == 5);
  // man ibv_bind_mw: on failure the key is not changed (here: a QP in RESET, EINVAL).
  f.qp.state = IBV_QPS_RESET;
  CHECK(bind_mw(f.qp.ibv(), &mw, &b) == EINVAL);
  CHECK(mw.rkey == 0x7700);
}

TEST_CASE("mw: ibv_wr_bind_mw / ibv_wr_local_inv / ibv_wr_send_inv in a batch") {
  Fixture f;
  ibv_mr mr{};
  mr.lkey = 9;
  ibv_mw mw{};
  mw.rkey = 0x500;
  ibv_mw_bind_info info{&mr, 0x3000, 256, IBV_ACCESS_REMOTE_READ};
  ibv_qp_ex* q = &f.qp.qpx;
  ibv_wr_start(q);
  q->wr_id = 1;
  ibv_wr_bind_mw(q, &mw, 0x501, &info);
  q->wr_id = 2;
  ibv_wr_local_inv(q, 0x501);
  REQUIRE(ibv_wr_complete(q) == 0);
  CHECK(f.producer() == 2);
  CHECK(f.qp.sq.slot(0).opcode == IBV_WR_BIND_MW);
  CHECK(f.qp.sq.slot(0).rkey == 0x501);
  CHECK(f.qp.sq.slot(0).bind_lkey == 9);
  CHECK(f.qp.sq.slot(1).opcode == IBV_WR_LOCAL_INV);
  CHECK(f.qp.sq.slot(1).imm_data == 0x501);
  // A window above 2 GiB fails the batch with EOPNOTSUPP (mlx5) and publishes nothing.
  ibv_mw_bind_info big{&mr, 0, (uint64_t{1} << 31) + 1, IBV_ACCESS_REMOTE_READ};
  ibv_wr_start(q);
  ibv_wr_bind_mw(q, &mw, 0x502, &big);
  CHECK(ibv_wr_complete(q) == EOPNOTSUPP);
  CHECK(f.producer() == 2);
  // ibv_wr_send_inv on UC: EINVAL at wr_complete.
  f.qp.qpx.qp_base.qp_type = IBV_QPT_UC;
  ibv_wr_start(q);
  ibv_wr_send_inv(q, 0x501);
  CHECK(ibv_wr_complete(q) == EINVAL);
  CHECK(f.producer() == 2);
}

TEST_CASE("mw: a receive completion with IBV_WC_WITH_INV reports invalidated_rkey") {
  Fixture f;
  ipc::Cqe& e = f.cq.ring.slot(0);
  e = {};
  e.wr_id = 4;
  e.opcode = IBV_WC_RECV;
  e.wc_flags = IBV_WC_WITH_INV;
  e.imm_data = 0x123401;  // the daemon puts the invalidated rkey (host order) here
  e.qp_num = 0x11;
  e.seq = 1;
  ibv_wc wc;
  REQUIRE(poll_cq(f.cq.ibv(), 1, &wc) == 1);
  CHECK((wc.wc_flags & IBV_WC_WITH_INV) != 0);
  CHECK(wc.invalidated_rkey == 0x123401);
}
