// InfiniBand fabric keys: "vls" (SL-to-VL table, data VLs, VL arbitration) and their errors.
#include <doctest/doctest.h>

#include <nlohmann/json.hpp>

#include "sim/topo/fabric_spec.h"
#include "tests/unit/topo/helpers.h"

using namespace rdmasim;
using nlohmann::json;

using topo_test::has_error;
using topo_test::load;

TEST_CASE("ib config: default VLs are 8 with SL mod 8, on every NIC and switch port") {
  const topo::FabricSpec spec = topo::parse_fabric(load("ib.json"));
  const net::IbVlConfig def = net::default_ib_vls(8);
  for (const topo::NicSpec& n : spec.nics) {
    CHECK(n.vls.enabled);
    CHECK(n.vls.sl2vl == def.sl2vl);
    CHECK(n.vls.low == def.low);
  }
  for (const net::SwitchConfig& s : spec.switches) CHECK(s.egress.ib.enabled);
  // not on Ethernet
  const topo::FabricSpec roce = topo::parse_fabric(topo::default_fabric_config());
  CHECK_FALSE(roce.nics[0].vls.enabled);
  CHECK_FALSE(roce.switches[0].egress.ib.enabled);
}

TEST_CASE("ib config: vls per fabric and per switch") {
  json c = load("ib.json");
  c["switch"] = {{"vls", {{"data_vls", 4}, {"high_limit", 3},
                          {"high", json::array({{{"vl", 3}, {"weight", 10}}})}}}};
  c["switches"][0]["vls"] = {{"sl2vl", {0, 1, 2, 3, 3, 3, 3, 3, 0, 0, 0, 0, 0, 0, 0, 1}}};
  c["nic"] = {{"vls", {{"data_vls", 2}}}};
  const topo::FabricSpec spec = topo::parse_fabric(c);
  const net::IbVlConfig& v = spec.switches[0].egress.ib;
  CHECK(v.data_vls == 4);
  CHECK(v.high_limit == 3);
  CHECK(v.high == std::vector<net::VlArbEntry>{{3, 10}});
  CHECK(v.low == net::default_ib_vls(4).low);  // data_vls 4 restarted from its defaults
  CHECK(v.sl2vl[5] == 3);
  CHECK(v.sl2vl[15] == 1);
  CHECK(spec.nics[0].vls.data_vls == 2);
  CHECK(spec.nics[0].vls.sl2vl[3] == 1);  // 3 mod 2
}

TEST_CASE("ib config: vls errors name the path, the value and what was expected") {
  json c = load("ib.json");
  c["switch"] = {{"vls", {{"data_vls", 15}}}};
  CHECK(has_error(c, "fabric.switch.vls.data_vls: 15 is not modelled (an egress port has 8 VL queues); expected 1, 2, 4 or 8"));
  c["switch"] = {{"vls", {{"data_vls", 3}}}};
  CHECK(has_error(c, "fabric.switch.vls.data_vls: 3 is not a data VL count; expected 1, 2, 4 or 8"));
  c["switch"] = {{"vls", {{"data_vls", 2}, {"sl2vl", {0, 1, 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}}}}};
  CHECK(has_error(c, "fabric.switch.vls.sl2vl[2]: 2 is not a data VL; expected an integer 0..1"));
  c["switch"] = {{"vls", {{"sl2vl", {0, 1}}}}};
  CHECK(has_error(c, "fabric.switch.vls.sl2vl: [0,1] is not an array of 16"));
  c["switch"] = {{"vls", {{"low", json::array({{{"vl", 9}, {"weight", 1}}})}}}};
  CHECK(has_error(c, "fabric.switch.vls.low[0].vl: 9"));
  c["switch"] = {{"vls", {{"low", json::array({{{"vl", 0}, {"weight", 256}}})}}}};
  CHECK(has_error(c, "fabric.switch.vls.low[0].weight: 256"));
  c["switch"] = {{"vls", {{"high_limit", 256}}}};
  CHECK(has_error(c, "fabric.switch.vls.high_limit: 256"));
  c["switch"] = {{"vls", {{"colour", 1}}}};
  CHECK(has_error(c, "fabric.switch.vls.colour: unknown key"));
  // a VL that SLs map to but no table serves would never send
  c["switch"] = {{"vls", {{"data_vls", 2}, {"low", json::array({{{"vl", 0}, {"weight", 64}}, {{"vl", 1}, {"weight", 0}}})}}}};
  CHECK(has_error(c, "fabric.switch.vls: VL 1 (of SL 1) has no high or low entry with weight > 0"));
  // Ethernet scheduling keys and VLs on the wrong link layer
  json d = load("ib.json");
  d["switch"] = {{"dwrr_weights", {1, 1, 1, 1, 1, 1, 1, 1}}};
  CHECK(has_error(d, "fabric.switch.dwrr_weights: is Ethernet scheduling; expected VL arbitration (\"vls\") on InfiniBand"));
  json r = topo::default_fabric_config();
  r["switches"][0]["vls"] = {{"data_vls", 2}};
  CHECK(has_error(r, "fabric.switches[0].vls: is InfiniBand only"));
}
