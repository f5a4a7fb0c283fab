// A congested run captured for tshark (tests/integration/pcap_congestion.sh): s1 and s2 each
// RDMA WRITE 1 MiB to r through one switch, all links 100 Gb/s, DCQCN (paper preset), ECN
// and PFC on, every egress port captured. The two line-rate senders overrun r's port, so
// the switch pauses them (PFC XOFF at 40 KB of an ingress port) and marks packets (ECN:
// Kmax 50 KB, so a queue held by PFC at ~2 x 40 KB marks every packet), and r sends CNPs.
// The engine runs until nothing is left (every packet and CNP has left its port), then
// <dir>/expect.sh gets the fabric's own counts for the script to compare with the captures.
//
// Run by the script with PCAP_CONGESTION_DIR set; doctest for REQUIRE and the cc fixtures.
#include <doctest/doctest.h>

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "sim/core/engine.h"
#include "sim/topo/fabric.h"
#include "sim/trace/capture.h"
#include "tests/unit/cc/cc_fixture.h"

namespace rdmasim::nic {
namespace {

using nlohmann::json;

constexpr uint32_t kMsg = 64 * 1024;
constexpr int kWrites = 16;  // per sender: 1 MiB

TEST_CASE("pcap_congestion: a congested DCQCN + PFC run, captured") {
  const char* dir = std::getenv("PCAP_CONGESTION_DIR");
  REQUIRE_MESSAGE(dir != nullptr, "set PCAP_CONGESTION_DIR (run by pcap_congestion.sh)");
  const json sw = {{"queue_kb", 4096},
                   {"ecn", {{"enabled", true}, {"kmin_kb", 5}, {"kmax_kb", 50}, {"pmax", 0.2}}},
                   {"pfc", {{"enabled", true}, {"xoff_kb", 40}, {"xon_kb", 20}}}};
  const json cfg = cctest::star3_config(sw, {{"algorithm", "dcqcn"}, {"preset", "paper"}}, 3);
  Engine engine(3);
  auto fabric = topo::Fabric::build(engine, cfg);
  const auto& nics = fabric->nics();
  REQUIRE(nics.size() == 3);
  auto hca = cctest::attach_hcas(engine, *fabric);
  auto capture = std::make_unique<trace::Capture>(*fabric, dir, topo::CapturePorts::All);

  LocalMemory mem;
  Hca& r = *hca[2];
  uint32_t rpd = 0, rcq = 0;
  REQUIRE(r.alloc_pd(&rpd) == 0);
  std::vector<uint8_t> sink(kMsg), src(kMsg, 0x5a);
  const auto sink_addr = reinterpret_cast<uint64_t>(sink.data());
  const auto src_addr = reinterpret_cast<uint64_t>(src.data());
  MrKeys rk;
  REQUIRE(r.reg_mr(rpd, &mem, sink_addr, kMsg, sink_addr, kAccessLocalWrite | kAccessRemoteWrite, &rk) == 0);
  REQUIRE(r.create_cq(1024, [](const Completion&) {}, &rcq) == 0);
  uint32_t qpn[2] = {0, 0};
  int completed = 0;
  for (int f = 0; f < 2; ++f) {
    Hca& s = *hca[f];
    uint32_t pd = 0, cq = 0;
    qpn[f] = cctest::make_rc_qp(s, &pd, &cq, [&completed](const Completion& c) {
      REQUIRE(c.status == WcStatus::Success);
      ++completed;
    });
    MrKeys k;
    REQUIRE(s.reg_mr(pd, &mem, src_addr, kMsg, src_addr, kAccessLocalWrite, &k) == 0);
    const uint32_t rq = cctest::add_rc_qp(r, rpd, rcq);
    cctest::connect_rc(s, qpn[f], rq, nics[2].address);
    cctest::connect_rc(r, rq, qpn[f], nics[f].address);
    for (int i = 0; i < kWrites; ++i)
      REQUIRE(s.post_send(qpn[f], cctest::rdma_wr(WrOpcode::RdmaWrite, src_addr, kMsg, k.lkey,
                                                  sink_addr, rk.rkey)) == 0);
  }
  engine.run();  // to the end: DCQCN's timers stop once the senders are back at line rate
  CHECK(completed == 2 * kWrites);
  capture->flush();
  capture.reset();

  const json c = fabric->counters();
  std::FILE* out = std::fopen((std::string(dir) + "/expect.sh").c_str(), "w");
  REQUIRE(out != nullptr);
  std::fprintf(out, "CNPS=%llu\n", static_cast<unsigned long long>(r.counters().cnps_sent));
  // Each CNP goes to the sender of the marked packets: (IP destination, BTH dest QP) pairs,
  // in the order `sort -u` gives (s1 = 127.0.1.1 before s2 = 127.0.1.2).
  auto ip = [](uint32_t a) {
    return std::to_string(a >> 24) + "." + std::to_string((a >> 16) & 255) + "." +
           std::to_string((a >> 8) & 255) + "." + std::to_string(a & 255);
  };
  std::fprintf(out, "CNP_DESTS='%s,0x%06x %s,0x%06x'\n", ip(nics[0].address).c_str(), qpn[0],
               ip(nics[1].address).c_str(), qpn[1]);
  std::fprintf(out, "R_IP=%s\n", ip(nics[2].address).c_str());
  // Switch ports follow link order: 0 -> s1, 1 -> s2, 2 -> r, so switch port p and NIC p are
  // the two ends of link p. Data runs in class 0.
  for (int p = 0; p < 3; ++p) {
    const std::string nic = nics[p].host + "/" + nics[p].device;
    std::fprintf(out, "PAUSES_%d=%llu\nNIC_PAUSES_%d=%llu\n", p,
                 static_cast<unsigned long long>(c["sw0/" + std::to_string(p)]["pauses_sent"].get<uint64_t>()), p,
                 static_cast<unsigned long long>(c[nic]["pauses_sent"].get<uint64_t>()));
  }
  std::fclose(out);
  // The run is congested as intended: both mechanisms fired.
  CHECK(r.counters().cnps_sent > 0);
  CHECK(c["sw0/0"]["pauses_sent"].get<uint64_t>() > 0);
}

}  // namespace
}  // namespace rdmasim::nic
