// Where a packet's payload bytes come from (sim/nic/mr.cpp, "held" and by-packet gathers):
// RC SEND/WRITE bytes travel in place from the sender's MR, UD bytes are copied when the
// packet is built, and each packet re-checks its MR as a DMA read would.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstring>

#include "tests/unit/nic/fabric_pair.h"
#include "tests/unit/nic/test_wire.h"

using namespace rdmasim;
using namespace rdmasim::nic;
using namespace rdmasim::nic::test;

namespace {

SendWr write_wr(std::vector<uint8_t>& src, uint32_t lkey, std::vector<uint8_t>& dst, uint32_t rkey) {
  SendWr wr;
  wr.opcode = WrOpcode::RdmaWrite;
  wr.send_flags = kSendSignaled;
  wr.sgl = {sge_of(src, lkey)};
  wr.remote_addr = reinterpret_cast<uint64_t>(dst.data());
  wr.rkey = rkey;
  return wr;
}

// Runs until `wire` has sent `n` packets (or nothing is left to run).
void run_until_sent(Pair& p, TestWire& wire, size_t n) {
  while (wire.sent.size() < n && p.engine.step()) {
  }
  REQUIRE(wire.sent.size() >= n);
}

}  // namespace

TEST_CASE("rc: a WRITE's bytes travel in place; deregistering the source while they fly keeps them") {
  Pair p;  // 1 us of wire: the packet is in flight between its send and its arrival
  auto src = pattern(4096, 21);
  const std::vector<uint8_t> original = src;
  std::vector<uint8_t> dst(4096, 0);
  auto ks = p.reg(p.a, src);
  auto kd = p.reg(p.b, dst);
  bool in_place = false;
  p.a.wire->drop = [&](const RdmaPacket& pk) {
    in_place = pk.held != nullptr && pk.payload_data() == src.data();
    return false;
  };
  REQUIRE(p.a.hca->post_send(p.a.qpn, write_wr(src, ks.lkey, dst, kd.rkey)) == 0);
  run_until_sent(p, *p.a.wire, 1);
  CHECK(in_place);  // no copy: the packet points into the sender's buffer
  // The program deregisters and reuses its buffer before the packet has landed. Hardware
  // read the bytes when it sent them; the MR's held bytes are copied for the packet.
  REQUIRE(p.a.hca->dereg_mr(ks.lkey) == 0);
  std::fill(src.begin(), src.end(), 0xab);
  p.engine.run();
  CHECK(dst == original);
  REQUIRE(p.a.wcs.size() == 1);
  CHECK(p.a.wcs[0].wc.status == WcStatus::Success);
}

TEST_CASE("ud: a SEND completes on transmit, so its bytes are copied: reusing the buffer then is safe") {
  QpParams qp;
  qp.type = QpType::UD;
  Pair p(qp);
  auto src = pattern(1000, 4);
  const std::vector<uint8_t> original = src;
  std::vector<uint8_t> dst(2000, 0);
  auto ks = p.reg(p.a, src);
  auto kd = p.reg(p.b, dst);
  RecvWr rr;
  rr.sgl = {sge_of(dst, kd.lkey)};
  REQUIRE(p.b.hca->post_recv(p.b.qpn, rr) == 0);
  SendWr wr;
  wr.opcode = WrOpcode::Send;
  wr.send_flags = kSendSignaled;
  wr.sgl = {sge_of(src, ks.lkey)};
  wr.av.is_global = true;
  wr.av.dgid = gid_of(Pair::kIpB);
  wr.remote_qpn = p.b.qpn;
  wr.remote_qkey = 0x11111111;
  REQUIRE(p.a.hca->post_send(p.a.qpn, wr) == 0);
  while (p.a.wcs.empty() && p.engine.step()) {
  }
  REQUIRE(p.a.wcs.size() == 1);  // completed when the packet left, 1 us before it lands
  CHECK(p.b.wcs.empty());
  std::fill(src.begin(), src.end(), 0xcd);  // allowed: the send is complete
  p.engine.run();
  REQUIRE(p.b.wcs.size() == 1);
  CHECK(std::memcmp(dst.data() + 40, original.data(), 1000) == 0);  // after the 40 B GRH space
}

TEST_CASE("rc: an MR deregistered in the middle of a message fails the rest: local protection error") {
  // On a 100 Gb/s link the 16 packets of 64 KiB (MTU 4096) leave 0.33 us apart, each read
  // from the MR when it is built.
  FabricPair p(nlohmann::json::object());
  auto src = pattern(65536, 8);
  std::vector<uint8_t> dst(65536, 0);
  auto ks = p.reg(p.a, src);
  auto kd = p.reg(p.b, dst);
  auto sent = [&] { return p.a.hca->counters().tx_packets; };  // handed to the port
  REQUIRE(p.a.hca->post_send(p.a.qpn, write_wr(src, ks.lkey, dst, kd.rkey)) == 0);
  while (sent() < 2 && p.engine.step()) {
  }
  REQUIRE(sent() >= 2);
  REQUIRE(sent() < 16);
  REQUIRE(p.a.hca->dereg_mr(ks.lkey) == 0);
  p.engine.run();
  REQUIRE(p.a.wcs.size() == 1);
  CHECK(p.a.wcs[0].wc.status == WcStatus::LocProtErr);
  CHECK(sent() < 16);  // the message was not finished
  CHECK(dst != src);
}

TEST_CASE("rc: a packet spanning two SGEs gathers them; bytes from several MRs land in order") {
  Pair p;
  auto lo = pattern(3000, 1), hi = pattern(3000, 99);
  std::vector<uint8_t> dst(6000, 0);
  auto kl = p.reg(p.a, lo);
  auto kh = p.reg(p.a, hi);
  auto kd = p.reg(p.b, dst);
  SendWr wr = write_wr(lo, kl.lkey, dst, kd.rkey);
  wr.sgl = {sge_of(lo, kl.lkey), sge_of(hi, kh.lkey)};  // packet 1: 3000 + 1096 B, packet 2: 1904 B
  std::vector<bool> held;
  p.a.wire->drop = [&](const RdmaPacket& pk) {
    held.push_back(pk.held != nullptr);
    return false;
  };
  REQUIRE(p.a.hca->post_send(p.a.qpn, wr) == 0);
  p.engine.run();
  REQUIRE(p.a.wcs.size() == 1);
  CHECK(p.a.wcs[0].wc.status == WcStatus::Success);
  CHECK(std::equal(lo.begin(), lo.end(), dst.begin()));
  CHECK(std::equal(hi.begin(), hi.end(), dst.begin() + 3000));
  // The first packet crosses the SGE boundary (gathered into its own buffer); the second
  // lies inside `hi` (held in place).
  CHECK(held == std::vector<bool>{false, true});
}
