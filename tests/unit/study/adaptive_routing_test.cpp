// Adaptive routing (fabric "routing": "adaptive"): two WRITE flows that static routing puts
// on one uplink of a k=4 fat tree are spread over both, packet by packet, and the
// receiving NICs keep what arrives out of order without asking for it again.
#include <doctest/doctest.h>

#include <string>

#include <nlohmann/json.hpp>

#include "lib/study/study.h"

namespace rdmasim::study {
namespace {

using nlohmann::json;

constexpr uint64_t kFlowBytes = 2'000'000;

// host1 and host2 sit on the first edge switch (NIC indices 0 and 1); host5 and host7 on two
// edge switches of the second pod (NIC indices 4 and 6). D-mod-k ("ftree") sends both flows
// up the edge switch's uplink 4 mod 2 = 6 mod 2 = 0, and above it on disjoint paths (the
// aggregation switch takes core uplink (d / 2) mod 2: 0 for host5, 1 for host7).
json two_flows(const std::string& routing, const std::string& link_layer) {
  json fabric = {{"name", "fat-tree-k4"},
                 {"link_layer", link_layer},
                 {"topology", {{"type", "fat_tree"}, {"k", 4}}},
                 {"link", {{"rate_gbps", 100}, {"latency_ns", 1000}}},
                 {"mtu", 4096},
                 {"routing", routing}};
  if (link_layer == "roce") fabric["switch"] = {{"pfc", {{"enabled", true}, {"xoff_kb", 256}, {"xon_kb", 128}}}};
  return {{"name", "two_flows"},
          {"fabric", fabric},
          {"time_limit_us", 10000},
          {"defaults", {{"op", "write"}, {"message_bytes", 65536}, {"window", 4}}},
          {"flows", {{{"src", "host1"}, {"dst", "host5"}, {"bytes", kFlowBytes}},
                     {{"src", "host2"}, {"dst", "host7"}, {"bytes", kFlowBytes}}}}};
}

struct Run {
  StudySpec spec;
  StudyResult result;
};

Run run(const json& j) {
  Run r{parse_study(j, "."), {}};
  r.result = run_study(r.spec);
  return r;
}

double slowdown(const Run& r, size_t k) {
  const FlowResult& f = r.result.flows.at(k);
  return to_ns(f.finish - r.spec.flows[k].start) / to_ns(f.ideal_fct);
}

uint64_t hca_sum(const StudyResult& r, const char* counter) {
  uint64_t n = 0;
  for (const auto& [name, h] : r.counters["hcas"].items()) n += h[counter].get<uint64_t>();
  return n;
}

}  // namespace

TEST_CASE("adaptive routing: two flows static routing puts on one uplink each get a full link") {
  for (const std::string ll : {"roce", "ib"}) {
    CAPTURE(ll);
    // Static: the two flows share one 100 Gb/s uplink, 50 Gb/s each, so each takes about
    // twice its ideal (which assumes a whole link); 1.8 leaves room for the start-up.
    const Run fixed = run(two_flows("ftree", ll));
    REQUIRE(fixed.result.ok);
    CHECK(slowdown(fixed, 0) > 1.8);
    CHECK(slowdown(fixed, 1) > 1.8);

    // Adaptive: each packet leaves the edge switch by the emptier uplink, so the two flows
    // have two 100 Gb/s uplinks between them and each runs at about link rate. The ideal
    // counts the base headers and latency; what it leaves out (IRN's 16 B RETH on each WRITE
    // packet, 0.4% of 4096 B; ACK and window gaps) stays within 10%.
    const Run ar = run(two_flows("adaptive", ll));
    REQUIRE(ar.result.ok);
    for (size_t k = 0; k < 2; ++k) {
      CAPTURE(k);
      CHECK(slowdown(ar, k) < 1.1);
      // Every message completed, in order, and nothing was sent twice: each payload byte
      // arrived once.
      CHECK(ar.result.flows[k].messages_completed == ar.spec.flows[k].messages);
      CHECK(ar.result.flows[k].bytes_received == kFlowBytes);
    }
    // The packets of one QP did arrive out of order (the two uplinks' queues differ)...
    CHECK(hca_sum(ar.result, "out_of_sequence") > 0);
    // ...and the fabric is lossless (PFC, IB credits): nothing was lost, so nothing may be
    // resent, nor NACKed, nor timed out.
    CHECK(hca_sum(ar.result, "retransmitted_packets") == 0);
    CHECK(hca_sum(ar.result, "naks_sent") == 0);
    CHECK(hca_sum(ar.result, "timeouts") == 0);
  }
}

}  // namespace rdmasim::study
