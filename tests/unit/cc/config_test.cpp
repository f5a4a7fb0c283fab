// The "cc" config keys (sim/topo/fabric_spec.cpp): presets, overrides, errors.
#include <doctest/doctest.h>

#include <nlohmann/json.hpp>

#include "sim/topo/fabric_spec.h"

namespace rdmasim::topo {
namespace {

using nlohmann::json;

json base() {
  return json::parse(R"({
    "hosts": [{"name": "a", "ip": "127.0.1.1"}, {"name": "b", "ip": "127.0.1.2"}],
    "switches": [{"name": "sw0"}],
    "links": [{"a": "a", "b": "sw0"}, {"a": "b", "b": "sw0"}]
  })");
}

std::string error_of(const json& j) {
  try {
    parse_fabric(j);
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "";
}

TEST_CASE("cc config: default none; fabric-wide preset; per-NIC override") {
  json j = base();
  CHECK(parse_fabric(j).nics[0].nic.hca.cc.algorithm == nic::CcAlgorithm::None);
  j["nic"] = {{"cc", {{"algorithm", "dcqcn"}, {"preset", "vendor"}}}};
  j["hosts"][1]["nics"] = json::array({{{"name", "mlx5_0"},
                                        {"cc", {{"ai_rate_mbps", 20}, {"cnp_interval_us", 50}}}}});
  const FabricSpec s = parse_fabric(j);
  const nic::CcConfig& a = s.nics[0].nic.hca.cc;
  const nic::CcConfig& b = s.nics[1].nic.hca.cc;
  CHECK(a.algorithm == nic::CcAlgorithm::Dcqcn);
  CHECK(a.dcqcn.rate_timer == us(300));          // vendor rpg_time_reset
  CHECK(a.dcqcn.ai_rate == Rate::mbps(5));
  CHECK(b.algorithm == nic::CcAlgorithm::Dcqcn);  // inherited from "nic"
  CHECK(b.dcqcn.rate_timer == us(300));
  CHECK(b.dcqcn.ai_rate == Rate::mbps(20));       // overridden
  CHECK(b.dcqcn.cnp_interval == us(50));
}

TEST_CASE("cc config: errors name the path and the value") {
  json j = base();
  j["nic"] = {{"cc", {{"algorithm", "bbr"}}}};
  CHECK(error_of(j).find("fabric.nic.cc.algorithm: \"bbr\" is not a congestion control algorithm") !=
        std::string::npos);
  j["nic"] = {{"cc", {{"algorithm", "dcqcn"}, {"preset", "fast"}}}};
  CHECK(error_of(j).find("fabric.nic.cc.preset: \"fast\" is not a DCQCN preset") != std::string::npos);
  j["nic"] = {{"cc", {{"algorithm", "dcqcn"}, {"g", 0}}}};
  CHECK(error_of(j).find("fabric.nic.cc.g") != std::string::npos);
  j["nic"] = {{"cc", {{"algorithm", "dcqcn"}, {"rate_timer", 5}}}};
  CHECK(error_of(j).find("fabric.nic.cc.rate_timer") != std::string::npos);  // unknown key
  j["nic"] = {{"cc", {{"cnp_priority", 8}}}};
  CHECK(error_of(j).find("fabric.nic.cc.cnp_priority: 8") != std::string::npos);
  j["nic"] = {{"cc", {{"algorithm", "dcqcn"}, {"increase", "stages"}}}};
  CHECK(error_of(j).find("fabric.nic.cc.increase: \"stages\" is not a rate-increase model") !=
        std::string::npos);
  j = base();
  j["link_layer"] = "ib";
  j["nic"] = {{"cc", {{"algorithm", "dcqcn"}}}};
  CHECK(error_of(j).find("cc.algorithm: \"dcqcn\" is RoCEv2 congestion control") != std::string::npos);
}

TEST_CASE("cc config: the hpcc preset is timer-staged; increase and clamp_target override it") {
  json j = base();
  j["nic"] = {{"cc", {{"algorithm", "dcqcn"}, {"preset", "hpcc"}}}};
  const nic::DcqcnParams a = parse_fabric(j).nics[0].nic.hca.cc.dcqcn;
  CHECK(a.increase == nic::DcqcnIncrease::TimerStaged);
  CHECK_FALSE(a.clamp_target);        // CLAMP_TARGET_RATE 0
  CHECK(a.rate_timer == us(300));     // RP_TIMER 300
  CHECK(a.byte_counter == 0);
  CHECK(a.cnp_interval == 0);         // a CNP per marked packet
  j["nic"]["cc"]["increase"] = "paper";
  j["nic"]["cc"]["clamp_target"] = true;
  const nic::DcqcnParams b = parse_fabric(j).nics[0].nic.hca.cc.dcqcn;
  CHECK(b.increase == nic::DcqcnIncrease::Paper);
  CHECK(b.clamp_target);
}

TEST_CASE("cc config: hpcc and its parameters; bad values name the path") {
  json j = base();
  j["nic"] = {{"cc", {{"algorithm", "hpcc"}, {"hpcc", {{"eta", 0.9}, {"base_rtt_us", 5.3}}}}}};
  const FabricSpec spec = parse_fabric(j);
  const nic::CcConfig& c = spec.nics[0].nic.hca.cc;
  CHECK(c.algorithm == nic::CcAlgorithm::Hpcc);
  CHECK(c.hpcc.eta == 0.9);
  CHECK(c.hpcc.base_rtt == ns(5300));
  CHECK(c.hpcc.max_stage == 5);                  // the paper's maxStage
  CHECK(c.hpcc.ai_rate == Rate::mbps(40));       // run.py RATE_AI 10 x 100/25 Mb/s
  j["nic"] = {{"cc", {{"algorithm", "hpcc"}, {"hpcc", {{"eta", 0}}}}}};
  CHECK(error_of(j).find("fabric.nic.cc.hpcc.eta") != std::string::npos);  // eta in (0, 1]
  j["nic"] = {{"cc", {{"algorithm", "hpcc"}, {"hpcc", {{"wai", 1}}}}}};
  CHECK(error_of(j).find("fabric.nic.cc.hpcc.wai") != std::string::npos);  // unknown key
  j["nic"] = {{"cc", {{"algorithm", "hpcc"}}}};
  j["link_layer"] = "ib";
  CHECK(error_of(j).find("\"hpcc\" is RoCEv2 congestion control") != std::string::npos);
}

TEST_CASE("cc config: timely, swift and dctcp with their parameters; bad values name the path") {
  json j = base();
  j["nic"] = {{"cc", {{"algorithm", "timely"}, {"timely", {{"t_low_us", 10}, {"t_high_us", 30}}}}}};
  nic::CcConfig c = parse_fabric(j).nics[0].nic.hca.cc;
  CHECK(c.algorithm == nic::CcAlgorithm::Timely);
  CHECK(c.timely.t_low == us(10));
  CHECK(c.timely.t_high == us(30));
  CHECK(c.timely.beta == 0.8);               // the defaults: TIMELY's published values
  CHECK(c.timely.alpha == 0.875);
  CHECK(c.timely.delta == Rate::mbps(10));
  j["nic"] = {{"cc", {{"algorithm", "swift"}, {"swift", {{"base_target_us", 5}, {"hops", 1}}}}}};
  c = parse_fabric(j).nics[0].nic.hca.cc;
  CHECK(c.algorithm == nic::CcAlgorithm::Swift);
  CHECK(c.swift.base_target == us(5));
  CHECK(c.swift.hops == 1);
  CHECK(c.swift.max_mdf == 0.5);
  j["nic"] = {{"cc", {{"algorithm", "dctcp"}, {"dctcp", {{"base_rtt_us", 5.3}}}}}};
  c = parse_fabric(j).nics[0].nic.hca.cc;
  CHECK(c.algorithm == nic::CcAlgorithm::Dctcp);
  CHECK(c.dctcp.g == 1.0 / 16);              // the DCTCP paper's g
  CHECK(c.dctcp.base_rtt == ns(5300));
  j["nic"] = {{"cc", {{"algorithm", "timely"}, {"timely", {{"t_low_us", 50}, {"t_high_us", 40}}}}}};
  CHECK(error_of(j).find("fabric.nic.cc.timely.t_high_us: 40 is not above t_low_us") != std::string::npos);
  j["nic"] = {{"cc", {{"algorithm", "swift"}, {"swift", {{"beta", 2}}}}}};
  CHECK(error_of(j).find("fabric.nic.cc.swift.beta") != std::string::npos);
  j["nic"] = {{"cc", {{"algorithm", "dctcp"}, {"dctcp", {{"k_kb", 32}}}}}};
  CHECK(error_of(j).find("fabric.nic.cc.dctcp.k_kb") != std::string::npos);  // K is the switch's
  j["nic"] = {{"cc", {{"algorithm", "swift"}}}};
  j["link_layer"] = "ib";
  CHECK(error_of(j).find("\"swift\" is RoCEv2 congestion control") != std::string::npos);
}

}  // namespace
}  // namespace rdmasim::topo
