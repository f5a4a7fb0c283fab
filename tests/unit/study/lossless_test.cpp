// Lossless means lossless: a k=8 fat tree (128 hosts) with PFC carrying a permutation of
// 2,000,000 B WRITEs drops nothing, with the default buffers, with a tight egress queue
// limit (which binds lossy classes only) and with headroom sized per link ("auto").
#include <doctest/doctest.h>

#include <fstream>
#include <string>

#include <nlohmann/json.hpp>

#include "lib/study/study.h"
#include "sim/net/switch.h"

namespace rdmasim::study {
namespace {

using nlohmann::json;

json permutation_k8() {
  std::ifstream in(std::string(RDMASIM_SOURCE_DIR) + "/tests/bench/permutation_k8.json");
  REQUIRE(in.good());
  return json::parse(in);
}

struct FabricDrops {
  uint64_t drops = 0, headroom_drops = 0, pauses = 0, headroom_max = 0;
};

FabricDrops drops_of(const StudyResult& r) {
  FabricDrops d;
  for (const auto& [name, port] : r.counters["fabric"].items()) {
    if (!port.is_object() || !port.contains("drops")) continue;
    d.drops += port["drops"].get<uint64_t>();
    d.headroom_drops += port["headroom_drops"].get<uint64_t>();
    d.pauses += port["pauses_sent"].get<uint64_t>();
    d.headroom_max = std::max(d.headroom_max, port["headroom_max_bytes"].get<uint64_t>());
  }
  return d;
}

StudyResult run(const json& j) {
  const StudySpec spec = parse_study(j, RDMASIM_SOURCE_DIR "/tests/bench");
  REQUIRE(spec.flows.size() == 128);
  return run_study(spec);
}

}  // namespace

TEST_CASE("lossless: a k=8 fat-tree permutation with PFC and default buffers drops nothing") {
  const StudyResult r = run(permutation_k8());
  CHECK(r.ok);
  const FabricDrops d = drops_of(r);
  CHECK(d.drops == 0);
  CHECK(d.pauses > 0);  // PFC was exercised: the permutation's ECMP collisions pause upstream
}

TEST_CASE("lossless: an egress queue limit far below what PFC lets in drops no lossless packet") {
  // 64 KiB per class is below xoff (256 KiB) of a single ingress: before, every collision
  // of two flows on one egress dropped there. A lossless class is admitted at ingress only.
  json j = permutation_k8();
  j["fabric"]["switch"]["queue_kb"] = 64;
  const StudyResult r = run(j);
  CHECK(r.ok);
  CHECK(drops_of(r).drops == 0);
}

TEST_CASE("lossless: headroom sized per link holds what arrives after XOFF, with and without a shared buffer") {
  // Headroom "auto" per port: 2 x 1 us x 100 Gb/s = 25000 B + 2 frames + PFC frame + the
  // 802.1Qbb response at 100 Gb/s (201728 bits = 25216 B); see net::pfc_headroom_bytes. No
  // arrival may find it full (headroom_drops), and none of it may be used beyond it.
  for (const bool shared : {false, true}) {
    CAPTURE(shared);
    json j = permutation_k8();
    j["fabric"]["switch"]["pfc"]["headroom_kb"] = "auto";
    j["fabric"]["switch"]["pfc"]["xoff_kb"] = 64;
    j["fabric"]["switch"]["pfc"]["xon_kb"] = 32;
    // 8 ports x 8 lossless classes x ~57 KiB of headroom leaves ~4 MiB of a 8 MiB pool
    if (shared) j["fabric"]["switch"]["buffer"] = {{"total_kb", 8192}, {"reserved_kb", 4}};
    const StudyResult r = run(j);
    CHECK(r.ok);
    const FabricDrops d = drops_of(r);
    CHECK(d.drops == 0);
    CHECK(d.headroom_drops == 0);
    CHECK(d.headroom_max > 0);  // arrivals after XOFF did land in headroom
  }
}

}  // namespace rdmasim::study
