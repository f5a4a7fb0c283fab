// TIMELY, Swift and DCTCP scenarios run as the shipped studies
// (configs/studies/{timely,swift,dctcp}_{converge,incast}.json): 2 flows into one 100 Gb/s
// port (the second from 2 ms) converge to the fair share, and a 15:1 incast of 2,000,000 B
// per sender, beside DCQCN on the same fabric (dcqcn_incast_hpcc.json).
//
// The fabric (all studies): 100 Gb/s links of 1 us, a 200 ns switch, 4096 B MTU, so a full
// data packet is 4096 + 44 + 38 = 4178 B on the wire (IPv4, UDP, BTH, ICRC; Ethernet header,
// FCS, preamble and gap: configs/README.md), 334.24 ns, and the base RTT from handing a
// packet to the NIC's port to handling its ACK is 4 x 1 us + 2 x 0.2 us + 2 x 334.24 ns of
// data serialization + 2 x 100 ns NIC receive + ~13 ns for the ACK's serialization = 5.28 us,
// of which 0.2 us in the NICs (Swift's endpoint delay): a base fabric delay of 5.08 us.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "lib/study/study.h"
#include "tests/unit/cc/study_helpers.h"

namespace rdmasim::study {
namespace {

using namespace cc_test;

constexpr double kPacket = 4096 + 82;         // wire bytes of a full data packet
constexpr double kPortBytesPerSec = 100e9 / 8;
constexpr double kBaseRtt = 5.28e-6;
constexpr double kBaseFabric = 5.08e-6;
// Fair share of the port's payload rate: 100 x 4096 / 4178 / 2 = 49.02 Gb/s.
constexpr double kFair = 100.0 * 4096 / kPacket / 2;

// The queue samples cover the first 10 ms (the study's series cap); flows converge by 4 ms.
std::vector<uint64_t> converged_queue(const StudyResult& r) { return queue_bytes(r, ms(4), ms(10)); }

uint64_t max_of(const std::vector<uint64_t>& v) { return *std::max_element(v.begin(), v.end()); }

// The incast's queue once the first RTTs' burst (every sender at line rate) has drained,
// until the last flow is about to end.
std::vector<uint64_t> incast_queue(const StudyResult& r) {
  return queue_bytes(r, ms(1), last_finish(r) - us(100));
}

// Line-rate bound of the incast: 15 x 2,000,000 B in 489 packets of at least 82 B overhead.
const double kIncastLineMs = 15.0 * (2'000'000 + 489 * 82) * 8 / 100e9 * 1e3;  // 2.448 ms

double incast_ms(const StudyResult& r) { return to_seconds(last_finish(r)) * 1e3; }

double dcqcn_incast_ms() {
  static const double v = [] {
    const StudyResult d = run(load("dcqcn_incast_hpcc.json"));
    REQUIRE(d.ok);
    return incast_ms(d);
  }();
  return v;
}

TEST_CASE("ack samples: the RTT of a lone 4096 B WRITE is the path's delays and serializations") {
  nlohmann::json j = load("swift_converge.json");
  j["flows"] = nlohmann::json::parse(R"([{"name": "one", "src": "s1", "dst": "r", "bytes": 4096,
                                          "message_bytes": 4096}])");
  const StudyResult r = run(j);
  REQUIRE(r.ok);
  const nlohmann::json& cc = r.counters["hcas"]["s1/mlx5_0"]["cc"];
  REQUIRE(cc.size() == 1);
  // WRITE ONLY: 4096 + 82 + 16 (RETH) = 4194 B, 335.52 ns at 100 Gb/s, serialized by the NIC
  // and the switch; the ACK (AETH: 14 + 20 + 8 + 12 + 4 + 4 + 4 + 20 = 86 B) 6.88 ns twice;
  // 4 x 1 us of links, 2 x 200 ns of switch, 2 x 100 ns of NIC receive: 5.2848 us.
  const double rtt_us = 4 + 0.4 + 2 * 4194 * 8 / 100e3 + 2 * 86 * 8 / 100e3 + 0.2;
  CHECK(cc[0]["rtt_us"].get<double>() == doctest::Approx(rtt_us).epsilon(1e-9));
  // The first sample sets Swift's window to 100 Gb/s x 5.3 us / 4194 B = 15.80 packets and
  // adds ai / cwnd (the fabric delay, 5.08 us, is under the 6 us + scaling target).
  const double w0 = 100e9 * 5.3e-6 / 8 / 4194;
  CHECK(cc[0]["alpha"].get<double>() == doctest::Approx(w0 + 1 / w0));
}

TEST_CASE("timely 2-flow convergence: fair share, queueing delay below T_high") {
  const StudyResult r = run(load("timely_converge.json"));
  REQUIRE(r.ok);
  CHECK(drops(r) == 0);
  // Within the T_low..T_high band TIMELY's increase is additive (N x delta per RTT, the same
  // for both flows) and its decrease multiplicative (1 - beta x gradient, the same gradient
  // for both): AIMD, which converges to the fair share.
  check_fair_share(r, kFair);
  // Above T_high every update cuts: the queue's delay stays below T_high - base RTT, (30 -
  // 5.28) us x 12.5 GB/s = 309,000 B.
  const auto q = converged_queue(r);
  MESSAGE("queue 4..10 ms: mean " << mean_bytes(q) << " B, max " << max_of(q) << " B");
  CHECK(static_cast<double>(max_of(q)) <= (30e-6 - kBaseRtt) * kPortBytesPerSec);
}

