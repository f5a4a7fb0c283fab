// A hostile client: truncated request bodies of every size class and handles of another
// client. Each request gets its errno (lib/daemon/README.md, "Errors": EINVAL for bad
// lengths, ENOENT for handles not owned by this client) and the daemon serves on.
#include <doctest/doctest.h>

#include <infiniband/verbs.h>

#include <cerrno>
#include <vector>

#include "tests/unit/daemon/test_daemon.h"

using namespace rdmasim;
using namespace rdmasim::daemon::test;

namespace {

// One op per request struct size of proto.h, from the smallest (4 B) to the largest.
struct SizeClass {
  ipc::Op op;
  size_t size;
};
const std::vector<SizeClass> kSizeClasses = {
    {ipc::Op::AllocPd, sizeof(ipc::AllocPdReq)},
    {ipc::Op::DeallocPd, sizeof(ipc::HandleReq)},
    {ipc::Op::QueryPort, sizeof(ipc::QueryPortReq)},
    {ipc::Op::AllocMw, sizeof(ipc::AllocMwReq)},
    {ipc::Op::CreateCq, sizeof(ipc::CreateCqReq)},
    {ipc::Op::ModifySrq, sizeof(ipc::ModifySrqReq)},
    {ipc::Op::CreateSrq, sizeof(ipc::CreateSrqReq)},
    {ipc::Op::RegMr, sizeof(ipc::RegMrReq)},
    {ipc::Op::ReregMr, sizeof(ipc::ReregMrReq)},
    {ipc::Op::CreateQp, sizeof(ipc::CreateQpReq)},
    {ipc::Op::QueryQp, sizeof(ipc::QueryQpReq)},
    {ipc::Op::ModifyQp, sizeof(ipc::ModifyQpReq)},
};

}  // namespace

TEST_CASE("daemon hostile: a body one byte short of its request struct, or empty, gets EINVAL") {
  TestDaemon d;
  RawClient c(d.path());
  // Hello itself, before any Hello: short, then whole.
  const std::vector<uint8_t> zeros(sizeof(ipc::ModifyQpReq) + 64, 0);
  c.send_op(ipc::Op::Hello, zeros.data(), sizeof(ipc::HelloReq) - 1);
  CHECK(c.receive()->hdr.status == EINVAL);
  REQUIRE(c.hello() == 0);
  int sent = 1;
  for (const SizeClass& k : kSizeClasses) {
    CAPTURE(static_cast<uint32_t>(k.op));
    CAPTURE(k.size);
    c.send_op(k.op, zeros.data(), k.size - 1);
    CHECK(c.receive()->hdr.status == EINVAL);
    c.send_op(k.op, nullptr, 0);
    CHECK(c.receive()->hdr.status == EINVAL);
    sent += 2;
  }
  // None of them reached the HCA: the device still has no object of any kind.
  auto r = c.call_empty(ipc::Op::Counters);
  auto j = nlohmann::json::parse(counters_text(*r));
  for (const char* kind : {"pds", "mrs", "mws", "cqs", "srqs", "qps"}) {
    CAPTURE(kind);
    CHECK(j["nics"][0]["objects"][kind] == 0);
  }
  // Each one was counted as a bad request, and the client is still served.
  CHECK(j["daemon"]["bad_requests"].get<int>() == sent);
  CHECK(c.alloc_pd() != 0);
  // A body longer than the struct is accepted (fields appended by a newer client).
  std::vector<uint8_t> longer(sizeof(ipc::AllocPdReq) + 8, 0);
  c.send_op(ipc::Op::AllocPd, longer.data(), longer.size());
  CHECK(c.receive()->hdr.status == 0);
}

