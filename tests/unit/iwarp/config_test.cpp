// iWARP fabric configs: the shipped configs/iwarp.json, the "tcp" keys of a NIC, the MTU on
// iWARP (the Ethernet one) and the errors of each.
#include <doctest/doctest.h>

#include <nlohmann/json.hpp>

#include "sim/topo/fabric_spec.h"
#include "tests/unit/topo/helpers.h"

using namespace rdmasim;
using nlohmann::json;
using topo_test::has_error;
using topo_test::load;

namespace {

json two_hosts_iwarp() {
  json c = load("iwarp.json");
  c.erase("nic");
  return c;
}

}  // namespace

TEST_CASE("iwarp config: configs/iwarp.json is lossy Ethernet (no PFC, no ECN) with cxgb4 NICs") {
  const json c = load("iwarp.json");
  CHECK(topo::Fabric::check(c) == "2 hosts, 1 switch, 2 links, iWARP 100 Gb/s, MTU 1500");
  const topo::FabricSpec spec = topo::parse_fabric(c);
  REQUIRE(spec.nics.size() == 2);
  CHECK_FALSE(c["switches"][0].contains("pfc"));
  CHECK_FALSE(c["switches"][0].contains("ecn"));
  for (size_t k = 0; k < 2; ++k) {
    const topo::HostNic& n = spec.nics[k].nic;
    CHECK(n.device == "cxgb4_0");
    CHECK(n.vendor_id == 0x1425);  // Chelsio's PCI vendor ID
    CHECK(n.link_layer == net::LinkLayer::IWarp);
    // The port reports the largest IB MTU not above the Ethernet MTU (ib_mtu_int_to_enum).
    CHECK(n.mtu == 1024);
    CHECK(n.hca.max_mtu == 1024);
    // MSS = 1500 - IPv4 20 - TCP 20 - timestamps 12.
    CHECK(n.hca.tcp.mss == 1448);
    CHECK_FALSE(n.hca.atomics);
    CHECK_FALSE(n.hca.tcp.ecn);
    // QPNs carry the NIC number (1-based) in bits 23..16; the table maps it back.
    CHECK(n.hca.qpn_base == (k + 1) << 16);
    REQUIRE(n.hca.iwarp_hosts.size() == 3);
    CHECK(n.hca.iwarp_hosts[k + 1] == n.address);
  }
  // node GUID = MAC 02:00:127.0.1.1 then two zero bytes (as iw_cxgb4 builds it).
  CHECK(spec.nics[0].nic.node_guid == 0x02007f0001010000ull);
}

TEST_CASE("iwarp config: every tcp key reaches the TCP model") {
  json c = two_hosts_iwarp();
  c["mtu"] = 9000;
  c["nic"] = {{"tcp", {{"init_cwnd_segments", 4}, {"rcv_wnd_kb", 256}, {"initial_rto_us", 3000},
                       {"min_rto_us", 200}, {"max_rto_ms", 50}, {"max_retries", 5},
                       {"dupack_threshold", 2}, {"dctcp", true}, {"dctcp_g", 0.25}}}};
  const topo::FabricSpec spec = topo::parse_fabric(c);
  const nic::iwarp::TcpConfig& t = spec.nics[1].nic.hca.tcp;
  CHECK(t.init_cwnd_segments == 4);
  CHECK(t.rcv_wnd == 256 * 1024);
  CHECK(t.initial_rto == us(3000));
  CHECK(t.min_rto == us(200));
  CHECK(t.max_rto == ms(50));
  CHECK(t.max_retries == 5);
  CHECK(t.dupack_threshold == 2);
  CHECK(t.ecn);
  CHECK(t.dctcp_g == 0.25);
  CHECK(t.mss == 9000 - 52);               // jumbo frames: MSS from the MTU
  CHECK(spec.nics[1].nic.mtu == 4096);     // the largest IB MTU <= 9000
}

TEST_CASE("iwarp config: a NIC entry's tcp overrides the defaults key by key") {
  json c = two_hosts_iwarp();
  c["nic"] = {{"tcp", {{"min_rto_us", 200}}}};
  c["hosts"][1]["nics"][0]["tcp"] = {{"max_retries", 3}};
  const topo::FabricSpec spec = topo::parse_fabric(c);
  CHECK(spec.nics[0].nic.hca.tcp.max_retries == 8);  // iwarp_tcp.h default
  CHECK(spec.nics[1].nic.hca.tcp.max_retries == 3);
  CHECK(spec.nics[1].nic.hca.tcp.min_rto == us(200));
}

TEST_CASE("iwarp config: errors name the path, the value and what was expected") {
  json c = two_hosts_iwarp();
  c["nic"] = {{"tcp", {{"cwnd", 4}}}};
  CHECK(has_error(c, "fabric.nic.tcp.cwnd: unknown key"));
  c["nic"] = {{"tcp", {{"dctcp_g", 0}}}};
  CHECK(has_error(c, "fabric.nic.tcp.dctcp_g: 0"));
  c["nic"] = {{"tcp", {{"min_rto_us", 5000}, {"max_rto_ms", 1}}}};
  CHECK(has_error(c, "fabric.nic.tcp.max_rto_ms: 1 is below min_rto_us"));
  c["nic"] = {{"tcp", {{"rcv_wnd_kb", 9000}}}};
  CHECK(has_error(c, "fabric.nic.tcp.rcv_wnd_kb: 9000"));
  c["nic"] = {{"limits", {{"atomics", true}}}};
  CHECK(has_error(c, "fabric.nic.limits.atomics: true is not an iWARP capability"));
  c["nic"] = {{"limits", {{"max_qp", 100000}}}};
  CHECK(has_error(c, "fabric.nic.limits.max_qp: 100000"));
  c.erase("nic");
  c["mtu"] = 100;
  CHECK(has_error(c, "fabric.mtu: 100"));
  CHECK(has_error(c, "an Ethernet MTU in bytes 576..9216"));
  json roce = topo::default_fabric_config();
  roce["nic"] = {{"tcp", {{"max_retries", 3}}}};
  CHECK(has_error(roce, "fabric.nic.tcp: "));
  CHECK(has_error(roce, "no \"tcp\" key unless link_layer is \"iwarp\""));
}