TEST_CASE("swift 2-flow convergence: fair share, queue at the flow-scaled target delay") {
  const StudyResult r = run(load("swift_converge.json"));
  REQUIRE(r.ok);
  CHECK(drops(r) == 0);
  check_fair_share(r, kFair);
  // The fixed point of section 3.1: each flow's fabric delay d equals its target 5 us + 1 hop
  // x 1 us + clamp(a / sqrt(w) + b, 0, 25 us) with a = 25 us / (1/sqrt(0.1) - 1/sqrt(100)),
  // b = -a / 10, at the window w = 50 Gb/s x (d + 0.2 us) / 4178 B. Iterated: d = 7.58 us,
  // w = 11.6 packets; the queue is (d - 5.08 us) x 12.5 GB/s = 31,214 B.
  const double a = 25e-6 / (1 / std::sqrt(0.1) - 1 / std::sqrt(100.0)), b = -a / 10;
  double d = 8e-6;
  for (int i = 0; i < 200; ++i) {
    const double w = kPortBytesPerSec / 2 * (d + 0.2e-6) / kPacket;
    d = 0.5 * d + 0.5 * (6e-6 + std::clamp(a / std::sqrt(w) + b, 0.0, 25e-6));
  }
  const double expected = (d - kBaseFabric) * kPortBytesPerSec;
  const auto q = converged_queue(r);
  MESSAGE("queue 4..10 ms: mean " << mean_bytes(q) << " B (target " << expected << " B), max "
                                  << max_of(q) << " B");
  // Within 20%: the paced windows move by ai/w per ACK and the samples see whole packets.
  CHECK(mean_bytes(q) == doctest::Approx(expected).epsilon(0.2));
}

// DCTCP's analysis (section 3.3), in packets: with N flows, BDP C x RTT and marking threshold
// K, the queue's sawtooth peaks at Q_max = K + N and has amplitude A = (1/2) sqrt(2N(C x RTT
// + K)), so it runs between Q_max - A and Q_max.
struct DctcpBand {
  double q_min, q_max;  // bytes
};
DctcpBand dctcp_band(double n) {
  const double bdp = kPortBytesPerSec * kBaseRtt / kPacket;  // 15.8 packets
  const double k = 32768 / kPacket;                          // K = 32 KiB = 7.84 packets
  // The paper's guidance K > C x RTT / 7 holds: 7.84 > 2.26.
  CHECK(k > bdp / 7);
  const double q_max = k + n, amp = 0.5 * std::sqrt(2 * n * (bdp + k));
  return {(q_max - amp) * kPacket, q_max * kPacket};
}

TEST_CASE("dctcp 2-flow convergence: fair share, queue in the paper's K + N sawtooth band") {
  const StudyResult r = run(load("dctcp_converge.json"));
  REQUIRE(r.ok);
  CHECK(drops(r) == 0);
  check_fair_share(r, kFair);
  // N = 2: Q_max = 7.84 + 2 = 9.84 packets = 41,124 B, A = 4.86 packets: Q_min = 20,810 B.
  const DctcpBand band = dctcp_band(2);
  const auto q = converged_queue(r);
  MESSAGE("queue 4..10 ms: mean " << mean_bytes(q) << " B (band " << band.q_min << ".." << band.q_max
                                  << "), max " << max_of(q) << " B");
  CHECK(mean_bytes(q) >= band.q_min);
  CHECK(mean_bytes(q) <= band.q_max);
}

TEST_CASE("timely, swift, dctcp 15:1 incast: lossless, no slower than DCQCN, bounded queues") {
  const double dcqcn = dcqcn_incast_ms();
  for (const char* name : {"timely_incast.json", "swift_incast.json", "dctcp_incast.json"}) {
    CAPTURE(name);
    const StudyResult r = run(load(name));
    REQUIRE(r.ok);
    CHECK(drops(r) == 0);  // PFC: lossless
    const auto q = incast_queue(r);
    MESSAGE(std::string(name) << ": last FCT " << incast_ms(r) << " ms (DCQCN " << dcqcn << ", line "
                 << kIncastLineMs << "), queue 1 ms..end mean " << mean_bytes(q) << " B, max "
                 << max_of(q) << " B");
    CHECK(incast_ms(r) >= kIncastLineMs);
    // All three keep the queue near their own operating point instead of DCQCN's standing
    // queue above Kmin = 400 KB, so the port idles no more than under DCQCN.
    CHECK(incast_ms(r) <= dcqcn);
    const std::string n = name;
    if (n == "timely_incast.json") {
      // Below T_high: (30 - 5.28) us x 12.5 GB/s = 309,000 B.
      CHECK(mean_bytes(q) <= (30e-6 - kBaseRtt) * kPortBytesPerSec);
    } else if (n == "swift_incast.json") {
      // Below the largest target the flow scaling allows: (5 + 1 + 25 - 5.08) us x 12.5 GB/s
      // = 324,000 B (15 flows at ~2 packets each sit at a target of ~10.7 us: 70 KB).
      CHECK(mean_bytes(q) <= (31e-6 - kBaseFabric) * kPortBytesPerSec);
    } else {
      // N = 15: Q_max = 7.84 + 15 = 22.84 packets = 95,438 B, Q_min = 39,806 B.
      const DctcpBand band = dctcp_band(15);
      CHECK(mean_bytes(q) >= band.q_min);
      CHECK(mean_bytes(q) <= band.q_max);
    }
  }
}

}  // namespace
}  // namespace rdmasim::study
