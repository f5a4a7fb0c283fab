// PFC config keys: headroom_kb (a size or "auto"), classes (the lossless ones), and the
// shared buffer having to hold every port's headroom.
#include <doctest/doctest.h>

#include <nlohmann/json.hpp>

#include "sim/topo/fabric_spec.h"
#include "tests/unit/topo/helpers.h"

using namespace rdmasim;
using nlohmann::json;

using topo_test::has_error;

namespace {

json star(const json& sw) {
  return {{"topology", {{"type", "star"}, {"hosts", 16}}},
          {"link", {{"rate_gbps", 100}, {"latency_ns", 10'000}}},
          {"switch", sw}};
}

}  // namespace

TEST_CASE("pfc config: headroom_kb and classes") {
  const topo::FabricSpec a = topo::parse_fabric(star({{"pfc", {{"xoff_kb", 64}, {"headroom_kb", "auto"}}}}));
  CHECK(a.switches[0].pfc.headroom_limited);
  CHECK(a.switches[0].pfc.headroom_auto);
  CHECK(a.switches[0].pfc.class_mask == 0xff);  // every class lossless by default
  const topo::FabricSpec b = topo::parse_fabric(
      star({{"pfc", {{"xoff_kb", 64}, {"headroom_kb", 300.5}, {"classes", {3, 0}}}}}));
  CHECK(b.switches[0].pfc.headroom_limited);
  CHECK_FALSE(b.switches[0].pfc.headroom_auto);
  // 300.5 x 1024; above the 283696 B a 10 us, 100 Gb/s link needs (tests/unit/fabric/headroom_test.cpp)
  CHECK(b.switches[0].pfc.headroom_bytes == 307712);
  CHECK(b.switches[0].pfc.class_mask == 0b1001);
  const topo::FabricSpec c = topo::parse_fabric(star({{"pfc", {{"xoff_kb", 64}}}}));
  CHECK_FALSE(c.switches[0].pfc.headroom_limited);  // absent: unbounded, nothing reserved
}

TEST_CASE("pfc config: bad headroom_kb and classes name the path and what was expected") {
  CHECK(has_error(star({{"pfc", {{"headroom_kb", "big"}}}}),
                  "fabric.switch.pfc.headroom_kb: \"big\" is not a headroom; expected \"auto\""));
  CHECK(has_error(star({{"pfc", {{"headroom_kb", -1}}}}), "fabric.switch.pfc.headroom_kb: -1 is not a headroom"));
  CHECK(has_error(star({{"pfc", {{"classes", {8}}}}}),
                  "fabric.switch.pfc.classes[0]: 8 is not a traffic class; expected an integer 0..7"));
  CHECK(has_error(star({{"pfc", {{"classes", {1, 1}}}}}), "fabric.switch.pfc.classes[1]: 1 is a duplicate"));
  CHECK(has_error(star({{"pfc", {{"classes", json::array()}}}}), "fabric.switch.pfc.classes: [] is not a list of classes"));
}

TEST_CASE("pfc config: a shared buffer too small for the headroom of every port is an error") {
  // 16 ports x 2 lossless classes x 283696 B auto headroom (10 us at 100 Gb/s, see
  // tests/unit/fabric/headroom_test.cpp) = 9078272 B > 4 MiB.
  const json cfg = star({{"buffer", {{"total_kb", 4096}}},
                         {"pfc", {{"xoff_kb", 64}, {"headroom_kb", "auto"}, {"classes", {0, 3}}}}});
  CHECK(has_error(cfg, "fabric.switches[0] (sw0).buffer.total_kb: 4096 leaves no shared pool after 9078272 B"));
  // 16 MiB holds it
  json ok = cfg;
  ok["switch"]["buffer"]["total_kb"] = 16384;
  CHECK(topo::parse_fabric(ok).switches[0].buffer.total_bytes == 16384 * 1024);
}

TEST_CASE("config: switch ingress_arbitration is fifo (default) or round_robin") {
  CHECK_FALSE(topo::parse_fabric(star(json::object())).switches[0].ingress_round_robin);
  CHECK(topo::parse_fabric(star({{"ingress_arbitration", "round_robin"}})).switches[0].ingress_round_robin);
  CHECK(has_error(star({{"ingress_arbitration", "lifo"}}),
                  "fabric.switch.ingress_arbitration: \"lifo\" is not an arbitration; expected \"round_robin\" or \"fifo\""));
}
