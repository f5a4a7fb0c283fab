#include <doctest/doctest.h>

#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
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
    auto p = std::make_unique<nic::RdmaPacket>();
    p->src = fabric->nics()[1].address;   // client -> server
    p->dst = fabric->nics()[0].address;
    p->bth.opcode = 0x04;
    p->payload_len = 100;
    p->wire_bytes = 100 + 44 + 38;
    fabric->nic_port(1).send(std::move(p));
    e.run();
    CHECK(cap.packets() == 2);   // the client's port and the switch port towards the server
  }
  const auto client = slurp(dir + "/client_mlx5_0.pcap");
  REQUIRE(client.size() > 24 + 16);
  CHECK(u32(client, 0) == trace::kPcapMagicNanos);
  CHECK(u32(client, 20) == trace::kLinktypeEthernet);
  // The packet leaves the client port when its last bit is out: 182 B at 100 Gb/s = 14.56 ns
  // after the send at t=0; the record holds 0 s and 14 ns (picoseconds truncated).
  CHECK(u32(client, 24) == 0);
  CHECK(u32(client, 28) == 14);
  // frame: 14 + 20 + 8 + 12 + 100 + 4 = 158 bytes, captured whole
  CHECK(u32(client, 32) == 158);
  CHECK(u32(client, 36) == 158);
  CHECK(slurp(dir + "/server_mlx5_0.pcap").size() == 24);  // header only: server sent nothing
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
