// QueryDevice/QueryPort describe the NIC of the client's host as the fabric built it.
#include <doctest/doctest.h>

#include <fstream>

#include "tests/unit/daemon/test_daemon.h"

using namespace rdmasim;
using namespace rdmasim::daemon::test;

TEST_CASE("daemon query: the default RoCE fabric's port is ACTIVE Ethernet, GID ::ffff:127.0.1.2 on host client") {
  TestDaemon d;
  RawClient c(d.path());
  REQUIRE(c.hello("client") == 0);
  CHECK(std::string(c.hello_resp().host_ip) == "127.0.1.2");  // DESIGN: client is 127.0.1.2
  auto dev = c.call(ipc::Op::QueryDevice, ipc::QueryDeviceReq{0});
  REQUIRE(dev->hdr.status == 0);
  auto dr = dev->as<ipc::QueryDeviceResp>();
  CHECK(std::string(dr.name) == "mlx5_0");
  CHECK(dr.attr.phys_port_cnt == 1);
  CHECK(dr.attr.atomic_cap == IBV_ATOMIC_HCA);
  auto port = c.call(ipc::Op::QueryPort, ipc::QueryPortReq{0, 1});
  REQUIRE(port->hdr.status == 0);
  auto pr = port->as<ipc::QueryPortResp>();
  CHECK(pr.attr.state == IBV_PORT_ACTIVE);
  CHECK(pr.attr.link_layer == IBV_LINK_LAYER_ETHERNET);
  CHECK(pr.attr.active_width == 2);   // 100 Gb/s = 4x EDR
  CHECK(pr.attr.active_speed == 32);
  CHECK(pr.gids[0][15] == 2);
  CHECK(pr.gid_types[0] == IBV_GID_TYPE_ROCE_V2);
  CHECK(c.call(ipc::Op::QueryPort, ipc::QueryPortReq{0, 2})->hdr.status == EINVAL);
  CHECK(c.call(ipc::Op::QueryDevice, ipc::QueryDeviceReq{1})->hdr.status == EINVAL);
}

TEST_CASE("daemon query: an IB port has a LID, an SM LID and GID fe80::<port guid>") {
  std::ifstream f(std::string(RDMASIM_SOURCE_ROOT) + "/configs/ib.json");
  REQUIRE(f.good());
  TestDaemon d(nlohmann::json::parse(f));
  RawClient c(d.path());
  REQUIRE(c.hello("server") == 0);
  auto port = c.call(ipc::Op::QueryPort, ipc::QueryPortReq{0, 1});
  REQUIRE(port->hdr.status == 0);
  auto pr = port->as<ipc::QueryPortResp>();
  CHECK(pr.attr.link_layer == IBV_LINK_LAYER_INFINIBAND);
  CHECK(pr.attr.lid != 0);
  CHECK(pr.attr.sm_lid != 0);
  CHECK(pr.gids[0][0] == 0xfe);
  CHECK(pr.gids[0][1] == 0x80);
  CHECK(pr.gid_types[0] == IBV_GID_TYPE_IB);
}
