// Malformed messages get an error reply and the daemon keeps serving.
#include <doctest/doctest.h>

#include <cerrno>

#include "tests/unit/daemon/test_daemon.h"

using namespace rdmasim;
using namespace rdmasim::daemon::test;

TEST_CASE("daemon protocol: bad magic gets EINVAL, then a good request is served") {
  TestDaemon d;
  REQUIRE(d.listen_rc() == 0);
  RawClient c(d.path());
  REQUIRE(c.connected());
  ipc::MsgHeader h{};
  h.magic = 0xdeadbeef;
  h.op = ipc::Op::Hello;
  c.send_raw(&h, sizeof h);
  CHECK(c.receive()->hdr.status == EINVAL);
  CHECK(c.hello() == 0);
}

TEST_CASE("daemon protocol: a message shorter than the header gets EINVAL") {
  TestDaemon d;
  RawClient c(d.path());
  const uint8_t three[3] = {1, 2, 3};
  c.send_raw(three, sizeof three);
  CHECK(c.receive()->hdr.status == EINVAL);
  CHECK(c.hello() == 0);
}

TEST_CASE("daemon protocol: body_len that disagrees with the message length gets EINVAL") {
  TestDaemon d;
  RawClient c(d.path());
  ipc::MsgHeader h{};
  h.op = ipc::Op::Hello;
  h.body_len = 1000;  // nothing follows the header
  c.send_raw(&h, sizeof h);
  CHECK(c.receive()->hdr.status == EINVAL);
}

TEST_CASE("daemon protocol: a body shorter than the request struct gets EINVAL") {
  TestDaemon d;
  RawClient c(d.path());
  REQUIRE(c.hello() == 0);
  const uint8_t one = 0;  // AllocPdReq is 4 bytes
  c.send_op(ipc::Op::AllocPd, &one, 1);
  CHECK(c.receive()->hdr.status == EINVAL);
  CHECK(c.alloc_pd() != 0);
}

TEST_CASE("daemon protocol: requests before Hello and unknown ops are refused") {
  TestDaemon d;
  RawClient c(d.path());
  ipc::AllocPdReq r{0};
  CHECK(c.call(ipc::Op::AllocPd, r)->hdr.status == EINVAL);
  REQUIRE(c.hello() == 0);
  CHECK(c.call_empty(static_cast<ipc::Op>(999))->hdr.status != 0);
  CHECK(c.call(ipc::Op::Hello, ipc::HelloReq{})->hdr.status == EINVAL);  // only once
  CHECK(c.alloc_pd() != 0);
}

TEST_CASE("daemon protocol: Hello assigns the first free host, a process's second connection its host, and passes 4 fds") {
  TestDaemon d;
  RawClient a(d.path()), b(d.path()), c(d.path()), unknown(d.path());
  REQUIRE(a.hello() == 0);
  REQUIRE(b.hello() == 0);
  REQUIRE(c.hello("client") == 0);
  // The default fabric lists "server" then "client". b is another connection of this
  // process (as librdmacm's beside libibverbs'): a process is one host, so it is a's.
  CHECK(std::string(a.hello_resp().host) == "server");
  CHECK(std::string(b.hello_resp().host) == "server");
  CHECK(std::string(c.hello_resp().host) == "client");
  CHECK(a.hello_resp().num_devices == 1);
  CHECK(unknown.hello("nosuchhost") == ENOENT);
}

TEST_CASE("daemon protocol: Counters answers JSON without Hello") {
  TestDaemon d;
  RawClient c(d.path());
  auto r = c.call_empty(ipc::Op::Counters);
  REQUIRE(r->hdr.status == 0);
  std::string text = counters_text(*r);
  CHECK(text.find("\"daemon\"") != std::string::npos);
}

TEST_CASE("daemon protocol: a second daemon on the same socket refuses to start") {
  TestDaemon d;
  daemon::DaemonOptions o;
  o.socket_path = d.path();
  daemon::Daemon second(topo::default_fabric_config(), o);
  std::string why;
  CHECK(second.listen(&why) == EADDRINUSE);
  RawClient c(d.path());
  CHECK(c.hello() == 0);  // the first one still serves
}

TEST_CASE("daemon protocol: Shutdown from the same uid stops the daemon") {
  TestDaemon d;
  RawClient c(d.path());
  CHECK(c.call_empty(ipc::Op::Shutdown)->hdr.status == 0);
  // The loop ends and the destructor removes the socket; until then it may still accept.
  for (int i = 0; i < 500; ++i) {
    ipc::MsgHeader h{};
    h.op = ipc::Op::Counters;
    c.send_raw(&h, sizeof h);
    if (c.receive()->hdr.status != 0) break;  // no answer: the loop has ended
  }
  RawClient late(d.path());
  CHECK(late.hello() != 0);
}

TEST_CASE("daemon protocol: the global page fd cannot be mapped writable") {
  TestDaemon d;
  RawClient c(d.path());
  ipc::HelloReq r;
  auto rep = c.call(ipc::Op::Hello, r);
  REQUIRE(rep->hdr.status == 0);
  REQUIRE(rep->fds.size() == 4);
  void* w = mmap(nullptr, sizeof(ipc::GlobalPage), PROT_READ | PROT_WRITE, MAP_SHARED, rep->fds[1], 0);
  CHECK(w == MAP_FAILED);  // an O_RDONLY fd: clients read the daemon's status, never write it
  void* ro = mmap(nullptr, sizeof(ipc::GlobalPage), PROT_READ, MAP_SHARED, rep->fds[1], 0);
  CHECK(ro != MAP_FAILED);
}
