#include <doctest/doctest.h>

#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <vector>

#include <nlohmann/json.hpp>

#include "sim/nic/rdma_packet.h"
#include "sim/trace/capture.h"

using namespace rdmasim;

namespace {

std::vector<uint8_t> slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), {}};
}
uint32_t u32(const std::vector<uint8_t>& b, size_t at) {  // host (little-endian) order
  uint32_t v;
  std::memcpy(&v, b.data() + at, 4);
  return v;
}

// One pcap record: its timestamp in ns and the IPv4 source of its frame (Ethernet II, no
// VLAN tag at priority 0: the source address at frame bytes 26..29, network order).
struct Record {
  uint64_t ns = 0;
  uint32_t ip_src = 0;
};
std::vector<Record> records(const std::vector<uint8_t>& file) {
  std::vector<Record> out;
  for (size_t at = 24; at + 16 <= file.size(); at += 16 + u32(file, at + 8)) {
    const size_t f = at + 16;
    out.push_back({u32(file, at) * 1'000'000'000ull + u32(file, at + 4),
                   uint32_t{file[f + 26]} << 24 | uint32_t{file[f + 27]} << 16 |
                       uint32_t{file[f + 28]} << 8 | file[f + 29]});
  }
  return out;
}

// A 100-byte RoCEv2 SEND ONLY (opcode 0x04) from NIC `from` to NIC `to`: 100 + 44 (BTH 12,
// UDP 8, IPv4 20, ICRC 4) + 38 (Ethernet header, FCS, preamble, gap) = 182 wire bytes.
void send_only(topo::Fabric& fabric, size_t from, size_t to) {
  auto p = std::make_unique<nic::RdmaPacket>();
  p->src = fabric.nics()[from].address;
  p->dst = fabric.nics()[to].address;
  p->bth.opcode = 0x04;
  p->payload_len = 100;
  p->wire_bytes = 100 + 44 + 38;
  fabric.nic_port(from).send(std::move(p));
}

// Default fabric (configs/default.json): 100 Gb/s links of 400 ns, a store-and-forward
// switch of 200 ns forwarding latency. A 182 B packet serializes in 14.56 ns, so one sent at
// t=0 leaves its NIC at 14.56 ns and the switch port at 14.56 + 400 + 200 + 14.56 = 629.12 ns
// (the records hold ns, picoseconds truncated: 14 and 629).
constexpr uint64_t kLeavesNicNs = 14, kLeavesSwitchNs = 629;

}  // namespace

TEST_CASE("capture: one file per port, packets timestamped with simulated time") {
  const std::string dir = "/tmp/rdmasim-unit-trace-" + std::to_string(getpid());
  std::filesystem::remove_all(dir);
  Engine e;
  auto fabric = topo::Fabric::build(e, topo::default_fabric_config());
  {
    trace::Capture cap(*fabric, dir, topo::CapturePorts::All);
    // default fabric: 2 NIC ports + 2 switch ports
    REQUIRE(cap.files().size() == 4);
    send_only(*fabric, 1, 0);   // client -> server
    e.run();
    // The packet leaves two ports, the client's and the switch port towards the server; each
    // is recorded in the files of both ends of its link: 2 x 2 records.
    CHECK(cap.packets() == 4);
  }
  const auto client = slurp(dir + "/client_mlx5_0.pcap");
  REQUIRE(client.size() > 24 + 16);
  CHECK(u32(client, 0) == trace::kPcapMagicNanos);
  CHECK(u32(client, 20) == trace::kLinktypeEthernet);
  // The record is written when the packet's last bit leaves the client port.
  CHECK(u32(client, 24) == 0);
  CHECK(u32(client, 28) == kLeavesNicNs);
  // frame: 14 + 20 + 8 + 12 + 100 + 4 = 158 bytes, captured whole
  CHECK(u32(client, 32) == 158);
  CHECK(u32(client, 36) == 158);
  // The server sent nothing, but its link carried the packet from the switch.
  const auto server = records(slurp(dir + "/server_mlx5_0.pcap"));
  REQUIRE(server.size() == 1);
  CHECK(server[0].ns == kLeavesSwitchNs);
  CHECK(server[0].ip_src == fabric->nics()[1].address);
  std::filesystem::remove_all(dir);
}

TEST_CASE("capture: a port's file holds both directions of its link, in time order") {
  const std::string dir = "/tmp/rdmasim-unit-trace-both-" + std::to_string(getpid());
  std::filesystem::remove_all(dir);
  Engine e;
  auto fabric = topo::Fabric::build(e, topo::default_fabric_config());
  const uint32_t server = fabric->nics()[0].address, client = fabric->nics()[1].address;
  {
    trace::Capture cap(*fabric, dir, topo::CapturePorts::All);
    send_only(*fabric, 1, 0);   // client -> server and server -> client, both at t=0
    send_only(*fabric, 0, 1);
    e.run();
    CHECK(cap.packets() == 8);   // twice the one-packet case above
    CHECK(cap.not_captured() == 0);
  }
  // The client's link, seen from either end (the client's file and switch port 1's, link
  // order server then client): the client's packet as it leaves the client, then the
  // server's as it leaves the switch toward the client.
  for (const char* file : {"/client_mlx5_0.pcap", "/sw0_port1.pcap"}) {
    CAPTURE(file);
    const auto r = records(slurp(dir + file));
    REQUIRE(r.size() == 2);
    CHECK(r[0].ip_src == client);
    CHECK(r[0].ns == kLeavesNicNs);
    CHECK(r[1].ip_src == server);
    CHECK(r[1].ns == kLeavesSwitchNs);
  }
  std::filesystem::remove_all(dir);
}

TEST_CASE("capture: \"hosts\" writes only the NIC files, still with both directions") {
  const std::string dir = "/tmp/rdmasim-unit-trace-hosts-" + std::to_string(getpid());
  std::filesystem::remove_all(dir);
  Engine e;
  auto fabric = topo::Fabric::build(e, topo::default_fabric_config());
  {
    trace::Capture cap(*fabric, dir, topo::CapturePorts::Hosts);
    REQUIRE(cap.files().size() == 2);
    send_only(*fabric, 1, 0);
    send_only(*fabric, 0, 1);
    e.run();
    CHECK(cap.packets() == 4);   // each NIC file: its NIC's packet and the one toward it
  }
  CHECK(!std::filesystem::exists(dir + "/sw0_port0.pcap"));
  const auto r = records(slurp(dir + "/server_mlx5_0.pcap"));
  REQUIRE(r.size() == 2);
  CHECK(r[0].ip_src == fabric->nics()[0].address);
  CHECK(r[1].ip_src == fabric->nics()[1].address);
  std::filesystem::remove_all(dir);
}

TEST_CASE("capture: the config's trace key, and its errors") {
  nlohmann::json cfg = topo::default_fabric_config();
  cfg["trace"] = {{"pcap_dir", "/tmp/x"}, {"ports", "switches"}};
  CHECK_NOTHROW(topo::Fabric::check(cfg));
  cfg["trace"]["ports"] = "some";
  try {
    topo::Fabric::check(cfg);
    FAIL("expected a ConfigError");
  } catch (const topo::ConfigError& err) {
    CHECK(std::string(err.what()).find("fabric.trace.ports: \"some\"") != std::string::npos);
  }
  cfg["trace"] = {{"pcap", "x"}};   // unknown key
  CHECK_THROWS_AS(topo::Fabric::check(cfg), topo::ConfigError);
}