TEST_CASE("daemon hostile: another client's handles of every kind get ENOENT and stay the owner's") {
  TestDaemon d;
  RawClient a(d.path()), b(d.path());
  REQUIRE(a.hello() == 0);
  REQUIRE(b.hello() == 0);  // b owns nothing: every handle it names is a's or none
  const uint32_t pd = a.alloc_pd();
  REQUIRE(pd != 0);
  static char buf[4096];
  ipc::RegMrReq mr{};
  mr.pd = pd;
  mr.access = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_MW_BIND;
  mr.addr = reinterpret_cast<uint64_t>(buf);
  mr.length = sizeof buf;
  mr.iova = mr.addr;
  auto m = a.call(ipc::Op::RegMr, mr);
  REQUIRE(m->hdr.status == 0);
  const uint32_t mr_h = m->as<ipc::RegMrResp>().handle;
  auto w = a.call(ipc::Op::AllocMw, ipc::AllocMwReq{pd, IBV_MW_TYPE_1});
  REQUIRE(w->hdr.status == 0);
  const uint32_t mw = w->as<ipc::AllocMwResp>().handle;
  auto ch = a.call(ipc::Op::CreateCompChannel, ipc::CreateCompChannelReq{0});
  REQUIRE(ch->hdr.status == 0);
  const uint32_t channel = ch->as<ipc::CreateCompChannelResp>().handle;
  auto q = a.call(ipc::Op::CreateCq, ipc::CreateCqReq{0, 16, channel, 0});
  REQUIRE(q->hdr.status == 0);
  const uint32_t cq = q->as<ipc::CreateCqResp>().handle;
  auto s = a.call(ipc::Op::CreateSrq, ipc::CreateSrqReq{pd, cq, 16, 1, 0});
  REQUIRE(s->hdr.status == 0);
  const uint32_t srq = s->as<ipc::CreateSrqResp>().handle;
  ipc::CreateQpReq qr{};
  qr.pd = pd;
  qr.qp_type = IBV_QPT_RC;
  qr.send_cq = cq;
  qr.recv_cq = cq;
  qr.cap.max_send_wr = 8;
  qr.cap.max_recv_wr = 8;
  qr.cap.max_send_sge = 1;
  qr.cap.max_recv_sge = 1;
  auto p = a.call(ipc::Op::CreateQp, qr);
  REQUIRE(p->hdr.status == 0);
  const uint32_t qp = p->as<ipc::CreateQpResp>().handle;

  // b names each of a's objects, with every op that takes it.
  CHECK(b.call(ipc::Op::DeallocPd, ipc::HandleReq{pd})->hdr.status == ENOENT);
  CHECK(b.call(ipc::Op::AllocMw, ipc::AllocMwReq{pd, IBV_MW_TYPE_1})->hdr.status == ENOENT);
  CHECK(b.call(ipc::Op::RegMr, mr)->hdr.status == ENOENT);
  CHECK(b.call(ipc::Op::CreateSrq, ipc::CreateSrqReq{pd, cq, 16, 1, 0})->hdr.status == ENOENT);
  CHECK(b.call(ipc::Op::CreateQp, qr)->hdr.status == ENOENT);
  CHECK(b.call(ipc::Op::DeregMr, ipc::HandleReq{mr_h})->hdr.status == ENOENT);
  ipc::ReregMrReq rr{};
  rr.handle = mr_h;
  rr.flags = IBV_REREG_MR_CHANGE_ACCESS;
  rr.access = IBV_ACCESS_LOCAL_WRITE;
  CHECK(b.call(ipc::Op::ReregMr, rr)->hdr.status == ENOENT);
  CHECK(b.call(ipc::Op::DeallocMw, ipc::HandleReq{mw})->hdr.status == ENOENT);
  CHECK(b.call(ipc::Op::DestroyCompChannel, ipc::HandleReq{channel})->hdr.status == ENOENT);
  CHECK(b.call(ipc::Op::CreateCq, ipc::CreateCqReq{0, 16, channel, 0})->hdr.status == ENOENT);
  CHECK(b.call(ipc::Op::DestroyCq, ipc::HandleReq{cq})->hdr.status == ENOENT);
  CHECK(b.call(ipc::Op::ModifySrq, ipc::ModifySrqReq{srq, IBV_SRQ_LIMIT, 0, 1})->hdr.status == ENOENT);
  CHECK(b.call(ipc::Op::QuerySrq, ipc::HandleReq{srq})->hdr.status == ENOENT);
  CHECK(b.call(ipc::Op::DestroySrq, ipc::HandleReq{srq})->hdr.status == ENOENT);
  ipc::ModifyQpReq mq{};
  mq.handle = qp;
  mq.attr_mask = IBV_QP_STATE;
  mq.attr.qp_state = IBV_QPS_ERR;
  CHECK(b.call(ipc::Op::ModifyQp, mq)->hdr.status == ENOENT);
  CHECK(b.call(ipc::Op::QueryQp, ipc::QueryQpReq{qp, 0})->hdr.status == ENOENT);
  CHECK(b.call(ipc::Op::DestroyQp, ipc::HandleReq{qp})->hdr.status == ENOENT);

  // b is still served, and a's objects are intact: queries answer, teardown in order succeeds.
  CHECK(b.alloc_pd() != 0);
  CHECK(a.call(ipc::Op::QuerySrq, ipc::HandleReq{srq})->hdr.status == 0);
  CHECK(a.call(ipc::Op::QueryQp, ipc::QueryQpReq{qp, 0})->hdr.status == 0);
  CHECK(a.call(ipc::Op::DestroyQp, ipc::HandleReq{qp})->hdr.status == 0);
  CHECK(a.call(ipc::Op::DestroySrq, ipc::HandleReq{srq})->hdr.status == 0);
  CHECK(a.call(ipc::Op::DestroyCq, ipc::HandleReq{cq})->hdr.status == 0);
  CHECK(a.call(ipc::Op::DestroyCompChannel, ipc::HandleReq{channel})->hdr.status == 0);
  CHECK(a.call(ipc::Op::DeallocMw, ipc::HandleReq{mw})->hdr.status == 0);
  CHECK(a.call(ipc::Op::DeregMr, ipc::HandleReq{mr_h})->hdr.status == 0);
  CHECK(a.call(ipc::Op::DeallocPd, ipc::HandleReq{pd})->hdr.status == 0);
}
