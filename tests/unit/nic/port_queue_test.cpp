// The NIC's transmit queue on the default fabric (server and client on 100 Gb/s links of
// 400 ns to one switch, 200 ns forwarding, MTU 4096; no PCIe model here): the HCA keeps its
// port's queue shallow (NIC "queue_kb", default 8), so an ACK it must send does not wait
// behind the data it is sending itself.
#include <doctest/doctest.h>

#include "tests/unit/nic/fabric_pair.h"

using namespace rdmasim;
using namespace rdmasim::nic;
using namespace rdmasim::nic::test;

namespace {

SendWr write_of(std::vector<uint8_t>& src, MrKeys ks, std::vector<uint8_t>& dst, MrKeys kd, uint64_t id) {
  SendWr wr;
  wr.wr_id = id;
  wr.opcode = WrOpcode::RdmaWrite;
  wr.send_flags = kSendSignaled;
  wr.sgl = {sge_of(src, ks.lkey)};
  wr.remote_addr = reinterpret_cast<uint64_t>(dst.data());
  wr.rkey = kd.rkey;
  return wr;
}

}  // namespace

TEST_CASE("port queue: the responder's ACK is not held behind its own 1 MiB of data") {
  FabricPair p(nlohmann::json::object());
  std::vector<uint8_t> big = pattern(1 << 20, 1), big_dst(1 << 20);
  std::vector<uint8_t> msg = pattern(65536, 2), msg_dst(65536);
  // The client (b) streams 1 MiB to the server (a); at the same instant the server WRITEs
  // 64 KiB to the client, whose NIC must ACK it while its own stream goes out.
  const MrKeys kbs = p.reg(p.b, big), kbd = p.reg(p.a, big_dst);
  const MrKeys kms = p.reg(p.a, msg), kmd = p.reg(p.b, msg_dst);
  REQUIRE(p.b.hca->post_send(p.b.qpn, write_of(big, kbs, big_dst, kbd, 1)) == 0);
  REQUIRE(p.a.hca->post_send(p.a.qpn, write_of(msg, kms, msg_dst, kmd, 2)) == 0);
  p.engine.run();
  REQUIRE(p.a.wcs.size() == 1);
  REQUIRE(p.b.wcs.size() == 1);
  CHECK(p.a.wcs[0].wc.status == WcStatus::Success);
  CHECK(msg_dst == msg);
  CHECK(big_dst == big);
  // The 64 KiB WRITE: 16 packets of 4178 B (+16 B RETH) at 100 Gb/s = 5.35 us after the
  // 100 ns pipeline; its last packet reaches the client 400 + 200 + 334 (the switch's
  // serialisation) + 400 ns later: 6.78 us. The ACK then waits on the client's port for at
  // most the packet on the wire and the 8 KiB queue (three packets, 1.0 us), and on the
  // switch's port toward the server for the client's data packet there (0.33 us), plus
  // 400 + 200 + 400 ns of path and the HCAs' receive latencies: about 9.2 us, under 10.
  // With the client's whole 1 MiB queued ahead of it (a 1 MiB queue), the ACK would leave
  // after that data, 1 MiB at 100 Gb/s = 85.6 us later.
  CHECK(p.a.wcs[0].at < us(10));
  // Sharing the port with the ACKs costs the stream little: 1 MiB in 256 packets of 4178 B
  // = 85.6 us, plus the path, its own ACK back and a few 78 B ACKs in between.
  CHECK(p.b.wcs[0].at < us(90));
}
