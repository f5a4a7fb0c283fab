#include <doctest/doctest.h>

#include <string>

#include <nlohmann/json.hpp>

#include "sim/topo/fabric.h"
#include "sim/topo/fabric_spec.h"
#include "tests/unit/topo/helpers.h"

using namespace rdmasim;
using nlohmann::json;

using topo_test::first_error;
using topo_test::has_error;
using topo_test::load;

TEST_CASE("config: configs/default.json is the embedded default") {
  CHECK(load("default.json") == topo::default_fabric_config());
}

TEST_CASE("config: check() summarizes the default and the IB config") {
  CHECK(topo::Fabric::check(topo::default_fabric_config()) ==
        "2 hosts, 1 switch, 2 links, RoCEv2 100 Gb/s, MTU 4096");
  CHECK(topo::Fabric::check(load("ib.json")) ==
        "2 hosts, 1 switch, 2 links, InfiniBand 100 Gb/s, MTU 4096, up-down routing");
}

TEST_CASE("config: a negative rate names the path, the value and what was expected") {
  json c = topo::default_fabric_config();
  c["links"][0]["rate_gbps"] = -3;
  CHECK(first_error(c) == "fabric.links[0].rate_gbps: -3 is negative; expected a rate in Gb/s > 0");
}

TEST_CASE("config: unknown keys are errors, at every level") {
  json c = topo::default_fabric_config();
  c["colour"] = "blue";
  c["hosts"][1]["nics"][0]["speed"] = 5;
  CHECK(has_error(c, "fabric.colour: unknown key"));
  CHECK(has_error(c, "fabric.hosts[1].nics[0].speed: unknown key"));
}

TEST_CASE("config: several errors are all reported") {
  json c = topo::default_fabric_config();
  c["mtu"] = 3000;
  c["hosts"][0]["ip"] = "300.1.1.1";
  c["links"][1]["b"] = "sw9";
  CHECK(has_error(c, "fabric.mtu: 3000 is not a power of two"));
  CHECK(has_error(c, "fabric.hosts[0].ip: \"300.1.1.1\" is not an IPv4 address"));
  CHECK(has_error(c, "fabric.links[1].b: \"sw9\" names no NIC or switch"));
}

TEST_CASE("config: a NIC without a link and a duplicate ip are errors") {
  json c = topo::default_fabric_config();
  c["links"].erase(1);
  CHECK(has_error(c, "NIC client/mlx5_0 has no link"));
  json d = topo::default_fabric_config();
  d["hosts"][1]["ip"] = "127.0.1.1";
  CHECK(has_error(d, "fabric.hosts[1].ip: \"127.0.1.1\" is already used by fabric.hosts[0]"));
}

TEST_CASE("config: a missing required key is named") {
  json c = topo::default_fabric_config();
  c["hosts"][0].erase("ip");
  CHECK(has_error(c, "fabric.hosts[0].ip: is missing"));
}

TEST_CASE("config: an unreachable NIC is an error") {
  json c = topo::default_fabric_config();
  c["switches"].push_back({{"name", "sw1"}});
  c["links"][1]["b"] = "sw1";
  CHECK(has_error(c, "client/mlx5_0 is not reachable from server/mlx5_0"));
}

TEST_CASE("config: the star generator expands to N hosts on one switch") {
  json c = {{"topology", {{"type", "star"}, {"hosts", 4}}}};
  CHECK(topo::Fabric::check(c) == "4 hosts, 1 switch, 4 links, RoCEv2 100 Gb/s, MTU 4096, star");
  json b = {{"topology", {{"type", "back_to_back"}}}, {"link", {{"rate_gbps", 25}}}};
  CHECK(topo::Fabric::check(b) == "2 hosts, 0 switches, 1 link, RoCEv2 25 Gb/s, MTU 4096, back_to_back");
  json bad = {{"topology", {{"type", "ring"}}}};
  CHECK(first_error(bad) ==
        "fabric.topology.type: \"ring\" is not a known topology; expected \"star\", \"back_to_back\", \"dumbbell\", \"leaf_spine\" or \"fat_tree\"");
  json ls = {{"topology", {{"type", "leaf_spine"}, {"leaves", 3}, {"spines", 2}, {"hosts_per_leaf", 4}}}};
  // 3 * 4 host links + 3 * 2 leaf-spine links; a leaf has 4 x 100 Gb/s down, 2 x 100 up
  CHECK(topo::Fabric::check(ls) == "12 hosts, 5 switches, 18 links, RoCEv2 100 Gb/s, MTU 4096, "
                                   "leaf_spine 3 leaves x 2 spines, oversubscription 2:1");
}

TEST_CASE("config: dwrr_weights needs 8 weights 0..1000") {
  json c = topo::default_fabric_config();
  c["switches"][0]["dwrr_weights"] = {0, 0, 0, 1, 4, 0, 0, 0};
  CHECK(first_error(c) == "");
  c["switches"][0]["dwrr_weights"] = {0, 0, 0, 1, -4, 0, 0, 0};
  CHECK(first_error(c) ==
        "fabric.switches[0].dwrr_weights[4]: -4 is not a weight; expected an integer 0..1000 (0 = strict priority)");
  c["switches"][0]["dwrr_weights"] = {1, 2};
  CHECK(has_error(c, "fabric.switches[0].dwrr_weights: [1,2] is not an array of 8"));
}

