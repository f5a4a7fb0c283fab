// Loss recovery without PFC as the shipped studies (configs/studies/{irn,gbn}_incast_lossy.json):
// a 15:1 incast of 2,000,000 B WRITEs into a lossy switch port (queue_kb 1024, no PFC, no
// congestion control), recovered by IRN (selective repeat with BDP flow control; Mittal et
// al., SIGCOMM 2018) and by the IBTA's go-back-N.
#include <doctest/doctest.h>

#include <nlohmann/json.hpp>

#include "lib/study/study.h"
#include "tests/unit/cc/study_helpers.h"

namespace rdmasim::study {
namespace {

using nlohmann::json;
using namespace cc_test;

uint64_t hca_sum(const StudyResult& r, const char* key) {
  uint64_t n = 0;
  for (const auto& [name, h] : r.counters["hcas"].items()) n += h[key].get<uint64_t>();
  return n;
}

TEST_CASE("irn 15:1 incast without PFC: BDP flow control keeps the port lossless, at line rate") {
  const StudyResult r = run(load("irn_incast_lossy.json"));
  REQUIRE(r.ok);
  // BDP-FC: each sender keeps at most 16 packets in flight (bdp_packets), so the port can
  // hold at most 15 x 16 x 4194 B = 1,006,560 B (a full packet with IRN's RETH on the wire)
  // of it: less than its 1024 KiB = 1,048,576 B queue. Nothing is dropped or resent.
  CHECK(drops(r) == 0);
  CHECK(hca_sum(r, "retransmitted_packets") == 0);
  // And the port never idles: each flow is 488 packets of 4096 B and one of 1152 B, 4194
  // and 1250 B on the wire (BTH 12, RETH 16, ICRC 4, Ethernet/IPv4/UDP/FCS 46, preamble and
  // gap 20), so 15 x (488 x 4194 + 1250) B at 100 Gb/s = 2457.5 us; the first packet's
  // trip and the last ACK's add a few us (2 links of 1 us each way).
  const double line_us = 15.0 * (488 * 4194 + 1250) * 8 / 100e9 * 1e6;
  const double last_us = to_seconds(last_finish(r)) * 1e6;
  MESSAGE("irn last FCT " << last_us << " us, line rate " << line_us << " us");
  CHECK(last_us >= line_us);
  CHECK(last_us <= line_us + 10);
}

TEST_CASE("go-back-N 15:1 incast without PFC: drops, and resends lost again wait for the ACK timeout") {
  const StudyResult r = run(load("gbn_incast_lossy.json"));
  REQUIRE(r.ok);
  // Without a cap the 15 senders start at line rate into one port: 14 x 100 Gb/s more than
  // it drains, so the 1 MiB queue overflows within ~0.8 us of traffic. A go-back-N responder
  // NAKs an expected PSN once; when the resends from it are dropped again (the other senders
  // still fill the queue), only the requester's local ACK timer recovers: 4.096 us x 2^14 =
  // 67.1 ms with the study's timeout 14 (sim/nic/connect.h).
  CHECK(drops(r) > 0);
  CHECK(hca_sum(r, "timeouts") > 0);
  CHECK(to_seconds(last_finish(r)) >= 4.096e-6 * (1 << 14));
  const StudyResult irn = run(load("irn_incast_lossy.json"));
  CHECK(last_finish(irn) * 10 < last_finish(r));
}

TEST_CASE("irn without BDP flow control: selective repeat resends the drops, not the window behind them") {
  json j = load("irn_incast_lossy.json");
  j["fabric"]["nic"]["loss_recovery"]["bdp_packets"] = 0;
  const StudyResult r = run(j);
  REQUIRE(r.ok);
  const uint64_t d = drops(r), resent = hca_sum(r, "retransmitted_packets"), t = hca_sum(r, "timeouts");
  MESSAGE("drops " << d << ", resent " << resent << ", timeouts " << t);
  // Only switch egress drops lose packets here (links are clean; NACKs and ACKs leave by
  // ports nobody else loads), so every drop is resent once (a dropped resend too), and a
  // packet is resent without having been dropped only by a timeout, which resends what is
  // neither acknowledged nor selectively acknowledged: at most the port's queue, 1 MiB = 256
  // packets, per timeout.
  CHECK(d > 0);
  CHECK(resent >= d);
  CHECK(resent <= d + t * 256);
  // Go-back-N on the same fabric resends every packet in flight behind each drop.
  const StudyResult g = run(load("gbn_incast_lossy.json"));
  CHECK(last_finish(r) < last_finish(g));
}

}  // namespace
}  // namespace rdmasim::study
