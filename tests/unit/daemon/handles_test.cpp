// Handles are per client: unknown handles and other clients' handles are not found.
#include <doctest/doctest.h>

#include <cerrno>

#include "tests/unit/daemon/test_daemon.h"

using namespace rdmasim;
using namespace rdmasim::daemon::test;

TEST_CASE("daemon handles: an unknown handle gets ENOENT") {
  TestDaemon d;
  RawClient c(d.path());
  REQUIRE(c.hello() == 0);
  CHECK(c.call(ipc::Op::DeallocPd, ipc::HandleReq{12345})->hdr.status == ENOENT);
  CHECK(c.call(ipc::Op::DestroyQp, ipc::HandleReq{0})->hdr.status == ENOENT);
  ipc::ModifyQpReq m{};
  m.handle = 77;
  CHECK(c.call(ipc::Op::ModifyQp, m)->hdr.status == ENOENT);
}

TEST_CASE("daemon handles: another client's PD is not found") {
  TestDaemon d;
  RawClient a(d.path()), b(d.path());
  REQUIRE(a.hello() == 0);
  REQUIRE(b.hello() == 0);
  const uint32_t pd = a.alloc_pd();
  REQUIRE(pd != 0);
  CHECK(b.call(ipc::Op::DeallocPd, ipc::HandleReq{pd})->hdr.status == ENOENT);
  ipc::RegMrReq r{};
  r.pd = pd;
  static char buf[64];
  r.addr = reinterpret_cast<uint64_t>(buf);
  r.length = sizeof buf;
  r.iova = r.addr;
  CHECK(b.call(ipc::Op::RegMr, r)->hdr.status == ENOENT);
  CHECK(a.call(ipc::Op::DeallocPd, ipc::HandleReq{pd})->hdr.status == 0);
}

TEST_CASE("daemon handles: a handle of another kind is not found") {
  TestDaemon d;
  RawClient c(d.path());
  REQUIRE(c.hello() == 0);
  const uint32_t pd = c.alloc_pd();
  REQUIRE(pd != 0);
  CHECK(c.call(ipc::Op::DestroyCq, ipc::HandleReq{pd})->hdr.status == ENOENT);
  CHECK(c.call(ipc::Op::QuerySrq, ipc::HandleReq{pd})->hdr.status == ENOENT);
}

TEST_CASE("daemon handles: a CQ with an unknown device or zero entries gets EINVAL") {
  TestDaemon d;
  RawClient c(d.path());
  REQUIRE(c.hello() == 0);
  CHECK(c.call(ipc::Op::CreateCq, ipc::CreateCqReq{7, 16, 0, 0})->hdr.status == EINVAL);
  CHECK(c.call(ipc::Op::CreateCq, ipc::CreateCqReq{0, 0, 0, 0})->hdr.status == EINVAL);
  CHECK(c.call(ipc::Op::CreateCq, ipc::CreateCqReq{0, 16, 99, 0})->hdr.status == ENOENT);
  auto ok = c.call(ipc::Op::CreateCq, ipc::CreateCqReq{0, 16, 0, 0});
  CHECK(ok->hdr.status == 0);
  CHECK(ok->fds.size() == 1);
}

TEST_CASE("daemon handles: a disconnected client's objects are destroyed") {
  TestDaemon d;
  {
    RawClient a(d.path());
    REQUIRE(a.hello() == 0);
    REQUIRE(a.alloc_pd() != 0);
  }
  // After EOF the daemon drops the client; a new one still gets served and the daemon
  // reports no stale clients.
  RawClient b(d.path());
  REQUIRE(b.hello() == 0);
  auto r = b.call_empty(ipc::Op::Counters);
  auto j = nlohmann::json::parse(counters_text(*r));
  CHECK(j["daemon"]["clients"] == 1);
}