TEST_CASE("config: ECN thresholds out of order are an error") {
  json c = topo::default_fabric_config();
  c["switch"] = {{"ecn", {{"kmin_kb", 100}, {"kmax_kb", 50}}}};
  CHECK(first_error(c) == "fabric.switch.ecn.kmax_kb: 50 is below kmin_kb; expected kmax_kb >= kmin_kb");
  c["switch"] = {{"ecn", {{"pmax", 1.5}}}};
  CHECK(first_error(c) == "fabric.switch.ecn.pmax: 1.5 is out of range; expected a probability in [0, 1]");
}

TEST_CASE("config: ECN per class — classes that mark, and per_class ramps") {
  // A RoCE deployment marks only its RoCE class (3 here) and gives it its own ramp; the
  // others keep the object's ramp (or, absent from `classes`, do not mark).
  json c = topo::default_fabric_config();
  c["switch"] = {{"ecn", {{"kmin_kb", 10}, {"kmax_kb", 100}, {"pmax", 0.1}, {"classes", {3, 4}},
                          {"per_class", {{"3", {{"kmin_kb", 50}, {"kmax_kb", 400}, {"pmax", 0.2}}}}}}}};
  CHECK(first_error(c) == "");
  const topo::FabricSpec s = topo::parse_fabric(c);
  const auto& ecn = s.switches.at(0).egress.ecn;
  CHECK_FALSE(ecn[0].enabled);
  CHECK(ecn[3].enabled);
  CHECK(ecn[3].kmin_bytes == 50 * 1024);
  CHECK(ecn[3].kmax_bytes == 400 * 1024);
  CHECK(ecn[3].pmax == 0.2);
  CHECK(ecn[4].enabled);
  CHECK(ecn[4].kmin_bytes == 10 * 1024);
  CHECK(ecn[4].kmax_bytes == 100 * 1024);
  CHECK(ecn[4].pmax == 0.1);
  // Errors name the path.
  c["switch"]["ecn"]["per_class"] = {{"9", {{"pmax", 0.5}}}};
  CHECK(has_error(c, "fabric.switch.ecn.per_class.9: unknown key; expected one of"));
  c["switch"]["ecn"]["per_class"] = {{"3", {{"kmin_kb", 50}, {"kmax_kb", 20}}}};
  CHECK(first_error(c) == "fabric.switch.ecn.per_class.3.kmax_kb: 20 is below kmin_kb; expected kmax_kb >= kmin_kb");
  c["switch"]["ecn"]["per_class"] = json::object();
  c["switch"]["ecn"]["classes"] = {3, 3};
  CHECK(first_error(c) == "fabric.switch.ecn.classes[1]: 3 is a duplicate; expected distinct traffic classes");
}

TEST_CASE("config: loss_recovery — go_back_n by default, irn with its parameters, errors named") {
  json c = topo::default_fabric_config();
  {
    Engine e;
    auto f = topo::Fabric::build(e, c);
    CHECK(f->nics()[0].hca.loss_recovery.mode == nic::LossRecovery::GoBackN);
  }
  c["nic"]["loss_recovery"] = "irn";
  {
    Engine e;
    auto f = topo::Fabric::build(e, c);
    const nic::LossRecoveryConfig& lr = f->nics()[1].hca.loss_recovery;
    CHECK(lr.mode == nic::LossRecovery::Irn);
    CHECK(lr.rto_low == us(100));  // the IRN paper's RTO_low and RTO_high, N = 3
    CHECK(lr.rto_high == us(320));
    CHECK(lr.rto_low_packets == 3);
    CHECK(lr.bdp_packets == 0);
  }
  c["nic"]["loss_recovery"] = {{"rto_low_us", 50}, {"bdp_packets", 110}};
  {
    Engine e;
    auto f = topo::Fabric::build(e, c);
    const nic::LossRecoveryConfig& lr = f->nics()[0].hca.loss_recovery;
    CHECK(lr.mode == nic::LossRecovery::Irn);  // an object means irn unless "mode" says otherwise
    CHECK(lr.rto_low == us(50));
    CHECK(lr.bdp_packets == 110);
  }
  c["nic"]["loss_recovery"] = "selective";
  CHECK(first_error(c) ==
        "fabric.nic.loss_recovery: \"selective\" is not a loss recovery; expected \"go_back_n\" or \"irn\"");
  c["nic"]["loss_recovery"] = {{"rto_low_us", 400}};
  CHECK(first_error(c) == "fabric.nic.loss_recovery.rto_low_us: 400 is above rto_high_us (320); expected rto_low_us <= rto_high_us");
  c["nic"]["loss_recovery"] = {{"window", 4}};
  CHECK(has_error(c, "fabric.nic.loss_recovery.window"));
  json iw = load("iwarp.json");
  iw["nic"]["loss_recovery"] = "irn";
  CHECK(has_error(iw, "fabric.nic.loss_recovery: \"irn\" is RC's over InfiniBand or RoCE"));
}
