// Memory windows through the daemon: the AllocMw/DeallocMw ops, the device attributes, and
// BIND_MW / LOCAL_INV WQEs read from the SQ ring (proto.h field by field).
#include <doctest/doctest.h>

#include <sys/mman.h>

#include <chrono>
#include <cstring>

#include "tests/unit/daemon/test_daemon.h"

using namespace rdmasim;
using namespace rdmasim::daemon::test;

namespace {

std::unique_ptr<Reply> alloc_mw(RawClient& c, uint32_t pd, uint32_t type) {
  return c.call(ipc::Op::AllocMw, ipc::AllocMwReq{pd, type});
}

// A BIND_MW WQE: window `mw_rkey` takes `key` over [addr, addr + len) of MR `lkey`, read only.
void fill_bind(ipc::SqWqe& w, uint32_t mw_rkey, uint32_t key, const void* addr, uint64_t len,
               uint32_t lkey) {
  w.opcode = IBV_WR_BIND_MW;
  w.imm_data = mw_rkey;
  w.rkey = key;
  w.remote_addr = reinterpret_cast<uint64_t>(addr);
  w.compare_add = len;
  w.bind_lkey = lkey;
  w.mw_access = IBV_ACCESS_REMOTE_READ;
}

// One client with an MR (MW_BIND) over `buf`, a CQ and an RC QP in RTS (connected to
// itself: binds and invalidates send no packets).
struct Owner {
  RawClient c;
  uint32_t pd = 0, cq = 0, qp = 0, qpn = 0, mr = 0, lkey = 0;
  ipc::RingView<ipc::Cqe> cq_ring;
  ipc::RingView<ipc::SqWqe> sq;
  uint32_t posted = 0, polled = 0;
  alignas(64) char buf[8192] = {};

  explicit Owner(const std::string& path) : c(path) {
    REQUIRE(c.hello("server") == 0);
    pd = c.alloc_pd();
    REQUIRE(pd != 0);
    ipc::RegMrReq r{pd, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_MW_BIND,
                    reinterpret_cast<uint64_t>(buf), sizeof buf, reinterpret_cast<uint64_t>(buf)};
    auto m = c.call(ipc::Op::RegMr, r);
    REQUIRE(m->hdr.status == 0);
    mr = m->as<ipc::RegMrResp>().handle;
    lkey = m->as<ipc::RegMrResp>().lkey;
    auto q = c.call(ipc::Op::CreateCq, ipc::CreateCqReq{0, 16, 0, 0});
    REQUIRE(q->hdr.status == 0);
    auto cr = q->as<ipc::CreateCqResp>();
    cq = cr.handle;
    void* cq_mem = mmap(nullptr, cr.control_offset + sizeof(ipc::CqControl), PROT_READ | PROT_WRITE,
                        MAP_SHARED, q->fds.at(0), 0);
    REQUIRE(cq_mem != MAP_FAILED);
    cq_ring = ipc::RingView<ipc::Cqe>(cq_mem, cr.ring_size);
    ipc::CreateQpReq qr{};
    qr.pd = pd;
    qr.qp_type = IBV_QPT_RC;
    qr.send_cq = qr.recv_cq = cq;
    qr.cap = {8, 8, 1, 1, 0};
    auto p = c.call(ipc::Op::CreateQp, qr);
    REQUIRE(p->hdr.status == 0);
    auto pr = p->as<ipc::CreateQpResp>();
    qp = pr.handle;
    qpn = pr.qp_num;
    void* qp_mem = mmap(nullptr, pr.rq_offset + ipc::RingView<ipc::RqWqe>::bytes_for(pr.rq_size),
                        PROT_READ | PROT_WRITE, MAP_SHARED, p->fds.at(0), 0);
    REQUIRE(qp_mem != MAP_FAILED);
    sq = ipc::RingView<ipc::SqWqe>(qp_mem, pr.sq_size);
    to_rts();
  }

  // Connected to itself (its own QPN, the zero GID) with only the path MTU and ACK timeout set.
  void to_rts() {
    RcParams p;
    p.access = 0;
    p.min_rnr_timer = p.hop_limit = p.retry_cnt = p.rnr_retry = 0;
    p.max_rd_atomic = p.max_dest_rd_atomic = 0;
    REQUIRE(connect_rc(c, qp, qpn, nullptr, p) == 0);
  }

  // Posts one WQE filled by `fill` and returns its CQE (fails the test after 5 s).
  template <typename F>
  ipc::Cqe post(F fill) {
    ipc::SqWqe& w = sq.slot(posted);
    std::memset(&w, 0, sizeof w);
    w.wr_id = 100 + posted;
    w.wqe_index = posted;
    w.send_flags = IBV_SEND_SIGNALED;
    fill(w);
    sq.header()->producer.store(++posted, std::memory_order_release);
    c.ring();
    ipc::Cqe out{};
    const uint32_t n = ++polled;
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    while (std::chrono::steady_clock::now() < deadline) {
      ipc::Cqe& s = cq_ring.slot(n - 1);
      if (std::atomic_ref<uint32_t>(s.seq).load(std::memory_order_acquire) == n) {
        out = s;
        cq_ring.header()->consumer.store(n, std::memory_order_release);
        return out;
      }
    }
    FAIL("no CQE within 5 s");
    return out;
  }
};

}  // namespace

