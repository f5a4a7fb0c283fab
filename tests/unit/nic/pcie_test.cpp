// The HCA on its host's PCIe link (sim/nic/pcie_hooks.cpp) on the default fabric: server and
// client on 100 Gb/s links of 400 ns to one switch (200 ns), MTU 4096, PCIe Gen3 x16.
#include <doctest/doctest.h>

#include "tests/unit/nic/fabric_pair.h"

using namespace rdmasim;
using namespace rdmasim::nic;
using namespace rdmasim::nic::test;

namespace {

constexpr uint32_t kMiB = 1 << 20;

SendWr write_of(std::vector<uint8_t>& src, MrKeys ks, std::vector<uint8_t>& dst, MrKeys kd,
                uint32_t len, uint64_t id) {
  SendWr wr;
  wr.wr_id = id;
  wr.opcode = WrOpcode::RdmaWrite;
  wr.send_flags = kSendSignaled;
  wr.sgl = {sge_of(src, ks.lkey, 0, len)};
  wr.remote_addr = reinterpret_cast<uint64_t>(dst.data());
  wr.rkey = kd.rkey;
  return wr;
}

// A RoCEv2 WRITE packet of 4096 B on the wire: 4096 + 20 IPv4 + 8 UDP + 12 BTH + 4 ICRC +
// 38 Ethernet (14 MAC, 4 FCS, 8 preamble, 12 IFG) = 4178 B; the First packet adds a 16 B RETH.
constexpr double kStreamNs = (256.0 * 4178 + 16) * 8 / 100;  // 1 MiB at 100 Gb/s: 85.57 us

}  // namespace

TEST_CASE("pcie: a 1 MiB WRITE streams at the link's rate; its payload is read a packet at a time") {
  FabricPair p(nlohmann::json::object(), {}, 5, /*pcie=*/true);
  std::vector<uint8_t> src = pattern(kMiB, 3), dst(kMiB);
  const MrKeys ks = p.reg(p.a, src), kd = p.reg(p.b, dst);
  const uint64_t before = p.a.hca->pcie().transactions();
  const auto& wcs = p.post_and_run(p.a, write_of(src, ks, dst, kd, kMiB, 1));
  REQUIRE(wcs.size() == 1);
  CHECK(wcs[0].wc.status == WcStatus::Success);
  CHECK(dst == src);
  // The wire is the bound: the read-ahead (16 KiB, 4 packets) covers a PCIe read round trip
  // (about 0.7 us with the bytes) and Gen3 x16 (126 Gb/s) outruns the port. What comes on
  // top: the doorbell, WQE fetch and first read (about 1 us), the last packet's second
  // serialisation and the path (0.33 + 2 x 0.4 + 0.2 us), the ACK back (about 1.2 us) and
  // the CQE write: under 5 us in all. A stream held between packets by its reads would
  // lose 0.3 us or more per packet (76 us over 256).
  const double done = static_cast<double>(wcs[0].at) / kNanosecond;
  CHECK(done > kStreamNs);
  CHECK(done < kStreamNs + 5000);
  // Its transactions: doorbell, WQE fetch, one payload read per packet (256), the CQE write.
  CHECK(p.a.hca->pcie().transactions() - before == 1 + 1 + 256 + 1);
}

TEST_CASE("pcie: a small WRITE on another QP is not held behind a long message's DMA") {
  FabricPair p(nlohmann::json::object(), {}, 5, /*pcie=*/true);
  const QpParams q;
  const uint32_t a2 = p.add_qp(p.a, q), b2 = p.add_qp(p.b, q);
  p.connect_qp(p.a, a2, b2, p.addr_b, q);
  p.connect_qp(p.b, b2, a2, p.addr_a, q);
  std::vector<uint8_t> src = pattern(kMiB, 5), dst(kMiB), small_src = pattern(64, 9), small_dst(64);
  const MrKeys ks = p.reg(p.a, src), kd = p.reg(p.b, dst);
  const MrKeys kss = p.reg(p.a, small_src), ksd = p.reg(p.b, small_dst);
  REQUIRE(p.a.hca->post_send(p.a.qpn, write_of(src, ks, dst, kd, kMiB, 1)) == 0);
  REQUIRE(p.a.hca->post_send(a2, write_of(small_src, kss, small_dst, ksd, 64, 2)) == 0);
  p.engine.run();
  REQUIRE(p.a.wcs.size() == 2);
  const TimedCompletion& small = p.a.wcs[0].wc.wr_id == 2 ? p.a.wcs[0] : p.a.wcs[1];
  CHECK(small.wc.status == WcStatus::Success);
  CHECK(small_dst == small_src);
  // Its doorbell passes the big message's read completions (posted writes may pass them),
  // its fetch and read wait for at most the read-ahead window (16 KiB: 1.1 us), and its one
  // packet shares the port with the stream (round robin): a few us. Had the big message's
  // 1 MiB been read at once, the small WRITE would wait for those completions (1 MiB x
  // 276 / 256 B at 126 Gb/s = 71.8 us) before its WQE could even be fetched.
  CHECK(small.at < us(8));
}
