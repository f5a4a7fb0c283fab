// DCQCN end to end: two RC flows (real HCAs, a Fabric built from JSON) into one 100 Gb/s
// port of a switch with ECN marking and PFC: RDMA WRITEs from s1 and s2 to r, or RDMA READs
// by r from s1 and s2 (the data still flows s -> r: READ responses, paced by the
// responders' controllers).
#include <doctest/doctest.h>

#include <algorithm>
#include <functional>
#include <memory>
#include <vector>

#include <nlohmann/json.hpp>

#include "sim/core/engine.h"
#include "sim/nic/cc_json.h"
#include "sim/topo/fabric.h"
#include "tests/unit/cc/cc_fixture.h"

namespace rdmasim::nic {
namespace {

using nlohmann::json;

constexpr uint32_t kMsg = 64 * 1024;  // bytes per RDMA WRITE or READ
constexpr int kOutstanding = 16;      // WRs each flow keeps posted (READs: 4 in flight, the
                                      // QPs' max_rd_atomic)

// The switch marks ECN (RED, the DCQCN paper's Kmin 5 KB, Kmax 200 KB, Pmax 1%) and sends
// PFC pauses when an ingress port holds more than 300 KB of one class (XON at 250 KB).
json star_config(const json& cc, uint64_t seed) {
  const json sw = {{"queue_kb", 4096},
                   {"ecn", {{"enabled", true}, {"kmin_kb", 5}, {"kmax_kb", 200}, {"pmax", 0.01}}},
                   {"pfc", {{"enabled", true}, {"xoff_kb", 300}, {"xon_kb", 250}}}};
  return cctest::star3_config(sw, cc, seed);
}

struct Result {
  double gbps[2] = {0, 0};     // each flow's goodput over the second half of the run
  uint64_t pauses = 0;         // PFC frames the switch sent in the second half
  uint64_t max_queue = 0;      // bytes toward r in the switch, max over the second half
  double mean_queue = 0;       // and its mean
  uint64_t cnps = 0;           // CNPs r sent
  json cc;                     // the cc reports of s1 and s2 (senders or READ responders)
};

uint64_t pauses_sent(const json& c) {
  uint64_t n = 0;
  for (int p = 0; p < 3; ++p) n += c["sw0/" + std::to_string(p)]["pauses_sent"].get<uint64_t>();
  return n;
}

// `cc`: the NICs' "cc" object (null: none). `read`: r READs from s1 and s2 instead of s1
// and s2 WRITing to r. `seed`: the fabric's and engine's (ECN marking draws).
Result run_two_flows(const json& cc, Time run, bool read = false, uint64_t seed = 7) {
  Engine engine(seed);
  auto fabric = topo::Fabric::build(engine, star_config(cc, seed));
  const auto& nics = fabric->nics();
  REQUIRE(nics.size() == 3);
  auto hca = cctest::attach_hcas(engine, *fabric);
  LocalMemory mem;
  Hca& r = *hca[2];
  uint32_t rpd = 0;
  REQUIRE(r.alloc_pd(&rpd) == 0);
  std::vector<uint8_t> sink(kMsg), src(kMsg, 0x33);
  MrKeys rk;
  const auto sink_addr = reinterpret_cast<uint64_t>(sink.data());
  REQUIRE(r.reg_mr(rpd, &mem, sink_addr, kMsg, sink_addr,
                   kAccessLocalWrite | kAccessRemoteWrite, &rk) == 0);
  // WRITE: completions on the senders' CQs; READ: on r's CQ, routed by QP number.
  std::vector<std::function<void(const Completion&)>> on_read_done;
  std::vector<uint32_t> read_qpn;
  uint32_t rcq = 0;
  REQUIRE(r.create_cq(1024, [&](const Completion& c) {
    for (size_t i = 0; i < read_qpn.size(); ++i)
      if (read_qpn[i] == c.qp_num) on_read_done[i](c);
  }, &rcq) == 0);

  struct Flow {
    uint32_t qpn = 0, pd = 0, cq = 0, lkey = 0, rkey = 0;
    uint32_t rq = 0;         // the flow's QP on r
    std::vector<Time> done;  // completion times of the WRs
  };
  Flow flow[2];
  const auto src_addr = reinterpret_cast<uint64_t>(src.data());
  for (int f = 0; f < 2; ++f) {
    Hca& s = *hca[f];
    Flow& fl = flow[f];
    auto done = [&engine, &fl](const Completion& c, std::function<void()> repost) {
      REQUIRE(c.status == WcStatus::Success);
      fl.done.push_back(engine.now());
      engine.schedule_in(0, std::move(repost));  // sinks must not post; repost from the engine
    };
    auto post_write = [&s, &fl, &rk, src_addr, sink_addr] {
      REQUIRE(s.post_send(fl.qpn, cctest::rdma_wr(WrOpcode::RdmaWrite, src_addr, kMsg, fl.lkey,
                                                  sink_addr, rk.rkey)) == 0);
    };
    auto post_read = [&r, &fl, &rk, src_addr, sink_addr] {
      REQUIRE(r.post_send(fl.rq, cctest::rdma_wr(WrOpcode::RdmaRead, sink_addr, kMsg, rk.lkey,
                                                 src_addr, fl.rkey)) == 0);
    };
    fl.qpn = cctest::make_rc_qp(s, &fl.pd, &fl.cq, [done, post_write](const Completion& c) {
      done(c, post_write);
    });
    MrKeys k;
    REQUIRE(s.reg_mr(fl.pd, &mem, src_addr, kMsg, src_addr,
                     kAccessLocalWrite | kAccessRemoteRead, &k) == 0);
    fl.lkey = k.lkey;
    fl.rkey = k.rkey;
    fl.rq = cctest::add_rc_qp(r, rpd, rcq);  // the flow's QP on r
    read_qpn.push_back(fl.rq);
    on_read_done.push_back([done, post_read](const Completion& c) { done(c, post_read); });
    cctest::connect_rc(s, fl.qpn, fl.rq, nics[2].address);
    cctest::connect_rc(r, fl.rq, fl.qpn, nics[f].address);
    for (int i = 0; i < kOutstanding; ++i) read ? post_read() : post_write();
  }

  // The switch's backlog toward r: bytes that arrived from s1 and s2 minus bytes that left
  // toward r (switch ports follow link order: 0 = s1, 1 = s2, 2 = r). It includes at most
  // the packets in forwarding and on the wire's serializer, a few KB.
  Result res;
  double queue_sum = 0;
  uint64_t queue_n = 0;
  engine.run_until(run / 2);
  const uint64_t pauses_at_half = pauses_sent(fabric->counters());
  for (Time t = run / 2; t <= run; t += us(2)) {
    engine.run_until(t);
    const json c = fabric->counters();
    const uint64_t in = c["sw0/0"]["rx_bytes"].get<uint64_t>() + c["sw0/1"]["rx_bytes"].get<uint64_t>();
    const uint64_t out = c["sw0/2"]["tx_bytes"].get<uint64_t>();
    const uint64_t q = in > out ? in - out : 0;
    res.max_queue = std::max(res.max_queue, q);
    queue_sum += static_cast<double>(q);
    ++queue_n;
  }
  res.mean_queue = queue_sum / static_cast<double>(queue_n);
  for (int f = 0; f < 2; ++f) {
    const auto n = std::count_if(flow[f].done.begin(), flow[f].done.end(),
                                 [run](Time t) { return t >= run / 2; });
    res.gbps[f] = static_cast<double>(n) * kMsg * 8 / to_seconds(run / 2) / 1e9;
  }
  res.pauses = pauses_sent(fabric->counters()) - pauses_at_half;
  res.cnps = r.counters().cnps_sent;
  res.cc = {cc_report_json(*hca[0]), cc_report_json(*hca[1])};
  return res;
}

// The `paper` preset unchanged. Run length: after the first CNPs (initial alpha 1: each cut
// halves the rate) both flows sit near 30 Gb/s, and the paper's increase is slow at 100 Gb/s:
// hyper increase needs more than F = 5 byte-counter events of B = 10 MB (50 MB, ~13 ms at
// 30 Gb/s, and every cut restarts the count), so the rate climbs by additive increase,
// R_AI = 40 Mb/s per T = 55 us timer event, 0.73 Gb/s per ms: from 30 to 49 Gb/s takes
// ~26 ms (at 10 ms the flows averaged 29.7 + 29.7 Gb/s: still climbing). After that the
// split between the two is a random walk driven by which flow's packets get the (rare:
// ~0.15% at the ~35 KB mean backlog) marks; a flow ahead draws more marks and more cuts,
// which pulls the two together only over many CNP intervals. Measured second-half
// averages over seeds 1..4 and 7: at 50 ms the slower flow ranged 44.4..48.7 Gb/s (one seed
// outside the band), at 100 ms 46.1..47.8 Gb/s; so 100 ms, and three seeds, so that one
// lucky seed cannot pass the test alone.
constexpr Time kWriteRun = ms(100);
constexpr uint64_t kSeeds[] = {7, 1, 4};
// Without DCQCN the system is in its steady state (PFC holding the senders) within
// microseconds; 10 ms is enough to count pauses.
constexpr Time kBaselineRun = ms(10);

const json kPaper = {{"algorithm", "dcqcn"}, {"preset", "paper"}};

// PFC frames per simulated ms over the second half of a run.
double pause_rate(const Result& r, Time run) { return static_cast<double>(r.pauses) / (to_seconds(run / 2) * 1e3); }

TEST_CASE("dcqcn: two flows into one 100 Gb/s port share it fairly, with a bounded queue and fewer PFC pauses") {
  const Result without = run_two_flows(nullptr, kBaselineRun);
  for (const uint64_t seed : kSeeds) {
    CAPTURE(seed);
    const Result with = run_two_flows(kPaper, kWriteRun, false, seed);
    MESSAGE("dcqcn: " << with.gbps[0] << " + " << with.gbps[1] << " Gb/s, pauses " << with.pauses
                      << ", queue mean " << with.mean_queue << " max " << with.max_queue
                      << " B, CNPs " << with.cnps);
    MESSAGE("none:  " << without.gbps[0] << " + " << without.gbps[1] << " Gb/s, pauses "
                      << without.pauses << ", queue mean " << without.mean_queue << " max "
                      << without.max_queue << " B");
    // Fair share: each within 10% of 50 Gb/s (the 100 Gb/s port split in two). Goodput counts
    // payload only, so the ceiling is 100 * 4096 / (4096 + 78) = 98.1 Gb/s of payload per
    // port; 45..55 still holds for a fair split of it (49.07 each).
    for (double g : with.gbps) {
      CHECK(g >= 45.0);
      CHECK(g <= 55.0);
    }
    CHECK(with.cnps > 0);
    // Bounded queue: DCQCN keeps the backlog toward r in the ECN marking band: its mean below
    // Kmax (200 KB, above which every packet is marked) and its maximum below the PFC limit
    // of the two ingress ports (2 x 300 KB XOFF), so the queue is held by DCQCN, not by PFC.
    CHECK(with.mean_queue < 200.0 * 1024);
    CHECK(with.max_queue < 2 * 300 * 1024);
    // PFC: without CC the two line-rate senders overrun the port and are paused; with DCQCN
    // pauses are rarer (per simulated ms, over each run's second half).
    CHECK(without.pauses > 0);
    CHECK(pause_rate(with, kWriteRun) < pause_rate(without, kBaselineRun));
    // The per-QP rate series is observable: both senders' QPs were cut and have samples.
    for (const json& hj : with.cc) {
      REQUIRE(hj.size() == 1);
      CHECK(hj[0]["algorithm"] == "dcqcn");
      CHECK(hj[0]["rate_cuts"].get<uint64_t>() > 0);
      CHECK(hj[0]["samples"].size() > 2);
    }
  }
}

TEST_CASE("dcqcn: READ responses are paced by the responder's rate, which CNPs from the requester cut") {
  // r READs from s1 and s2: the responses converge on r's port. r is the notification point
  // for them (it sees their CE marks and sends CNPs to the responders' QPs); s1 and s2 are
  // the reaction points and pace their READ responses. 10 ms: the first cuts happen within
  // the first tens of microseconds; this checks the cut and its effect, not convergence.
  const Result with = run_two_flows(kPaper, kBaselineRun, true);
  const Result without = run_two_flows(nullptr, kBaselineRun, true);
  MESSAGE("dcqcn READ: " << with.gbps[0] << " + " << with.gbps[1] << " Gb/s, pauses " << with.pauses
                         << ", queue mean " << with.mean_queue << " max " << with.max_queue
                         << " B, CNPs " << with.cnps);
  MESSAGE("none READ:  " << without.gbps[0] << " + " << without.gbps[1] << " Gb/s, pauses "
                         << without.pauses << ", queue mean " << without.mean_queue << " max "
                         << without.max_queue << " B");
  CHECK(with.cnps > 0);  // r sent CNPs for CE-marked READ responses
  for (const json& hj : with.cc) {
    // The responder QP (the only QP with a controller on s1 / s2) was cut below the line
    // rate: its series has a sample under 100 Gb/s after a CNP.
    REQUIRE(hj.size() == 1);
    CHECK(hj[0]["cnps_received"].get<uint64_t>() > 0);
    CHECK(hj[0]["rate_cuts"].get<uint64_t>() > 0);
    double lowest = 100;
    for (const json& smp : hj[0]["samples"]) lowest = std::min(lowest, smp[1].get<double>());
    CHECK(lowest < 100.0 * 0.75);
  }
  // The cut takes effect. Without CC the READs are held back only by their window: 2 flows
  // x 4 READs (max_rd_atomic) x 64 KiB = 512 KiB in flight, less ~40 KB on the wires
  // (100 Gb/s x ~3.2 us round trip), so the backlog toward r sits above Kmax (200 KB). With
  // paced responses DCQCN holds it in the marking band: mean below Kmax.
  CHECK(without.mean_queue > 200.0 * 1024);
  CHECK(with.mean_queue < 200.0 * 1024);
  CHECK(with.max_queue < 2 * 300 * 1024);
  // And the flows still move data: at least a quarter of the port each (the paper preset is
  // slow to climb back, see kWriteRun; this is not a fairness check).
  for (double g : with.gbps) CHECK(g > 25.0);
}

}  // namespace
}  // namespace rdmasim::nic
