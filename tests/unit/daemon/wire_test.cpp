// WQEs read from shared memory are validated before they become model work requests.
#include <doctest/doctest.h>

#include <infiniband/verbs.h>

#include <cerrno>
#include <cstring>

#include "lib/backend/verbs_wire.h"
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
  ipc::WireAv a{};
  a.dlid = 7;
  a.is_global = 1;
  a.dgid[15] = 9;
  a.hop_limit = 64;
  a.port_num = 1;
  ipc::WireAv b = daemon::from_av(daemon::to_av(a));
  CHECK(b.dlid == 7);
  CHECK(b.dgid[15] == 9);
  CHECK(b.hop_limit == 64);
}

TEST_CASE("wire: an ibv_qp_attr crosses client -> wire -> model -> wire -> client unchanged") {
  // Every value below differs from 0 and from its neighbours, so a field dropped or swapped
  // on the way shows.
  ibv_qp_attr a{};
  a.qp_state = IBV_QPS_RTS;
  a.path_mtu = IBV_MTU_2048;
  a.qkey = 0x11111111;
  a.rq_psn = 0x123456;
  a.sq_psn = 0x654321;
  a.dest_qp_num = 0xabcdef;
  a.qp_access_flags = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;
  a.cap.max_send_wr = 64;
  a.cap.max_inline_data = 128;
  a.ah_attr.dlid = 3;
  a.ah_attr.is_global = 1;
  a.ah_attr.grh.dgid.raw[0] = 0xfe;
  a.ah_attr.grh.flow_label = 0x12345;
  a.ah_attr.grh.traffic_class = 106;
  a.pkey_index = 2;
  a.max_rd_atomic = 4;
  a.max_dest_rd_atomic = 5;
  a.min_rnr_timer = 12;
  a.port_num = 1;
  a.timeout = 14;
  a.retry_cnt = 7;
  a.rnr_retry = 6;
  const ibv_qp_attr b = backend::from_wire(daemon::from_qp_attr(daemon::to_qp_attr(backend::to_wire(a))));
  CHECK(b.qp_state == IBV_QPS_RTS);
  CHECK(b.path_mtu == IBV_MTU_2048);
  CHECK(b.qkey == a.qkey);
  CHECK(b.rq_psn == a.rq_psn);
  CHECK(b.sq_psn == a.sq_psn);
  CHECK(b.dest_qp_num == a.dest_qp_num);
  CHECK(b.qp_access_flags == a.qp_access_flags);
  CHECK(b.cap.max_send_wr == 64);
  CHECK(b.cap.max_inline_data == 128);
  CHECK(b.ah_attr.dlid == 3);
  CHECK(b.ah_attr.is_global == 1);
  CHECK(b.ah_attr.grh.dgid.raw[0] == 0xfe);
  CHECK(b.ah_attr.grh.flow_label == 0x12345);
  CHECK(b.ah_attr.grh.traffic_class == 106);
  CHECK(b.pkey_index == 2);
  CHECK(b.max_rd_atomic == 4);
  CHECK(b.max_dest_rd_atomic == 5);
  CHECK(b.min_rnr_timer == 12);
  CHECK(b.timeout == 14);
  CHECK(b.retry_cnt == 7);
  CHECK(b.rnr_retry == 6);
}

TEST_CASE("wire: a qp_state past IBV_QPS_ERR reaches the model as a state it refuses") {
  ibv_qp_attr a{};
  a.qp_state = static_cast<ibv_qp_state>(258);  // a wire field of 8 bits would make it 2 (RTR)
  CHECK(static_cast<uint32_t>(daemon::to_qp_attr(backend::to_wire(a)).qp_state) == 6);  // Err
}

TEST_CASE("wire: device attributes carry GUIDs in network order to the client") {
  ipc::QueryDeviceResp r{};
  r.node_guid = 0x0102030405060708;
  r.attr.sys_image_guid = 0x1112131415161718;
  r.attr.max_qp = 1u << 17;
  r.attr.atomic_cap = static_cast<uint32_t>(ipc::AtomicCap::Hca);
  const ibv_device_attr a = backend::from_wire(r);
  CHECK(be64toh(a.node_guid) == 0x0102030405060708);  // ibv_device_attr: __be64 node_guid
  CHECK(be64toh(a.sys_image_guid) == 0x1112131415161718);
  CHECK(a.max_qp == (1 << 17));
  CHECK(a.atomic_cap == IBV_ATOMIC_HCA);
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