TEST_CASE("daemon mw: the device reports memory windows as mlx5 does") {
  TestDaemon d;
  RawClient c(d.path());
  REQUIRE(c.hello("server") == 0);
  auto dev = c.call(ipc::Op::QueryDevice, ipc::QueryDeviceReq{0});
  REQUIRE(dev->hdr.status == 0);
  const ibv_device_attr a = backend::from_wire(dev->as<ipc::QueryDeviceResp>());
  // mlx5_ib_query_device: MEM_WINDOW | MEM_WINDOW_TYPE_2B, max_mw = 1 << log_max_mkey,
  // the same limit as max_mr.
  CHECK((a.device_cap_flags & IBV_DEVICE_MEM_WINDOW) != 0);
  CHECK((a.device_cap_flags & IBV_DEVICE_MEM_WINDOW_TYPE_2B) != 0);
  CHECK(a.max_mw == a.max_mr);
  CHECK(a.max_mw > 0);
}

TEST_CASE("daemon mw: AllocMw / DeallocMw errors and handles") {
  TestDaemon d;
  RawClient c(d.path()), other(d.path());
  REQUIRE(c.hello("server") == 0);
  REQUIRE(other.hello("client") == 0);
  const uint32_t pd = c.alloc_pd();
  REQUIRE(pd != 0);
  CHECK(alloc_mw(c, pd + 100, IBV_MW_TYPE_1)->hdr.status == ENOENT);  // no such PD handle
  CHECK(alloc_mw(c, pd, 3)->hdr.status == EINVAL);  // ib_uverbs_alloc_mw: type 1 or 2 only
  uint32_t shorty = pd;
  CHECK(c.call(ipc::Op::AllocMw, shorty)->hdr.status == EINVAL);  // body shorter than AllocMwReq
  auto m1 = alloc_mw(c, pd, IBV_MW_TYPE_1), m2 = alloc_mw(c, pd, IBV_MW_TYPE_2);
  REQUIRE(m1->hdr.status == 0);
  REQUIRE(m2->hdr.status == 0);
  const auto r1 = m1->as<ipc::AllocMwResp>(), r2 = m2->as<ipc::AllocMwResp>();
  CHECK(r1.handle != r2.handle);
  CHECK((r1.rkey >> 8) != (r2.rkey >> 8));  // distinct key indices
  // Handles are per client: another client's DeallocMw does not find it.
  CHECK(other.call(ipc::Op::DeallocMw, ipc::HandleReq{r1.handle})->hdr.status == ENOENT);
  // A PD with windows is in use.
  CHECK(c.call(ipc::Op::DeallocPd, ipc::HandleReq{pd})->hdr.status == EBUSY);
  CHECK(c.call(ipc::Op::DeallocMw, ipc::HandleReq{r1.handle})->hdr.status == 0);
  CHECK(c.call(ipc::Op::DeallocMw, ipc::HandleReq{r1.handle})->hdr.status == ENOENT);
  CHECK(c.call(ipc::Op::DeallocMw, ipc::HandleReq{r2.handle})->hdr.status == 0);
  CHECK(c.call(ipc::Op::DeallocPd, ipc::HandleReq{pd})->hdr.status == 0);
}

TEST_CASE("daemon mw: BIND_MW and LOCAL_INV WQEs from the SQ ring") {
  TestDaemon d;
  Owner o(d.path());
  auto m = alloc_mw(o.c, o.pd, IBV_MW_TYPE_2);
  REQUIRE(m->hdr.status == 0);
  const auto mw = m->as<ipc::AllocMwResp>();
  const uint32_t key = (mw.rkey & ~0xffu) | 0x33;
  ipc::Cqe e = o.post([&](ipc::SqWqe& w) { fill_bind(w, mw.rkey, key, o.buf + 4096, 4096, o.lkey); });
  CHECK(e.status == IBV_WC_SUCCESS);
  CHECK(e.opcode == IBV_WC_BIND_MW);
  CHECK(e.wr_id == 100);
  // man ibv_alloc_mw: "ibv_dereg_mr() fails if any memory window is still bound".
  CHECK(o.c.call(ipc::Op::DeregMr, ipc::HandleReq{o.mr})->hdr.status == EBUSY);
  e = o.post([&](ipc::SqWqe& w) {
    w.opcode = IBV_WR_LOCAL_INV;
    w.imm_data = key;  // the key the bind set: the low 8 bits came from w.rkey
  });
  CHECK(e.status == IBV_WC_SUCCESS);
  CHECK(e.opcode == IBV_WC_LOCAL_INV);
  CHECK(o.c.call(ipc::Op::DeregMr, ipc::HandleReq{o.mr})->hdr.status == 0);
  // A bind to the MR that is gone: MW_BIND_ERR (the QP then goes to ERR).
  e = o.post([&](ipc::SqWqe& w) { fill_bind(w, key, key + 1, o.buf, 64, o.lkey); });
  CHECK(e.status == IBV_WC_MW_BIND_ERR);
}

TEST_CASE("daemon mw: a client leaving with a bound window releases it before its MR") {
  TestDaemon d;
  {
    Owner o(d.path());
    auto m = alloc_mw(o.c, o.pd, IBV_MW_TYPE_1);
    REQUIRE(m->hdr.status == 0);
    const auto mw = m->as<ipc::AllocMwResp>();
    ipc::Cqe e = o.post([&](ipc::SqWqe& w) { fill_bind(w, mw.rkey, mw.rkey + 1, o.buf, 64, o.lkey); });
    REQUIRE(e.status == IBV_WC_SUCCESS);
    o.c.disconnect();
  }
  // The daemon tore the client down: windows first, so the MR (then the PD) could go.
  RawClient next(d.path());
  auto r = next.call_empty(ipc::Op::Counters);
  REQUIRE(r->hdr.status == 0);
  const auto j = nlohmann::json::parse(counters_text(*r));
  bool seen = false;
  for (const auto& n : j["nics"]) {
    if (n["host"] != "server") continue;
    seen = true;
    CHECK(n["objects"]["mws"] == 0);
    CHECK(n["objects"]["mrs"] == 0);
    CHECK(n["objects"]["pds"] == 0);
  }
  CHECK(seen);
}
