// WQEs read from shared memory are validated before they become model work requests.
#include <doctest/doctest.h>

#include <cerrno>

#include "lib/daemon/device_info.h"
#include "lib/daemon/wire.h"

using namespace rdmasim;

TEST_CASE("wire: a SEND with 2 SGEs converts; more SGEs than granted is EINVAL") {
  ipc::SqWqe w{};
  w.opcode = IBV_WR_SEND;
  w.send_flags = IBV_SEND_SIGNALED;
  w.num_sge = 2;
  w.sge[0] = {0x1000, 8, 5};
  w.sge[1] = {0x2000, 16, 5};
  nic::SendWr wr;
  REQUIRE(daemon::to_send_wr(w, 4, &wr) == 0);
  CHECK(wr.sgl.size() == 2);
  CHECK(wr.sgl[1].length == 16);
  CHECK(daemon::to_send_wr(w, 1, &wr) == EINVAL);
  w.num_sge = ipc::kMaxSge + 1;
  CHECK(daemon::to_send_wr(w, 1000, &wr) == EINVAL);
}

TEST_CASE("wire: inline_len beyond kMaxInline, unknown opcodes and flags are EINVAL") {
  ipc::SqWqe w{};
  w.opcode = IBV_WR_RDMA_WRITE;
  w.send_flags = IBV_SEND_INLINE;
  w.inline_len = ipc::kMaxInline + 1;
  nic::SendWr wr;
  CHECK(daemon::to_send_wr(w, 1, &wr) == EINVAL);
  w.inline_len = 4;
  CHECK(daemon::to_send_wr(w, 1, &wr) == 0);
  CHECK(wr.inline_data.size() == 4);
  w.opcode = 200;
  CHECK(daemon::to_send_wr(w, 1, &wr) == EINVAL);
  w.opcode = IBV_WR_SEND;
  w.send_flags = 1u << 20;
  CHECK(daemon::to_send_wr(w, 1, &wr) == EINVAL);
}

TEST_CASE("wire: a receive with more SGEs than the queue allows is EINVAL") {
  ipc::RqWqe w{};
  w.num_sge = 3;
  nic::RecvWr wr;
  CHECK(daemon::to_recv_wr(w, 2, &wr) == EINVAL);
  CHECK(daemon::to_recv_wr(w, 3, &wr) == 0);
}

TEST_CASE("wire: ah_attr round-trips through nic::AddressVector") {
  ibv_ah_attr a{};
  a.dlid = 7;
  a.is_global = 1;
  a.grh.dgid.raw[15] = 9;
  a.grh.hop_limit = 64;
  a.port_num = 1;
  ibv_ah_attr b = daemon::from_av(daemon::to_av(a));
  CHECK(b.dlid == 7);
  CHECK(b.grh.dgid.raw[15] == 9);
  CHECK(b.grh.hop_limit == 64);
}

TEST_CASE("device info: 100 Gb/s is 4x EDR (width 2, speed 32)") {
  uint8_t w = 0, s = 0;
  daemon::rate_to_width_speed(Rate::gbps(100), &w, &s);
  CHECK(w == 2);   // IB_WIDTH_4X
  CHECK(s == 32);  // EDR, 25 Gb/s per lane
  daemon::rate_to_width_speed(Rate::gbps(200), &w, &s);
  CHECK(w == 2);
  CHECK(s == 64);  // HDR, 50 Gb/s per lane
}

TEST_CASE("device info: a RoCE port's GID 0 is ::ffff:<ip>, type RoCEv2, and the port is ACTIVE") {
  topo::HostNic nic;
  nic.ip = "127.0.1.1";
  nic.rate = Rate::gbps(100);
  ipc::QueryPortResp p;
  daemon::fill_port(nic, &p);
  CHECK(p.attr.state == IBV_PORT_ACTIVE);
  CHECK(p.attr.link_layer == IBV_LINK_LAYER_ETHERNET);
  CHECK(p.attr.active_mtu == IBV_MTU_4096);
  CHECK(p.gids[0][10] == 0xff);
  CHECK(p.gids[0][12] == 127);
  CHECK(p.gids[0][15] == 1);
  CHECK(p.gid_types[0] == IBV_GID_TYPE_ROCE_V2);
}
