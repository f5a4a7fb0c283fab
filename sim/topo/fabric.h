// A fabric built from a JSON config: hosts and their NICs, switches, links.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "sim/core/engine.h"
#include "sim/net/egress_port.h"
#include "sim/net/packet.h"
#include "sim/nic/hca.h"

namespace rdmasim::topo {

struct FabricSpec;
struct RouteTable;

// A config error: `what()` names the JSON path, the value and what was expected, e.g.
// "fabric.switch.pfc.xoff_kb: -3 is negative; expected a size in KiB >= 0".
// A config can have several errors; `errors` holds each, one line apiece.
class ConfigError : public std::runtime_error {
 public:
  explicit ConfigError(std::vector<std::string> errors);
  const std::vector<std::string>& errors() const { return errors_; }

 private:
  std::vector<std::string> errors_;
};

// One NIC port of one host, as the verbs front end describes it to applications.
struct HostNic {
  std::string host;                  // "server"
  std::string device;                // "mlx5_0"
  uint8_t port = 1;                  // verbs port number
  net::LinkLayer link_layer = net::LinkLayer::RoCEv2;
  std::string ip;                    // the host's loopback address, "127.0.1.1"
  net::Address address = 0;          // IPv4 (host order) on Ethernet, LID on IB
  uint16_t lid = 0;                  // IB: assigned by the built-in subnet manager
  uint16_t sm_lid = 0;
  uint64_t node_guid = 0;
  uint64_t port_guid = 0;
  uint64_t subnet_prefix = 0xfe80000000000000ull;
  Rate rate;
  uint32_t mtu = 4096;               // active MTU, bytes (iWARP: the IB MTU <= the Ethernet MTU)
  uint32_t vendor_id = 0x02c9;       // PCI vendor reported by ibv_query_device
  uint32_t vendor_part_id = 4123;
  uint32_t hw_ver = 0;
  std::string fw_ver = "rdmasim";
  nic::HcaConfig hca;                // limits and latencies for the HCA model
  // The host's connection manager (rdma_cm's CM MADs), in IBTA 5-bit times (4.096 us x 2^t):
  // a REQ waits 2 x packet lifetime + the remote CM response timeout for its answer, and is
  // sent at most 1 + max_retries times. Defaults: the kernel's cma.c (CMA_CM_RESPONSE_TIMEOUT
  // 20, CMA_MAX_CM_RETRIES 15, CMA_IBOE_PACKET_LIFETIME 16).
  struct CmTiming {
    uint8_t response_timeout = 20;
    uint8_t max_retries = 15;
    uint8_t packet_lifetime = 16;
  } cm;
};

// Which egress ports a packet capture taps.
enum class CapturePorts : uint8_t { Hosts, Switches, All };

// The config's "trace" object: capture into pcap_dir when it is not empty.
struct TraceConfig {
  std::string pcap_dir;
  CapturePorts ports = CapturePorts::All;
};

// One egress port of the fabric (for packet capture).
struct FabricPort {
  std::string file_stem;   // "server_mlx5_0", "sw0_port1"
  std::string name;        // as in counters(): "server/mlx5_0", "sw0/1"
  bool is_switch = false;
  net::EgressPort* egress = nullptr;
  // The egress port at the other end of the same link: what it sends, this port's end
  // receives. Null for a port on no link.
  net::EgressPort* peer = nullptr;
};

class Fabric {
 public:
  // Builds the fabric in `engine`. Throws ConfigError on any invalid or unknown key.
  static std::unique_ptr<Fabric> build(Engine& engine, const nlohmann::json& config);
  // Builds from a spec that parse_fabric already returned (so validated), where the
  // caller has parsed the config itself: the parse, and its routes, are not done twice.
  // `routes`: compute_routes(spec) when the caller has them (else spec.routes, else
  // computed here); the fabric keeps none of them once its tables are set.
  static std::unique_ptr<Fabric> from_spec(Engine& engine, const FabricSpec& spec,
                                           std::shared_ptr<const RouteTable> routes = nullptr);
  // Parses and validates without building anything that runs (for `--check`).
  // Returns a one-line summary ("2 hosts, 1 switch, 2 links, RoCEv2 100 Gb/s, MTU 4096").
  static std::string check(const nlohmann::json& config);

  virtual ~Fabric() = default;
  virtual std::string name() const = 0;
  virtual std::string summary() const = 0;

  virtual const std::vector<HostNic>& nics() const = 0;
  // The sending side of NIC i's port; the HCA pushes packets into it.
  virtual net::Transmitter& nic_port(size_t i) = 0;
  // Packets arriving at NIC i are delivered to `receiver` (the HCA).
  virtual void attach_nic(size_t i, net::Node* receiver) = 0;

  // The config's "seed": the engine the fabric runs in should be constructed with it.
  virtual uint64_t seed() const = 0;

  virtual net::LinkLayer link_layer() const = 0;
  // Every egress port, with its link's other end: NIC ports in nics() order, then switch
  // ports in switch, port order.
  virtual std::vector<FabricPort> egress_ports() = 0;
  // The config's "trace" settings (capture off when pcap_dir is empty).
  virtual const TraceConfig& trace() const = 0;

  // A data packet (not a PFC frame or an IB credit update) is queued, serializing, on a
  // wire, in a switch or in a NIC's receive buffer: false once the fabric delivered (or
  // dropped) everything the hosts sent.
  virtual bool carries_data() const = 0;

  // Per-port counters as JSON (for `rdmasim counters` and study outputs).
  virtual nlohmann::json counters() const = 0;

  // Links in config order ("links", after topology expansion). Takes both directions of
  // link `link` down (packets on the wire and queued at either end are lost and counted)
  // or up at simulated time `at` (>= the engine's now). Throws std::out_of_range for a
  // bad index.
  virtual size_t num_links() const = 0;
  virtual void set_link_down(size_t link, Time at) = 0;
  virtual void set_link_up(size_t link, Time at) = 0;
  virtual bool link_up(size_t link) const = 0;
  // `observer(up)` runs (engine context) each time the link of NIC i goes down or comes
  // back up (set_link_down/up or a link "schedule"). One observer per NIC; a later call
  // replaces it, an empty function removes it.
  virtual void observe_nic_link(size_t i, std::function<void(bool up)> observer) = 0;
};

// Attaches `hca` to NIC i: the packets arriving at the NIC go to `receiver` (the HCA when
// null), and the HCA's port follows the NIC's link: down -> Hca::set_port_active(false)
// (port DOWN, IBV_EVENT_PORT_ERR), up -> set_port_active(true) (ACTIVE, PORT_ACTIVE).
// The HCA must outlive the fabric's pending link events or be detached first
// (observe_nic_link(i, {})).
void attach_hca(Fabric& fabric, size_t i, nic::Hca& hca, net::Node* receiver = nullptr);

// The default fabric, configs/default.json compiled in: hosts "server" (127.0.1.1) and
// "client" (127.0.1.2), each with one RoCEv2 NIC "mlx5_0", 100 Gb/s links through one
// switch, MTU 4096.
const nlohmann::json& default_fabric_config();

}  // namespace rdmasim::topo
